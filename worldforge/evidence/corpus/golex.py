"""Go tokens: the lexer the static evaluator of gitleaks' rule files reads (comments dropped,
newlines kept, since Go's automatic semicolons end statements there).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Token:
    kind: str  # "ident", "string", "number", "rune", "op"
    value: str | None  # decoded text for strings (None when it is not valid UTF-8)
    newline_before: bool


_OPERATORS = sorted(
    "... <<= >>= &^= && || <- ++ -- == != <= >= := += -= *= /= %= &= |= ^= << >> &^ "
    "+ - * / % & | ^ < > = ! ( ) [ ] { } , ; . : ~".split(),
    key=len,
    reverse=True,
)
SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
}


def _decode_interpreted(body: str) -> str | None:
    """The value of a Go interpreted string literal's body, or None if it is not valid UTF-8."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e in SIMPLE_ESCAPES:
            out += SIMPLE_ESCAPES[e].encode("utf-8")
            i += 2
        elif e == "x":
            out.append(int(body[i + 2 : i + 4], 16))
            i += 4
        elif e in "01234567":
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        elif e in "uU":
            width = 4 if e == "u" else 8
            out += chr(int(body[i + 2 : i + 2 + width], 16)).encode("utf-8")
            i += 2 + width
        else:
            raise ValueError(f"unknown escape \\{e}")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


def tokenize(src: str) -> list[Token]:
    """Go source to tokens, dropping comments and keeping whether a newline preceded each token."""
    tokens: list[Token] = []
    i, n, newline = 0, len(src), True
    while i < n:
        c, count = src[i], len(tokens)
        if c in " \t\r":
            i += 1
        elif c == "\n":
            newline = True
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.index("*/", i + 2)
            newline = newline or "\n" in src[i:j]
            i = j + 2
        elif c == "`":
            j = src.index("`", i + 1)
            tokens.append(Token("string", src[i + 1 : j].replace("\r", ""), newline))
            i = j + 1
        elif c in "\"'":
            j = i + 1
            while src[j] != c:
                j += 2 if src[j] == "\\" else 1
            kind = "string" if c == '"' else "rune"
            value = _decode_interpreted(src[i + 1 : j]) if kind == "string" else src[i : j + 1]
            tokens.append(Token(kind, value, newline))
            i = j + 1
        elif c.isalpha() or c == "_":
            j = i + 1
            while j < n and (src[j].isalnum() or src[j] == "_"):
                j += 1
            tokens.append(Token("ident", src[i:j], newline))
            i = j
        elif c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            j = i + 1
            while j < n and (src[j].isalnum() or src[j] in "._"):
                j += 1
            tokens.append(Token("number", src[i:j], newline))
            i = j
        else:
            op = next((o for o in _OPERATORS if src.startswith(o, i)), None)
            if op is None:
                raise ValueError(f"unexpected character {c!r}")
            tokens.append(Token("op", op, newline))
            i += len(op)
        if len(tokens) > count:
            newline = False
    return tokens
