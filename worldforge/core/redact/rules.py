"""Redaction rules of the sanitizer: sensitive key names, token formats, URL and host-path patterns.

Each rule has an id (what the redaction ledger reports), a cheap keyword prefilter and a regex with a
replacement function; :mod:`worldforge.core.redact.engine` applies them in order. Rules are data so
that the test corpus (``tests/fixtures/sanitizer/corpus.json``) can hold true-positive and near-miss
false-positive fixtures per id and check that each true positive also hits the prefilter.
"""

from __future__ import annotations

import base64
import binascii
import re

from worldforge.core.redact.forms import FORM_RULES
from worldforge.core.redact.keys import (
    DIGEST_VALUE_RE,
    REDACTED,
    SANITIZER_VERSION,
    Redaction,
    Replacer,
    Rule,
    has_digit_and_letter,
    is_code_call,
    is_harmless_value,
    is_sensitive_key,
    redact_whole,
    unless_placeholder,
)
from worldforge.core.redact.shapes import SHAPE_RULES
from worldforge.core.redact.vendors import VENDOR_RULES


def _keep_prefix(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


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
    if match.group("scope") or has_digit_and_letter(body) or _KEY_RUN_RE.search(body):
        return REDACTED
    return REDACTED if len(body) >= 20 and not any(c.isalpha() for c in body) else None


_WORDY_RE = re.compile(r"[A-Z]{8,}|[a-z]{8,}|(?:[A-Z][a-z]{2,}){3,}")


def _wordy(part: str) -> bool:
    """Letters in words: one case or capitalised words, with five or more different letters
    (``AAAAAAAA…`` is filler a test may use for a key, not a word)."""
    return _WORDY_RE.fullmatch(part) is not None and len(set(part.lower())) >= 5


def _slack_token(match: re.Match[str]) -> str | None:
    """A Slack token's last part is random; documentation ends placeholders in words
    (``xoxp-1-RANDOMSTRINGHERE``, ``…-SlackAppConfigurationAccessTokenHere``). Letters-only words
    are the one thing a random part almost never is (all one case, or three or more capitalised
    words). Short tokens (``xoxb-12345-abcd234``) are still redacted: gitleaks' true positives
    include legacy tokens that short (``xoxa-3fxny3tkdj9k``)."""
    body = match.group("body")
    if _wordy(body.rsplit("-", 1)[-1]):
        return None
    return _ambiguous_prefix_token(match)


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


_PEM_PLACEHOLDER_RE = re.compile(r"[A-Za-z .<>_\-…]{1,40}")  # key material is base64: digits, + and /


def _pem(match: re.Match[str]) -> str | None:
    label = match.group("label")
    body = match.group(0)[len(label) + 16 :]
    footer = f"-----END {label}-----"
    body = (body[: -len(footer)] if body.endswith(footer) else body).strip()
    if not body or _PEM_PLACEHOLDER_RE.fullmatch(body):
        return None  # an empty block, or one word (``anything``, ``...``), holds no key material
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
        "jsessionid",
        "phpsessid",
        "sessionid",
        "sid",
    }
)
# ``;`` separates matrix parameters (``/app;jsessionid=…``) and connection-string fields.
_QUERY_RE = re.compile(r"(?P<sep>[?&;])(?P<name>[A-Za-z0-9_.\-]{1,64})=(?P<val>[^&#?;\s\"'<>\\]+)")


def _query_param(match: re.Match[str]) -> str | None:
    name = match.group("name")
    low = name.lower()
    signed = low in _SIGNED_PARAMS or low.startswith(("x-amz-", "x-goog-")) or is_sensitive_key(name)
    value = match.group("val")
    if not signed or value == REDACTED or DIGEST_VALUE_RE.match(value):
        return None
    return f"{match.group('sep')}{name}={REDACTED}"


_AUTH_RE = re.compile(r"\b(?P<scheme>Bearer|Basic|Token)(?P<sp>\s+)(?P<cred>[A-Za-z0-9._~+/\-]{8,}=*)", re.I)


_FILLER_CRED_RE = re.compile(r"(?:[A-Za-z]{1,6}[_\-])?(?P<c>[xX*#.])(?P=c){3,}")


def _auth_header(match: re.Match[str]) -> str | None:
    scheme, cred = match.group("scheme"), match.group("cred")
    if _FILLER_CRED_RE.fullmatch(cred):
        return None  # token hf_xxxxx: a documented placeholder
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(cred + "=" * (-len(cred) % 4), validate=True)
        except (binascii.Error, ValueError):
            return None
        if b":" not in decoded:
            return None
    elif not (has_digit_and_letter(cred) or len(cred) >= 32 or any(c in cred for c in "._~+/-=")):
        return None
    return f"{scheme}{match.group('sp')}{REDACTED}"


_ASSIGN_KEY = r"(?:[0-9]{1,4}[A-Za-z_]|[A-Za-z_])[A-Za-z0-9_.\-]{0,80}"  # 1PASSWORD_SECRET_KEY too
_LINE_ASSIGN_RE = re.compile(
    r"^(?P<pre>[ \t]*(?:export[ \t]+|-[ \t]+)?)(?P<q>[\"']?)(?P<key>" + _ASSIGN_KEY + r")(?P=q)"
    r"(?P<sep>[ \t]*[:=][ \t]*)(?P<val>[^\s\"'{\[|>][^\n]*?)[ \t]*$",
    re.MULTILINE,
)
_INLINE_ASSIGN_RE = re.compile(
    r"(?P<q>[\"']?)(?P<key>" + _ASSIGN_KEY + r")(?:\\?(?P=q))(?P<sep>\s*(?:=>|[:=])\s*)"
    r"(?P<val>(?i:bearer|basic|token)\s+(?:\[redacted\]|\$\([^)\n]*\)|\$\{[^}\n]*\}|[^\s,;&\"'<>\[\]{}()=]{1,512})"
    r"|\$\{[^}\n]*\}|[bBrRuU]{0,2}(?:\"\"\"[\s\S]{0,4096}?\"\"\"|'''[\s\S]{0,4096}?''')"
    r"|\\\"\\\"\\\"[\s\S]{0,4096}?\\\"\\\"\\\""  # a triple-quoted string inside a JSON string
    r"|[bBrRuU]{0,2}(?:\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*')|\\\"(?:[^\"\\\n])*\\\""
    # An unquoted value runs to a space, a separator or a bracket; an ``=`` inside it is its own
    # (``password=ab=cd``, base64 padding), so only its first character may not be one.
    r"|[^\s,;&\"'<>\[\]{}()=\\][^\s,;&\"'<>\[\]{}()\\]{0,511})"
)
_WORD_RE = re.compile(r"[A-Za-z_][\w.]*")
#: A quoted value's opening: string prefix (``b'…'``) and quote (``"""``, ``'''``, ``\"``, ``"``, ``'``).
_LITERAL_RE = re.compile(r"^(?P<prefix>[bBrRuU]{0,2})(?P<quote>\"\"\"|'''|\\\"\\\"\\\"|\\\"|[\"'])")


def _assignment(match: re.Match[str]) -> str | None:
    value = match.group("val")
    prefix = match.string[match.start() : match.start("val")]
    if not is_sensitive_key(match.group("key")):
        return None  # the engine rescans from the value (``msg=password=abc``)
    if match.string[match.start() - 1 : match.start()] == "/" and "=" not in match.group("sep"):
        # The last segment of a path (``/etc/secret: permission denied``), not a setting: the text
        # after it is a message about that file, which redaction would make unreadable. A ``\``
        # is not taken as a separator here because it also escapes quotes (``{\"token\": …}``).
        return None
    if is_harmless_value(value) or value.startswith(("//", "&gt;", "&#")) or value in ("|", ">", "|-", ">-"):
        return None
    if "\n" in match.group("sep") and (value.endswith(":") or value == "-"):
        return None  # ``token:`` then ``  fn::secret: …`` on the next line: a nested key, not a value
    text, at = match.string, match.end("val")
    if text[at : at + 10].lower() == "[redacted]":
        return None  # ``ops_eyJz..[Redacted]``: a display already cut short by its author
    if _WORD_RE.fullmatch(value):
        line_end = text.find("\n", at)
        rest = text[match.start("val") : len(text) if line_end < 0 else line_end].strip()
        if rest != value and is_code_call(rest):
            return None  # ``credentials: new AWS.SharedIniFileCredentials({…})``: code, not a value
    literal = _LITERAL_RE.match(value)
    if literal is not None:
        quote = literal.group("quote")
        new_value = literal.group("prefix") + quote + REDACTED + quote
    else:
        new_value = REDACTED
    return prefix + new_value


_FILE_URL_RE = re.compile(r"\bfile://(?![$%{])[^\s\"'<>)\]}]*", re.I)  # not file://${WORKDIR}
#: Left boundary of a host path: not inside a word, a longer path or a placeholder. Shared with the
#: engine's dynamic prefixes (current directory, home) so both kinds of path match alike.
PATH_LEFT = r"(?<![\w.\-/~$%])" + "".join(
    f"(?<!<{name}>)" for name in ("tmp", "home", "repo", "venv", "user", "unc", "host")
)
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
_TILDE_RE = re.compile(PATH_LEFT + r"~(?=/)")


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
    return Rule(rule_id, description, keywords, re.compile(regex, flags), unless_placeholder(replace))


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
    Rule(
        "signed-url-param",
        "signed-URL / credential query parameters",
        ("=",),
        _QUERY_RE,
        _query_param,
    ),
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
        _B + r"(?:xox[abpsr]|xapp)-(?P<scope>)(?P<body>[A-Za-z0-9\-]{10,})" + _E,
        _slack_token,
    ),
    _provider_rule(
        "huggingface-token",
        "Hugging Face access tokens (hf_ and 30-38 characters; longer runs are identifiers)",
        ("hf_",),
        _B + r"hf_[A-Za-z0-9]{30,38}(?![A-Za-z0-9_])",
    ),
    _provider_rule("google-api-key", "Google API keys", ("aiza",), _B + r"AIza[0-9A-Za-z_\-]{35}" + _E),
    *VENDOR_RULES,
    *FORM_RULES,
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
    # Last: a key that a name or prefix identifies is redacted (and ledgered) by that rule first.
    *SHAPE_RULES,
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
    "pwd",
    "session",
    "jwt",
)


def rule_ids() -> list[str]:
    """Every rule id a ledger can contain (including the dynamic ones: environment secrets, the
    current directory, the source checkout, the virtual environment and the login name)."""
    dynamic = {
        "env-secret-value",
        "host-path-cwd",
        "host-path-repo",
        "host-path-venv",
        "host-user",
        "host-name",
        "base64-credential",
    }
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
