"""``pcg stage``: running the competition's folder stages in order and recording what they did.

The command line only parses options and prints; this module decides the plan (``all`` simulates
each level once for both physics stages), checks the score stage's program selection before hours
of work start, runs each stage, makes stage logs relative to the competition folder (never the host
layout), and records a run: the folder's file digests before and after, one item per output file,
the stage reports, and a result digest free of timestamps. ``run`` is any object with the run
workspace's ``emit``/``add_input_value``/``record_item``/``write_artifact``/``complete`` methods, so
this layer never imports the workspace. :class:`StageRequest` is one invocation as data: the run
records it, and ``runs resume`` rebuilds it to finish an interrupted stage run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from worldforge.core.canonical import JSONObject
from worldforge.core.digests import digest_file
from worldforge.core.errors import StageError, WorldForgeError
from worldforge.core.paths import portable_path
from worldforge.core.run_events import StageFinished, StageStarted
from worldforge.execution import executor_for
from worldforge.execution.local import default_workers
from worldforge.pcg.competition import scoring, stages
from worldforge.pcg.competition.records import StageRecord
from worldforge.pcg.competition.stages import Progress, StageReport, list_teams

if TYPE_CHECKING:
    from worldforge.workspace import Run

STAGE_NAMES = ("extract", "convert", "stability", "images", "similarity", "diversity", "score", "all")
ALL_ORDER = ("extract", "convert", "stability", "images", "similarity", "diversity", "score")
#: ``all`` runs the physics stages as one: each level is simulated once for stability and images.
ALL_PLAN = ("extract", "convert", "physics", "similarity", "diversity", "score")
#: Score-stage options that join the run config only when given (defaults leave it as it was).
UNCERTAINTY_OPTIONS = ("uncertainty_resamples", "uncertainty_seed")
#: The run kind a stage records; ``runs resume`` answers it with a :class:`StageRequest`.
STAGE_KIND = "pcg-stage"


class ScoreSelection(TypedDict, total=False):
    """The score stage's program selection: only the options given (each is optional)."""

    models: list[str]
    baselines: list[str]
    zero_shot: str


class UncertaintyOptions(TypedDict, total=False):
    """``--uncertainty-resamples`` / ``--uncertainty-seed``: only the options given."""

    uncertainty_resamples: int
    uncertainty_seed: int


class StageOptions(ScoreSelection, UncertaintyOptions):
    """What the stages of one invocation run with (:func:`prepare_stage`): the request's settings,
    the score selection and interval options given, and, when levels run on an executor, the
    executor and where to report each level's node (added by :func:`run_stages`)."""

    workers: int
    physics_trials: int
    raw_images: bool
    classifier: str | None
    trials: int
    diversity_vector: str
    exact: bool
    executor: NotRequired[Executor]
    on_node: NotRequired[Callable[[str, str], None]]


@dataclass(frozen=True)
class StageRequest:
    """One ``pcg stage`` invocation, as the command line's options give it.

    Paths are kept as given (a relative ``source`` is relative to where the command ran), so the
    same request resumes from that directory with the same run configuration. ``workers``,
    ``executor`` and ``ray_address`` say where levels run, never what comes out: they stay out of
    the run configuration (see :func:`prepare_stage`).
    """

    stage: str
    source: str
    workers: int | None = None
    physics_trials: int = 1
    raw_images: bool = False
    classifier: str | None = None
    trials: int = 10
    diversity_vector: str = "softmax"
    exact: bool = False
    models: Sequence[str] | None = None
    baselines: Sequence[str] | None = None
    zero_shot: str | None = None
    uncertainty_resamples: int | None = None
    uncertainty_seed: int | None = None
    executor: str = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:  # name lists as tuples: equal requests compare equal
        for name in ("models", "baselines"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise WorldForgeError(f"pcg stage request: {name!r} must be a list of names.")
            if value is not None:
                object.__setattr__(self, name, tuple(value))

    def to_record(self) -> JSONObject:
        """The request as JSON (what a run records)."""
        out: JSONObject = dataclasses.asdict(self)
        out["models"] = [*self.models] if self.models is not None else None
        out["baselines"] = [*self.baselines] if self.baselines is not None else None
        return out

    @classmethod
    def from_record(cls, data: object) -> StageRequest:
        """The request :meth:`to_record` wrote; ``WorldForgeError`` for any other shape."""
        if not isinstance(data, Mapping):
            raise WorldForgeError("pcg stage request: not an object.")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise WorldForgeError(f"pcg stage request: unknown keys {', '.join(unknown)}.")
        values: dict[str, Any] = {}
        for name, value in data.items():
            kind = _RECORD_TYPES[name]
            if value is None and name not in _REQUIRED:
                values[name] = None
            elif kind is list:
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise WorldForgeError(f"pcg stage request: {name!r} must be a list of names.")
                values[name] = tuple(value)
            elif isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
                values[name] = value
            else:
                raise WorldForgeError(f"pcg stage request: {name!r} must be of type {kind.__name__}.")
        missing = sorted(_REQUIRED - set(values))
        if missing:
            raise WorldForgeError(f"pcg stage request: missing {', '.join(missing)}.")
        return cls(**values)


_RECORD_TYPES: dict[str, type] = {
    "stage": str, "source": str, "workers": int, "physics_trials": int, "raw_images": bool,
    "classifier": str, "trials": int, "diversity_vector": str, "exact": bool, "models": list,
    "baselines": list, "zero_shot": str, "uncertainty_resamples": int, "uncertainty_seed": int,
    "executor": str, "ray_address": str,
}  # fmt: skip
_REQUIRED = frozenset({"stage", "source", "physics_trials", "raw_images", "trials", "diversity_vector",
                       "exact", "executor"})  # fmt: skip


def run_stage(name: str, source: Path, opts: StageOptions, progress: Progress) -> list[StageRecord]:
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
    out: StageReport
    if name == "similarity":
        out = scoring.stage_similarity(
            source, classifier=opts["classifier"], workers=opts["workers"], progress=progress
        )
    elif name == "diversity":
        out = scoring.stage_diversity(
            source, trials=opts["trials"], vector=opts["diversity_vector"], progress=progress
        )
    elif name == "score":
        uncertainty: UncertaintyOptions = {}
        if "uncertainty_resamples" in opts:
            uncertainty["uncertainty_resamples"] = opts["uncertainty_resamples"]
        if "uncertainty_seed" in opts:
            uncertainty["uncertainty_seed"] = opts["uncertainty_seed"]
        out = scoring.stage_score(
            source,
            trials=opts["trials"],
            exact=opts["exact"],
            progress=progress,
            models=opts.get("models"),
            baselines=opts.get("baselines"),
            zero_shot=opts.get("zero_shot"),
            **uncertainty,
        )
    else:
        raise StageError(f"unknown stage {name!r}.")
    return [out.to_dict()]


def source_relative_logs(reports: Sequence[StageRecord], source: Path) -> list[StageRecord]:
    """Stage reports with ``log`` relative to the competition folder (``logs/<stage>_log_<stamp>.txt``).

    Stage libraries return the log as the absolute path they wrote, which would put the host's
    directory layout into stdout and the run record; relative to ``--source`` it names the same file
    wherever the folder lives.
    """
    base = source.resolve()
    out: list[StageRecord] = []
    for report in reports:
        log = report.get("log")
        if isinstance(log, str) and log:
            try:
                log = Path(log).resolve().relative_to(base).as_posix()
            except ValueError:
                log = portable_path(log)
        out.append({**report, "log": log} if "log" in report else report.copy())
    return out


def digested_stages(reports: Sequence[StageRecord]) -> list[StageRecord]:
    """Stage reports without ``log``: its file name carries the wall-clock time the stage started,
    and timestamps must stay out of the result digest (identical stages, identical digests)."""
    digested: list[StageRecord] = []
    for report in reports:
        entry = report.copy()
        entry.pop("log", None)
        digested.append(entry)
    return digested


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
) -> ScoreSelection:
    """The score stage's program selection, checked before any stage runs (``all`` takes hours).

    ``models`` only fits the score stage: the earlier stages would read the model folders as teams.
    Names are checked against the folder by the same rule the score stage applies.
    """
    selection: ScoreSelection = {}
    if models is not None:
        selection["models"] = models
    if baselines is not None:
        selection["baselines"] = baselines
    if zero_shot is not None:
        selection["zero_shot"] = zero_shot
    for key in selection:
        allowed = ("score",) if key == "models" else ("score", "all")
        if stage not in allowed:
            option = "--" + key.replace("_", "-")
            raise WorldForgeError(f"{option}: only the {' or '.join(allowed)} stage takes it, not {stage!r}.")
    if selection:
        scoring.check_score_selection(source, **selection)
    return selection


def uncertainty_options(stage: str, resamples: int | None, seed: int | None) -> UncertaintyOptions:
    """``--uncertainty-resamples`` / ``--uncertainty-seed`` as given, checked against the stage.

    Only the options given are returned, so a run config without them (and its digest) stays
    what it was before they existed; the score stage then applies its defaults.
    """
    for key, value in (("uncertainty_resamples", resamples), ("uncertainty_seed", seed)):
        if value is None:
            continue
        option = "--" + key.replace("_", "-")
        if stage not in ("score", "all"):
            raise WorldForgeError(f"{option}: only the score or all stage takes it, not {stage!r}.")
        if value < 0 or (key == "uncertainty_seed" and value >= 2**63):
            raise WorldForgeError(f"{option}: must be a whole number >= 0 (and below 2**63), got {value}.")
    chosen: UncertaintyOptions = {}
    if resamples is not None:
        chosen["uncertainty_resamples"] = resamples
    if seed is not None:
        chosen["uncertainty_seed"] = seed
    return chosen


def prepare_stage(request: StageRequest) -> tuple[StageOptions, dict[str, object]]:
    """The stage options and the run configuration of ``request``, every check done before any
    stage runs (an unknown stage first, then the folder, then the score selection).

    Only options given join the configuration: the configuration (and its digest) of an invocation
    without them stays what it was before these options existed; ``workers`` never joins it.
    """
    plan_for(request.stage)
    source = Path(request.source)
    if not source.is_dir():
        raise WorldForgeError(f"{source}: source folder does not exist.")
    opts: StageOptions = {
        "workers": request.workers or default_workers(),
        "physics_trials": request.physics_trials,
        "raw_images": request.raw_images,
        "classifier": request.classifier,
        "trials": request.trials,
        "diversity_vector": request.diversity_vector,
        "exact": request.exact,
    }
    models = list(request.models) if request.models is not None else None
    baselines = list(request.baselines) if request.baselines is not None else None
    opts.update(score_selection(request.stage, source, models, baselines, request.zero_shot))
    opts.update(uncertainty_options(request.stage, request.uncertainty_resamples, request.uncertainty_seed))
    config = {k: v for k, v in opts.items() if k != "workers"} | {"stage": request.stage}
    return opts, config


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
    opts: StageOptions,
    progress: Progress,
    run: Run | None = None,
    executor: Executor | None = None,
) -> list[StageRecord]:
    """Run ``stage`` (or ``all``) over ``source``; record it in ``run`` when given. Levels are
    simulated on ``executor`` when given (else each stage starts a local pool). Returns the stage
    reports with logs relative to ``source``."""
    plan = plan_for(stage)
    if executor is not None:
        opts = {**opts, "executor": executor}
        if run is not None:  # which node simulated each level: informational, outside every digest
            recording = run
            opts["on_node"] = lambda level, node: recording.emit("level.node", {"level": level, "node": node})
    if run is not None:  # the folder's state before the stage: every file's digest
        run.add_input_value("source-files", stage_outputs(source))
    results: list[StageRecord] = []
    for name in plan:
        if run is not None:
            run.emit_event(StageStarted(stage=name))
        results.extend(source_relative_logs(run_stage(name, source, opts, progress), source))
        if run is not None:
            run.emit_event(StageFinished(stage=name))
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
    "STAGE_KIND",
    "STAGE_NAMES",
    "UNCERTAINTY_OPTIONS",
    "ScoreSelection",
    "StageOptions",
    "StageRequest",
    "UncertaintyOptions",
    "digested_stages",
    "plan_for",
    "prepare_stage",
    "run_stage",
    "run_stages",
    "score_selection",
    "source_relative_logs",
    "stage_executor",
    "stage_outputs",
    "uncertainty_options",
]
