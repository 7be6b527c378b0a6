"""The Python faces of ``runs resume`` and ``eval``: recorded requests, plan_resume/resume_run and
evaluate()."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.cli.test_cli_eval import INTERRUPTIBLE, ROOT, WORLDFORGE
from worldforge.benchmark.service import BENCHMARK_KIND, BenchmarkRequest
from worldforge.cli.resume import RESUMERS
from worldforge.core.canonical import pretty_json
from worldforge.core.errors import WorldForgeError
from worldforge.evaluation.runner import EVALUATION_KIND, EvaluationRequest, evaluate
from worldforge.pcg.competition.orchestrate import STAGE_KIND, StageRequest
from worldforge.workspace.requests import RecordedRequest
from worldforge.workspace.resume import plan_resume, resume_run

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | names
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
opt_int = st.none() | st.integers(0, 2**62)

evaluation_requests = st.builds(
    EvaluationRequest,
    suite=names,
    providers=st.lists(names, max_size=3).map(tuple),
    options=st.dictionaries(names, json_value, max_size=4),
    suite_options=st.lists(names, max_size=3).map(tuple),
    dataset_manifests=st.lists(names, max_size=2).map(tuple),
    replay=st.none() | names,
)
stage_requests = st.builds(
    StageRequest,
    stage=names,
    source=names,
    workers=st.none() | st.integers(1, 64),
    physics_trials=st.integers(1, 9),
    raw_images=st.booleans(),
    classifier=st.none() | names,
    trials=st.integers(1, 20),
    diversity_vector=names,
    exact=st.booleans(),
    models=st.none() | st.lists(names, max_size=3).map(tuple),
    baselines=st.none() | st.lists(names, max_size=3).map(tuple),
    zero_shot=st.none() | names,
    uncertainty_resamples=opt_int,
    uncertainty_seed=opt_int,
    executor=names,
    ray_address=st.none() | names,
)


@given(evaluation_requests)
def test_an_evaluation_request_round_trips_through_its_record(request: EvaluationRequest) -> None:
    record = json.loads(pretty_json(RecordedRequest(EVALUATION_KIND, request.to_record()).to_dict()))
    assert EvaluationRequest.from_record(RecordedRequest.from_dict(record).request) == request


@given(stage_requests)
def test_a_stage_request_round_trips_through_its_record(request: StageRequest) -> None:
    record = json.loads(pretty_json(request.to_record()))
    assert StageRequest.from_record(record) == request


@given(names, st.none() | st.integers(1, 10**6))
def test_a_benchmark_request_round_trips_through_its_record(preset: str, iterations: int | None) -> None:
    request = BenchmarkRequest(preset, iterations)
    assert BenchmarkRequest.from_record(json.loads(pretty_json(request.to_record()))) == request


def test_malformed_records_are_refused_in_one_line() -> None:
    with pytest.raises(WorldForgeError, match="unknown keys extra"):
        EvaluationRequest.from_record({"suite": "planning", "extra": 1})
    with pytest.raises(WorldForgeError, match="'providers' must be a list of strings"):
        EvaluationRequest.from_record({"suite": "planning", "providers": "mock"})
    with pytest.raises(WorldForgeError, match="'trials' must be of type int"):
        StageRequest.from_record({**StageRequest("extract", "comp").to_record(), "trials": True})
    with pytest.raises(WorldForgeError, match="missing source"):
        StageRequest.from_record(
            {k: v for k, v in StageRequest("x", "y").to_record().items() if k != "source"}
        )
    with pytest.raises(WorldForgeError, match="'iterations' must be a whole number"):
        BenchmarkRequest.from_record({"preset": "mock-smoke", "iterations": "3"})
    with pytest.raises(WorldForgeError, match="schema version 2 is newer"):
        RecordedRequest.from_dict({"schema_version": 2, "kind": "evaluation", "request": {}})


def test_every_recorded_kind_has_a_resumer() -> None:
    assert set(RESUMERS) == {EVALUATION_KIND, STAGE_KIND, BENCHMARK_KIND}


def test_resume_run_finishes_an_interrupted_run_from_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "interruptible.py").write_text(INTERRUPTIBLE)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("WF_TEST_LOG", str(log))
    monkeypatch.setenv("WF_TEST_INTERRUPT", "1")
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)
    argv = [
        *WORLDFORGE,
        "eval",
        "--suite",
        "interruptible.py:build",
        "--provider",
        "mock",
        "--format",
        "json",
    ]
    first = subprocess.run([*argv, "--run-workspace", "ws"], cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode != 0
    (run_dir,) = list((tmp_path / "ws" / "runs").iterdir())
    with pytest.raises(WorldForgeError, match="resume it from the directory it started in"):
        plan_resume(tmp_path / "ws", run_dir.name)  # relative paths: only from where it started

    monkeypatch.chdir(tmp_path)
    plan = plan_resume("ws", run_dir.name[:12])  # a unique prefix names the run
    assert plan.run_id == run_dir.name and plan.kind == EVALUATION_KIND
    assert EvaluationRequest.from_record(plan.request) == EvaluationRequest(
        suite="interruptible.py:build", providers=("mock",)
    )
    assert plan.argv[1:3] == ["eval", "--suite"]
    public = json.loads((run_dir / "request.json").read_text())
    assert public == {"schema_version": 1, "kind": EVALUATION_KIND, "request": plan.request}

    monkeypatch.setenv("WF_TEST_INTERRUPT", "0")
    log.write_text("")
    assert resume_run("ws", run_dir.name) == 0
    assert log.read_text().split() == ["mock/b", "mock/c"]  # a was reused from its item record
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    with pytest.raises(WorldForgeError, match="status is 'completed'"):
        plan_resume("ws", run_dir.name)


def test_evaluate_records_the_same_run_as_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)
    outcome = evaluate(EvaluationRequest(suite="planning", providers=["mock"], workspace=Path("api")))
    assert outcome.run_id is not None and outcome.html_path is not None and outcome.html_path.is_file()
    cli = subprocess.run(
        [*WORLDFORGE, "eval", "--suite", "planning", "--provider", "mock", "--run-workspace", "cli"],
        capture_output=True,
        text=True,
        check=True,
    )
    (api_run,) = (tmp_path / "api" / "runs").iterdir()
    (cli_run,) = (tmp_path / "cli" / "runs").iterdir()
    api_manifest = json.loads((api_run / "run_manifest.json").read_text())
    cli_manifest = json.loads((cli_run / "run_manifest.json").read_text())
    for key in ("input_digest", "result_digest", "status"):
        assert api_manifest[key] == cli_manifest[key], key
    assert (api_run / "results" / "summary.json").read_bytes() == (
        cli_run / "results" / "summary.json"
    ).read_bytes()
    assert (api_run / "request.json").read_bytes() == (cli_run / "request.json").read_bytes()
    assert outcome.report.provenance is not None
    assert outcome.report.provenance.result_digest == cli_manifest["result_digest"]
    assert cli.returncode == 0
