"""Tables whose header row names a secret column: ``user,password`` then ``alice,…`` on later rows.

A key/value row (``api_key,…``, ``| token | … |``) names its secret beside it; a table names it once,
in the header, and every later row holds a value of that column. CSV (``,``, ``;``, tab) and
Markdown tables are read line by line from each header that names a secret column; a data cell in
that column is redacted when it could be a secret (see :func:`secret_cell`). A data row with
another cell count than its header (a table quoted inside another format, whose first cell carries
the quoting) is aligned both from the left and from the right, and both candidates are redacted.

Python's ``re`` cannot express "the n-th cell of every row below a header", so the rule's pattern
is a small matcher object with ``search(text, pos)``, like the balanced-block rule.
"""

from __future__ import annotations

import bisect
import functools
import re

from worldforge.core.redact.keys import REDACTED, has_digit_and_letter, is_harmless_value, is_sensitive_key

_STEMS = ("key", "token", "secret", "pass", "pwd", "auth", "cookie", "credential", "session", "signature")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\- ]{0,60}")
_PASSWORD_RE = re.compile(r"(?i)pass(?:wd|word|phrase)|pwd")
_MD_RULE_RE = re.compile(r"^[\s|:\-]*-[\s|:\-]*$")
_MAX_ROWS = 10_000

Cell = tuple[int, int]  # start, end of a cell's content (quotes and padding excluded)


def _cells(line: str, offset: int, delimiter: str) -> list[Cell]:
    """Content spans of the cells of one CSV or Markdown line (``|`` as delimiter: Markdown)."""
    lo, hi = 0, len(line)
    if delimiter == "|":
        lo, hi = line.find("|"), line.rfind("|")
        if lo < 0 or lo == hi:
            return []
        lo += 1
    cells: list[Cell] = []
    pos = lo
    while True:
        scan = pos
        if delimiter != "|" and line.startswith('"', pos):  # a quoted CSV field may hold the delimiter
            close = pos + 1
            while True:
                close = line.find('"', close, hi)
                if close < 0 or not line.startswith('"', close + 1):
                    break
                close += 2
            scan = close + 1 if close >= 0 else pos
        end = line.find(delimiter, scan, hi)
        end = hi if end < 0 else end
        start, stop = pos, end
        while start < stop and line[start] in " \t\"'`":
            start += 1
        while stop > start and line[stop - 1] in " \t\"'`\r":
            stop -= 1
        cells.append((offset + start, offset + stop))
        if end >= hi:
            return cells
        pos = end + 1


def secret_cell(header: str, value: str) -> bool:
    """Whether a data cell under a secret-named ``header`` could be the secret.

    A password may be a plain word; other secrets are generated (a digit/letter mix, a symbol, mixed
    case or 12+ characters). Prose (a space), placeholders, numbers and digests are kept.
    """
    if not value or " " in value or is_harmless_value(value):
        return False
    if _NAME_RE.fullmatch(value) and is_sensitive_key(value):
        return False  # a key name (``api_key``): its own value is the secret, which the key rules take
    if _PASSWORD_RE.search(header):
        return len(value) >= 4
    return (
        has_digit_and_letter(value)
        or any(not c.isalnum() and c not in "_-." for c in value)
        or (value != value.lower() and value != value.upper() and value != value.capitalize())
        or len(value) >= 12
    )


_NUMBER_RE = re.compile(r"[-+]?[\d.,%]+")


def header_row(cells: list[str]) -> bool:
    """Whether a line's cells read as column names: two or more, none a number, and every inner
    cell a name (the outer ones may carry the quoting of an enclosing format)."""
    if len(cells) < 2 or any(_NUMBER_RE.fullmatch(c) for c in cells):
        return False
    return all(not c or _NAME_RE.fullmatch(c) for c in cells[1:-1])


def _lines(text: str) -> tuple[list[int], list[str]]:
    starts = [0]
    lines = text.split("\n")
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    return starts, lines


@functools.lru_cache(maxsize=16)
def secret_cells(text: str) -> tuple[Cell, ...]:
    """Spans of every data cell in a secret-named column of a CSV or Markdown table in ``text``."""
    if "\n" not in text:
        return ()
    lowered = text.lower()
    hits = []
    for stem in _STEMS:  # substring search: a case-insensitive alternation costs far more per megabyte
        at = lowered.find(stem)
        while at >= 0:
            hits.append(at)
            at = lowered.find(stem, at + 1)
    if not hits or len(lowered) != len(text):
        return ()
    starts, lines = _lines(text)
    found: set[Cell] = set()
    seen_headers: set[int] = set()
    for hit in sorted(hits):
        index = bisect.bisect_right(starts, hit) - 1
        if index in seen_headers or index + 1 >= len(lines):
            continue
        seen_headers.add(index)
        header_line = lines[index]
        for delimiter in ("|", ",", ";", "\t"):
            if delimiter not in header_line:
                continue
            found.update(_column_cells(text, starts, lines, index, delimiter))
    return tuple(sorted(found))


def _column_cells(text: str, starts: list[int], lines: list[str], index: int, delimiter: str) -> list[Cell]:
    header = _cells(lines[index], starts[index], delimiter)
    if not header_row([text[s:e] for s, e in header]):
        return []
    columns = [
        (i, text[s:e])
        for i, (s, e) in enumerate(header)
        if _NAME_RE.fullmatch(text[s:e]) and is_sensitive_key(text[s:e].replace(" ", "_"))
    ]
    if not columns:
        return []
    row = index + 1
    while row < len(lines) and not lines[row].strip():
        row += 1  # YAML folding puts blank lines between a quoted table's lines
    if delimiter == "|":
        if row >= len(lines) or not _MD_RULE_RE.match(lines[row][lines[row].find("|") :]):
            return []  # a Markdown table has a rule line under its header
        row += 1
    out: list[Cell] = []
    for line_no in range(row, min(len(lines), row + _MAX_ROWS)):
        line = lines[line_no]
        if not line.strip():
            continue
        cells = _cells(line, starts[line_no], delimiter)
        if len(cells) < 2 or abs(len(cells) - len(header)) > 1:
            break  # not a row of this table (one cell more or less: a quoting format's first cell)
        for column, name in columns:
            candidates = (
                {column} if len(cells) == len(header) else {column, len(cells) - len(header) + column}
            )
            for at in candidates:
                if 0 <= at < len(cells):
                    start, end = cells[at]
                    if secret_cell(name, text[start:end]):
                        out.append((start, end))
    return out


class ColumnCells:
    """Matcher for the table rule: each match is one secret cell (found once per text, then cached)."""

    def search(self, text: str, pos: int = 0, /) -> re.Match[str] | None:
        cells = secret_cells(text)
        at = bisect.bisect_left(cells, (pos, -1))
        if at >= len(cells):
            return None
        start, end = cells[at]
        return re.compile(re.escape(text[start:end])).match(text, start)


def column_cell(match: re.Match[str]) -> str | None:
    return None if match.group(0) == REDACTED else REDACTED


__all__ = ["ColumnCells", "column_cell", "header_row", "secret_cell", "secret_cells"]
