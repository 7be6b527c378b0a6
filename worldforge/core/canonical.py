"""One canonical JSON encoding for everything that gets digested.

Digests must be byte-stable across processes, platforms and Python versions, so they are computed
over RFC 8785 (JSON Canonicalization Scheme) bytes produced by the ``rfc8785`` library rather than
over ``json.dumps`` output whose float formatting and escaping are implementation details.
Files meant for people (manifests, reports) use :func:`pretty_json`, which is deterministic too
but indented.

Speed without a second recipe: the pure-Python ``rfc8785`` encoder costs 0.1-1 ms per event line or
record, and digests sit on every hot path (event log, item records, verify of large bundles). For
the values that make up nearly all payloads, the C ``json`` encoder with sorted keys and compact
separators already writes RFC 8785 bytes: strings are escaped the same way, and a float whose
magnitude is in [1e-4, 2**53) prints the same shortest round-trip digits in the same positional
form. :func:`canonical_json` takes that path after one walk has checked the value is of that
shape (integral floats become ints, which is exactly how RFC 8785 prints them) and hands anything
else -- tiny or huge floats, out-of-domain integers, keys whose UTF-16 order differs from code-point
order, lone surrogates, subclasses of the JSON types -- to ``rfc8785`` itself. A property test holds
the two paths to identical bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias, cast

import rfc8785

from worldforge.core.errors import WorldForgeError

JSONScalar: TypeAlias = None | bool | int | float | str
"""A JSON leaf as :func:`json.loads` returns it."""
JSON: TypeAlias = JSONScalar | list["JSON"] | dict[str, "JSON"]
"""Any JSON-native value: what canonical JSON encodes and what ``json.loads`` returns. Readers
narrow it with ``isinstance`` before use; fixed shapes get a ``TypedDict`` or a dataclass instead."""
JSONObject: TypeAlias = dict[str, JSON]
"""A JSON object whose keys are open (sections, metadata, options read from a file)."""


def ensure_json_native(value: object, path: str = "$") -> None:
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


def json_object(value: object, field_name: str) -> JSONObject:
    """``value`` as a :data:`JSONObject` once checked: a ``dict`` (else "must be an object") that is
    JSON-native throughout (else :func:`ensure_json_native`'s error naming the key path).

    The one narrowing from an untyped value (a file, a reply, a caller's argument) to open JSON, so
    readers get a typed object instead of repeating the two checks."""
    if not isinstance(value, dict):
        raise WorldForgeError(f"{field_name}: must be an object.")
    ensure_json_native(value, field_name)
    return value


_SAFE_INT = 2**53 - 1  # RFC 8785 / I-JSON integer domain (rfc8785 rejects anything beyond it)
_MIN_POSITIONAL = 1e-4  # below this, Python's repr switches to exponent form earlier than ECMAScript


class _NeedsReference(Exception):
    """The value is JSON-native but outside the shapes the fast encoder is proven on."""


def _fast_form(value: Any) -> Any:
    """``value`` with integral floats as ints, or :class:`_NeedsReference` when only rfc8785 will do.

    Exact type checks on purpose: subclasses (``IntEnum``, ``OrderedDict`` …) go to the reference.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        if -_SAFE_INT <= value <= _SAFE_INT:
            return value
        raise _NeedsReference
    if kind is float:
        if not math.isfinite(value):
            raise _NeedsReference
        if value.is_integer():
            if -_SAFE_INT <= value <= _SAFE_INT:
                return int(value)
            raise _NeedsReference
        if abs(value) < _MIN_POSITIONAL:
            raise _NeedsReference
        return value
    if kind is list:
        return [_fast_form(item) for item in value]
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NeedsReference
            # Code-point order equals UTF-16 order unless a key holds a non-BMP character.
            if not key.isascii() and any(ord(ch) > 0xFFFF for ch in key):
                raise _NeedsReference
            out[key] = _fast_form(item)
        return out
    raise _NeedsReference


def canonical_json(value: object) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of a JSON-native value.

    Anything that is not JSON-native raises :class:`WorldForgeError` naming the key path (through
    the reference path, which validates first).
    """
    try:
        fast = _fast_form(value)
        return json.dumps(
            fast, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
        ).encode("utf-8")
    except (_NeedsReference, UnicodeEncodeError, RecursionError):
        pass
    return reference_canonical_json(value)


def reference_canonical_json(value: object) -> bytes:
    """RFC 8785 bytes from the ``rfc8785`` library alone (the oracle :func:`canonical_json` matches)."""
    ensure_json_native(value)
    try:
        return bytes(rfc8785.dumps(cast(JSON, value)))  # checked JSON-native just above
    except (rfc8785.CanonicalizationError, ValueError, TypeError) as exc:
        raise WorldForgeError(f"payload cannot be canonicalized: {exc}") from exc


def canonical_json_text(value: object) -> str:
    """Canonical JSON as ``str`` (single line) for CLI output and report JSON."""
    return canonical_json(value).decode("utf-8")


def pretty_json(value: object) -> str:
    """Deterministic, human-readable JSON for files on disk (sorted keys, 2-space indent, final LF)."""
    ensure_json_native(value)
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def to_json_native(value: object) -> Any:
    """Convert tuples/mappings/sequences from trusted internal code into JSON-native containers."""
    if isinstance(value, Mapping):
        return {str(k): to_json_native(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if isinstance(value, Sequence):
        return [to_json_native(v) for v in value]
    return value


__all__ = [
    "JSON",
    "JSONObject",
    "JSONScalar",
    "canonical_json",
    "canonical_json_text",
    "ensure_json_native",
    "json_object",
    "pretty_json",
    "reference_canonical_json",
    "to_json_native",
]
