"""Token and cost accounting of science-birds runs: sums over the item records, replay, pricing and
the run's token limit (stop, keep what was done, resume to completion)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.suites.test_science_birds import PixelClassifier
from worldforge.config import Price, parse_config
from worldforge.core.errors import WorldForgeError
from worldforge.evaluation.runner import EvaluationRequest, evaluate
from worldforge.evaluation.summary import GenerationStopped
from worldforge.suites.science_birds.config import Classifier
from worldforge.suites.science_birds.usage import ALL, item_usage
from worldforge.workspace.requests import read_request

OPTIONS: dict[str, Any] = {"characters": "A,C", "trials": 2, "progress": False, "workers": 1, "chunk_size": 1}
MODELS = ["mock", "mock:v2"]
PROGRAMS = ["zero-shot", "zero-shot-multi-turn"]


@pytest.fixture
def pixel_classifier(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """The suite's classifier through :class:`PixelClassifier`, in a directory of its own."""
    fake = PixelClassifier()
    monkeypatch.setattr(Classifier, "identity", lambda self: fake.identity())
    monkeypatch.setattr(
        Classifier, "classify", lambda self, pngs, embedding=True: fake.classify(pngs, embedding)
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)
    yield


def _run_dir(workspace: Path, run_id: str | None = None) -> Path:
    if run_id is not None:
        return workspace / "runs" / run_id
    (only,) = (workspace / "runs").iterdir()
    return only


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text())["record"] for p in sorted((run_dir / "items").iterdir())]


def _hand_sum(records: list[dict[str, Any]], model: str, program: str) -> dict[str, int]:
    """The counts summed straight from the recorded exchanges (independent of the suite's code)."""
    out = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for r in records:
        if (r["model"], r["program"]) != (model, program):
            continue
        out["requests"] += len(r["exchanges"])
        for e in r["exchanges"]:
            usage = (e.get("response") or {}).get("usage") or {}
            out["prompt_tokens"] += usage.get("prompt_tokens", 0)
            out["completion_tokens"] += usage.get("completion_tokens", 0)
    return out


def test_totals_equal_the_sum_over_item_records(pixel_classifier: None) -> None:
    outcome = evaluate(
        EvaluationRequest(suite="science-birds", providers=MODELS, options=OPTIONS, workspace=Path("ws"))
    )
    run_dir = _run_dir(Path("ws"))
    records = _records(run_dir)
    assert len(records) == 2 * 2 * 2 * 2
    section = outcome.report.sections["token_usage"]
    rows = {(r["model"], r["program"]): r for r in section["rows"]}
    assert set(rows) == {(m, p) for m in MODELS for p in PROGRAMS} | {(ALL, ALL)}
    for model in MODELS:
        for program in PROGRAMS:
            expected = _hand_sum(records, model, program)
            row = rows[(model, program)]
            assert {k: row[k] for k in expected} == expected
            assert row["total_tokens"] == expected["prompt_tokens"] + expected["completion_tokens"] > 0
            # the gateway's count is what the trial itself read back from the answers
            usage = [r["usage"] for r in records if (r["model"], r["program"]) == (model, program)]
            assert row["prompt_tokens"] == sum(u["prompt_tokens"] for u in usage)
            assert row["completion_tokens"] == sum(u["completion_tokens"] for u in usage)
    total = rows[(ALL, ALL)]
    for key in ("requests", "prompt_tokens", "completion_tokens", "total_tokens", "failed_trial_tokens"):
        assert total[key] == sum(r[key] for k, r in rows.items() if k != (ALL, ALL))
    assert section["total"] == total
    assert all("seconds" not in key for row in section["rows"] for key in row)  # timings stay out
    ranking = json.loads((run_dir / "science-birds" / "ranking.json").read_text())
    assert ranking["usage"] == section["rows"]
    summary = json.loads((run_dir / "results" / "summary.json").read_text())
    assert summary["usage"] == total
    markdown = (run_dir / "reports" / "report.md").read_text()
    assert "Token usage per model and program" in markdown and f"| {total['total_tokens']} |" in markdown
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    (wall,) = [e["payload"]["rows"] for e in events if e["type"] == "gateway.usage"]
    assert {(r["model"], r["program"]) for r in wall} == {(m, p) for m in MODELS for p in PROGRAMS}
    assert all(r["gateway_wall_seconds"] >= 0 for r in wall)


def test_failed_trials_count_their_tokens() -> None:
    ok = {
        "status": "ok",
        "exchanges": [{"response": {"usage": {"prompt_tokens": 5, "completion_tokens": 2}}}],
    }
    refused = {"status": "failed", "exchanges": [{"error": {"type": "trial_limit"}}]}
    assert (item_usage(ok).requests, item_usage(ok).total_tokens) == (1, 7)
    assert (item_usage(refused).requests, item_usage(refused).total_tokens) == (1, 0)
    direct = {"status": "failed", "usage": {"prompt_tokens": 3, "completion_tokens": 4}}
    assert (item_usage(direct).requests, item_usage(direct).total_tokens) == (0, 7)


def test_replay_reports_the_recorded_counts(pixel_classifier: None) -> None:
    first = evaluate(
        EvaluationRequest(suite="science-birds", providers=["mock"], options=OPTIONS, workspace=Path("ws"))
    )
    again = evaluate(
        EvaluationRequest(
            suite="science-birds",
            providers=["mock"],
            options=OPTIONS,
            workspace=Path("ws"),
            replay=first.run_id,
        )
    )
    assert again.report.sections["token_usage"] == first.report.sections["token_usage"]
    assert again.report.sections["token_usage"]["total"]["total_tokens"] > 0


def test_a_priced_run_reports_cost_per_program(pixel_classifier: None) -> None:
    pricing = {"mock": {"input": 2.5, "output": 10}}
    outcome = evaluate(
        EvaluationRequest(
            suite="science-birds", providers=["mock"], options={**OPTIONS, "pricing": pricing}, workspace=None
        )
    )
    section = outcome.report.sections["token_usage"]
    for row in section["rows"]:
        expected = (row["prompt_tokens"] * 2.5 + row["completion_tokens"] * 10) / 1_000_000
        assert row["cost"] == round(expected, 6) > 0
    assert section["cost_per_program"] == {
        row["program"]: row["cost"] for row in section["rows"] if row["program"] != ALL
    }


def test_pricing_config_is_checked() -> None:
    config = parse_config(
        {"pricing": {"mock": {"input": 1, "output": 2.5}}}, Path("/p/.worldforge/config.yaml")
    )
    assert config.pricing == {"mock": Price(1.0, 2.5)}
    for bad in (
        {"mock": {"input": 1}},
        {"mock": {"input": -1, "output": 1}},
        {"mock": {"in": 1, "output": 1}},
    ):
        with pytest.raises(WorldForgeError, match="pricing"):
            parse_config({"pricing": bad}, Path("/p/.worldforge/config.yaml"))


def test_a_model_missing_from_the_price_map_fails_before_any_request(tmp_path: Path) -> None:
    config = tmp_path / ".worldforge" / "config.yaml"
    config.parent.mkdir()
    config.write_text("pricing:\n  mock:\n    input: 1\n    output: 2\n")
    args = ["eval", "--suite", "science-birds", "--provider", "mock", "--provider", "mock:v2"]
    args += ["--characters", "A", "--trials", "2", "--run-workspace", "ws"]
    env = {**os.environ, "WORLDFORGE_CONFIG": str(config)}
    result = subprocess.run(
        [sys.executable, "-m", "worldforge", *args], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "mock:v2" in result.stderr
    assert "pricing" in result.stderr
    assert not (tmp_path / "ws" / "runs").exists() or not any((tmp_path / "ws" / "runs").iterdir())


def test_max_run_tokens_stops_keeps_work_and_resumes(pixel_classifier: None) -> None:
    reference = evaluate(
        EvaluationRequest(suite="science-birds", providers=["mock"], options=OPTIONS, workspace=Path("ref"))
    )
    full = reference.report.sections["token_usage"]["total"]["total_tokens"]
    limited = {**OPTIONS, "max_run_tokens": full * 6 // 10}
    with pytest.raises(GenerationStopped, match="token limit") as stop:
        evaluate(
            EvaluationRequest(
                suite="science-birds", providers=["mock"], options=limited, workspace=Path("ws")
            )
        )
    run_dir = _run_dir(Path("ws"))
    kept = _records(run_dir)
    assert 0 < len(kept) < 8  # what was done is kept, the rest is left for the resume
    assert sum(item_usage(r).total_tokens for r in kept) <= full * 6 // 10
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "failed" and run_dir.name in str(stop.value)
    assert "Generation stopped early" in (run_dir / "reports" / "report.md").read_text()
    summary = json.loads((run_dir / "results" / "summary.json").read_text())
    assert "token limit" in summary["usage"]["stopped"]

    # `worldforge runs resume`: the recorded request, evaluated again as that run
    recorded = read_request(run_dir)
    assert recorded is not None
    request = EvaluationRequest.from_record(recorded.request, workspace=Path("ws"), resume_run=run_dir.name)
    done = len(kept)
    for _ in range(3):  # the limit applies to each invocation's requests: resume until all are in
        try:
            resumed = evaluate(request)
            break
        except GenerationStopped:
            assert len(_records(run_dir)) > done
            done = len(_records(run_dir))
    else:
        pytest.fail("the run did not complete within three resumes")
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed" and len(_records(run_dir)) == 8
    ref_manifest = json.loads((_run_dir(Path("ref")) / "run_manifest.json").read_text())
    assert manifest["result_digest"] == ref_manifest["result_digest"]
    assert resumed.report.sections["token_usage"] == reference.report.sections["token_usage"]


@pytest.mark.slow
def test_max_run_tokens_from_the_command_line_resumes_with_runs_resume(tmp_path: Path) -> None:
    base = ["--suite", "science-birds", "--provider", "mock", "--characters", "A,C", "--trials", "2"]
    base += ["--workers", "1", "--format", "json"]
    env = {k: v for k, v in os.environ.items() if k != "WORLDFORGE_CONFIG"}

    def worldforge(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "worldforge", *args]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)

    stopped = worldforge("eval", *base, "--run-workspace", "ws", "--max-run-tokens", "4000")
    assert stopped.returncode == 1, stopped.stderr
    assert "runs resume" in stopped.stderr.strip().splitlines()[-1]
    run_dir = _run_dir(tmp_path / "ws")
    assert 0 < len(list((run_dir / "items").iterdir())) < 8
    # the limit is recorded with the request and applies to each invocation's own requests: a run
    # resumes (again, if its rest still passes the limit) until every item is recorded
    done = len(list((run_dir / "items").iterdir()))
    for _ in range(3):
        resumed = worldforge("runs", "resume", run_dir.name, "--workspace", "ws")
        now = len(list((run_dir / "items").iterdir()))
        assert now > done, resumed.stderr
        done = now
        if resumed.returncode == 0:
            break
        assert resumed.returncode == 1 and "runs resume" in resumed.stderr
    assert resumed.returncode == 0, resumed.stderr
    whole = worldforge("eval", *base, "--run-workspace", "ref")
    assert whole.returncode == 0, whole.stderr
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    reference = json.loads((_run_dir(tmp_path / "ref") / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["result_digest"] == reference["result_digest"]
