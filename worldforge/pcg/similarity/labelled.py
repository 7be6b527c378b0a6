"""Images whose letters are known: the truth from their names, and the classifier measured on them.

A classifier's published figures are only as good as the styles they were measured on; a user (or a
competition's organisers) with a set of level images of their own should get the same figures on
it, measured the same way, with one command: ``worldforge pcg classify --truth name|folder``. The
letter comes from where the user already keeps it, the file name (``A_03.png``, ``a.png``) or the
folder (``A/03.png``), and an image whose name says no letter is an error naming it, not a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.similarity.measures import LetterMetrics, metrics

#: Where ``--truth`` reads an image's letter.
TRUTH_SOURCES = ("name", "folder")
#: A file name that starts with one letter not followed by another (``A_03``, ``b-1``, ``C``):
#: ``Apple.png`` names no letter, it is not read as an ``A``.
_NAME_RE = re.compile(r"([A-Za-z])(?![A-Za-z])")


def truth_of(path: Path, source: str) -> str:
    """The letter ``path`` shows, read from its file name (``name``) or its folder's (``folder``)."""
    if source == "name":
        match = _NAME_RE.match(path.name)
        if match is None:
            raise WorldForgeError(
                f"{path}: --truth name: the file name must start with its letter, alone (A_03.png, a.png)"
            )
        return match.group(1).upper()
    if source == "folder":
        folder = path.absolute().parent.name
        if len(folder) != 1 or folder.upper() not in LETTERS:
            raise WorldForgeError(
                f"{path}: --truth folder: the image must be in a folder named by its letter (A/03.png), "
                f"not {folder!r}"
            )
        return folder.upper()
    raise WorldForgeError(f"--truth {source!r}: expected one of {', '.join(TRUTH_SOURCES)}")


def truths(paths: Sequence[Path], source: str) -> list[str]:
    """:func:`truth_of` for every path, in order (the first path that names no letter is the error)."""
    return [truth_of(path, source) for path in paths]


def measure(softmax: Sequence[Sequence[float]], letters: Sequence[str]) -> LetterMetrics:
    """The training recipe's figures (:func:`~worldforge.pcg.similarity.measures.metrics`) and the
    whole confusion matrix, for softmax vectors over A-Z and the letters the images show."""
    labels = [LETTERS.index(letter) for letter in letters]
    return metrics([list(row) for row in softmax], labels, matrix=True)


__all__ = ["TRUTH_SOURCES", "measure", "truth_of", "truths"]
