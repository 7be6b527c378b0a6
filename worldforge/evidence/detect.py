"""A second secret detector, independent of the redactor, that gates every bundle (fail closed).

The redactor (:mod:`worldforge.core.redact`) decides what to *replace*; this module only decides
whether anything secret-shaped is still *there*. It shares no rule with the redactor on purpose: a
blind spot in one set of patterns should not be a blind spot in both. Its rules are organised the
way secret scanners such as gitleaks organise theirs:

* ``provider-token`` — tokens whose vendor prefix says what they are (AWS, GitHub, GitLab, Slack,
  Stripe, OpenAI, Anthropic, Hugging Face, Google, npm, PyPI, SendGrid, Twilio, Shopify,
  DigitalOcean, Databricks, JWTs), and a bare AWS secret access key by its shape alone
  (:mod:`worldforge.evidence.detect_shapes`);
* ``generic-keyword`` — a secret-sounding name (password, token, api_key, cookie …) followed by a
  value that looks generated: long enough and either mixed letters and digits or of high Shannon
  entropy, so ``token_budget: 25000`` and ``password: optional`` pass;
* ``private-key`` — a PEM private-key header followed by key material;
* ``url-credentials`` — ``scheme://user:password@`` and signed-URL query parameters with a value;
* ``host-path`` — home directories (POSIX, macOS, Windows), ``/root``, random-looking ``/tmp``
  entries, UNC shares, ``file://`` URLs, including their percent- and JSON-escaped spellings;
* ``known-value`` — exact strings the caller knows are secret or local (values of secret-named
  environment variables, ``$HOME``, the working directory, the login name as a path segment), in
  raw, JSON-, HTML-, URL- and base64-encoded forms.

A :class:`Finding` carries rule, family, offsets and line — never the text, and no hash of it. The
project's own evidence (``sha256:`` digests, run ids, UUIDs, versions, commit hashes) and the
redactor's placeholders (``[redacted]``, ``<home>`` …) are never findings.
"""

from __future__ import annotations

import base64
import bisect
import functools
import html
import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus

from worldforge.evidence.detect_forms import client_findings, form_findings
from worldforge.evidence.detect_shapes import bare_key_findings

DETECTOR_VERSION = "wf-detect/1"
FAMILIES: tuple[str, ...] = (
    "provider-token",
    "generic-keyword",
    "private-key",
    "url-credentials",
    "host-path",
    "known-value",
)


@dataclass(frozen=True)
class Finding:
    """One detection: which rule, where. Deliberately no field for the matched text."""

    rule: str
    family: str
    start: int
    end: int
    line: int


# ------------------------------------------------------------------------------ known values

_SECRET_NAME = re.compile(
    r"(?i)(?:^|_)(?:key|token|secret|password|passwd|pass|pwd|credentials?|auth|cookie|session)(?:_|$)"
)
_NOT_SECRET_NAME = re.compile(r"(?i)_(?:path|file|dir|url|uri|host|port|name|user|id|type|mode)$")


def _secret_env_name(name: str) -> bool:
    """``OPENAI_API_KEY`` or ``DB_PASSWORD`` yes; ``PWD`` (the shell's directory) and ``*_PATH`` no."""
    upper = name.upper()
    if upper in ("PWD", "OLDPWD") or _NOT_SECRET_NAME.search(name):
        return False
    return bool(_SECRET_NAME.search(name)) or "API_KEY" in upper or "APIKEY" in upper


@dataclass(frozen=True)
class KnownValues:
    """Exact strings that must not appear in a bundle in any encoding."""

    secrets: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    login: str = ""
    _forms: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] | None = None, cwd: str | None = None
    ) -> KnownValues:
        env = dict(os.environ if environ is None else environ)
        secrets = tuple(sorted({v for k, v in env.items() if len(v) >= 8 and _secret_env_name(k)}))
        paths: set[str] = set()
        home = env.get("HOME", "")
        if home.startswith("/") and len(home) > 1:
            paths.add(home.rstrip("/"))
        try:
            here = cwd if cwd is not None else os.getcwd()
        except OSError:
            here = ""
        if here.count("/") >= 2 and here.rstrip("/"):
            paths.add(here.rstrip("/"))
        login = env.get("USER") or env.get("LOGNAME") or ""
        if not login:
            try:
                import pwd

                login = pwd.getpwuid(os.getuid()).pw_name
            except (ImportError, KeyError, OSError):
                login = ""
        return cls(secrets=secrets, paths=tuple(sorted(paths)), login=login)

    def forms(self) -> tuple[tuple[str, str, bool], ...]:
        """``(rule, encoded form, is a plain-text form)`` of every known value in every encoding."""
        return _all_forms(self.secrets, self.paths)


@functools.lru_cache(maxsize=16)
def _all_forms(secrets: tuple[str, ...], paths: tuple[str, ...]) -> tuple[tuple[str, str, bool], ...]:
    out: list[tuple[str, str, bool]] = []
    for rule, values in (("known-value/secret", secrets), ("known-value/path", paths)):
        for value in values:
            plain = {value, json.dumps(value)[1:-1], html.escape(value, quote=True)}
            out.extend((rule, form, form in plain) for form in sorted(_encoded_forms(value)))
    return tuple(out)


def _encoded_forms(value: str) -> set[str]:
    forms = {
        value,
        json.dumps(value)[1:-1],
        html.escape(value, quote=True),
        quote(value, safe=""),
        quote_plus(value),
    }
    raw = value.encode("utf-8")
    for shift in range(3):  # a value inside a longer base64 string starts at one of three alignments
        padded = b"\0" * shift + raw
        for encoder in (base64.b64encode, base64.urlsafe_b64encode):
            text = encoder(padded).decode("ascii").rstrip("=")
            skip = (shift * 4 + 2) // 3  # characters that still depend on the padding bytes
            core = text[skip : len(text) - 2]  # the tail depends on what follows
            if len(core) >= 8:
                forms.add(core)
    return {f for f in forms if len(f) >= 4}


def _known_findings(text: str, known: KnownValues) -> Iterator[tuple[str, int, int]]:
    for rule, form, plain in known.forms():
        start = text.find(form)
        while start >= 0:
            end = start + len(form)
            if rule != "known-value/path" or not plain or not _continues_name(text, end):
                yield rule, start, end
            start = text.find(form, end)
    login = known.login
    if len(login) >= 2 and login in text:
        for match in _login_pattern(login).finditer(text):
            if (
                text[max(0, match.start() - 1) : match.start()] == "/"
                or "pytest-of-" in text[match.start() - 10 : match.start()]
            ):
                yield "known-value/login", match.start(), match.end()


@functools.lru_cache(maxsize=16)
def _login_pattern(login: str) -> re.Pattern[str]:
    return re.compile(r"(?:(?<=/)|(?<=pytest-of-))" + re.escape(login) + r"(?=/|$|[\s\"'])")


def _continues_name(text: str, end: int) -> bool:
    """``/home/dana`` inside ``/home/danae`` is a different path."""
    return end < len(text) and (text[end].isalnum() or text[end] in "_-")


# ------------------------------------------------------------------------------ rule tables

_L = r"(?<![A-Za-z0-9])"  # token start: not inside a longer word (``_``/``-`` may join slugs)
_R = r"(?![A-Za-z0-9])"

_PROVIDERS: tuple[tuple[str, str, str], ...] = (
    # (rule, cheap literal prefilter, pattern)
    (
        "aws",
        "A",
        r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Z0-9])",
    ),
    ("github", "gh", _L + r"gh[pousr]_[A-Za-z0-9]{30,251}" + _R),
    ("github", "github_pat_", _L + r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{50,}" + _R),
    ("gitlab", "glpat-", _L + r"glpat-[A-Za-z0-9\-_]{20,}" + _R),
    ("slack", "xox", r"(?<![A-Za-z0-9])xox[baprse]-(?:[0-9]{6,}-){1,3}[A-Za-z0-9\-]{8,}" + _R),
    ("slack", "xapp-", r"(?<![A-Za-z0-9])xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+" + _R),
    ("stripe", "_live_", _L + r"(?:sk|rk|pk)_live_[A-Za-z0-9]{16,}" + _R),
    ("stripe", "_test_", _L + r"(?:sk|rk)_test_[A-Za-z0-9]{16,}" + _R),
    ("anthropic", "sk-ant-", _L + r"sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9\-_]{20,}" + _R),
    (
        "openai",
        "sk-",
        _L
        + r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{20,}"
        + _R,
    ),
    ("huggingface", "hf_", _L + r"hf_[A-Za-z]{30,}" + _R),
    ("huggingface", "hf_", _L + r"hf_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{30,}" + _R),
    ("google", "AIza", _L + r"AIza[A-Za-z0-9_\-]{35}" + _R),
    ("npm", "npm_", _L + r"npm_[A-Za-z0-9]{36}" + _R),
    ("pypi", "pypi-", _L + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
    ("sendgrid", "SG.", _L + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _R),
    ("twilio", "SK", r"(?<![A-Za-z0-9])SK[0-9a-f]{32}" + _R),
    ("shopify", "shp", _L + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _R),
    ("digitalocean", "do", _L + r"do[opr]_v1_[a-f0-9]{64}" + _R),
    ("databricks", "dapi", _L + r"dapi[a-f0-9]{32}(?:-\d)?" + _R),
    ("telegram", ":AA", r"(?:(?<=bot)|(?<![A-Za-z0-9]))\d{5,16}:AA[A-Za-z0-9_\-]{33}" + _R),
    ("jwt", "eyJ", _L + r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
)
_PROVIDER_RES = tuple((rule, literal, re.compile(pattern)) for rule, literal, pattern in _PROVIDERS)

_KEYWORDS = (
    r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|secret[_\-]?key"
    r"|client[_\-]?secret|private[_\-]?key|credentials?|auth(?:orization)?|session(?:id)?|cookie|bearer"
    r"|(?<=[a-z0-9][_\-.])key)"  # origin_ca_key, SIGNING-KEY: a named key
    r"(?![a-z])"  # "passed", "tokenizer", "author" are words, not names of secrets
)
# A keyword hit is widened to its whole identifier, then separator and value are matched right
# after it (``re.match`` at a position): one pass over the text, no backtracking over identifiers.
_KEYWORD_FIND = re.compile(r"(?i)" + _KEYWORDS)
_IDENTIFIER_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_SEP_VALUE = re.compile(
    r"(?i)(?P<sep>[\"'`*]*\s*(?::=|=>|[:=|,>]|\s)\s*(?:[\"'`*]|\\\")*\s*(?:(?:bearer|basic|token)\s+)?)"
    r"(?P<val>[^\s\"'`<>|,;\\\]\[{}()]{8,})"
)
# The value half first (it starts with a comma, which the engine finds fast), then the name half
# right before it.
_VALUE_HALF = re.compile(
    r"(?i),\s*[\"']?(?:value|val|content|data|secret)[\"']?\s*[:=]\s*[\"'](?P<val>[^\"'\s]{6,})"
)
_NAME_HALF = re.compile(
    r"(?i)[\"']?(?:name|key|field|header|param|parameter|variable|var|env|setting)[\"']?\s*[:=]\s*[\"']"
    r"(?P<name>[A-Za-z0-9_.\-]+)[\"']\s*$"
)
# <input name=… value=…>, and XML settings: <entry key="api_token" value="…"/>, <add key=… value=…/>
_INPUT = re.compile(
    r"(?i)<[a-z][\w:.\-]*\b[^>]*\b(?:name|key)=[\"']?(?P<name>[A-Za-z0-9_.\-]+)[^>]*\bvalue=[\"'](?P<val>[^\"']{6,})"
)
# Rendered key/value markup: <dt>name</dt><dd>value</dd>, <th>name</th><td>value</td>.
_MARKUP_PAIR = re.compile(
    r"(?i)<(dt|th|td)\b[^>]*>\s*(?:<code>)?(?P<name>[A-Za-z0-9_.\-]{2,80})(?:</code>)?\s*</\1>\s*"
    r"<(dd|td)\b[^>]*>\s*(?:<(?:code|kbd|samp|tt|span|b|strong|em|pre)\b[^>]*>\s*)?(?P<val>[^<\s]{6,})\s*<"
)
_BLOCK_AFTER = re.compile(r"[\"']?\s*[:=]\s*(?=[{\[])")
_QUOTED = re.compile(r"[\"']([^\"'\n]{8,})[\"']")
_YAML_AFTER = re.compile(r"[\"']?[ \t]*:[ \t]*[|>][-+0-9]*[ \t]*\n[ \t]+(?P<val>\S[^\n]*)")
_CURL_USER = re.compile(r"(?<![\w\-])(?:-u|--user)[ =]+[\"']?[^\s:\"']+:(?P<val>[^\s\"'@]{4,})")
_NAME_IS_SECRET = re.compile(r"(?i)" + _KEYWORDS)
_NAME_IS_METADATA = re.compile(
    r"(?i)(?:count|counts|limit|limits|budget|usage|length|len|size|type|file|path|dir|url|uri|env|name"
    r"|names|(?<!key_)(?<!key-)id|ids|method|mode|version|expires|expiry|ttl|field|header|source|ref|provider|kind|max|min"
    r"|total|tokens|prompt|completion|per)$"
)
_PLACEHOLDER = re.compile(
    r"^(?:\[redacted\].*|<[a-z\-]+>.*|\$\{.*|\$\(.*|%\(.*|\{\{.*|\*+|x{6,}|X{6,}|\.{3,})$"
)

_PEM = re.compile(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?P<body>[\s\S]{0,64})")

_URL_CREDS = re.compile(r"://(?P<user>[^\s/?#@:\"'<>]{0,64}):(?P<pw>[^\s/?#@\"'<>]{1,128})@")
_SIGNED = re.compile(
    r"(?i)[?&;](?P<name>jsessionid|phpsessid|sessionid|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature"
    r"|x-goog-credential|sig|signature|token|access_token|refresh_token|id_token|key|api_key|apikey|code"
    r"|client_secret|password)=(?P<val>[^&#\s\"'<>]{4,})"
)

# Patterns start with a literal ("/home/", "tmp/", "://") so the regex engine can skip ahead with a
# fast substring search; the left boundary is checked in Python afterwards. Leading lookbehinds or
# character classes made each of these scan a 3 MB manifest ten times slower.
_POSIX_HOME = re.compile(r"/(?:home|Users)/[A-Za-z0-9._\-]{2,}")
_WINDOWS_HOME = re.compile(r"[A-Za-z]:(?:\\\\|\\|/)Users(?:\\\\|\\|/)[A-Za-z0-9._\- ]{2,}")
_ROOT = re.compile(r"/root(?=/|\b)")
_TMP_RANDOM = re.compile(
    r"/(?:private/)?(?:var/)?tmp/(?P<seg>[A-Za-z0-9_.\-]{6,})|/var/folders/[A-Za-z0-9_]{2}/"
)
_UNC = re.compile(r"(?<![\\\w])\\\\[A-Za-z0-9][A-Za-z0-9.\-]{1,62}\\[A-Za-z0-9$._\-]{1,80}")
_TILDE = re.compile(r"(?<![\w.\-/~])~/[A-Za-z0-9._\-]+")
_FILE_URL = re.compile(r"(?i)\bfile://(?:localhost)?/[^\s\"'<>]+")
_ENCODED_HOME = re.compile(
    r"(?i)%2F(?:home|Users)%2F[A-Za-z0-9._\-]{2,}|\\/(?:home|Users)\\/[A-Za-z0-9._\-]{2,}"
)

_EVIDENCE = re.compile(
    r"(?i)^(?:sha(?:256|384|512):[0-9a-f]+|[0-9a-f]{12}|[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}"
    r"|\d{8}T\d{6}(?:\.\d+)?Z-[0-9a-f]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|v?\d+(?:\.\d+)+(?:[-+.][A-Za-z0-9.]+)?|wf-[a-z]+/\d+)$"
)


_KEYED_SHAPE = re.compile(
    r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,128}(?::[0-9a-f]{8,})?"
)


def shannon_entropy(value: str) -> float:
    """Bits per character; generated secrets sit above ~3.0, words and identifiers below."""
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


#: Entropy threshold for values without both letters and digits. Random base62 strings of 8–16
#: characters measure about 2.9–3.9 bits; English words and snake_case names of that length measure
#: 2.3–3.0. 3.2 keeps ``correcthorse`` (2.9) and ``not_a_secret`` (2.9) out, ``Tr0ub4dor&3`` in.
ENTROPY_THRESHOLD = 3.2


def looks_generated(value: str) -> bool:
    """A value shaped like a secret rather than a word, number, placeholder or project evidence."""
    stripped = value.strip().strip("\"'`*").rstrip(".,;:")
    if len(stripped) < 8 or _PLACEHOLDER.match(stripped) or _EVIDENCE.match(stripped.lower()):
        return False
    if stripped.lower() in ("true", "false", "null", "none", "required", "optional", "redacted"):
        return False
    if re.fullmatch(r"[\d.,:_\- ]+", stripped):
        return False  # numbers, dates, times
    letters = any(c.isalpha() for c in stripped)
    digits = any(c.isdigit() for c in stripped)
    if letters and digits:
        return True
    return shannon_entropy(stripped) >= ENTROPY_THRESHOLD


#: A name with one of these extensions is a file (``gateway/session.json``), not a setting.
_FILE_NAME = re.compile(r"(?i)\.(?:json|jsonl|ya?ml|toml|txt|md|csv|html?|xml|log|png|py|lock|zip|gz)$")


def _generic_name_ok(name: str) -> bool:
    core = name.strip("\"'`*_.-")
    if _FILE_NAME.search(core):
        return False
    return bool(_NAME_IS_SECRET.search(core)) and not _NAME_IS_METADATA.search(core)


# ------------------------------------------------------------------------------ scanning


_STEMS = ("pass", "pwd", "secret", "token", "key", "cred", "auth", "session", "cookie", "bearer")


def _stem_hits(text: str) -> list[int]:
    """Offsets of keyword stems, found with ``str.find`` on the lower-cased text.

    A case-insensitive alternation of every keyword costs about 0.1 s per megabyte even where nothing
    matches; substring search is two orders of magnitude faster. Texts whose lower-casing changes
    their length (a few non-ASCII letters) fall back to the regex so offsets stay exact.
    """
    lowered = text.lower()
    if len(lowered) != len(text):
        return [m.start() for m in _KEYWORD_FIND.finditer(text)]
    hits: list[int] = []
    for stem in _STEMS:
        at = lowered.find(stem)
        while at >= 0:
            hits.append(at)
            at = lowered.find(stem, at + 1)
    return sorted(hits)


def _keyword_sites(text: str) -> Iterator[tuple[str, int]]:
    """``(identifier, end offset)`` of each identifier holding a secret keyword, once each.

    The generic, block and YAML-block rules then match anchored at the identifier's end, so the
    text is scanned for keywords once and never backtracked over.
    """
    done = -1
    for hit in _stem_hits(text):
        if hit < done:
            continue
        start = end = hit
        while start > 0 and text[start - 1] in _IDENTIFIER_CHARS:
            start -= 1
        while end < len(text) and text[end] in _IDENTIFIER_CHARS:
            end += 1
        done = end
        name = text[start:end]
        if _KEYWORD_FIND.search(name):
            yield name, end


def _keyword_findings(text: str) -> Iterator[tuple[str, str, int, int]]:
    for name, end in _keyword_sites(text):
        if not _generic_name_ok(name):
            continue
        m = _SEP_VALUE.match(text, end)
        if m is not None:
            value = m.group("val")
            assigned = any(c in m.group("sep") for c in ":=>") or "bearer" in m.group("sep").lower()
            mixed = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            # Without ``:``/``=`` (a space, a table cell, a CSV field) the pair may be prose:
            # "secrets, signed-URL parameters"; a generated value still mixes letters and digits.
            dense = len(value) >= 20 and shannon_entropy(value) >= 4.0  # a CSV cell holding a key
            # Hex and UUID values are evidence elsewhere, but assigned to a secret-named key they are
            # the key itself (Heroku, Snyk and many vendors issue UUID- or hex-shaped keys).
            keyed_shape = assigned and _KEYED_SHAPE.fullmatch(value.strip("\"'")) is not None
            if (looks_generated(value) and (assigned or mixed or dense)) or keyed_shape:
                yield "generic-keyword", "generic-keyword", m.start("val"), m.end("val")
        block = _BLOCK_AFTER.match(text, end)
        if block is not None:
            window = text[block.end() : block.end() + 512]
            close = window.find("}" if window[:1] == "{" else "]")
            for q in _QUOTED.finditer(window[: close if close > 0 else len(window)]):
                if looks_generated(q.group(1)):
                    at = block.end()
                    yield "generic-keyword/block", "generic-keyword", at + q.start(1), at + q.end(1)
        yaml_block = _YAML_AFTER.match(text, end)
        if yaml_block is not None and looks_generated(yaml_block.group("val")):
            yield (
                "generic-keyword/yaml-block",
                "generic-keyword",
                yaml_block.start("val"),
                yaml_block.end("val"),
            )


def _raw_findings(text: str, known: KnownValues, bare_keys: bool) -> Iterator[tuple[str, str, int, int]]:
    for rule, literal, pattern in _PROVIDER_RES:
        if literal in text:
            for m in pattern.finditer(text):
                yield f"provider-token/{rule}", "provider-token", m.start(), m.end()
    if bare_keys:
        yield from bare_key_findings(text, shannon_entropy)
    lowered = text.lower()
    if any(
        k in lowered
        for k in ("pass", "pwd", "secret", "token", "key", "cred", "auth", "session", "cookie", "bearer")
    ):
        yield from _keyword_findings(text)
        for m in _VALUE_HALF.finditer(text):
            half = _NAME_HALF.search(text, max(0, m.start() - 200), m.start())
            if half and _generic_name_ok(half.group("name")) and not _PLACEHOLDER.match(m.group("val")):
                yield "generic-keyword/name-value", "generic-keyword", m.start("val"), m.end("val")
        for m in _MARKUP_PAIR.finditer(text):
            if _generic_name_ok(m.group("name")) and not _PLACEHOLDER.match(m.group("val")):
                yield "generic-keyword/markup-pair", "generic-keyword", m.start("val"), m.end("val")
        for m in _INPUT.finditer(text):
            if _generic_name_ok(m.group("name")) and not _PLACEHOLDER.match(m.group("val")):
                yield "generic-keyword/html-input", "generic-keyword", m.start("val"), m.end("val")
        yield from form_findings(text, _generic_name_ok, looks_generated)
    yield from client_findings(text)
    if "-u" in text or "--user" in text:
        for m in _CURL_USER.finditer(text):
            if not _PLACEHOLDER.match(m.group("val")):
                yield "generic-keyword/basic-user", "generic-keyword", m.start("val"), m.end("val")
    if "PRIVATE KEY" in text:
        for m in _PEM.finditer(text):
            body = m.group("body").lstrip()
            if body and not body.startswith(("[redacted]", "-----END")):
                yield "private-key", "private-key", m.start(), m.end()
    if "://" in text:
        for m in _URL_CREDS.finditer(text):
            if not _PLACEHOLDER.match(m.group("pw")) and m.group("user") != "[redacted]":  # noqa: SIM102
                yield "url-credentials/userinfo", "url-credentials", m.start("pw"), m.end("pw")
    if "=" in text:
        for m in _SIGNED.finditer(text):
            value = m.group("val")
            if (
                not _PLACEHOLDER.match(value)
                and not _EVIDENCE.match(value.lower())
                and value.lower() not in ("true", "false")
            ):
                yield "url-credentials/signed-param", "url-credentials", m.start("val"), m.end("val")
    yield from _path_findings(text)
    for rule, start, end in _known_findings(text, known):
        yield rule, "known-value", start, end


def _path_start(text: str, start: int) -> bool:
    """A path begins here, not inside a longer word or path (``/data/home/x``, ``x.tmp/``)."""
    return start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_.-/")


def _path_findings(text: str) -> Iterator[tuple[str, str, int, int]]:
    for literal, pattern in (("/home/", _POSIX_HOME), ("/Users/", _POSIX_HOME), ("/root", _ROOT)):
        if literal in text:
            for m in pattern.finditer(text):
                if _path_start(text, m.start()):
                    yield "host-path/home", "host-path", m.start(), m.end()
            if pattern is _POSIX_HOME:
                break  # one pass finds both /home/ and /Users/
    if "Users" in text:
        for m in _WINDOWS_HOME.finditer(text):
            if m.start() == 0 or not (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
                yield "host-path/home", "host-path", m.start(), m.end()
    if "tmp/" in text or "/var/folders/" in text:
        for m in _TMP_RANDOM.finditer(text):
            if not _path_start(text, m.start()):
                continue
            seg = m.group("seg")
            if seg is None or (any(c.isdigit() for c in seg) and any(c.isalpha() for c in seg)):
                yield "host-path/tmp", "host-path", m.start(), m.end()
    if "\\\\" in text:
        for m in _UNC.finditer(text):
            yield "host-path/unc", "host-path", m.start(), m.end()
    if "~/" in text:
        for m in _TILDE.finditer(text):
            yield "host-path/tilde", "host-path", m.start(), m.end()
    if "file:" in text.lower():
        for m in _FILE_URL.finditer(text):
            yield "host-path/file-url", "host-path", m.start(), m.end()
    if "%2F" in text or "%2f" in text or "\\/" in text:
        for m in _ENCODED_HOME.finditer(text):
            yield "host-path/encoded", "host-path", m.start(), m.end()


_NEWLINE = re.compile("\n")


def scan_text(text: str, known: KnownValues | None = None, *, bare_keys: bool = True) -> list[Finding]:
    """Every finding in ``text``, sorted by offset then rule (deterministic).

    ``bare_keys=False`` skips the rule that judges a base64 run by its extent, for URL-decoded
    views: they read every ``+`` as a space and so cut base64 images into pieces.
    """
    if not text:
        return []
    raw = set(_raw_findings(text, known or KnownValues(), bare_keys))
    if not raw:
        return []
    newlines = [m.start() for m in _NEWLINE.finditer(text)]  # only when there is something to place
    found = {
        Finding(rule, family, start, end, bisect.bisect_left(newlines, start) + 1)
        for rule, family, start, end in raw
    }
    return sorted(found, key=lambda f: (f.start, f.rule, f.end))


_PAIR = re.compile(r"^[A-Za-z0-9_.@+\-]{1,64}:(?P<pw>\S{4,256})$")


def scan_decoded(decoded: str, known: KnownValues | None = None) -> list[str]:
    """Rules that fire on text decoded from base64: a ``user:password`` pair, or any text rule."""
    rules = [f.rule for f in scan_text(decoded, known)]
    pair = _PAIR.match(decoded.strip())
    if pair and not _PLACEHOLDER.match(pair.group("pw")) and not _EVIDENCE.match(pair.group("pw")):
        rules.append("generic-keyword/basic-pair")
    return rules


def scan_name(name: str, known: KnownValues | None = None) -> list[Finding]:
    """Findings in a file or zip member name (line is always 1)."""
    return [Finding(f.rule, f.family, f.start, f.end, 1) for f in scan_text(name.replace("\n", " "), known)]


__all__ = [
    "DETECTOR_VERSION",
    "ENTROPY_THRESHOLD",
    "FAMILIES",
    "Finding",
    "KnownValues",
    "looks_generated",
    "scan_decoded",
    "scan_name",
    "scan_text",
    "shannon_entropy",
]
