"""End to end through the real `worldforge eval` command in subprocesses: kill -9 mid-run then verify
and resume to the uninterrupted result digest; 8 concurrent runs in one workspace; diff exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from worldforge.workspace import load_manifest, verify_run

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

SLOW_SUITE = textwrap.dedent(
    """
    import time
    from worldforge.evaluation import EvaluationScenario, EvaluationSuite

    def make(index):
        def evaluator(context):
            time.sleep(0.15)
            return context.outcome(score=round(index / 20, 3), passed=index % 3 != 0,
                                   metrics={"index": index, "objects": context.world.object_count})
        return evaluator

    def build_suite(options=None):
        return EvaluationSuite.custom(
            suite_id="slow-items",
            name="Slow items",
            suite_version="slow-items:1",
            claim_boundary="test fixture suite",
            scenarios=[EvaluationScenario.from_callable(name=f"item-{i:02d}", description="sleeps",
                                                        evaluator=make(i)) for i in range(12)],
        )
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "WORLDFORGE_CONFIG": ""}


def _eval(suite: Path, ws: Path, provider: str = "mock") -> list[str]:
    return [
        sys.executable,
        "-m",
        "worldforge",
        "eval",
        "--suite",
        f"{suite}:build_suite",
        "--provider",
        provider,
        "--run-workspace",
        str(ws),
        "--format",
        "json",
    ]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worldforge", *args],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture()
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "slow_suite.py"
    path.write_text(SLOW_SUITE)
    return path


def _only_run(ws: Path) -> Path:
    (run_dir,) = list((ws / "runs").iterdir())
    return run_dir


def test_kill_nine_verify_resume_matches_uninterrupted(tmp_path: Path, suite: Path) -> None:
    clean_ws, ws = tmp_path / "clean", tmp_path / "ws"
    clean = subprocess.run(
        _eval(suite, clean_ws), capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300
    )
    assert clean.returncode == 0, clean.stderr
    clean_manifest = load_manifest(_only_run(clean_ws))
    assert clean_manifest["status"] == "completed" and clean_manifest["items"]["count"] == 12

    proc = subprocess.Popen(
        _eval(suite, ws), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(), cwd=tmp_path
    )
    deadline = time.time() + 120
    items: list[Path] = []
    while time.time() < deadline:
        items = list(ws.glob("runs/*/items/*.json"))
        if len(items) >= 4:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 4 <= len(items) < 12
    run_dir = _only_run(ws)
    verify = _cli("runs", "verify", run_dir.name, "-w", str(ws), "--format", "json", cwd=tmp_path)
    assert verify.returncode == 1
    report = json.loads(verify.stdout)
    assert report["status"] == "interrupted"
    assert "missing-terminal-event" in {p["code"] for p in report["problems"]}

    resumed = _cli("runs", "resume", run_dir.name, "-w", str(ws), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    manifest = load_manifest(run_dir)
    assert manifest["status"] == "completed" and manifest["resume_count"] == 1
    assert manifest["result_digest"] == clean_manifest["result_digest"]
    assert manifest["items"] == clean_manifest["items"]
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    resumed_event = next(e for e in events if e["type"] == "run.resumed")
    assert resumed_event["payload"]["reused_items"] >= 4
    assert verify_run(run_dir).ok, verify_run(run_dir).to_dict()
    same = _cli("runs", "diff", str(_only_run(clean_ws)), str(run_dir), "-w", str(ws), cwd=tmp_path)
    assert same.returncode == 0, same.stdout


def test_eight_concurrent_eval_runs_verify(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    cmd = [
        sys.executable,
        "-m",
        "worldforge",
        "eval",
        "--suite",
        "planning",
        "--provider",
        "mock",
        "--run-workspace",
        str(ws),
        "--format",
        "json",
    ]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(), cwd=tmp_path)
        for _ in range(8)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    runs = sorted((ws / "runs").iterdir())
    assert len(runs) == 8
    digests = set()
    for run_dir in runs:
        report = verify_run(run_dir)
        assert report.ok, report.to_dict()
        digests.add(load_manifest(run_dir)["result_digest"])
    assert len(digests) == 1  # identical inputs, identical results
    listing = _cli("runs", "list", "-w", str(ws), "--format", "json", cwd=tmp_path)
    assert json.loads(listing.stdout)["run_count"] == 8


def test_identical_runs_diff_zero_changed_provider_diff_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    base = [
        sys.executable,
        "-m",
        "worldforge",
        "eval",
        "--suite",
        "planning",
        "--run-workspace",
        str(ws),
        "--format",
        "json",
    ]
    for provider in ("mock", "mock", "mock:other"):
        done = subprocess.run(
            [*base, "--provider", provider],
            capture_output=True,
            text=True,
            env=_env(),
            cwd=tmp_path,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    a, b, c = sorted(p.name for p in (ws / "runs").iterdir())
    same = _cli("runs", "diff", a, b, "-w", str(ws), cwd=tmp_path)
    assert same.returncode == 0 and "identical results" in same.stdout
    changed = _cli("runs", "diff", a, c, "-w", str(ws), "--format", "json", cwd=tmp_path)
    assert changed.returncode == 1
    payload = json.loads(changed.stdout)
    assert payload["identical_results"] is False
    assert payload["causes"][0] == "provider-changed"
    assert payload["changes"][-1]["reason"] == "provider-changed"
