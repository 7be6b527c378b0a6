"""``worldforge eval --suite science-birds`` from the command line: run workspace, report files,
``runs verify``, kill + ``runs resume``, and the full 26 x 10 mock run (slow)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.checkpoints import tiny_vit

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path) -> list[str]:
    return [sys.executable, "-m", "worldforge", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def _run(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)


def _manifest(workspace: Path) -> tuple[Path, dict[str, Any]]:
    (run_dir,) = list((workspace / "runs").iterdir())
    return run_dir, json.loads((run_dir / "run_manifest.json").read_text())


@pytest.mark.slow
def test_cli_eval_writes_the_run_and_verifies(tmp_path: Path) -> None:
    clf = tiny_vit(tmp_path / "clf")
    ws = tmp_path / "ws"
    args = _cli(
        "eval",
        "--suite",
        "science-birds",
        "--provider",
        "mock",
        "--run-workspace",
        str(ws),
        "--characters",
        "A-C",
        "--trials",
        "2",
        "--classifier",
        str(clf),
        "--workers",
        "2",
        "--format",
        "json",
        cwd=tmp_path,
    )
    proc = _run(args, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["suite_id"] == "science-birds"
    assert {r["scenario"] for r in report["results"]} == {"zero-shot", "zero-shot-multi-turn"}
    run_dir, manifest = _manifest(ws)
    assert f"run {run_dir.name} completed: " in proc.stderr and "report.html" in proc.stderr
    assert manifest["status"] == "completed"
    assert manifest["result_digest"] == report["provenance"]["result_digest"]
    for rel in ("reports/report.html", "reports/report.json", "science-birds/mock/result/trial_scores.csv"):
        assert (run_dir / rel).is_file(), rel
    assert len(list((run_dir / "items").glob("*.json"))) == 12
    assert len(list((run_dir / "images").glob("*.png"))) == 12
    html = (run_dir / "reports" / "report.html").read_text()
    assert html.count("<img ") >= 12 and "not the official Unity/ViT figures" in html
    verify = _run(_cli("runs", "verify", run_dir.name, "--workspace-dir", str(ws), cwd=tmp_path), tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.slow
def test_cli_kill_then_runs_resume_matches_uninterrupted(tmp_path: Path) -> None:
    clf = tiny_vit(tmp_path / "clf")
    common = [
        "--characters",
        "A-Z",
        "--trials",
        "2",
        "--classifier",
        str(clf),
        "--workers",
        "2",
        "--program",
        "zero-shot",
        "--format",
        "json",
    ]
    ref_ws = tmp_path / "ref"
    ref = _run(
        _cli(
            "eval",
            "--suite",
            "science-birds",
            "--provider",
            "mock",
            "--run-workspace",
            str(ref_ws),
            *common,
            cwd=tmp_path,
        ),
        tmp_path,
    )
    assert ref.returncode == 0, ref.stderr[-3000:]
    _, ref_manifest = _manifest(ref_ws)

    ws = tmp_path / "killed"
    proc = subprocess.Popen(
        _cli(
            "eval",
            "--suite",
            "science-birds",
            "--provider",
            "mock",
            "--run-workspace",
            str(ws),
            *common,
            cwd=tmp_path,
        ),
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list(ws.glob("runs/*/items/*.json"))) >= 1:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    run_dir, manifest = _manifest(ws)
    recorded = len(list((run_dir / "items").glob("*.json")))
    assert manifest["status"] == "running" and 1 <= recorded < 52, recorded
    resumed = _run(_cli("runs", "resume", run_dir.name, "--workspace-dir", str(ws), cwd=tmp_path), tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    _, final = _manifest(ws)
    assert final["status"] == "completed"
    assert final["result_digest"] == ref_manifest["result_digest"]
    assert len(list((run_dir / "items").glob("*.json"))) == 52


@pytest.mark.slow
def test_full_mock_run_26_letters_10_trials(tmp_path: Path) -> None:
    """The README's main job in full (2 baselines x 26 letters x 10 trials) with the bundled
    classifier (a tiny local checkpoint stands in only if the bundled one has not been built)."""
    from worldforge.pcg.similarity.classifier import BUNDLED_DIR

    bundled = (BUNDLED_DIR / "config.json").is_file()
    extra = [] if bundled else ["--classifier", str(tiny_vit(tmp_path / "clf"))]
    ws = tmp_path / "ws"
    proc = _run(
        _cli(
            "eval",
            "--suite",
            "science-birds",
            "--provider",
            "mock",
            "--run-workspace",
            str(ws),
            *extra,
            "--format",
            "json",
            cwd=tmp_path,
        ),
        tmp_path,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    for result in report["results"]:
        assert result["metrics"]["trials"] == 260
        assert result["metrics"]["ok_trials"] + result["metrics"]["failed_trials"] == 260
        assert 0.0 <= result["score"] <= 1.0
    weights = report["sections"]["weights_per_letter"]["rows"]
    assert [w["letter"] for w in weights] == [chr(65 + i) for i in range(26)]
    run_dir, manifest = _manifest(ws)
    assert manifest["status"] == "completed" and len(list((run_dir / "items").glob("*.json"))) == 520
    if bundled:  # the mock builds letters the bundled classifier recognises
        assert all(r["metrics"]["mean_similarity"] > 0.7 for r in report["results"])
        assert report["sections"]["measurement"]["classifier.id"] == "worldforge/letter-classifier"
