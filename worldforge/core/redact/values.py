"""Sanitizing values rather than text: JSON-native data, and command lines.

Structure says more than text can: a key names what its value is, a ``{"name": …, "value": …}``
pair names its secret in a sibling, an object under ``credentials`` is secret in every leaf, and a
string may itself be JSON. Everything textual still goes through the one text sanitizer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from worldforge.core.redact.engine import sanitize_text
from worldforge.core.redact.keys import REDACTED, is_harmless_value, is_sensitive_key

_NAME_FIELDS = ("name", "key", "Name", "Key", "NAME", "KEY")
_VALUE_FIELDS = ("value", "Value", "VALUE", "secret", "data")


def _redact_leaves(value: Any) -> Any:
    """Every leaf beneath a secret-named key: the structure stays readable, no value survives."""
    if isinstance(value, dict):
        return {sanitize_text(str(k)): _redact_leaves(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_leaves(item) for item in value]
    if value is None or isinstance(value, bool) or (isinstance(value, str) and is_harmless_value(value)):
        return value
    return REDACTED


def _embedded_json(text: str) -> Any:
    """A string that is itself a JSON object or array, parsed; ``None`` otherwise."""
    stripped = text.strip()
    if len(stripped) < 2 or stripped[0] + stripped[-1] not in ("{}", "[]"):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def sanitize_value(value: Any, key: str | None = None, *, memo: dict[str, str] | None = None) -> Any:
    """Recursively sanitize a JSON-native value: keys, values, and strings that hold JSON themselves.

    Under a secret-named key a string becomes ``[redacted]`` (digests, numbers and placeholders
    stay: ``{"token_budget": 5}``, ``{"signature": "sha256:…"}``) and an object or list has every
    leaf redacted. ``{"name": "OPENAI_API_KEY", "value": …}`` pairs redact the value. A string that
    parses as a JSON object or array is sanitized as data and written back compactly when it changed.

    ``memo`` lets a caller that sanitizes many values in one environment (a bundle of thousands of
    records) share the sanitized form of strings that repeat across them.
    """
    return _walk(value, key, {} if memo is None else memo)


def _text(text: str, memo: dict[str, str]) -> str:
    """The text sanitizer, once per distinct string of a walk (records repeat keys and digests)."""
    done = memo.get(text)
    if done is None:
        done = memo[text] = sanitize_text(text)
    return done


def _walk(value: Any, key: str | None, memo: dict[str, str]) -> Any:
    if key is not None and is_sensitive_key(key):
        if isinstance(value, (dict, list, tuple)):
            return _redact_leaves(value)
        if isinstance(value, str) and not is_harmless_value(value):
            return REDACTED
    if isinstance(value, dict):
        secret_pair = any(
            isinstance(value.get(n), str) and is_sensitive_key(str(value[n]))
            for n in _NAME_FIELDS
            if n in value
        )
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = _text(str(k), memo)
            if secret_pair and k in _VALUE_FIELDS and not (isinstance(v, str) and is_harmless_value(v)):
                out[name] = _redact_leaves(v)
            else:
                out[name] = _walk(v, str(k), memo)
        return out
    if isinstance(value, (list, tuple)):
        return [_walk(item, None, memo) for item in value]
    if isinstance(value, str):
        embedded = _embedded_json(value)
        if embedded is not None and isinstance(embedded, (dict, list)):
            cleaned = _walk(embedded, None, memo)
            if cleaned != embedded:
                return sanitize_text(json.dumps(cleaned, ensure_ascii=False))
        return _text(value, memo)
    return value


def _is_secret_flag(arg: str) -> bool:
    name = arg.lstrip("-")
    return arg.startswith("-") and "=" not in arg and len(name) >= 2 and is_sensitive_key(name)


def sanitize_argv(argv: Iterable[object]) -> list[str]:
    """A command line safe to record and still worth replaying.

    Run manifests, report provenance and failure-gallery rerun commands all record commands through
    this one function, so they agree: paths under the current directory become relative (the command
    replays from the directory it was started in), other host locations become placeholders and
    secret-shaped arguments are redacted, as is the value after a secret-named flag
    (``--api-key VALUE``). An argument that was exactly the current directory becomes ``.`` rather
    than an empty string, which a shell would drop.
    """
    out: list[str] = []
    previous = ""
    for arg in argv:
        raw = str(arg)
        if _is_secret_flag(previous) and not raw.startswith("-") and not is_harmless_value(raw):
            out.append(REDACTED)
        else:
            clean = str(sanitize_value(raw))
            out.append("." if raw and not clean else clean)
        previous = raw
    return out


__all__ = ["sanitize_argv", "sanitize_value"]
