"""From item records to the competition's numbers: diversity, weights, scores, totals, ranking.

The records are the only input (never in-memory floats), so a resumed run scores exactly like an
uninterrupted one. Scoring follows the seed's policy per model: for each model the weights are
computed over all programs of the cohort (baselines included), then the prompt scores of the
models are summed into ``total`` and normalised to 100 over the cohort. A failed trial counts as
0 stability and 0 similarity and is missing from the diversity pairs, as officially.

The arithmetic itself lives in :mod:`worldforge.pcg.scoring` / :mod:`worldforge.pcg.diversity`
(one home per concept); this module only arranges the records into their inputs and the results
into report rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.programs import ZERO_SHOT_BASELINE, PromptProgram


@dataclass
class ModelScores:
    """One model's scoring of every program (official per-model ``prompt`` scores)."""

    model: str
    weights: dict[str, dict[str, float]]  # letter -> {w_sta, w_sim, w_div, weight}
    diversity: dict[str, dict[str, float]]  # program -> letter -> div
    char_scores: dict[str, dict[str, float]]  # program -> letter -> char score
    prompt: dict[str, float]  # program -> prompt score
    trial_scores: dict[str, dict[str, list[float]]]  # program -> letter -> per-trial weighted score


@dataclass
class CohortScores:
    models: list[ModelScores]
    totals: dict[str, float]
    normalized: dict[str, float]
    ranks: dict[str, int]
    winners: list[str]
    baseline: dict[str, Any]
    means: dict[str, dict[str, float]] = field(default_factory=dict)


def _vector(record: Mapping[str, Any], kind: str) -> list[float] | None:
    value = record.get("embedding" if kind == "embedding" else "softmax")
    return list(value) if isinstance(value, list) and value else None


def score_model(
    model: str,
    records: Sequence[Mapping[str, Any]],
    programs: Sequence[str],
    letters: Sequence[str],
    trials: int,
    vector_kind: str = "softmax",
) -> ModelScores:
    """The seed's scoring policy for one model's records."""
    from worldforge.pcg.diversity import diversity

    cell: dict[tuple[str, str, int], Mapping[str, Any]] = {}
    for r in records:
        cell[(str(r["program"]), str(r["letter"]), int(r["trial"]))] = r
    n_letters = len(letters)
    floor = 1.0 / n_letters
    div: dict[str, dict[str, float]] = {p: {} for p in programs}
    for p in programs:
        for letter in letters:
            present = []
            for t in range(1, trials + 1):
                rec = cell.get((p, letter, t))
                vec = _vector(rec, vector_kind) if rec is not None and rec.get("status") == "ok" else None
                if vec is not None:
                    present.append((f"{p}_{letter}_{t}", vec))
            div[p][letter] = diversity(present, configured_trials=trials).rate

    def sta(p: str, letter: str, t: int) -> float:
        rec = cell.get((p, letter, t))
        return float(rec.get("sta") or 0.0) if rec is not None else 0.0

    def sim(p: str, letter: str, t: int) -> float:
        rec = cell.get((p, letter, t))
        return float(rec.get("sim") or 0.0) if rec is not None else 0.0

    weights: dict[str, dict[str, float]] = {}
    pt = len(programs) * trials
    for letter in letters:
        mean_sta = sum(sta(p, letter, t) for p in programs for t in range(1, trials + 1)) / pt
        mean_sim = sum(sim(p, letter, t) for p in programs for t in range(1, trials + 1)) / pt
        mean_div = sum(div[p][letter] for p in programs) / len(programs)
        w_sta = max(1.0 - mean_sta, floor)
        w_sim = max(1.0 - mean_sim, floor)
        w_div = max(1.0 - mean_div, floor)
        weights[letter] = {"w_sta": w_sta, "w_sim": w_sim, "w_div": w_div, "weight": w_sta * w_sim * w_div}

    trial_scores: dict[str, dict[str, list[float]]] = {}
    char_scores: dict[str, dict[str, float]] = {}
    prompt: dict[str, float] = {}
    for p in programs:
        trial_scores[p] = {}
        char_scores[p] = {}
        for letter in letters:
            w = weights[letter]["weight"]
            ts = [w * sta(p, letter, t) * sim(p, letter, t) for t in range(1, trials + 1)]
            trial_scores[p][letter] = ts
            char_scores[p][letter] = div[p][letter] * sum(ts) / trials
        prompt[p] = sum(char_scores[p].values()) / n_letters
    return ModelScores(model, weights, div, char_scores, prompt, trial_scores)


def score_cohort(
    records: Mapping[str, Mapping[str, Any]],
    models: Sequence[str],
    programs: Sequence[PromptProgram],
    letters: Sequence[str],
    trials: int,
    vector_kind: str = "softmax",
) -> CohortScores:
    """Per-model scores, totals over models, normalised ranking with the shortest-prompt tie-break."""
    if trials < 2:
        raise WorldForgeError("--trials: diversity needs at least 2 trials per letter.")
    names = [p.name for p in programs]
    by_model: dict[str, list[Mapping[str, Any]]] = {m: [] for m in models}
    for rec in records.values():
        by_model.setdefault(str(rec["model"]), []).append(rec)
    model_scores = [score_model(m, by_model[m], names, letters, trials, vector_kind) for m in models]
    totals = {p: sum(ms.prompt[p] for ms in model_scores) for p in names}
    competition = sum(totals.values())
    normalized = {p: (100.0 * totals[p] / competition if competition > 0 else 0.0) for p in names}
    length = {p.name: p.prompt_length() for p in programs}
    order = sorted(names, key=lambda p: (-totals[p], length[p], p))
    ranks: dict[str, int] = {}
    for i, p in enumerate(order):
        prev = order[i - 1] if i else None
        same = prev is not None and totals[prev] == totals[p] and length[prev] == length[p]
        ranks[p] = ranks[prev] if same and prev is not None else i + 1
    top = totals[order[0]] if order else 0.0
    tied = [p for p in order if totals[p] == top]
    shortest = min(length[p] for p in tied) if tied else 0
    winners = [p for p in tied if length[p] == shortest] if top > 0 else []
    baseline: dict[str, Any] = {"baseline": ZERO_SHOT_BASELINE if ZERO_SHOT_BASELINE in totals else None}
    if baseline["baseline"] is not None:
        base_total = totals[ZERO_SHOT_BASELINE]
        baseline["baseline_total"] = base_total
        baseline["programs"] = {
            p: {"total": totals[p], "beats_baseline": totals[p] > base_total} for p in names
        }
        baseline["winner_beats_baseline"] = bool(winners) and all(totals[w] > base_total for w in winners)
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
    return CohortScores(model_scores, totals, normalized, ranks, winners, baseline, means)


__all__ = ["CohortScores", "ModelScores", "score_cohort", "score_model"]
