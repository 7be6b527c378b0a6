"""Ranking uncertainty: how sure a competition ranking is, by a paired letter-cluster bootstrap.

A ranking is computed from one draw of letters (the alphabet the competition happened to use) and
one set of trials, so the normalized scores carry sampling error the official tables do not show.
The letter is the cluster: a program's character scores on one letter move together across trials,
and letters differ far more than trials do. The method (documented in ``docs/science-birds.md``):

* draw the ``C`` letters with replacement, the same draw for every program and every model
  (paired, so programs that do well on the same letters stay comparable);
* per draw, each program's prompt score is the mean of its character scores over the drawn letters,
  its total the sum over models, and normalized = 100 * total / sum of all programs' totals
  (baselines included, as the official ``result.json``); the weights and per-letter diversity inside
  the character scores stay as computed on the full run;
* trials are never resampled: a duplicated trial sits at distance 0 from itself and would bias
  diversity down by about 1/T;
* 95 % percentile intervals of the normalized score and of the rank per draw; a shared rank by
  FastChat's rule (1 + the number of programs whose lower bound lies above this one's upper bound);
* between programs adjacent in the ranking: P(ahead) over the draws (a tie counts half) and a paired
  sign-flip test on the per-letter differences (:mod:`worldforge.pcg.scoring.pairtests`),
  Holm-adjusted across the adjacent pairs.

Byte-stable by construction: draws are integer letter indices from
``numpy.random.Generator(PCG64(seed))``, sums run letter by letter and program by program as
element-wise operations (no matrix product, whose BLAS kernel may sum in a machine-dependent order),
percentiles are interpolated here rather than by a library whose formula has changed between
versions, and every value is rounded to 1e-9 before it is written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.scoring.pairtests import SignFlipResult, holm_adjust, sign_flip_test
from worldforge.pcg.scoring.scores import CompetitionScores, Ranking, is_baseline_name

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 2029
LEVEL = 0.95
MIN_LETTERS = 5
MIN_PROGRAMS = 2
SCHEMA = "worldforge.ranking-uncertainty/1"
DOES_NOT_COVER = (
    "The intervals cover which letters the competition happened to use, nothing else: not the "
    "similarity classifier's own error (a misread letter moves every program's score on it), not "
    "how faithfully the physics simulation matches Science Birds, and not trial-to-trial sampling "
    "beyond what the letters carry (trials are not resampled)."
)


def rounded(value: float) -> float:
    """Rounded to 1e-9 (no ``-0.0``): what is written never shows float noise below that."""
    return round(float(value), 9) + 0.0


@dataclass(frozen=True)
class LetterScores:
    """Character scores summed over models: ``scores[k][j]`` for program ``k`` and letter ``j``.

    ``models`` names the models summed (empty for a single unnamed model). A program absent for a
    model counts 0 there, as in the official aggregation.
    """

    programs: tuple[str, ...]
    letters: tuple[str, ...]
    scores: tuple[tuple[float, ...], ...]
    models: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(set(self.programs)) != len(self.programs):
            raise WorldForgeError("programs: duplicate program names.")
        if len(self.scores) != len(self.programs):
            raise WorldForgeError("scores: one row per program is required.")
        for name, row in zip(self.programs, self.scores, strict=True):
            if len(row) != len(self.letters):
                raise WorldForgeError(
                    f"scores: {name!r} has {len(row)} letters, expected {len(self.letters)}."
                )
            if not all(math.isfinite(v) and v >= 0 for v in row):
                raise WorldForgeError(f"scores: {name!r} has a negative or non-finite character score.")

    def matrix(self) -> np.ndarray:
        """Letters x programs, float64 (the bootstrap's layout)."""
        return np.array(self.scores, dtype=np.float64).reshape(len(self.programs), len(self.letters)).T.copy()


def letter_scores(results: Mapping[str, CompetitionScores]) -> LetterScores:
    """The character scores of one or several models' scoring, summed per program and letter.

    Every model must have scored the same letters (the bootstrap draws one letter set for all).
    A model named ``""`` (one competition folder scored without ``--models``) is not recorded.
    """
    if not results:
        raise WorldForgeError("models: nothing to assess.")
    letter_sets = {tuple(r.characters) for r in results.values()}
    if len(letter_sets) != 1:
        raise WorldForgeError(
            "models: the models scored different letters; a paired letter draw needs one set."
        )
    letters = next(iter(letter_sets))
    names: list[str] = []
    for r in results.values():
        names.extend(p.program for p in r.programs if p.program not in names)
    column = {c: j for j, c in enumerate(letters)}
    sums = {n: [0.0] * len(letters) for n in names}
    for r in results.values():
        for row in r.character_rows:
            sums[row.program][column[row.character]] += r.arithmetic.to_float(row.score)
    models = tuple(name for name in results if name)
    return LetterScores(tuple(names), letters, tuple(tuple(sums[n]) for n in names), models)


def resample_counts(letters: int, resamples: int, seed: int) -> np.ndarray:
    """How often each letter is drawn, per resample (``resamples x letters``, int64).

    One draw of ``letters`` integer indices with replacement per resample, from
    ``Generator(PCG64(seed))``: the same draw serves every program and model (paired).
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    draws = rng.integers(0, letters, size=(resamples, letters), dtype=np.int64)
    offsets = (np.arange(resamples, dtype=np.int64) * letters)[:, None]
    flat = np.bincount((draws + offsets).ravel(), minlength=resamples * letters)
    return flat.reshape(resamples, letters)


def weighted_totals(counts: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Per resample and column, the count-weighted sum of ``matrix`` over letters
    (``resamples x columns``), letter by letter in a fixed order: no BLAS reduction."""
    weights = counts.astype(np.float64)
    totals = np.zeros((weights.shape[0], matrix.shape[1]), dtype=np.float64)
    for j in range(matrix.shape[0]):
        totals += weights[:, j : j + 1] * matrix[j : j + 1, :]
    return totals


def normalized_scores(counts: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """100 * total / sum of totals per resample (``resamples x programs``).

    ``counts`` (resamples x letters) weighs each letter's character scores (letters x programs).
    The division by ``C`` of the prompt score cancels in the share, so it is left out. Sums run in
    a fixed order, letter by letter then program by program; a resample whose totals are all 0 is
    divided by 1, as the official script does.
    """
    totals = weighted_totals(counts, matrix)
    denominator = np.zeros(totals.shape[0], dtype=np.float64)
    for k in range(matrix.shape[1]):
        denominator += totals[:, k]
    divider = np.where(denominator != 0.0, denominator, 1.0)
    return totals / divider[:, None] * 100.0


def draw_ranks(normalized: np.ndarray) -> np.ndarray:
    """Rank per resample: 1 + the number of programs strictly ahead (tied programs share a rank)."""
    ranks = np.ones(normalized.shape, dtype=np.int64)
    for k in range(normalized.shape[1]):
        ranks += normalized[:, k : k + 1] > normalized
    return ranks


def percentile(sorted_values: np.ndarray, q: float) -> np.ndarray:
    """Linear-interpolation percentile (``numpy``'s default definition) of columns sorted ascending."""
    position = (sorted_values.shape[0] - 1) * q
    low = math.floor(position)
    high = min(low + 1, sorted_values.shape[0] - 1)
    fraction = position - low
    return sorted_values[low] + fraction * (sorted_values[high] - sorted_values[low])


def percentile_interval(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The :data:`LEVEL` percentile interval of each column of ``draws`` (resamples x columns)."""
    ordered = np.sort(draws, axis=0)
    tail = (1 - LEVEL) / 2
    return percentile(ordered, tail), percentile(ordered, 1 - tail)


@dataclass(frozen=True)
class BootstrapIntervals:
    """Per program (column order of the matrix): point estimate, 95 % interval, rank interval.

    ``draws`` keeps the normalized scores of every resample (resamples x programs) for the
    adjacent comparisons. Values are unrounded; :func:`ranking_uncertainty` rounds what it writes.
    """

    point: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    rank_lower: np.ndarray
    rank_upper: np.ndarray
    draws: np.ndarray


def bootstrap_intervals(matrix: np.ndarray, *, resamples: int, seed: int) -> BootstrapIntervals:
    """The letter bootstrap over a letters x programs matrix of character scores (summed over models)."""
    n_letters = matrix.shape[0]
    point = normalized_scores(np.ones((1, n_letters), dtype=np.int64), matrix)[0]
    draws = normalized_scores(resample_counts(n_letters, resamples, seed), matrix)
    lower, upper = percentile_interval(draws)
    ranks = np.sort(draw_ranks(draws), axis=0)
    tail = (1 - LEVEL) / 2
    # Ranks are whole numbers: the interval reaches outward to the order statistics around each
    # percentile, so it never claims a narrower rank range than the draws show.
    return BootstrapIntervals(
        point=point,
        lower=lower,
        upper=upper,
        rank_lower=ranks[math.floor((resamples - 1) * tail)],
        rank_upper=ranks[math.ceil((resamples - 1) * (1 - tail))],
        draws=draws,
    )


def shared_ranks(lowers: Sequence[float], uppers: Sequence[float]) -> list[int]:
    """FastChat's rule: 1 + the number of programs whose lower bound lies above this one's upper."""
    return [1 + sum(low > upper for low in lowers) for upper in uppers]


@dataclass(frozen=True)
class ProgramInterval:
    """One program's normalized score, its 95 % interval, rank interval and shared rank."""

    program: str
    baseline: bool
    normalized: float
    lower: float
    upper: float
    rank_lower: int
    rank_upper: int
    shared_rank: int

    def overlaps(self, other: ProgramInterval) -> bool:
        return self.lower <= other.upper and other.lower <= self.upper


@dataclass(frozen=True)
class AdjacentComparison:
    """A program against the next one in the ranking: P(ahead) over draws and the paired test."""

    ahead: str
    behind: str
    p_ahead: float
    letter_difference: float
    test: SignFlipResult
    p_holm: float


@dataclass(frozen=True)
class WinnerStatement:
    """The competition's winner rule next to what the intervals say about the top program."""

    top: str
    winners: tuple[str, ...]
    decided_by: str
    tied_with: tuple[str, ...]
    sentence: str


@dataclass(frozen=True)
class RankingUncertainty:
    """Everything :func:`ranking_uncertainty` computes; ``reason`` says why nothing was, if so."""

    resamples: int
    seed: int
    letters: tuple[str, ...]
    models: tuple[str, ...]
    programs: tuple[ProgramInterval, ...] = ()
    adjacent: tuple[AdjacentComparison, ...] = ()
    winner: WinnerStatement | None = None
    reason: str | None = None

    @property
    def computed(self) -> bool:
        return self.reason is None

    def to_dict(self) -> dict[str, Any]:
        """JSON-native payload (``result/ranking_uncertainty.json``); every float already rounded."""
        return {
            "schema": SCHEMA,
            "status": "computed" if self.computed else "not-computed",
            "reason": self.reason,
            "method": method_description(self.resamples, self.seed),
            "letters": "".join(self.letters),
            "models": list(self.models),
            "programs": [
                {
                    "program": p.program,
                    "baseline": p.baseline,
                    "normalized_score": p.normalized,
                    "interval": [p.lower, p.upper],
                    "rank_interval": [p.rank_lower, p.rank_upper],
                    "shared_rank": p.shared_rank,
                }
                for p in self.programs
            ],
            "adjacent": [
                {
                    "ahead": a.ahead,
                    "behind": a.behind,
                    "p_ahead": a.p_ahead,
                    "letter_difference": a.letter_difference,
                    "sign_flip": {
                        "method": a.test.method,
                        "letters_differing": a.test.nonzero,
                        "assignments": a.test.flips,
                        "p_value": a.test.p_value,
                        "p_holm": a.p_holm,
                    },
                }
                for a in self.adjacent
            ],
            "winner": None
            if self.winner is None
            else {
                "top": self.winner.top,
                "winners": list(self.winner.winners),
                "decided_by": self.winner.decided_by,
                "statistically_tied_with": list(self.winner.tied_with),
                "sentence": self.winner.sentence,
            },
            "does_not_cover": DOES_NOT_COVER,
        }


def method_description(resamples: int, seed: int) -> dict[str, Any]:
    """The method's settings as recorded beside the numbers (so a reader can rerun it)."""
    return {
        "cluster": "letter (drawn with replacement; one draw for every program and model)",
        "resamples": resamples,
        "seed": seed,
        "generator": "numpy.random.Generator(PCG64(seed)), integer letter indices",
        "level": LEVEL,
        "interval": "percentile (2.5th and 97.5th of the normalized score over the draws)",
        "rank_interval": "2.5th and 97.5th percentile of the rank per draw, outward to whole ranks",
        "shared_rank": "1 + the number of programs whose lower bound lies above this upper bound",
        "held_fixed": "weights and per-letter diversity as computed on the full run",
        "trials": "not resampled",
        "adjacent": "P(ahead) over the draws (a tie counts half); paired sign-flip test on the "
        "per-letter differences summed over models: exact when at most 16 letters differ, "
        "else 100,000 seeded random flips; Holm-adjusted across the adjacent pairs",
        "rounding": "every value rounded to 1e-9",
    }


def _not_computed(scores: LetterScores) -> str | None:
    letters, programs = len(scores.letters), len(scores.programs)
    if letters < MIN_LETTERS:
        return (
            f"No intervals: the run scored {letters} letter{'s' if letters != 1 else ''}, and a "
            f"letter bootstrap needs at least {MIN_LETTERS} to say anything about the ranking."
        )
    if programs < MIN_PROGRAMS:
        return (
            f"No intervals: the run scored {programs} program{'s' if programs != 1 else ''}, and a "
            f"ranking needs at least {MIN_PROGRAMS} to be uncertain about."
        )
    return None


def _range(p: ProgramInterval) -> str:
    return f"{p.program} ({p.lower:.1f}\N{EN DASH}{p.upper:.1f})"


def winner_statement(intervals: Sequence[ProgramInterval], ranking: Ranking | None) -> WinnerStatement:
    """One sentence on the winner: the competition's rule decides it, the intervals qualify it.

    The top program is the rule's winner, else its leader, else the highest score. It is
    "statistically tied" with every program whose 95 % interval overlaps its own.
    """
    by_name = {p.program: p for p in intervals}
    winners = tuple(ranking.winners) if ranking is not None else ()
    decided = ranking.decided_by if ranking is not None else "none"
    leaders = tuple(ranking.leaders) if ranking is not None else ()
    top_name = next(iter(winners or leaders), intervals[0].program)
    top = by_name[top_name]
    tied = tuple(p.program for p in intervals if p.program != top_name and p.overlaps(top))
    if winners:
        opening = f"Winner by the competition's rule: {', '.join(winners)} (decided by {decided})"
    else:
        opening = f"No winner by the competition's rule ({decided}); the top program is {top_name}"
    if tied:
        others = [_range(by_name[name]) for name in tied]
        listed = others[0] if len(others) == 1 else ", ".join(others[:-1]) + " and " + others[-1]
        sentence = (
            f"{opening}; {top_name} {top.lower:.1f}\N{EN DASH}{top.upper:.1f} is statistically tied "
            f"with {listed}: their 95 % intervals overlap."
        )
    else:
        sentence = (
            f"{opening}; its 95 % interval ({top.lower:.1f}\N{EN DASH}{top.upper:.1f}) lies above "
            "every other program's, so the lead holds when the letters are resampled."
        )
    return WinnerStatement(top_name, winners, decided, tied, sentence)


def ranking_uncertainty(
    scores: LetterScores,
    *,
    ranking: Ranking | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> RankingUncertainty:
    """Intervals, rank intervals, shared ranks and adjacent tests for one scored run.

    Programs are reported in ``ranking``'s order (score descending) when given, else by point
    estimate descending (input order among equal scores); baselines come from ``ranking`` or, without
    one, from their folder names. Fewer than :data:`MIN_LETTERS` letters or :data:`MIN_PROGRAMS`
    programs give a result with ``reason`` set and no intervals.
    """
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise WorldForgeError(f"uncertainty resamples: must be a whole number >= 1, got {resamples!r}.")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise WorldForgeError(f"uncertainty seed: must be a whole number in [0, 2**63), got {seed!r}.")
    reason = _not_computed(scores)
    if reason is not None:
        return RankingUncertainty(resamples, seed, scores.letters, scores.models, reason=reason)
    matrix = scores.matrix()
    n_letters, n_programs = matrix.shape
    boot = bootstrap_intervals(matrix, resamples=resamples, seed=seed)
    point, draws = boot.point, boot.draws
    index = {name: k for k, name in enumerate(scores.programs)}
    if ranking is not None:
        order = [index[e.program] for e in ranking.entries if e.program in index]
        order += [k for k in range(n_programs) if k not in order]
        baselines = {e.program for e in ranking.entries if e.baseline}
    else:
        order = sorted(range(n_programs), key=lambda k: -float(point[k]))
        baselines = {n for n in scores.programs if is_baseline_name(n)}
    lows = [rounded(boot.lower[k]) for k in order]
    highs = [rounded(boot.upper[k]) for k in order]
    shared = shared_ranks(lows, highs)
    intervals = tuple(
        ProgramInterval(
            program=scores.programs[k],
            baseline=scores.programs[k] in baselines,
            normalized=rounded(point[k]),
            lower=lows[i],
            upper=highs[i],
            rank_lower=int(boot.rank_lower[k]),
            rank_upper=int(boot.rank_upper[k]),
            shared_rank=shared[i],
        )
        for i, k in enumerate(order)
    )
    pairs: list[tuple[int, int, float, float, SignFlipResult]] = []
    for i, (a, b) in enumerate(zip(order, order[1:], strict=False)):
        wins = np.count_nonzero(draws[:, a] > draws[:, b]) + 0.5 * np.count_nonzero(
            draws[:, a] == draws[:, b]
        )
        differences = [float(matrix[j, a] - matrix[j, b]) for j in range(n_letters)]
        test = sign_flip_test(differences, seed=_pair_seed(seed, i))
        pairs.append((a, b, float(wins) / resamples, math.fsum(differences), test))
    adjusted = holm_adjust([t.p_value for *_, t in pairs])
    adjacent = tuple(
        AdjacentComparison(
            ahead=scores.programs[a],
            behind=scores.programs[b],
            p_ahead=rounded(p_ahead),
            letter_difference=rounded(diff),
            test=SignFlipResult(rounded(t.statistic), rounded(t.p_value), t.nonzero, t.method, t.flips),
            p_holm=rounded(p_holm),
        )
        for (a, b, p_ahead, diff, t), p_holm in zip(pairs, adjusted, strict=True)
    )
    return RankingUncertainty(
        resamples,
        seed,
        scores.letters,
        scores.models,
        programs=intervals,
        adjacent=adjacent,
        winner=winner_statement(intervals, ranking),
    )


def _pair_seed(seed: int, pair: int) -> int:
    """A seed per adjacent pair, derived from the run's seed so one recorded number fixes all."""
    return int(np.random.SeedSequence([seed, pair + 1]).generate_state(2, dtype=np.uint64)[0] >> np.uint64(1))


def uncertainty_for(
    results: Mapping[str, CompetitionScores],
    ranking: Ranking | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> RankingUncertainty:
    """:func:`ranking_uncertainty` of one or several models' scoring (``model -> scores``)."""
    return ranking_uncertainty(letter_scores(results), ranking=ranking, resamples=resamples, seed=seed)


__all__ = [
    "percentile_interval",
    "rounded",
    "weighted_totals",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "DOES_NOT_COVER",
    "LEVEL",
    "MIN_LETTERS",
    "MIN_PROGRAMS",
    "SCHEMA",
    "AdjacentComparison",
    "BootstrapIntervals",
    "LetterScores",
    "ProgramInterval",
    "RankingUncertainty",
    "WinnerStatement",
    "bootstrap_intervals",
    "draw_ranks",
    "letter_scores",
    "method_description",
    "normalized_scores",
    "percentile",
    "ranking_uncertainty",
    "resample_counts",
    "shared_ranks",
    "uncertainty_for",
    "winner_statement",
]
