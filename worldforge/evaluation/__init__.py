"""Evaluation suites, scenarios, reports and provenance.

Public API::

    from worldforge.evaluation import EvaluationContext, EvaluationScenario, EvaluationSuite
    report = EvaluationSuite.from_builtin("planning").run_report(["mock"], forge=forge)

A suite produces (:class:`SuiteOutcome`: results, sections, artifacts); the framework seals every
report (capabilities, digests, provenance, failure gallery).
"""

from worldforge.evaluation.contract import SuiteOutcome, SuiteRun
from worldforge.evaluation.gallery import FAILURE_GALLERY_SCHEMA_VERSION
from worldforge.evaluation.options import SuiteBuilder
from worldforge.evaluation.provenance import PROVENANCE_SCHEMA_VERSION, ProvenanceEnvelope
from worldforge.evaluation.report import EvaluationReport
from worldforge.evaluation.suite import (
    DEFAULT_CLAIM_BOUNDARY,
    DEFAULT_METRIC_SEMANTICS,
    SUITE_CONTRACT_VERSION,
    EvaluationSuite,
    result_payload,
)
from worldforge.evaluation.types import (
    EvaluationContext,
    EvaluationResult,
    EvaluationScenario,
    EvaluationScenarioOutcome,
    ProviderSummary,
)

__all__ = [
    "DEFAULT_CLAIM_BOUNDARY",
    "DEFAULT_METRIC_SEMANTICS",
    "FAILURE_GALLERY_SCHEMA_VERSION",
    "PROVENANCE_SCHEMA_VERSION",
    "SUITE_CONTRACT_VERSION",
    "EvaluationContext",
    "EvaluationReport",
    "EvaluationResult",
    "EvaluationScenario",
    "EvaluationScenarioOutcome",
    "EvaluationSuite",
    "ProvenanceEnvelope",
    "ProviderSummary",
    "SuiteBuilder",
    "SuiteOutcome",
    "SuiteRun",
    "result_payload",
]
