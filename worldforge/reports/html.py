"""HTML renderer: one self-contained file a reviewer can open offline or attach to an issue.

Rules: inline CSS only, no ``<script>``, no ``<link>``, no anchors, no remote resources (a
Content-Security-Policy meta tag forbids them as defence in depth); every dynamic string goes
through ``html.escape(quote=True)``; the only URI scheme ever emitted is
``data:image/png;base64,`` for section images; the claim boundary is a visible warning block.
A suite may register its own page for its reports (:func:`register_html_page`; the Science Birds
suite registers its charts, heatmap and level gallery). Suites sit above this layer, so the
registration goes from the suite to the renderer and the renderer never imports a suite; every
other report, and a payload the registered page declines, is rendered section by section.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from worldforge.core.errors import WorldForgeError
from worldforge.reports.html_parts import (
    claim_block,
    esc,
    kv,
    results_table,
    table,
)
from worldforge.reports.html_sections import NOWRAP_CHARS, failure_gallery_html, finish_page, section_html
from worldforge.reports.payload import member, members, number, whole
from worldforge.reports.sections import interpret_all

HTML_REPORT_SCHEMA_VERSION = 1

#: A suite's own HTML page: the whole document for a payload, or None to decline it (a payload
#: without the page's expected shape), in which case the generic page is rendered.
HtmlPage = Callable[[dict[str, Any]], str | None]
_PAGES: dict[str, HtmlPage] = {}


def register_html_page(suite_id: str, page: HtmlPage) -> None:
    """Render reports whose ``suite_id`` is ``suite_id`` with ``page`` (a later registration for
    the same suite replaces the earlier one, so re-importing a suite's module is harmless)."""
    if not isinstance(suite_id, str) or not suite_id.strip():
        raise WorldForgeError("register_html_page: suite_id must be a non-empty string.")
    if not callable(page):
        raise WorldForgeError(f"register_html_page({suite_id!r}): page must be callable.")
    _PAGES[suite_id] = page


def registered_html_page(suite_id: object) -> HtmlPage | None:
    """The page registered for ``suite_id``, if any."""
    return _PAGES.get(suite_id) if isinstance(suite_id, str) else None


def render_html(payload: Mapping[str, object]) -> str:
    page = registered_html_page(payload.get("suite_id"))
    document = page(dict(payload)) if page is not None else None  # the page gets a dict of its own
    if document is not None:
        return document
    suite = payload.get("suite", "")
    prov = member(payload, "provenance")
    summaries = members(payload, "provider_summaries")
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
                    esc(f"{number(s['average_score'], 'average_score'):.4f}"),
                    esc(
                        f"{whole(s['passed_scenario_count'], 'passed_scenario_count')}/"
                        f"{whole(s['scenario_count'], 'scenario_count')}"
                    ),
                    esc(whole(s["scenario_count"], "scenario_count")),
                ]
                for s in summaries
            ],
            numeric={1, 3},
        ),
        "<h2>Scenario Results</h2>",
        results_table(members(payload, "results")),
        "".join(section_html(s) for s in interpret_all(payload.get("sections"))),
    ]
    return finish_page(payload, body)


__all__ = [
    "HTML_REPORT_SCHEMA_VERSION",
    "NOWRAP_CHARS",
    "HtmlPage",
    "esc",
    "failure_gallery_html",
    "register_html_page",
    "registered_html_page",
    "render_html",
    "section_html",
]
