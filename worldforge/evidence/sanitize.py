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
* **Layout.** The rule table lives in :mod:`worldforge.evidence.rules`, failure-gallery previews in
  :mod:`worldforge.evidence.preview`; this module applies the rules and is the public entry point.
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
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from worldforge.evidence.rules import (
    PATH_LEFT,
    REDACTED,
    RULES,
    SANITIZER_VERSION,
    SENSITIVE_KEYWORDS,
    Redaction,
    Replacer,
    Rule,
    is_harmless_value,
    is_sensitive_key,
    redact_whole,
    rule_ids,
)

# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _env_secret_values(snapshot: tuple[tuple[Any, Any], ...]) -> tuple[str, ...]:
    values = set()
    for raw_name, raw_value in snapshot:
        name = os.fsdecode(raw_name) if isinstance(raw_name, bytes) else str(raw_name)
        value = os.fsdecode(raw_value) if isinstance(raw_value, bytes) else str(raw_value)
        if len(value) >= 8 and is_sensitive_key(name):
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
    root = Path(__file__).resolve().parents[2]
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


def _apply(
    rule_id: str,
    pattern: re.Pattern[str],
    replace: Replacer,
    text: str,
    ledger: _Ledger | None,
    rescan_values: bool = False,
) -> str:
    """Apply one rule left to right; offsets of replacements (in the result) go to the ledger."""
    out: list[str] = []
    out_len = 0
    offsets: list[int] = []
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
            if stop <= pos and stop == match.end():  # empty match: step one character
                stop = pos + 1
            chunk = text[pos:stop]
        else:
            chunk = text[pos : match.start()]
            offsets.append(out_len + len(chunk))
            chunk += new
            stop = match.end() if match.end() > match.start() else match.end() + 1
            if match.end() == match.start():
                chunk += text[match.end() : stop]
        out.append(chunk)
        out_len += len(chunk)
        pos = stop
    if not offsets:
        return text
    out.append(text[pos:])
    result = "".join(out)
    if ledger is not None:
        ledger.add(rule_id, result, offsets)
    return result


def _sanitize(text: str, ledger: _Ledger | None) -> str:
    if not text:
        return text
    raw_env = getattr(os.environ, "_data", None)  # the undecoded mapping is much cheaper to snapshot
    snapshot = tuple(raw_env.items()) if isinstance(raw_env, dict) else tuple(os.environ.items())
    secrets = _env_secret_values(snapshot)
    present = [s for s in secrets if s in text]
    if present:
        pattern = re.compile("|".join(re.escape(s) for s in present))
        text = _apply("env-secret-value", pattern, redact_whole, text, ledger)
    if "/" in text:
        for pattern, placeholder in _current_prefixes():

            def repl(match: re.Match[str], placeholder: str = placeholder) -> str:
                if placeholder:
                    return placeholder
                return "" if match.groupdict().get("slash") else "."

            text = _apply(_PREFIX_RULES[placeholder], pattern, repl, text, ledger)
    lowered = text.lower()
    for rule in RULES:
        if rule.id == "sensitive-key" and not any(k in lowered for k in SENSITIVE_KEYWORDS):
            continue
        if rule.prefilter(lowered):
            new = _apply(rule.id, rule.pattern, rule.replace, text, ledger, rule.rescan_values)
            if new is not text:
                text = new
                lowered = text.lower()
    login = _login_name()
    if len(login) >= 3 and login in text and "/" in text:  # after <home>/<tmp>, which may absorb it
        text = _apply("host-user", _login_pattern(login), _login_in_path, text, ledger)
    return text


def sanitize_text(text: str) -> str:
    """Redact secrets, signed-URL parameters and host-local paths in ``text`` (idempotent)."""
    return _sanitize(text, None)


def sanitize_with_ledger(text: str, source: str) -> tuple[str, list[Redaction]]:
    """Sanitize ``text`` and report what was redacted (rule, ``source``, line in the result, count)."""
    ledger = _Ledger(source)
    return _sanitize(text, ledger), ledger.entries()


def sanitize_value(value: Any, key: str | None = None) -> Any:
    """Recursively sanitize a JSON-native value; values under secret-named keys become ``[redacted]``.

    Numbers, booleans, ``None``, digests and placeholders under a secret-named key are kept, so
    ``{"token_budget": 5}`` or ``{"signature": "sha256:…"}`` survive; containers under such a key are
    replaced whole because their structure cannot be trusted to be secret-free.
    """
    sensitive = key is not None and is_sensitive_key(key)
    if isinstance(value, dict):
        if sensitive and value:
            return REDACTED
        return {sanitize_text(str(k)): sanitize_value(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if sensitive and value:
            return REDACTED
        return [sanitize_value(item, None) for item in value]
    if isinstance(value, str):
        if sensitive and not is_harmless_value(value):
            return REDACTED
        return sanitize_text(value)
    return value


def sanitize_argv(argv: Iterable[object]) -> list[str]:
    """A command line safe to record and still worth replaying.

    Run manifests, report provenance and failure-gallery rerun commands all record commands through
    this one function, so they agree: paths under the current directory become relative (the command
    replays from the directory it was started in), other host locations become placeholders and
    secret-shaped arguments are redacted. An argument that was exactly the current directory
    becomes ``.`` rather than an empty string, which a shell would drop.
    """
    out: list[str] = []
    for arg in argv:
        raw = str(arg)
        clean = str(sanitize_value(raw))
        out.append("." if raw and not clean else clean)
    return out


# ---------------------------------------------------------------------------------------------


from worldforge.evidence.preview import metrics_preview  # noqa: E402 - re-exported public API

__all__ = [
    "REDACTED",
    "RULES",
    "SANITIZER_VERSION",
    "Redaction",
    "Rule",
    "is_sensitive_key",
    "metrics_preview",
    "rule_ids",
    "sanitize_argv",
    "sanitize_text",
    "sanitize_value",
    "sanitize_with_ledger",
]
