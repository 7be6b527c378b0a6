"""Diversity of one program's levels for one letter: mean cosine distance between trial vectors.

The competition defines ``div_jk = sum over unordered pairs a<b of D_c(v_a, v_b) / (T(T+1)/2 - T)``
with ``T`` the *configured* number of trials (10 -> divisor 45), whatever number of trials produced
an image: a program that fails trials is penalised twice (missing similarity and fewer pairs). The
vector is the 26-way softmax (2024, the seed text) or the classifier embedding (2025 variant).

``D_c`` is ``1 - u.v / (|u||v|)`` clipped to ``[0, 2]``, computed like SciPy's ``cosine`` (numpy dot
products in float64) so numbers match the official script without depending on SciPy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from worldforge.core.errors import WorldForgeError

VECTOR_KINDS = ("softmax", "embedding")


def pair_divisor(trials: int) -> int:
    """``T(T+1)/2 - T``: the number of unordered pairs among ``T`` configured trials."""
    if trials < 2:
        raise WorldForgeError(f"trials: diversity needs at least 2 configured trials, got {trials}.")
    return trials * (trials + 1) // 2 - trials


def cosine_distance(u: Sequence[float], v: Sequence[float], *, where: str = "vectors") -> float:
    """SciPy-compatible cosine distance; a zero or mismatched vector is a :class:`WorldForgeError`."""

    a = np.asarray(u, dtype=np.float64)
    b = np.asarray(v, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise WorldForgeError(f"{where}: vectors of different shapes {a.shape} and {b.shape}.")
    uu = float(np.dot(a, a))
    vv = float(np.dot(b, b))
    if uu == 0.0 or vv == 0.0:
        raise WorldForgeError(f"{where}: zero vector has no cosine distance.")
    dist = 1.0 - float(np.dot(a, b)) / float(np.sqrt(abs(uu * vv)))
    return min(max(dist, 0.0), 2.0)


@dataclass(frozen=True)
class PairDistance:
    """Distance between two trials (ids as in the similarity file, without extension)."""

    trial1: str
    trial2: str
    distance: float


@dataclass(frozen=True)
class DiversityResult:
    """``rate`` plus every pair, in the order the official file lists them."""

    rate: float
    pairs: tuple[PairDistance, ...]
    divisor: int
    present: int


def diversity(
    trials: Sequence[tuple[str, Sequence[float]]], *, configured_trials: int = 10
) -> DiversityResult:
    """Diversity over all unordered pairs ``i < j`` of the trials present, divided by the full divisor."""
    divisor = pair_divisor(configured_trials)
    pairs: list[PairDistance] = []
    total = 0.0
    for i in range(len(trials)):
        for j in range(i + 1, len(trials)):
            (id1, v1), (id2, v2) = trials[i], trials[j]
            d = cosine_distance(v1, v2, where=f"trials {id1!r}/{id2!r}")
            pairs.append(PairDistance(id1, id2, d))
            total += d
    return DiversityResult(rate=total / divisor, pairs=tuple(pairs), divisor=divisor, present=len(trials))


__all__ = [
    "VECTOR_KINDS",
    "DiversityResult",
    "PairDistance",
    "cosine_distance",
    "diversity",
    "pair_divisor",
]
