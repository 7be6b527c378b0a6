"""CSV renderer: one row per provider x scenario, metrics as canonical JSON, no envelope.

The column set is kept stable for spreadsheet imports. Text cells that a spreadsheet would treat as
a formula (leading ``= + - @``) are prefixed with ``'``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping

from worldforge.core.canonical import canonical_json_text
from worldforge.reports.payload import members, number

CSV_COLUMNS = ("suite_id", "suite", "provider", "scenario", "score", "passed", "metrics_json")


def _cell(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def render_csv(payload: Mapping[str, object]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for result in members(payload, "results"):
        writer.writerow(
            [
                _cell(str(result["suite_id"])),
                _cell(str(result["suite"])),
                _cell(str(result["provider"])),
                _cell(str(result["scenario"])),
                f"{number(result['score'], 'a result score'):.4f}",
                "true" if result["passed"] else "false",
                canonical_json_text(result.get("metrics", {})),
            ]
        )
    return buffer.getvalue()


__all__ = ["CSV_COLUMNS", "render_csv"]
