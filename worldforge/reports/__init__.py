"""Report renderers: one module per format, each a pure function of ``EvaluationReport.to_dict()``.

Renderers never re-compute numbers; they only format the canonical payload, so every format of
one report agrees. ``render_report(payload, fmt)`` dispatches by format name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from worldforge.core.errors import WorldForgeError
from worldforge.reports.csv_report import render_csv
from worldforge.reports.html import render_html
from worldforge.reports.json_report import render_json
from worldforge.reports.markdown import render_markdown

REPORT_FORMATS: tuple[str, ...] = ("markdown", "json", "csv", "html")
MEDIA_TYPES: dict[str, str] = {
    "markdown": "text/markdown",
    "json": "application/json",
    "csv": "text/csv",
    "html": "text/html",
}
EXTENSIONS: dict[str, str] = {"markdown": "md", "json": "json", "csv": "csv", "html": "html"}


def _renderer(fmt: str) -> Callable[[Mapping[str, object]], str]:
    if fmt == "json":
        return render_json
    if fmt == "markdown":
        return render_markdown
    if fmt == "csv":
        return render_csv
    if fmt == "html":
        return render_html
    raise WorldForgeError(
        f"--format: unknown report format {fmt!r}; expected one of {', '.join(REPORT_FORMATS)}."
    )


def render_report(payload: Mapping[str, object], fmt: str) -> str:
    """Render a canonical report payload (``EvaluationReport.to_dict()``, or one read back from
    its JSON) in ``fmt``."""
    if not isinstance(payload, dict):
        raise WorldForgeError("report payload: must be a dict (EvaluationReport.to_dict()).")
    return _renderer(fmt)(payload)


__all__ = ["EXTENSIONS", "MEDIA_TYPES", "REPORT_FORMATS", "render_report"]
