"""Shared interpretation of a report's extra ``sections`` (used by the Markdown and HTML renderers).

A section value is rendered by shape, so suites need no renderer code of their own:

* a list of flat dicts -> a table (columns in first-seen order);
* ``{"rows": [...], "title"?, "description"?}`` -> a titled table; with no rows, only the
  description, or :data:`EMPTY_TABLE_TEXT` without one (a headerless empty table reads as a bug);
* ``{"images": [{"caption", "src"}], "title"?, "description"?}`` -> an image gallery; the only accepted
  ``src`` is ``data:image/png;base64,<base64>``; anything else is dropped and counted;
* a flat dict -> a key/value list; a string -> a paragraph; anything else -> a JSON block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from worldforge.core.canonical import JSONObject, canonical_json_text

DATA_URI_PREFIX = "data:image/png;base64,"
_BASE64_RE = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")
SCALARS = (str, int, float, bool, type(None))
#: What a table section with no rows renders as (its columns are unknown, so no table is drawn).
EMPTY_TABLE_TEXT = "No entries."


def is_safe_png_data_uri(src: object) -> bool:
    """Only inline PNGs: no remote URLs, no other schemes, no SVG (scriptable)."""
    if not isinstance(src, str) or not src.startswith(DATA_URI_PREFIX):
        return False
    body = src[len(DATA_URI_PREFIX) :]
    return bool(body) and len(body) % 4 == 0 and bool(_BASE64_RE.match(body))


def scalar_text(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (str, int)):
        return str(value)
    return canonical_json_text(value)


def _is_flat(row: object) -> bool:
    return isinstance(row, dict) and all(
        isinstance(v, SCALARS) or isinstance(v, (list, dict)) for v in row.values()
    )


@dataclass(slots=True)
class Section:
    """One section as the renderers draw it: what ``kind`` it is and the parts that kind uses
    (``columns``/``rows`` of a table, ``images``, the ``pairs`` of a key/value list, a paragraph's
    ``text``, or the ``value`` a JSON block shows)."""

    key: str
    kind: str  # table | images | keyvalue | text | json
    title: str
    description: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[JSONObject] = field(default_factory=list)
    images: list[dict[str, str]] = field(default_factory=list)
    omitted_images: int = 0
    text: str = ""
    pairs: JSONObject = field(default_factory=dict)
    value: object = None


def _table(key: str, title: str, description: str, rows: list[JSONObject]) -> Section:
    columns: list[str] = []
    for row in rows:
        for column in row:
            if column not in columns:
                columns.append(column)
    return Section(key, "table", title, description, columns=columns, rows=rows)


def interpret(key: str, value: object) -> Section:
    title = key.replace("_", " ").replace("-", " ").strip().capitalize() or key
    if isinstance(value, list) and value and all(_is_flat(row) for row in value):
        return _table(key, title, "", value)
    if isinstance(value, dict):
        heading = str(value["title"]) if isinstance(value.get("title"), str) else title
        description = str(value["description"]) if isinstance(value.get("description"), str) else ""
        if isinstance(value.get("images"), list):
            images: list[dict[str, str]] = []
            omitted = 0
            for item in value["images"]:
                if isinstance(item, dict) and is_safe_png_data_uri(item.get("src")):
                    images.append({"caption": str(item.get("caption", "")), "src": str(item["src"])})
                else:
                    omitted += 1
            return Section(key, "images", heading, description, images=images, omitted_images=omitted)
        rows = value.get("rows")
        if isinstance(rows, list) and all(_is_flat(row) for row in rows):
            return _table(key, heading, description, rows)
        if all(isinstance(v, SCALARS) for v in value.values()):
            return Section(key, "keyvalue", title, pairs=value)
    if isinstance(value, str):
        return Section(key, "text", title, text=value)
    return Section(key, "json", title, value=value)


def interpret_all(sections: object) -> list[Section]:
    if not isinstance(sections, dict):
        return []
    return [interpret(key, value) for key, value in sections.items()]


__all__ = [
    "DATA_URI_PREFIX",
    "EMPTY_TABLE_TEXT",
    "Section",
    "interpret",
    "interpret_all",
    "is_safe_png_data_uri",
    "scalar_text",
]
