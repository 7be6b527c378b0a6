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
import os
import re
import socket
import sys
from pathlib import Path
from typing import Any

from worldforge.core.redact.keys import (
    REDACTED,
    Matcher,
    Redaction,
    Replacer,
    is_sensitive_key,
    redact_whole,
)
from worldforge.core.redact.rules import PATH_LEFT, RULES, SENSITIVE_KEYWORDS
from worldforge.core.redact.views import B64_TOKEN_RE, VIEWS, b64_candidate, b64_text, looks_like_credential

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
                stop = match.start("val")  # the value may open another assignment: {"k": "{"api_key": …
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

    def locate(self, position: int, end: bool) -> tuple[int, int]:
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
            base_start, cur_start = self.locate(start, end=False)
            base_end, cur_end = self.locate(end, end=True)
            replacement = self.text[cur_start:start] + new + self.text[end:cur_end]
            self.text = self.text[:cur_start] + replacement + self.text[cur_end:]
            kept = [e for e in self.edits if e[1] <= base_start or e[0] >= base_end]
            kept.append((base_start, base_end, replacement, rule_id))
            self.edits = sorted(kept, key=lambda e: (e[0], e[1]))


_SENSITIVE_RE = re.compile("|".join(re.escape(k) for k in SENSITIVE_KEYWORDS))
#: Strings that are evidence by shape (digests, numbers, UTC timestamps, run ids): nothing to redact.
_INERT_RE = re.compile(
    r"sha(?:256|384|512):[0-9a-f]{16,128}|[-+]?\d{1,18}(?:\.\d+)?"
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z|\d{8}T\d{6}(?:\.\d{1,9})?Z-[0-9a-f]{6,32}"
)
#: A short word or identifier: no rule but the environment's own values (secrets, login, host name)
#: and the short Slack prefixes can match it, so the full rule set is skipped.
_SIMPLE_RE = re.compile(r"[A-Za-z0-9._\- ]{1,19}")


def _environment_rules(sink: _Raw | _Tracked, *, secrets: bool = True, hosts: bool = True) -> None:
    """Values this machine knows are secret or local: secret-named environment variables' values,
    the login name inside paths, the host name."""
    if secrets:
        raw_env = getattr(os.environ, "_data", None)  # the undecoded mapping is cheaper to snapshot
        snapshot = tuple(raw_env.items()) if isinstance(raw_env, dict) else tuple(os.environ.items())
        present = [s for s in _env_secret_values(snapshot) if s in sink.text]
        if present:
            pattern = re.compile("|".join(re.escape(s) for s in present))
            sink.apply("env-secret-value", _spans(pattern, redact_whole, sink.text))
    if hosts:
        login = _login_name()
        if len(login) >= 3 and login in sink.text and "/" in sink.text:  # after <home>/<tmp> absorbed it
            sink.apply("host-user", _spans(_login_pattern(login), _login_in_path, sink.text))
        host = _host_name()
        if host and host in sink.text:
            sink.apply("host-name", _spans(_host_pattern(host), _host_placeholder, sink.text))


def _run_rules(sink: _Raw | _Tracked, *, plus_split: bool = False) -> None:
    """Every rule in order over ``sink.text``; the one rule sequence for raw text and views.

    ``plus_split``: the text is (or lies under) a URL-decoded view, where every ``+`` reads as a
    space; rules that need a run's true extent (``Rule.url_view`` false) skip it.
    """
    _environment_rules(sink, hosts=False)
    if "/" in sink.text:
        for pattern, placeholder in _current_prefixes():

            def repl(match: re.Match[str], placeholder: str = placeholder) -> str:
                if placeholder:
                    return placeholder
                return "" if match.groupdict().get("slash") else "."

            sink.apply(_PREFIX_RULES[placeholder], _spans(pattern, repl, sink.text))
    lowered = sink.text.lower()
    key_words = _SENSITIVE_RE.search(lowered) is not None
    for rule in RULES:
        if (rule.id == "sensitive-key" and not key_words) or (plus_split and not rule.url_view):
            continue
        keywords = rule.keyword_re  # Rule.prefilter inlined: this loop runs for every string
        if keywords is None or keywords.search(lowered):
            spans = _spans(rule.pattern, rule.replace, sink.text, rule.rescan_values)
            if spans:
                sink.apply(rule.id, spans)
                lowered = sink.text.lower()
                key_words = _SENSITIVE_RE.search(lowered) is not None
    _environment_rules(sink, secrets=False)
    if len(sink.text) >= 12:
        sink.apply("base64-credential", _spans(B64_TOKEN_RE, _base64_credential, sink.text))


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


def _base64_credential(match: re.Match[str]) -> str | None:
    """Base64 that decodes to a credential (``user:password``, a PEM key, any rule's hit) goes whole."""
    token = match.group(0)
    decoded = b64_text(token) if b64_candidate(token) else None
    if decoded is None:
        return None
    if looks_like_credential(decoded) or _sanitize(decoded, None, depth=0, rounds=1) != decoded:
        return REDACTED
    return None


Edit = tuple[int, int, str, str]  # start, end, replacement (encoded for the text's context), rule


def _view_edits(text: str, depth: int, plus_split: bool = False) -> list[Edit]:
    """Redactions that the rules find in decoded views of ``text``, as spans of ``text`` itself.

    Each view undoes one context's escaping; its own views are searched too (JSON inside HTML,
    a JSON string inside a JSON string), ``depth`` layers deep. A replacement is re-encoded for
    every layer it passes on its way out, so ``<home>`` lands in HTML as ``&lt;home&gt;``.
    """
    edits: list[Edit] = []
    for view in VIEWS:
        if not view.applies(text):
            continue
        decoded = view.decode(text)
        if decoded is None:
            continue
        split = plus_split or view.name == "url"
        tracked = _Tracked(decoded.text)
        _run_rules(tracked, plus_split=split)
        inner = [(s, e, new, rule) for s, e, new, rule in tracked.edits]
        if depth > 1:
            inner += (
                _view_edits(tracked.text, depth - 1, split)
                if not tracked.edits
                else _nested(tracked, depth, split)
            )
        for start, end, new, rule in inner:
            edits.append(
                (decoded.to_original(start), decoded.to_original(end, end=True), view.encode(new), rule)
            )
    return _disjoint(edits)


def _nested(tracked: _Tracked, depth: int, plus_split: bool) -> list[Edit]:
    """Views of a view that already had redactions: found in its redacted text, mapped to its base."""
    found: list[Edit] = []
    for start, end, new, rule in _view_edits(tracked.text, depth - 1, plus_split):
        base_start, _ = tracked.locate(start, end=False)
        base_end, _ = tracked.locate(end, end=True)
        found.append((base_start, base_end, new, rule))
    return found


def _disjoint(edits: list[Edit]) -> list[Edit]:
    """Sorted, non-overlapping edits: an edit inside another is dropped, partial overlaps merge."""
    out: list[Edit] = []
    for start, end, new, rule in sorted(edits, key=lambda e: (e[0], -e[1])):
        if out and start < out[-1][1]:
            prev = out[-1]
            if end > prev[1]:
                out[-1] = (prev[0], end, prev[2], prev[3])
            continue
        out.append((start, end, new, rule))
    return out


def _simple(text: str) -> bool:
    if not _SIMPLE_RE.fullmatch(text) or "xox" in text or "xapp" in text:
        return False
    if _SENSITIVE_RE.search(text.lower()):  # "token abc123…" is a name and its value
        return False
    return len(text) < 12 or not b64_candidate(text)


def _sanitize(text: str, ledger: _Ledger | None, depth: int = 3, rounds: int = 2) -> str:
    if not text or _INERT_RE.fullmatch(text):  # digests, numbers, timestamps: evidence, never a secret
        return text
    if _simple(text):
        raw = _Raw(text, ledger)
        _environment_rules(raw)
        return raw.text
    for _ in range(rounds):
        raw = _Raw(text, ledger)
        _run_rules(raw)
        changed = raw.text != text
        text = raw.text
        if depth:
            edits = _view_edits(text, depth)
            if edits:
                text, offsets = _splice(text, [(s, e, new) for s, e, new, _rule in edits])
                if ledger is not None:
                    for (_s, _e, _new, rule), offset in zip(edits, offsets, strict=True):
                        ledger.add(rule, text, [offset])
                changed = True
        if not changed:
            break
    return text


def sanitize_text(text: str) -> str:
    """Redact secrets, signed-URL parameters and host-local paths in ``text`` (idempotent).

    Rules match the text as written and every decoded view of it (HTML entities, percent-encoding,
    JSON/backslash escapes, CSV quoting, nested up to three layers; base64 credentials), and the
    matching spans of the original are replaced, so escaping never hides a secret.
    """
    return _sanitize(text, None)


def sanitize_with_ledger(text: str, source: str) -> tuple[str, list[Redaction]]:
    """Sanitize ``text`` and report what was redacted (rule, ``source``, line in the result, count)."""
    ledger = _Ledger(source)
    return _sanitize(text, ledger), ledger.entries()


__all__ = ["sanitize_text", "sanitize_with_ledger"]
