"""Evaluation suites, scenarios, reports and provenance.

Public API::

    from worldforge.evaluation import EvaluationContext, EvaluationScenario, EvaluationSuite
    report = EvaluationSuite.from_builtin("planning").run_report(["mock"], forge=forge)
"""

from worldforge.evaluation.gallery import FAILURE_GALLERY_SCHEMA_VERSION
from worldforge.evaluation.provenance import PROVENANCE_SCHEMA_VERSION, ProvenanceEnvelope
from worldforge.evaluation.report import EvaluationReport
from worldforge.evaluation.suite import (
    DEFAULT_CLAIM_BOUNDARY,
    DEFAULT_METRIC_SEMANTICS,
    SUITE_CONTRACT_VERSION,
    EvaluationSuite,
    FinalizeContext,
    SuiteExtras,
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
    "FinalizeContext",
    "ProvenanceEnvelope",
    "ProviderSummary",
    "SuiteExtras",
    "result_payload",
]
