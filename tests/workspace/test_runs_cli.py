"""`worldforge runs …` through the real typer app: every subcommand and its exit codes."""

from __future__ import annotations

import json
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


DRIVER = textwrap.dedent(
    """
    import sys
    from worldforge.workspace import start_run
    args = sys.argv[1:]
    resume = args[args.index("--resume-run") + 1] if "--resume-run" in args else None
    ws, crash_after = args[0], int(args[1])
    with start_run(ws, "evaluation", sys.argv, {"n": 5}, resume_run_id=resume) as run:
        done = run.completed_items()
        for i in range(5):
            if f"i{i}" in done:
                continue
            if i == crash_after and resume is None:
                raise RuntimeError("simulated crash")
            run.record_item(f"i{i}", "sha256:" + "1" * 64, {"v": i})
        run.complete({"v": list(range(5))})
    print("resumed" if resume else "fresh", len(done))
    """
)


def test_resume_reinvokes_recorded_argv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    ws = tmp_path / "ws"
    monkeypatch.setattr("sys.argv", [str(script), str(ws), "3"])
    import runpy

    with pytest.raises(RuntimeError):
        runpy.run_path(str(script), run_name="__main__")
    (run_dir,) = list((ws / "runs").iterdir())
    assert load_manifest(run_dir)["status"] == "failed"
    code, out = invoke("runs", "resume", run_dir.name, "-w", str(ws))
    assert code == 0, out
    assert "resumed 3" in out
    manifest = load_manifest(run_dir)
    assert manifest["status"] == "completed" and manifest["resume_count"] == 1
    code, out = invoke("runs", "resume", run_dir.name, "-w", str(ws))
    assert code == 2 and "only interrupted or failed runs resume" in out


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
