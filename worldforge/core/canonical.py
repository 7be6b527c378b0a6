"""One canonical JSON encoding for everything that gets digested.

Digests must be byte-stable across processes, platforms and Python versions, so they are computed
over RFC 8785 (JSON Canonicalization Scheme) bytes produced by the ``rfc8785`` library rather than
over ``json.dumps`` output whose float formatting and escaping are implementation details.
Files meant for people (manifests, reports) use :func:`pretty_json`, which is deterministic too
but indented.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import rfc8785

from worldforge.core.errors import WorldForgeError

JSONValue = Any


def ensure_json_native(value: Any, path: str = "$") -> None:
    """Raise :class:`WorldForgeError` naming the key path of the first non-JSON-native value.

    JSON-native means: ``dict`` with ``str`` keys, ``list``, ``str``, ``bool``, ``None``, ``int`` and
    finite ``float``. Tuples are rejected on purpose: they silently become lists and hide bugs.
    """
    if value is None or isinstance(value, (str, bool)):
        return
    if isinstance(value, int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise WorldForgeError(f"{path}: non-finite number {value!r} is not allowed in JSON payloads.")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise WorldForgeError(f"{path}: key {key!r} must be a string, got {type(key).__name__}.")
            ensure_json_native(item, f"{path}.{key}")
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            ensure_json_native(item, f"{path}[{index}]")
        return
    raise WorldForgeError(f"{path}: value of type {type(value).__name__} is not JSON-native.")


def canonical_json(value: Any) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of a JSON-native value."""
    ensure_json_native(value)
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, ValueError, TypeError) as exc:  # pragma: no cover - guarded
        raise WorldForgeError(f"payload cannot be canonicalized: {exc}") from exc


def canonical_json_text(value: Any) -> str:
    """Canonical JSON as ``str`` (single line) for CLI output and report JSON."""
    return canonical_json(value).decode("utf-8")


def pretty_json(value: Any) -> str:
    """Deterministic, human-readable JSON for files on disk (sorted keys, 2-space indent, final LF)."""
    ensure_json_native(value)
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def to_json_native(value: Any) -> Any:
    """Convert tuples/mappings/sequences from trusted internal code into JSON-native containers."""
    if isinstance(value, Mapping):
        return {str(k): to_json_native(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if isinstance(value, Sequence):
        return [to_json_native(v) for v in value]
    return value


__all__ = ["canonical_json", "canonical_json_text", "ensure_json_native", "pretty_json", "to_json_native"]
