"""``pcg stage``: running the competition's folder stages in order and recording what they did.

The command line only parses options and prints; this module decides the plan (``all`` simulates
each level once for both physics stages), checks the score stage's program selection before hours
of work start, runs each stage, makes stage logs relative to the competition folder (never the host
layout), and records a run: the folder's file digests before and after, one item per output file,
the stage reports, and a result digest free of timestamps. ``run`` is any object with the run
workspace's ``emit``/``add_input_value``/``record_item``/``write_artifact``/``complete`` methods, so
this layer never imports the workspace.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worldforge.core.digests import digest_file
from worldforge.core.errors import StageError, WorldForgeError
from worldforge.core.paths import portable_path
from worldforge.execution import executor_for
from worldforge.execution.local import default_workers
from worldforge.pcg.competition import scoring, stages
from worldforge.pcg.competition.stages import Progress, list_teams

if TYPE_CHECKING:
    from worldforge.workspace import Run

STAGE_NAMES = ("extract", "convert", "stability", "images", "similarity", "diversity", "score", "all")
ALL_ORDER = ("extract", "convert", "stability", "images", "similarity", "diversity", "score")
#: ``all`` runs the physics stages as one: each level is simulated once for stability and images.
ALL_PLAN = ("extract", "convert", "physics", "similarity", "diversity", "score")


def _report_dict(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, (dict, list, str, int, float, bool)) or value is None:
        return value
    return str(value)


def run_stage(name: str, source: Path, opts: Mapping[str, Any], progress: Progress) -> list[dict[str, Any]]:
    """One stage over the folder; its report(s) as JSON-native dicts."""
    if name == "extract":
        return [stages.stage_extract(source, progress=progress).to_dict()]
    if name == "convert":
        return [stages.stage_convert(source, progress=progress).to_dict()]
    if name in ("stability", "images", "physics"):
        reports = stages.stage_physics(
            source,
            stability=name in ("stability", "physics"),
            images=name in ("images", "physics"),
            workers=opts["workers"],
            trials=opts["physics_trials"],
            raw_images=opts["raw_images"],
            progress=progress,
            executor=opts.get("executor"),
            on_node=opts.get("on_node"),
        )
        return [r.to_dict() for r in reports]
    out: Any
    if name == "similarity":
        out = scoring.stage_similarity(
            source, classifier=opts["classifier"], workers=opts["workers"], progress=progress
        )
    elif name == "diversity":
        out = scoring.stage_diversity(
            source, trials=opts["trials"], vector=opts["diversity_vector"], progress=progress
        )
    elif name == "score":
        out = scoring.stage_score(
            source,
            trials=opts["trials"],
            exact=opts["exact"],
            progress=progress,
            models=opts.get("models"),
            baselines=opts.get("baselines"),
            zero_shot=opts.get("zero_shot"),
        )
    else:
        raise StageError(f"unknown stage {name!r}.")
    report = _report_dict(out)
    if isinstance(report, dict) and "stage" in report:
        return [report]
    return [{"stage": name, "result": report}]


def source_relative_logs(reports: Sequence[Mapping[str, Any]], source: Path) -> list[dict[str, Any]]:
    """Stage reports with ``log`` relative to the competition folder (``logs/<stage>_log_<stamp>.txt``).

    Stage libraries return the log as the absolute path they wrote, which would put the host's
    directory layout into stdout and the run record; relative to ``--source`` it names the same file
    wherever the folder lives.
    """
    base = source.resolve()
    out: list[dict[str, Any]] = []
    for report in reports:
        log = report.get("log")
        if isinstance(log, str) and log:
            try:
                log = Path(log).resolve().relative_to(base).as_posix()
            except ValueError:
                log = portable_path(log)
        out.append({**report, "log": log} if "log" in report else dict(report))
    return out


def digested_stages(reports: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Stage reports without ``log``: its file name carries the wall-clock time the stage started,
    and timestamps must stay out of the result digest (identical stages, identical digests)."""
    return [{k: v for k, v in report.items() if k != "log"} for report in reports]


def stage_outputs(source: Path) -> dict[str, str]:
    """Digest of every file under the team stage folders (not logs), keyed by relative path."""
    outputs: dict[str, str] = {}
    for team in list_teams(source):
        for path in sorted(team.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                outputs[path.relative_to(source).as_posix()] = digest_file(path)
    return outputs


def score_selection(
    stage: str,
    source: Path,
    models: list[str] | None,
    baselines: list[str] | None,
    zero_shot: str | None,
) -> dict[str, Any]:
    """The score stage's program selection, checked before any stage runs (``all`` takes hours).

    ``models`` only fits the score stage: the earlier stages would read the model folders as teams.
    Names are checked against the folder by the same rule the score stage applies.
    """
    given = {"models": models, "baselines": baselines, "zero_shot": zero_shot}
    selection: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
    for key in selection:
        allowed = ("score",) if key == "models" else ("score", "all")
        if stage not in allowed:
            option = "--" + key.replace("_", "-")
            raise WorldForgeError(f"{option}: only the {' or '.join(allowed)} stage takes it, not {stage!r}.")
    if selection:
        scoring.check_score_selection(source, **selection)
    return selection


def plan_for(stage: str) -> list[str]:
    """The stages ``stage`` runs, in order (``WorldForgeError`` for an unknown name)."""
    if stage not in STAGE_NAMES:
        raise WorldForgeError(f"stage must be one of {', '.join(STAGE_NAMES)}; got {stage!r}.")
    return list(ALL_PLAN) if stage == "all" else [stage]


@contextlib.contextmanager
def stage_executor(name: str, address: str | None, workers: int | None) -> Iterator[Executor | None]:
    """``None`` for ``local`` (each stage starts its own pool), a connected Ray executor for ``ray``.

    Neither enters the run config: where levels run does not change a single output byte."""
    pool = executor_for(name, workers or default_workers(), address, local_pool=False)
    try:
        yield pool
    finally:
        if pool is not None:
            pool.shutdown()


def run_stages(
    stage: str,
    source: Path,
    opts: Mapping[str, Any],
    progress: Progress,
    run: Run | None = None,
    executor: Executor | None = None,
) -> list[dict[str, Any]]:
    """Run ``stage`` (or ``all``) over ``source``; record it in ``run`` when given. Levels are
    simulated on ``executor`` when given (else each stage starts a local pool). Returns the stage
    reports with logs relative to ``source``."""
    plan = plan_for(stage)
    if executor is not None:
        opts = {**opts, "executor": executor}
        if run is not None:  # which node simulated each level: informational, outside every digest
            opts["on_node"] = lambda level, node: run.emit("level.node", {"level": level, "node": node})
    if run is not None:  # the folder's state before the stage: every file's digest
        run.add_input_value("source-files", stage_outputs(source))
    results: list[dict[str, Any]] = []
    for name in plan:
        if run is not None:
            run.emit("stage.started", {"stage": name})
        results.extend(source_relative_logs(run_stage(name, source, opts, progress), source))
        if run is not None:
            run.emit("stage.finished", {"stage": name})
    if run is not None:
        outputs = stage_outputs(source)
        for rel, digest in outputs.items():
            run.record_item(rel, digest, {"path": rel, "digest": digest})
        run.write_artifact("reports/report.json", json.dumps(results, indent=2, default=str) + "\n")
        run.complete({"stages": digested_stages(results), "outputs": outputs})
    return results


__all__ = [
    "ALL_ORDER",
    "ALL_PLAN",
    "STAGE_NAMES",
    "digested_stages",
    "plan_for",
    "run_stage",
    "run_stages",
    "score_selection",
    "source_relative_logs",
    "stage_executor",
    "stage_outputs",
]
