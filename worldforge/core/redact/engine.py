"""The project's one sanitizer: secrets, signed URLs and host-local paths are redacted *in place*.

Everything that leaves the machine (evidence bundles, failure galleries, provider event messages,
CLI error lines) goes through this module, so there is exactly one definition of "secret-shaped".

Design choices, and why:

* **Redact in place, never drop whole files.** A keyword hit used to exclude an entire report,
  which threw away the evidence a reviewer needed. Here only the offending span is replaced by
  ``[redacted]`` (secrets) or a placeholder such as ``<home>`` / ``<tmp>`` (host paths), and the
  surrounding text stays readable.
* **Rules are data with fixtures.** Each rule has an id, a cheap keyword prefilter and a regex; the
  test-suite holds true-positive and near-miss false-positive fixtures for every id
  (``tests/fixtures/sanitizer/corpus.json``) and checks that every true positive also hits the
  prefilter, so a prefilter can never silently disarm a rule.
* **The ledger never contains the secret.** :func:`sanitize_with_ledger` reports rule id, source,
  line (in the sanitized text) and count only.
* **Layout.** The rule table lives in :mod:`worldforge.core.redact.rules`, failure-gallery previews in
  :mod:`worldforge.core.redact.preview`; this module applies the rules and is the public entry point.
* **Host locations are known, not guessed.** Besides the fixed ``/home``, ``/tmp`` … patterns, the
  current directory (stripped, so paths become relative and commands stay replayable from there),
  ``$HOME`` (``<home>``), the source checkout this package runs from (``<repo>``) and the active
  virtual environment (``<venv>``) are matched by prefix: running from outside the checkout must
  not leak ``/srv/ci/worldforge/tests/...`` just because it matches no generic pattern. The login
  name left in a path after that (``<tmp>/pytest-of-dana/...``) becomes ``<user>``.
* **Structure-aware allowlist.** The project's own ``sha256:<hex>`` digests, run ids and version
  strings never match any rule (no generic entropy detector is used), and a sensitive-looking key
  whose value is a digest, number, boolean or placeholder is left alone.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
import socket
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from worldforge.core.redact.keys import (
    REDACTED,
    SANITIZER_VERSION,
    Matcher,
    Redaction,
    Replacer,
    Rule,
    is_harmless_value,
    is_sensitive_key,
    redact_whole,
)
from worldforge.core.redact.rules import PATH_LEFT, RULES, SENSITIVE_KEYWORDS, rule_ids
from worldforge.core.redact.views import VIEWS, Decoded, View, b64_tokens, looks_like_credential

# ---------------------------------------------------------------------------------------------


#: Shell variables named like a password field (``pwd``) that hold the working directory instead.
_SHELL_LOCATION_VARIABLES = frozenset({"PWD", "OLDPWD"})


@functools.lru_cache(maxsize=8)
def _env_secret_values(snapshot: tuple[tuple[Any, Any], ...]) -> tuple[str, ...]:
    values = set()
    for raw_name, raw_value in snapshot:
        name = os.fsdecode(raw_name) if isinstance(raw_name, bytes) else str(raw_name)
        value = os.fsdecode(raw_value) if isinstance(raw_value, bytes) else str(raw_value)
        if len(value) >= 8 and is_sensitive_key(name) and name.upper() not in _SHELL_LOCATION_VARIABLES:
            values.add(value)
    return tuple(sorted(values, key=len, reverse=True))


#: Placeholder -> ledger rule id of the dynamic host-location prefixes ("" = the current directory).
_PREFIX_RULES = {
    "": "host-path-cwd",
    "<home>": "host-path-home",
    "<repo>": "host-path-repo",
    "<venv>": "host-path-venv",
}


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


@functools.lru_cache(maxsize=8)
def _local_prefixes(
    cwd: str, home: str, repo: str = "", venv: str = ""
) -> tuple[tuple[re.Pattern[str], str], ...]:
    cwd_forms = {c.rstrip("/") for c in (cwd, os.path.realpath(cwd)) if cwd and c.rstrip("/")}
    prefixes: list[tuple[str, str]] = []
    for raw, placeholder in ((cwd, ""), (home, "<home>"), (repo, "<repo>"), (venv, "<venv>")):
        if not raw:
            continue
        for candidate in {raw, os.path.realpath(raw)}:
            candidate = candidate.rstrip("/")
            if placeholder in ("<repo>", "<venv>") and any(_inside(candidate, c) for c in cwd_forms):
                continue  # already relative to the current directory, which keeps commands replayable
            if candidate.count("/") >= 2 or (candidate.count("/") == 1 and len(candidate) > 5):
                prefixes.append((candidate, placeholder))
    prefixes.sort(key=lambda item: len(item[0]), reverse=True)
    compiled = []
    for prefix, placeholder in prefixes:
        tail = r"(?P<slash>/)?" if placeholder == "" else ""
        compiled.append((re.compile(PATH_LEFT + re.escape(prefix) + r"(?![\w.\-])" + tail), placeholder))
    return tuple(compiled)


@functools.lru_cache(maxsize=1)
def _install_locations() -> tuple[str, str]:
    """(source checkout, virtual environment) this process runs from; ``""`` when there is none.

    The checkout is the directory holding the ``worldforge`` package when it has a ``pyproject.toml``
    or ``.git`` (an editable or in-place install); the environment is ``sys.prefix`` inside a venv.
    """
    root = Path(__file__).resolve().parents[3]
    repo = str(root) if (root / "pyproject.toml").is_file() or (root / ".git").exists() else ""
    venv = sys.prefix if sys.prefix != sys.base_prefix else ""
    return repo, venv


def _login_name() -> str:
    """The current login name (``$USER``/``$LOGNAME``, else the password database), or ``""``."""
    return os.environ.get("USER") or os.environ.get("LOGNAME") or _passwd_name()


@functools.lru_cache(maxsize=1)
def _passwd_name() -> str:
    """The password database's name for this process's uid (looked up once: it cannot change)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        return ""


@functools.lru_cache(maxsize=8)
def _login_pattern(name: str) -> re.Pattern[str]:
    # A whole path segment, or the part after a ``-`` (``/tmp/pytest-of-<name>/``), ending the segment.
    return re.compile(r"(?<=[/\-])" + re.escape(name) + r"(?=/|[^\w.\-/]|$)")


def _login_in_path(match: re.Match[str]) -> str | None:
    """Replace the login name only inside a path-like token, so prose that uses the word survives."""
    text, start, end = match.string, match.start(), match.end()
    left = max(text.rfind(c, 0, start) for c in " \t\n\"'`") + 1
    right = min((i for i in (text.find(c, end) for c in " \t\n\"'`") if i >= 0), default=len(text))
    return "<user>" if "/" in text[left:right] else None


def _current_prefixes() -> tuple[tuple[re.Pattern[str], str], ...]:
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    home = os.environ.get("HOME") or str(Path.home())
    return _local_prefixes(cwd, home, *_install_locations())


# ---------------------------------------------------------------------------------------------
# Engine
# ---------------------------------------------------------------------------------------------


class _Ledger:
    def __init__(self, source: str) -> None:
        self.source = source
        self.counts: dict[tuple[str, int], int] = {}

    def add(self, rule: str, text: str, offsets: list[int]) -> None:
        newlines = [i for i, c in enumerate(text) if c == "\n"] if len(offsets) > 0 else []
        for offset in offsets:
            line = bisect.bisect_left(newlines, offset) + 1
            self.counts[(rule, line)] = self.counts.get((rule, line), 0) + 1

    def entries(self) -> list[Redaction]:
        return [
            Redaction(rule, self.source, line, count) for (rule, line), count in sorted(self.counts.items())
        ]


Span = tuple[int, int, str]


def _spans(pattern: Matcher, replace: Replacer, text: str, rescan_values: bool = False) -> list[Span]:
    """Where one rule replaces what in ``text``: ``(start, end, new)``, left to right, disjoint."""
    spans: list[Span] = []
    pos = 0
    while pos <= len(text):
        match = pattern.search(text, pos)
        if match is None:
            break
        new = replace(match)
        if new is None or new == match.group(0):
            # Keep the match; assignment rules resume at the value, which may hold another one.
            stop = match.end()
            if rescan_values and match.start("val") > match.start():
                value = match.group("val").lower()
                if any(k in value for k in SENSITIVE_KEYWORDS):
                    stop = match.start("val")
            pos = stop if stop > pos else pos + 1
            continue
        spans.append((match.start(), match.end(), new))
        pos = match.end() if match.end() > match.start() else match.end() + 1
    return spans


def _splice(text: str, spans: list[Span]) -> tuple[str, list[int]]:
    """``text`` with ``spans`` replaced, and the offsets of the replacements in the result."""
    out: list[str] = []
    offsets: list[int] = []
    pos = out_len = 0
    for start, end, new in spans:
        chunk = text[pos:start]
        out.append(chunk)
        offsets.append(out_len + len(chunk))
        out.append(new)
        out_len += len(chunk) + len(new)
        pos = end
    out.append(text[pos:])
    return "".join(out), offsets


class _Raw:
    """Rewrites the text in place, rule after rule; the ledger learns each replacement's line."""

    def __init__(self, text: str, ledger: _Ledger | None) -> None:
        self.text = text
        self.ledger = ledger

    def apply(self, rule_id: str, spans: list[Span]) -> None:
        if spans:
            self.text, offsets = _splice(self.text, spans)
            if self.ledger is not None:
                self.ledger.add(rule_id, self.text, offsets)


class _Tracked:
    """Rewrites like :class:`_Raw` but remembers every replacement as a span of the *first* text.

    A decoded view is sanitized with this, so each redaction can be carried back to the undecoded
    original (where it is re-encoded for its context). Edits are kept as disjoint base spans with
    their current replacement; a later rule that touches an earlier edit absorbs it.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.edits: list[tuple[int, int, str, str]] = []  # base start, base end, replacement, rule

    def _locate(self, position: int, end: bool) -> tuple[int, int]:
        """(base position, current position) of a widened bound for current ``position``."""
        delta = 0
        for base_start, base_end, new, _rule in self.edits:
            cur_start = base_start + delta
            cur_end = cur_start + len(new)
            if position < cur_start or (position == cur_start and not end):
                break
            if position < cur_end or (position == cur_end and end and position > cur_start):
                return (base_end, cur_end) if end else (base_start, cur_start)
            delta += len(new) - (base_end - base_start)
        return position - delta, position

    def apply(self, rule_id: str, spans: list[Span]) -> None:
        for start, end, new in reversed(spans):  # right to left: earlier offsets stay valid
            base_start, cur_start = self._locate(start, end=False)
            base_end, cur_end = self._locate(end, end=True)
            replacement = self.text[cur_start:start] + new + self.text[end:cur_end]
            self.text = self.text[:cur_start] + replacement + self.text[cur_end:]
            kept = [e for e in self.edits if e[1] <= base_start or e[0] >= base_end]
            kept.append((base_start, base_end, replacement, rule_id))
            self.edits = sorted(kept, key=lambda e: (e[0], e[1]))


def _run_rules(sink: _Raw | _Tracked) -> None:
    """Every rule in order over ``sink.text``; the one rule sequence for raw text and views."""
    raw_env = getattr(os.environ, "_data", None)  # the undecoded mapping is much cheaper to snapshot
    snapshot = tuple(raw_env.items()) if isinstance(raw_env, dict) else tuple(os.environ.items())
    secrets = _env_secret_values(snapshot)
    present = [s for s in secrets if s in sink.text]
    if present:
        pattern = re.compile("|".join(re.escape(s) for s in present))
        sink.apply("env-secret-value", _spans(pattern, redact_whole, sink.text))
    if "/" in sink.text:
        for pattern, placeholder in _current_prefixes():

            def repl(match: re.Match[str], placeholder: str = placeholder) -> str:
                if placeholder:
                    return placeholder
                return "" if match.groupdict().get("slash") else "."

            sink.apply(_PREFIX_RULES[placeholder], _spans(pattern, repl, sink.text))
    lowered = sink.text.lower()
    for rule in RULES:
        if rule.id == "sensitive-key" and not any(k in lowered for k in SENSITIVE_KEYWORDS):
            continue
        if rule.prefilter(lowered):
            spans = _spans(rule.pattern, rule.replace, sink.text, rule.rescan_values)
            if spans:
                sink.apply(rule.id, spans)
                lowered = sink.text.lower()
    login = _login_name()
    if len(login) >= 3 and login in sink.text and "/" in sink.text:  # after <home>/<tmp>, which absorb it
        sink.apply("host-user", _spans(_login_pattern(login), _login_in_path, sink.text))
    host = _host_name()
    if host and host in sink.text:
        sink.apply("host-name", _spans(_host_pattern(host), _host_placeholder, sink.text))


@functools.lru_cache(maxsize=1)
def _host_name() -> str:
    """This machine's name when it is distinctive enough to redact as a word (``localhost`` is not)."""
    try:
        name = socket.gethostname().split(".")[0]
    except OSError:
        return ""
    return name if len(name) >= 4 and name.lower() not in {"localhost", "local", "host"} else ""


@functools.lru_cache(maxsize=4)
def _host_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.\-])" + re.escape(name) + r"(?![\w\-])")


def _host_placeholder(_: re.Match[str]) -> str:
    return "<host>"


def _through_view(text: str, view: View, decoded: Decoded, ledger: _Ledger | None) -> str:
    """Redact what the rules find in a decoded view, at the matching spans of the original text."""
    tracked = _Tracked(decoded.text)
    _run_rules(tracked)
    if not tracked.edits:
        return text
    spans: list[Span] = []
    rules: list[str] = []
    for base_start, base_end, new, rule in tracked.edits:
        start = decoded.to_original(base_start)
        end = decoded.to_original(base_end, end=True)
        if spans and start < spans[-1][1]:  # two edits inside one escape: take the union once
            prev = spans[-1]
            spans[-1] = (prev[0], max(prev[1], end), prev[2])
            continue
        spans.append((start, end, view.encode(new)))
        rules.append(rule)
    result, offsets = _splice(text, spans)
    if ledger is not None:
        for rule, offset in zip(rules, offsets, strict=True):
            ledger.add(rule, result, [offset])
    return result


def _redact_base64(text: str, ledger: _Ledger | None) -> str:
    """Base64 that decodes to a credential (``user:password``, a PEM key, any rule's hit) goes whole."""
    spans: list[Span] = []
    for start, end, decoded in b64_tokens(text):
        if looks_like_credential(decoded) or _sanitize_layers(decoded, None, rounds=1) != decoded:
            spans.append((start, end, REDACTED))
    if not spans:
        return text
    result, offsets = _splice(text, spans)
    if ledger is not None:
        ledger.add("base64-credential", result, offsets)
    return result


def _sanitize_layers(text: str, ledger: _Ledger | None, rounds: int = 3) -> str:
    if not text:
        return text
    raw = _Raw(text, ledger)
    _run_rules(raw)
    text = raw.text
    for _ in range(rounds):  # each round peels one layer of nested encodings (JSON inside HTML …)
        before = text
        for view in VIEWS:
            if view.applies(text):
                decoded = view.decode(text)
                if decoded is not None:
                    text = _through_view(text, view, decoded, ledger)
        if rounds > 1:
            text = _redact_base64(text, ledger)
        if text == before:
            break
    return text


def sanitize_text(text: str) -> str:
    """Redact secrets, signed-URL parameters and host-local paths in ``text`` (idempotent).

    Rules match the text as written and every decoded view of it (HTML entities, percent-encoding,
    JSON/backslash escapes, CSV quoting; base64 credentials), so escaping never hides a secret.
    """
    return _sanitize_layers(text, None)


def sanitize_with_ledger(text: str, source: str) -> tuple[str, list[Redaction]]:
    """Sanitize ``text`` and report what was redacted (rule, ``source``, line in the result, count)."""
    ledger = _Ledger(source)
    return _sanitize_layers(text, ledger), ledger.entries()


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


def sanitize_value(value: Any, key: str | None = None) -> Any:
    """Recursively sanitize a JSON-native value: keys, values, and strings that hold JSON themselves.

    Under a secret-named key a string becomes ``[redacted]`` (digests, numbers and placeholders
    stay: ``{"token_budget": 5}``, ``{"signature": "sha256:…"}``) and an object or list has every
    leaf redacted. ``{"name": "OPENAI_API_KEY", "value": …}`` pairs redact the value. A string that
    parses as a JSON object or array is sanitized as data and written back compactly when it changed.
    """
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
            name = sanitize_text(str(k))
            if secret_pair and k in _VALUE_FIELDS and not (isinstance(v, str) and is_harmless_value(v)):
                out[name] = _redact_leaves(v)
            else:
                out[name] = sanitize_value(v, str(k))
        return out
    if isinstance(value, (list, tuple)):
        return [sanitize_value(item, None) for item in value]
    if isinstance(value, str):
        embedded = _embedded_json(value)
        if embedded is not None and isinstance(embedded, (dict, list)):
            cleaned = sanitize_value(embedded)
            if cleaned != embedded:
                return sanitize_text(json.dumps(cleaned, ensure_ascii=False))
        return sanitize_text(value)
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


__all__ = [
    "REDACTED",
    "RULES",
    "SANITIZER_VERSION",
    "Redaction",
    "Rule",
    "is_sensitive_key",
    "rule_ids",
    "sanitize_argv",
    "sanitize_text",
    "sanitize_value",
    "sanitize_with_ledger",
]
