"""Sanitizing values rather than text: JSON-native data, and command lines.

Structure says more than text can: a key names what its value is, a ``{"name": …, "value": …}``
pair names its secret in a sibling, an object under ``credentials`` is secret in every leaf, and a
string may itself be JSON. Everything textual still goes through the one text sanitizer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, TypeGuard

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.redact.engine import sanitize_text
from worldforge.core.redact.forms import NAME_FIELDS, VALUE_FIELDS
from worldforge.core.redact.keys import REDACTED, is_harmless_value, is_sensitive_key

#: A setting's name as a pair or a name field holds it: an identifier, or two words (``API Key``).
_SETTING_NAME_RE = re.compile(r"[A-Za-z_][\w.\-]*(?: [A-Za-z_][\w.\-]*)?")
#: ``{"api": {"key": …}}``: a ``key`` under one of these names is the ``<name>_key`` secret.
_KEY_PARENTS = frozenset({"api", "access", "secret", "private", "signing", "encryption", "master", "license"})
#: Numbers under a secret name of at least this size are redacted (a PIN or numeric password);
#: smaller ones are counts, ports and retries, as the text rules also keep them.
_SECRET_NUMBER = 100_000


#: The name fields as payloads spell them (``name``, ``Name``, ``NAME``): a set lookup per dict.
_NAME_KEYS = frozenset(v for n in NAME_FIELDS for v in (n, n.capitalize(), n.upper()))
_VALUE_KEYS = frozenset(v for n in VALUE_FIELDS for v in (n, n.capitalize(), n.upper()))


def _names_setting(value: object) -> TypeGuard[str]:
    return (
        isinstance(value, str) and _SETTING_NAME_RE.fullmatch(value) is not None and is_sensitive_key(value)
    )


def _split_key(key: str, parent: str | None) -> bool:
    """``key`` under ``api``/``access``/… (any case, last word of the parent): one name, two levels."""
    if parent is None or key.lower() != "key":
        return False
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", parent).lower())
    return bool(words) and words[-1] in _KEY_PARENTS


def _redact_leaves(value: object) -> JSON:
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


def sanitize_value(value: object, key: str | None = None, *, memo: dict[str, str] | None = None) -> Any:
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


def _walk(value: object, key: str | None, memo: dict[str, str], parent: str | None = None) -> Any:
    if key is not None and (is_sensitive_key(key) or _split_key(key, parent)):
        if isinstance(value, (dict, list, tuple)):
            return _redact_leaves(value)
        if isinstance(value, str) and not is_harmless_value(value):
            return REDACTED
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _SECRET_NUMBER:
            return REDACTED
    if isinstance(value, dict):
        secret_pair = not _NAME_KEYS.isdisjoint(value) and any(
            _names_setting(value[k]) for k in _NAME_KEYS.intersection(value)
        )
        out: JSONObject = {}
        for k, v in value.items():
            name = _text(str(k), memo)
            held = secret_pair and k in _VALUE_KEYS
            if secret_pair and held and not (isinstance(v, str) and is_harmless_value(v)):
                out[name] = _redact_leaves(v)
            else:
                out[name] = _walk(v, str(k), memo, key)
        return out
    if isinstance(value, (list, tuple)):
        return _walk_list(list(value), memo)
    if isinstance(value, str):
        embedded = _embedded_json(value)
        if embedded is not None and isinstance(embedded, (dict, list)):
            cleaned = _walk(embedded, None, memo)
            if cleaned != embedded:
                return sanitize_text(json.dumps(cleaned, ensure_ascii=False))
        return _text(value, memo)
    return value


def _walk_list(items: list[object], memo: dict[str, str]) -> list[JSON]:
    """A list's items; a ``[NAME, value]`` pair or a value after a ``--password`` flag is a secret."""
    if len(items) == 2 and _names_setting(items[0]) and isinstance(items[1], str):
        if not is_harmless_value(items[1]):
            return [_text(items[0], memo), REDACTED]
    out: list[JSON] = []
    previous: object = None
    for item in items:
        flagged = isinstance(previous, str) and _is_secret_flag(previous)
        if flagged and isinstance(item, str) and not item.startswith("-") and not is_harmless_value(item):
            out.append(REDACTED)
        else:
            out.append(_walk(item, None, memo))
        previous = item
    return out


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
