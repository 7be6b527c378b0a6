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
* **Structure-aware allowlist.** The project's own ``sha256:<hex>`` digests, run ids and version
  strings never match any rule (no generic entropy detector is used), and a sensitive-looking key
  whose value is a digest, number, boolean or placeholder is left alone.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SANITIZER_VERSION = "wf-sanitize/1"
REDACTED = "[redacted]"

# ---------------------------------------------------------------------------------------------
# Sensitive key names
# ---------------------------------------------------------------------------------------------

_SENSITIVE_SEGMENTS = frozenset(
    {
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "authorization",
        "auth",
        "cookie",
        "cookies",
        "credential",
        "credentials",
        "privatekey",
        "signature",
        "bearer",
        "accesskey",
        "secretkey",
        "sas",
    }
)
# A sensitive word followed by one of these names metadata about the secret, not the secret
# (``token_count``, ``password_file``, ``auth_method``), so it is not redacted.
_NON_SECRET_SUFFIXES = frozenset(
    {
        "count",
        "counts",
        "limit",
        "limits",
        "len",
        "length",
        "size",
        "type",
        "types",
        "budget",
        "usage",
        "file",
        "path",
        "dir",
        "url",
        "uri",
        "env",
        "name",
        "names",
        "id",
        "ids",
        "method",
        "mode",
        "scheme",
        "header",
        "required",
        "enabled",
        "provider",
        "kind",
        "version",
        "expires",
        "expiry",
        "ttl",
        "hint",
        "field",
        "source",
        "ref",
        "present",
        "set",
        "policy",
    }
)
_CAMEL_RE = re.compile(r"([a-z0-9])([A-Z])")
_SPLIT_RE = re.compile(r"[^a-z0-9]+")


@functools.lru_cache(maxsize=4096)
def is_sensitive_key(key: str) -> bool:
    """True when a mapping key / variable name names a secret (``api_key``, ``X-Auth-Token`` …)."""
    segments = [s for s in _SPLIT_RE.split(_CAMEL_RE.sub(r"\1_\2", key).lower()) if s]
    for index, segment in enumerate(segments):
        pair = segment + segments[index + 1] if index + 1 < len(segments) else ""
        width = 2 if pair in _SENSITIVE_SEGMENTS else 1 if segment in _SENSITIVE_SEGMENTS else 0
        if not width:
            continue
        rest = segments[index + width :]
        if rest and rest[-1] in _NON_SECRET_SUFFIXES:
            continue
        return True
    return False


_DIGEST_VALUE_RE = re.compile(r"^sha(?:256|384|512):[0-9a-f]{16,128}$")
_NUMBER_RE = re.compile(r"^[-+]?\d{1,5}(?:\.\d+)?$")
_SCHEME_REDACTED_RE = re.compile(r"^(?:Bearer|Basic|Token)\s+\[redacted\]$", re.I)
_PLACEHOLDERS = frozenset({"", "null", "none", "true", "false", "~", "***", "<redacted>", "redacted"})


def _is_harmless_value(value: str) -> bool:
    """Values a sensitive key may hold without being a secret (digests, placeholders, references)."""
    stripped = value.strip().strip("\"'").strip()
    low = stripped.lower()
    return (
        low in _PLACEHOLDERS
        or low.startswith("[redacted")
        or bool(_SCHEME_REDACTED_RE.match(stripped))
        or stripped.startswith(("${", "$(", "env:", "<"))
        or bool(_DIGEST_VALUE_RE.match(stripped))
        or bool(_NUMBER_RE.match(stripped))
    )


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Redaction:
    """One ledger line: which rule fired where and how often. Never carries the secret."""

    rule: str
    file: str
    line: int
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "file": self.file, "line": self.line, "count": self.count}


Replacer = Callable[[re.Match[str]], str | None]


@dataclass(frozen=True)
class Rule:
    """A redaction rule: ``replace`` returns the new text for a match, or ``None`` to keep it."""

    id: str
    description: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    replace: Replacer
    rescan_values: bool = False  # on a kept match, resume scanning at its ``val`` group

    def prefilter(self, lowered: str) -> bool:
        return not self.keywords or any(k in lowered for k in self.keywords)


def _whole(_: re.Match[str]) -> str:
    return REDACTED


def _keep_prefix(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def _has_digit_and_letter(text: str) -> bool:
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def _token_like(match: re.Match[str]) -> str | None:
    return REDACTED if _has_digit_and_letter(match.group(0)) else None


_B = r"(?<![A-Za-z0-9_\-])"  # left boundary for token formats
_E = r"(?![A-Za-z0-9_\-])"  # right boundary

_PEM_RE = re.compile(
    r"-----BEGIN (?P<label>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END (?P=label)-----|\Z)",
    re.DOTALL,
)


def _pem(match: re.Match[str]) -> str:
    label = match.group("label")
    return f"-----BEGIN {label}-----{REDACTED}-----END {label}-----"


_USERINFO_RE = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<info>[^/\s?#@\"'<>]+)@")


def _userinfo(match: re.Match[str]) -> str | None:
    if match.group("info") == REDACTED:
        return None
    return match.group("scheme") + REDACTED + "@"


_SIGNED_PARAMS = frozenset(
    {
        "sig",
        "sv",
        "se",
        "sp",
        "st",
        "spr",
        "srt",
        "ss",
        "skoid",
        "sktid",
        "skt",
        "ske",
        "sks",
        "skv",
        "signature",
        "token",
        "access_token",
        "id_token",
        "refresh_token",
        "key",
        "api_key",
        "apikey",
        "expires",
        "policy",
        "key-pair-id",
        "code",
        "auth",
        "password",
        "secret",
    }
)
_QUERY_RE = re.compile(r"(?P<sep>[?&])(?P<name>[A-Za-z0-9_.\-]{1,64})=(?P<value>[^&#\s\"'<>\\]+)")


def _query_param(match: re.Match[str]) -> str | None:
    name = match.group("name")
    low = name.lower()
    signed = low in _SIGNED_PARAMS or low.startswith(("x-amz-", "x-goog-")) or is_sensitive_key(name)
    value = match.group("value")
    if not signed or value == REDACTED or _DIGEST_VALUE_RE.match(value):
        return None
    return f"{match.group('sep')}{name}={REDACTED}"


_AUTH_RE = re.compile(r"\b(?P<scheme>Bearer|Basic|Token)(?P<sp>\s+)(?P<cred>[A-Za-z0-9._~+/\-]{8,}=*)", re.I)


def _auth_header(match: re.Match[str]) -> str | None:
    scheme, cred = match.group("scheme"), match.group("cred")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(cred + "=" * (-len(cred) % 4), validate=True)
        except (binascii.Error, ValueError):
            return None
        if b":" not in decoded:
            return None
    elif not (_has_digit_and_letter(cred) or len(cred) >= 32 or any(c in cred for c in "._~+/-=")):
        return None
    return f"{scheme}{match.group('sp')}{REDACTED}"


_ASSIGN_KEY = r"[A-Za-z_][A-Za-z0-9_.\-]{0,80}"
_LINE_ASSIGN_RE = re.compile(
    r"^(?P<pre>[ \t]*(?:export[ \t]+|-[ \t]+)?)(?P<q>[\"']?)(?P<key>" + _ASSIGN_KEY + r")(?P=q)"
    r"(?P<sep>[ \t]*[:=][ \t]*)(?P<val>[^\s\"'{\[|>][^\n]*?)[ \t]*$",
    re.MULTILINE,
)
_INLINE_ASSIGN_RE = re.compile(
    r"(?P<q>[\"']?)(?P<key>" + _ASSIGN_KEY + r")(?:\\?(?P=q))(?P<sep>\s*[:=]\s*)"
    r"(?P<val>(?i:bearer|basic|token)\s+(?:\[redacted\]|[^\s,;&\"'<>\[\]{}()=]{1,512})"
    r"|\$\{[^}\n]*\}|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|\\\"(?:[^\"\\\n])*\\\"|[^\s,;&\"'<>\[\]{}()=]{1,512})"
)


def _assignment(match: re.Match[str]) -> str | None:
    value = match.group("val")
    prefix = match.string[match.start() : match.start("val")]
    if not is_sensitive_key(match.group("key")):
        return None  # the engine rescans from the value (``msg=password=abc``)
    if _is_harmless_value(value) or value.startswith("//"):
        return None
    if value.startswith('\\"'):
        new_value = f'\\"{REDACTED}\\"'
    elif value[:1] in "\"'":
        new_value = value[0] + REDACTED + value[0]
    else:
        new_value = REDACTED
    return prefix + new_value


_FILE_URL_RE = re.compile(r"\bfile://[^\s\"'<>)\]}]*", re.I)
_PATH_LEFT = r"(?<![\w.\-/~<>$%])"
_PATH_SEG = r"[^/\s\"'<>:;,|\\)\]}]+"
_HOME_RE = re.compile(_PATH_LEFT + r"(?:/home/" + _PATH_SEG + r"|/Users/" + _PATH_SEG + r"|/root(?![\w.\-]))")
_TMP_RE = re.compile(
    _PATH_LEFT
    + r"(?:(?:/private)?/var/folders(?:/"
    + _PATH_SEG
    + r"){0,3}|(?:/private)?/(?:var/)?tmp(?![\w.\-])"
    r"|/private(?=/))"
)
_WIN_HOME_RE = re.compile(r"(?<![\w])[A-Za-z]:(?P<sep>\\\\|\\|/)Users(?P=sep)[^\\/\s\"'<>:;,|]+", re.I)
_TILDE_RE = re.compile(r"(?<![\w.\-/~<>$%])~(?=/)")


def _placeholder(text: str) -> Replacer:
    def replace(_: re.Match[str]) -> str:
        return text

    return replace


def _provider_rule(
    rule_id: str,
    description: str,
    keywords: tuple[str, ...],
    regex: str,
    replace: Replacer = _whole,
    flags: int = 0,
) -> Rule:
    return Rule(rule_id, description, keywords, re.compile(regex, flags), replace)


RULES: tuple[Rule, ...] = (
    Rule("pem-private-key", "PEM private-key blocks", ("private key",), _PEM_RE, _pem),
    Rule(
        "file-url",
        "file:// URLs name host-local files",
        ("file:",),
        _FILE_URL_RE,
        _placeholder("<local-file>"),
    ),
    Rule("url-userinfo", "user[:password]@ in URLs", ("://",), _USERINFO_RE, _userinfo),
    Rule("signed-url-param", "signed-URL / credential query parameters", ("=",), _QUERY_RE, _query_param),
    _provider_rule(
        "jwt", "JSON Web Tokens", ("eyj",), r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"
    ),
    Rule(
        "auth-header",
        "Bearer / Basic / Token credentials",
        ("bearer", "basic", "token"),
        _AUTH_RE,
        _auth_header,
    ),
    _provider_rule(
        "anthropic-key", "Anthropic API keys", ("sk-ant-",), _B + r"sk-ant-[A-Za-z0-9_\-]{20,}" + _E
    ),
    _provider_rule(
        "openai-key",
        "OpenAI API keys (sk-, sk-proj-)",
        ("sk-",),
        _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}" + _E,
        _token_like,
    ),
    _provider_rule(
        "stripe-key",
        "Stripe live/test secret keys",
        ("_live_", "_test_"),
        _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}" + _E,
    ),
    _provider_rule(
        "aws-access-key-id",
        "AWS access key ids",
        ("akia", "asia", "agpa", "aida", "aroa", "anpa"),
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}(?![A-Z0-9])",
    ),
    _provider_rule(
        "aws-secret-key",
        "AWS secret access keys (after an aws_secret… name)",
        ("aws",),
        r"(?i)(aws[_\-.]?(?:secret[_\-.]?(?:access[_\-.]?)?key|sk)[\"']?\s*[:=]\s*[\"']?)"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
        _keep_prefix,
    ),
    _provider_rule(
        "github-token",
        "GitHub tokens (ghp_, gho_, github_pat_ …)",
        ("gh", "github_pat_"),
        _B + r"(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})" + _E,
    ),
    _provider_rule(
        "gitlab-token", "GitLab personal access tokens", ("glpat-",), _B + r"glpat-[A-Za-z0-9_\-]{20,}" + _E
    ),
    _provider_rule(
        "slack-token",
        "Slack tokens (xox?-)",
        ("xox", "xapp-"),
        _B + r"(?:xox[abposr]|xapp)-[A-Za-z0-9\-]{10,}" + _E,
        _token_like,
    ),
    _provider_rule(
        "huggingface-token", "Hugging Face access tokens", ("hf_",), _B + r"hf_[A-Za-z0-9]{30,}" + _E
    ),
    _provider_rule("google-api-key", "Google API keys", ("aiza",), _B + r"AIza[0-9A-Za-z_\-]{35}" + _E),
    Rule(
        "sensitive-key",
        "values of secret-named keys in YAML/env/INI lines",
        ("=", ":"),
        _LINE_ASSIGN_RE,
        _assignment,
    ),
    Rule(
        "sensitive-key",
        "values of secret-named keys in JSON/inline assignments",
        ("=", ":"),
        _INLINE_ASSIGN_RE,
        _assignment,
        rescan_values=True,
    ),
    Rule(
        "host-path-windows",
        r"C:\Users\<user> home directories",
        ("users",),
        _WIN_HOME_RE,
        _placeholder("<home>"),
    ),
    Rule(
        "host-path-home",
        "/home/<user>, /Users/<user>, /root",
        ("/home/", "/users/", "/root"),
        _HOME_RE,
        _placeholder("<home>"),
    ),
    Rule(
        "host-path-tmp",
        "/tmp, /var/tmp, /var/folders, /private",
        ("/tmp", "/var/", "/private"),
        _TMP_RE,
        _placeholder("<tmp>"),
    ),
    Rule("host-path-tilde", "~/ home-relative paths", ("~/",), _TILDE_RE, _placeholder("<home>")),
)
_SENSITIVE_KEYWORDS = (
    "key",
    "token",
    "secret",
    "pass",
    "auth",
    "cookie",
    "credential",
    "signature",
    "bearer",
    "sas",
)


def rule_ids() -> list[str]:
    """Every rule id a ledger can contain (including the two dynamic ones)."""
    ids = {rule.id for rule in RULES} | {"env-secret-value", "host-path-cwd"}
    return sorted(ids)


# ---------------------------------------------------------------------------------------------
# Dynamic rules: current environment secrets and the current home / working directory
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


@functools.lru_cache(maxsize=8)
def _local_prefixes(cwd: str, home: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    prefixes: list[tuple[str, str]] = []
    for raw, placeholder in ((cwd, ""), (home, "<home>")):
        if not raw:
            continue
        for candidate in {raw, os.path.realpath(raw)}:
            candidate = candidate.rstrip("/")
            if candidate.count("/") >= 2 or (candidate.count("/") == 1 and len(candidate) > 5):
                prefixes.append((candidate, placeholder))
    prefixes.sort(key=lambda item: len(item[0]), reverse=True)
    compiled = []
    for prefix, placeholder in prefixes:
        tail = r"(?P<slash>/)?" if placeholder == "" else ""
        compiled.append((re.compile(_PATH_LEFT + re.escape(prefix) + r"(?![\w.\-])" + tail), placeholder))
    return tuple(compiled)


def _current_prefixes() -> tuple[tuple[re.Pattern[str], str], ...]:
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    home = os.environ.get("HOME") or str(Path.home())
    return _local_prefixes(cwd, home)


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
                if any(k in value for k in _SENSITIVE_KEYWORDS):
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
        text = _apply("env-secret-value", pattern, _whole, text, ledger)
    if "/" in text:
        for pattern, placeholder in _current_prefixes():

            def repl(match: re.Match[str], placeholder: str = placeholder) -> str:
                if placeholder:
                    return placeholder
                return "" if match.groupdict().get("slash") else "."

            rule_id = "host-path-cwd" if placeholder == "" else "host-path-home"
            text = _apply(rule_id, pattern, repl, text, ledger)
    lowered = text.lower()
    for rule in RULES:
        if rule.id == "sensitive-key" and not any(k in lowered for k in _SENSITIVE_KEYWORDS):
            continue
        if rule.prefilter(lowered):
            new = _apply(rule.id, rule.pattern, rule.replace, text, ledger, rule.rescan_values)
            if new is not text:
                text = new
                lowered = text.lower()
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
        if sensitive and not _is_harmless_value(value):
            return REDACTED
        return sanitize_text(value)
    return value


# ---------------------------------------------------------------------------------------------
# Failure-gallery metric previews
# ---------------------------------------------------------------------------------------------

PREVIEW_MAX_ITEMS = 8
PREVIEW_MAX_KEYS = 12
PREVIEW_MAX_STRING = 240
PREVIEW_MAX_DEPTH = 4
_TENSOR_KEY_RE = re.compile(r"tensor|array|embedding|logits|pixels|frames|matrix", re.I)


def _shape(value: list[Any]) -> list[int] | None:
    """Shape of a rectangular nested numeric list, or ``None`` when ragged / non-numeric."""
    if not value:
        return [0]
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return [len(value)]
    if all(isinstance(v, list) for v in value):
        inner = [_shape(v) for v in value]
        if inner[0] is not None and all(s == inner[0] for s in inner):
            return [len(value), *inner[0]]
    return None


def _flat_numbers(value: Any) -> Iterable[float]:
    if isinstance(value, list):
        for item in value:
            yield from _flat_numbers(item)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield float(value)


def _summarise_array(value: list[Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "type": "array",
        "item_count": len(value),
        "nested": any(isinstance(item, (list, dict)) for item in value),
    }
    shape = _shape(value)
    if shape is not None:
        summary["shape"] = shape
        numbers = [n for n in _flat_numbers(value) if math.isfinite(n)]
        if numbers:
            summary["min"] = min(numbers)
            summary["max"] = max(numbers)
            summary["mean"] = round(sum(numbers) / len(numbers), 6)
    return summary


def _preview(value: Any, key: str, depth: int) -> Any:
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"type": "float", "preview": repr(value)}
    if isinstance(value, str):
        if is_sensitive_key(key) and not _is_harmless_value(value):
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
        try:
            dims = [int(d) for d in shape]
        except (TypeError, ValueError):
            dims = []
        return {"type": "array", "shape": dims, "dtype": str(getattr(value, "dtype", type(value).__name__))}
    return {"type": type(value).__name__, "preview": "non-json value omitted"}


def metrics_preview(metrics: dict[str, Any]) -> dict[str, Any]:
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
    "REDACTED",
    "RULES",
    "SANITIZER_VERSION",
    "Redaction",
    "Rule",
    "is_sensitive_key",
    "metrics_preview",
    "rule_ids",
    "sanitize_text",
    "sanitize_value",
    "sanitize_with_ledger",
]
