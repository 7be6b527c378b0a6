"""Running an evaluation end to end: the service ``worldforge eval`` calls.

The command line parses flags and prints; everything a run *is* lives here: which suite options are
paths (recorded relative to the working directory so a rerun reproduces the input digest), the
capability gate before a run exists, what a recorded run writes (every report format, the failure
gallery, the suite's extra artifacts, ``results/summary.json``) and how ``--replay`` is attached.
Python users call :func:`evaluate` with an :class:`EvaluationRequest` and get the same run, files and
digests as the command line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worldforge.core.canonical import pretty_json
from worldforge.core.errors import WorldForgeError
from worldforge.core.paths import cwd_relative
from worldforge.evaluation.report import EvaluationReport
from worldforge.evaluation.suite import EvaluationSuite, result_payload
from worldforge.forge import WorldForge
from worldforge.gateway import open_replay
from worldforge.reports import EXTENSIONS, MEDIA_TYPES
from worldforge.workspace import Run, optional_run

#: Suite options whose values may be local paths (a classifier checkpoint, program folders).
PATH_OPTIONS = ("classifier", "programs", "field")
#: Suites whose model exchanges are recorded, and so can be replayed.
REPLAYABLE_SUITES = ("science-birds",)
SUMMARY_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class EvaluationRequest:
    """One evaluation: a suite against providers, optionally recorded in a run workspace."""

    suite: str
    providers: Sequence[str] = ("mock",)
    options: Mapping[str, Any] = field(default_factory=dict)
    dataset_manifests: Sequence[str] = ()
    workspace: Path | None = None
    resume_run: str | None = None
    replay: str | None = None
    #: The command line recorded in the run (re-invoked by ``runs resume``) and in rerun hints.
    argv: Sequence[str] = ()


@dataclass(frozen=True)
class EvaluationOutcome:
    """The report, and where a recorded run put it (``None`` without a workspace)."""

    report: EvaluationReport
    run_id: str | None = None
    html_path: Path | None = None


def cwd_relative_paths(options: Mapping[str, Any]) -> dict[str, Any]:
    """Absolute path options naming something inside the current directory, made relative to it.

    The options are part of the input digest and come back as flags in the failure gallery's rerun
    command, which is recorded relative to the current directory (the sanitizer strips it). Passing
    the relative form to the suite as well means the rerun reproduces the input digest, and a report
    does not depend on whether ``--classifier`` was typed as ``model`` or ``$PWD/model``.
    """

    def relative(value: Any) -> Any:
        if isinstance(value, str) and Path(value).is_absolute() and Path(value).exists():
            return cwd_relative(value) or value
        return value

    out = dict(options)
    for key in PATH_OPTIONS:
        if isinstance(out.get(key), list):
            out[key] = [relative(v) for v in out[key]]
        elif key in out:
            out[key] = relative(out[key])
    return out


def with_replay(
    options: Mapping[str, Any], replay: str | None, suite: str, workspace: Path | None
) -> dict[str, Any] | None:
    """The suite's options plus the recorded run ``--replay`` answers from. The run's own config
    keeps the options without it, so a replay has the same inputs as the run it replays."""
    if replay is None:
        return dict(options) or None
    if suite not in REPLAYABLE_SUITES:
        raise WorldForgeError(
            f"--replay: only science-birds evaluations record model exchanges, not {suite!r}."
        )
    return {**options, "replay": open_replay(workspace, replay)}


def summary_payload(report: EvaluationReport) -> dict[str, Any]:
    """``results/summary.json``: counts and digests only (no run id, no timestamps), so identical
    reruns produce byte-identical summaries."""
    prov = report.provenance
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "suite_id": report.suite_id,
        "suite": report.suite,
        "suite_version": report.suite_version,
        "providers": [s.provider for s in report.provider_summaries],
        "passed": report.passed,
        "result_count": len(report.results),
        "passed_count": sum(1 for r in report.results if r.passed),
        "failed_count": len(report.failed_results),
        "provider_summaries": [s.to_dict() for s in report.provider_summaries],
        "input_digest": prov.input_digest if prov else None,
        "result_digest": prov.result_digest if prov else None,
        "event_count": prov.event_count if prov else 0,
        "claim_boundary": report.claim_boundary,
    }


def write_run_artifacts(run: Run, report: EvaluationReport) -> Path:
    """Every report format, the failure gallery, the suite's extra artifacts and the summary; then
    complete the run. Returns the HTML report's path."""
    artifacts = report.artifacts()
    for fmt in ("json", "markdown", "csv", "html"):
        run.write_artifact(f"reports/report.{EXTENSIONS[fmt]}", artifacts[fmt], MEDIA_TYPES[fmt])
    run.write_artifact("reports/failure_gallery.json", artifacts["failure_gallery.json"], "application/json")
    run.write_artifact("reports/failure_gallery.md", artifacts["failure_gallery.md"], "text/markdown")
    for relpath, blob in sorted(report.extra_artifacts.items()):
        run.write_artifact(relpath, blob)
    run.write_artifact("results/summary.json", pretty_json(summary_payload(report)), "application/json")
    run.complete(result_payload(report), claim_boundary=report.claim_boundary)
    return Path(run.dir) / "reports" / "report.html"


def run_config(request: EvaluationRequest, options: Mapping[str, Any]) -> dict[str, Any]:
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
    options = cwd_relative_paths(request.options)
    suite = EvaluationSuite.from_reference(
        request.suite, with_replay(options, request.replay, request.suite, request.workspace)
    )
    manifests = [str(p) for p in request.dataset_manifests]
    forge = forge or WorldForge()
    suite.check_providers(providers, forge)  # capability gate before a run is even created
    argv = list(request.argv)
    config = run_config(request, options)
    html_path: Path | None = None
    with optional_run(request.workspace, "evaluation", argv, config, request.resume_run) as run:
        if run is not None:
            forge.add_event_sink(run.event_sink)  # provider events -> the run's events.jsonl
        report = suite.run_report(
            providers, forge=forge, dataset_manifests=manifests, run=run, command=argv or None
        )
        if run is not None:
            html_path = write_run_artifacts(run, report)
    return EvaluationOutcome(
        report=report, run_id=run.run_id if run is not None else None, html_path=html_path
    )


__all__ = [
    "PATH_OPTIONS",
    "REPLAYABLE_SUITES",
    "SUMMARY_SCHEMA_VERSION",
    "EvaluationOutcome",
    "EvaluationRequest",
    "cwd_relative_paths",
    "evaluate",
    "run_config",
    "summary_payload",
    "with_replay",
    "write_run_artifacts",
]
