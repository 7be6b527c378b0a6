"""Paired tests between two programs scored on the same letters: sign-flip permutation and Holm.

A letter's difference is the sum over models of the two programs' character scores for it. Under
the null hypothesis that the two programs are exchangeable on every letter, each difference is as
likely to carry either sign, so the p-value is the share of sign assignments whose summed
difference is at least as far from 0 as the observed one (two-sided). The letters where the
programs do not differ contribute nothing under any assignment and are left out of the count.

Both the enumeration and the random flips sum the signed differences letter by letter in a fixed
order with element-wise numpy operations (never a matrix product, whose BLAS kernel may sum in a
machine-dependent order), so the p-value is the same bytes on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from worldforge.core.errors import WorldForgeError

#: At most this many non-zero differences are enumerated exactly (2**16 = 65,536 assignments).
EXACT_LIMIT = 16
#: Random sign assignments drawn when more letters differ than :data:`EXACT_LIMIT`.
RANDOM_FLIPS = 100_000
#: Relative tolerance when comparing a permuted statistic with the observed one, so an assignment
#: equal to the observed sum up to float rounding counts as "at least as extreme".
_TOLERANCE = 1e-12


@dataclass(frozen=True)
class SignFlipResult:
    """A two-sided paired sign-flip test.

    ``method`` is ``exact`` (all ``2**nonzero`` assignments) or ``random`` (``flips`` seeded random
    assignments, p = (1 + hits) / (1 + flips) so a p-value is never 0), or ``none`` when no letter
    differs (p = 1).
    """

    statistic: float
    p_value: float
    nonzero: int
    method: str
    flips: int


def _signed_sums(codes: np.ndarray, diffs: np.ndarray) -> np.ndarray:
    """Signed sums per assignment: bit ``j`` of a code set means letter ``j`` keeps its sign.

    Accumulated letter by letter (fixed order, element-wise, no BLAS)."""
    total = np.zeros(codes.shape[0], dtype=np.float64)
    for j in range(diffs.shape[0]):
        keep = ((codes >> j) & 1).astype(bool)
        total += np.where(keep, diffs[j], -diffs[j])
    return total


def sign_flip_test(
    differences: Sequence[float],
    *,
    seed: int,
    exact_limit: int = EXACT_LIMIT,
    flips: int = RANDOM_FLIPS,
) -> SignFlipResult:
    """Two-sided sign-flip test of ``sum(differences)`` against 0.

    Exact enumeration when at most ``exact_limit`` differences are non-zero, otherwise ``flips``
    random assignments drawn from ``numpy.random.Generator(PCG64(seed))``.
    """
    if flips < 1:
        raise WorldForgeError(f"flips: must be >= 1, got {flips}.")
    if not 0 <= exact_limit <= 24:
        raise WorldForgeError(f"exact_limit: must be between 0 and 24, got {exact_limit}.")
    values = [float(d) for d in differences]
    if not all(math.isfinite(v) for v in values):
        raise WorldForgeError("differences: every letter difference must be a finite number.")
    diffs = np.array([v for v in values if v != 0.0], dtype=np.float64)
    observed = abs(math.fsum(values))
    n = int(diffs.shape[0])
    if n > 62:
        raise WorldForgeError(f"differences: at most 62 letters can be tested, got {n}.")
    if n == 0:
        return SignFlipResult(0.0, 1.0, 0, "none", 0)
    threshold = observed - _TOLERANCE * math.fsum(abs(v) for v in diffs.tolist())
    if n <= exact_limit:
        codes = np.arange(2**n, dtype=np.int64)
        hits = int(np.count_nonzero(np.abs(_signed_sums(codes, diffs)) >= threshold))
        return SignFlipResult(observed, hits / 2**n, n, "exact", 2**n)
    # One integer per assignment, its low ``n`` bits the signs (``n`` <= the letters, far below 63).
    rng = np.random.Generator(np.random.PCG64(seed))
    codes = rng.integers(0, 2**n, size=flips, dtype=np.int64)
    hits = int(np.count_nonzero(np.abs(_signed_sums(codes, diffs)) >= threshold))
    return SignFlipResult(observed, (1 + hits) / (1 + flips), n, "random", flips)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, returned in the input order.

    Sorted ascending, the i-th smallest (0-based) becomes ``max over j <= i of min(1, (m - j) p_j)``,
    so adjusted values never decrease along the sorted order and never exceed 1. Ties keep their
    input order, which does not change any adjusted value.
    """
    values = [float(p) for p in p_values]
    if any(not (0.0 <= p <= 1.0) for p in values):
        raise WorldForgeError("p_values: every p-value must lie in [0, 1].")
    m = len(values)
    order = sorted(range(m), key=lambda i: values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * values[i]))
        adjusted[i] = running
    return adjusted


__all__ = ["EXACT_LIMIT", "RANDOM_FLIPS", "SignFlipResult", "holm_adjust", "sign_flip_test"]
