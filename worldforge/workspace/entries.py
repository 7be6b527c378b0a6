"""The named inputs a run manifest lists: one typed shape and the one reader that checks it.

A run records each input it read under ``inputs``: a file by the digest of its raw bytes (with its
size and portable path), a structured value by its canonical digest (with the value itself when it
is small, for ``runs diff``). The input digest (:func:`worldforge.workspace.layout.compute_input_digest`),
the run writer, ``runs diff``, ``runs show`` and evidence bundles read the entries, so they live
below both the layout and the manifest model that name them.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from worldforge.core.canonical import JSON
from worldforge.core.errors import WorldForgeError


class InputEntry(TypedDict):
    """One entry of a manifest's ``inputs``.

    ``kind`` is ``"file"`` (``size`` and ``path`` set: a repository-relative path, or
    ``<external>/name`` outside the repository) or ``"value"`` (``value`` set when its pretty JSON
    is at most 4 KiB, sanitized like the rest of the manifest).
    """

    name: str
    kind: str
    digest: str
    size: NotRequired[int]
    path: NotRequired[str]
    value: NotRequired[JSON]


def _text(entry: dict[str, JSON], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        raise WorldForgeError(f"{where}: field {key!r} is missing or not str.")
    return value


def _count(entry: dict[str, JSON], key: str, where: str) -> int:
    value = entry.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise WorldForgeError(f"{where}: field {key!r} is missing or not int.")
    return value


def read_input_entries(value: object, source: str) -> list[InputEntry]:
    """The ``inputs`` of a manifest read from ``source``; ``WorldForgeError`` naming the entry and
    field that is missing or of the wrong type (an absent or ``null`` list is no inputs)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise WorldForgeError(f"{source}: field 'inputs' is not a list.")
    entries: list[InputEntry] = []
    for index, raw in enumerate(value):
        where = f"{source}: inputs[{index}]"
        if not isinstance(raw, dict):
            raise WorldForgeError(f"{where}: not an object.")
        entry: InputEntry = {  # keys in the file's (sorted) order
            "digest": _text(raw, "digest", where),
            "kind": _text(raw, "kind", where),
            "name": _text(raw, "name", where),
        }
        if "path" in raw:
            entry["path"] = _text(raw, "path", where)
        if "size" in raw:
            entry["size"] = _count(raw, "size", where)
        if "value" in raw:
            entry["value"] = raw["value"]
        entries.append(entry)
    return entries


__all__ = ["InputEntry", "read_input_entries"]
