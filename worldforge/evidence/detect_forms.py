"""The detector's rules for secrets named by position or nesting rather than by ``name=value``.

Part of the second detector (:mod:`worldforge.evidence.detect`), written apart from the redactor's
forms and sharing none of its patterns: a column of a table whose header names a secret, a key
split over two nesting levels (``{"api": {"key": …}}``), a key named in two words (``API key: …``),
CDATA and string-literal prefixes that hide a value from the keyword rule, a client's ``-p``
password, a numeric password, and password inputs. The caller passes its own notions of a secret
name and a generated value, so the two modules cannot drift apart.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator

Finding = tuple[str, str, int, int]  # rule, family, start, end

_HEADER_STEMS = ("pass", "pwd", "secret", "token", "key", "cred", "auth", "cookie", "session")
_CELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\- ]{0,60}")
_RULE_LINE = re.compile(r"^[\s|:\-]*-[\s|:\-]*$")
_NUMBER = re.compile(r"[-+]?[\d.,%]+")
_TWO_WORDS = re.compile(
    r"(?i)\b(?:api|access|secret|private|client|signing|encryption|master|license|app|account|admin"
    r"|service|auth)[ \t]+key[ \t]*[:=][ \t]*[\"'`]?(?P<val>[^\s\"'`,;<>]{6,})"
)
_SPLIT_KEY = re.compile(
    r"(?i)\b(?:api|access|secret|private|signing|encryption|master|license)[\"']?[ \t]*:[ \t]*\{?\s*"
    r"[\"']?key[\"']?[ \t]*[:=][ \t]*[\"']?(?P<val>[^\"'\s,}]{6,})"
)
# These two start at the separator (a leading name class would make the engine try every position
# of a megabyte manifest); the name is read backwards from there.
_PREFIXED_LITERAL = re.compile(r"[:=][ \t]*[bBrRuU]{1,2}[\"'](?P<val>[^\"'\s]{6,})")
_CDATA = re.compile(r"<(?P<name>[A-Za-z0-9_.\-]{2,80})\b[^<>]*>\s*<!\[CDATA\[\s*(?P<val>[^\]\s]{6,})")
_PASSWORD_INPUT = re.compile(
    r"(?i)<input\b(?=[^>]*\btype\s*=\s*[\"']?password\b)[^>]*\bvalue\s*=\s*[\"']?(?P<val>[^\"'\s>]{4,})"
)
_CLIENT_P = re.compile(
    r"(?:\b(?:mysql\w*|mariadb\w*)\b[^\n|;&]*?\s-p|\b(?:docker|podman|buildah|nerdctl)\s+login\b[^\n|;&]*?\s-p\s+)"
    r"(?P<val>[^\s\"'\-][^\s\"']{3,})"
)
#: What a redactor leaves or a template holds: ``[redacted]``, ``<user>``, ``$VAR``, ``${VAR}``.
_KEPT = re.compile(r"\[redacted\]|<[a-z\-]+>|\$[{(A-Za-z_]|\*{3,}")
# ``- name: DB_PASSWORD`` then ``value: …`` (Kubernetes, Compose), and ``secrets:`` then ``- …`` lines.
_ENV_PAIR = re.compile(
    r"-[ \t]+name:[ \t]*[\"']?(?P<name>[A-Za-z0-9_.\-]{2,80})[\"']?[ \t]*\n"
    r"[ \t]+value:[ \t]*[\"']?(?P<val>[^\"'\s]{4,})"
)
_LIST_AFTER = re.compile(r":[ \t]*\n(?P<items>(?:[ \t]*-[ \t]+[^\n]*\n?)+)")  # the name is read backwards
_LIST_ITEM = re.compile(r"-[ \t]+[\"']?(?P<val>[^\"'\s:]{6,})[\"']?[ \t]*$", re.M)
_NUMERIC = re.compile(r"[:=][ \t]*[\"']?(?P<val>\d{6,})(?![\d.])")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _name_before(text: str, at: int) -> str:
    """The identifier that ends just before ``at`` (a closing quote and blanks skipped)."""
    end = at
    while end > 0 and text[end - 1] in " \t\"'":
        end -= 1
    start = end
    while start > 0 and end - start < 80 and text[start - 1] in _NAME_CHARS:
        start -= 1
    return text[start:end]


def _cells(line: str, delimiter: str) -> list[tuple[int, int]]:
    if delimiter == "|":
        first, last = line.find("|"), line.rfind("|")
        if first < 0 or first == last:
            return []
        bounds, pos = [], first + 1
        for at in [i for i in range(first + 1, last + 1) if line[i] == "|"]:
            bounds.append((pos, at))
            pos = at + 1
    else:
        bounds, pos = [], 0
        for part in line.split(delimiter):
            bounds.append((pos, pos + len(part)))
            pos += len(part) + 1
    out = []
    for start, end in bounds:
        while start < end and line[start] in " \t\"'`":
            start += 1
        while end > start and line[end - 1] in " \t\"'`\r":
            end -= 1
        out.append((start, end))
    return out


def _table_findings(
    text: str, secret_name: Callable[[str], bool], generated: Callable[[str], bool]
) -> Iterator[Finding]:
    if "\n" not in text:
        return
    lines = text.split("\n")
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    lowered = text.lower()
    candidates: set[int] = set()
    for stem in _HEADER_STEMS:
        at = lowered.find(stem)
        while at >= 0:
            candidates.add(bisect.bisect_right(offsets, at) - 1)
            at = lowered.find(stem, at + 1)
    for index in sorted(candidates):
        if index + 1 >= len(lines):
            continue
        header = lines[index]
        for delimiter in ("|", ",", ";", "\t"):
            if delimiter not in header:
                continue
            heads = _cells(header, delimiter)
            columns = [
                i
                for i, (s, e) in enumerate(heads)
                if _CELL_NAME.fullmatch(header[s:e]) and secret_name(header[s:e].replace(" ", "_"))
            ]
            names = [header[s:e] for s, e in heads]
            if len(heads) < 2 or not columns or any(_NUMBER.fullmatch(n) for n in names):
                continue
            if not all(not n or _CELL_NAME.fullmatch(n) for n in names[1:-1]):
                continue  # a data row that happens to hold a keyword, not a header
            row = index + 1
            while row < len(lines) and not lines[row].strip():
                row += 1
            if delimiter == "|":
                if row >= len(lines) or not _RULE_LINE.match(lines[row][lines[row].find("|") :]):
                    continue  # a Markdown header has its rule line below it
                row += 1
            for number in range(row, min(len(lines), row + 1000)):
                line = lines[number]
                if not line.strip():
                    continue
                cells = _cells(line, delimiter)
                if len(cells) < 2 or abs(len(cells) - len(heads)) > 1:
                    break
                for column in columns:
                    for at in {column, len(cells) - len(heads) + column}:
                        if 0 <= at < len(cells):
                            start, end = cells[at]
                            value = line[start:end]
                            if " " not in value and generated(value):
                                base = offsets[number]
                                yield (
                                    "generic-keyword/table-column",
                                    "generic-keyword",
                                    base + start,
                                    base + end,
                                )


def form_findings(
    text: str, secret_name: Callable[[str], bool], generated: Callable[[str], bool]
) -> Iterator[Finding]:
    """Findings of these rules in ``text``; the caller runs them only where a keyword occurs."""
    lowered = text.lower()
    yield from _table_findings(text, secret_name, generated)
    if " key" in lowered or "\tkey" in lowered:
        for m in _TWO_WORDS.finditer(text):
            if generated(m.group("val")):
                yield "generic-keyword/two-word-key", "generic-keyword", m.start("val"), m.end("val")
    if "key" in lowered and ":" in text:
        for m in _SPLIT_KEY.finditer(lowered):
            if generated(text[m.start("val") : m.end("val")]):
                yield "generic-keyword/split-key", "generic-keyword", m.start("val"), m.end("val")
    if "cdata" in lowered:
        for m in _CDATA.finditer(text):
            if secret_name(m.group("name")) and generated(m.group("val")):
                yield "generic-keyword/cdata", "generic-keyword", m.start("val"), m.end("val")
    for pattern, rule in ((_PREFIXED_LITERAL, "literal"), (_NUMERIC, "numeric")):
        for m in pattern.finditer(text):
            name = _name_before(text, m.start())
            if not secret_name(name):
                continue
            if rule == "literal" and generated(m.group("val")):
                yield "generic-keyword/literal", "generic-keyword", m.start("val"), m.end("val")
            elif rule == "numeric" and re.search(r"(?i)pass|pwd|secret", name):
                yield "generic-keyword/numeric", "generic-keyword", m.start("val"), m.end("val")
    if "name:" in lowered and "value:" in lowered:
        for m in _ENV_PAIR.finditer(text):
            if secret_name(m.group("name")) and not _KEPT.match(m.group("val")):
                yield "generic-keyword/env-pair", "generic-keyword", m.start("val"), m.end("val")
    if ":\n" in text and "- " in text:
        for m in _LIST_AFTER.finditer(text):
            if secret_name(_name_before(text, m.start()).rstrip("sS")):
                for item in _LIST_ITEM.finditer(m.group("items")):
                    if generated(item.group("val")):
                        at = m.start("items")
                        yield (
                            "generic-keyword/list",
                            "generic-keyword",
                            at + item.start("val"),
                            at + item.end("val"),
                        )
    if "password" not in lowered:
        return
    for m in _PASSWORD_INPUT.finditer(text):
        if not _KEPT.match(m.group("val")):
            yield "generic-keyword/password-input", "generic-keyword", m.start("val"), m.end("val")


def client_findings(text: str) -> Iterator[Finding]:
    """``mysql -pSECRET``, ``docker login -p SECRET``: no keyword names these passwords."""
    if "-p" in text and ("mysql" in text or "mariadb" in text or "login" in text):
        for m in _CLIENT_P.finditer(text):
            if not _KEPT.match(m.group("val")):
                yield "generic-keyword/client-password", "generic-keyword", m.start("val"), m.end("val")


__all__ = ["client_findings", "form_findings"]
