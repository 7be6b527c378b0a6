"""Building blocks shared by the HTML report pages: page shell, CSS, tables, key/value lists.

Rules every page keeps: inline CSS only, no ``<link>``, no anchors, no remote resources (a
Content-Security-Policy meta tag forbids them as defence in depth); every dynamic string goes
through ``html.escape(quote=True)``; the only URI scheme ever emitted is
``data:image/png;base64,`` for images. Pages must read on a phone as on a desktop: wide tables sit
in horizontally scrolling wrappers, charts scale with their ``viewBox``, so the page body itself
never scrolls sideways.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from worldforge.reports.payload import listed, member, members, number
from worldforge.reports.sections import scalar_text

CSS = """
*,*::before,*::after{box-sizing:border-box}
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:72rem;
padding:1rem;color:#1d2330;background:#fff;line-height:1.45}
h1{font-size:1.6rem;margin:.6rem 0 .2rem;overflow-wrap:break-word}
h2{font-size:1.2rem;margin-top:2.2rem;border-bottom:1px solid #d8dde6;overflow-wrap:break-word}
h3{font-size:1rem;margin:1.2rem 0 .4rem;overflow-wrap:break-word}p,li,dd,figcaption{overflow-wrap:break-word}
.scroll{overflow-x:auto;max-width:100%;margin:.6rem 0}
table{border-collapse:collapse;min-width:100%;font-size:.9rem}
th,td{border:1px solid #d8dde6;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f5f9}td.num{text-align:right;font-variant-numeric:tabular-nums}
td dl.kv{font-size:.8rem;min-width:16rem;margin:0}
.pass{color:#116329;font-weight:600}.fail{color:#a40e26;font-weight:600}
section.warning{border-left:4px solid #bf8700;background:#fff8c5;padding:.6rem 1rem;margin:1rem 0;
font-size:.9rem;overflow-wrap:anywhere}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85rem}code{overflow-wrap:anywhere}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-all;max-height:24rem}
dl.kv{display:grid;grid-template-columns:minmax(0,max-content) minmax(0,1fr);gap:.15rem 1rem;margin:.5rem 0}
dl.kv dt{font-weight:600}dl.kv dd{margin:0;overflow-wrap:anywhere;font-variant-numeric:tabular-nums}
dl.kv dl.kv{margin:0}
@media (max-width:40rem){body{padding:.75rem}dl.kv{grid-template-columns:minmax(0,1fr)}
dl.kv dd{margin-left:.8rem}}
.name{white-space:nowrap}
.gallery{display:flex;flex-wrap:wrap;gap:.8rem}
.gallery figure{margin:0;border:1px solid #d8dde6;padding:.4rem;background:#fafbfc;max-width:14rem}
.gallery img{max-width:100%;height:auto;image-rendering:pixelated;display:block}
.gallery figcaption{font-size:.8rem;margin-top:.3rem;word-break:break-word}
svg.chart{width:100%;height:auto;display:block;margin:.4rem 0}
svg.chart text{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif}
.charts{display:flex;flex-wrap:wrap;gap:1rem 2.5rem;align-items:flex-start}
.charts>figure{margin:0;flex:1 1 24rem;min-width:0;max-width:34rem}
.charts figcaption,.note{font-size:.85rem;color:#57606a}
.hm{cursor:pointer;outline:none}.hm .pv{display:none}.hm:hover .pv,.hm:focus .pv{display:inline}
.hm:hover rect.cell,.hm:focus rect.cell{stroke:#1d2330;stroke-width:2}
.headline{border:1px solid #d8dde6;border-left:6px solid #1a7f37;background:#f4faf5;padding:.7rem 1rem;
margin:1rem 0}
.headline.undecided{border-left-color:#bf8700;background:#fffbea}
.headline .big{font-size:1.25rem;font-weight:700;margin:0 0 .3rem}
.tag{display:inline-block;font-size:.72rem;font-weight:600;padding:0 .45rem;border-radius:.6rem;
border:1px solid #d8dde6;background:#eef1f5;vertical-align:middle}
.tag.baseline{background:#f6e7c8;border-color:#8a5a00}.tag.winner{background:#1a7f37;color:#fff;border-color:#1a7f37}
.tag.failed{background:#a40e26;color:#fff;border-color:#a40e26}
.letter-row{display:grid;grid-template-columns:2.2rem minmax(0,1fr);gap:.6rem;margin:.5rem 0;
align-items:start}
.letter-row>.letter{font-size:1.5rem;font-weight:700;text-align:center;line-height:1.2}
.trials{display:grid;grid-template-columns:repeat(auto-fill,minmax(5.6rem,1fr));gap:.45rem}
.trials figure{margin:0;border:1px solid #d8dde6;padding:.2rem;background:#fff}
.trials img{width:100%;height:auto;image-rendering:pixelated;display:block}
.trials figcaption{font-size:.72rem;line-height:1.3;font-variant-numeric:tabular-nums;margin-top:.15rem}
.trials figcaption span.v{white-space:nowrap}
.trials figure.best{border:2px solid #1a7f37}
.trials figure.failed{border:2px solid #a40e26;background:#fff5f5}
.trials .why{display:block;font-size:.7rem;color:#a40e26;max-height:4.2em;overflow:hidden}
.trials .nolevel{aspect-ratio:1;display:flex;align-items:center;justify-content:center;font-size:.75rem;
color:#a40e26;background:repeating-linear-gradient(45deg,#fff5f5 0 6px,#fde2e2 6px 12px)}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(16rem,1fr));gap:.8rem}
.cards article{border:1px solid #d8dde6;padding:.5rem;display:grid;grid-template-columns:6rem minmax(0,1fr);
gap:.3rem .8rem}
.cards article img{width:6rem;height:auto;image-rendering:pixelated;border:1px solid #d8dde6}
.cards article dl.kv{font-size:.8rem;margin:0;grid-template-columns:max-content minmax(0,1fr)}
.cards article header,.cards article details{grid-column:1/-1}.cards article header{font-size:.8rem}
details>summary{cursor:pointer;font-weight:600;margin:.4rem 0}summary h3{display:inline}
footer{margin-top:2rem;color:#57606a;font-size:.85rem;overflow-wrap:anywhere}
""".strip()

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def esc(value: object) -> str:
    """Escape any value for HTML text or attribute context."""
    text = value if isinstance(value, str) else scalar_text(value)
    return html.escape(text, quote=True)


def table(headers: Sequence[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    """A table in a horizontally scrolling wrapper; ``rows`` contain already-escaped fragments."""
    numeric = numeric or set()
    # column keys such as ``mean_similarity`` may break after an underscore, so that wide tables
    # scroll less
    head = "".join(f"<th>{esc(h).replace('_', '_<wbr>')}</th>" for h in headers)
    if not rows:
        rows = [["-"] * len(headers)]
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def kv(items: list[tuple[str, str]]) -> str:
    """``items`` values are already-escaped fragments; empty values are skipped."""
    inner = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in items if v not in ("", None))
    return f'<dl class="kv">{inner}</dl>'


def _json_text(value: str) -> Any:
    """Nested values that reached the payload as compact JSON text, parsed back for display."""
    if value[:1] in "{[" and value[-1:] in "}]":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def value_html(value: object, depth: int = 0) -> str:
    """A metric value formatted for people: nested mappings as nested key/value lists, lists of
    scalars comma-separated, numbers with six significant digits; never a raw JSON string."""
    if isinstance(value, str):
        parsed = _json_text(value)
        if parsed is value or depth > 3:
            return esc(value)
        value = parsed
    if isinstance(value, Mapping):
        if not value:
            return "none"
        # Sorted: the page must not depend on dict order (the JSON payload stores keys sorted, and
        # bundles re-render reports from it and compare with the run's own file).
        return kv(
            [(str(k), value_html(v, depth + 1)) for k, v in sorted(value.items(), key=lambda i: str(i[0]))]
        )
    if isinstance(value, list | tuple):
        if not value:
            return "none"
        if all(not isinstance(v, Mapping | list | tuple) for v in value):
            return ", ".join(esc(v) for v in value)
        return "; ".join(value_html(v, depth + 1) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return esc(value)


def metrics_list(metrics: object) -> str:
    """Metrics as a key/value list (sorted by key, as the payload stores them)."""
    if not isinstance(metrics, Mapping) or not metrics:
        return "none"
    return kv([(str(k), value_html(v)) for k, v in sorted(metrics.items(), key=lambda i: str(i[0]))])


def passed(flag: object) -> str:
    return '<span class="pass">yes</span>' if flag else '<span class="fail">no</span>'


def results_table(results: Sequence[Mapping[str, object]]) -> str:
    return table(
        ["Provider", "Scenario", "Score", "Passed", "Metrics"],
        [
            [
                esc(r["provider"]),
                esc(r["scenario"]),
                esc(f"{number(r['score'], 'a result score'):.4f}"),
                passed(r["passed"]),
                metrics_list(r.get("metrics", {})),
            ]
            for r in results
        ],
        numeric={2},
    )


def claim_block(payload: Mapping[str, object]) -> str:
    return (
        '<section class="warning"><strong>Claim boundary.</strong> '
        f"{esc(payload.get('claim_boundary'))}<br><strong>Metric semantics.</strong> "
        f"{esc(payload.get('metric_semantics'))}</section>"
    )


def provenance(prov: Mapping[str, object]) -> str:
    manifests = member(prov, "runtime_manifests")
    datasets = members(prov, "dataset_manifests")
    items = [
        ("Schema version", esc(prov.get("schema_version"))),
        ("WorldForge version", esc(prov.get("worldforge_version"))),
        ("Suite version", esc(prov.get("suite_version"))),
        ("Created at", esc(prov.get("created_at"))),
        (
            "Command",
            f"<code>{esc(' '.join(str(arg) for arg in listed(prov, 'command')))}</code>"
            if prov.get("command")
            else "",
        ),
        ("Providers", esc(", ".join(str(name) for name in listed(prov, "providers")))),
        ("Capabilities", esc(", ".join(str(name) for name in listed(prov, "capabilities")))),
        ("Event count", esc(prov.get("event_count"))),
        ("Input digest", f"<code>{esc(prov.get('input_digest'))}</code>"),
        ("Result digest", f"<code>{esc(prov.get('result_digest'))}</code>"),
        ("Runtime manifests", value_html(dict(sorted(manifests.items()))) if manifests else ""),
        (
            "Dataset manifests",
            "<br>".join(
                f"{esc(r.get('id', '?'))} <code>{esc(r.get('sha256', '?'))}</code>" for r in datasets
            ),
        ),
        ("Notes", esc(prov.get("notes")) if prov.get("notes") else ""),
    ]
    return "<h2>Provenance</h2>" + kv(items)


def footer(prov: Mapping[str, object]) -> str:
    return (
        f"<footer>Generated by WorldForge {esc(prov.get('worldforge_version'))} at "
        f"{esc(prov.get('created_at'))}; result digest "
        f"<code>{esc(prov.get('result_digest'))}</code>.</footer>"
    )


def page(title: str, body: str) -> str:
    """The complete document: CSP, viewport, inline CSS, nothing fetched."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body>{body}</body></html>\n"
    )


__all__ = [
    "CSP",
    "CSS",
    "claim_block",
    "esc",
    "footer",
    "kv",
    "metrics_list",
    "page",
    "passed",
    "provenance",
    "results_table",
    "table",
    "value_html",
]
