"""Public evaluation value types and their boundary validation.

Scores, pass flags and metrics are validated where a scenario hands them back, not when a report
is serialized: a tuple, an object, ``NaN`` or an integer key in metrics is a bug in the scenario,
and the error names the key path (``metrics.trace[2].cost``) so the author can fix it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from worldforge.core.canonical import JSONObject, ensure_json_native
from worldforge.core.errors import WorldForgeError
from worldforge.core.world import World
from worldforge.forge import WorldForge
from worldforge.reports.payload import ReportProviderSummary, ReportResult
from worldforge.workspace import Run

SCENARIO_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def validate_score(value: object, where: str = "score") -> float:
    """A finite probability-like score in [0, 1] (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorldForgeError(f"{where}: must be a number in [0, 1], got {type(value).__name__}.")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise WorldForgeError(f"{where}: must be finite and in [0, 1], got {value!r}.")
    return number


def validate_passed(value: object, where: str = "passed") -> bool:
    if not isinstance(value, bool):
        raise WorldForgeError(f"{where}: must be a bool (True/False), got {type(value).__name__}.")
    return value


def validate_metrics(value: object, where: str = "metrics") -> JSONObject:
    """JSON-native dict: string keys, finite numbers, no tuples or objects (errors name the path)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise WorldForgeError(f"{where}: must be a dict with string keys, got {type(value).__name__}.")
    ensure_json_native(value, where)
    _check_safe_integers(value, where)
    return dict(value)


MAX_SAFE_INTEGER = 2**53 - 1


def _check_safe_integers(value: object, path: str) -> None:
    """Integers beyond 2**53 - 1 cannot be canonicalized (RFC 8785 / I-JSON), so they would only fail
    later, at digest time, far from the scenario that produced them."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise WorldForgeError(f"{path}: integer {value} exceeds the JSON safe range (+/- 2**53 - 1).")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_safe_integers(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_safe_integers(item, f"{path}[{index}]")


def _non_empty(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise WorldForgeError(f"{where}: must be a non-empty string.")
    return value.strip()


@dataclass(frozen=True, slots=True)
class EvaluationScenarioOutcome:
    """What an evaluator returns through :meth:`EvaluationContext.outcome`."""

    score: float
    passed: bool
    metrics: JSONObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "score", validate_score(self.score))
        validate_passed(self.passed)
        object.__setattr__(self, "metrics", validate_metrics(self.metrics))


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """One provider x scenario outcome, as it appears in reports and digests."""

    suite_id: str
    suite: str
    scenario: str
    provider: str
    score: float
    passed: bool
    metrics: JSONObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("suite_id", "suite", "scenario", "provider"):
            _non_empty(getattr(self, name), f"result.{name}")
        object.__setattr__(self, "score", validate_score(self.score, "result.score"))
        validate_passed(self.passed, "result.passed")
        object.__setattr__(self, "metrics", validate_metrics(self.metrics, "result.metrics"))

    def to_dict(self) -> ReportResult:
        return {
            "suite_id": self.suite_id,
            "suite": self.suite,
            "scenario": self.scenario,
            "provider": self.provider,
            "score": self.score,
            "passed": self.passed,
            "metrics": dict(self.metrics),
        }

    @classmethod
    def from_dict(cls, payload: object) -> EvaluationResult:
        if not isinstance(payload, Mapping):
            raise WorldForgeError("result: expected an object.")
        missing = [
            k for k in ("suite_id", "suite", "scenario", "provider", "score", "passed") if k not in payload
        ]
        if missing:
            raise WorldForgeError(f"result.{missing[0]}: missing.")
        return cls(
            payload["suite_id"],
            payload["suite"],
            payload["scenario"],
            payload["provider"],
            payload["score"],
            payload["passed"],
            payload.get("metrics") or {},
        )


@dataclass(frozen=True, slots=True)
class ProviderSummary:
    """Per-provider aggregate shown in every report format."""

    provider: str
    average_score: float
    scenario_count: int
    passed_scenario_count: int
    failed_scenario_count: int

    @property
    def pass_rate(self) -> float:
        return self.passed_scenario_count / self.scenario_count if self.scenario_count else 0.0

    def to_dict(self) -> ReportProviderSummary:
        return {
            "provider": self.provider,
            "average_score": self.average_score,
            "scenario_count": self.scenario_count,
            "passed_scenario_count": self.passed_scenario_count,
            "failed_scenario_count": self.failed_scenario_count,
            "pass_rate": self.pass_rate,
        }

    @classmethod
    def from_results(cls, provider: str, results: Iterable[EvaluationResult]) -> ProviderSummary:
        mine = [r for r in results if r.provider == provider]
        passed = sum(1 for r in mine if r.passed)
        average = sum(r.score for r in mine) / len(mine) if mine else 0.0
        return cls(provider, round(average, 12), len(mine), passed, len(mine) - passed)


#: A scenario's check: returns an outcome, a result or a ``{score, passed, metrics}`` dict, which
#: :meth:`EvaluationContext.coerce` validates.
Evaluator = Callable[["EvaluationContext"], object]


class ScenarioDict(TypedDict):
    """:meth:`EvaluationScenario.to_dict`: a scenario as a suite lists it."""

    name: str
    description: str
    required_capabilities: list[str]


@dataclass(frozen=True, slots=True)
class EvaluationScenario:
    """A named check. ``evaluator(context)`` returns an outcome, a result or a dict."""

    name: str
    description: str
    required_capabilities: tuple[str, ...] = ()
    evaluator: Evaluator | None = None

    def __post_init__(self) -> None:
        name = _non_empty(self.name, "scenario.name")
        if not SCENARIO_NAME_RE.match(name):
            raise WorldForgeError(f"scenario.name {name!r}: use letters, digits, '.', '_' or '-'.")
        object.__setattr__(self, "name", name)
        object.__setattr__(
            self, "description", _non_empty(self.description, f"scenario {name!r} description")
        )
        caps = self.required_capabilities
        if isinstance(caps, str):
            caps = (caps,)
        caps = tuple(_non_empty(c, f"scenario {name!r} required_capabilities") for c in caps)
        object.__setattr__(self, "required_capabilities", caps)
        if self.evaluator is not None and not callable(self.evaluator):
            raise WorldForgeError(f"scenario {name!r}: evaluator must be callable.")

    @classmethod
    def from_callable(
        cls,
        *,
        name: str,
        description: str,
        evaluator: Evaluator,
        required_capabilities: Iterable[str] = (),
    ) -> EvaluationScenario:
        if not callable(evaluator):
            raise WorldForgeError(f"scenario {name!r}: evaluator must be callable.")
        return cls(name, description, tuple(required_capabilities), evaluator)

    def to_dict(self) -> ScenarioDict:
        return {
            "name": self.name,
            "description": self.description,
            "required_capabilities": list(self.required_capabilities),
        }


@dataclass(frozen=True, slots=True)
class EvaluationContext:
    """Everything an evaluator may use. ``world`` is a fresh copy per scenario (isolation)."""

    suite_id: str
    suite: str
    scenario: EvaluationScenario
    provider: str
    world: World
    forge: WorldForge
    index: int
    options: dict[str, Any] = field(default_factory=dict)
    run: Run | None = None

    def outcome(self, *, score: object, passed: object, metrics: object = None) -> EvaluationScenarioOutcome:
        """Validate and package a scenario outcome (the recommended evaluator return value)."""
        where = f"scenario {self.scenario.name!r}"
        return EvaluationScenarioOutcome(
            validate_score(score, f"{where} score"),
            validate_passed(passed, f"{where} passed"),
            validate_metrics(metrics, "metrics"),
        )

    def result(self, outcome: EvaluationScenarioOutcome) -> EvaluationResult:
        return EvaluationResult(
            self.suite_id,
            self.suite,
            self.scenario.name,
            self.provider,
            outcome.score,
            outcome.passed,
            outcome.metrics,
        )

    def coerce(self, value: object) -> EvaluationResult:
        """Accept an outcome, a matching :class:`EvaluationResult` or a ``{score, passed, metrics}`` dict."""
        where = f"scenario {self.scenario.name!r}"
        if isinstance(value, EvaluationScenarioOutcome):
            return self.result(value)
        if isinstance(value, EvaluationResult):
            expected = {
                "suite_id": self.suite_id,
                "suite": self.suite,
                "scenario": self.scenario.name,
                "provider": self.provider,
            }
            for key, want in expected.items():
                got = getattr(value, key)
                if got != want:
                    raise WorldForgeError(f"{where}: returned result has {key}={got!r}, expected {want!r}.")
            return value
        if isinstance(value, dict):
            unknown = sorted(set(value) - {"score", "passed", "metrics"})
            if unknown:
                raise WorldForgeError(f"{where}: unexpected key {unknown[0]!r} in returned dict.")
            for key in ("score", "passed"):
                if key not in value:
                    raise WorldForgeError(f"{where}: returned dict is missing {key!r}.")
            return self.result(
                self.outcome(score=value["score"], passed=value["passed"], metrics=value.get("metrics"))
            )
        raise WorldForgeError(
            f"{where}: evaluator returned {type(value).__name__}; return context.outcome(...), an "
            "EvaluationResult or a dict with score, passed and metrics."
        )


__all__ = [
    "EvaluationContext",
    "EvaluationResult",
    "EvaluationScenario",
    "EvaluationScenarioOutcome",
    "Evaluator",
    "ProviderSummary",
    "ScenarioDict",
    "validate_metrics",
    "validate_passed",
    "validate_score",
]
