"""``runs resume`` for the other recorded services: a ``pcg stage`` run and a ``benchmark`` run that
failed part-way are finished from their recorded requests, in another process, with the result
digest of an uninterrupted run made by a third process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.evidence.test_host_leaks import _competition
from worldforge.cli.app import app

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORLDFORGE_CONFIG": ""}
    done = subprocess.run(
        [sys.executable, "-m", "worldforge", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _manifest(workspace: Path) -> dict[str, object]:
    (run_dir,) = (workspace / "runs").iterdir()
    return json.loads((run_dir / "run_manifest.json").read_text())  # type: ignore[no-any-return]


def _crash(*args: object, **kwargs: object) -> None:
    raise RuntimeError("simulated crash")


def test_a_failed_stage_run_resumes_from_its_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)
    _competition(tmp_path / "reference")
    _competition(tmp_path / "comp")
    stage = ["pcg", "stage", "extract", "--workers", "1", "-w"]
    _cli(*stage, "ref-ws", "--source", "reference", cwd=tmp_path)

    with monkeypatch.context() as patch:
        patch.setattr("worldforge.pcg.competition.orchestrate.run_stage", _crash)
        crashed = CliRunner().invoke(app, [*stage, "ws", "--source", "comp"])
    assert crashed.exit_code != 0 and "simulated crash" in str(crashed.exception)
    assert _manifest(tmp_path / "ws")["status"] == "failed"
    (run_dir,) = (tmp_path / "ws" / "runs").iterdir()
    recorded = json.loads((run_dir / "request.json").read_text())
    assert recorded["kind"] == "pcg-stage" and recorded["request"]["source"] == "comp"

    resumed = _cli("runs", "resume", run_dir.name, "-w", "ws", cwd=tmp_path)
    assert json.loads(resumed.stdout)[0]["stage"] == "extract"
    manifest = _manifest(tmp_path / "ws")
    assert manifest["status"] == "completed" and manifest["resume_count"] == 1
    assert manifest["result_digest"] == _manifest(tmp_path / "ref-ws")["result_digest"]


def test_a_failed_benchmark_run_resumes_from_its_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)
    bench = ["benchmark", "--preset", "mock-smoke", "--iterations", "3", "-w"]
    _cli(*bench, "ref-ws", cwd=tmp_path)

    with monkeypatch.context() as patch:
        patch.setattr("worldforge.benchmark.service.run_providers", _crash)
        crashed = CliRunner().invoke(app, [*bench, "ws"])
    assert crashed.exit_code != 0 and "simulated crash" in str(crashed.exception)
    (run_dir,) = (tmp_path / "ws" / "runs").iterdir()
    assert json.loads((run_dir / ".local" / "request.json").read_text())["request"] == {
        "preset": "mock-smoke",
        "iterations": 3,
    }

    resumed = _cli("runs", "resume", run_dir.name, "-w", "ws", cwd=tmp_path)
    assert f"run: {run_dir.name}" in resumed.stdout
    manifest = _manifest(tmp_path / "ws")
    assert manifest["status"] == "completed" and manifest["resume_count"] == 1
    assert manifest["result_digest"] == _manifest(tmp_path / "ref-ws")["result_digest"]
