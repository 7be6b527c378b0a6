"""How much a program's score moved between two runs, and whether that is more than noise.

The letter is the cluster, as in the ranking's intervals (:mod:`worldforge.pcg.scoring.uncertainty`):
one draw of the shared letters with replacement serves both runs and every program (paired), and
per draw each program's change is recomputed from its character scores (summed over the shared
models) on the drawn letters:

* Δ prompt score = (sum over drawn letters of B's minus A's character score) / letters;
* Δ normalized = B's normalized score minus A's, each 100 * total / the run's sum of totals over
  all of its programs (baselines included), both on the same draw.

The interval is the 2.5th-97.5th percentile over the draws. The paired sign-flip test on the
per-letter differences and the Holm adjustment across the compared programs are the ranking's own
(:mod:`worldforge.pcg.scoring.pairtests`). Every value is rounded to 1e-9 before it is written, so a
run compared with its own replay shows exactly 0 with the interval [0, 0].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from worldforge.core.seeds import derive_seed
from worldforge.pcg.scoring.pairtests import SignFlipResult, holm_adjust, sign_flip_test
from worldforge.pcg.scoring.uncertainty import (
    LEVEL,
    normalized_scores,
    percentile_interval,
    resample_counts,
    rounded,
    weighted_totals,
)

#: A Holm-adjusted sign-flip p below this flags a program's change as significant.
ALPHA = 0.05
#: A per-letter difference within this fraction of the larger score is float noise, not a change.
NOISE = 1e-12


class SignFlipPayload(TypedDict):
    method: str
    letters_differing: int
    assignments: int
    p_value: float
    p_holm: float


class ProgramChangePayload(TypedDict):
    """:meth:`ProgramChange.to_dict`: one program's change as ``runs diff`` writes it."""

    program: str
    program_a: str
    delta_prompt_score: float
    prompt_score_interval: list[float]
    delta_normalized: float
    normalized_interval: list[float]
    sign_flip: SignFlipPayload
    regressed: bool
    improved: bool
    significant: bool
    verdict: str


class MethodNote(TypedDict):
    """How the comparison's numbers were made (:func:`method_note`)."""

    cluster: str
    resamples: int
    seed: int
    level: float
    interval: str
    weights: str
    sign_flip: str
    regression: str
    alpha: float


@dataclass(frozen=True)
class ProgramChange:
    """One matched program's change from run A to run B (``program`` names it in B).

    ``regressed`` is the gate's rule: the Δ prompt score interval lies wholly below 0 (a share such
    as the normalized score cannot gate: one program's gain is every other program's loss).
    ``significant`` is the Holm-adjusted sign-flip p below :data:`ALPHA`.
    """

    program: str
    program_a: str
    delta_prompt: float
    prompt_interval: tuple[float, float]
    delta_normalized: float
    normalized_interval: tuple[float, float]
    test: SignFlipResult
    p_holm: float

    @property
    def regressed(self) -> bool:
        return self.prompt_interval[1] < 0.0

    @property
    def improved(self) -> bool:
        return self.prompt_interval[0] > 0.0

    @property
    def significant(self) -> bool:
        return self.p_holm < ALPHA

    @property
    def verdict(self) -> str:
        if self.regressed:
            return "regression"
        if self.improved:
            return "improvement"
        return "within noise"

    def to_dict(self) -> ProgramChangePayload:
        return {
            "program": self.program,
            "program_a": self.program_a,
            "delta_prompt_score": self.delta_prompt,
            "prompt_score_interval": list(self.prompt_interval),
            "delta_normalized": self.delta_normalized,
            "normalized_interval": list(self.normalized_interval),
            "sign_flip": {
                "method": self.test.method,
                "letters_differing": self.test.nonzero,
                "assignments": self.test.flips,
                "p_value": self.test.p_value,
                "p_holm": self.p_holm,
            },
            "regressed": self.regressed,
            "improved": self.improved,
            "significant": self.significant,
            "verdict": self.verdict,
        }


def paired_changes(
    matrix_a: np.ndarray,
    matrix_b: np.ndarray,
    pairs: Sequence[tuple[int, int, str, str]],
    *,
    resamples: int,
    seed: int,
) -> list[ProgramChange]:
    """Changes of the matched programs between two letters x programs matrices of character scores.

    Both matrices hold the same letters in the same row order; their columns are each run's own
    programs (all of them, for the normalized share). ``pairs`` are ``(column in A, column in B,
    name in A, name in B)``.
    """
    n_letters = matrix_a.shape[0]
    counts = resample_counts(n_letters, resamples, seed)
    ones = np.ones((1, n_letters), dtype=np.int64)
    cols_a = [a for a, *_ in pairs]
    cols_b = [b for _, b, *_ in pairs]
    before, after = matrix_a[:, cols_a], matrix_b[:, cols_b]
    differences = after - before
    # B's scores are put on A's weights by a multiply and a divide, which leaves float noise far
    # below any real change on letters the program did not change: that is no difference at all.
    noise = NOISE * np.maximum(np.abs(before), np.abs(after))
    differences = np.where(np.abs(differences) <= noise, 0.0, differences)
    prompt_point = weighted_totals(ones, differences)[0] / n_letters
    prompt_draws = weighted_totals(counts, differences) / n_letters
    norm_point = normalized_scores(ones, matrix_b)[0][cols_b] - normalized_scores(ones, matrix_a)[0][cols_a]
    norm_draws = (
        normalized_scores(counts, matrix_b)[:, cols_b] - normalized_scores(counts, matrix_a)[:, cols_a]
    )
    prompt_low, prompt_high = percentile_interval(prompt_draws)
    norm_low, norm_high = percentile_interval(norm_draws)
    tests = [
        sign_flip_test([float(v) for v in differences[:, k]], seed=derive_seed("runs-diff", seed, k))
        for k in range(len(pairs))
    ]
    adjusted = holm_adjust([t.p_value for t in tests])
    return [
        ProgramChange(
            program=name_b,
            program_a=name_a,
            delta_prompt=rounded(prompt_point[k]),
            prompt_interval=(rounded(prompt_low[k]), rounded(prompt_high[k])),
            delta_normalized=rounded(norm_point[k]),
            normalized_interval=(rounded(norm_low[k]), rounded(norm_high[k])),
            test=SignFlipResult(rounded(t.statistic), rounded(t.p_value), t.nonzero, t.method, t.flips),
            p_holm=rounded(adjusted[k]),
        )
        for k, ((_, _, name_a, name_b), t) in enumerate(zip(pairs, tests, strict=True))
    ]


def method_note(resamples: int, seed: int) -> MethodNote:
    """The settings recorded beside the numbers, so a reader can rerun them."""
    return {
        "cluster": "letter (the shared letters drawn with replacement; one draw for both runs and "
        "every program)",
        "resamples": resamples,
        "seed": seed,
        "level": LEVEL,
        "interval": "percentile (2.5th and 97.5th over the draws)",
        "weights": "run A's per-letter weights for both runs, so a change measures the program, "
        "not the cohort's weights",
        "sign_flip": "paired, on the per-letter differences summed over models; exact when at most "
        "16 letters differ; Holm-adjusted across the compared programs",
        "regression": "the Δ prompt score interval lies wholly below 0",
        "alpha": ALPHA,
    }


def mean_or_zero(values: Sequence[float]) -> float:
    """The mean, 0 for no values (a cell with no trials scored nothing)."""
    return math.fsum(values) / len(values) if values else 0.0


__all__ = [
    "ALPHA",
    "MethodNote",
    "ProgramChange",
    "ProgramChangePayload",
    "SignFlipPayload",
    "mean_or_zero",
    "method_note",
    "paired_changes",
]
