"""The Python faces of ``runs resume`` and ``eval``: plan_resume/resume_run and evaluate()."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_cli_eval import INTERRUPTIBLE, ROOT, WORLDFORGE
from worldforge.core.errors import WorldForgeError
from worldforge.evaluation.runner import EvaluationRequest, evaluate
from worldforge.workspace.resume import plan_resume, resume_args, resume_run


def test_resume_args_replace_an_earlier_resume_flag() -> None:
    argv = ["worldforge", "eval", "--resume-run", "old", "--suite", "x", "--resume-run=older"]
    assert resume_args(argv, "new") == ["eval", "--suite", "x", "--resume-run", "new"]


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

    plan = plan_resume(tmp_path / "ws", run_dir.name[:12])  # a unique prefix names the run
    assert plan.run_id == run_dir.name and plan.cwd == tmp_path and not plan.is_script
    assert plan.args[-2:] == ["--resume-run", run_dir.name]

    monkeypatch.setenv("WF_TEST_INTERRUPT", "0")
    log.write_text("")
    assert resume_run(tmp_path / "ws", run_dir.name) == 0
    assert log.read_text().split() == ["mock/b", "mock/c"]  # a was reused from its item record
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    with pytest.raises(WorldForgeError, match="status is 'completed'"):
        plan_resume(tmp_path / "ws", run_dir.name)


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
    assert outcome.report.provenance is not None
    assert outcome.report.provenance.result_digest == cli_manifest["result_digest"]
    assert cli.returncode == 0
