"""Redaction rules of the sanitizer: sensitive key names, token formats, URL and host-path patterns.

Each rule has an id (what the redaction ledger reports), a cheap keyword prefilter and a regex with a
replacement function; :mod:`worldforge.evidence.sanitize` applies them in order. Rules are data so
that the test corpus (``tests/fixtures/sanitizer/corpus.json``) can hold true-positive and near-miss
false-positive fixtures per id and check that each true positive also hits the prefilter.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SANITIZER_VERSION = "wf-sanitize/2"  # 2: prefixed keys whatever their characters; file names are not keys
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


# A key ending in one of these extensions is a file name (``secret.json: $.entries[0] …`` in a CLI
# error line, a digest map keyed by file name), not a secret-named setting: redacting after it would
# eat the field name a reader needs. Extensions that double as setting names (``.key``, ``.pem``,
# ``.token``) are deliberately absent, so ``jwt.secret.key: …`` stays redacted.
_FILE_EXTENSIONS = frozenset(
    (
        "json jsonl ndjson yaml yml toml ini cfg conf txt md rst csv tsv xml html htm log py sh zip "
        "gz tgz bz2 xz zst tar npz npy pt pth ckpt safetensors onnx pkl parquet png jpg jpeg gif "
        "svg mp4 webm wav sqlite lock bak tmp orig"
    ).split()
)


def _is_file_name(key: str) -> bool:
    stem, dot, extension = key.rpartition(".")
    return bool(dot and stem) and extension.lower() in _FILE_EXTENSIONS


@functools.lru_cache(maxsize=4096)
def is_sensitive_key(key: str) -> bool:
    """True when a mapping key / variable name names a secret (``api_key``, ``X-Auth-Token`` …).

    A file name (``secret.json``, ``token.yaml``) names a file, not a secret, so it is never sensitive:
    the text after it is a message about that file, and dotted settings (``db.password``) still are.
    """
    if _is_file_name(key):
        return False
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


def is_harmless_value(value: str) -> bool:
    """Values a sensitive key may hold without being a secret (digests, placeholders, references).

    Public because every redaction path (rules, the engine, failure-gallery previews) must agree on
    what stays readable next to a sensitive key.
    """
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


def redact_whole(_: re.Match[str]) -> str:
    """Replacer that redacts the whole match; the default for rules and the engine's dynamic ones."""
    return REDACTED


def _keep_prefix(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def _has_digit_and_letter(text: str) -> bool:
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


_KEY_RUN_RE = re.compile(r"[A-Za-z0-9]{20,}")


def _ambiguous_prefix_token(match: re.Match[str]) -> str | None:
    """Redact the token after a prefix that also starts ordinary names (``sk-``, ``xoxb-``).

    A prefix that names a key kind on its own (``scope``: ``sk-proj-``, ``sk-svcacct-`` …) is
    redacted whatever the body holds. After a bare prefix, a digit/letter mix, an unbroken run of 20
    or more letters/digits, or 20 or more characters without a letter is a key, so letters-only keys
    (``sk-AAAAAAAAAAAAAAAAAAAAAAAA``) go too. What survives is a name built from short words:
    ``sk-learn-compatible-estimator-wrapper`` (the scikit-learn naming idiom) or the placeholder
    ``xoxb-your-bot-token-goes-here``; no real key of these formats looks like that.
    """
    body = match.group("body")
    if match.group("scope") or _has_digit_and_letter(body) or _KEY_RUN_RE.search(body):
        return REDACTED
    return REDACTED if len(body) >= 20 and not any(c.isalpha() for c in body) else None


# Token boundaries. ``_``, ``-`` and ``.`` may touch a token: file names and ids are slugs (item
# ``mock:sk-proj-…/object-swap`` is stored as ``mock_sk-proj-…--object-swap.<digest>.json``, object
# ids join with ``-``), and boundaries that refused those characters let keys in names through.
# Letters and digits on either side still mean the prefix is part of a longer word (``task-…``).
_B = r"(?<![A-Za-z0-9])"
_E = r"(?![A-Za-z0-9])"

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
    if match.string[match.start() - 1 : match.start()] == "/":
        # The last segment of a path (``/etc/secret: permission denied``), not a setting: the text
        # after it is a message about that file, which redaction would make unreadable. A ``\``
        # is not taken as a separator here because it also escapes quotes (``{\"token\": …}``).
        return None
    if is_harmless_value(value) or value.startswith("//"):
        return None
    if value.startswith('\\"'):
        new_value = f'\\"{REDACTED}\\"'
    elif value[:1] in "\"'":
        new_value = value[0] + REDACTED + value[0]
    else:
        new_value = REDACTED
    return prefix + new_value


_FILE_URL_RE = re.compile(r"\bfile://[^\s\"'<>)\]}]*", re.I)
#: Left boundary of a host path: not inside a word, a longer path or a placeholder. Shared with the
#: engine's dynamic prefixes (current directory, home) so both kinds of path match alike.
PATH_LEFT = r"(?<![\w.\-/~<>$%])"
_PATH_SEG = r"[^/\s\"'<>:;,|\\)\]}]+"
_HOME_RE = re.compile(PATH_LEFT + r"(?:/home/" + _PATH_SEG + r"|/Users/" + _PATH_SEG + r"|/root(?![\w.\-]))")
_TMP_RE = re.compile(
    PATH_LEFT
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
    replace: Replacer = redact_whole,
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
        "jwt",
        "JSON Web Tokens",
        ("eyj",),
        _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
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
        _B + r"sk-(?P<scope>(?:proj|svcacct|admin|None)-)?(?P<body>[A-Za-z0-9_\-]{20,})" + _E,
        _ambiguous_prefix_token,
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
        _B + r"(?:xox[abposr]|xapp)-(?P<scope>)(?P<body>[A-Za-z0-9\-]{10,})" + _E,
        _ambiguous_prefix_token,
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
#: Substrings that make a key look sensitive; also the engine's cheap prefilter for key rules.
SENSITIVE_KEYWORDS = (
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
    """Every rule id a ledger can contain (including the dynamic ones: environment secrets, the
    current directory, the source checkout, the virtual environment and the login name)."""
    dynamic = {"env-secret-value", "host-path-cwd", "host-path-repo", "host-path-venv", "host-user"}
    ids = {rule.id for rule in RULES} | dynamic
    return sorted(ids)


# ---------------------------------------------------------------------------------------------
# Dynamic rules: current environment secrets and the current home / working directory


__all__ = [
    "PATH_LEFT",
    "REDACTED",
    "RULES",
    "SANITIZER_VERSION",
    "SENSITIVE_KEYWORDS",
    "Redaction",
    "Rule",
    "is_harmless_value",
    "is_sensitive_key",
    "redact_whole",
    "rule_ids",
]
