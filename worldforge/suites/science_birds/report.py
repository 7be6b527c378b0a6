"""Report content of the Science Birds suite: results, sections and extra artifacts.

Everything here is derived from the item records and the cohort scores, deterministically (sorted
keys, rounded display values), so the report is part of the reproducible result. The sections are
JSON the report renderers display: lists of row objects become tables, ``{"images": [...]}``
becomes an image gallery with embedded thumbnails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

from worldforge.core.canonical import JSON, JSONObject, canonical_json_text, pretty_json, to_json_native
from worldforge.pcg.programs.prompt import ZERO_SHOT_BASELINE, Program
from worldforge.pcg.scoring.report import official_files
from worldforge.pcg.scoring.scores import RankingPayload
from worldforge.pcg.scoring.uncertainty import RankingUncertainty
from worldforge.suites.science_birds.intervals import SECTION as UNCERTAINTY_SECTION
from worldforge.suites.science_birds.intervals import ranking_columns, uncertainty_section, winner_fields
from worldforge.suites.science_birds.records import ItemRecord
from worldforge.suites.science_birds.scores import CohortScores
from worldforge.suites.science_birds.unserved import SECTION as UNSERVED_SECTION
from worldforge.suites.science_birds.unserved import unserved_counts, unserved_section
from worldforge.suites.science_birds.usage import UsageRow

#: What the baseline comparison says when there is nothing to compare with (a sentence, not an
#: empty table, so that the reader learns why no winner is declared).
NO_BASELINE_TEXT = (
    f"The zero-shot baseline (program `{ZERO_SHOT_BASELINE}`) was not run, so no program can be "
    "compared with it and, by the ranking policy, no winner can be declared. Add "
    f"`--program {ZERO_SHOT_BASELINE}` to the run to make the comparison."
)
#: How many of the lowest-scoring levels the failure section shows per program.
WORST_PER_PROGRAM = 6
PROGRAM_TEXT_PREVIEW = 1_200


class ResultRow(TypedDict):
    """One (model, program): the values of an :class:`~worldforge.evaluation.EvaluationResult`."""

    provider: str
    scenario: str
    score: float
    passed: bool
    metrics: JSONObject


class RankingFile(TypedDict):
    """``science-birds/ranking.json``: totals over models, ranks and the tie-break decision; with
    submissions their unserved replies, with intervals the uncertainty, with usage the tokens."""

    models: list[str]
    per_model: dict[str, dict[str, str]]
    totals: dict[str, str]
    normalized: dict[str, str]
    competition: str
    ranking: RankingPayload
    unserved_replies: NotRequired[dict[str, int]]
    keep_unserved_replies: NotRequired[bool]
    #: ``RankingUncertainty.to_dict()``, as ``pcg stage score`` writes it.
    uncertainty: NotRequired[Mapping[str, object]]
    usage: NotRequired[list[JSONObject]]


def _r(value: float, places: int = 6) -> float:
    return round(float(value), places)


def result_rows(
    scores: CohortScores, records: Mapping[str, ItemRecord], programs: Sequence[Program]
) -> list[ResultRow]:
    """One row per (model, program): the values that become :class:`EvaluationResult` objects."""
    rows: list[ResultRow] = []
    for ms in scores.models:
        unserved = unserved_counts(records, programs, ms.model)
        for prog in programs:
            mine = [r for r in records.values() if r["model"] == ms.model and r["program"] == prog.name]
            ok = [r for r in mine if r.get("status") == "ok"]
            by_stage: dict[str, int] = {}
            for r in mine:
                if r.get("status") != "ok":
                    stage = str(r.get("failed_stage") or "unknown")
                    by_stage[stage] = by_stage.get(stage, 0) + 1
            n = len(mine) or 1
            divs = list(ms.diversity[prog.name].values())
            prompt = ms.prompt[prog.name]
            failures: JSONObject = dict(sorted(by_stage.items()))
            rows.append(
                {
                    "provider": ms.model,
                    "scenario": prog.name,
                    "score": min(max(prompt, 0.0), 1.0),
                    "passed": prompt > 0.0,
                    "metrics": {
                        "prompt_score": prompt,
                        "total_prompt_score": scores.totals[prog.name],
                        "normalized_total": scores.normalized[prog.name],
                        "rank": scores.ranks[prog.name],
                        "mean_stability": sum(float(r["sta"]) for r in mine) / n,
                        "mean_similarity": sum(float(r["sim"]) for r in mine) / n,
                        "mean_diversity": sum(divs) / len(divs) if divs else 0.0,
                        "trials": len(mine),
                        "ok_trials": len(ok),
                        "failed_trials": len(mine) - len(ok),
                        "failures_by_stage": failures,
                        "prompt_length": prog.prompt_length(),
                        "program_digest": prog.digest,
                        **({"unserved_replies": unserved[prog.name]} if unserved is not None else {}),
                    },
                }
            )
    return rows


def build_sections(
    scores: CohortScores,
    records: Mapping[str, ItemRecord],
    programs: Sequence[Program],
    letters: Sequence[str],
    measurement: Mapping[str, object],
    *,
    keep_unserved: bool = False,
    uncertainty: RankingUncertainty | None = None,
) -> JSONObject:
    """Ranking, per-letter table, weights, baseline comparison, galleries, worst levels; with
    submissions, the replies the model never served (a ranking column and their own section); with
    ``uncertainty`` (:mod:`.intervals`), the ranking's intervals: table columns, their own section
    and the winner's qualification. Without it the sections are what they were before intervals."""
    models = [ms.model for ms in scores.models]
    length = {p.name: p.prompt_length() for p in programs}
    unserved = unserved_counts(records, programs)
    intervals = ranking_columns(uncertainty)
    ranking: list[JSON] = []
    for name in sorted(scores.totals, key=lambda p: (-scores.totals[p], p)):
        row: JSONObject = {
            "rank": scores.ranks[name],
            "program": name,
            "normalized": _r(scores.normalized[name], 4),
            **intervals.get(name, {}),
            "total": _r(scores.totals[name], 10),
        }
        for ms in scores.models:
            row[f"prompt[{ms.model}]"] = _r(ms.prompt[name], 10)
        means = scores.means[name]
        row.update(
            mean_stability=_r(means["stability"], 4),
            mean_similarity=_r(means["similarity"], 4),
            mean_diversity=_r(means["diversity"], 4),
            ok_rate=_r(means["ok_rate"], 4),
            prompt_length=length[name],
            winner=name in scores.winners,
        )
        if unserved is not None:
            row["unserved_replies"] = unserved[name]
        ranking.append(row)

    per_letter: list[JSON] = []
    for prog in programs:
        for letter in letters:
            row = {"program": prog.name, "letter": letter}
            for ms in scores.models:
                recs = [
                    r
                    for r in records.values()
                    if r["model"] == ms.model and r["program"] == prog.name and r["letter"] == letter
                ]
                n = len(recs) or 1
                row[f"char[{ms.model}]"] = _r(ms.char_scores[prog.name][letter], 8)
                row[f"sta[{ms.model}]"] = _r(sum(float(r["sta"]) for r in recs) / n, 4)
                row[f"sim[{ms.model}]"] = _r(sum(float(r["sim"]) for r in recs) / n, 4)
                row[f"div[{ms.model}]"] = _r(ms.diversity[prog.name][letter], 4)
            per_letter.append(row)

    weights: list[JSON] = [
        {"model": ms.model, "letter": letter, **{k: _r(v, 6) for k, v in ms.weights[letter].items()}}
        for ms in scores.models
        for letter in letters
    ]

    base = scores.baseline
    baseline_rows: list[JSON] = []
    baseline_section: JSONObject = {"title": "Comparison with the zero-shot baseline"}
    if base.get("baseline") is not None:
        for name, info in base["programs"].items():
            baseline_rows.append(
                {
                    "program": name,
                    "total": _r(info["total"], 10),
                    "baseline": base["baseline"],
                    "baseline_total": _r(base["baseline_total"], 10),
                    "beats_baseline": info["beats_baseline"],
                }
            )
    else:
        baseline_section["description"] = NO_BASELINE_TEXT
    baseline_section["rows"] = baseline_rows
    leaders = scores.ranking.leaders
    winner_line: JSONObject = {
        "winners": _winners_text(scores.winners, leaders, str(base.get("decided_by"))),
        "decided_by": base.get("decided_by"),
        "winner_beats_zero_shot_baseline": base.get("winner_beats_baseline"),
        "tie_break": "highest total; ties go to the shortest prompt (characters of all turns after "
        "<OBJECT> substitution), then co-winners; built-in baselines are scored but not ranked "
        "unless only baselines run",
        **winner_fields(uncertainty),
    }

    sections: JSONObject = {
        "measurement": _flat_measurement(measurement),
        "ranking": {
            "title": "Ranking (totals over models, normalised to 100)",
            "description": "prompt[model] is the per-model prompt score; total is their sum.",
            "rows": ranking,
        },
        "winner": winner_line,
        **({UNCERTAINTY_SECTION: uncertainty_section(uncertainty)} if uncertainty is not None else {}),
        "baseline_comparison": baseline_section,
        "per_letter": {
            "title": "Per letter",
            "description": "char = weighted character score; sta/sim = mean over trials; div = diversity.",
            "rows": per_letter,
        },
        "weights_per_letter": {"title": "Weights per letter (per model)", "rows": weights},
    }
    for prog in programs:
        images: list[JSON] = []
        for letter in letters:
            for model in models:
                recs = sorted(
                    (
                        r
                        for r in records.values()
                        if r["model"] == model and r["program"] == prog.name and r["letter"] == letter
                    ),
                    key=lambda r: int(r["trial"]),
                )
                for r in recs:
                    if thumbnail := r.get("thumbnail"):
                        caption = (
                            f"{letter} | {model} | trial {r['trial']} | sta {float(r['sta']):.2f} "
                            f"sim {float(r['sim']):.2f}"
                        )
                        images.append({"caption": caption, "src": thumbnail})
        sections[f"gallery[{prog.name}]"] = {
            "title": f"Levels of {prog.name} (after the 10 s simulation)",
            "description": "One thumbnail per trial, by letter and model.",
            "images": images,
        }

    worst_rows: list[JSON] = []
    worst_images: list[JSON] = []

    # each program's few worst levels (so every program is represented), listed worst first overall
    def badness(r: ItemRecord) -> tuple[float, str]:
        return (float(r["sta"]) * float(r["sim"]), str(r["item_id"]))

    chosen: list[ItemRecord] = []
    for prog in programs:
        recs = sorted((r for r in records.values() if r["program"] == prog.name), key=badness)
        chosen.extend(recs[:WORST_PER_PROGRAM])
    for r in sorted(chosen, key=badness):
        prog_name = str(r["program"])
        text = r.get("program_text") or r.get("reply") or r.get("reply_preview") or ""
        worst_rows.append(
            {
                "item": r["item_id"],
                "program": prog_name,
                "model": r["model"],
                "letter": r["letter"],
                "trial": r["trial"],
                "sta": _r(r["sta"], 4),
                "sim": _r(r["sim"], 4),
                "margin": None if (margin := r.get("margin")) is None else _r(margin, 4),
                "failed_stage": r.get("failed_stage"),
                "error": r.get("error"),
                "program_text": str(text)[:PROGRAM_TEXT_PREVIEW],
            }
        )
        if thumbnail := r.get("thumbnail"):
            worst_images.append(
                {
                    "caption": f"{r['item_id']} (sta*sim {float(r['sta']) * float(r['sim']):.3f})",
                    "src": thumbnail,
                }
            )
    sections["worst_levels"] = {
        "title": (
            f"Worst levels (each program's {WORST_PER_PROGRAM} lowest stability x similarity, "
            "worst first) with their program text"
        ),
        "rows": worst_rows,
    }
    sections["worst_levels_gallery"] = {"title": "Worst levels", "images": worst_images}
    failures: list[JSON] = [
        {
            "item": r["item_id"],
            "failed_stage": r.get("failed_stage"),
            "error": r.get("error"),
        }
        for r in sorted(records.values(), key=lambda r: str(r["item_id"]))
        if r.get("status") != "ok"
    ]
    sections["failed_trials"] = {
        "title": "Failed trials (scored 0)",
        "description": f"{len(failures)} trial(s) produced no level.",
        "rows": failures,
    }
    if unserved is not None:
        sections[UNSERVED_SECTION] = unserved_section(records, keep_unserved)
    missing: list[JSON] = []
    for ms in scores.models:
        for entry in ms.official.missing:
            missing.append(to_json_native({"model": ms.model, **entry}))
    sections["missing_inputs_scored_as_zero"] = {
        "title": "Inputs missing from scoring (counted as 0)",
        "rows": missing,
    }
    return sections


def _flat_measurement(measurement: Mapping[str, object]) -> JSONObject:
    """Key/value view of what produced the numbers (nested values as compact JSON text)."""

    out: JSONObject = {}
    for key, value in measurement.items():
        if isinstance(value, Mapping):
            for sub, inner in value.items():
                out[f"{key}.{sub}"] = (
                    inner
                    if isinstance(inner, str | int | float | bool) or inner is None
                    else (canonical_json_text(inner))
                )
        else:
            out[key] = to_json_native(value)
    return out


def official_artifacts(
    scores: CohortScores,
    unserved: Mapping[str, int] | None = None,
    keep_unserved: bool = False,
    uncertainty: RankingUncertainty | None = None,
    usage: Sequence[UsageRow] | None = None,
) -> dict[str, str | bytes]:
    """The official result files per model plus the combined ranking.

    ``science-birds/<model>/result/{constants.json, trial_scores.csv, character_scores.csv,
    prompt_scores_ranks.csv}`` in the official formats (one competition folder per model, as the
    2025 edition scored each model separately), and ``science-birds/ranking.json`` with the totals
    over models, normalised scores, ranks and the tie-break decision; with submissions
    (``unserved`` per program), also their unserved replies and whether they were scored; with
    ``uncertainty``, the ranking's intervals as ``pcg stage score`` writes them
    (``result/ranking_uncertainty.json``'s payload, or why there are none); with ``usage``
    (:func:`~worldforge.suites.science_birds.usage.usage_rows`), the tokens per (model, program).
    """

    out: dict[str, str | bytes] = {}
    for ms in scores.models:
        slug = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in ms.model)
        for name, text in sorted(official_files(ms.official).items()):
            out[f"science-birds/{slug}/result/{name}"] = text
    ar = scores.combined.arithmetic
    ranking: RankingFile = {
        "models": list(scores.combined.models),
        "per_model": {p: {m: ar.text(v) for m, v in d.items()} for p, d in scores.combined.per_model.items()},
        "totals": {p: ar.text(v) for p, v in scores.combined.totals.items()},
        "normalized": {p: ar.text(v) for p, v in scores.combined.normalized.items()},
        "competition": ar.text(scores.combined.competition),
        "ranking": scores.ranking.to_dict(ar),
    }
    if unserved is not None:
        ranking["unserved_replies"] = dict(unserved)
        ranking["keep_unserved_replies"] = keep_unserved
    if uncertainty is not None:
        ranking["uncertainty"] = uncertainty.to_dict()
    if usage is not None:
        ranking["usage"] = [row.to_dict() for row in usage]
    out["science-birds/ranking.json"] = pretty_json(ranking)
    return out


__all__ = ["build_sections", "official_artifacts", "result_rows"]


def _winners_text(winners: Sequence[str], leaders: Sequence[str], decided_by: str) -> str:
    """The policy declares a winner only above the zero-shot baseline: say so when none is.

    Two different reasons leave the winner undeclared, and the reader needs to know which: the
    top program scored no higher than the baseline, or the baseline was never run, so the
    comparison the rule asks for could not be made.
    """
    if winners:
        return ", ".join(winners)
    if leaders and decided_by == "no-zero-shot-baseline":
        return (
            f"none (top program {', '.join(leaders)}; no winner can be declared because the "
            f"zero-shot baseline `{ZERO_SHOT_BASELINE}` was not run)"
        )
    if leaders:
        return f"none (top program {', '.join(leaders)} does not overcome the zero-shot baseline)"
    return "none"
