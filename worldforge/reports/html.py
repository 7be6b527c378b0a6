"""HTML renderer: one self-contained file a reviewer can open offline or attach to an issue.

Rules: inline CSS only, no ``<script>``, no ``<link>``, no anchors, no remote resources (a
Content-Security-Policy meta tag forbids them as defence in depth); every dynamic string goes
through ``html.escape(quote=True)``; the only URI scheme ever emitted is
``data:image/png;base64,`` for section images; the claim boundary is a visible warning block.
"""

from __future__ import annotations

import html
from typing import Any

from worldforge.core.canonical import canonical_json_text, pretty_json
from worldforge.reports.sections import EMPTY_TABLE_TEXT, interpret_all, is_safe_png_data_uri, scalar_text

HTML_REPORT_SCHEMA_VERSION = 1

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:72rem;
padding:0 1rem;color:#1d2330;background:#fff;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d8dde6}
h3{font-size:1rem}
table{border-collapse:collapse;width:100%;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #d8dde6;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f5f9}td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#116329;font-weight:600}.fail{color:#a40e26;font-weight:600}
section.warning{border-left:4px solid #bf8700;background:#fff8c5;padding:.6rem 1rem;margin:1rem 0}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85rem}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-all}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dl.kv dt{font-weight:600}
dl.kv dd{margin:0;word-break:break-all}
.gallery{display:flex;flex-wrap:wrap;gap:.8rem}
.gallery figure{margin:0;border:1px solid #d8dde6;padding:.4rem;background:#fafbfc;max-width:14rem}
.gallery img{max-width:100%;height:auto;image-rendering:pixelated;display:block}
.gallery figcaption{font-size:.8rem;margin-top:.3rem;word-break:break-word}
footer{margin-top:2rem;color:#57606a;font-size:.85rem}
""".strip()

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def esc(value: Any) -> str:
    """Escape any value for HTML text or attribute context."""
    text = value if isinstance(value, str) else scalar_text(value)
    return html.escape(text, quote=True)


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    """``rows`` contain already-escaped HTML fragments."""
    numeric = numeric or set()
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    if not rows:
        rows = [["-"] * len(headers)]
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _kv(items: list[tuple[str, str]]) -> str:
    """``items`` values are already-escaped fragments; empty values are skipped."""
    inner = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in items if v not in ("", None))
    return f'<dl class="kv">{inner}</dl>'


def _passed(flag: Any) -> str:
    return '<span class="pass">yes</span>' if flag else '<span class="fail">no</span>'


def _provenance(prov: dict[str, Any]) -> str:
    manifests = prov.get("runtime_manifests") or {}
    datasets = prov.get("dataset_manifests") or []
    items = [
        ("Schema version", esc(prov.get("schema_version"))),
        ("WorldForge version", esc(prov.get("worldforge_version"))),
        ("Suite version", esc(prov.get("suite_version"))),
        ("Created at", esc(prov.get("created_at"))),
        (
            "Command",
            f"<code>{esc(' '.join(prov.get('command') or []))}</code>" if prov.get("command") else "",
        ),
        ("Providers", esc(", ".join(prov.get("providers") or []))),
        ("Capabilities", esc(", ".join(prov.get("capabilities") or []))),
        ("Event count", esc(prov.get("event_count"))),
        ("Input digest", f"<code>{esc(prov.get('input_digest'))}</code>"),
        ("Result digest", f"<code>{esc(prov.get('result_digest'))}</code>"),
        (
            "Runtime manifests",
            "<br>".join(
                f"{esc(k)}: <code>{esc(canonical_json_text(v))}</code>" for k, v in sorted(manifests.items())
            ),
        ),
        (
            "Dataset manifests",
            "<br>".join(
                f"{esc(r.get('id', '?'))} <code>{esc(r.get('sha256', '?'))}</code>" for r in datasets
            ),
        ),
        ("Notes", esc(prov.get("notes")) if prov.get("notes") else ""),
    ]
    return "<h2>Provenance</h2>" + _kv(items)


def _sections(sections: Any) -> str:
    parts: list[str] = []
    for section in interpret_all(sections):
        parts.append(f"<h2>{esc(section.title)}</h2>")
        if section.description:
            parts.append(f"<p>{esc(section.description)}</p>")
        if section.kind == "table" and not section.rows:
            # No rows means no known columns either: a sentence, not a headerless empty table.
            if not section.description:
                parts.append(f"<p>{EMPTY_TABLE_TEXT}</p>")
        elif section.kind == "table":
            rows = [[esc(row[c]) if c in row else "" for c in section.columns] for row in section.rows]
            parts.append(_table(section.columns, rows))
        elif section.kind == "images":
            figures = []
            for image in section.images:
                if not is_safe_png_data_uri(image["src"]):  # re-checked here: renderer owns the rule
                    continue
                caption = esc(image["caption"])
                figures.append(
                    f'<figure><img src="{esc(image["src"])}" alt="{caption}">'
                    f"<figcaption>{caption}</figcaption></figure>"
                )
            parts.append(
                '<div class="gallery">' + "".join(figures) + "</div>" if figures else "<p>No images.</p>"
            )
            if section.omitted_images:
                parts.append(
                    f"<p>{section.omitted_images} image(s) omitted: only inline PNG data URIs are shown.</p>"
                )
        elif section.kind == "keyvalue":
            parts.append(_kv([(str(k), esc(v)) for k, v in section.value.items()]))
        elif section.kind == "text":
            parts.append(f"<p>{esc(section.text)}</p>")
        else:
            parts.append(f"<pre>{esc(pretty_json(section.value))}</pre>")
    return "".join(parts)


def _gallery(gallery: dict[str, Any]) -> str:
    cases = gallery.get("cases") or []
    parts = ["<h2>Failure Gallery</h2>", f"<p>Cases: {len(cases)}</p>"]
    parts.append(
        _table(
            ["Fixture", "Provider", "Scenario", "Observed score", "Expected contract", "Observed"],
            [
                [
                    f"<code>{esc(c.get('fixture_id'))}</code>",
                    esc(c.get("provider")),
                    esc(c.get("scenario")),
                    esc(f"{float(c.get('score', 0.0)):.4f}"),
                    esc(c.get("expected_contract_notes")),
                    esc(c.get("observed_result")),
                ]
                for c in cases
            ],
            numeric={3},
        )
    )
    for case in cases:
        steps = "".join(f"<li>{esc(step)}</li>" for step in case.get("triage_steps", []))
        parts.append(
            f"<h3>{esc(case.get('fixture_id'))} / {esc(case.get('provider'))}</h3>"
            f"<ol>{steps}</ol><pre>{esc(pretty_json(case.get('metrics_preview', {})))}</pre>"
        )
    return "".join(parts)


def render_html(payload: dict[str, Any]) -> str:
    suite = payload.get("suite", "")
    prov = payload.get("provenance") or {}
    summaries = payload.get("provider_summaries", [])
    results = payload.get("results", [])
    body = [
        f"<h1>WorldForge Evaluation Report: {esc(suite)}</h1>",
        _kv(
            [
                ("Suite ID", f"<code>{esc(payload.get('suite_id'))}</code>"),
                ("Suite", esc(suite)),
                ("Suite version", esc(prov.get("suite_version")) if prov else ""),
            ]
        ),
        '<section class="warning"><strong>Claim boundary.</strong> '
        f"{esc(payload.get('claim_boundary'))}<br><strong>Metric semantics.</strong> "
        f"{esc(payload.get('metric_semantics'))}</section>",
        "<h2>Provider Summaries</h2>",
        _table(
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
        _table(
            ["Provider", "Scenario", "Score", "Passed", "Metrics"],
            [
                [
                    esc(r["provider"]),
                    esc(r["scenario"]),
                    esc(f"{float(r['score']):.4f}"),
                    _passed(r["passed"]),
                    f"<code>{esc(canonical_json_text(r.get('metrics', {})))}</code>",
                ]
                for r in results
            ],
            numeric={2},
        ),
        _sections(payload.get("sections")),
    ]
    if payload.get("failure_gallery"):
        body.append(_gallery(payload["failure_gallery"]))
    if prov:
        body.append(_provenance(prov))
        body.append(
            f"<footer>Generated by WorldForge {esc(prov.get('worldforge_version'))} at "
            f"{esc(prov.get('created_at'))}; result digest "
            f"<code>{esc(prov.get('result_digest'))}</code>.</footer>"
        )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>WorldForge Evaluation Report: {esc(suite)}</title><style>{CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


__all__ = ["HTML_REPORT_SCHEMA_VERSION", "esc", "render_html"]
