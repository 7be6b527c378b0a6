"""From item records to the competition's numbers: diversity, weights, scores, totals, ranking.

The records are the only input (never in-memory floats), so a resumed run scores exactly like an
uninterrupted one. Scoring follows the seed's policy per model: for each model the weights are
computed over all programs of the cohort (baselines included), then the prompt scores of the
models are summed into ``total`` and normalised to 100 over the cohort. A failed trial counts as
0 stability and 0 similarity and is missing from the diversity pairs, as officially.

The arithmetic itself lives in :mod:`worldforge.pcg.scoring.scores` / :mod:`worldforge.pcg.scoring.diversity`
(one home per concept); this module only arranges the records into their inputs and the results
into report rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.programs.prompt import ZERO_SHOT_BASELINE, Program
from worldforge.pcg.scoring.diversity import diversity
from worldforge.pcg.scoring.scores import (
    CompetitionScores,
    MultiModelScores,
    ProgramData,
    Ranking,
    combine_models,
    rank_programs,
    score_competition,
)
from worldforge.suites.science_birds.records import ItemRecord


@dataclass
class ModelScores:
    """One model's scoring of every program (official per-model ``prompt`` scores)."""

    model: str
    weights: dict[str, dict[str, float]]  # letter -> {w_sta, w_sim, w_div, weight}
    diversity: dict[str, dict[str, float]]  # program -> letter -> div
    char_scores: dict[str, dict[str, float]]  # program -> letter -> char score
    prompt: dict[str, float]  # program -> prompt score
    trial_scores: dict[str, dict[str, list[float]]]  # program -> letter -> per-trial weighted score
    official: CompetitionScores  # the official CSV/JSON outputs


class ProgramVsBaseline(TypedDict):
    """One program's total beside the zero-shot baseline's."""

    total: float
    beats_baseline: bool


class BaselineComparison(TypedDict):
    """The cohort against the zero-shot baseline; the totals only when that baseline ran."""

    baseline: str | None
    decided_by: str
    baseline_total: NotRequired[float]
    programs: NotRequired[dict[str, ProgramVsBaseline]]
    winner_beats_baseline: NotRequired[bool | None]


@dataclass
class CohortScores:
    models: list[ModelScores]
    totals: dict[str, float]
    normalized: dict[str, float]
    ranks: dict[str, int | None]
    winners: list[str]
    baseline: BaselineComparison
    combined: MultiModelScores
    ranking: Ranking
    means: dict[str, dict[str, float]] = field(default_factory=dict)


def _vector(record: ItemRecord, kind: str) -> list[float] | None:
    value = record.get("embedding") if kind == "embedding" else record.get("softmax")
    return list(value) if isinstance(value, list) and value else None


def score_model(
    model: str,
    records: Sequence[ItemRecord],
    programs: Sequence[Program],
    letters: Sequence[str],
    trials: int,
    vector_kind: str = "softmax",
    exact: bool = False,
) -> ModelScores:
    """The seed's scoring policy for one model's records (via :func:`pcg.scoring.score_competition`).

    Failed trials are absent from the stability/similarity inputs, so the scoring module counts them
    as 0 and lists them under ``missing``; they are also absent from the diversity pairs.
    """

    cell: dict[tuple[str, str, int], ItemRecord] = {}
    for r in records:
        cell[(str(r["program"]), str(r["letter"]), int(r["trial"]))] = r
    data: list[ProgramData] = []
    div: dict[str, dict[str, float]] = {}
    for prog in programs:
        p = prog.name
        pd = ProgramData(name=p, prompt_length=prog.prompt_length())
        div[p] = {}
        for letter in letters:
            present: list[tuple[str, list[float]]] = []
            stab: list[tuple[str, float]] = []
            sims: list[tuple[str, float]] = []
            for t in range(1, trials + 1):
                rec = cell.get((p, letter, t))
                if rec is None or rec.get("status") != "ok":
                    continue
                tag = f"{p}_{letter}_{t}"
                stab.append((tag, float(rec["sta"])))
                sims.append((tag, float(rec["sim"])))
                vec = _vector(rec, vector_kind)
                if vec is not None:
                    present.append((tag, vec))
            pd.stability[letter] = stab
            pd.similarity[letter] = sims
            rate = diversity(present, configured_trials=trials).rate
            pd.diversity[letter] = rate
            div[p][letter] = rate
        data.append(pd)
    result = score_competition(data, trials=trials, exact=exact, characters=tuple(letters))
    ar = result.arithmetic
    weights = {
        w.character: {
            "w_sta": ar.to_float(w.stability),
            "w_sim": ar.to_float(w.similarity),
            "w_div": ar.to_float(w.diversity),
            "weight": ar.to_float(w.weight),
        }
        for w in result.weights
    }
    trial_scores: dict[str, dict[str, list[float]]] = {p.name: {c: [] for c in letters} for p in programs}
    for row in result.trial_rows:
        trial_scores[row.program][row.character].append(ar.to_float(row.score))
    char_scores: dict[str, dict[str, float]] = {p.name: {} for p in programs}
    for crow in result.character_rows:
        char_scores[crow.program][crow.character] = ar.to_float(crow.score)
    prompt = {ps.program: ar.to_float(ps.prompt) for ps in result.programs}
    return ModelScores(model, weights, div, char_scores, prompt, trial_scores, result)


def score_cohort(
    records: Mapping[str, ItemRecord],
    models: Sequence[str],
    programs: Sequence[Program],
    letters: Sequence[str],
    trials: int,
    vector_kind: str = "softmax",
    exact: bool = False,
) -> CohortScores:
    """Per-model scores, totals over models, normalised ranking with the shortest-prompt tie-break.

    Built-in baselines are scored (they count in the weights) but, as in the competition, not
    ranked -- unless every program is a baseline, in which case all are ranked so that a baseline
    run still shows an order.
    """

    if trials < 2:
        raise WorldForgeError("--trials: diversity needs at least 2 trials per letter.")
    names = [p.name for p in programs]
    by_model: dict[str, list[ItemRecord]] = {m: [] for m in models}
    for rec in records.values():
        by_model.setdefault(str(rec["model"]), []).append(rec)
    model_scores = [
        score_model(m, by_model[m], programs, letters, trials, vector_kind, exact) for m in models
    ]
    combined = combine_models({ms.model: ms.official for ms in model_scores})
    ar = combined.arithmetic
    totals = {p: ar.to_float(combined.totals[p]) for p in names}
    normalized = {p: ar.to_float(combined.normalized[p]) for p in names}
    lengths: dict[str, int | None] = {p.name: p.prompt_length() for p in programs}
    baselines = [p.name for p in programs if p.builtin]
    if len(baselines) == len(names):
        baselines = []
    zero_shot = ZERO_SHOT_BASELINE if ZERO_SHOT_BASELINE in names else None
    ranking = rank_programs(
        [(p, combined.normalized[p]) for p in names],
        prompt_lengths=lengths,
        baselines=baselines,
        zero_shot=zero_shot,
    )
    ranks = {e.program: e.rank for e in ranking.entries}
    baseline: BaselineComparison = {"baseline": zero_shot, "decided_by": ranking.decided_by}
    if zero_shot is not None:
        base_total = totals[zero_shot]
        baseline["baseline_total"] = base_total
        baseline["programs"] = {
            p: {"total": totals[p], "beats_baseline": totals[p] > base_total} for p in names
        }
        baseline["winner_beats_baseline"] = ranking.beats_zero_shot
    means: dict[str, dict[str, float]] = {}
    for p in names:
        recs = [r for r in records.values() if r["program"] == p]
        n = len(recs) or 1
        divs = [ms.diversity[p][letter] for ms in model_scores for letter in letters]
        means[p] = {
            "stability": sum(float(r.get("sta") or 0.0) for r in recs) / n,
            "similarity": sum(float(r.get("sim") or 0.0) for r in recs) / n,
            "diversity": sum(divs) / len(divs) if divs else 0.0,
            "ok_rate": sum(1 for r in recs if r.get("status") == "ok") / n,
        }
    return CohortScores(
        model_scores, totals, normalized, ranks, list(ranking.winners), baseline, combined, ranking, means
    )


__all__ = [
    "BaselineComparison",
    "CohortScores",
    "ModelScores",
    "ProgramVsBaseline",
    "score_cohort",
    "score_model",
]
