"""The canonical report payload every renderer reads, as types.

``EvaluationReport.to_dict()`` builds it (the evaluation layer above this one), the renderers in
this package format it, and a report loaded back from its JSON has the same shape. Its parts that
a suite fills freely (a result's ``metrics``, the report's ``sections``, the providers' runtime
manifests) are open JSON, read with ``isinstance`` where they are shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NotRequired, TypedDict

from worldforge.core.canonical import JSONObject
from worldforge.core.errors import WorldForgeError


class ReportResult(TypedDict):
    """One provider x scenario result (``EvaluationResult.to_dict``)."""

    suite_id: str
    suite: str
    scenario: str
    provider: str
    score: float
    passed: bool
    metrics: JSONObject


class ReportProviderSummary(TypedDict):
    """One provider's aggregate (``ProviderSummary.to_dict``); ``pass_rate`` is derived."""

    provider: str
    average_score: float
    scenario_count: int
    passed_scenario_count: int
    failed_scenario_count: int
    pass_rate: float


class ReportProvenance(TypedDict):
    """The provenance envelope (``ProvenanceEnvelope.to_dict``)."""

    schema_version: int
    kind: str
    suite_id: str
    suite_version: str
    worldforge_version: str
    created_at: str
    command: list[str]
    providers: list[str]
    capabilities: list[str]
    runtime_manifests: JSONObject
    dataset_manifests: list[JSONObject]
    input_digest: str
    result_digest: str
    event_count: int
    claim_boundary: str
    metric_semantics: str
    notes: str | None


class GalleryCase(TypedDict):
    """One failed result as the failure gallery shows it (sanitized metrics preview, no raw metrics)."""

    fixture_id: str
    suite_id: str
    suite: str
    scenario: str
    provider: str
    score: float
    passed: bool
    expected_contract_notes: str
    observed_result: str
    metrics_preview: JSONObject
    rerun_command: str | None
    triage_steps: list[str]


class FailureGallery(TypedDict):
    """A report's failure gallery (also written alone as ``failure_gallery.json``)."""

    schema_version: int
    suite_id: str
    suite: str
    suite_version: str | None
    case_count: int
    claim_boundary: str
    metric_semantics: str
    source_input_digest: str | None
    source_result_digest: str | None
    cases: list[GalleryCase]


class ReportPayload(TypedDict):
    """``EvaluationReport.to_dict()``: the gallery only when a result failed, the provenance when
    the report was sealed, the sections when the suite wrote any."""

    suite_id: str
    suite: str
    claim_boundary: str
    metric_semantics: str
    provider_summaries: list[ReportProviderSummary]
    results: list[ReportResult]
    failure_gallery: NotRequired[FailureGallery]
    provenance: NotRequired[ReportProvenance]
    sections: NotRequired[JSONObject]


# -- reading a payload -----------------------------------------------------------------------------
# Renderers take any mapping: a report built in this process (a ``ReportPayload``) or one read back
# from its JSON file (a bundle re-renders sanitized payloads). These read its parts with the types
# the renderers need; a part of the wrong shape is a ``WorldForgeError`` naming it.


def member(mapping: Mapping[str, object], key: str) -> Mapping[str, object]:
    """The object under ``key``; an empty one when it is missing or not an object."""
    value = mapping.get(key)
    return value if isinstance(value, Mapping) else {}


def listed(mapping: Mapping[str, object], key: str) -> list[object]:
    """The list under ``key``; an empty one when it is missing or not a list."""
    value = mapping.get(key)
    return value if isinstance(value, list) else []


def members(mapping: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
    """The list of objects under ``key`` (empty when missing); a list holding anything else is an
    error naming ``key``."""
    value = mapping.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(entry, Mapping) for entry in value):
        raise WorldForgeError(f"report payload: {key!r} must be a list of objects.")
    return value


def number(value: object, what: str) -> float:
    """A score or count shown as a number (a number, or numeric text as JSON may hold it)."""
    if isinstance(value, (int, float, str)):
        return float(value)
    raise WorldForgeError(f"report payload: {what} must be a number, got {type(value).__name__}.")


def whole(value: object, what: str) -> int:
    """A count shown as an integer (see :func:`number`)."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise WorldForgeError(f"report payload: {what} must be an integer, got {type(value).__name__}.")


__all__ = [
    "FailureGallery",
    "GalleryCase",
    "ReportPayload",
    "ReportProvenance",
    "ReportProviderSummary",
    "ReportResult",
    "listed",
    "member",
    "members",
    "number",
    "whole",
]
