"""How often the letter bootstrap's 95 % interval covers the truth, on cohorts like 2024's.

Each cohort has 8 programs x 26 letters x 10 trials. Its 26 letters are drawn with replacement
from the population of the 26 published 2024 letters, each bringing the 8 top programs' published
character scores as its letter effects (one draw for all programs, as letters are shared). Each of
the 10 trials scores the effect times a uniform factor on [0, 2] (mean 1), and the character score
is the trials' mean. The truth is the expected normalized score over the letter population: the
normalized score of the population's mean character scores.

What the measurement shows (and ``docs/science-birds.md`` states): the percentile interval covers
about 90.5 % of the time, short of its nominal 95 %, because 26 letters are few and a few letters
carry most of a strong program's score (a skewed, heavy-tailed letter distribution). Widening it to
the small-sample "expanded percentile" levels only reaches about 92.5 % and moves the 2024
intervals by more than the published recomputation allows, so the method stays as specified and
this test pins the measured coverage: a change that narrows the intervals, or one that inflates
them past usefulness, fails here. BCa reaches only about 91.2 % here and moves the 2024 intervals
by up to 3.6 points. The shortfall is bounded by the letters themselves:
the test checks why no cohort-based interval reaches 95 % for a program whose score rests on two
letters (a cohort without them holds no trace of what that program can do).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from worldforge.pcg.scoring.uncertainty import bootstrap_intervals

DATA = Path(__file__).parents[1] / "fixtures" / "chatgpt4pcg-2024" / "character_scores.csv"
COHORTS = 500
PROGRAMS = 8
TRIALS = 10
#: The coverage's standard error over 500 cohorts x 8 programs is about 0.01; the interval's
#: endpoints barely move with more resamples, so 2,000 keep the test fast.
RESAMPLES = 2_000


def _letter_effects() -> np.ndarray:
    """Letters x the 8 highest-scoring 2024 programs (baselines included, as they are scored)."""
    with DATA.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    programs = sorted({r["teamName"] for r in rows})
    letters = sorted({r["character"] for r in rows})
    effects = np.zeros((len(letters), len(programs)))
    for r in rows:
        effects[letters.index(r["character"]), programs.index(r["teamName"])] = float(r["characterScore"])
    top = np.argsort(-effects.sum(axis=0), kind="stable")[:PROGRAMS]
    return effects[:, top]


def test_interval_coverage_on_2024_like_cohorts() -> None:
    effects = _letter_effects()
    population = effects.mean(axis=0)
    truth = 100 * population / population.sum()
    rng = np.random.Generator(np.random.PCG64(20240))
    # The program owing most of its score to two letters (88 % of it, in 2024's scores).
    shares = np.sort(effects, axis=0)[::-1] / effects.sum(axis=0)
    narrow = int(np.argmax(shares[:2].sum(axis=0)))
    assert shares[:2, narrow].sum() > 0.85
    its_letters = np.argsort(-effects[:, narrow], kind="stable")[:2]
    covered = np.zeros(PROGRAMS, dtype=np.int64)
    widths = []
    without = []  # per cohort that draws neither of those letters: whether its interval covered
    for cohort in range(COHORTS):
        letters = rng.integers(0, effects.shape[0], size=effects.shape[0])
        trials = rng.uniform(0.0, 2.0, size=(effects.shape[0], PROGRAMS, TRIALS)).mean(axis=2)
        observed = effects[letters] * trials
        boot = bootstrap_intervals(observed, resamples=RESAMPLES, seed=cohort)
        hits = (boot.lower <= truth) & (truth <= boot.upper)
        covered += hits
        widths.append(boot.upper - boot.lower)
        if not np.isin(its_letters, letters).any():
            without.append(bool(hits[narrow]))
    rate = covered.sum() / (COHORTS * PROGRAMS)
    assert 0.89 <= rate <= 0.97, rate
    assert (covered / COHORTS).min() >= 0.80, covered / COHORTS  # no program is left far behind
    # The intervals are informative, not trivially wide: the leader's stays well under 100 points.
    assert float(np.median([w[0] for w in widths])) < 40.0
    # The bound no method escapes: about (24/26)^26 = 12 % of cohorts draw neither of the narrow
    # program's two letters, and then its interval (whatever the method) lies below the truth.
    assert 0.08 <= len(without) / COHORTS <= 0.17, len(without)
    assert sum(without) <= 0.1 * len(without), without
    assert covered[narrow] / COHORTS <= 1 - len(without) / COHORTS + 0.1 * len(without) / COHORTS
