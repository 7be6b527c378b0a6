"""`worldforge runs …` through the real typer app: every subcommand and its exit codes."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from worldforge.cli.app import app
from worldforge.workspace import load_manifest, start_run

ZERO = "sha256:" + "0" * 64
runner = CliRunner()


def make_run(ws: Path, provider: str = "mock", result: object = None) -> str:
    with start_run(
        ws, "evaluation", ["worldforge", "eval", "--provider", provider], {"providers": [provider]}
    ) as run:
        run.record_item("planning/a", ZERO, {"score": 1.0})
        run.complete(result if result is not None else {"score": 1.0})
    return run.run_id


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_list_show_json(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    a, b = make_run(ws), make_run(ws)
    code, out = invoke("runs", "list", "-w", str(ws), "--format", "json")
    assert code == 0
    payload = json.loads(out)
    assert [r["run_id"] for r in payload["runs"]] == [b, a]
    assert str(tmp_path) not in out
    code, out = invoke("runs", "list", "-w", str(ws))
    assert code == 0 and a in out
    code, out = invoke("runs", "show", a[:22], "-w", str(ws), "--format", "json")
    assert code == 0 and json.loads(out)["run_id"] == a
    code, out = invoke("runs", "show", a, "-w", str(ws))
    assert code == 0 and "result_digest: sha256:" in out
    code, out = invoke("runs", "show", "20990101", "-w", str(ws))
    assert code == 2


def test_diff_exit_codes_and_reason(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    a, b = make_run(ws), make_run(ws)
    c = make_run(ws, provider="other", result={"score": 0.5})
    code, out = invoke("runs", "diff", a, b, "-w", str(ws))
    assert code == 0 and "identical results" in out
    code, out = invoke("runs", "diff", a, c, "-w", str(ws), "--format", "json")
    assert code == 1
    payload = json.loads(out)
    assert payload["causes"][0] == "provider-changed"
    assert payload["changes"][-1] == {
        "section": "results",
        "path": "result_digest",
        "change": "modified",
        "a": load_manifest(ws / "runs" / a)["result_digest"],
        "b": load_manifest(ws / "runs" / c)["result_digest"],
        "reason": "provider-changed",
    }
    code, out = invoke("runs", "diff", a, c, "-w", str(ws), "--format", "md")
    assert code == 1 and "| config | `config.providers` | modified | provider-changed |" in out
    code, _ = invoke("runs", "diff", a, c, "-w", str(ws), "--format", "xml")
    assert code == 2


def test_verify_bundle_and_tamper(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    a = make_run(ws)
    code, out = invoke("runs", "verify", a, "-w", str(ws))
    assert code == 0 and out.startswith("OK: run")
    code, out = invoke("runs", "bundle", a, "-w", str(ws), "--zip", "--format", "json")
    assert code == 0
    info = json.loads(out)
    assert info["safe_to_attach"] is True and info["gate"]["passed"] is True
    # Printed paths are sanitized like everything else that leaves the machine (tmp is a host path).
    assert info["zip_path"].startswith("<tmp>/") and info["zip_path"].endswith(f"/issue-bundles/{a}.zip")
    code, out = invoke("runs", "verify", str(ws / "issue-bundles" / f"{a}.zip"), "-w", str(ws))
    assert code == 0 and "bundle" in out
    code, out = invoke("runs", "bundle", a, "-w", str(ws))
    assert code == 2 and "not empty" in out
    code, out = invoke("runs", "bundle", a, "-w", str(ws), "--overwrite")
    assert code == 0 and "## WorldForge run issue" in out
    result = ws / "runs" / a / "results" / "result.json"
    result.write_text(result.read_text().replace("1.0", "2.0"))
    code, out = invoke("runs", "verify", a, "-w", str(ws), "--format", "json")
    assert code == 1
    codes = {p["code"] for p in json.loads(out)["problems"]}
    assert codes == {"artifact-digest-mismatch", "result-digest-mismatch"}


SUITE = textwrap.dedent(
    """
    import os
    from worldforge.evaluation import EvaluationScenario, EvaluationSuite

    def _make(index):
        def evaluator(context):
            if index == 3 and os.environ.get("WF_TEST_CRASH") == "1":
                raise RuntimeError("simulated crash")
            return context.outcome(score=index / 4, passed=True, metrics={"index": index})
        return evaluator

    def build():
        return EvaluationSuite.custom(
            suite_id="crashy", name="Crashy", suite_version="crashy:1", claim_boundary="test suite",
            scenarios=[EvaluationScenario.from_callable(name=f"i{i}", description="i", evaluator=_make(i))
                       for i in range(5)],
        )
    """
)


def test_resume_asks_the_recorded_request_again_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``runs resume`` rebuilds the run's request and calls the service: the finished items are
    reused, the run completes in place, and this process's argv and directory are left alone."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)
    (tmp_path / "crashy.py").write_text(SUITE)
    monkeypatch.setenv("WF_TEST_CRASH", "1")
    eval_args = ["eval", "--suite", "crashy.py:build", "--provider", "mock", "-w", "ws", "--format", "json"]
    crashed = runner.invoke(app, eval_args)
    assert crashed.exit_code != 0 and "simulated crash" in str(crashed.exception)
    (run_dir,) = list((tmp_path / "ws" / "runs").iterdir())
    assert load_manifest(run_dir)["status"] == "failed" and len(list(run_dir.glob("items/*.json"))) == 3
    before = {p.name: p.stat().st_mtime_ns for p in run_dir.glob("items/*.json")}
    monkeypatch.setenv("WF_TEST_CRASH", "0")
    argv_before = list(sys.argv)
    code, out = invoke("runs", "resume", run_dir.name, "-w", "ws")
    assert code == 0, out
    assert sys.argv == argv_before and Path.cwd() == tmp_path
    manifest = load_manifest(run_dir)
    assert manifest["status"] == "completed" and manifest["resume_count"] == 1
    assert {p.name: p.stat().st_mtime_ns for p in run_dir.glob("items/*.json") if p.name in before} == before
    fresh = runner.invoke(app, [*eval_args[:-4], "-w", "fresh", "--format", "json"])
    assert fresh.exit_code == 0
    assert manifest["result_digest"] == json.loads(fresh.stdout)["provenance"]["result_digest"]
    code, out = invoke("runs", "verify", run_dir.name, "-w", "ws", "--format", "json")
    assert code == 0, out  # request.json beside the manifest is not an unindexed file
    (fresh_run,) = (tmp_path / "fresh" / "runs").iterdir()
    code, out = invoke("runs", "diff", str(fresh_run), run_dir.name, "-w", "ws")
    assert code == 0, out  # the request is outside every digest: the two runs do not differ
    code, out = invoke("runs", "bundle", run_dir.name, "-w", "ws", "-o", "bundle")
    assert code == 0, out
    bundled = tmp_path / "bundle" / "runs" / run_dir.name
    assert json.loads((bundled / "request.json").read_text())["request"]["suite"] == "crashy.py:build"
    assert not (bundled / ".local").exists()  # the exact copy stays on this machine
    code, out = invoke("runs", "verify", "bundle")
    assert code == 0, out
    code, out = invoke("runs", "resume", run_dir.name, "-w", "ws")
    assert code == 2 and "only interrupted or failed runs resume" in out


def test_a_run_without_a_recorded_request_is_refused_in_one_line(tmp_path: Path) -> None:
    """A run recorded without a request (a script driving ``start_run``, or a run made before
    requests were kept) is not re-invoked: one line names the command to rerun, exit 2."""
    ws = tmp_path / "ws"
    with pytest.raises(RuntimeError):
        with start_run(ws, "evaluation", ["driver.py", "--n", "5"], {"n": 5}) as run:
            run.record_item("i0", ZERO, {"v": 0})
            raise RuntimeError("simulated crash")
    result = runner.invoke(app, ["runs", "resume", run.run_id, "-w", str(ws)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: resume {run.run_id}: the run recorded no request to resume from (it predates recorded "
        "requests or its command does not resume); rerun the command instead: driver.py --n 5"
    ]
    assert load_manifest(ws / "runs" / run.run_id)["status"] == "failed"


def test_prune_dry_run_then_apply(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ids = [make_run(ws) for _ in range(3)]
    code, out = invoke(
        "runs", "prune", "-w", str(ws), "--keep-latest", "1", "--max-age-days", "0", "--format", "json"
    )
    assert code == 0
    plan = json.loads(out)
    assert plan["applied"] is False and plan["delete_count"] == 2
    assert all((ws / "runs" / i).exists() for i in ids)
    code, out = invoke("runs", "prune", "-w", str(ws), "--keep-latest", "1", "--max-age-days", "0", "--apply")
    assert code == 0 and "prune (apply): 2 of 3 runs" in out
    assert [p.name for p in (ws / "runs").iterdir()] == [ids[-1]]
    code, out = invoke("runs", "prune", "-w", str(ws), "--keep-latest", "-1")
    assert code == 2
