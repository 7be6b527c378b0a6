"""A workspace written by earlier code still lists, shows, verifies and diffs (``runs`` commands).

``tests/fixtures/workspace-v1`` (see its README) holds runs recorded before the typed run records;
the readers of today must keep reading them exactly: the manifests and item files round-trip byte
for byte through their models, and the ``runs`` commands give the answers they gave then.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from worldforge.cli.app import app
from worldforge.core.canonical import pretty_json
from worldforge.core.errors import WorldForgeError
from worldforge.evaluation.summary import EvaluationSummary
from worldforge.workspace.records import ItemFile, RunManifest

FIXTURE = Path(__file__).parents[1] / "fixtures" / "workspace-v1"
EVAL_A = "20261128T024912.531Z-639b3b7d0e8c"
EVAL_B = "20261128T024922.404Z-ec2f823d1e42"
FAILED = "20261128T024933.252Z-ffac1e6f6cb1"
STAGE = "20261128T024934.377Z-d4c6e62fe4f9"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of the fixture, so no command can change the files in the repository."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "ws"))


def _runs(workspace: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["runs", *args, "--workspace-dir", str(workspace)])
    return result.exit_code, result.output


def test_the_fixture_is_small_and_its_records_round_trip() -> None:
    assert sum(p.stat().st_size for p in FIXTURE.rglob("*") if p.is_file()) < 1_000_000
    for run_dir in sorted((FIXTURE / "runs").iterdir()):
        raw = (run_dir / "run_manifest.json").read_text()
        assert pretty_json(RunManifest.from_dict(json.loads(raw)).to_dict()) == raw
        for item in sorted((run_dir / "items").glob("*.json")):
            body = item.read_text()
            assert pretty_json(ItemFile.from_dict(json.loads(body)).to_dict()) == body


def test_runs_list_and_show(workspace: Path) -> None:
    code, out = _runs(workspace, "list", "--format", "json")
    assert code == 0, out
    rows = {row["run_id"]: row for row in json.loads(out)["runs"]}
    assert list(rows) == [STAGE, FAILED, EVAL_B, EVAL_A]  # newest first
    assert {r: (rows[r]["kind"], rows[r]["status"], rows[r]["item_count"]) for r in rows} == {
        EVAL_A: ("evaluation", "completed", 2),
        EVAL_B: ("evaluation", "completed", 2),
        FAILED: ("evaluation", "failed", 0),
        STAGE: ("pcg-stage", "completed", 8),
    }
    assert rows[EVAL_A]["result_digest"] == (
        "sha256:fca90ea032a697ef959ddac3fdc458915fce92dacaa341db0b52a0de317a9e3a"
    )
    code, out = _runs(workspace, "show", FAILED)
    assert code == 0, out
    assert "  status:        failed" in out
    assert "  error:         WorldForgeError: --trials: diversity needs at least 2 trials per letter." in out
    code, out = _runs(workspace, "show", EVAL_A[:20], "--format", "json")
    assert code == 0, out
    shown = json.loads(out)
    recorded = json.loads((workspace / "runs" / EVAL_A / "run_manifest.json").read_text())
    assert shown == {**recorded, "effective_status": "completed"}


@pytest.mark.parametrize("run_id", [EVAL_A, EVAL_B, FAILED, STAGE])
def test_runs_verify(workspace: Path, run_id: str) -> None:
    code, out = _runs(workspace, "verify", run_id, "--format", "json")
    assert code == 0, out
    report = json.loads(out)
    assert report["ok"] and report["problems"] == [] and report["run_id"] == run_id


def test_runs_verify_still_catches_a_changed_artifact(workspace: Path) -> None:
    summary = workspace / "runs" / EVAL_A / "results" / "summary.json"
    summary.write_text(summary.read_text().replace('"passed"', '"passed" '))
    code, out = _runs(workspace, "verify", EVAL_A, "--format", "json")
    assert code == 1
    codes = {p["code"] for p in json.loads(out)["problems"]}
    assert "artifact-digest-mismatch" in codes


def test_runs_diff(workspace: Path) -> None:
    code, out = _runs(workspace, "diff", EVAL_A, EVAL_A, "--format", "json")
    assert code == 0, out
    assert json.loads(out)["identical_results"] is True
    code, out = _runs(workspace, "diff", EVAL_A, EVAL_B, "--format", "json")
    assert code == 1, out
    result = json.loads(out)
    assert result["causes"] == ["config-changed", "input-changed"]
    config = next(ch for ch in result["changes"] if ch["path"] == "config.options")
    assert (config["a"].get("seed"), config["b"]["seed"]) == (None, 43)
    assert result["changes"][-1]["reason"] == "config-changed"  # the result digest, and why
    code, out = _runs(workspace, "diff", EVAL_A, STAGE)
    assert code == 1 and "results differ" in out


def test_an_old_failed_run_is_refused_by_resume_in_one_line(workspace: Path) -> None:
    """Runs written before requests were recorded are not re-invoked from their argv: one line
    names the command to rerun (exit 2), and the run is left as it was."""
    manifest = workspace / "runs" / FAILED / "run_manifest.json"
    before = manifest.read_bytes()
    result = CliRunner().invoke(app, ["runs", "resume", FAILED[:20], "--workspace-dir", str(workspace)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: resume {FAILED}: the run recorded no request to resume from (it predates recorded "
        "requests or its command does not resume); rerun the command instead: worldforge eval --suite "
        "science-birds --provider mock --characters A --trials 1 --program zero-shot --workers 1 "
        "--run-workspace ws --format json"
    ]
    assert manifest.read_bytes() == before
    assert not (workspace / "runs" / FAILED / "request.json").exists()


@pytest.mark.parametrize("run_id", [EVAL_A, EVAL_B])
def test_the_summaries_round_trip_through_their_model(run_id: str) -> None:
    raw = (FIXTURE / "runs" / run_id / "results" / "summary.json").read_text()
    summary = EvaluationSummary.from_dict(json.loads(raw))
    assert pretty_json(summary.to_dict()) == raw
    assert (
        summary.result_digest
        == json.loads((FIXTURE / "runs" / run_id / "run_manifest.json").read_text())["result_digest"]
    )
    assert [p.provider for p in summary.provider_summaries] == summary.providers == ["mock"]


def test_a_summary_that_does_not_add_up_is_refused() -> None:
    data = json.loads((FIXTURE / "runs" / EVAL_A / "results" / "summary.json").read_text())
    data["provider_summaries"][0]["pass_rate"] = 0.5
    with pytest.raises(WorldForgeError, match="does not add up"):
        EvaluationSummary.from_dict(data)
    data["provider_summaries"][0]["pass_rate"] = 1.0
    with pytest.raises(WorldForgeError, match="unknown keys run_id"):
        EvaluationSummary.from_dict({**data, "run_id": "x"})
