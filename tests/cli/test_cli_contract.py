"""The CLI's exit-code contract on inputs that used to escape it.

0 ok, 1 a gate or verification failed, 2 usage or validation error with one line that names the
file, option or field, never a traceback. Each case here was once a traceback, a wrong code or a
message that named the wrong thing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from worldforge import __version__
from worldforge.cli.app import app
from worldforge.core.errors import WorldForgeError
from worldforge.workspace import start_run

REPO = Path(__file__).resolve().parents[2]
ZERO = "sha256:" + "0" * 64
runner = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def one_error_line(out: str) -> str:
    lines = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, out
    assert "Traceback" not in out
    return lines[0]


def test_version_flag_answers_without_a_command() -> None:
    code, out = invoke("--version")
    assert code == 0 and out.strip() == __version__


def test_directory_where_a_file_goes_and_file_where_a_workspace_goes(tmp_path: Path) -> None:
    xml = tmp_path / "level.xml"
    program = tmp_path / "p.txt"
    program.write_text("drop_block('b11', 10)\n")
    result = runner.invoke(app, ["pcg", "convert", str(program)])
    assert result.exit_code == 0
    xml.write_text(result.output)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, out = invoke("pcg", "render", str(xml), "-o", str(out_dir))
    assert code == 2 and one_error_line(out).endswith("out: is a directory, expected a file.")
    code, out = invoke("eval", "--suite", "physics", "--provider", "mock", "--run-workspace", str(xml))
    assert code == 2 and "a path component is a file, expected a directory" in one_error_line(out)
    code, out = invoke("datasets", "validate", str(out_dir))
    assert code == 2 and "is a directory" in one_error_line(out)


def test_bad_preset_files_name_the_file(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.yaml"
    garbage.write_bytes(b"\xff\xfe\x00binary\x9c")
    code, out = invoke("benchmark", "--preset", str(garbage))
    assert code == 2 and "garbage.yaml: not UTF-8 text" in one_error_line(out)
    source = (REPO / "worldforge" / "presets" / "mock-smoke.yaml").read_text()
    renamed = tmp_path / "x.yaml"
    renamed.write_text(source)
    code, out = invoke("benchmark", "--preset", str(renamed))
    assert code == 2 and "x.yaml: name 'mock-smoke' does not match the file name" in one_error_line(out)
    assert "presets/x.yaml" not in out
    nan = tmp_path / "mock-smoke.yaml"
    nan.write_text(source.replace("max_p95_latency_ms: 250", "max_p95_latency_ms: .nan"))
    code, out = invoke("benchmark", "--preset", str(nan))
    assert code == 2 and "mock-smoke.yaml: budget[1].max_p95_latency_ms: expected a number" in one_error_line(
        out
    )
    nan.write_text(source.replace("iterations: 5", "iterations: 1000000000000000000000000000000"))
    code, out = invoke("benchmark", "--preset", str(nan))
    assert code == 2 and "iterations: expected an integer in [1, 100000]" in one_error_line(out)
    nan.write_text(source.replace("providers: [mock]", "providers: [nope]"))
    code, out = invoke("benchmark", "--preset", str(nan))
    line = one_error_line(out)
    assert code == 2 and "providers: unknown provider 'nope'" in line and "--provider" not in line


def test_garbage_config_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".worldforge").mkdir()
    (tmp_path / ".worldforge" / "config.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xff")
    monkeypatch.chdir(tmp_path)
    code, out = invoke("runs", "list")
    assert code == 2 and "config.yaml: not UTF-8 text" in one_error_line(out)


def test_empty_option_values_name_the_option() -> None:
    code, out = invoke("eval", "--suite", "science-birds", "--provider", "mock", "--characters", "")
    assert code == 2 and one_error_line(out) == "error: --characters: must not be empty."
    code, out = invoke("eval", "--suite", "science-birds", "--provider", "mock", "--classifier", " ")
    assert code == 2 and one_error_line(out) == "error: --classifier: must not be empty."


def test_eval_accepts_md_like_the_other_commands() -> None:
    code, out = invoke("eval", "--suite", "planning", "--provider", "mock", "--format", "md")
    assert code == 0 and out.startswith("# Evaluation Report")


def test_prune_rejects_a_negative_or_nan_safety_window(tmp_path: Path) -> None:
    for value in ("-5", "nan"):
        code, out = invoke("runs", "prune", "-w", str(tmp_path), "--min-age-hours", value)
        assert code == 2 and "--min-age-hours: must be a non-negative number" in one_error_line(out)


def test_verify_says_a_damaged_zip_is_damaged(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with start_run(ws, "evaluation", ["worldforge", "eval"], {"providers": ["mock"]}) as run:
        run.record_item("a", ZERO, {"score": 1.0})
        run.complete({"score": 1.0})
    code, _ = invoke("runs", "bundle", run.run_id, "-w", str(ws), "-o", str(tmp_path / "b"), "--zip")
    assert code == 0
    zipped = next((tmp_path).glob("*.zip"), None) or next((tmp_path / "b").parent.glob("b*.zip"))
    cut = tmp_path / "cut.zip"
    cut.write_bytes(zipped.read_bytes()[: zipped.stat().st_size // 2])
    code, out = invoke("runs", "verify", str(cut))
    assert code == 1 and "FAILED: bundle-zip cut.zip: not a readable zip archive" in out
    code, out = invoke("runs", "verify", str(cut), "--format", "json")
    assert code == 1 and json.loads(out)["problems"][0]["code"] == "unreadable-zip"
    code, out = invoke("runs", "verify", str(zipped))
    assert code == 0, out


def test_resume_reports_the_resumed_commands_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorded request fails validation when it is asked again: resume must not turn that
    into success."""
    from typer.testing import CliRunner

    from worldforge.cli.app import app
    from worldforge.evaluation.runner import EvaluationRequest
    from worldforge.workspace import start_run

    monkeypatch.chdir(tmp_path)
    request = EvaluationRequest(suite="no-such-suite").to_record()
    with (
        pytest.raises(RuntimeError),
        start_run("ws", "evaluation", ["worldforge", "eval"], {}, request=request),
    ):
        raise RuntimeError("interrupted before the suite ran")
    (run_dir,) = (tmp_path / "ws" / "runs").iterdir()
    result = CliRunner().invoke(app, ["runs", "resume", run_dir.name, "-w", "ws"])
    assert result.exit_code == 2 and "no-such-suite" in result.stderr


def test_unknown_or_unavailable_classifier_device() -> None:
    pytest.importorskip("torch")
    import torch

    from worldforge.pcg.similarity.classifier import pick_device

    assert pick_device("cpu") == "cpu"
    with pytest.raises(WorldForgeError, match="--device: 'tpu' is not a torch device"):
        pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(WorldForgeError, match="--device: 'cuda' is not available here"):
            pick_device("cuda")


def test_resume_of_a_failed_run_exits_non_zero(tmp_path: Path) -> None:
    """End to end (a real process, so the recorded argv is the command's): a run whose command
    fails again on resume keeps its non-zero exit status and its failed status."""
    ws = tmp_path / "ws"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "worldforge", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )

    failing = [
        "eval", "--suite", "science-birds", "--provider", "ollama:qwen2.5", "--characters", "A",
        "--trials", "2", "--ollama-host", "http://127.0.0.1:9", "--run-workspace", str(ws),
    ]  # fmt: skip
    done = cli(*failing)
    assert done.returncode == 1 and "unreachable" in done.stderr
    run_id = next((ws / "runs").iterdir()).name
    done = cli("runs", "resume", run_id, "-w", str(ws))
    assert done.returncode == 1 and "unreachable" in done.stderr
    done = cli("runs", "list", "-w", str(ws), "--format", "json")
    assert json.loads(done.stdout)["runs"][0]["status"] == "failed"
