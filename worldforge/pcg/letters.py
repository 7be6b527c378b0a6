"""The competition's alphabet: the 26 uppercase letters a program is asked to build.

One definition for every stage (glyph programs, classifier labels, suite options, scoring), so a
letter set can never differ between the stage that generates a level and the one that scores it.
"""

from __future__ import annotations

#: The target characters in the order the official classifier's labels and score tables use.
LETTERS: tuple[str, ...] = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")

__all__ = ["LETTERS"]
