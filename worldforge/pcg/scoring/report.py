"""What the score stage writes: the four official result files and our report.

The official files (``constants.json``, ``trial_scores.csv``, ``character_scores.csv``,
``prompt_scores_ranks.csv``) must match the published ChatGPT4PCG files byte for byte, so their
layouts (json2csv quoting, ``JSON.stringify`` separators, CRLF line ends, decimal strings) are pinned
here in one place. ``report.json``/``report.md`` are our additions: weights, program scores, the
ranking, every missing input and the classifier identity, so that a reader can tell whose
similarity numbers these are. Reading a competition folder and running the stages lives in
:mod:`worldforge.pcg.competition.scoring`; this module only formats and writes results.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NotRequired, TypedDict

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.io import atomic_write_json, atomic_write_text
from worldforge.pcg.scoring.scores import (
    CompetitionScores,
    MissingInput,
    MultiModelScores,
    Ranking,
    RankingPayload,
)


class WeightRow(TypedDict):
    """One letter's weight and its three factors (decimal strings)."""

    character: str
    weight: str
    stability: str
    similarity: str
    diversity: str


class ProgramRow(TypedDict):
    """A program's prompt and normalized scores and official rank (with several models, the
    aggregates and each model's prompt score)."""

    program: str
    prompt_score: str
    normalized_score: str
    official_rank: int
    per_model: NotRequired[dict[str, str]]


class ModelProgramRow(TypedDict):
    """A program's total over models and each model's share of it."""

    program: str
    total: str
    normalized_total: str
    per_model: dict[str, str]
    normalized_per_model: dict[str, str]


class ModelsBreakdown(TypedDict):
    """The per-model part of the aggregate report over several models."""

    models: list[str]
    competition_score: str
    competition_score_per_model: dict[str, str]
    programs: list[ModelProgramRow]
    missing_inputs: list[MissingInput]
    missing_count: dict[str, int]


class ScoreReport(TypedDict):
    """``result/report.json``: one model's report (:func:`report_payload`) or the aggregate over
    several models (:func:`models_report_payload`, with ``models`` and per-model ``weights``)."""

    arithmetic: str
    trials: int
    characters: str
    competition_score: str
    weights: list[WeightRow] | dict[str, list[WeightRow]]
    programs: list[ProgramRow]
    ranking: RankingPayload
    missing_inputs: list[MissingInput]
    missing_count: int
    classifier: JSONObject | None
    claim_boundary: str
    models: NotRequired[ModelsBreakdown]
    #: How to read the aggregate's numbers (the score stage adds it with several models).
    note: NotRequired[str]


def _csv(header: Sequence[str], rows: Sequence[Sequence[str | int]], eol: str) -> str:
    """json2csv defaults: header and strings double-quoted (quotes doubled), numbers bare."""

    def cell(v: str | int) -> str:
        return str(v) if isinstance(v, int) else '"' + v.replace('"', '""') + '"'

    return eol.join(",".join(cell(v) for v in line) for line in [list(header), *rows])


def constants_json(result: CompetitionScores) -> str:
    """``result/constants.json``: compact ``JSON.stringify`` layout, every number a decimal string."""
    t = result.arithmetic.text
    payload = {
        "competitionScore": t(result.competition),
        "weights": [
            {
                "character": w.character,
                "weight": t(w.weight),
                "weightStability": t(w.stability),
                "weightSimilarity": t(w.similarity),
                "weightDiversity": t(w.diversity),
            }
            for w in result.weights
        ],
    }
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def official_files(result: CompetitionScores, *, eol: str = "\r\n") -> dict[str, str]:
    """File name -> text of the four official result files (CRLF like the published 2024 files)."""
    t = result.arithmetic.text
    trial_csv = _csv(
        [
            "teamName",
            "character",
            "trial",
            "trial_score",
            "stabilityScore",
            "similarityScore",
            "diversityScore",
        ],
        [
            [r.program, r.character, r.trial, t(r.score), t(r.stability), t(r.similarity), t(r.diversity)]
            for r in result.trial_rows
        ],
        eol,
    )
    char_csv = _csv(
        [
            "teamName",
            "character",
            "characterScore",
            "nonWeightedAverageStabilityScore",
            "nonWeightedAverageSimilarityScore",
            "diversityScore",
        ],
        [
            [r.program, r.character, t(r.score), t(r.mean_stability), t(r.mean_similarity), t(r.diversity)]
            for r in result.character_rows
        ],
        eol,
    )
    ranks_csv = _csv(
        ["team", "normalizedPromptScore", "promptScore", "rank"],
        [[p.program, t(p.normalized), t(p.prompt), p.official_rank] for p in result.programs],
        eol,
    )
    return {
        "constants.json": constants_json(result),
        "trial_scores.csv": trial_csv,
        "character_scores.csv": char_csv,
        "prompt_scores_ranks.csv": ranks_csv,
    }


def _weights(result: CompetitionScores) -> list[WeightRow]:
    t = result.arithmetic.text
    return [
        {
            "character": w.character,
            "weight": t(w.weight),
            "stability": t(w.stability),
            "similarity": t(w.similarity),
            "diversity": t(w.diversity),
        }
        for w in result.weights
    ]


_CLAIM_BOUNDARY = (
    "Scores use the classifier named here; unless it is the official "
    "pittawat/vit-base-uppercase-english-characters weights, similarity and diversity "
    "numbers are not the official model's."
)


def report_payload(
    result: CompetitionScores,
    ranking: Ranking,
    *,
    classifier: Mapping[str, JSON] | None = None,
) -> ScoreReport:
    """JSON-native report of one model: weights, scores, ranking, missing inputs, classifier.

    Several models are reported by :func:`models_report_payload`, whose top-level numbers are the
    aggregates; one model's numbers there would read as the competition's.
    """
    t = result.arithmetic.text
    return {
        "arithmetic": "exact-decimal" if result.arithmetic.exact else "float",
        "trials": result.trials,
        "characters": "".join(result.characters),
        "competition_score": t(result.competition),
        "weights": _weights(result),
        "programs": [
            {
                "program": p.program,
                "prompt_score": t(p.prompt),
                "normalized_score": t(p.normalized),
                "official_rank": p.official_rank,
            }
            for p in result.programs
        ],
        "ranking": ranking.to_dict(result.arithmetic),
        "missing_inputs": result.missing,
        "missing_count": len(result.missing),
        "classifier": dict(classifier) if classifier else None,
        "claim_boundary": _CLAIM_BOUNDARY,
    }


def models_report_payload(
    per_model: Mapping[str, CompetitionScores],
    multi: MultiModelScores,
    ranking: Ranking,
    *,
    classifier: Mapping[str, JSON] | None = None,
) -> ScoreReport:
    """The 2025 aggregate report over several models (pipeline spec section 7.3).

    The top-level keys mean what they mean for one model, but every number is the aggregate, so a
    reader of ``competition_score`` or ``programs`` sees the competition and not one model:
    ``competition_score`` is ``sum_k total_prompt_k``; ``programs[].prompt_score`` is ``total_prompt_k =
    sum_m prompt_{k,m}`` (the per-model scores next to it) and ``normalized_score`` its share of the
    competition score; ``official_rank`` is the position by that share, as the official script
    ranks. No aggregate weights exist (each model's scoring computes its own), so ``weights`` maps
    each model to its weights. ``missing_inputs`` lists every model's entries, each naming its
    model, and ``missing_count`` counts them all; ``models`` keeps the per-model breakdown.
    """
    ar = multi.arithmetic
    t = ar.text
    first = per_model[multi.models[0]]
    order = sorted(multi.totals, key=lambda n: multi.normalized[n], reverse=True)  # stable for ties
    missing: list[MissingInput] = []
    for model in multi.models:
        missing.extend(_with_model(model, entry) for entry in per_model[model].missing)
        missing.extend(entry for entry in multi.missing if entry["model"] == model)
    return {
        "arithmetic": "exact-decimal" if ar.exact else "float",
        "trials": first.trials,
        "characters": "".join(first.characters),
        "competition_score": t(multi.competition),
        "weights": {model: _weights(per_model[model]) for model in multi.models},
        "programs": [
            {
                "program": n,
                "prompt_score": t(multi.totals[n]),
                "normalized_score": t(multi.normalized[n]),
                "official_rank": rank,
                "per_model": {m: t(multi.per_model[n][m]) for m in multi.models},
            }
            for rank, n in enumerate(order, start=1)
        ],
        "ranking": ranking.to_dict(ar),
        "missing_inputs": missing,
        "missing_count": len(missing),
        "classifier": dict(classifier) if classifier else None,
        "claim_boundary": _CLAIM_BOUNDARY,
        "models": {
            "models": list(multi.models),
            "competition_score": t(multi.competition),
            "competition_score_per_model": {m: t(per_model[m].competition) for m in multi.models},
            "programs": [
                {
                    "program": n,
                    "total": t(multi.totals[n]),
                    "normalized_total": t(multi.normalized[n]),
                    "per_model": {k: t(v) for k, v in multi.per_model[n].items()},
                    "normalized_per_model": {k: t(v) for k, v in multi.normalized_per_model[n].items()},
                }
                for n in multi.totals
            ],
            "missing_inputs": missing,
            "missing_count": {m: sum(e["model"] == m for e in missing) for m in multi.models},
        },
    }


def _with_model(model: str, entry: MissingInput) -> MissingInput:
    """A model's missing input as the aggregate lists it: the model named first."""
    named: MissingInput = {"model": model, **entry}
    return named


def report_markdown(payload: ScoreReport) -> str:
    """A short human summary of :func:`report_payload` or :func:`models_report_payload`.

    With several models the table shows each model's prompt score, their sum and the normalized
    total, so no single model's number stands in a column a reader takes for the total.
    """
    lines = ["# Competition scores", ""]
    clf = payload.get("classifier")
    if clf:
        lines += [f"Classifier: `{clf.get('id')}` ({clf.get('weights_digest')})", ""]
    lines += [f"Arithmetic: {payload['arithmetic']}; trials: {payload['trials']}", ""]
    models = payload.get("models")
    if models:
        lines += _models_table(payload, models["models"])
    else:
        lines += [
            "| rank | program | normalized | prompt score | prompt length |",
            "| --- | --- | --- | --- | --- |",
        ]
        prompt = {p["program"]: p["prompt_score"] for p in payload["programs"]}
        for e in payload["ranking"]["entries"]:
            rank = "baseline" if e["rank"] is None else str(e["rank"])
            length = "" if e["prompt_length"] is None else str(e["prompt_length"])
            lines.append(
                f"| {rank} | {e['program']} | {e['normalized_score']} | {prompt[e['program']]} | {length} |"
            )
    r = payload["ranking"]
    lines += ["", winner_sentence(r)]
    if r["zero_shot_baseline"] is not None:
        lines.append(
            f"Beats the zero-shot baseline `{r['zero_shot_baseline']}`: {r['winner_beats_zero_shot']}."
        )
    missing = f"Missing or unreadable inputs (counted as 0): {payload['missing_count']}"
    if models:
        missing += " (" + ", ".join(f"{m}: {n}" for m, n in models["missing_count"].items()) + ")"
    lines += ["", missing + ".", ""]
    lines += [payload["claim_boundary"], ""]
    return "\n".join(lines)


def _models_table(payload: ScoreReport, models: Sequence[str]) -> list[str]:
    """Markdown lines: how the totals are formed, then one row per program in ranking order."""
    lines = [
        f"Models: {', '.join(models)}. Each model is scored on its own (weights, trial and character "
        "scores in `<model>/result/`); a program's total prompt score is the sum of its per-model "
        "prompt scores, normalized by the competition score (the sum of all totals): "
        f"{payload['competition_score']}.",
        "",
        "| rank | program | "
        + "".join(f"prompt score ({m}) | " for m in models)
        + "total prompt score | normalized total | prompt length |",
        "| --- | --- | " + "--- | " * len(models) + "--- | --- | --- |",
    ]
    programs = {p["program"]: p for p in payload["programs"]}
    for e in payload["ranking"]["entries"]:
        p = programs[e["program"]]
        rank = "baseline" if e["rank"] is None else str(e["rank"])
        length = "" if e["prompt_length"] is None else str(e["prompt_length"])
        cells = [*(p["per_model"][m] for m in models), p["prompt_score"], e["normalized_score"], length]
        lines.append(f"| {rank} | {e['program']} | " + " | ".join(cells) + " |")
    return lines


def winner_sentence(ranking: RankingPayload) -> str:
    """One line on the winner that never names a leader as winner the policy did not declare.

    The policy requires the winner to overcome the zero-shot baseline; a reader skimming the
    summary must see why there is no winner (the baseline was beaten or was not scored at all).
    """
    leaders = ", ".join(ranking.get("leaders") or [])
    if ranking["winners"] or not leaders:
        return f"Winner(s): {', '.join(ranking['winners']) or '-'} (decided by {ranking['decided_by']})."
    if ranking["decided_by"] == "no-zero-shot-baseline":
        return (
            f"Winner(s): none: no zero-shot baseline was scored, so the top program ({leaders}) "
            "cannot be declared the winner."
        )
    return f"Winner(s): none: the top program ({leaders}) does not overcome the zero-shot baseline."


def write_results(
    out_dir: Path,
    result: CompetitionScores,
    ranking: Ranking,
    *,
    classifier: Mapping[str, JSON] | None = None,
    eol: str = "\r\n",
) -> tuple[ScoreReport, list[Path]]:
    """Write one model's four official files plus ``report.json`` / ``report.md``."""
    written = []
    for name, text in official_files(result, eol=eol).items():
        written.append(atomic_write_text(out_dir / name, text))
    payload = report_payload(result, ranking, classifier=classifier)
    written.append(atomic_write_json(out_dir / "report.json", payload))
    written.append(atomic_write_text(out_dir / "report.md", report_markdown(payload)))
    return payload, written


__all__ = [
    "ModelProgramRow",
    "ModelsBreakdown",
    "ProgramRow",
    "ScoreReport",
    "WeightRow",
    "constants_json",
    "models_report_payload",
    "official_files",
    "report_markdown",
    "report_payload",
    "winner_sentence",
    "write_results",
]
