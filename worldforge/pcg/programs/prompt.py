"""Prompt programs: ordered prompt turns with the ``<OBJECT>`` placeholder.

A prompt program is a folder ``NAME/prompts/*.txt``. The files are sorted by name (natural order, so
``2.txt`` comes before ``10.txt``) and each one is one user turn of a chat; the model's reply to the
last turn is the one that is scored, exactly like the competition's multi-turn examples. Every
occurrence of the literal ``<OBJECT>`` in every turn is replaced by the target letter (the
competition's ``str.replace`` convention).

Programs are *data*, never code: loading one only reads text files, and the checks here fail early
with a message naming the file (missing placeholder, bad UTF-8, oversized or empty files) so a typo
is not discovered after an hour of model calls. The files are read through
:mod:`worldforge.execution.files`: a prompt file (or ``prompts/``, or the folder) that is a symbolic
link, a FIFO or a device is refused, never followed or opened.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from worldforge.core.digests import digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.execution.files import read_file, walk_tree
from worldforge.pcg.programs.submission import (
    SubmissionProgram,
    invalid_submission,
    load_submission,
    looks_like_submission,
)
from worldforge.presets import PROGRAMS_DIR

PLACEHOLDER = "<OBJECT>"
#: One prompt file may hold at most this many bytes (the 2023 rule allowed 900 words, about 6 KB;
#: generous so that few-shot programs fit, small enough to stop an accidental binary or log file).
MAX_TURN_BYTES = 64 * 1024
#: A whole program (all turns) may hold at most this many bytes.
MAX_PROGRAM_BYTES = 256 * 1024
#: At most this many turns; each turn is one model call per trial.
MAX_TURNS = 16
#: The baselines shipped with the project, in report order (weak first, like the official tables).
BUILTIN_PROGRAMS = ("zero-shot", "zero-shot-multi-turn")
#: The name of the program the competition's ranking rule compares the winner against.
ZERO_SHOT_BASELINE = "zero-shot"

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_LETTER_RE = re.compile(r"^[A-Z]$")


@dataclass(frozen=True)
class PromptTurn:
    """One prompt file: its name inside ``prompts/`` and its text (with the placeholder)."""

    file: str
    text: str


@dataclass(frozen=True)
class PromptProgram:
    """A validated prompt program.

    ``name`` identifies the program in reports (the folder name); ``source`` is where it was read
    from (kept out of digests so that moving a checkout does not change results).
    """

    name: str
    turns: tuple[PromptTurn, ...]
    source: Path | None = None
    builtin: bool = False

    @property
    def digest(self) -> str:
        """Content digest of the program: name plus every turn's file name and text."""
        return digest_payload(self.identity())

    def identity(self) -> dict[str, object]:
        """JSON-native description that enters run inputs and item digests."""
        return {
            "name": self.name,
            "turns": [{"file": t.file, "text": t.text} for t in self.turns],
        }

    def prompts_for(self, letter: str) -> list[str]:
        """The user turns for ``letter``, every ``<OBJECT>`` replaced."""
        _check_letter(letter)
        return [t.text.replace(PLACEHOLDER, letter) for t in self.turns]

    def prompt_length(self, letter: str = "A") -> int:
        """Tie-break measure: total characters of all turns after substitution.

        The competition breaks a tie on the top score in favour of the *shortest prompt*; we define
        that as the number of Unicode characters across all turns once ``<OBJECT>`` is replaced by
        one letter (the letter does not matter since every letter is one character).
        """
        return sum(len(p) for p in self.prompts_for(letter))


#: What ``--program`` resolves to: a prompt folder or a submission program.
Program = PromptProgram | SubmissionProgram


def _check_letter(letter: str) -> None:
    if not isinstance(letter, str) or not _LETTER_RE.match(letter):
        raise WorldForgeError(f"target character must be one uppercase letter A-Z, got {letter!r}.")


def _natural_key(name: str) -> tuple[object, ...]:
    parts = re.split(r"(\d+)", name)
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)


def _check_turn_size(path: Path, size: int) -> None:
    if size > MAX_TURN_BYTES:
        raise WorldForgeError(f"{path}: prompt file is {size} bytes; the limit is {MAX_TURN_BYTES}.")


def _decode_turn(path: Path, data: bytes) -> str:
    _check_turn_size(path, len(data))
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorldForgeError(
            f"{path}: prompt file is not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})."
        ) from None
    if "\x00" in text:
        raise WorldForgeError(f"{path}: prompt file contains NUL bytes (binary file?).")
    if not text.strip():
        raise WorldForgeError(f"{path}: prompt file is empty.")
    return text


def program_from_texts(
    name: str, texts: Sequence[str], *, files: Sequence[str] | None = None
) -> PromptProgram:
    """Build a program from in-memory turns (same checks as a folder)."""
    if not _NAME_RE.match(name):
        raise WorldForgeError(f"program name {name!r}: use letters, digits, '.', '_' or '-' (max 64).")
    names = list(files) if files is not None else [f"{i}.txt" for i in range(len(texts))]
    if len(names) != len(texts):
        raise WorldForgeError(f"program {name!r}: {len(texts)} turns but {len(names)} file names.")
    turns = []
    for fname, text in zip(names, texts, strict=True):
        turns.append(PromptTurn(fname, _decode_turn(Path(name) / "prompts" / fname, text.encode("utf-8"))))
    return _validated(name, tuple(turns), None)


def _validated(
    name: str, turns: tuple[PromptTurn, ...], source: Path | None, builtin: bool = False
) -> PromptProgram:
    where = source if source is not None else Path(name)
    if not turns:
        raise WorldForgeError(f"{where / 'prompts'}: no *.txt prompt files.")
    if len(turns) > MAX_TURNS:
        raise WorldForgeError(
            f"{where / 'prompts'}: {len(turns)} prompt files; the limit is {MAX_TURNS} turns."
        )
    total = sum(len(t.text.encode("utf-8")) for t in turns)
    if total > MAX_PROGRAM_BYTES:
        raise WorldForgeError(f"{where}: prompts total {total} bytes; the limit is {MAX_PROGRAM_BYTES}.")
    if not any(PLACEHOLDER in t.text for t in turns):
        raise WorldForgeError(
            f"{where / 'prompts'}: no prompt file contains the {PLACEHOLDER} placeholder "
            "(it is replaced by the target letter)."
        )
    return PromptProgram(name=name, turns=turns, source=source, builtin=builtin)


def _kind(path: Path) -> str | None:
    """``"folder"``, ``"link"`` or ``"other"`` from ``lstat`` (never following a link); ``None``: absent."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return "folder" if stat.S_ISDIR(mode) else "link" if stat.S_ISLNK(mode) else "other"


def _not_a_turn(name: str) -> bool:
    """Names in ``prompts/`` that are not turns: hidden files and anything but ``*.txt``."""
    return name.startswith(".") or PurePosixPath(name).suffix != ".txt"


def load_program(path: str | Path, *, name: str | None = None, builtin: bool = False) -> PromptProgram:
    """Load and check the program folder at ``path`` (``path/prompts/*.txt``)."""
    root = Path(path)
    if _kind(root) not in ("folder", "link"):
        raise WorldForgeError(f"{root}: prompt program folder not found.")
    if _kind(root) == "folder" and _kind(root / "prompts") not in ("folder", "link"):
        raise WorldForgeError(f"{root}: a prompt program needs a 'prompts/' folder with *.txt turns.")
    # Links (the folder, prompts/, a turn) are refused here, by the walk, without being followed.
    files = sorted(
        walk_tree(root, under="prompts", recursive=False, excluded=_not_a_turn),
        key=lambda f: _natural_key(f.path.rsplit("/", 1)[-1]),
    )
    turns: list[PromptTurn] = []
    for entry in files:
        where = root / entry.path
        _check_turn_size(where, entry.size)  # before anything is read
        turns.append(PromptTurn(where.name, _decode_turn(where, read_file(root, entry))))
    prog_name = name or root.resolve().name
    if not _NAME_RE.match(prog_name):
        raise WorldForgeError(
            f"{root}: program name {prog_name!r} must use letters, digits, '.', '_' or '-'."
        )
    return _validated(prog_name, tuple(turns), root, builtin)


def builtin_programs_dir() -> Path:
    """Where the shipped baselines live: package data, so a wheel install finds them too."""

    return PROGRAMS_DIR


def builtin_program(name: str) -> PromptProgram:
    """One of :data:`BUILTIN_PROGRAMS` by name."""
    if name not in BUILTIN_PROGRAMS:
        raise WorldForgeError(
            f"unknown built-in program {name!r}; built-ins: {', '.join(BUILTIN_PROGRAMS)} (or pass a folder)."
        )
    return load_program(builtin_programs_dir() / name, name=name, builtin=True)


def _as_shipped_baseline(prog: PromptProgram) -> PromptProgram:
    """Mark a folder that *is* a shipped baseline as built-in; refuse one that only borrows its name.

    Whether a program is a baseline changes the ranking (baselines are scored but not ranked) and
    which program the winner must beat, so it has to follow from what the program is, not from how
    it was spelled on the command line: ``zero-shot``, ``presets/programs/zero-shot`` and an
    absolute path to the shipped folder are one program. Identity is the content digest (name plus
    every turn), which also covers a copy with identical prompts (a wheel install next to a checkout). A
    different program under a reserved name would appear in every report as the baseline it is
    not, so it is rejected instead of being renamed behind the user's back.
    """
    if prog.builtin or prog.name not in BUILTIN_PROGRAMS:
        return prog
    if prog.digest == builtin_program(prog.name).digest:
        return replace(prog, builtin=True)  # keep the folder actually read as the recorded source
    where = prog.source if prog.source is not None else prog.name
    raise WorldForgeError(
        f"{where}: the program name {prog.name!r} is reserved for the built-in baseline and these "
        "prompts differ from it; rename the folder."
    )


def _resolve_one(value: str | Path, several: bool = False) -> Program:
    """One ``--program`` value: a built-in name (unless such a folder exists here), a prompt folder
    or a submission (a ``TrialLoop`` program; see :mod:`worldforge.pcg.programs.submission`). An invalid
    submission among several programs is kept as a failed program instead of stopping the run."""
    if isinstance(value, str) and value in BUILTIN_PROGRAMS and not Path(value).is_dir():
        return builtin_program(value)
    if looks_like_submission(value):
        try:
            return load_submission(value)
        except WorldForgeError as exc:
            if not several:
                raise
            return invalid_submission(value, str(exc))
    return _as_shipped_baseline(load_program(value))


def resolve_programs(specs: Iterable[str | Path] | None) -> list[Program]:
    """Turn ``--program`` values (built-in names, folders, submissions) into programs; default:
    both baselines.

    Names must be unique within a run because results are keyed by program name. A folder holding
    a shipped baseline is that baseline (see :func:`_as_shipped_baseline`).
    """
    values = [s for s in (specs or []) if s]
    programs: list[Program] = (
        [builtin_program(n) for n in BUILTIN_PROGRAMS]
        if not values
        else [_resolve_one(v, len(values) > 1) for v in values]
    )
    seen: set[str] = set()
    for prog in programs:
        if prog.name in seen:
            raise WorldForgeError(f"--program: two programs are named {prog.name!r}; rename one folder.")
        seen.add(prog.name)
    return programs


__all__ = [
    "BUILTIN_PROGRAMS",
    "MAX_PROGRAM_BYTES",
    "MAX_TURNS",
    "MAX_TURN_BYTES",
    "PLACEHOLDER",
    "Program",
    "ZERO_SHOT_BASELINE",
    "PromptProgram",
    "PromptTurn",
    "builtin_program",
    "builtin_programs_dir",
    "load_program",
    "program_from_texts",
    "resolve_programs",
]
