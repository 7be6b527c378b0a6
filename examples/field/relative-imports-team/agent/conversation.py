"""The opening message, from the prompt file the settings name."""

from pathlib import Path

import settings


def opening(letter: str) -> list[dict[str, str]]:
    prompt = Path(settings.PROMPT_FILE).read_text(encoding="utf-8")
    return [{"role": "user", "content": prompt.replace(settings.PLACEHOLDER, letter)}]
