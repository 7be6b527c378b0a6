"""Programs: what a competitor submits. Prompt folders (``prompt``) are re-exported here, so
``from worldforge.pcg.programs import load_program`` keeps working; Python ``TrialLoop``
submissions live in ``submission``.
"""

from worldforge.pcg.programs.prompt import (
    BUILTIN_PROGRAMS,
    MAX_PROGRAM_BYTES,
    MAX_TURN_BYTES,
    MAX_TURNS,
    PLACEHOLDER,
    ZERO_SHOT_BASELINE,
    Program,
    PromptProgram,
    PromptTurn,
    builtin_program,
    builtin_programs_dir,
    load_program,
    program_from_texts,
    resolve_programs,
)
from worldforge.pcg.programs.submission import SubmissionProgram, load_submission

__all__ = [
    "BUILTIN_PROGRAMS",
    "MAX_PROGRAM_BYTES",
    "MAX_TURNS",
    "MAX_TURN_BYTES",
    "PLACEHOLDER",
    "ZERO_SHOT_BASELINE",
    "Program",
    "PromptProgram",
    "SubmissionProgram",
    "PromptTurn",
    "builtin_program",
    "builtin_programs_dir",
    "load_program",
    "load_submission",
    "program_from_texts",
    "resolve_programs",
]
