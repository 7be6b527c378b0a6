"""Chat messages built from the prompt files, the data folder and the vendored template library."""

import json
from pathlib import Path

from minitext.templates import fill

PROMPTS = Path("prompts")
HINTS = Path("data") / "hints.json"


def user_turn(name: str, letter: str) -> dict[str, str]:
    """One user message: the prompt file with the letter filled in, and the closing hint."""
    text = fill((PROMPTS / name).read_text(encoding="utf-8"), letter)
    hint = json.loads(HINTS.read_text(encoding="utf-8"))["closing"]
    return {"role": "user", "content": f"{text}\n{hint}"}
