"""Running an evaluation end to end: the service ``worldforge eval`` calls.

The command line parses flags and prints; everything a run *is* lives here: which suite options are
paths (recorded relative to the working directory so a rerun reproduces the input digest), the
capability gate before a run exists, what a recorded run writes (every report format, the failure
gallery, the suite's extra artifacts, ``results/summary.json``), how ``--suite-option KEY=VALUE``
pairs join the options (:mod:`worldforge.evaluation.options`) and how ``--replay`` is attached.
Python users call :func:`evaluate` with an :class:`EvaluationRequest` and get the same run, files and
digests as the command line. A recorded run keeps its request (:meth:`EvaluationRequest.to_record`,
outside every digest), and ``runs resume`` rebuilds it with :meth:`EvaluationRequest.from_record`
and calls :func:`evaluate` again with the run's id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypedDict

from worldforge.core.canonical import JSONObject, pretty_json, to_json_native
from worldforge.core.errors import WorldForgeError
from worldforge.core.paths import cwd_relative
from worldforge.evaluation.options import declared_options, merge_suite_options, parse_suite_options
from worldforge.evaluation.report import EvaluationReport
from worldforge.evaluation.suite import EvaluationSuite, result_payload
from worldforge.evaluation.summary import SUMMARY_PATH, EvaluationSummary, GenerationStopped, stopped_reason
from worldforge.forge import WorldForge
from worldforge.gateway import open_replay
from worldforge.reports import EXTENSIONS, MEDIA_TYPES
from worldforge.workspace import Run, optional_run

#: Suite options whose values may be local paths (a classifier checkpoint, program folders).
PATH_OPTIONS = ("classifier", "programs", "field")
#: The run kind an evaluation records; ``runs resume`` answers it with :func:`evaluate`.
EVALUATION_KIND = "evaluation"
_RECORD_KEYS = ("suite", "providers", "options", "suite_options", "dataset_manifests", "replay")


def _names(data: Mapping[str, object], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise WorldForgeError(f"evaluation request: {key!r} must be a list of strings.")
    return tuple(value)


class EvaluationRequestRecord(TypedDict):
    """:meth:`EvaluationRequest.to_record`: the request as a run records it."""

    suite: str
    providers: list[str]
    options: JSONObject
    suite_options: list[str]
    dataset_manifests: list[str]
    replay: str | None


class RunConfig(TypedDict):
    """:func:`run_config`: an evaluation run's configuration (digested with its inputs)."""

    suite: str
    providers: list[str]
    options: dict[str, object]
    dataset_manifests: list[str]


@dataclass(frozen=True)
class EvaluationRequest:
    """One evaluation: a suite against providers, optionally recorded in a run workspace."""

    suite: str
    providers: Sequence[str] = ("mock",)
    options: Mapping[str, object] = field(default_factory=dict)
    #: ``KEY=VALUE`` pairs checked against the options the suite declares, joined to ``options``.
    suite_options: Sequence[str] = ()
    dataset_manifests: Sequence[str] = ()
    workspace: Path | None = None
    resume_run: str | None = None
    replay: str | None = None
    #: The command line recorded in the run and named in the report's provenance.
    argv: Sequence[str] = ()

    def __post_init__(self) -> None:  # sequences as tuples: equal requests compare equal
        for name in ("providers", "suite_options", "dataset_manifests", "argv"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise WorldForgeError(f"evaluation request: {name!r} must be a sequence of strings.")
            object.__setattr__(self, name, tuple(value))

    def to_record(self) -> EvaluationRequestRecord:
        """What the run records (JSON): what to evaluate, not where or how the run is recorded
        (``workspace``, ``resume_run`` and ``argv`` come from the run when it is resumed)."""
        return {
            "suite": self.suite,
            "providers": list(self.providers),
            "options": to_json_native(dict(self.options)),
            "suite_options": list(self.suite_options),
            "dataset_manifests": list(self.dataset_manifests),
            "replay": self.replay,
        }

    @classmethod
    def from_record(
        cls,
        data: object,
        *,
        workspace: Path | None = None,
        resume_run: str | None = None,
        argv: Sequence[str] = (),
    ) -> EvaluationRequest:
        """The request :meth:`to_record` wrote, recorded in ``workspace``; ``WorldForgeError`` for
        any other shape (a hand-edited or foreign file)."""
        if not isinstance(data, Mapping):
            raise WorldForgeError("evaluation request: not an object.")
        unknown = sorted(set(data) - set(_RECORD_KEYS))
        if unknown:
            raise WorldForgeError(f"evaluation request: unknown keys {', '.join(unknown)}.")
        suite, options, replay = data.get("suite"), data.get("options", {}), data.get("replay")
        if not isinstance(suite, str) or not suite:
            raise WorldForgeError("evaluation request: 'suite' must be a non-empty string.")
        if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
            raise WorldForgeError("evaluation request: 'options' must be an object.")
        if replay is not None and not isinstance(replay, str):
            raise WorldForgeError("evaluation request: 'replay' must be a run id or null.")
        return cls(
            suite=suite,
            providers=_names(data, "providers"),
            options=dict(options),
            suite_options=_names(data, "suite_options"),
            dataset_manifests=_names(data, "dataset_manifests"),
            workspace=workspace,
            resume_run=resume_run,
            replay=replay,
            argv=tuple(argv),
        )


@dataclass(frozen=True)
class EvaluationOutcome:
    """The report, and where a recorded run put it (``None`` without a workspace)."""

    report: EvaluationReport
    run_id: str | None = None
    html_path: Path | None = None


def cwd_relative_paths(options: Mapping[str, object]) -> dict[str, object]:
    """Absolute path options naming something inside the current directory, made relative to it.

    The options are part of the input digest and come back as flags in the failure gallery's rerun
    command, which is recorded relative to the current directory (the sanitizer strips it). Passing
    the relative form to the suite as well means the rerun reproduces the input digest, and a report
    does not depend on whether ``--classifier`` was typed as ``model`` or ``$PWD/model``.
    """

    def relative(value: object) -> object:
        if isinstance(value, str) and Path(value).is_absolute() and Path(value).exists():
            return cwd_relative(value) or value
        return value

    out = dict(options)
    for key in PATH_OPTIONS:
        value = out.get(key)
        if isinstance(value, list):
            out[key] = [relative(v) for v in value]
        elif key in out:
            out[key] = relative(value)
    return out


def request_options(request: EvaluationRequest) -> dict[str, object]:
    """The request's options with its ``--suite-option`` pairs joined, path options made relative."""
    extra = (
        parse_suite_options(declared_options(request.suite), request.suite_options, suite=request.suite)
        if request.suite_options
        else {}
    )
    return cwd_relative_paths(merge_suite_options(request.options, extra))


def write_run_artifacts(run: Run, report: EvaluationReport) -> Path:
    """Every report format, the failure gallery, the suite's extra artifacts and the summary; then
    complete the run, unless its generation stopped early (``GenerationStopped``, after the files
    are written: the run stays resumable). Returns the HTML report's path."""
    artifacts = report.artifacts()
    for fmt in ("json", "markdown", "csv", "html"):
        run.write_artifact(f"reports/report.{EXTENSIONS[fmt]}", artifacts[fmt], MEDIA_TYPES[fmt])
    run.write_artifact("reports/failure_gallery.json", artifacts["failure_gallery.json"], "application/json")
    run.write_artifact("reports/failure_gallery.md", artifacts["failure_gallery.md"], "text/markdown")
    for relpath, blob in sorted(report.extra_artifacts.items()):
        run.write_artifact(relpath, blob)
    summary = EvaluationSummary.from_report(report)
    run.write_artifact(SUMMARY_PATH, pretty_json(summary.to_dict()), "application/json")
    stopped = stopped_reason(report)
    if stopped is not None:  # the reports say why; the run stays resumable (``failed``)
        raise GenerationStopped(f"run {run.run_id} stopped: {stopped}")
    run.complete(result_payload(report), claim_boundary=report.claim_boundary)
    return Path(run.dir) / "reports" / "report.html"


def run_config(request: EvaluationRequest, options: Mapping[str, object]) -> RunConfig:
    """What a run records as its configuration (and digests as part of its inputs)."""
    return {
        "suite": request.suite,
        "providers": list(request.providers),
        "options": dict(options),
        "dataset_manifests": list(request.dataset_manifests),
    }


def evaluate(request: EvaluationRequest, *, forge: WorldForge | None = None) -> EvaluationOutcome:
    """Resolve the suite, gate provider capabilities, run it and (with a workspace) record the run."""
    providers = list(request.providers) or ["mock"]
    options = request_options(request)
    suite = EvaluationSuite.from_reference(request.suite, dict(options) or None)
    replay = None
    if request.replay is not None:  # the run records the options without it: the same inputs
        suite.check_replayable()
        replay = open_replay(request.workspace, request.replay)
    manifests = [str(p) for p in request.dataset_manifests]
    forge = forge or WorldForge(provider_options=options)  # providers built once, with the run's options
    suite.check_providers(providers, forge)  # capability gate before a run is even created
    argv = list(request.argv)
    config = run_config(request, options)
    # Recorded as the suite received it (options joined and made relative), so a resume from the
    # start directory rebuilds this very configuration.
    recorded = replace(request, options=options, suite_options=()).to_record()
    html_path: Path | None = None
    with optional_run(
        request.workspace, EVALUATION_KIND, argv, config, request.resume_run, request=recorded
    ) as run:
        if run is not None:
            forge.add_event_sink(run.event_sink)  # provider events -> the run's events.jsonl
        report = suite.run_report(
            providers,
            forge=forge,
            dataset_manifests=manifests,
            run=run,
            command=argv or None,
            replay=replay,
        )
        if run is not None:
            html_path = write_run_artifacts(run, report)
    return EvaluationOutcome(
        report=report, run_id=run.run_id if run is not None else None, html_path=html_path
    )


__all__ = [
    "EVALUATION_KIND",
    "PATH_OPTIONS",
    "EvaluationOutcome",
    "EvaluationRequest",
    "EvaluationRequestRecord",
    "RunConfig",
    "cwd_relative_paths",
    "evaluate",
    "request_options",
    "run_config",
    "write_run_artifacts",
]
