"""No host paths, login or host names in what commands leave behind, and no digest that depends on
where the workspace lives.

Every command here runs from ``<tmp>/cwd`` with its workspace and inputs outside that directory
(``<tmp>/elsewhere``, the repository's fixtures), which is the case the sanitizer cannot solve by
stripping the current directory. Each run directory and each stdout report is scanned with
:func:`tests.hostleaks.assert_no_host_leaks`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.checkpoints import tiny_vit
from tests.hostleaks import ROOT, assert_no_host_leaks, host_markers, scan_text, scan_tree

WORLDFORGE = [sys.executable, "-m", "worldforge"]
REF = ROOT / "tests" / "fixtures" / "reference-levels"
FENCE = "```"
EVAL_FORMATS = ("json", "markdown", "csv", "html")


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("WORLDFORGE_CONFIG", None)
    return env


def _run(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{shlex.join(args)}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    cwd, elsewhere = tmp_path / "cwd", tmp_path / "elsewhere"
    cwd.mkdir()
    elsewhere.mkdir()
    return cwd, elsewhere


def _runs(workspace: Path) -> list[Path]:
    return sorted((workspace / "runs").iterdir())


def _manifest(run_dir: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((run_dir / "run_manifest.json").read_text())
    return manifest


# --------------------------------------------------------------------------- the scanner itself


def test_scanner_finds_paths_and_names_but_skips_local_only_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / ".local").mkdir(parents=True)
    (run / ".local" / "invocation.json").write_text(json.dumps({"cwd": str(tmp_path)}))
    (run / "ok.json").write_text('{"a": "<tmp>/x/ws", "b": "reports/report.json", "c": "see a/tmp/b"}')
    (run / "img.html").write_text('<img src="data:image/png;base64,AA+/srv/wfdata/AA=">')
    (run / "blob.bin").write_bytes(b"\xff\xfe" + str(tmp_path).encode())
    assert scan_tree(run, host_markers(tmp_path, "/srv/wfdata")) == []
    (run / "bad.md").write_text(f"Command: `worldforge eval --run-workspace {tmp_path}/ws`")
    (run / "bad2.txt").write_text(f"{ROOT}/tests/x and {Path.home()}/y")
    hits = scan_tree(run, host_markers(tmp_path))
    assert any(hit.startswith("bad.md: ") for hit in hits)
    assert any(hit.startswith("bad2.txt: source checkout") for hit in hits)
    assert any("home directory" in hit or "$HOME" in hit for hit in hits)
    assert scan_text("x +/srv/wfdata/AA", host_markers("/srv/wfdata"))  # only data: URIs are skipped


# --------------------------------------------------------------------------- eval


@pytest.mark.parametrize("suite", ["planning", "physics"])
def test_eval_runs_and_stdout_reports_carry_no_host_paths(tmp_path: Path, suite: str) -> None:
    cwd, elsewhere = _dirs(tmp_path)
    workspace = elsewhere / "ws"
    stdout: dict[str, str] = {}
    for fmt in EVAL_FORMATS:
        args = [*WORLDFORGE, "eval", "--suite", suite, "--provider", "mock"]
        proc = _run([*args, "--run-workspace", str(workspace), "--format", fmt], cwd)
        stdout[f"stdout.{fmt}"] = proc.stdout
    assert_no_host_leaks(workspace, texts=stdout, paths=[tmp_path])
    report = json.loads(stdout["stdout.json"])
    manifests = [_manifest(run) for run in _runs(workspace)]
    recorded = next(m["argv"] for m in manifests if m["argv"][-1] == "json")
    # Reports record the command exactly as the run manifest does (one sanitizer, one convention).
    assert report["provenance"]["command"] == recorded
    assert recorded[recorded.index("--run-workspace") + 1].startswith("<tmp>/")
    assert len({m["result_digest"] for m in manifests}) == 1


def test_eval_result_digest_ignores_the_workspace_location(tmp_path: Path) -> None:
    cwd, elsewhere = _dirs(tmp_path)
    digests, results, summaries = set(), set(), set()
    for workspace in (elsewhere / "one" / "ws", cwd / "nested" / "ws2"):
        args = [*WORLDFORGE, "eval", "--suite", "planning", "--provider", "mock", "--format", "json"]
        report = json.loads(_run([*args, "--run-workspace", str(workspace)], cwd).stdout)
        (run_dir,) = _runs(workspace)
        manifest = _manifest(run_dir)
        assert manifest["result_digest"] == report["provenance"]["result_digest"]
        digests.add(manifest["result_digest"])
        results.add((run_dir / "results" / "result.json").read_bytes())
        summaries.add((run_dir / "results" / "summary.json").read_bytes())
    assert len(digests) == 1 and len(results) == 1 and len(summaries) == 1


CUSTOM_SUITE = """
from pathlib import Path

from worldforge.evaluation import EvaluationScenario, EvaluationSuite


def build(options=None):
    options = dict(options or {})
    threshold = float((Path(options["classifier"]) / "threshold.txt").read_text())

    def check(context):
        score = 0.25
        return context.outcome(score=score, passed=score >= threshold, metrics={"threshold": threshold})

    return EvaluationSuite(
        "Relocatable",
        [EvaluationScenario.from_callable(name="below-threshold", description="fails", evaluator=check)],
        suite_id="relocatable",
        suite_version="relocatable:1",
        claim_boundary="test suite, no claims",
        options=options,
    )
"""


def test_failure_gallery_rerun_command_is_relative_and_works(tmp_path: Path) -> None:
    """Suite file and option paths given as absolute paths come back relative to the directory the
    evaluation ran in, and the printed command reproduces the digests from there."""
    cwd, elsewhere = _dirs(tmp_path)
    (cwd / "suites").mkdir()
    (cwd / "suites" / "relocatable.py").write_text(CUSTOM_SUITE)
    (cwd / "model").mkdir()
    (cwd / "model" / "threshold.txt").write_text("0.5\n")
    workspace = elsewhere / "ws"
    args = [
        *WORLDFORGE,
        "eval",
        "--suite",
        f"{cwd}/suites/relocatable.py:build",
        "--provider",
        "mock",
        "--classifier",
        str(cwd / "model"),
        "--run-workspace",
        str(workspace),
        "--format",
        "json",
    ]
    first = _run(args, cwd)
    report = json.loads(first.stdout)
    (run_dir,) = _runs(workspace)
    assert_no_host_leaks(workspace, texts={"stdout.json": first.stdout}, paths=[tmp_path])
    gallery = json.loads((run_dir / "reports" / "failure_gallery.json").read_text())
    (case,) = gallery["cases"]
    assert case == report["failure_gallery"]["cases"][0]
    command = shlex.split(case["rerun_command"])
    assert command == [
        "worldforge",
        "eval",
        "--suite",
        "suites/relocatable.py:build",
        "--provider",
        "mock",
        "--classifier",
        "model",
        "--format",
        "json",
    ]
    assert case["rerun_command"] in (run_dir / "reports" / "failure_gallery.md").read_text()
    again = json.loads(_run([*WORLDFORGE, *command[1:]], cwd).stdout)
    for key in ("input_digest", "result_digest"):
        assert again["provenance"][key] == report["provenance"][key]


# --------------------------------------------------------------------------- benchmark, pcg, demo


def test_benchmark_runs_and_stdout_reports_carry_no_host_paths(tmp_path: Path) -> None:
    cwd, elsewhere = _dirs(tmp_path)
    workspace = elsewhere / "ws"
    stdout = {}
    for fmt in ("json", "md", "csv", "text"):
        args = [*WORLDFORGE, "benchmark", "--preset", "mock-smoke", "--format", fmt]
        stdout[f"stdout.{fmt}"] = _run([*args, "--run-workspace", str(workspace)], cwd).stdout
    assert_no_host_leaks(workspace, texts=stdout, paths=[tmp_path])
    assert len({_manifest(run)["result_digest"] for run in _runs(workspace)}) == 1


def _competition(folder: Path) -> Path:
    raw = folder / "team1" / "raw" / "I"
    raw.mkdir(parents=True)
    (raw / "team1_I_1.txt").write_text(f"{FENCE}\n" + (REF / "result_22.program.txt").read_text() + FENCE)
    (raw / "team1_I_2.txt").write_text("nothing")
    return folder


def test_pcg_commands_carry_no_host_paths(tmp_path: Path) -> None:
    """Single-file commands read the repository's fixtures (outside the current directory), stage
    commands a competition folder elsewhere."""
    cwd, elsewhere = _dirs(tmp_path)
    workspace = elsewhere / "ws"
    reply = elsewhere / "reply.txt"
    reply.write_text(f"{FENCE}\n" + (REF / "result_22.program.txt").read_text() + FENCE)
    ws = ["--run-workspace", str(workspace)]
    pcg = [*WORLDFORGE, "pcg"]
    stdout = {
        "extract": _run([*pcg, "extract", str(reply), "--format", "json", *ws], cwd).stdout,
        "convert": _run([*pcg, "convert", str(REF / "result_22.program.txt"), *ws], cwd).stdout,
        "simulate": _run([*pcg, "simulate", str(REF / "result_22.xml"), *ws], cwd).stdout,
    }
    _run([*pcg, "render", str(REF / "result_22.xml"), "-o", str(elsewhere / "level.png"), *ws], cwd)
    source = _competition(elsewhere / "comp")
    for stage in ("extract", "convert", "stability", "images"):
        args = [*pcg, "stage", stage, "--source", str(source), "--workers", "1", *ws]
        stdout[f"stage-{stage}"] = _run(args, cwd).stdout
    assert_no_host_leaks(workspace, texts=stdout, paths=[tmp_path])
    convert_run = next(r for r in _runs(workspace) if _manifest(r)["argv"][2] == "convert")
    assert _manifest(convert_run)["argv"][3] == "<repo>/tests/fixtures/reference-levels/result_22.program.txt"
    (extract_stage,) = json.loads(stdout["stage-extract"])
    assert extract_stage["log"].startswith("logs/extract_log_")
    assert (source / extract_stage["log"]).is_file()


def test_pcg_stage_result_digest_ignores_folder_location_and_time(tmp_path: Path) -> None:
    """The stage log's name carries the wall-clock time and the folder's location is the host's:
    neither may change the digest of an identical stage."""
    cwd, elsewhere = _dirs(tmp_path)
    digests = set()
    for index, source in enumerate((_competition(elsewhere / "a" / "comp"), _competition(cwd / "comp"))):
        workspace = elsewhere / f"ws{index}"
        args = [*WORLDFORGE, "pcg", "stage", "extract", "--source", str(source), "--workers", "1"]
        _run([*args, "--run-workspace", str(workspace)], cwd)
        (run_dir,) = _runs(workspace)
        digests.add(_manifest(run_dir)["result_digest"])
        report = json.loads((run_dir / "reports" / "report.json").read_text())
        assert report[0]["log"].startswith("logs/extract_log_")
    assert len(digests) == 1


def test_demo_showcase_run_carries_no_host_paths(tmp_path: Path) -> None:
    cwd, elsewhere = _dirs(tmp_path)
    workspace = elsewhere / "demo"
    script = [sys.executable, str(ROOT / "scripts" / "demo_showcases.py"), "run", "custom-evaluation-suite"]
    stdout = {}
    for fmt in ("json", "markdown"):
        args = [*script, "--workspace-dir", str(workspace), "--overwrite", "--format", fmt]
        stdout[f"stdout.{fmt}"] = _run(args, cwd).stdout
    assert_no_host_leaks(workspace, texts=stdout, paths=[tmp_path])
    assert json.loads(stdout["stdout.json"])["status"] == "passed"


# --------------------------------------------------------------------------- science-birds


@pytest.mark.slow
def test_science_birds_run_carries_no_host_paths_and_digest_ignores_workspace(tmp_path: Path) -> None:
    cwd, elsewhere = _dirs(tmp_path)
    classifier = tiny_vit(elsewhere / "clf")
    digests = set()
    for workspace in (elsewhere / "ws-a", elsewhere / "deeper" / "ws-b"):
        args = [
            *WORLDFORGE,
            "eval",
            "--suite",
            "science-birds",
            "--provider",
            "mock",
            "--characters",
            "A",
            "--trials",
            "2",
            "--workers",
            "1",
            "--classifier",
            str(classifier),
            "--run-workspace",
            str(workspace),
            "--format",
            "json",
        ]
        proc = _run(args, cwd)
        assert_no_host_leaks(workspace, texts={"stdout.json": proc.stdout}, paths=[tmp_path])
        report = json.loads(proc.stdout)
        (run_dir,) = _runs(workspace)
        assert _manifest(run_dir)["result_digest"] == report["provenance"]["result_digest"]
        digests.add(report["provenance"]["result_digest"])
    assert len(digests) == 1
    shutil.rmtree(elsewhere / "deeper")
