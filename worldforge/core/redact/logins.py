"""Secrets that command lines and login files name by position rather than by a ``key=`` pair.

``.netrc`` lines (``machine … login … password …``), a client's ``-p`` password flag (``mysql
-pSECRET``, ``docker login -u bob -p SECRET``) and prose or settings that name a key in two words
(``API key: …``, ``Secret Key = …``) carry a secret without any ``name=value`` syntax the assignment
rules read. Each form is bound to the words that make it unambiguous: ``-p`` alone is a port or a
path in most tools, so it is only read after a client known to take a password there.
"""

from __future__ import annotations

import re

from worldforge.core.redact.keys import REDACTED, Rule, has_digit_and_letter, is_harmless_value

_NETRC_RE = re.compile(
    r"(?P<pre>\b(?:machine[ \t]+\S+|default)(?:[ \t]+(?:login|account|port|protocol)[ \t]+\S+)*"
    r"[ \t]+password[ \t]+)(?P<val>[^\s\"']+|\"[^\"\n]*\")"
)
# mysql reads ``-pSECRET`` (attached; ``-p db`` prompts and names the database); registry logins
# read ``-p SECRET``.
_CLIENT_PASSWORD_RE = re.compile(
    r"(?P<pre>\b(?:(?:mysql\w*|mariadb\w*)\b[^\n|;&]*?[ \t]-p"
    r"|(?:docker|podman|buildah|nerdctl|helm[ \t]+registry)[ \t]+login\b[^\n|;&]*?[ \t]-p[ \t]+)"
    r")(?P<val>[^\s\"'\-][^\s\"']*|\"[^\"\n]*\"|'[^'\n]*')"
)
_TWO_WORD_KEY_RE = re.compile(
    r"(?i)(?<![\w\-])(?P<pre>(?:api|access|secret|private|client|signing|encryption|master|license|app"
    r"|account|admin|service|subscription|auth)[ \t]+key[ \t]*[:=][ \t]*)"
    r"(?P<val>\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s,;\"'<>`]+)"
)
# A key split across two nesting levels: ``{"api": {"key": …}}``, ``access:\n  key: …``.
_NESTED_KEY_RE = re.compile(
    r"(?i)(?P<pre>[\"']?\b(?:api|access|secret|private|signing|encryption|master|license)[\"']?[ \t]*:"
    r"[ \t]*\{?\s*[\"']?key[\"']?[ \t]*[:=][ \t]*)(?P<val>\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s,}\]\"']+)"
)


def _generated(match: re.Match[str]) -> str | None:
    """Like :func:`_value`, for prose forms: only a value that does not read as a word."""
    value = match.group("val").strip("\"'`")
    shaped = (
        has_digit_and_letter(value)
        or any(not c.isalnum() and c not in "_-." for c in value)
        or (value != value.lower() and value != value.upper() and value != value.capitalize())
        or len(value) >= 12
    )
    return _value(match) if shaped else None


def _value(match: re.Match[str]) -> str | None:
    value = match.group("val")
    if is_harmless_value(value):
        return None
    quote = value[0] if value[:1] in "\"'`" else ""
    return match.group("pre") + quote + REDACTED + quote


LOGIN_RULES: tuple[Rule, ...] = (
    Rule("netrc-password", ".netrc machine/login/password lines", ("password",), _NETRC_RE, _value),
    Rule(
        "client-password",
        "mysql -pSECRET, docker login -p SECRET",
        ("mysql", "mariadb", "login"),
        _CLIENT_PASSWORD_RE,
        _value,
    ),
    Rule("two-word-key", "API key: …, Secret Key = …", ("key",), _TWO_WORD_KEY_RE, _generated),
    Rule("nested-key", '{"api": {"key": …}}, access:\\n  key: …', ("key",), _NESTED_KEY_RE, _value),
)

__all__ = ["LOGIN_RULES"]
