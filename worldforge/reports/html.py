"""HTML renderer: one self-contained file a reviewer can open offline or attach to an issue.

Rules: inline CSS only, no ``<script>``, no ``<link>``, no anchors, no remote resources (a
Content-Security-Policy meta tag forbids them as defence in depth); every dynamic string goes
through ``html.escape(quote=True)``; the only URI scheme ever emitted is
``data:image/png;base64,`` for section images; the claim boundary is a visible warning block.
Science Birds reports get their own page (charts, heatmap, level gallery; see
:mod:`worldforge.reports.science_birds_html`); every other report is rendered section by section.
"""

from __future__ import annotations

from typing import Any

from worldforge.reports.html_parts import (
    claim_block,
    esc,
    kv,
    results_table,
    table,
)
from worldforge.reports.html_sections import NOWRAP_CHARS, failure_gallery_html, finish_page, section_html
from worldforge.reports.science_birds_html import render_science_birds
from worldforge.reports.science_birds_view import read_view
from worldforge.reports.sections import interpret_all

HTML_REPORT_SCHEMA_VERSION = 1


def render_html(payload: dict[str, Any]) -> str:
    view = read_view(payload)
    if view is not None:
        return render_science_birds(payload, view)
    suite = payload.get("suite", "")
    prov = payload.get("provenance") or {}
    summaries = payload.get("provider_summaries", [])
    body = [
        f"<h1>WorldForge Evaluation Report: {esc(suite)}</h1>",
        kv(
            [
                ("Suite ID", f"<code>{esc(payload.get('suite_id'))}</code>"),
                ("Suite", esc(suite)),
                ("Suite version", esc(prov.get("suite_version")) if prov else ""),
            ]
        ),
        claim_block(payload),
        "<h2>Provider Summaries</h2>",
        table(
            ["Provider", "Average Score", "Passed", "Scenarios"],
            [
                [
                    esc(s["provider"]),
                    esc(f"{float(s['average_score']):.4f}"),
                    esc(f"{int(s['passed_scenario_count'])}/{int(s['scenario_count'])}"),
                    esc(int(s["scenario_count"])),
                ]
                for s in summaries
            ],
            numeric={1, 3},
        ),
        "<h2>Scenario Results</h2>",
        results_table(payload.get("results", [])),
        "".join(section_html(s) for s in interpret_all(payload.get("sections"))),
    ]
    return finish_page(payload, body)


__all__ = [
    "HTML_REPORT_SCHEMA_VERSION",
    "NOWRAP_CHARS",
    "esc",
    "failure_gallery_html",
    "render_html",
    "section_html",
]
