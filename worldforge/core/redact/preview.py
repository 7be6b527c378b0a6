"""Failure-gallery metric previews: small, sanitized, JSON-native summaries of metrics dicts.

Raw metrics may hold host paths, secrets or megabytes of tensor values; a gallery attached to an
issue must hold none of that, so previews sanitize every string, summarise tensor-like arrays
(shape, min, max, mean) instead of copying them, and cap keys, items, depth and string length.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.redact.engine import sanitize_text
from worldforge.core.redact.keys import REDACTED, is_harmless_value, is_sensitive_key

# Failure-gallery metric previews
# ---------------------------------------------------------------------------------------------

PREVIEW_MAX_ITEMS = 8
PREVIEW_MAX_KEYS = 12
PREVIEW_MAX_STRING = 240
PREVIEW_MAX_DEPTH = 4
_TENSOR_KEY_RE = re.compile(r"tensor|array|embedding|logits|pixels|frames|matrix", re.I)


def _shape(value: list[object]) -> list[int] | None:
    """Shape of a rectangular nested numeric list, or ``None`` when ragged / non-numeric."""
    if not value:
        return [0]
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return [len(value)]
    if all(isinstance(v, list) for v in value):
        inner = [_shape(v) for v in value if isinstance(v, list)]
        if inner[0] is not None and all(s == inner[0] for s in inner):
            return [len(value), *inner[0]]
    return None


def _flat_numbers(value: object) -> Iterable[float]:
    if isinstance(value, list):
        for item in value:
            yield from _flat_numbers(item)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield float(value)


def _summarise_array(value: list[object]) -> JSONObject:
    summary: JSONObject = {
        "type": "array",
        "item_count": len(value),
        "nested": any(isinstance(item, (list, dict)) for item in value),
    }
    shape = _shape(value)
    if shape is not None:
        summary["shape"] = list[JSON](shape)
        numbers = [n for n in _flat_numbers(value) if math.isfinite(n)]
        if numbers:
            summary["min"] = min(numbers)
            summary["max"] = max(numbers)
            summary["mean"] = round(sum(numbers) / len(numbers), 6)
    return summary


def _preview(value: object, key: str, depth: int) -> JSON:
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"type": "float", "preview": repr(value)}
    if isinstance(value, str):
        if is_sensitive_key(key) and not is_harmless_value(value):
            return REDACTED
        text = sanitize_text(value.strip())
        return text if len(text) <= PREVIEW_MAX_STRING else text[: PREVIEW_MAX_STRING - 1] + "…"
    if isinstance(value, (list, tuple)):
        items = list(value)
        if is_sensitive_key(key) and items:
            return REDACTED
        if (
            _TENSOR_KEY_RE.search(key)
            or depth >= 2
            or len(items) > PREVIEW_MAX_ITEMS
            or any(isinstance(item, (list, dict)) for item in items)
        ):
            return _summarise_array(items)
        return [_preview(item, key, depth + 1) for item in items]
    if isinstance(value, dict):
        if is_sensitive_key(key) and value:
            return REDACTED
        if depth >= PREVIEW_MAX_DEPTH:
            return {"type": "object", "key_count": len(value)}
        names = sorted(value, key=str)
        out = {sanitize_text(str(k)): _preview(value[k], str(k), depth + 1) for k in names[:PREVIEW_MAX_KEYS]}
        if len(names) > PREVIEW_MAX_KEYS:
            out["_omitted_key_count"] = len(names) - PREVIEW_MAX_KEYS
        return out
    shape = getattr(value, "shape", None)
    if shape is not None:
        dims: list[JSON]
        try:
            dims = [int(d) for d in shape]
        except (TypeError, ValueError):
            dims = []
        return {"type": "array", "shape": dims, "dtype": str(getattr(value, "dtype", type(value).__name__))}
    return {"type": type(value).__name__, "preview": "non-json value omitted"}


def metrics_preview(metrics: Mapping[str, object]) -> JSONObject:
    """A small, sanitized, JSON-native preview of a metrics dict for failure galleries.

    Strings are sanitized and capped at 240 characters; tensor-like arrays (key mentions
    tensor/array/embedding/…, more than 8 items, nested, or deeper than two levels) become
    ``{"type": "array", "item_count", "nested", "shape", "min", "max", "mean"}``; dicts keep their
    first 12 keys in sorted order plus ``_omitted_key_count``; non-JSON objects are described, never
    serialised.
    """
    result = _preview(dict(metrics), "metrics", 0)
    return result if isinstance(result, dict) else {"value": result}


__all__ = [
    "PREVIEW_MAX_DEPTH",
    "PREVIEW_MAX_ITEMS",
    "PREVIEW_MAX_KEYS",
    "PREVIEW_MAX_STRING",
    "metrics_preview",
]
