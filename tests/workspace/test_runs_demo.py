"""scripts/demo_showcases.py: the custom evaluation walkthrough leaves sanitized artifacts and a
verifiable run, and refuses to overwrite without --overwrite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from worldforge.workspace import load_manifest, verify_run

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "demo_showcases.py"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_custom_evaluation_walkthrough(tmp_path: Path) -> None:
    ws = tmp_path / "demo"
    done = run(
        "run",
        "custom-evaluation-suite",
        "--workspace-dir",
        str(ws),
        "--overwrite",
        "--format",
        "json",
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["status"] == "passed"
    (result,) = payload["results"]
    assert result["checks"] == {
        "controlled_failure_in_gallery": True,
        "gallery_sanitized": True,
        "all_artifacts_written": True,
    }
    assert (result["passed_count"], result["failed_count"]) == (1, 1)
    out = ws / "custom-evaluation-suite"
    for name in (
        "report.json",
        "report.md",
        "report.csv",
        "report.html",
        "failure_gallery.json",
        "failure_gallery.md",
        "walkthrough-summary.json",
        "workflow-result.json",
    ):
        assert (out / name).is_file(), name
    gallery = json.loads((out / "failure_gallery.json").read_text())
    assert gallery["case_count"] == 1
    text = (out / "failure_gallery.json").read_text()
    assert "/home/example" not in text and "sk-example-not-a-real-key" not in text
    run_dir = ws / "runs" / result["run_id"]
    manifest = load_manifest(run_dir)
    assert manifest["kind"] == "demo" and manifest["status"] == "completed"
    assert {a["path"] for a in manifest["artifacts"]} >= {
        "reports/failure_gallery.json",
        "results/walkthrough-summary.json",
    }
    assert verify_run(run_dir).ok
    again = run("run", "custom-evaluation-suite", "--workspace-dir", str(ws), cwd=REPO)
    assert again.returncode == 2 and "--overwrite" in again.stderr
    listed = run("list", "--format", "json", cwd=REPO)
    assert [w["id"] for w in json.loads(listed.stdout)["workflows"]] == ["custom-evaluation-suite"]
