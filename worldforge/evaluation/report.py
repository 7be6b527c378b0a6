"""``EvaluationReport``: results + summaries + provenance + gallery, one canonical payload.

:meth:`EvaluationReport.to_dict` is the single source every renderer in ``worldforge.reports``
reads, so JSON, Markdown, CSV and HTML can never disagree about a number.
"""

from __future__ import annotations

from collections.abc import Sequence

from worldforge.core.canonical import JSONObject, canonical_json_text, ensure_json_native
from worldforge.core.errors import WorldForgeError
from worldforge.evaluation.gallery import build_cases, gallery_payload
from worldforge.evaluation.provenance import ProvenanceEnvelope
from worldforge.evaluation.types import EvaluationResult, ProviderSummary
from worldforge.reports import render_report
from worldforge.reports.csv_report import render_csv
from worldforge.reports.html import render_html
from worldforge.reports.json_report import render_gallery_json
from worldforge.reports.markdown import render_gallery_markdown, render_markdown
from worldforge.reports.payload import FailureGallery, GalleryCase, ReportPayload


class EvaluationReport:
    """A suite's results for one or more providers."""

    def __init__(
        self,
        suite_id: str,
        suite: str,
        results: Sequence[EvaluationResult],
        *,
        claim_boundary: str,
        metric_semantics: str,
        provenance: ProvenanceEnvelope | None = None,
        sections: JSONObject | None = None,
        extra_artifacts: dict[str, str | bytes] | None = None,
        gallery_cases: list[GalleryCase] | None = None,
        suite_version: str | None = None,
    ) -> None:
        for name, value in (("claim_boundary", claim_boundary), ("metric_semantics", metric_semantics)):
            if not isinstance(value, str) or not value.strip():
                raise WorldForgeError(f"report.{name}: must be a non-empty string.")
        results = list(results)
        for index, result in enumerate(results):
            if not isinstance(result, EvaluationResult):
                raise WorldForgeError(f"report.results[{index}]: must be an EvaluationResult.")
            if (result.suite_id, result.suite) != (suite_id, suite):
                raise WorldForgeError(
                    f"report.results[{index}]: belongs to suite {result.suite_id!r}/{result.suite!r}, "
                    f"expected {suite_id!r}/{suite!r}."
                )
        if provenance is not None:
            if not isinstance(provenance, ProvenanceEnvelope) or provenance.kind != "evaluation":
                raise WorldForgeError("report.provenance: must be an evaluation ProvenanceEnvelope.")
            if provenance.suite_id != suite_id:
                raise WorldForgeError("report.provenance.suite_id: does not match the report.")
        sections = dict(sections or {})
        ensure_json_native(sections, "report.sections")
        for key, blob in (extra_artifacts or {}).items():
            if not isinstance(key, str) or not key or key.startswith("/") or ".." in key.split("/"):
                raise WorldForgeError(f"report.extra_artifacts: invalid artifact path {key!r}.")
            if not isinstance(blob, (str, bytes)):
                raise WorldForgeError(f"report.extra_artifacts[{key!r}]: must be str or bytes.")
        self.suite_id = suite_id
        self.suite = suite
        self.suite_version = suite_version or (provenance.suite_version if provenance else None)
        self.claim_boundary = claim_boundary
        self.metric_semantics = metric_semantics
        self.results = results
        self.provenance = provenance
        self.sections = sections
        self.extra_artifacts: dict[str, str | bytes] = dict(extra_artifacts or {})
        self._gallery_cases = gallery_cases if gallery_cases is not None else build_cases(results)
        providers: list[str] = []
        for result in results:
            if result.provider not in providers:
                providers.append(result.provider)
        self.provider_summaries = [ProviderSummary.from_results(p, results) for p in providers]

    # -- derived views ---------------------------------------------------------------------------
    @property
    def passed(self) -> bool:
        """True when every scenario passed for every provider."""
        return all(r.passed for r in self.results)

    @property
    def failed_results(self) -> list[EvaluationResult]:
        return [r for r in self.results if not r.passed]

    def failure_gallery(self) -> FailureGallery:
        """The gallery payload (all failed cases; empty ``cases`` when everything passed)."""
        prov = self.provenance
        return gallery_payload(
            suite_id=self.suite_id,
            suite=self.suite,
            suite_version=self.suite_version,
            claim_boundary=self.claim_boundary,
            metric_semantics=self.metric_semantics,
            cases=self._gallery_cases,
            input_digest=prov.input_digest if prov else None,
            result_digest=prov.result_digest if prov else None,
        )

    def to_dict(self) -> ReportPayload:
        payload: ReportPayload = {
            "suite_id": self.suite_id,
            "suite": self.suite,
            "claim_boundary": self.claim_boundary,
            "metric_semantics": self.metric_semantics,
            "provider_summaries": [s.to_dict() for s in self.provider_summaries],
            "results": [r.to_dict() for r in self.results],
        }
        if self._gallery_cases:
            payload["failure_gallery"] = self.failure_gallery()
        if self.provenance is not None:
            payload["provenance"] = self.provenance.to_dict()
        if self.sections:
            payload["sections"] = dict(self.sections)
        return payload

    def to_json(self) -> str:
        """Single-line canonical JSON of :meth:`to_dict`."""
        return canonical_json_text(self.to_dict())

    def to_markdown(self) -> str:

        return render_markdown(self.to_dict())

    def to_csv(self) -> str:

        return render_csv(self.to_dict())

    def to_html(self) -> str:

        return render_html(self.to_dict())

    def render(self, fmt: str) -> str:
        """Render in ``markdown|json|csv|html``."""

        return render_report(self.to_dict(), fmt)

    def artifacts(self) -> dict[str, str]:
        """Every format keyed ``json, markdown, csv, html, failure_gallery.json, failure_gallery.md``."""

        payload = self.to_dict()
        gallery = self.failure_gallery()
        return {
            "json": render_report(payload, "json"),
            "markdown": render_report(payload, "markdown"),
            "csv": render_report(payload, "csv"),
            "html": render_report(payload, "html"),
            "failure_gallery.json": render_gallery_json(gallery),
            "failure_gallery.md": render_gallery_markdown(gallery),
        }


__all__ = ["EvaluationReport"]
