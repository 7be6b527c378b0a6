"""run_report inside a run workspace: one item per (provider, scenario), resume reuses them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from worldforge import WorldForge
from worldforge.evaluation import EvaluationContext, EvaluationScenario, EvaluationSuite, result_payload

workspace = pytest.importorskip("worldforge.workspace")


def _counting_suite(calls: list[str], fail_on: str | None = None) -> EvaluationSuite:
    def make(name: str) -> Any:
        def evaluator(context: EvaluationContext) -> Any:
            calls.append(f"{context.provider}/{name}")
            if name == fail_on:
                raise KeyboardInterrupt  # simulated interruption mid-run
            return context.outcome(score=0.5, passed=True, metrics={"name": name})

        return evaluator

    return EvaluationSuite.custom(
        suite_id="resumable",
        name="Resumable",
        suite_version="resumable:1",
        claim_boundary="Test suite; no claims.",
        scenarios=[
            EvaluationScenario.from_callable(name=n, description=n, evaluator=make(n))
            for n in ("a", "b", "c")
        ],
    )


def test_items_recorded_and_reused_on_resume(tmp_path: Path) -> None:
    calls: list[str] = []
    argv = ["worldforge", "eval", "--suite", "resumable"]
    with pytest.raises(KeyboardInterrupt):
        with workspace.start_run(
            tmp_path, kind="evaluation", argv=argv, config={"suite": "resumable"}
        ) as run:
            run_id = run.run_id
            forge = WorldForge(event_sinks=[run.event_sink])
            _counting_suite(calls, fail_on="c").run_report(["mock", "mock:b"], forge=forge, run=run)
    assert calls == ["mock/a", "mock/b", "mock/c"]
    manifest = json.loads((tmp_path / "runs" / run_id / "run_manifest.json").read_text())
    assert manifest["status"] == "interrupted"

    calls.clear()
    with workspace.start_run(
        tmp_path, kind="evaluation", argv=argv, config={"suite": "resumable"}, resume_run_id=run_id
    ) as run:
        report = _counting_suite(calls).run_report(["mock", "mock:b"], forge=WorldForge(), run=run)
        run.complete(result_payload(report), claim_boundary=report.claim_boundary)
    # a and b of mock were reused; everything else ran now
    assert calls == ["mock/c", "mock:b/a", "mock:b/b", "mock:b/c"]
    fresh = _counting_suite([]).run_report(["mock", "mock:b"], forge=WorldForge())
    assert report.provenance and fresh.provenance
    assert report.provenance.result_digest == fresh.provenance.result_digest
    manifest = json.loads((tmp_path / "runs" / run_id / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["result_digest"] == report.provenance.result_digest
    assert manifest["items"]["count"] == 6


def test_provider_events_reach_the_run_event_log(tmp_path: Path) -> None:
    with workspace.start_run(tmp_path, kind="evaluation", argv=["worldforge"], config={}) as run:
        forge = WorldForge(event_sinks=[run.event_sink])
        report = EvaluationSuite.from_builtin("physics").run_report("mock", forge=forge, run=run)
        run.complete(result_payload(report))
        run_dir = Path(run.dir)
    lines = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    provider_events = [e for e in lines if e.get("type") == "provider.event"]
    assert report.provenance is not None
    assert len(provider_events) == report.provenance.event_count == 4
