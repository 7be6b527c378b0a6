"""Reply text -> ``drop_block`` program, with the official extractor's exact semantics.

The competition's code-extraction script keeps only the **last** complete triple-backtick block and
from it only the calls that match one strict, case-sensitive pattern. Everything else is dropped
silently, which is the single most common reason a reply scores 0 without the author noticing. So
besides the official program text we also report *what* was dropped and *why* (keyword arguments,
variables, upper case, spaces, calls outside the last block, loops), so a user can fix the prompt.

LLM output is treated strictly as data: it is matched with regular expressions only, never
executed, imported or evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypedDict

#: Behaviour version, recorded in every item record and cache key. An opaque id: bump it (any new
#: string) whenever this code's output can change; reference-output tests pin the behaviour. The
#: value is the id the code had when versions were derived from source files, so digests of runs
#: made before the package layout changed still compare equal.
STAGE_VERSION = "worldforge.pcg.extract:b25465f8a56f4b05"

CODE_NOT_FOUND = "Code not found."
DEFAULT_PREFIX = "drop_block"

# Official fence rule: three backticks, one or more non-backtick characters, three backticks.
_FENCE_RE = re.compile(r"```([^`]+)```")


def _call_re(prefix: str) -> re.Pattern[str]:
    """The official call pattern (character classes copied literally, including the stray ``|``)."""
    return re.compile(re.escape(prefix) + r"\(['|\"]b[1|3][1|3]['|\"], *[0-9]*\)")


def _loose_re(prefix: str) -> re.Pattern[str]:
    """Anything that looks like an attempted call, case-insensitive, up to the closing paren."""
    return re.compile(re.escape(prefix) + r"\s*\([^)\n]*\)?", re.IGNORECASE)


_LOOP_RE = re.compile(r"^\s*(for|while)\b")


class DroppedCallFields(TypedDict):
    """A :class:`DroppedCall` as records and reports carry it."""

    line: int
    text: str
    reason: str


@dataclass(frozen=True)
class DroppedCall:
    """A call-like text that the official extractor does not keep, and why."""

    line: int  # 1-based line in the reply text
    text: str
    reason: str

    def to_dict(self) -> DroppedCallFields:
        return {"line": self.line, "text": self.text, "reason": self.reason}


@dataclass(frozen=True)
class Extraction:
    """Result of :func:`extract_code`.

    ``program`` is exactly what the official script writes to the intermediate file (``None`` when
    it writes nothing); ``error`` then holds the official log message ``Code not found.``.
    """

    program: str | None
    error: str | None
    block: str | None = None
    calls: tuple[str, ...] = ()
    dropped: tuple[DroppedCall, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.program is not None

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "program": self.program,
            "error": self.error,
            "calls": list(self.calls),
            "dropped": [d.to_dict() for d in self.dropped],
            "notes": list(self.notes),
        }


def official_extract(text: str, prefix: str = DEFAULT_PREFIX) -> str | None:
    """The official extraction only: program text, or ``None`` for "Code not found."."""
    blocks = list(_FENCE_RE.finditer(text))
    if not blocks:
        return None
    block = blocks[-1].group(0)
    out = "".join(m.group(0).replace('"', "'") + "\n" for m in _call_re(prefix).finditer(block))
    out = out.lower()
    return out or None


def _reason(call: str, prefix: str) -> str:
    """Explain why a call-like text misses the official pattern (most specific reason first)."""
    head = call[: len(prefix)]
    if head != prefix:
        return "function name is not lower case (the pattern is case-sensitive)"
    inner = call[len(prefix) :].lstrip()
    if not inner.startswith("("):
        return "space between the function name and '('"
    args = inner[1:]
    if not args.endswith(")"):
        return "call is not closed on the same line (each call must be on one line)"
    args = args[:-1]
    if "=" in args:
        return "keyword argument (only positional literals are matched)"
    if args[:1].isspace():
        return "space after '('"
    parts = args.split(",")
    if len(parts) != 2:
        return "expected exactly two arguments: a quoted block type and a column number"
    block, slot = parts
    if block != block.rstrip():
        return "space before the comma"
    if not block or block[0] not in "'\"|" or block[-1] not in "'\"|":
        return "block type is not a quoted literal (variables and expressions are dropped)"
    token = block[1:-1]
    if token.lower() != token:
        return "block type is not lower case (the pattern is case-sensitive)"
    if not re.fullmatch(r"b[1|3][1|3]", token):
        return "block type has the wrong shape (expected b11, b13 or b31)"
    if slot != slot.rstrip():
        return "space before ')'"
    stripped = slot.lstrip(" ")
    if slot[: len(slot) - len(stripped)].strip(" "):
        return "whitespace other than spaces after the comma"
    if stripped.startswith("-"):
        return "negative column (only non-negative integer literals are matched)"
    if not re.fullmatch(r"[0-9]*", stripped):
        return "column is not an integer literal (variables and expressions are dropped)"
    return "does not match the official call pattern"


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def extract_code(text: str, prefix: str = DEFAULT_PREFIX) -> Extraction:
    """Extract the program exactly as the official script does, plus actionable diagnostics."""
    blocks = list(_FENCE_RE.finditer(text))
    call_re = _call_re(prefix)
    loose_re = _loose_re(prefix)
    notes: list[str] = []
    dropped: list[DroppedCall] = []
    if not blocks:
        if loose_re.search(text):
            notes.append("the reply has calls but no complete ``` fenced block; nothing is extracted")
        elif "```" in text:
            notes.append("no complete fenced block (a backtick inside a block breaks the fence rule)")
        else:
            notes.append("the reply has no ``` fenced block")
        return Extraction(program=None, error=CODE_NOT_FOUND, notes=tuple(notes))
    last = blocks[-1]
    start, end = last.span()
    block = last.group(0)
    # Calls outside the last block are ignored by the official extractor.
    outside = 0
    for m in loose_re.finditer(text):
        if m.start() < start or m.start() >= end:
            outside += 1
            dropped.append(
                DroppedCall(_line_of(text, m.start()), m.group(0), "outside the last fenced block")
            )
    if len(blocks) > 1:
        notes.append(f"{len(blocks)} fenced blocks found; only the last one is used")
    kept = [m.group(0) for m in call_re.finditer(block)]
    kept_spans = [(m.start(), m.end()) for m in call_re.finditer(block)]
    for m in loose_re.finditer(block):
        if any(s <= m.start() < e for s, e in kept_spans):
            continue
        dropped.append(
            DroppedCall(_line_of(text, start + m.start()), m.group(0), _reason(m.group(0), prefix))
        )
    lines = block.split("\n")
    if any(_LOOP_RE.match(line) for line in lines) and kept:
        notes.append("the block contains a loop; each call inside it is extracted once, not repeated")
    if re.search(r"^\s*#.*" + re.escape(prefix) + r"\(", block, re.MULTILINE):
        notes.append("calls inside comments are extracted too")
    program = "".join(c.replace('"', "'") + "\n" for c in kept).lower() or None
    dropped.sort(key=lambda d: d.line)
    return Extraction(
        program=program,
        error=None if program else CODE_NOT_FOUND,
        block=block,
        calls=tuple(c.replace('"', "'").lower() for c in kept),
        dropped=tuple(dropped),
        notes=tuple(notes),
    )


__all__ = [
    "CODE_NOT_FOUND",
    "DroppedCall",
    "DroppedCallFields",
    "Extraction",
    "extract_code",
    "official_extract",
]
