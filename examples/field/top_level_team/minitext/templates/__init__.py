"""Filling placeholders in prompt templates."""

from .placeholders import PLACEHOLDER


def fill(template: str, letter: str) -> str:
    return template.replace(PLACEHOLDER, letter)
