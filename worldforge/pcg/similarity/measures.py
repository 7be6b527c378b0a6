"""What is measured on a set of letter images with known letters: top-1, per-letter accuracy,
confusions, calibration.

Pure Python over softmax vectors (no torch), so the training recipe's folds (in worker processes),
the shipped model (on the full-size renders through ``load_classifier``), ``worldforge pcg classify
--truth`` on a user's own images and the tests all measure the same way.
"""

from __future__ import annotations

import math
from typing import TypedDict

from worldforge.pcg.letters import LETTERS


class LetterMetrics(TypedDict, total=False):
    """What :func:`metrics` measures on one set of images; an empty set has ``images`` (0) only."""

    images: int
    accuracy: float
    min_letter: float | None
    per_letter: dict[str, float]
    confusions: dict[str, int]
    ece: float
    mean_confidence: float
    nll: float
    #: The softmax temperature the figures were measured at, when one was fitted for them.
    temperature: float
    #: True letter -> letter read -> count (a fold's held-out family, a ``pcg classify --truth`` set).
    confusion_matrix: dict[str, dict[str, int]]


#: Equal-width confidence bins of the expected calibration error.
ECE_BINS = 15


def metrics(probs: list[list[float]], labels: list[int], *, matrix: bool = False) -> LetterMetrics:
    """Top-1, per-letter accuracy, top confusions, expected calibration error, mean confidence;
    with ``matrix``, the whole :func:`confusion_matrix` too (the top confusions hide how the rest of
    the misses spread)."""
    n = len(labels)
    if n == 0:
        return {"images": 0}
    top = [max(range(len(p)), key=p.__getitem__) for p in probs]
    conf = [p[t] for p, t in zip(probs, top, strict=True)]
    hits = [t == y for t, y in zip(top, labels, strict=True)]
    per_letter: dict[str, float] = {}
    confusions: dict[str, int] = {}
    for i, c in enumerate(LETTERS):
        rows = [k for k in range(n) if labels[k] == i]
        if rows:
            per_letter[c] = round(sum(hits[k] for k in rows) / len(rows), 3)
    for k in range(n):
        if not hits[k]:
            key = f"{LETTERS[labels[k]]}->{LETTERS[top[k]]}"
            confusions[key] = confusions.get(key, 0) + 1
    ece = 0.0
    for b in range(ECE_BINS):
        lo, hi = b / ECE_BINS, (b + 1) / ECE_BINS
        members = [k for k in range(n) if lo < conf[k] <= hi or (b == 0 and conf[k] == 0)]
        if members:
            acc = sum(hits[k] for k in members) / len(members)
            avg = sum(conf[k] for k in members) / len(members)
            ece += len(members) / n * abs(acc - avg)
    nll = -sum(math.log(max(p[y], 1e-12)) for p, y in zip(probs, labels, strict=True)) / n
    figures: LetterMetrics = {
        "images": n,
        "accuracy": round(sum(hits) / n, 4),
        "min_letter": min(per_letter.values()) if per_letter else None,
        "per_letter": per_letter,
        "confusions": dict(sorted(confusions.items(), key=lambda kv: (-kv[1], kv[0]))[:12]),
        "ece": round(ece, 4),
        "mean_confidence": round(sum(conf) / n, 4),
        "nll": round(nll, 4),
    }
    if matrix:
        figures["confusion_matrix"] = confusion_matrix(probs, labels)
    return figures


def confusion_matrix(probs: list[list[float]], labels: list[int]) -> dict[str, dict[str, int]]:
    """True letter -> letter read -> count (non-zero cells only), read as :func:`metrics` reads."""
    matrix: dict[str, dict[str, int]] = {}
    for p, y in zip(probs, labels, strict=True):
        row = matrix.setdefault(LETTERS[y], {})
        read = LETTERS[max(range(len(p)), key=p.__getitem__)]
        row[read] = row.get(read, 0) + 1
    return {true: dict(sorted(row.items())) for true, row in sorted(matrix.items())}
