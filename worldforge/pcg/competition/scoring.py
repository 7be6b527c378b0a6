"""Competition folder stages: images -> similarity -> diversity -> result.

Layout (pipeline spec section 0): ``DIR/<team>/images/<C>/<team>_<C>_<n>.png`` ->
``DIR/<team>/similarity/<C>.json`` -> ``DIR/<team>/diversity/<C>.json`` -> ``DIR/result/*``. A team
folder is a direct subfolder of ``DIR`` whose name does not start with ``.`` and is not ``logs`` or
``result``; teams and files come from the shared listing in :mod:`worldforge.pcg.competition.stages` (natural
name order; the official scripts use directory-listing order, which only matters when two files
share a trial index). Every JSON file keeps the official
key order and ``indent=2`` layout so the official scripts can read our files and vice versa.

Where the official scripts abort or silently skip, these stages continue, count the input as 0 and
list it in the report (``result/report.json``). The result files' formats live in
:mod:`worldforge.pcg.scoring.report`; the writers are re-exported here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.digests import digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_json, atomic_write_text
from worldforge.pcg.competition.records import (
    ScoreStageRecord,
    SimilarityEntry,
    SimilarityTrial,
    UncertaintySummary,
)
from worldforge.pcg.competition.stages import (
    SKIPPED_DIRS,
    NullProgress,
    Progress,
    StageLog,
    StageReport,
    list_files,
    list_teams,
)
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.programs.prompt import load_program
from worldforge.pcg.scoring.diversity import VECTOR_KINDS, diversity
from worldforge.pcg.scoring.report import (
    ScoreReport,
    models_report_payload,
    report_markdown,
    write_results,
)
from worldforge.pcg.scoring.scores import (
    CompetitionScores,
    MissingInput,
    ProgramData,
    Ranking,
    combine_models,
    rank_programs,
    ranking_for,
    score_competition,
)
from worldforge.pcg.scoring.uncertainty import DEFAULT_RESAMPLES, DEFAULT_SEED, uncertainty_for
from worldforge.pcg.similarity.classifier import load_classifier

STAGES = ("similarity", "diversity", "score")
#: Beside the official result files; never one of them (those stay byte-identical to the script's).
UNCERTAINTY_FILE = "ranking_uncertainty.json"


@dataclass
class ScoreStageReport(StageReport):
    """The score stage's outcome: the usual counters plus our report payload."""

    report: ScoreReport | None = None
    #: ``result/ranking_uncertainty.json``'s path (relative to the source), digest and winner
    #: sentence; ``None`` when it was turned off (and then absent from :meth:`to_dict`).
    uncertainty: UncertaintySummary | None = None

    def to_dict(self) -> ScoreStageRecord:
        out: ScoreStageRecord = {**super().to_dict(), "report": self.report}
        if self.uncertainty is not None:
            out["ranking_uncertainty"] = self.uncertainty
        return out


def team_names(source: Path) -> list[str]:
    """Team (program) folder names of a competition folder (the shared listing rule)."""
    return [p.name for p in list_teams(Path(source))]


def _letter_dirs(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.is_dir() and not p.name.startswith(".") and p.name not in {"logs", "result"}
    )


def _dump(value: object) -> str:
    """Python ``json.dumps(indent=2)`` as the official similarity/diversity scripts write it."""
    return json.dumps(value, indent=2)


def image_files(folder: Path) -> list[Path]:
    """Level images of one letter folder: every visible file except ``*_raw.png``."""
    return [p for p in list_files(folder) if not p.name.endswith("_raw.png")]


def _rel(source: Path, path: Path) -> str:
    return path.relative_to(source).as_posix()


# ----------------------------------------------------------------------------------------------
# similarity


def stage_similarity(
    source: Path,
    *,
    classifier: str | None = None,
    workers: int = 1,
    progress: Progress | None = None,
    batch_size: int = 64,
) -> StageReport:
    """Classify every level image and write ``<team>/similarity/<C>.json`` (v0.2.0 layout).

    ``similarity`` is the softmax probability of the folder's letter; ``cls_embedding`` is stored for
    the embedding diversity variant. The classifier's identity is added under ``classifier`` (an
    extra key the official readers ignore), so every later report can name it. ``classifier`` is
    a hub id or a local directory; ``None`` is the bundled checkpoint.
    """

    source = Path(source)
    bar = progress or NullProgress()
    report = StageReport(stage="similarity")
    jobs: list[tuple[str, str, list[Path]]] = []
    for team in list_teams(source):
        for letter in _letter_dirs(team / "images"):
            if len(letter) != 1 or letter not in LETTERS:
                report.failures.append((_rel(source, team / "images" / letter), "not a letter folder A-Z"))
                continue
            jobs.append((team.name, letter, image_files(team / "images" / letter)))
    model = load_classifier(classifier)
    bar.start("similarity", sum(len(files) for _, _, files in jobs))
    # the official script's similarity_log_<time>.txt: one line per image, like the other stages
    log = StageLog(source, "similarity")
    report.log_path = log.path
    for where, why in report.failures:
        log.write(f"{where}: Failed - {why}")
    for team_name, letter, files in jobs:
        index = LETTERS.index(letter)
        preds = model.classify(files, batch_size=batch_size, embedding=True, workers=workers) if files else []
        trials: list[SimilarityTrial] = []
        similarities: list[SimilarityEntry] = []
        for path, pred in zip(files, preds, strict=True):
            trials.append({"id": path.name, "label": letter, "similarity": pred.softmax[index]})
            similarities.append(
                {
                    "id": path.name,
                    "raws": [
                        {"id": path.name, "label": lab, "softmax_prob": prob}
                        for lab, prob in zip(LETTERS, pred.softmax, strict=True)
                    ],
                    "cls_embedding": pred.embedding,
                }
            )
            report.inputs.append(path)
            log.write(f"{_rel(source, path)}: Succeeded - similarity {pred.softmax[index]}")
            bar(1)
        payload = {
            "count": len(files),
            # The official script raises ZeroDivisionError on an empty folder; 0 is what scoring uses.
            "similarityRate": sum(t["similarity"] for t in trials) / len(trials) if trials else 0.0,
            "trials": trials,
            "similarities": similarities,
            "classifier": model.identity,
        }
        out = source / team_name / "similarity" / f"{letter}.json"
        atomic_write_text(out, _dump(payload))
        report.outputs.append(out)
        report.succeeded += len(files)
    log.close()
    return report


# ----------------------------------------------------------------------------------------------
# diversity


def _vector(entry: Mapping[str, object], vector: str, where: str) -> list[float]:
    if vector == "embedding":
        emb = entry.get("cls_embedding")
        if not isinstance(emb, list) or not emb:
            raise WorldForgeError(
                f"{where}: no 'cls_embedding'; rerun the similarity stage (it stores embeddings)."
            )
        return [float(x) for x in emb]
    raws = entry.get("raws")
    if not isinstance(raws, list) or not raws:
        raise WorldForgeError(f"{where}: 'raws' softmax list missing.")
    try:
        ordered = sorted(raws, key=lambda r: str(r["label"]))
        return [float(r["softmax_prob"]) for r in ordered]
    except (KeyError, TypeError, ValueError) as exc:
        raise WorldForgeError(f"{where}: malformed 'raws' entry ({exc}).") from exc


def stage_diversity(
    source: Path, *, trials: int = 10, vector: str = "softmax", progress: Progress | None = None
) -> StageReport:
    """Write ``<team>/diversity/<C>.json`` from each similarity file (divisor ``T(T+1)/2 - T``).

    ``vector`` is ``softmax`` (2024, the seed definition) or ``embedding`` (alias ``cls``; 2025:
    the stored ``cls_embedding``).
    An unreadable similarity file is reported as a failure and skipped (its letter scores 0).
    """
    vector = {"cls": "embedding", "cls_embedding": "embedding"}.get(vector, vector)
    if vector not in VECTOR_KINDS:
        raise WorldForgeError(f"vector: expected one of {list(VECTOR_KINDS)}, got {vector!r}.")
    source = Path(source)
    bar = progress or NullProgress()
    report = StageReport(stage="diversity")
    files = [
        f
        for team in list_teams(source)
        if (team / "similarity").is_dir()
        for f in list_files(team / "similarity", ".json")
    ]
    bar.start("diversity", len(files))
    log = StageLog(source, "diversity")  # the official script's diversity_log_<time>.txt
    report.log_path = log.path
    for path in files:
        where = _rel(source, path)
        report.inputs.append(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            sims = data["similarities"]
            if not isinstance(sims, list):
                raise TypeError("'similarities' is not a list")
            count = data.get("count", len(sims))
            vectors = [(str(e.get("id", "")).split(".")[0], _vector(e, vector, where)) for e in sims]
            result = diversity(vectors, configured_trials=trials)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            report.failed += 1
            report.failures.append((where, f"unreadable similarity file: {exc}"))
            log.write(f"{where}: Failed - unreadable similarity file: {exc}")
            bar(1)
            continue
        payload = {
            "diversityRate": result.rate,
            "trials": [{"trial": tid, "vector": vec} for tid, vec in vectors],
            "diversities": [
                {"pair": {"trial1": p.trial1, "trial2": p.trial2}, "distance": p.distance}
                for p in result.pairs
            ],
            "count": count,
            "vector": vector,
        }
        out = path.parent.parent / "diversity" / path.name
        atomic_write_text(out, _dump(payload))
        report.outputs.append(out)
        report.succeeded += 1
        log.write(f"{where}: Succeeded - diversity {result.rate}")
        bar(1)
    log.close()
    return report


# ----------------------------------------------------------------------------------------------
# score


def _reject_constant(name: str) -> None:
    return None  # NaN/Infinity (Unity writes NaN for a level without blocks) -> not a number


def _load(path: Path) -> tuple[JSON, str | None]:
    if not path.is_file():
        return None, "file missing"
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant), None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"unreadable: {exc.__class__.__name__}"


def _number(value: JSON) -> float | None:
    """A JSON number (not a boolean), else ``None``."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _entries(
    data: JSON,
    list_key: str,
    id_key: str,
    value_key: str,
    program: str,
    letter: str,
    kind: str,
    missing: list[MissingInput],
) -> list[tuple[str, float]] | None:
    listed = data.get(list_key) if isinstance(data, dict) else None
    if not isinstance(listed, list):
        missing.append(
            {"program": program, "character": letter, "input": kind, "reason": f"no '{list_key}' list"}
        )
        return None
    out: list[tuple[str, float]] = []
    for entry in listed:
        ident = entry.get(id_key) if isinstance(entry, dict) else None
        value = _number(entry.get(value_key)) if isinstance(entry, dict) else None
        if isinstance(ident, str) and value is not None:
            out.append((ident, value))
        else:
            ident = entry.get(id_key) if isinstance(entry, dict) else None
            missing.append(
                {
                    "program": program,
                    "character": letter,
                    "input": kind,
                    "reason": f"entry {ident!r} has no numeric '{value_key}'",
                }
            )
    return out


def _prompt_length(team_dir: Path) -> int | None:
    """Tie-break measure from ``<team>/prompts/*.txt`` when the program's prompts are there."""
    if not (team_dir / "prompts").is_dir():
        return None
    try:
        return load_program(team_dir, name=team_dir.name).prompt_length()
    except (WorldForgeError, OSError):
        return None


def read_program(source: Path, team: str, *, characters: Sequence[str] = LETTERS) -> ProgramData:
    """Read one team's stability/similarity/diversity files; problems are listed, never fatal."""
    data = ProgramData(name=team, prompt_length=_prompt_length(source / team))
    for letter in characters:
        for kind, list_key, id_key, value_key in (
            ("stability", "raws", "tag", "score"),
            ("similarity", "trials", "id", "similarity"),
        ):
            value, reason = _load(source / team / kind / f"{letter}.json")
            if reason is not None:
                if reason != "file missing":  # missing files are listed by the scorer
                    data.missing.append(
                        {"program": team, "character": letter, "input": kind, "reason": reason}
                    )
                continue
            entries = _entries(value, list_key, id_key, value_key, team, letter, kind, data.missing)
            if entries is not None:
                (data.stability if kind == "stability" else data.similarity)[letter] = entries
        value, reason = _load(source / team / "diversity" / f"{letter}.json")
        rate = _number(value.get("diversityRate")) if isinstance(value, dict) else None
        if reason is None and rate is not None:
            data.diversity[letter] = rate
        elif reason is None:
            data.missing.append(
                {
                    "program": team,
                    "character": letter,
                    "input": "diversity",
                    "reason": "no numeric 'diversityRate'",
                }
            )
        elif reason != "file missing":
            data.missing.append(
                {"program": team, "character": letter, "input": "diversity", "reason": reason}
            )
    return data


def _classifier_identity(source: Path) -> JSONObject | None:
    """The classifier named in the similarity files (first one found), for the report."""
    for team in list_teams(source):
        folder = team / "similarity"
        for path in list_files(folder, ".json") if folder.is_dir() else []:
            value, reason = _load(path)
            named = value.get("classifier") if isinstance(value, dict) else None
            if reason is None and isinstance(named, dict):
                return dict(named)
    return None


def score_folder(
    source: Path, *, trials: int = 10, exact: bool = False, progress: Progress | None = None
) -> CompetitionScores:
    """Read every team of a competition folder and score it (no files written)."""
    source = Path(source)
    teams = list_teams(source)
    if not teams:
        raise WorldForgeError(f"{source}: no team folders to score.")
    bar = progress or NullProgress()
    bar.start(f"score {source.name}", len(teams))
    programs = []
    for team in teams:
        programs.append(read_program(source, team.name))
        bar(1)
    return score_competition(programs, trials=trials, exact=exact)


def check_score_selection(
    source: Path,
    *,
    models: Sequence[str] | None = None,
    baselines: Sequence[str] | None = None,
    zero_shot: str | None = None,
) -> None:
    """Fail fast, naming the option, when the score stage's names do not match ``source``.

    A misspelt baseline would otherwise be ranked as a competitor, and a misspelt model folder
    would only fail after the earlier models were scored and written; so every name is checked
    against the folder before anything is read or written. Messages name the command-line options
    (``--models``, ``--baselines``, ``--zero-shot``) because that is where such names come from.
    """
    source = Path(source)
    programs: set[str] = set()
    if models:
        seen: set[str] = set()
        for model in models:
            if model in seen:
                raise WorldForgeError(f"--models: {model!r} is given twice.")
            seen.add(model)
            if not model or model.startswith(".") or "/" in model or "\\" in model or model in SKIPPED_DIRS:
                raise WorldForgeError(f"--models: {model!r} is not a folder name directly under {source}.")
            folder = source / model
            if not folder.is_dir():
                raise WorldForgeError(f"--models: {folder} is not a folder.")
            teams = team_names(folder)
            if not teams:
                raise WorldForgeError(f"--models: {folder} has no team folders to score.")
            programs.update(teams)
    else:
        programs.update(team_names(source))
    checks = (
        ("--baselines", list(baselines or ())),
        ("--zero-shot", [] if zero_shot is None else [zero_shot]),
    )
    for option, names in checks:
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise WorldForgeError(f"{option}: {twice!r} is given twice.")
        for name in names:
            if name not in programs:
                where = f"the model folders {', '.join(models)}" if models else str(source)
                raise WorldForgeError(
                    f"{option}: {name!r} is not a program folder of {where} "
                    f"(programs: {', '.join(sorted(programs)) or 'none'})."
                )


def write_uncertainty(
    out_dir: Path,
    results: Mapping[str, CompetitionScores],
    ranking: Ranking,
    *,
    resamples: int,
    seed: int,
) -> tuple[UncertaintySummary | None, Path | None]:
    """Write ``out_dir/ranking_uncertainty.json`` (``resamples == 0``: remove a stale one instead).

    Returns the summary the stage report carries (file, payload digest, winner sentence or why
    there are no intervals) and the written path. A file left by an earlier scoring is removed
    when the uncertainty is off, so ``result/`` never shows intervals of other numbers.
    """
    path = out_dir / UNCERTAINTY_FILE
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise WorldForgeError(f"--uncertainty-resamples: must be a whole number >= 0, got {resamples!r}.")
    if resamples == 0:
        path.unlink(missing_ok=True)
        return None, None
    result = uncertainty_for(results, ranking, resamples=resamples, seed=seed)
    payload = result.to_dict()
    written = atomic_write_json(path, payload)
    summary: UncertaintySummary = {
        "file": f"{out_dir.name}/{UNCERTAINTY_FILE}",
        "digest": digest_payload(payload),
        "resamples": resamples,
        "seed": seed,
        "sentence": result.winner.sentence if result.winner is not None else result.reason,
    }
    return summary, written


def stage_score(
    source: Path,
    *,
    trials: int = 10,
    exact: bool = False,
    progress: Progress | None = None,
    models: Sequence[str] | None = None,
    baselines: Sequence[str] | None = None,
    zero_shot: str | None = None,
    uncertainty_resamples: int = DEFAULT_RESAMPLES,
    uncertainty_seed: int = DEFAULT_SEED,
) -> ScoreStageReport:
    """Score ``source`` and write ``source/result/`` (official files + ``report.json``/``.md``).

    With ``models`` each name is a sub-folder laid out as a competition folder; each is scored on
    its own (weights per model, files in ``<model>/result/``) and the per-model prompt scores are
    summed and normalized into ``source/result/report.json`` (2025 aggregation), whose top-level
    numbers are the aggregates (:func:`models_report_payload`). Baselines default
    to folders named ``baseline*``; the zero-shot baseline to ``baseline_zero_shot``. Names that
    do not match the folder raise :class:`WorldForgeError` first (:func:`check_score_selection`).

    ``source/result/ranking_uncertainty.json`` holds the ranking's uncertainty over all models
    (:mod:`worldforge.pcg.scoring.uncertainty`: ``uncertainty_resamples`` letter draws from
    ``uncertainty_seed``; ``0`` turns it off); the official files do not change with it.
    """
    source = Path(source)
    check_score_selection(source, models=models, baselines=baselines, zero_shot=zero_shot)
    stage = ScoreStageReport(stage="score")
    payload: ScoreReport
    if not models:
        result = score_folder(source, trials=trials, exact=exact, progress=progress)
        ranking = ranking_for(result, baselines=baselines, zero_shot=zero_shot)
        payload, written = write_results(
            source / "result", result, ranking, classifier=_classifier_identity(source)
        )
        assessed: Mapping[str, CompetitionScores] = {"": result}
    else:
        per_model: dict[str, CompetitionScores] = {}
        classifier = None
        written = []
        for model in models:
            folder = source / model
            per_model[model] = score_folder(folder, trials=trials, exact=exact, progress=progress)
            classifier = classifier or _classifier_identity(folder)
            _, files = write_results(
                folder / "result",
                per_model[model],
                ranking_for(per_model[model], baselines=baselines, zero_shot=zero_shot),
                classifier=classifier,
            )
            written.extend(files)
        multi = combine_models(per_model)
        lengths: dict[str, int | None] = {}
        for r in per_model.values():
            for name, length in r.prompt_lengths.items():
                lengths.setdefault(name, length)
        ranking = rank_programs(
            list(multi.normalized.items()), prompt_lengths=lengths, baselines=baselines, zero_shot=zero_shot
        )
        payload = models_report_payload(per_model, multi, ranking, classifier=classifier)
        payload["note"] = "weights, trial and character scores are per model (see <model>/result/)"
        written.append(atomic_write_json(source / "result" / "report.json", payload))
        written.append(atomic_write_text(source / "result" / "report.md", report_markdown(payload)))
        assessed = per_model
    stage.uncertainty, extra = write_uncertainty(
        source / "result", assessed, ranking, resamples=uncertainty_resamples, seed=uncertainty_seed
    )
    written.extend([extra] if extra is not None else [])
    stage.report = payload
    stage.outputs = written
    stage.succeeded = len(payload["programs"])
    return stage


__all__ = [
    "STAGES",
    "UNCERTAINTY_FILE",
    "check_score_selection",
    "image_files",
    "ScoreStageReport",
    "team_names",
    "read_program",
    "score_folder",
    "stage_diversity",
    "stage_score",
    "stage_similarity",
    "write_uncertainty",
]
