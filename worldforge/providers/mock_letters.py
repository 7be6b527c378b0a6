"""The mock provider's letter-level generator: deterministic chat replies that build letters.

The Science Birds suite needs a generator that runs anywhere without a language model, yet exercises
the whole pipeline the way a real reply does: Markdown prose around a fenced code block of
``drop_block`` calls. :func:`letter_reply` writes such a reply for a target letter and a trial seed.

* **Stable**: the same ``(letter, trial_seed, variant)`` always gives byte-identical text, in any
  process (seeds come from SHA-256 through :mod:`worldforge.core.seeds`, never from ``hash()``).
* **Letter-like**: the program comes from :func:`worldforge.pcg.levels.glyphs.letter_program`, which
  decomposes a rasterized glyph into b11/b31/b13 drops, so the level reads as the letter and stands.
* **Varied across trials**: the seed changes the glyph's thickness/scale/position/block choice, so
  the per-letter diversity score is not zero.
* ``variant`` (the ``<variant>`` of ``mock:<variant>``) seeds a different but equally deterministic
  generator, so several mock "models" can stand in for the competition's three models.
* **Capped like a server**: :func:`cap_words` cuts a reply to a completion-token cap (the mock counts
  whitespace-separated words as tokens), the way a server stops at ``max_tokens``; an uncapped
  reply is unchanged, so ``VERSION`` did not move.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from worldforge.core.errors import WorldForgeError
from worldforge.core.seeds import seeded_rng
from worldforge.pcg.levels.glyphs import letter_program

#: Behaviour version, recorded in every item record and cache key. An opaque id: bump it (any new
#: string) whenever this code's output can change; reference-output tests pin the behaviour. The
#: value is the id the code had when versions were derived from source files, so digests of runs
#: made before the package layout changed still compare equal.
VERSION = "worldforge.providers.mock_letters:b7a46a1c6af793c9"


_LETTER_RE = re.compile(r"^[A-Z]$")
_WORD_RE = re.compile(r"\S+")

_OPENINGS = (
    "Here is a stable structure that looks like the letter {L}.",
    "Sure! The following drops build an uppercase {L} from the bottom up.",
    "Below is a block-stacking plan for the character {L}.",
    "This sequence of drops forms the letter {L} and keeps every block supported.",
    "Let's build the character {L}, starting with its base.",
)
_NOTES = (
    "Each block lands on the ground or on a block already placed, so the order matters.",
    "Wide bars are placed only where the columns below are filled, which keeps the shape standing.",
    "All positions stay inside the 20 x 16 board.",
    "The vertical strokes use b13 bars and b11 squares; the horizontal strokes use b31 bars.",
)
_CLOSINGS = (
    "The final structure should read clearly as {L}.",
    "Let me know if you want a wider or taller version of {L}.",
    "Every call uses a literal block type and slot, as required.",
    "",
)


def _program_lines(program: object) -> list[str]:
    """Normalise what the glyph generator returns into ``drop_block(...)`` lines."""
    if isinstance(program, str):
        lines = [line.strip() for line in program.splitlines() if line.strip()]
    elif isinstance(program, Sequence):
        lines = []
        for call in program:
            if isinstance(call, str):
                lines.append(call.strip())
            elif isinstance(call, Sequence) and len(call) == 2:
                block, x = call
                lines.append(f"drop_block('{block}', {int(x)})")
            else:
                raise WorldForgeError(f"letter program entry {call!r} is not a drop_block call.")
    else:
        raise WorldForgeError(f"letter program of type {type(program).__name__} is not supported.")
    if not lines:
        raise WorldForgeError("letter program is empty.")
    return lines


def letter_program_lines(letter: str, trial_seed: int, variant: str = "") -> list[str]:
    """The ``drop_block`` calls the mock writes for ``letter`` in this trial."""
    if not isinstance(letter, str) or not _LETTER_RE.match(letter):
        raise WorldForgeError(f"target_character must be one uppercase letter A-Z, got {letter!r}.")
    key = (letter, int(trial_seed), str(variant or ""))
    primed = _PRIMED.get(key)
    if primed is not None:
        return list(primed)
    return list(_cached_lines(*key))


#: Programs computed ahead of time (for example by a suite's worker processes); see :func:`prime`.
_PRIMED: dict[tuple[str, int, str], tuple[str, ...]] = {}
_PRIMED_MAX = 8192


def prime(letter: str, trial_seed: int, variant: str, lines: Sequence[str]) -> None:
    """Install a program computed elsewhere by :func:`letter_program_lines` for the same arguments.

    The glyph decomposition is a pure function of ``(letter, seed, variant)``, so a suite may
    compute it in its process pool and hand the result to the mock in the main process; the
    reply is byte-identical to computing it here.
    """
    if len(_PRIMED) >= _PRIMED_MAX:
        _PRIMED.clear()
    _PRIMED[(letter, int(trial_seed), str(variant or ""))] = tuple(lines)


@lru_cache(maxsize=4096)
def _cached_lines(letter: str, trial_seed: int, variant: str) -> tuple[str, ...]:
    """Memoised: a multi-turn program asks the mock the same question once per turn."""

    return tuple(_program_lines(letter_program(letter, trial_seed, variant)))


def letter_reply(letter: str, trial_seed: int, variant: str = "") -> str:
    """A deterministic Markdown chat reply whose last fenced block builds ``letter``."""
    lines = letter_program_lines(letter, trial_seed, variant)
    rng = seeded_rng("mock-letters/prose/v1", variant or "", letter, int(trial_seed))
    opening = rng.choice(_OPENINGS).format(L=letter)
    note = rng.choice(_NOTES)
    closing = rng.choice(_CLOSINGS).format(L=letter)
    fence_lang = rng.choice(("python", "python", ""))
    parts = [opening, "", note, "", f"```{fence_lang}", *lines, "```"]
    if closing:
        parts += ["", closing]
    return "\n".join(parts) + "\n"


def cap_words(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut after its first ``limit`` words (the mock's tokens), and whether it was cut.

    A server that reaches ``max_tokens`` returns what it generated so far with ``finish_reason``
    ``"length"``; the cut keeps the original spacing up to the last kept word, so the completion
    count of the cut text (``len(text.split())``) is exactly ``limit``.
    """
    if len(text.split()) <= limit:
        return text, False
    if limit <= 0:
        return "", True
    for count, match in enumerate(_WORD_RE.finditer(text), start=1):
        if count == limit:
            return text[: match.end()], True
    return text, False  # pragma: no cover - the word count above rules this out


__all__ = ["cap_words", "letter_program_lines", "letter_reply", "prime"]
