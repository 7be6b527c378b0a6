"""Evaluation API: seed snippets, outcome validation, capability gate, digests, multi-provider."""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from worldforge import WorldForge, WorldForgeError
from worldforge.evaluation import (
    EvaluationContext,
    EvaluationResult,
    EvaluationScenario,
    EvaluationSuite,
    ProvenanceEnvelope,
    result_payload,
)
from worldforge.providers.events import InMemoryEventSink


def test_seed_python_snippet_builtin_planning(capsys: pytest.CaptureFixture[str]) -> None:
    forge = WorldForge()
    # -- verbatim from the docs page --
    suite = EvaluationSuite.from_builtin("planning")
    report = suite.run_report(["mock"], forge=forge)
    print(report.results[0].passed)
    print(report.to_json())
    # --
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "True"
    payload = json.loads(out[1])
    assert list(payload) == sorted(payload)  # canonical JSON: sorted keys
    for key in ("suite_id", "suite", "claim_boundary", "metric_semantics", "provider_summaries", "results"):
        assert key in payload
    assert "failure_gallery" not in payload  # only present when something failed
    assert payload["provenance"]["schema_version"] == 2
    assert [r["scenario"] for r in payload["results"]] == [
        "object-relocation",
        "object-neighbor-placement",
        "object-swap",
        "object-spawn",
    ]
    assert all(r["passed"] for r in payload["results"])
    assert report.provenance is not None and report.provenance.suite_version == "evaluation:1"


def test_seed_custom_suite_snippet(capsys: pytest.CaptureFixture[str]) -> None:
    forge = WorldForge()

    # -- verbatim from the docs page --
    def check_empty_world(context: EvaluationContext):  # type: ignore[no-untyped-def]
        object_count = context.world.object_count
        return context.outcome(
            score=1.0,
            passed=object_count == 0,
            metrics={"object_count": object_count},
        )

    suite = EvaluationSuite.custom(
        suite_id="custom-empty-world",
        name="Custom Empty World Evaluation",
        suite_version="custom-empty-world:1",
        claim_boundary=("This custom suite is a deterministic checkout example, not a model-quality claim."),
        scenarios=[
            EvaluationScenario.from_callable(
                name="empty-world-readable",
                description="Checks that a new world can be inspected.",
                evaluator=check_empty_world,
            )
        ],
    )
    EvaluationSuite.register("custom-empty-world", lambda: suite, replace=True)
    report = EvaluationSuite.from_registered("custom-empty-world").run_report("mock", forge=forge)
    print(report.provenance.suite_version)  # type: ignore[union-attr]
    print(report.artifacts()["failure_gallery.json"])
    # --
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "custom-empty-world:1"
    gallery = json.loads(out.split("\n", 1)[1])
    assert gallery["case_count"] == 0 and gallery["cases"] == []
    assert gallery["suite_version"] == "custom-empty-world:1"
    assert gallery["source_result_digest"] == report.provenance.result_digest  # type: ignore[union-attr]
    assert report.results[0].metrics == {"object_count": 0}
    assert set(report.artifacts()) == {
        "json",
        "markdown",
        "csv",
        "html",
        "failure_gallery.json",
        "failure_gallery.md",
    }


def _one_scenario_suite(evaluator: Any, caps: tuple[str, ...] = ()) -> EvaluationSuite:
    return EvaluationSuite.custom(
        suite_id="probe",
        name="Probe",
        suite_version="probe:1",
        claim_boundary="Test suite; no claims.",
        scenarios=[
            EvaluationScenario.from_callable(
                name="probe", description="probe", evaluator=evaluator, required_capabilities=caps
            )
        ],
    )


class _Opaque:
    pass


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"score": math.nan, "passed": True}, r"score: must be finite and in \[0, 1\]"),
        ({"score": math.inf, "passed": True}, r"score: must be finite"),
        ({"score": -0.01, "passed": True}, r"score: must be finite and in \[0, 1\], got -0.01"),
        ({"score": 1.5, "passed": True}, r"got 1.5"),
        ({"score": "0.5", "passed": True}, r"score: must be a number in \[0, 1\], got str"),
        ({"score": True, "passed": True}, r"score: must be a number in \[0, 1\], got bool"),
        ({"score": 0.5, "passed": 1}, r"passed: must be a bool \(True/False\), got int"),
        ({"score": 0.5, "passed": "yes"}, r"passed: must be a bool"),
        ({"score": 0.5, "passed": None}, r"passed: must be a bool"),
        ({"score": 0.5, "passed": True, "metrics": {"pos": (1, 2)}}, r"metrics\.pos: value of type tuple"),
        (
            {"score": 0.5, "passed": True, "metrics": {"obj": _Opaque()}},
            r"metrics\.obj: value of type _Opaque",
        ),
        (
            {"score": 0.5, "passed": True, "metrics": {"trace": [{"cost": 1.0}, {"cost": math.nan}]}},
            r"metrics\.trace\[1\]\.cost: non-finite number",
        ),
        ({"score": 0.5, "passed": True, "metrics": {"x": -math.inf}}, r"metrics\.x: non-finite"),
        (
            {"score": 0.5, "passed": True, "metrics": {"n": [2**53]}},
            r"metrics\.n\[0\]: integer .* safe range",
        ),
        ({"score": 0.5, "passed": True, "metrics": {1: "a"}}, r"metrics: key 1 must be a string, got int"),
        ({"score": 0.5, "passed": True, "metrics": {"a": {2: 1}}}, r"metrics\.a: key 2 must be a string"),
        (
            {"score": 0.5, "passed": True, "metrics": [1, 2]},
            r"metrics: must be a dict with string keys, got list",
        ),
    ],
)
def test_outcome_rejections_name_the_key_path(kwargs: dict[str, Any], message: str) -> None:
    suite = _one_scenario_suite(lambda context: context.outcome(**kwargs))
    with pytest.raises(WorldForgeError, match=message):
        suite.run_report("mock", forge=WorldForge())


def test_numpy_bool_is_not_a_real_bool() -> None:
    import numpy as np

    suite = _one_scenario_suite(lambda context: context.outcome(score=0.5, passed=np.bool_(True)))
    with pytest.raises(WorldForgeError, match="passed: must be a bool"):
        suite.run_report("mock", forge=WorldForge())


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ({"score": 0.5}, "returned dict is missing 'passed'"),
        ({"score": 0.5, "passed": True, "extra": 1}, "unexpected key 'extra'"),
        (
            EvaluationResult("other", "Probe", "probe", "mock", 0.5, True),
            "suite_id='other', expected 'probe'",
        ),
        (EvaluationResult("probe", "Other", "probe", "mock", 0.5, True), "suite='Other', expected 'Probe'"),
        (EvaluationResult("probe", "Probe", "nope", "mock", 0.5, True), "scenario='nope', expected 'probe'"),
        (EvaluationResult("probe", "Probe", "probe", "mock:x", 0.5, True), "provider='mock:x'"),
        (0.5, "evaluator returned float"),
    ],
)
def test_evaluator_return_shapes_are_checked(returned: Any, message: str) -> None:
    suite = _one_scenario_suite(lambda context: returned)
    with pytest.raises(WorldForgeError, match=message):
        suite.run_report("mock", forge=WorldForge())


def test_dict_and_result_returns_are_accepted() -> None:
    forge = WorldForge()
    as_dict = _one_scenario_suite(lambda c: {"score": 1, "passed": True, "metrics": {"k": [1, 2]}})
    assert as_dict.run_report("mock", forge=forge).results[0].to_dict() == {
        "suite_id": "probe",
        "suite": "Probe",
        "scenario": "probe",
        "provider": "mock",
        "score": 1.0,
        "passed": True,
        "metrics": {"k": [1, 2]},
    }
    as_result = _one_scenario_suite(
        lambda c: EvaluationResult("probe", "Probe", "probe", "mock", 0.25, False)
    )
    assert as_result.run_report("mock", forge=forge).results[0].score == 0.25


def test_capability_gate_runs_before_any_scenario() -> None:
    calls: list[str] = []

    def evaluator(context: EvaluationContext) -> Any:
        calls.append(context.provider)
        return context.outcome(score=1.0, passed=True)

    forge = WorldForge()

    class PredictOnly:
        name = "predict-only"
        capabilities = frozenset({"predict"})

        def runtime_manifest(self) -> None:
            return None

    forge.register_provider("predict-only", PredictOnly)
    suite = _one_scenario_suite(evaluator, ("predict", "score"))
    with pytest.raises(WorldForgeError) as info:
        suite.run_report(["mock", "predict-only"], forge=forge)
    assert str(info.value) == (
        "Provider 'predict-only' cannot run evaluation suite 'probe': missing required capabilities: score."
    )
    assert calls == []  # mock came first but nothing ran
    with pytest.raises(WorldForgeError, match="missing required capabilities: score"):
        EvaluationSuite.from_builtin("planning").run_report("predict-only", forge=forge)
    with pytest.raises(WorldForgeError, match="Unknown provider capability 'teleport'"):
        _one_scenario_suite(evaluator, ("teleport",)).run_report("mock", forge=forge)
    with pytest.raises(WorldForgeError, match="Unknown provider 'ghost'"):
        suite.run_report("ghost", forge=forge)


def test_two_identical_runs_have_identical_digests_and_recomputable_payloads() -> None:
    a = EvaluationSuite.from_builtin("planning").run_report(["mock"], forge=WorldForge())
    b = EvaluationSuite.from_builtin("planning").run_report(["mock"], forge=WorldForge())
    assert a.provenance and b.provenance
    assert a.provenance.input_digest == b.provenance.input_digest
    assert a.provenance.result_digest == b.provenance.result_digest
    assert [r.to_dict() for r in a.results] == [r.to_dict() for r in b.results]
    # independent recomputation: sha256 over RFC 8785 bytes of the documented payload
    expected = "sha256:" + hashlib.sha256(rfc8785.dumps(result_payload(a))).hexdigest()
    assert a.provenance.result_digest == expected
    suite = EvaluationSuite.from_builtin("planning")
    manifests = {"mock": WorldForge().runtime_manifest("mock")}
    inputs = suite.input_payload(["mock"], manifests, [])
    assert a.provenance.input_digest == "sha256:" + hashlib.sha256(rfc8785.dumps(inputs)).hexdigest()
    # a different provider list changes the inputs
    c = EvaluationSuite.from_builtin("planning").run_report(["mock:alt"], forge=WorldForge())
    assert c.provenance and c.provenance.input_digest != a.provenance.input_digest


def test_provenance_event_count_is_the_real_number_of_provider_events() -> None:
    sink = InMemoryEventSink()
    forge = WorldForge(event_sinks=[sink])
    report = EvaluationSuite.from_builtin("physics").run_report("mock", forge=forge)
    assert report.provenance is not None
    assert report.provenance.event_count == len(sink.events) == 4  # 3 predicts + 1 action response
    assert {e.operation for e in sink.events} == {"predict"}
    planning = EvaluationSuite.from_builtin("planning").run_report("mock", forge=forge)
    oracle = sum(r.metrics["planner"]["oracle_calls"] for r in planning.results)
    executed = sum(r.metrics["action_count"] for r in planning.results)
    # every oracle call and every executed action (planning + replay) emitted exactly one event
    assert planning.provenance is not None
    assert planning.provenance.event_count == oracle + 2 * executed


def test_physics_suite_exact_numbers_with_mock() -> None:
    report = EvaluationSuite.from_builtin("physics").run_report("mock", forge=WorldForge())
    by_name = {r.scenario: r for r in report.results}
    determinism = by_name["prediction-determinism"]
    assert determinism.passed and determinism.metrics["state_digest_match"] is True
    assert determinism.metrics["noop_displacement"] == 0.0
    assert determinism.score == pytest.approx((1 + 1 + (0.75 + 0.73) / 2) / 3)
    response = by_name["action-response"]
    assert response.passed and response.metrics["target_error"] == 0.0
    assert response.metrics["moved_distance"] == pytest.approx(0.35)
    assert response.score == pytest.approx(0.74 + 0.175)


def test_planning_suite_metrics_carry_the_cost_trace() -> None:
    report = EvaluationSuite.from_builtin("planning").run_report("mock", forge=WorldForge())
    for result in report.results:
        planner = result.metrics["planner"]
        assert planner["planner"] == "latent-mpc-cem"
        assert planner["oracle_calls"] >= 2
        assert planner["first_step_final_best_cost"] <= planner["first_step_initial_best_cost"]
        assert 0.0 < result.metrics["success_probability"] <= 1.0
    relocation = report.results[0]
    assert relocation.metrics["target_error"] <= 0.05


def test_multi_provider_report_with_a_failing_provider() -> None:
    forge = WorldForge()

    class Lazy:
        """A predict provider that never moves anything."""

        name = "other"
        capabilities = frozenset({"predict"})

        def runtime_manifest(self) -> dict[str, str]:
            return {"model": "lazy-1"}

        def predict(self, world_state: dict, action: dict, steps: int) -> Any:
            from worldforge.providers.base import PredictionResult

            state = dict(world_state, step=world_state["step"] + steps)
            return PredictionResult("other", state, 0.5, 0.5)

    forge.register_provider("other", Lazy)
    report = EvaluationSuite.from_builtin("physics").run_report(["mock", "other"], forge=forge)
    assert [(r.provider, r.scenario, r.passed) for r in report.results] == [
        ("mock", "prediction-determinism", True),
        ("mock", "action-response", True),
        ("other", "prediction-determinism", True),
        ("other", "action-response", False),
    ]
    summaries = {s.provider: s.to_dict() for s in report.provider_summaries}
    assert summaries["mock"]["pass_rate"] == 1.0
    assert (
        summaries["other"]["passed_scenario_count"] == 1 and summaries["other"]["failed_scenario_count"] == 1
    )
    assert report.provenance is not None
    assert report.provenance.providers == ["mock", "other"]
    assert report.provenance.runtime_manifests["other"] == {"model": "lazy-1"}
    gallery = report.to_dict()["failure_gallery"]
    assert gallery["case_count"] == 1
    case = gallery["cases"][0]
    assert case["fixture_id"] == "evaluation:physics:action-response"
    assert case["provider"] == "other"
    assert case["observed_result"].startswith("score=0.")
    assert "worldforge eval --suite physics --provider other --format json" in case["triage_steps"][1]
    assert case["rerun_command"] == "worldforge eval --suite physics --provider other --format json"


def test_failure_gallery_sanitizes_metric_previews() -> None:
    def leaky(context: EvaluationContext) -> Any:
        return context.outcome(
            score=0.1,
            passed=False,
            metrics={
                "local_path": "/home/alice/private/data.bin",
                "api_key": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
                "url": "https://bucket.s3.amazonaws.com/x?X-Amz-Signature=deadbeef",
                "tensor_values": [[1, 2], [3, 4]],
                "resolution": [640, 360],
            },
        )

    report = _one_scenario_suite(leaky).run_report("mock", forge=WorldForge())
    preview = report.failure_gallery()["cases"][0]["metrics_preview"]
    text = json.dumps(preview)
    assert "alice" not in text and "sk-proj-abc" not in text and "deadbeef" not in text
    assert preview["tensor_values"]["type"] == "array" and preview["tensor_values"]["item_count"] == 2
    assert preview["resolution"] == [640, 360]
    # the suite is in-process only: the triage step says how to make it reachable
    assert "registered in-process only" in report.failure_gallery()["cases"][0]["triage_steps"][1]


def test_builtin_options_and_unknown_suites() -> None:
    with pytest.raises(WorldForgeError, match="suite 'planning' takes no options; got option 'trials'"):
        EvaluationSuite.from_builtin("planning", {"trials": 3})
    with pytest.raises(WorldForgeError, match="suite 'physics' takes no options; got option 'seed'"):
        EvaluationSuite.from_builtin("physics", {"seed": 1})
    with pytest.raises(
        WorldForgeError, match="Unknown evaluation suite 'nope'. Known suites: physics, planning"
    ):
        EvaluationSuite.from_builtin("nope")
    with pytest.raises(WorldForgeError, match="is built in and cannot be replaced"):
        EvaluationSuite.register("planning", lambda: None)
    EvaluationSuite.register("x", lambda: _one_scenario_suite(lambda c: c.outcome(score=1, passed=True)))
    with pytest.raises(WorldForgeError, match="already registered"):
        EvaluationSuite.register("x", lambda: None)
    assert "x" in EvaluationSuite.registered_names()


def test_scenarios_get_fresh_world_copies() -> None:
    seen: list[int] = []

    def mutate(context: EvaluationContext) -> Any:
        seen.append(context.world.object_count)
        context.world.add_object("junk")
        return context.outcome(score=1.0, passed=True)

    suite = EvaluationSuite.custom(
        suite_id="iso",
        name="Iso",
        suite_version="iso:1",
        claim_boundary="none",
        scenarios=[
            EvaluationScenario.from_callable(name="a", description="a", evaluator=mutate),
            EvaluationScenario.from_callable(name="b", description="b", evaluator=mutate),
        ],
    )
    suite.run_report("mock", forge=WorldForge())
    assert seen == [0, 0]


def test_provenance_envelope_validation() -> None:
    report = EvaluationSuite.from_builtin("physics").run_report("mock", forge=WorldForge())
    assert report.provenance is not None
    payload = report.provenance.to_dict()
    assert list(payload)[:2] == ["schema_version", "kind"]
    assert ProvenanceEnvelope.from_dict(payload) == report.provenance
    with pytest.raises(WorldForgeError, match="schema_version: expected 2"):
        ProvenanceEnvelope.from_dict({**payload, "schema_version": 1})
    with pytest.raises(WorldForgeError, match="input_digest"):
        ProvenanceEnvelope.from_dict({**payload, "input_digest": "abc"})
    with pytest.raises(WorldForgeError, match="event_count"):
        ProvenanceEnvelope.from_dict({**payload, "event_count": -1})
    assert report.provenance.with_overrides(command=["worldforge", "eval"]).command == ["worldforge", "eval"]


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _json, max_size=4))
def test_json_native_metrics_are_accepted_and_digest_stably(metrics: dict[str, Any]) -> None:
    from worldforge.core.digests import digest_payload
    from worldforge.evaluation.types import validate_metrics

    assert validate_metrics(metrics) == metrics
    result = EvaluationResult("s", "S", "x", "mock", 0.5, True, metrics)
    assert digest_payload(result.to_dict()) == digest_payload(
        EvaluationResult.from_dict(result.to_dict()).to_dict()
    )


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), _json, min_size=1, max_size=4), st.data())
def test_a_tuple_anywhere_is_rejected_with_its_path(metrics: dict[str, Any], data: st.DataObject) -> None:
    from worldforge.evaluation.types import validate_metrics

    key = data.draw(st.sampled_from(sorted(metrics)))
    poisoned = dict(metrics, **{key: {"inner": [1, (2, 3)]}})
    with pytest.raises(WorldForgeError, match=re.escape(f"metrics.{key}.inner[1]: value of type tuple")):
        validate_metrics(poisoned)


class _FakeEntryPoint:
    def __init__(self, name: str, target: Any) -> None:
        self.name = name
        self.value = f"fake:{name}"
        self._target = target

    def load(self) -> Any:
        return self._target


def test_entry_point_suites_and_providers_are_discovered(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from worldforge.providers.mock import MockProvider

    def ok(context: EvaluationContext) -> Any:
        return context.outcome(score=1.0, passed=True)

    def make_suite() -> EvaluationSuite:
        return _one_scenario_suite(ok, ("generate",))

    def make_provider(arg: str | None = None) -> MockProvider:
        provider = MockProvider(arg or "")
        provider.name = f"plug:{arg}" if arg else "plug"
        return provider

    groups = {
        "worldforge.suites": [_FakeEntryPoint("plugged-suite", make_suite)],
        "worldforge.providers": [_FakeEntryPoint("plug", make_provider)],
    }
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: groups.get(group, []))
    assert "plugged-suite" in EvaluationSuite.registered_names()
    suite = EvaluationSuite.from_reference("plugged-suite")
    assert suite.cli_ref == "plugged-suite"
    forge = WorldForge(discover_entry_points=True)
    assert "plug" in forge.provider_names()
    report = suite.run_report(["plug", "plug:x"], forge=forge)
    assert [r.provider for r in report.results] == ["plug", "plug:x"]
    assert WorldForge(discover_entry_points=False).provider_names() == ["mock", "ollama", "openai"]
