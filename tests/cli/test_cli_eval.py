"""``worldforge eval``, ``suites list``, ``providers list``: outputs, exit codes, run workspaces."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from worldforge.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
WORLDFORGE = [sys.executable, "-m", "worldforge"]
runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from an empty directory so no .worldforge/config.yaml changes defaults."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)


def _suite_module(tmp_path: Path) -> Path:
    path = tmp_path / "my_suites.py"
    path.write_text(
        textwrap.dedent(
            """
            from worldforge.evaluation import EvaluationScenario, EvaluationSuite

            def _ok(context):
                return context.outcome(score=1.0, passed=True, metrics={"ok": 1})

            def _bad(context):
                return context.outcome(score=0.0, passed=False, metrics={"ok": 0})

            def _suite(suite_id, evaluator, caps=()):
                return EvaluationSuite.custom(
                    suite_id=suite_id, name=suite_id, suite_version=suite_id + ":1",
                    claim_boundary="test suite, no claims",
                    scenarios=[EvaluationScenario.from_callable(
                        name="only", description="only", evaluator=evaluator, required_capabilities=caps)],
                )

            def passing():
                return _suite("passing", _ok)

            def failing():
                return _suite("failing", _bad)

            def needs_transfer():
                return _suite("needs-transfer", _ok, ("transfer",))

            def leaky():
                return EvaluationSuite.custom(
                    suite_id="leaky", name="leaky", suite_version="leaky:1",
                    claim_boundary="reads Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c from /home/alice/.env",
                    scenarios=[EvaluationScenario.from_callable(
                        name="only", description="api_key=sk-proj-Ab3dEf6hIj9lMn2pQr5tUv8x", evaluator=_ok)],
                )
            """
        )
    )
    return path


def test_eval_markdown_default_and_json(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "--suite", "physics", "--provider", "mock"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# Evaluation Report")
    assert "Claim boundary: Built-in suites are deterministic adapter contract checks" in result.stdout
    result = runner.invoke(app, ["eval", "--suite", "planning", "--provider", "mock", "--format", "json"])
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert payload["provider_summaries"][0]["passed_scenario_count"] == 4
    assert payload["provenance"]["capabilities"] == ["predict", "score"]


@pytest.mark.parametrize(
    ("args", "message", "hinted"),
    [
        (
            ["--suite", "nope"],
            "error: Unknown evaluation suite 'nope'. Known suites: physics, planning",
            True,
        ),
        (["--suite", "physics", "--provider", "ghost"], "error: Unknown provider 'ghost'", True),
        (["--suite", "physics", "--format", "pdf"], "error: --format: 'pdf' is not one of", False),
        (
            ["--suite", "planning", "--trials", "3"],
            "error: suite 'planning' takes no options; got option 'trials'",
            True,
        ),
        (["--suite", "physics", "--provider", "ollama"], "error: provider 'ollama' needs a model", True),
        (
            ["--suite", "planning", "--dataset-manifest", "missing.json"],
            "error: missing.json: dataset manifest not found.",
            False,
        ),
    ],
)
def test_bad_usage_exits_2_with_one_line_and_a_fitting_hint(
    args: list[str], message: str, hinted: bool
) -> None:
    """One error line; the "list suites/providers" hint only where it helps."""
    result = runner.invoke(app, ["eval", *args])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(message)
    if hinted:
        assert lines[1].startswith("hint: list suites with") and len(lines) == 2
    else:
        assert len(lines) == 1


def test_missing_capability_exits_2(tmp_path: Path) -> None:
    module = _suite_module(tmp_path)
    result = runner.invoke(app, ["eval", "--suite", f"{module}:needs_transfer", "--provider", "mock"])
    assert result.exit_code == 2
    assert (
        "Provider 'mock' cannot run evaluation suite 'needs-transfer': "
        "missing required capabilities: transfer." in result.stderr
    )


@pytest.mark.parametrize("fmt", ["markdown", "json", "csv", "html"])
def test_printed_report_is_sanitized_but_the_output_file_is_whole(tmp_path: Path, fmt: str) -> None:
    module = _suite_module(tmp_path)
    args = ["eval", "--suite", f"{module}:leaky", "--provider", "mock", "--format", fmt]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    for secret in ("9f8e7d6c5b4a3f2e1d0c", "sk-proj-Ab3dEf6hIj9lMn2pQr5tUv8x", "/home/alice"):
        assert secret not in result.output
    if fmt == "json":
        boundary = json.loads(result.stdout)["claim_boundary"]
        assert boundary.startswith("reads Authorization: Bearer [redacted]")
    out = tmp_path / f"report.{fmt}"
    assert runner.invoke(app, [*args, "--output", str(out)]).exit_code == 0
    if fmt != "csv":  # CSV has no claim boundary column
        assert "9f8e7d6c5b4a3f2e1d0c" in out.read_text()  # a file the user asked for stays here


def test_fail_on_failure_exit_codes(tmp_path: Path) -> None:
    module = _suite_module(tmp_path)
    failing = ["eval", "--suite", f"{module}:failing", "--provider", "mock", "--format", "json"]
    assert runner.invoke(app, failing).exit_code == 0
    gated = runner.invoke(app, [*failing, "--fail-on-failure"])
    assert gated.exit_code == 1
    assert "1 of 1 scenario result(s) failed in suite 'failing'" in gated.stderr
    assert json.loads(gated.stdout)["failure_gallery"]["case_count"] == 1  # report still printed
    passing = ["eval", "--suite", f"{module}:passing", "--provider", "mock", "--fail-on-failure"]
    assert runner.invoke(app, passing).exit_code == 0


def test_output_file_and_multi_provider(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = runner.invoke(
        app,
        [
            "eval",
            "--suite",
            "physics",
            "--provider",
            "mock",
            "--provider",
            "mock:b",
            "--format",
            "html",
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0
    assert result.stdout == ""
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "mock:b" in html


def test_run_workspace_records_reports_and_prints_run(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["eval", "--suite", "planning", "--provider", "mock", "--run-workspace", str(tmp_path / "ws")]
    )
    assert result.exit_code == 0, result.output
    run_dirs = list((tmp_path / "ws" / "runs").iterdir())
    assert len(run_dirs) == 1
    run_dir = run_dirs[0]
    assert f"run {run_dir.name} completed: " in result.stderr
    assert str(run_dir / "reports" / "report.html") in result.stderr
    for rel in (
        "report.json",
        "report.md",
        "report.csv",
        "report.html",
        "failure_gallery.json",
        "failure_gallery.md",
    ):
        assert (run_dir / "reports" / rel).is_file()
    summary = json.loads((run_dir / "results" / "summary.json").read_text())
    report = json.loads((run_dir / "reports" / "report.json").read_text())
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["result_digest"] == report["provenance"]["result_digest"] == summary["result_digest"]
    assert summary["passed_count"] == 4 and summary["failed_count"] == 0
    events = (run_dir / "events.jsonl").read_text().splitlines()
    provider_events = [e for e in map(json.loads, events) if e.get("type") == "provider.event"]
    assert len(provider_events) == report["provenance"]["event_count"] > 0


def test_suites_and_providers_list_json() -> None:
    suites = runner.invoke(app, ["suites", "list", "--format", "json"])
    assert suites.exit_code == 0
    names = [s["name"] for s in json.loads(suites.stdout)["suites"]]
    assert {"physics", "planning", "science-birds"} <= set(names)
    providers = runner.invoke(app, ["providers", "list", "--format", "json"])
    infos = {p["name"]: p for p in json.loads(providers.stdout)["providers"]}
    assert infos["mock"]["capabilities"] == ["predict", "score", "generate", "embed"]
    assert infos["ollama"]["argument"] == "required"
    table = runner.invoke(app, ["providers", "list"])
    assert table.exit_code == 0 and "mock" in table.stdout


def test_real_argv_recorded_and_gallery_rerun_command_works(tmp_path: Path) -> None:
    """Subprocess: provenance.command is the real argv; the gallery's rerun command reproduces it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    example = "examples/custom_evaluation_suite.py:build_suite"
    argv = [*WORLDFORGE, "eval", "--suite", example, "--provider", "mock", "--format", "json"]
    first = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["provenance"]["command"] == ["worldforge", *argv[3:]]
    case = report["failure_gallery"]["cases"][0]
    command = shlex.split(case["rerun_command"])
    assert command[0] == "worldforge"
    rerun = subprocess.run(
        [*WORLDFORGE, *command[1:]], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert rerun.returncode == 0, rerun.stderr
    again = json.loads(rerun.stdout)
    assert again["provenance"]["result_digest"] == report["provenance"]["result_digest"]
    assert again["provenance"]["input_digest"] == report["provenance"]["input_digest"]


def test_cli_import_stays_light_and_bench_script_reports() -> None:
    code = (
        "import sys, worldforge, worldforge.cli.app; "
        "heavy = ('torch', 'transformers', 'Box2D', 'numpy', 'ollama', 'openai'); "
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""
    bench = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_cli.py"), "--runs", "1"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    payload = json.loads(bench.stdout)
    assert payload["heavy_modules_imported"] == []
    assert payload["runs"] == 1 and payload["median_s"] > 0


def test_dataset_manifest_is_cited_in_provenance(monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("worldforge.datasets")
    if not hasattr(datasets, "manifest_reference"):
        pytest.skip("worldforge.datasets.manifest_reference not available")
    manifest = "examples/dataset-manifests/mock-evaluation-fixtures.json"
    if not (ROOT / manifest).is_file():
        pytest.skip("example dataset manifest not present")
    monkeypatch.chdir(ROOT)
    args = ["eval", "--suite", "planning", "--provider", "mock", "--dataset-manifest", manifest]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    refs = json.loads(result.stdout)["provenance"]["dataset_manifests"]
    assert [r["id"] for r in refs] == ["mock-evaluation-fixtures"]
    assert refs[0]["sha256"].startswith("sha256:") and "entries" not in refs[0]
    plain = json.loads(runner.invoke(app, ["eval", "--suite", "planning", "--format", "json"]).stdout)
    assert plain["provenance"]["input_digest"] != json.loads(result.stdout)["provenance"]["input_digest"]


INTERRUPTIBLE = """
import os
from pathlib import Path
from worldforge.evaluation import EvaluationScenario, EvaluationSuite

LOG = Path(os.environ["WF_TEST_LOG"])

def _make(name):
    def evaluator(context):
        with LOG.open("a") as handle:
            handle.write(f"{context.provider}/{name}\\n")
        if name == "b" and os.environ.get("WF_TEST_INTERRUPT") == "1":
            raise KeyboardInterrupt
        return context.outcome(score=0.5, passed=True, metrics={"name": name})
    return evaluator

def build():
    return EvaluationSuite.custom(
        suite_id="interruptible", name="Interruptible", suite_version="interruptible:1",
        claim_boundary="test suite, no claims",
        scenarios=[EvaluationScenario.from_callable(name=n, description=n, evaluator=_make(n))
                   for n in ("a", "b", "c")],
    )
"""


def test_interrupted_eval_resumes_through_runs_resume(tmp_path: Path) -> None:
    (tmp_path / "interruptible.py").write_text(INTERRUPTIBLE)
    log = tmp_path / "calls.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), WF_TEST_LOG=str(log), WF_TEST_INTERRUPT="1")
    env.pop("WORLDFORGE_CONFIG", None)
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
    first = subprocess.run(
        [*argv, "--run-workspace", "ws"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert first.returncode != 0
    (run_dir,) = list((tmp_path / "ws" / "runs").iterdir())
    assert json.loads((run_dir / "run_manifest.json").read_text())["status"] == "interrupted"
    assert log.read_text().split() == ["mock/a", "mock/b"]

    env["WF_TEST_INTERRUPT"] = "0"
    log.write_text("")
    resumed = subprocess.run(
        [*WORLDFORGE, "runs", "resume", run_dir.name, "--workspace-dir", "ws"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert log.read_text().split() == ["mock/b", "mock/c"]  # a was reused from its item record
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    fresh = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert manifest["result_digest"] == json.loads(fresh.stdout)["provenance"]["result_digest"]
