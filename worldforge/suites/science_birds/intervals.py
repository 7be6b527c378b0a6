"""How sure the science-birds ranking is: the letter bootstrap's numbers laid out for the report.

A ranking printed without error bars reads as exact, and it is not: the normalized scores come from
one draw of letters. :mod:`worldforge.pcg.scoring.uncertainty` computes the intervals (paired letter
bootstrap, rank intervals, shared ranks, adjacent P(ahead) and Holm-adjusted sign-flip tests); this
module only arranges them into what the suite reports, so every format carries the same numbers:

* a ``ranking_uncertainty`` section, one row per program in ranking order (or one sentence saying
  why there are no intervals: fewer than 5 letters or 2 programs);
* interval columns for the ranking table (the table ``eval`` prints), keyed by program;
* the winner section's sentence: the competition's rule decides the winner, the intervals say
  whether the lead is "statistically tied with" the next programs;
* the full payload for ``science-birds/ranking.json`` (values rounded to 1e-9 upstream).

``uncertainty_resamples == 0`` turns all of it off, leaving the report exactly as it is without
intervals. Display values are rounded like the ranking table's (4 decimals); the unrounded-to-1e-9
figures are in ``ranking.json``.
"""

from __future__ import annotations

from worldforge.core.canonical import JSON, JSONObject
from worldforge.pcg.scoring.uncertainty import DOES_NOT_COVER, RankingUncertainty, uncertainty_for
from worldforge.suites.science_birds.scores import CohortScores

SECTION = "ranking_uncertainty"
#: Decimals of the displayed scores and probabilities (the ranking table shows 4).
PLACES = 4


def assess(scores: CohortScores, *, resamples: int, seed: int) -> RankingUncertainty | None:
    """The bootstrap over the cohort's character scores (every model, one paired letter draw).

    ``None`` when ``resamples`` is 0 (intervals off). A cohort of too few letters or programs gives
    a result whose ``reason`` says why there are no intervals, and the report says so.
    """
    if resamples == 0:
        return None
    results = {ms.model: ms.official for ms in scores.models}
    return uncertainty_for(results, scores.ranking, resamples=resamples, seed=seed)


def _r(value: float) -> float:
    return round(float(value), PLACES)


def _ranks(low: int, high: int) -> str:
    """A rank interval as people write it: ``2`` when it is one rank, else ``2–4``."""
    return str(low) if low == high else f"{low}\N{EN DASH}{high}"


def ranking_columns(result: RankingUncertainty | None) -> dict[str, JSONObject]:
    """Per program, the columns the ranking table gains: the 95 % interval, rank interval, shared rank.

    Empty without intervals (the section's sentence explains why), so the table keeps its columns.
    """
    if result is None or not result.computed:
        return {}
    return {
        p.program: {
            "ci95_low": _r(p.lower),
            "ci95_high": _r(p.upper),
            "rank_interval": _ranks(p.rank_lower, p.rank_upper),
            "shared_rank": p.shared_rank,
        }
        for p in result.programs
    }


def method_sentence(result: RankingUncertainty) -> str:
    """How the intervals were made, in the words a reader needs to judge them."""
    return (
        f"95 % intervals from {result.resamples:,} paired letter draws (seed {result.seed}): the "
        "letters are drawn with replacement, the same draw for every program and model, and each "
        "program's normalized score is recomputed from its character scores over the drawn letters. "
        "Weights and per-letter diversity are held as computed on the full run; trials are not "
        "resampled. Rank interval = 2.5th to 97.5th percentile of the rank per draw; shared rank = "
        "1 + the programs whose interval lies wholly above this one's. P(ahead of next) is the share "
        "of draws in which the program scores above the next one; the paired sign-flip test on the "
        "per-letter differences is Holm-adjusted across the adjacent pairs. "
        f"{DOES_NOT_COVER}"
    )


def uncertainty_section(result: RankingUncertainty) -> JSONObject:
    """The report section: a row per program in ranking order, or one sentence saying why none."""
    title = "Ranking uncertainty (95 % intervals, letter bootstrap)"
    if not result.computed:
        return {"title": title, "description": str(result.reason), "rows": []}
    following = {a.ahead: a for a in result.adjacent}
    rows: list[JSON] = []
    for p in result.programs:
        pair = following.get(p.program)
        rows.append(
            {
                "program": p.program,
                "baseline": p.baseline,
                "normalized": _r(p.normalized),
                "ci95_low": _r(p.lower),
                "ci95_high": _r(p.upper),
                "rank_interval": _ranks(p.rank_lower, p.rank_upper),
                "shared_rank": p.shared_rank,
                "next": pair.behind if pair is not None else None,
                "p_ahead_of_next": _r(pair.p_ahead) if pair is not None else None,
                "sign_flip_p": _r(pair.test.p_value) if pair is not None else None,
                "sign_flip_p_holm": _r(pair.p_holm) if pair is not None else None,
            }
        )
    return {"title": title, "description": method_sentence(result), "rows": rows}


def winner_fields(result: RankingUncertainty | None) -> JSONObject:
    """What the winner section adds: the rule's winner qualified by the intervals (or why not).

    Scalars only, so every format renders the section as key/value lines.
    """
    if result is None:
        return {}
    if result.winner is None:
        return {"uncertainty": result.reason}
    return {
        "uncertainty": result.winner.sentence,
        "statistically_tied_with": ", ".join(result.winner.tied_with) or "none",
    }


__all__ = [
    "PLACES",
    "SECTION",
    "assess",
    "method_sentence",
    "ranking_columns",
    "uncertainty_section",
    "winner_fields",
]
