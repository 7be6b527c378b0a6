"""Sealing: a suite's outcome becomes a report with digests, provenance and a failure gallery.

This is the only place an evaluation report is assembled, for every suite: the input digest covers
what the suite declared through :meth:`~worldforge.evaluation.contract.SuiteRun.record_inputs`, the
result digest covers the results and sections (:func:`results_payload`, the same payload a run
completes with), and timestamps stay out of both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypedDict

from worldforge import __version__
from worldforge.core.canonical import JSONObject
from worldforge.core.digests import digest_payload
from worldforge.core.run_events import SuiteFinished
from worldforge.core.timeutil import utc_now_iso
from worldforge.evaluation.contract import SuiteOutcome, SuiteRun
from worldforge.evaluation.gallery import build_cases
from worldforge.evaluation.provenance import ProvenanceEnvelope
from worldforge.evaluation.report import EvaluationReport
from worldforge.evaluation.types import EvaluationResult
from worldforge.reports.payload import ReportResult


class SealedSuite(Protocol):
    """What sealing reads from a suite (an :class:`~worldforge.evaluation.suite.EvaluationSuite`)."""

    suite_id: str
    name: str
    suite_version: str
    claim_boundary: str
    metric_semantics: str
    expected_notes: dict[str, str]
    cli_ref: str | None

    @property
    def options(self) -> Mapping[str, object]: ...

    @property
    def required_capabilities(self) -> list[str]: ...


class ResultsPayload(TypedDict):
    """:func:`results_payload`: what a run completes with and ``result_digest`` covers."""

    results: list[ReportResult]
    sections: JSONObject


def results_payload(results: Sequence[EvaluationResult], sections: JSONObject) -> ResultsPayload:
    """What ``result_digest`` covers: the results and the report sections (no timestamps)."""
    return {"results": [r.to_dict() for r in results], "sections": dict(sections)}


def _recorded_command(command: Sequence[str] | None, context: SuiteRun) -> list[str]:
    """The command provenance names: the caller's, else the argv the run recorded."""
    if command is not None:
        return list(command)
    if context.run is None:
        return []
    return list(context.run.record.argv)


def seal_report(
    suite: SealedSuite,
    context: SuiteRun,
    outcome: SuiteOutcome,
    *,
    command: Sequence[str] | None = None,
    notes: str | None = None,
) -> EvaluationReport:
    """The report for ``outcome``: digests, provenance envelope and failure gallery, and (with a
    run) the ``suite.finished`` event carrying the result digest."""
    results = list(outcome.results)
    sections = dict(outcome.sections)
    result_digest = digest_payload(results_payload(results, sections))
    claim_boundary = outcome.claim_boundary or suite.claim_boundary
    provenance = ProvenanceEnvelope(
        kind="evaluation",
        suite_id=suite.suite_id,
        suite_version=suite.suite_version,
        worldforge_version=__version__,
        created_at=utc_now_iso(),
        command=_recorded_command(command, context),
        providers=list(context.providers),
        capabilities=suite.required_capabilities,
        runtime_manifests={k: v for k, v in outcome.runtime_manifests.items() if v is not None},
        dataset_manifests=list(context.dataset_refs),
        input_digest=digest_payload(context.inputs),
        result_digest=result_digest,
        event_count=context.forge.event_count - context.events_before,
        claim_boundary=claim_boundary,
        metric_semantics=suite.metric_semantics,
        notes="; ".join(n for n in (outcome.notes, notes) if n) or None,
    )
    rerun_options = outcome.rerun_options if outcome.rerun_options is not None else suite.options
    report = EvaluationReport(
        suite.suite_id,
        suite.name,
        results,
        claim_boundary=claim_boundary,
        metric_semantics=suite.metric_semantics,
        provenance=provenance,
        sections=sections,
        extra_artifacts=dict(outcome.artifacts),
        gallery_cases=build_cases(
            results, expected_notes=suite.expected_notes, cli_ref=suite.cli_ref, options=rerun_options
        ),
        suite_version=suite.suite_version,
    )
    if context.run is not None:
        context.run.emit_event(SuiteFinished(suite_id=suite.suite_id, result_digest=result_digest))
    return report


__all__ = ["ResultsPayload", "SealedSuite", "results_payload", "seal_report"]
