"""Sensitive key names, harmless values and the rule/ledger records every redaction path shares.

The redactor's rules (:mod:`worldforge.core.redact.rules`, :mod:`worldforge.core.redact.forms`), the
value sanitizer and the failure-gallery previews must agree on what names a secret and what stays
readable beside it; this module is that one definition.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from worldforge.core.canonical import JSONObject

SANITIZER_VERSION = "wf-sanitize/3"  # 3: decoded views, structured forms, leaf redaction under secret keys
REDACTED = "[redacted]"

# ---------------------------------------------------------------------------------------------
# Sensitive key names
# ---------------------------------------------------------------------------------------------

_SENSITIVE_SEGMENTS = frozenset(
    {
        "apikey",
        "token",
        "secret",
        "secrets",
        "password",
        "passwords",
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
        "pwd",
        "session",
        "sessionid",
        "jwt",
        "clientsecret",
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
        "stdin",
    }
)
# A segment that *ends* in one of these words names a secret too: ``PGPASSWORD``, ``githubtoken``,
# ``dbsecret`` (environment variables are often written without separators).
_SECRET_ENDINGS = ("password", "passwd", "secret", "token", "apikey")
# ``<word>_key`` names a secret (``encryption_key``, ``origin_ca_key``) unless the word says the key
# is a lookup key: database, cache and mapping keys are not credentials. Public keys stay
# sensitive: vendors' "public" keys (Mailgun pubkey-…, Flutterwave FLWPUBK…) still grant access.
_PUBLIC_KEY_KINDS = frozenset(
    (
        "primary foreign sort partition cluster clustering range hash cache lookup dict map index "
        "row group join unique composite object item idempotency dedup dedupe routing "
        "shard bucket hot short shortcut keyboard sequence natural surrogate compound candidate "
        "entry record parent child the a any each this that"
    ).split()
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
    if len(segments) >= 2 and segments[-1] == "key" and segments[-2] not in _PUBLIC_KEY_KINDS:
        return True  # origin_ca_key, signing_key, LICENSE_KEY: a named key is a secret
    if segments[-3:] == ["access", "key", "id"]:
        return True  # the public half of an access-key pair still identifies the account
    for index, segment in enumerate(segments):
        pair = segment + segments[index + 1] if index + 1 < len(segments) else ""
        width = 2 if pair in _SENSITIVE_SEGMENTS else 1 if segment in _SENSITIVE_SEGMENTS else 0
        if not width and segment.endswith(_SECRET_ENDINGS):
            width = 1
        if not width:
            continue
        rest = segments[index + width :]
        if rest and rest[-1] in _NON_SECRET_SUFFIXES:
            continue
        return True
    return False


DIGEST_VALUE_RE = re.compile(r"^sha(?:256|384|512):[0-9a-f]{16,128}$")
_NUMBER_RE = re.compile(r"^[-+]?\d{1,5}(?:\.\d+)?$")
_SCHEME_REDACTED_RE = re.compile(r"^(?:Bearer|Basic|Token)\s+\[redacted\]$", re.I)
# Shell/template references and filler: ``$API_KEY``, ``$1``, ``{SumoAccessKey}``, ``xxxxxxxx``,
# ``********``, ``<token>`` -- documentation and configuration templates, not credentials.
_PLACEHOLDER_RE = re.compile(
    r"^(?:\$[A-Za-z_][A-Za-z0-9_]*|\$\d|`[^`]*$|`(?:[^`]*[\s$(|/][^`]*)?`|\[[A-Z][A-Z0-9_ ]*\]"
    r"|\{\{?\s*[A-Za-z_][A-Za-z0-9_.]*\s*\}?\}|(?P<c>[xX*#.])(?P=c){3,})$"
)
_SCHEME_RE = re.compile(r"(?i)^(?:bearer|basic|token)\s+")
# ``{base64(email:password)}``: a template expression, not a value.
_TEMPLATE_CALL_RE = re.compile(r"^\{\{?\s*[A-Za-z_][\w.]*\s*\(")
# ``new AWS.SharedIniFileCredentials({ profile: '<P>' })``, ``os.getenv("DB_PASSWORD")``: code that
# fetches a secret at run time. Only a call on a dotted name (or ``new``/no arguments) counts, and
# only when its quoted arguments are names or placeholders: a literal default is still redacted.
_CODE_CALL_RE = re.compile(
    r"^(?P<new>new\s+|await\s+)?(?P<callee>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\((?P<args>.*)\)\s*[,;]?$", re.S
)
_QUOTED_RE = re.compile(r"\"([^\"]*)\"|'([^']*)'")
_ENV_NAME_RE = re.compile(r"[A-Z][A-Z0-9_]*")
_BARE_RUN_RE = re.compile(r"[A-Za-z0-9_+/=\-]{8,}")


def is_code_call(value: str) -> bool:
    """``new AWS.SharedIniFileCredentials({…})``, ``os.getenv("NAME")``: code that fetches a secret."""
    return _code_call(value.strip().rstrip(",;"))


def _code_call(value: str) -> bool:
    match = _CODE_CALL_RE.match(value)
    if match is None:
        return False
    args = match.group("args")
    if not (match.group("new") or "." in match.group("callee") or not args.strip()):
        return False
    for quoted in _QUOTED_RE.finditer(args):
        literal = quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
        if not (_ENV_NAME_RE.fullmatch(literal) or is_harmless_value(literal)):
            return False
    bare = _QUOTED_RE.sub("", args)
    return not any(has_digit_and_letter(run) for run in _BARE_RUN_RE.findall(bare))


_PLACEHOLDERS = frozenset({"", "null", "none", "true", "false", "~", "***", "<redacted>", "redacted"})


_FILLER_RE = re.compile(r"(?P<c>[xX*#.])(?P=c){7,}")  # letters of filler only: 000… may be generated


def is_placeholder_token(token: str) -> bool:
    """A vendor-shaped token that documentation uses as a placeholder: a long run of one filler
    character (``ghp_xxxxxxxx…``, ``glc_11111111…``). Hand-typed look-alikes (``…-abc123xyz-
    klmnopqrstuvwx-…``, ``ABSK…EXAMPLEEXAMPLE…``) are still redacted: gitleaks' own true-positive
    samples use the same shapes, and a missed key cannot be taken back."""
    return _FILLER_RE.search(token) is not None


def _prefixed_filler(value: str) -> bool:
    """``hf_xxxxxxxx``, ``pplx-xxxxxxxx``, ``glc_11111111=``: a vendor prefix and filler."""
    tail = value.rstrip(",;").split("_")[-1].split("-")[-1].rstrip("=")
    return len(tail) >= 8 and _FILLER_RE.fullmatch(tail) is not None


_FILLER_AFTER_RE = re.compile(r"[-_]?(?P<c>[xX*#])(?P=c){3,}")  # xoxp-…-####################


def unless_placeholder(replace: Replacer) -> Replacer:
    """Wrap a token rule's replacer so documentation placeholders (``ghp_xxxx…``) are kept."""

    def replacer(match: re.Match[str]) -> str | None:
        if is_placeholder_token(match.group(0)) or _FILLER_AFTER_RE.match(match.string, match.end()):
            return None
        return replace(match)

    return replacer


def is_harmless_value(value: str) -> bool:
    """Values a sensitive key may hold without being a secret (digests, placeholders, references).

    Public because every redaction path (rules, the engine, failure-gallery previews) must agree on
    what stays readable next to a sensitive key.
    """
    stripped = value.strip().strip("\"'").strip()
    if _SCHEME_RE.match(stripped) and not _SCHEME_REDACTED_RE.match(stripped):
        stripped = _SCHEME_RE.sub("", stripped, count=1).strip("\"'")  # Bearer $API_KEY
    low = stripped.lower()
    return (
        low in _PLACEHOLDERS
        or low in ("!0", "!1")  # minified JavaScript booleans: ``o.haKey=!1``
        or low.startswith("[redacted")
        or bool(_TEMPLATE_CALL_RE.match(stripped))
        or _code_call(stripped)
        or bool(_SCHEME_REDACTED_RE.match(stripped))
        or stripped.startswith(("${", "$(", "env:", "<"))
        or bool(_PLACEHOLDER_RE.match(stripped))
        or low in ("bearer", "basic", "token")  # a scheme before a placeholder: Bearer <your token>
        or (
            len(stripped) >= 8
            and _FILLER_RE.fullmatch(stripped.rstrip(",;").split("_")[-1].split("-")[-1].rstrip("="))
            is not None
        )
        or bool(DIGEST_VALUE_RE.match(stripped))
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

    def to_dict(self) -> JSONObject:
        return {"rule": self.rule, "file": self.file, "line": self.line, "count": self.count}


Replacer = Callable[[re.Match[str]], str | None]


class Matcher(Protocol):
    """What a rule searches with: a compiled regex, or an object that extends one (balanced braces)."""

    def search(self, string: str, pos: int = ..., /) -> re.Match[str] | None: ...


@dataclass(frozen=True)
class Rule:
    """A redaction rule: ``replace`` returns the new text for a match, or ``None`` to keep it."""

    id: str
    description: str
    keywords: tuple[str, ...]
    pattern: Matcher
    replace: Replacer
    rescan_values: bool = False  # on a kept match, resume scanning at its ``val`` group
    #: Whether the rule also runs on URL-decoded views. Those read every ``+`` as a space, which cuts
    #: a base64 image into pieces; a rule that judges a run by its extent must not see them.
    url_view: bool = True

    #: The keywords as one compiled alternation (a C-level scan instead of a Python loop per
    #: keyword); ``None`` for a rule that always runs.
    keyword_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pattern = re.compile("|".join(re.escape(k) for k in self.keywords)) if self.keywords else None
        object.__setattr__(self, "keyword_re", pattern)

    def prefilter(self, lowered: str) -> bool:
        """Whether the rule can match ``lowered`` (the text lower-cased): one of its keywords is in it."""
        return self.keyword_re is None or self.keyword_re.search(lowered) is not None


def redact_whole(_: re.Match[str]) -> str:
    """Replacer that redacts the whole match; the default for rules and the engine's dynamic ones."""
    return REDACTED


def has_digit_and_letter(text: str) -> bool:
    """Both a digit and a letter: the cheapest sign that a token is generated, not a word."""
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)
