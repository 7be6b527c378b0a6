"""Programs: what a competitor submits. Prompt folders (``prompt``) are re-exported here, so
``from worldforge.pcg.programs import load_program`` keeps working.
"""

from worldforge.pcg.programs.prompt import (
    BUILTIN_PROGRAMS,
    MAX_PROGRAM_BYTES,
    MAX_TURN_BYTES,
    MAX_TURNS,
    PLACEHOLDER,
    ZERO_SHOT_BASELINE,
    PromptProgram,
    PromptTurn,
    builtin_program,
    builtin_programs_dir,
    load_program,
    program_from_texts,
    resolve_programs,
)

__all__ = [
    "BUILTIN_PROGRAMS",
    "MAX_PROGRAM_BYTES",
    "MAX_TURNS",
    "MAX_TURN_BYTES",
    "PLACEHOLDER",
    "ZERO_SHOT_BASELINE",
    "PromptProgram",
    "PromptTurn",
    "builtin_program",
    "builtin_programs_dir",
    "load_program",
    "program_from_texts",
    "resolve_programs",
]
