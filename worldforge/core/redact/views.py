"""Decoded views of a text: what a secret looks like once its context's escaping is undone.

A secret rendered into HTML (``&quot;api_key&quot;: &quot;…&quot;``), a CSV field (``""password""``),
a JSON string (``token = …\\n``), a URL (``%2Fhome%2Fdana``) or base64 (``Basic dXNlcjpwdw==``) no
longer looks like the plain form a rule matches. Rather than one rule per encoding, a view decodes
the escapes once and remembers, for every decoded character, the span of the original text it came
from; the redactor matches on the view and replaces the corresponding *original* span, re-encoded
for that context. The second detector scans the same views, so "decode every context" is written
once.

Views decode only escape sequences (everything else maps one to one), so mapping a position back
is a bisect over the escapes, not a per-character table: a multi-megabyte report with a handful of
entities costs one regex pass.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import html
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import quote, unquote


@dataclass(frozen=True)
class Decoded:
    """A decoded view: ``text`` plus the escapes it undid, to map positions back to the original."""

    name: str
    text: str
    dec_starts: tuple[int, ...]
    dec_ends: tuple[int, ...]
    orig_starts: tuple[int, ...]
    orig_ends: tuple[int, ...]

    def to_original(self, position: int, *, end: bool = False) -> int:
        """The original offset of a decoded ``position``; inside an escape, the escape's bound.

        A span that starts or ends inside a decoded escape widens to the whole escape, so a
        replacement never leaves half an entity (``&am[redacted]``) behind.
        """
        k = bisect.bisect_right(self.dec_starts, position) - 1
        if k < 0:
            return position
        if position < self.dec_ends[k]:
            if position == self.dec_starts[k]:
                return self.orig_starts[k]
            return self.orig_ends[k] if end else self.orig_starts[k]
        return self.orig_ends[k] + (position - self.dec_ends[k])


def _decode_with(
    name: str, text: str, pattern: re.Pattern[str], decode: Callable[[str], str | None]
) -> Decoded | None:
    return _decode_escapes(
        name, text, ((m.start(), m.end(), decode(m.group(0))) for m in pattern.finditer(text))
    )


def _decode_escapes(name: str, text: str, escapes: Iterable[tuple[int, int, str | None]]) -> Decoded | None:
    """Build a view from ``(start, end, decoded)`` escapes, left to right and disjoint."""
    pieces: list[str] = []
    dec_starts: list[int] = []
    dec_ends: list[int] = []
    orig_starts: list[int] = []
    orig_ends: list[int] = []
    pos = 0
    out_len = 0
    for esc_start, esc_end, new in escapes:
        if new is None or new == text[esc_start:esc_end]:
            continue
        plain = text[pos:esc_start]
        pieces.append(plain)
        out_len += len(plain)
        dec_starts.append(out_len)
        pieces.append(new)
        out_len += len(new)
        dec_ends.append(out_len)
        orig_starts.append(esc_start)
        orig_ends.append(esc_end)
        pos = esc_end
    if not dec_starts:
        return None
    pieces.append(text[pos:])
    return Decoded(
        name, "".join(pieces), tuple(dec_starts), tuple(dec_ends), tuple(orig_starts), tuple(orig_ends)
    )


# --------------------------------------------------------------------------------------- views

_HTML_RE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
# ``+`` is a space in form-encoded queries (``quote_plus``); the raw pass still sees it as ``+``.
_PERCENT_RE = re.compile(r"(?:%[0-9A-Fa-f]{2})+|\+")
_ESCAPE_RE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}"
    r"|\\[\"'\\/bfnrt]"
    # Markdown's backslash escapes (``ghp\_…``, ``a\|b``): the renderer's, not the author's
    r"|\\[_*|\-#!()\[\]{}<>+`~.]"
)
# A CSV field that holds doubled quotes, between delimiters: quotes elsewhere (``"token": ""`` in
# JSON) are not CSV escaping and must not be undone.
_CSV_FIELD_RE = re.compile(r'(?:(?<=^)|(?<=[,;\t]))"(?:[^"]|"")*""(?:[^"]|"")*"(?=[,;\t\r\n]|$)', re.M)
# A YAML single-quoted scalar that holds a doubled quote (``'{''token'': ''…''}'``).
_YAML_QUOTED_RE = re.compile(r"'(?:[^']|'')*''(?:[^']|'')*'")
_SIMPLE_ESCAPES = {
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
}


def _html(chunk: str) -> str:
    return html.unescape(chunk)


def _percent(chunk: str) -> str:
    if chunk == "+":
        return " "
    try:
        return unquote(chunk, errors="strict")
    except UnicodeDecodeError:
        return unquote(chunk, encoding="latin-1")


def _escape(chunk: str) -> str:
    if chunk[1] not in _SIMPLE_ESCAPES and chunk[1] not in "ux":
        return chunk[1]  # a Markdown escape stands for the character itself
    if chunk[1] in "ux":
        if len(chunk) == 12:  # a surrogate pair
            decoded: str = json.loads(f'"{chunk}"')
            return decoded
        return chr(int(chunk[2:], 16))
    return _SIMPLE_ESCAPES[chunk[1]]


@dataclass(frozen=True)
class View:
    """One context's escaping: how to find and undo it, and how to write a replacement into it."""

    name: str
    markers: tuple[str, ...]
    decode: Callable[[str], Decoded | None]
    encode: Callable[[str], str]

    def applies(self, text: str) -> bool:
        return any(marker in text for marker in self.markers)


def _html_view(text: str) -> Decoded | None:
    return _decode_with("html", text, _HTML_RE, _html)


def _percent_view(text: str) -> Decoded | None:
    return _decode_with("url", text, _PERCENT_RE, _percent)


def _escape_view(text: str) -> Decoded | None:
    return _decode_with("escape", text, _ESCAPE_RE, _escape)


def _csv_view(text: str) -> Decoded | None:
    def escapes() -> Iterator[tuple[int, int, str | None]]:
        for field in _CSV_FIELD_RE.finditer(text):
            start = field.start() + 1
            while (found := text.find('""', start, field.end() - 1)) >= 0:
                yield found, found + 2, '"'
                start = found + 2

    return _decode_escapes("csv", text, escapes())


def _yaml_view(text: str) -> Decoded | None:
    def escapes() -> Iterator[tuple[int, int, str | None]]:
        for scalar in _YAML_QUOTED_RE.finditer(text):
            start = scalar.start() + 1
            while (found := text.find("''", start, scalar.end() - 1)) >= 0:
                yield found, found + 2, "'"
                start = found + 2

    return _decode_escapes("yaml", text, escapes())


def _html_encode(text: str) -> str:
    return html.escape(text, quote=True)


def _percent_encode(text: str) -> str:
    return quote(text, safe="[]/")


def _escape_encode(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _csv_encode(text: str) -> str:
    return text.replace('"', '""')


def _yaml_encode(text: str) -> str:
    return text.replace("'", "''")


#: Every escaping context, in the order the redactor tries them (each round tries all of them, so
#: nested encodings such as JSON inside HTML are peeled one layer a round).
VIEWS: tuple[View, ...] = (
    View("html", ("&",), _html_view, _html_encode),
    View("url", ("%", "+"), _percent_view, _percent_encode),
    View("escape", ("\\",), _escape_view, _escape_encode),
    View("csv", ('""',), _csv_view, _csv_encode),
    View("yaml", ("''",), _yaml_view, _yaml_encode),
)


def decoded_layer(text: str) -> Iterator[Decoded]:
    """Each view of ``text`` one escaping layer down that differs from it."""
    for view in VIEWS:
        if view.applies(text):
            decoded = view.decode(text)
            if decoded is not None:
                yield decoded


# ---------------------------------------------------------------------------------------- base64

# A token may follow ``=`` (``auth=dXNlcjpwdw==``, ``BLOB=…``): an assignment, not base64 padding.
B64_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{12,}={0,2}(?![A-Za-z0-9+/=_\-])")
_CREDENTIAL_PAIR_RE = re.compile(r"^[A-Za-z0-9_.@+\-]{1,64}:[^\s:]{4,256}$")


_HEX_RE = re.compile(r"[0-9a-f]+")
_MIXED_RE = re.compile(r"(?=[^a-z]*[a-z])(?=[^A-Z]*[A-Z])(?=[^0-9+/]*[0-9+/])")


def b64_text(token: str) -> str | None:
    """The UTF-8 text a base64 (standard or URL-safe) token encodes, or ``None`` if it is not text.

    Only printable text counts: digests and random ids are valid base64 alphabets too, but they
    decode to binary, so they are never mistaken for an encoded credential.
    """
    body = token.rstrip("=")
    if len(body) % 4 == 1 or _HEX_RE.fullmatch(body):  # hex digests and ids decode to bytes
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not decoded or any(not (c.isprintable() or c in "\n\r\t") for c in decoded):
        return None
    return decoded


def b64_candidate(token: str) -> bool:
    """Cheap pre-check: base64 of text is padded or mixes cases and digits; identifiers do not."""
    return token.endswith("=") or _MIXED_RE.match(token) is not None


def b64_tokens(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, decoded text)`` of every base64 token in ``text`` that decodes to text."""
    for match in B64_TOKEN_RE.finditer(text):
        token = match.group(0)
        if not b64_candidate(token):
            continue  # identifiers such as input_digest: base64 of text mixes case and digits
        decoded = b64_text(token)
        if decoded is not None:
            yield match.start(), match.end(), decoded


def looks_like_credential(decoded: str) -> bool:
    """``user:password`` or a PEM body: the credential shapes worth decoding base64 for."""
    return bool(_CREDENTIAL_PAIR_RE.match(decoded)) or "PRIVATE KEY" in decoded


__all__ = [
    "B64_TOKEN_RE",
    "VIEWS",
    "Decoded",
    "View",
    "b64_candidate",
    "b64_text",
    "b64_tokens",
    "decoded_layer",
    "looks_like_credential",
]
