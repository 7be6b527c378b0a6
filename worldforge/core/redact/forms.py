"""Structured forms a secret hides in beyond ``key = value``: headers, name/value pairs, tables, flags.

Each form is a rule like the token rules, but keyed on *where* the value sits rather than on what it
looks like: a password has no shape, only a place. The forms are the ones real logs, reports and
configuration files use (HTTP header lines, ``{"name": "OPENAI_API_KEY", "value": …}``, CSV rows,
Markdown tables and emphasis, HTML form inputs, command-line flags, ``curl -u``, YAML block scalars,
a secret-named key whose value is a whole object). Matching on decoded views
(:mod:`worldforge.core.redact.views`) makes each of them work inside HTML, CSV, JSON strings and
URLs without a rule per encoding.
"""

from __future__ import annotations

import json
import re

from worldforge.core.redact.keys import (
    REDACTED,
    Rule,
    has_digit_and_letter,
    is_harmless_value,
    is_sensitive_key,
)
from worldforge.core.redact.logins import LOGIN_RULES
from worldforge.core.redact.tables import ColumnCells, column_cell

_KEY = r"(?:[0-9]{1,4}[A-Za-z_]|[A-Za-z_])[A-Za-z0-9_.\-]{0,80}"

#: Headers whose whole value is a credential, whatever it looks like.
_SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "x-auth-token",
        "x-access-token",
        "x-csrf-token",
        "x-xsrf-token",
        "api-key",
        "x-amz-security-token",
        "x-goog-api-key",
        "private-token",
        "x-vault-token",
    }
)
# The header names are spelled out (rather than any ``Name:`` checked afterwards) so a line such as
# ``X-Note: Cookie: …`` still finds the cookie without rescanning, which keeps matching linear.
_HEADER_NAMES = (
    r"(?i:X-Amz-Security-Token|Proxy-Authorization|X-Access-Token|X-Goog-Api-Key|Authorization"
    r"|Private-Token|X-Vault-Token|X-Auth-Token|X-CSRF-Token|X-XSRF-Token|Set-Cookie|X-Api-Key|Api-Key|Cookie)"
)
_HEADER_RE = re.compile(
    r"(?<![\w\-])(?P<pre>(?P<name>" + _HEADER_NAMES + r")[ \t]*:[ \t]*)"
    r"(?P<val>[^\s\"'\\<|][^\n\"'\\<|]*?)(?=[ \t]*(?:$|[\n\"'\\<|]))",
    re.M,
)

# At the start of a line the header's value runs to the end of the line, quotes included
# (``Proxy-Authorization: Digest username="u", response="…"``).
_HEADER_LINE_RE = re.compile(
    r"(?m)^(?P<pre>[ \t>*\-]*(?P<name>" + _HEADER_NAMES + r")[ \t]*:[ \t]*)(?P<val>\S[^\n]*?)[ \t]*$"
)


def _header(match: re.Match[str]) -> str | None:
    if match.group("name").lower() not in _SECRET_HEADERS or is_harmless_value(match.group("val").strip()):
        return None
    return match.group("pre") + REDACTED


def _plausible_secret(value: str) -> bool:
    """A value in a key/value *table* (CSV, Markdown) that is a secret rather than a header cell.

    Unlike ``key = value``, a table row ``token,count`` is usually a header, so a cell is taken as a
    secret only when it looks generated: a digit/letter mix, a symbol, mixed case or 12+ characters.
    """
    value = value.strip().strip("\"'`").strip()
    if is_harmless_value(value) or len(value) < 6:
        return False
    return (
        has_digit_and_letter(value)
        or any(not c.isalnum() and c not in " _-" for c in value)
        or (value != value.lower() and value != value.upper() and value != value.capitalize())
        or len(value) >= 12
    )


# The field that names the setting and the one that holds it, as configuration and API payloads
# spell them (``{"name": …, "value": …}``, ``{"header": "Authorization", "value": …}``).
NAME_FIELDS = ("name", "key", "field", "header", "param", "parameter", "variable", "var", "env", "setting")
VALUE_FIELDS = ("value", "val", "secret", "data", "content")
# Matched from the ``, "value":`` part (a literal comma start keeps a megabyte scan fast), then the
# name part is read backwards from there.
_VALUE_PART_RE = re.compile(
    r",\s*[\"']?(?i:"
    + "|".join(VALUE_FIELDS)
    + r")[\"']?\s*[:=]\s*(?P<val>\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s,}\]]+)"
)
_NAME_PART_RE = re.compile(
    r"[\"']?(?i:" + "|".join(NAME_FIELDS) + r")[\"']?\s*[:=]\s*[\"'](?P<key>" + _KEY + r")[\"']\s*$"
)


class _NameValuePairs:
    """Matcher for ``{"name": NAME, "value": …}``: each match has groups ``pre``, ``key`` and ``val``."""

    def search(self, text: str, pos: int = 0, /) -> re.Match[str] | None:
        while (value := _VALUE_PART_RE.search(text, pos)) is not None:
            name = _NAME_PART_RE.search(text, max(0, value.start() - 200), value.start())
            if name is not None:
                pre, val = text[name.start() : value.start("val")], value.group("val")
                key = re.escape(name.group("key"))
                whole = re.compile(
                    "(?P<pre>"
                    + re.escape(pre[: name.start("key") - name.start()])
                    + "(?P<key>"
                    + key
                    + ")"
                    + re.escape(pre[name.end("key") - name.start() :])
                    + ")(?P<val>"
                    + re.escape(val)
                    + ")"
                )
                found = whole.match(text, name.start())
                if found is not None:
                    return found
            pos = value.start() + 1
        return None


def _name_value(match: re.Match[str]) -> str | None:
    value = match.group("val")
    if not is_sensitive_key(match.group("key")) or is_harmless_value(value):
        return None
    quote = value[0] if value[:1] in "\"'" else ""
    return match.group("pre") + quote + REDACTED + quote


_CSV_ROW_RE = re.compile(
    r"(?m)(?:^|(?<=[,;\t]))(?P<pre>[ \t]*\"?(?P<key>"
    + _KEY
    + r")\"?[ \t]*[,;\t][ \t]*)(?P<val>\"(?:[^\"\n]|\"\")*\"|(?:[^,;\t\n \\]|\\(?![nrt\"]))+)(?=[,;\t\r\n]|$)"
)
_MD_ROW_RE = re.compile(
    r"(?m)(?P<pre>(?:[ \t]*\||(?<=\|)|(?<=\|[ \t]))[ \t]*`?(?P<key>" + _KEY + r")`?[ \t]*\|[ \t]*)"
    r"(?P<val>[^|\n]+?)(?=[ \t]*\|)"
)


_PASSWORD_RE = re.compile(r"(?i)pass(?:wd|word|phrase)|pwd")

# ``["OPENAI_API_KEY", "…"]``: a name and its value as a two-item JSON or Python list.
_PAIR_LIST_RE = re.compile(
    r"\[\s*(?P<q>[\"'])(?P<key>"
    + _KEY
    + r")(?P=q)\s*,\s*(?P<pre>)(?P<val>\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*')\s*\]"
)


def _pair_list(match: re.Match[str]) -> str | None:
    value = match.group("val")
    if not is_sensitive_key(match.group("key")) or is_harmless_value(value):
        return None
    whole, start = match.group(0), match.start()
    quote = value[0]
    return whole[: match.start("val") - start] + quote + REDACTED + quote + whole[match.end("val") - start :]


def _table_cell(match: re.Match[str]) -> str | None:
    value = match.group("val").strip()
    key = match.group("key")
    if " " in value.strip('"') or not is_sensitive_key(key):
        return None
    # A header row (``api_key,description``) names columns; a password is often a plain word, but
    # after a first cell (``user,password,role``) a plain word is the next column's name.
    text, start = match.string, match.start()
    first = start == 0 or text[start - 1] == "\n"
    lenient = first and _PASSWORD_RE.search(key) is not None and len(value.strip('"')) >= 4
    if not _plausible_secret(value) and not lenient:
        return None
    return match.group("pre") + REDACTED


_MD_EMPHASIS_RE = re.compile(
    r"(?P<pre>(?P<mark>\*\*|__|\*|_|`)(?P<key>" + _KEY + r")(?P=mark)[ \t]*[:=][ \t]*)"
    r"(?P<val>`[^`\n]+`|[^\s,;|<]+)"
)


def _emphasis(match: re.Match[str]) -> str | None:
    if not is_sensitive_key(match.group("key")) or is_harmless_value(match.group("val").strip("`")):
        return None
    return match.group("pre") + REDACTED


# Any element with a name/key attribute and a value/content attribute: HTML inputs and meta tags,
# and XML settings (``<entry key="api_token" value="…"/>``, .NET ``<add key=… value=…/>``).
_HTML_INPUT_RE = re.compile(
    r"<(?:[A-Za-z][\w:.\-]*)\b[^>]*?\b(?:name|id|property|key)\s*=\s*[\"']?(?P<key>" + _KEY + r")[\"']?[^>]*?"
    r"\b(?:value|content)\s*=\s*(?P<q>[\"']?)(?P<val>(?(q)[^\"'>]*|[^\"'>\s]*))(?P=q)",
    re.I,
)
_HTML_INPUT_REV_RE = re.compile(
    r"<(?:[A-Za-z][\w:.\-]*)\b[^>]*?\b(?:value|content)\s*=\s*(?P<q>[\"']?)(?P<val>(?(q)[^\"'>]*|[^\"'>\s]*))(?P=q)[^>]*?"
    r"\b(?:name|id|property|key)\s*=\s*[\"']?(?P<key>" + _KEY + r")[\"']?",
    re.I,
)


# ``<api_token>…</api_token>``: an XML element named like a secret, its text on one or more lines.
_XML_ELEMENT_RE = re.compile(
    r"<(?P<key>[A-Za-z0-9_][\w.\-]{0,80})(?:\s[^<>]*)?>(?P<val>[^<]{1,8192})</(?P=key)\s*>",
)


# ``<password><![CDATA[…]]></password>``: CDATA hides ``<`` and ``&`` from XML, not from a reader.
_XML_CDATA_RE = re.compile(
    r"<(?P<key>[A-Za-z0-9_][\w.\-]{0,80})(?:\s[^<>]*)?>\s*<!\[CDATA\[(?P<val>.{0,8192}?)\]\]>\s*</(?P=key)\s*>",
    re.S,
)


def _xml_element(match: re.Match[str]) -> str | None:
    value = match.group("val")
    body = value.strip()
    if not body or not is_sensitive_key(match.group("key")) or is_harmless_value(body):
        return None
    whole, start = match.group(0), match.start()
    head = whole[: match.start("val") - start]
    lead = value[: len(value) - len(value.lstrip())]
    trail = value[len(value.rstrip()) :]
    return head + lead + REDACTED + trail + whole[match.end("val") - start :]


# A key/value pair as rendered markup: <dt>password</dt><dd>…</dd>, <th>token</th><td>…</td>,
# <td>api_key</td><td>…</td> (report tables and definition lists of metrics).
_HTML_PAIR_RE = re.compile(
    r"<(?P<kt>dt|th|td)\b[^>]*>\s*(?:<code>)?(?P<key>" + _KEY + r")(?:</code>)?\s*</(?P=kt)>\s*"
    r"<(?P<vt>dd|td)\b[^>]*>\s*(?:<(?P<wrap>code|kbd|samp|tt|span|b|strong|em|pre)\b[^>]*>)?"
    r"(?P<val>[^<]{1,4096})(?:</(?P=wrap)>)?\s*</(?P=vt)>",
    re.I,
)


def _html_pair(match: re.Match[str]) -> str | None:
    value = match.group("val")
    body = value.strip()
    if not body or not is_sensitive_key(match.group("key")) or is_harmless_value(body):
        return None
    whole, start = match.group(0), match.start()
    return whole[: match.start("val") - start] + REDACTED + whole[match.end("val") - start :]


# ``<input type="password" value="…">``: the type names the secret when no name does.
_HTML_PASSWORD_INPUT_RE = re.compile(
    r"<input\b(?=[^>]*\btype\s*=\s*[\"']?password\b)[^>]*?\bvalue\s*=\s*(?P<q>[\"']?)"
    r"(?P<key>)(?P<val>(?(q)[^\"'>]*|[^\"'>\s]*))(?P=q)",
    re.I,
)


def _html_input(match: re.Match[str]) -> str | None:
    value, key = match.group("val"), match.group("key")
    if (key and not is_sensitive_key(key)) or is_harmless_value(value):
        return None
    whole, start = match.group(0), match.start()
    return whole[: match.start("val") - start] + REDACTED + whole[match.end("val") - start :]


_CLI_FLAG_RE = re.compile(
    r"(?<![\w\-])(?P<pre>--?(?P<key>[A-Za-z][A-Za-z0-9_\-]{1,60})(?:=|[ \t]+|[\"'][ \t]*,[ \t]*(?=[\"'])))"
    r"(?P<val>\"[^\"\n]*\"|'[^'\n]*'|[^\s\-\"'][^\s\"']*)"
)


def _cli_flag(match: re.Match[str]) -> str | None:
    value = match.group("val")
    if not is_sensitive_key(match.group("key")) or is_harmless_value(value):
        return None
    quote = value[0] if value[:1] in "\"'" else ""
    return match.group("pre") + quote + REDACTED + quote


_CURL_USER_RE = re.compile(
    r"(?<![\w\-])(?P<pre>(?:-u|--user|--proxy-user)(?:=|[ \t]+)[\"']?[^\s:\"']{1,64}:)(?P<val>[^\s\"']+)"
)


def _curl_user(match: re.Match[str]) -> str | None:
    if is_harmless_value(match.group("val")) or match.group("pre").rstrip(":").endswith(("<", "<user")):
        return None
    if match.group("val").endswith(">") and "<" in match.group("pre"):
        return None  # curl -u <user:password>: the documented placeholder
    return match.group("pre") + REDACTED


_YAML_BLOCK_RE = re.compile(
    r"(?m)(?P<pre>(?:^|(?<=[,\"'\[{(>\s:=]))(?P<ind>[ \t]*)(?:-[ \t]+)?[\"']?(?P<key>"
    + _KEY
    + r")[\"']?[ \t]*:[ \t]*[|>][-+0-9]*[ \t]*\n)"
    r"(?P<body>(?:(?P=ind)[ \t]+[^\n]*(?:\n|$)|[ \t]*\n)+)"
)


# Kubernetes and Compose environment lists: ``- name: DB_PASSWORD`` with ``value: …`` on the next
# line (the name/value pair rule reads the one-line JSON spelling).
_YAML_ENV_PAIR_RE = re.compile(
    r"(?m)^(?P<ind>[ \t]*)-[ \t]+name:[ \t]*[\"']?(?P<key>" + _KEY + r")[\"']?[ \t]*\n"
    r"(?P<pre>(?P=ind)[ \t]+value:[ \t]*)(?P<val>\"[^\"\n]*\"|'[^'\n]*'|[^\s#][^\n#]*?)[ \t]*$"
)
# A secret-named key whose value is a YAML list on the following lines (``secrets:`` then ``- …``).
_YAML_LIST_RE = re.compile(
    r"(?m)(?:^|(?<=[\s\"'>{,(\[=]))[\"']?(?P<key>" + _KEY + r")[\"']?[ \t]*:[ \t]*\n"
    r"(?P<body>(?:[ \t]*-[ \t]+[^\n]*(?:\n|$))+)"
)


def _yaml_env_pair(match: re.Match[str]) -> str | None:
    value = match.group("val")
    if not is_sensitive_key(match.group("key")) or is_harmless_value(value):
        return None
    whole, start = match.group(0), match.start()
    quote = value[0] if value[:1] in "\"'" else ""
    return whole[: match.start("val") - start] + quote + REDACTED + quote + whole[match.end("val") - start :]


def _yaml_list(match: re.Match[str]) -> str | None:
    if not is_sensitive_key(match.group("key")):
        return None
    lines = match.group("body").split("\n")
    out = []
    for line in lines:
        dash = line.find("- ")
        item = line[dash + 2 :].strip() if dash >= 0 else ""
        if dash >= 0 and item and not is_harmless_value(item) and ":" not in item:
            line = line[: dash + 2] + REDACTED
        out.append(line)
    body = "\n".join(out)
    if body == match.group("body"):
        return None
    return match.group(0)[: match.start("body") - match.start()] + body


def _yaml_block(match: re.Match[str]) -> str | None:
    if not is_sensitive_key(match.group("key")):
        return None
    body = match.group("body")
    if body.strip() == REDACTED:
        return None
    first = next((line for line in body.split("\n") if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    tail = "\n" if body.endswith("\n") else ""
    return match.group("pre") + indent + REDACTED + tail


# A secret-named key whose value is a whole object or list (``credentials: {"user": …, "pw": …}``)
# inside free text: the braces are matched (bounded) and the block goes whole.
_BLOCK_START_RE = re.compile(r"(?P<pre>[\"']?(?P<key>" + _KEY + r")\\?[\"']?\s*[:=]\s*)(?=[{\[])")
_MAX_BLOCK = 8192


class _BlockPattern:
    """A regex-like object whose matches span a balanced ``{…}``/``[…]`` after a secret-named key.

    Python's ``re`` cannot match balanced brackets; the engine only needs ``search(text, pos)``
    returning a match-like object, so this wraps the start pattern and extends its end by scanning.
    """

    def search(self, text: str, pos: int = 0, /) -> re.Match[str] | None:
        while True:
            start = _BLOCK_START_RE.search(text, pos)
            if start is None:
                return None
            if is_sensitive_key(start.group("key")):
                end = _balanced_end(text, start.end())
                if end is not None:
                    whole = re.compile(re.escape(text[start.start() : end]))
                    found = whole.match(text, start.start())
                    if found is not None:
                        return found
            pos = start.end()


def _balanced_end(text: str, begin: int) -> int | None:
    depth, quote, index = 0, "", begin
    limit = min(len(text), begin + _MAX_BLOCK)
    while index < limit:
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return None


def _all_leaves_harmless(body: str) -> bool:
    """A block whose every leaf is already redacted (or a number, placeholder …) needs nothing more."""
    try:
        value = json.loads(body)
    except ValueError:
        return False
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and not is_harmless_value(item):
            return False
    return True


def _block(match: re.Match[str]) -> str | None:
    head = _BLOCK_START_RE.match(match.group(0))
    if head is None:
        return None
    body = match.group(0)[head.end() :]
    if body in ("{}", "[]") or is_harmless_value(body) or _all_leaves_harmless(body):
        return None
    return head.group("pre") + REDACTED


_UNC_RE = re.compile(r"(?<![\w\\:])\\\\(?![\\.?])[A-Za-z0-9._$\-]{1,63}\\[A-Za-z0-9._$\- ]{1,80}")

#: Rules applied before the generic ``key = value`` rules (so a header or block is taken whole).
FORM_RULES: tuple[Rule, ...] = (
    Rule(
        "yaml-block-scalar", "secret-named YAML block scalars (token: |)", (":",), _YAML_BLOCK_RE, _yaml_block
    ),
    Rule(
        "yaml-env-pair", "- name: SECRET_NAME / value: … lists", ("name:",), _YAML_ENV_PAIR_RE, _yaml_env_pair
    ),
    Rule("yaml-list", "secret-named keys holding a YAML list", ("- ",), _YAML_LIST_RE, _yaml_list),
    Rule(
        "secret-block",
        "secret-named keys whose value is an object or list",
        ("{", "["),
        _BlockPattern(),
        _block,
    ),
    Rule("header-line", "credential HTTP header lines", (":",), _HEADER_LINE_RE, _header),
    Rule(
        "header-line",
        "credential HTTP headers (Authorization, Cookie, X-Api-Key …)",
        (":",),
        _HEADER_RE,
        _header,
    ),
    Rule(
        "name-value-pair",
        '{"name": SECRET_NAME, "value": …} pairs',
        NAME_FIELDS,
        _NameValuePairs(),
        _name_value,
    ),
    Rule("xml-element", "<api_token>…</api_token> XML elements", ("</",), _XML_ELEMENT_RE, _xml_element),
    Rule("xml-element", "<password><![CDATA[…]]></password>", ("cdata",), _XML_CDATA_RE, _xml_element),
    Rule(
        "html-pair", "<dt>password</dt><dd>…</dd> and table cells", ("</d", "</t"), _HTML_PAIR_RE, _html_pair
    ),
    Rule("html-input", "<input name=password value=…>", ("<",), _HTML_INPUT_RE, _html_input),
    Rule("html-input", "<input value=… name=password>", ("<",), _HTML_INPUT_REV_RE, _html_input),
    Rule(
        "html-input", '<input type="password" value=…>', ("password",), _HTML_PASSWORD_INPUT_RE, _html_input
    ),
    Rule("markdown-key", "**password**: … in Markdown", ("*", "_", "`"), _MD_EMPHASIS_RE, _emphasis),
    Rule(
        "table-column", "cells under a secret-named CSV/Markdown header", ("\n",), ColumnCells(), column_cell
    ),
    Rule("table-row", "| token | … | Markdown rows", ("|",), _MD_ROW_RE, _table_cell, rescan_values=True),
    Rule("table-row", "api_key,… CSV rows", (",", ";", "\t"), _CSV_ROW_RE, _table_cell, rescan_values=True),
    Rule("cli-flag", "--password … command-line flags", ("-",), _CLI_FLAG_RE, _cli_flag),
    Rule("pair-list", '["API_KEY", "…"] two-item lists', ("[",), _PAIR_LIST_RE, _pair_list),
    Rule("curl-user", "curl -u user:password", ("-u", "--user", "-user"), _CURL_USER_RE, _curl_user),
    *LOGIN_RULES,
    Rule("host-path-unc", r"\\server\share UNC paths", ("\\\\",), _UNC_RE, lambda _m: "<unc>"),
)

__all__ = ["FORM_RULES"]
