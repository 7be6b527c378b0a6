"""The whole field in one command: qualification before the run, the table as an artifact, teams
that do not qualify left out of the ranking, and a field run killed mid-way finished by
``runs resume`` without running its finished trials again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from tests.sandboxing import require_sandbox

ROOT = Path(__file__).resolve().parents[2]
FIELD = ROOT / "examples" / "field"
WORLDFORGE = [shutil.which("worldforge") or "worldforge"]


def _eval(workspace: Path, source: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [*WORLDFORGE, "eval", "--suite", "science-birds", "--provider",
            "mock", "--programs", str(source), "--characters", "AB", "--trials", "2", "--no-install",
            "--run-workspace", str(workspace), "--format", "json", *extra]  # fmt: skip
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=900)


def _run_dir(workspace: Path) -> Path:
    (run_dir,) = (workspace / "runs").iterdir()
    return run_dir


@pytest.mark.slow
def test_a_field_zip_runs_the_qualified_teams_and_reports_the_rest(tmp_path: Path) -> None:
    require_sandbox()
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(FIELD.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, "submissions/" + path.relative_to(FIELD).as_posix())
    done = _eval(tmp_path / "ws", archive)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    ranked = {r["program"] for r in report["sections"]["ranking"]["rows"]}
    table = {r["team"]: r for r in report["sections"]["qualification"]["rows"]}
    assert set(table) == {"hard-coded-team", "package-team", "prompts-top-team", "relative-imports-team",
                          "top_level_team"}  # fmt: skip
    assert table["hard-coded-team"]["qualified"] is False and table["hard-coded-team"]["ran"] is False
    assert "hard-coded per-letter answers" in table["hard-coded-team"]["reasons"]
    assert ranked == {name for name, row in table.items() if row["qualified"]}
    failed = sum(int(r["metrics"]["failed_trials"]) for r in report["results"])
    assert failed == 0, report["provenance"]["notes"]
    run_dir = _run_dir(tmp_path / "ws")
    artifact = json.loads((run_dir / "science-birds" / "qualification.json").read_text())
    assert [row["team"] for row in artifact] == sorted(table)
    summary = (run_dir / "science-birds" / "teams" / "hard-coded-team.md").read_text()
    assert summary.startswith("# hard-coded-team: evaluation summary") and "Not qualified:" in summary


@pytest.mark.slow
def test_a_killed_field_run_resumes_without_running_finished_trials(tmp_path: Path) -> None:
    require_sandbox()
    field = tmp_path / "field"
    shutil.copytree(FIELD, field, ignore=shutil.ignore_patterns("__pycache__"))
    workspace = tmp_path / "ws"
    args = [*WORLDFORGE, "eval", "--suite", "science-birds", "--provider",
            "mock", "--programs", str(field), "--characters", "A-D", "--trials", "2", "--no-install",
            "--workers", "1", "--run-workspace", str(workspace), "--format", "json"]  # fmt: skip
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 600
    items: list[Path] = []
    while time.monotonic() < deadline and proc.poll() is None:
        items = sorted(workspace.glob("runs/*/items/*.json"))
        if len(items) >= 6:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(items) >= 6, "the run finished or stalled before it could be killed mid-way"
    before = {p.name: p.stat().st_mtime_ns for p in sorted(workspace.glob("runs/*/items/*.json"))}
    run_dir = _run_dir(workspace)
    resume = [*WORLDFORGE, "runs", "resume", run_dir.name,
              "--workspace-dir", str(workspace)]  # fmt: skip
    resumed = subprocess.run(resume, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    after = {p.name: p.stat().st_mtime_ns for p in sorted(run_dir.glob("items/*.json"))}
    assert len(after) == 4 * 2 * 4  # four qualified teams x four letters x two trials
    assert {k: after[k] for k in before} == before  # finished trials were not run again
