"""Helpers imported by main.py as a sibling module (as real submissions do)."""

from pathlib import Path


def fill_prompt(relative_path: str, target_character: str) -> str:
    """The prompt file with every ``<OBJECT>`` replaced by the target letter."""
    return Path(relative_path).read_text(encoding="utf-8").replace("<OBJECT>", target_character)
