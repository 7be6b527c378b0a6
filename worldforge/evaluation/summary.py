"""``results/summary.json``: the typed model of an evaluation run's summary.

The summary holds counts and digests only (no run id, no timestamps), so identical reruns write
byte-identical summaries; readers (bundles, dashboards, the fixture tests) get
:class:`EvaluationSummary` rather than a dict, and ``from_dict(d).to_dict() == d`` for every summary
this code or earlier code wrote, so ``pretty_json`` of the model is the file byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from worldforge.core.canonical import JSONObject
from worldforge.core.errors import WorldForgeError, WorldForgeException
from worldforge.evaluation.report import EvaluationReport
from worldforge.evaluation.types import ProviderSummary
from worldforge.reports.payload import ReportProviderSummary

SUMMARY_SCHEMA_VERSION = 1
SUMMARY_PATH = "results/summary.json"
#: The report section whose ``total`` is the run's token usage (requests, tokens, cost when priced);
#: a suite that accounts tokens writes it, and the summary carries its total.
USAGE_SECTION = "token_usage"


def _field(
    data: Mapping[str, object], key: str, kinds: type | tuple[type, ...], optional: bool = False
) -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
        raise WorldForgeError(f"{SUMMARY_PATH}: {key!r} is missing or of the wrong type.")
    return value


def _as_tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _provider_summary(data: object) -> ProviderSummary:
    """One ``provider_summaries`` entry; its ``pass_rate`` is derived, so a recorded one that does
    not match its counts is refused rather than silently rewritten."""
    if not isinstance(data, Mapping):
        raise WorldForgeError(f"{SUMMARY_PATH}: a provider summary is not an object.")
    summary = ProviderSummary(
        provider=_field(data, "provider", str),
        average_score=_field(data, "average_score", (int, float)),
        scenario_count=_field(data, "scenario_count", int),
        passed_scenario_count=_field(data, "passed_scenario_count", int),
        failed_scenario_count=_field(data, "failed_scenario_count", int),
    )
    if summary.to_dict() != dict(data):
        raise WorldForgeError(f"{SUMMARY_PATH}: provider summary {summary.provider!r} does not add up.")
    return summary


class GenerationStopped(WorldForgeException):
    """A run whose generation stopped early (its token limit): the reports and the summary are
    written and say why, the run is left ``failed`` so ``runs resume`` finishes it."""

    exit_code = 1


def stopped_reason(report: EvaluationReport) -> str | None:
    """Why the report's generation stopped early (its :data:`USAGE_SECTION` says), if it did."""
    section = report.sections.get(USAGE_SECTION)
    reason = section.get("stopped") if isinstance(section, Mapping) else None
    return reason if isinstance(reason, str) else None


def _usage_total(sections: Mapping[str, object]) -> JSONObject | None:
    """The total of the report's :data:`USAGE_SECTION`, if the suite wrote one."""
    section = sections.get(USAGE_SECTION)
    total = section.get("total") if isinstance(section, Mapping) else None
    return dict(total) if isinstance(total, Mapping) else None


def _usage(value: object) -> JSONObject | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise WorldForgeError(f"{SUMMARY_PATH}: 'usage' must be an object.")
    return dict(value)


class SummaryDict(TypedDict):
    """:meth:`EvaluationSummary.to_dict`: ``results/summary.json`` as written (``usage`` only when
    the suite accounts tokens)."""

    schema_version: int
    suite_id: str
    suite: str
    suite_version: str | None
    providers: list[str]
    passed: bool
    result_count: int
    passed_count: int
    failed_count: int
    provider_summaries: list[ReportProviderSummary]
    input_digest: str | None
    result_digest: str | None
    event_count: int
    claim_boundary: str
    usage: NotRequired[JSONObject]


@dataclass(frozen=True)
class EvaluationSummary:
    """What ``results/summary.json`` holds: the suite, the providers, pass/fail counts, the run's
    input and result digests, its provider-event count, the claim boundary and, when the suite
    accounts tokens, the run's usage total (counts only: identical reruns keep identical summaries)."""

    suite_id: str
    suite: str
    suite_version: str | None
    passed: bool
    result_count: int
    passed_count: int
    failed_count: int
    providers: list[str] = field(default_factory=list)
    provider_summaries: list[ProviderSummary] = field(default_factory=list)
    input_digest: str | None = None
    result_digest: str | None = None
    event_count: int = 0
    claim_boundary: str = ""
    schema_version: int = SUMMARY_SCHEMA_VERSION
    #: The run's token totals (the report's :data:`USAGE_SECTION` total); ``None``: not accounted.
    usage: JSONObject | None = None

    @classmethod
    def from_report(cls, report: EvaluationReport) -> EvaluationSummary:
        prov = report.provenance
        return cls(
            suite_id=report.suite_id,
            suite=report.suite,
            suite_version=report.suite_version,
            passed=report.passed,
            result_count=len(report.results),
            passed_count=sum(1 for r in report.results if r.passed),
            failed_count=len(report.failed_results),
            providers=[s.provider for s in report.provider_summaries],
            provider_summaries=list(report.provider_summaries),
            input_digest=prov.input_digest if prov else None,
            result_digest=prov.result_digest if prov else None,
            event_count=prov.event_count if prov else 0,
            claim_boundary=report.claim_boundary,
            usage=_usage_total(report.sections),
        )

    def to_dict(self) -> SummaryDict:
        summary: SummaryDict = {
            "schema_version": self.schema_version,
            "suite_id": self.suite_id,
            "suite": self.suite,
            "suite_version": self.suite_version,
            "providers": list(self.providers),
            "passed": self.passed,
            "result_count": self.result_count,
            "passed_count": self.passed_count,
            "failed_count": self.failed_count,
            "provider_summaries": [s.to_dict() for s in self.provider_summaries],
            "input_digest": self.input_digest,
            "result_digest": self.result_digest,
            "event_count": self.event_count,
            "claim_boundary": self.claim_boundary,
        }
        if self.usage is not None:
            summary["usage"] = dict(self.usage)
        return summary

    @classmethod
    def from_dict(cls, data: object) -> EvaluationSummary:
        """The summary in ``data``; ``WorldForgeError`` for another shape, unknown keys or a schema
        version newer than this code writes."""
        if not isinstance(data, Mapping):
            raise WorldForgeError(f"{SUMMARY_PATH}: not an object.")
        version = _field(data, "schema_version", int)
        if version > SUMMARY_SCHEMA_VERSION:
            raise WorldForgeError(
                f"{SUMMARY_PATH}: schema version {version} is newer than this WorldForge reads "
                f"({SUMMARY_SCHEMA_VERSION})."
            )
        providers = _field(data, "providers", list)
        if not all(isinstance(p, str) for p in providers):
            raise WorldForgeError(f"{SUMMARY_PATH}: 'providers' must be a list of names.")
        summary = cls(
            suite_id=_field(data, "suite_id", str),
            suite=_field(data, "suite", str),
            suite_version=_field(data, "suite_version", str, optional=True),
            passed=_field(data, "passed", bool),
            result_count=_field(data, "result_count", int),
            passed_count=_field(data, "passed_count", int),
            failed_count=_field(data, "failed_count", int),
            providers=list(providers),
            provider_summaries=[_provider_summary(s) for s in _field(data, "provider_summaries", list)],
            input_digest=_field(data, "input_digest", str, optional=True),
            result_digest=_field(data, "result_digest", str, optional=True),
            event_count=_field(data, "event_count", int),
            claim_boundary=_field(data, "claim_boundary", str),
            schema_version=version,
            usage=_usage(data.get("usage")),
        )
        unknown = sorted(set(data) - set(summary.to_dict()))
        if unknown:
            raise WorldForgeError(f"{SUMMARY_PATH}: unknown keys {', '.join(unknown)}.")
        return summary


__all__ = [
    "SUMMARY_PATH",
    "SUMMARY_SCHEMA_VERSION",
    "USAGE_SECTION",
    "EvaluationSummary",
    "GenerationStopped",
    "SummaryDict",
    "stopped_reason",
]
