"""``worldforge pcg``: byte-exact chaining, exit codes, folder stages, run workspaces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from worldforge.cli.app import app

REF = Path(__file__).parents[1] / "fixtures" / "reference-levels"
FENCE = "```"
runner = CliRunner()


def invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, ["pcg", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_extract_prints_program_exactly(tmp_path: Path) -> None:
    reply = tmp_path / "reply.txt"
    reply.write_text(
        f"ok\n{FENCE}python\ndrop_block(\"b31\", 1)\ndrop_block('b13',1)\nDROP_BLOCK('b11', 1)\n{FENCE}"
    )
    code, out, err = invoke("extract", str(reply), "--explain")
    assert code == 0
    assert out == "drop_block('b31', 1)\ndrop_block('b13',1)\n"
    assert "not lower case" in err


def test_extract_code_not_found_exits_1(tmp_path: Path) -> None:
    reply = tmp_path / "reply.txt"
    reply.write_text("no code")
    code, out, err = invoke("extract", str(reply))
    assert code == 1 and out == ""
    assert "Code not found." in err
    code, out, _ = invoke("extract", str(reply), "--format", "json")
    assert code == 1 and json.loads(out)["error"] == "Code not found."


def test_convert_byte_identical_and_stdin() -> None:
    code, out, _ = invoke("convert", str(REF / "V1_L_1.program.txt"))
    assert code == 0 and out.encode() == (REF / "V1_L_1.xml").read_bytes()
    code, out, _ = invoke("convert", "-", stdin=(REF / "result_23.program.txt").read_text())
    assert code == 0 and out.encode() == (REF / "result_23.xml").read_bytes()


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("drop_block('b33', 1)\n", "BlockType does not exist."),
        ("drop_block('b31', 0)\n", "Width boundary is intruded."),
        ("drop_block('b11', 20)\n", "Height boundary is intruded."),
    ],
)
def test_convert_official_errors_exit_1(tmp_path: Path, program: str, message: str) -> None:
    path = tmp_path / "p.txt"
    path.write_text(program)
    code, out, err = invoke("convert", str(path))
    assert code == 1 and out == ""
    assert f"error: {message}" in err


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert invoke("convert", str(tmp_path / "missing.txt"))[0] == 2
    assert invoke("simulate", str(REF / "result_22.xml"), "--format", "yaml")[0] == 2
    bad = tmp_path / "bad.xml"
    bad.write_text("<Level><GameObjects></GameObjects></Level>")
    code, _, err = invoke("simulate", str(bad))
    assert code == 2 and "no blocks" in err
    assert invoke("stage", "nonsense", "--source", str(tmp_path))[0] == 2


def test_simulate_and_render(tmp_path: Path) -> None:
    code, out, _ = invoke("simulate", str(REF / "V1_L_1.xml"))
    data = json.loads(out)
    assert code == 0
    assert (data["total_blocks"], data["moving_blocks"], data["destroyed_blocks"]) == (6, 4, 2)
    assert data["stability"] == pytest.approx(1 / 3)
    png = tmp_path / "out.png"
    code, _, _ = invoke("render", str(REF / "result_22.xml"), "-o", str(png))
    assert code == 0
    img = Image.open(png)
    assert img.size == (1024, 1024) and img.mode == "RGBA"
    assert sorted(c for _, c in img.getcolors()) == [(0, 0, 0, 255), (255, 255, 255, 255)]


def test_chain_through_processes(tmp_path: Path) -> None:
    exe = [sys.executable, "-m", "worldforge"]
    reply = f"{FENCE}\n" + (REF / "result_24.program.txt").read_text() + FENCE
    program = subprocess.run(
        [*exe, "pcg", "extract", "-"], input=reply.encode(), capture_output=True, check=True
    )
    xml = subprocess.run([*exe, "pcg", "convert", "-"], input=program.stdout, capture_output=True, check=True)
    assert xml.stdout == (REF / "result_24.xml").read_bytes()


def test_stage_all_physics_and_run_workspace(tmp_path: Path) -> None:
    src = tmp_path / "comp"
    raw = src / "team1" / "raw" / "I"
    raw.mkdir(parents=True)
    (raw / "team1_I_1.txt").write_text(f"{FENCE}\n" + (REF / "result_22.program.txt").read_text() + FENCE)
    (raw / "team1_I_2.txt").write_text("nothing")
    ws = tmp_path / "ws"
    for stage in ("extract", "convert", "stability", "images"):
        code, out, err = invoke(
            "stage", stage, "--source", str(src), "--workers", "1", "--run-workspace", str(ws)
        )
        assert code == 0, err
    assert (src / "team1/stability/I.json").exists()
    assert (src / "team1/images/I/team1_I_1.png").exists()
    assert len(list((src / "logs").glob("extract_log_*.txt"))) == 1
    runs = sorted((ws / "runs").iterdir())
    assert len(runs) == 4
    manifest = json.loads((runs[-1] / "run_manifest.json").read_text())
    assert manifest["status"] == "completed" and manifest["kind"] == "pcg-stage"
    result = json.loads((runs[-1] / "results" / "result.json").read_text())
    outputs = result["result"]["outputs"] if "result" in result else result["outputs"]
    assert any(k.endswith("images/I/team1_I_1.png") and v.startswith("sha256:") for k, v in outputs.items())
