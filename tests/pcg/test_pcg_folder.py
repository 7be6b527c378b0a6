"""Competition folder stages on a small tree: layout, official formats, failures logged not fatal."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from worldforge.pcg.competition import stages as folder
from worldforge.pcg.competition.stages import float32_text, stability_json, unity_score

REF = Path(__file__).parents[1] / "fixtures" / "reference-levels"
FENCE = "```"


def make_tree(root: Path) -> Path:
    src = root / "competition"
    replies = {
        "team1/raw/I/team1_I_1.txt": f"Here:\n{FENCE}python\n"
        + (REF / "result_22.program.txt").read_text().replace("'", '"')
        + f"{FENCE}\n",
        "team1/raw/I/team1_I_2.txt": "I cannot draw letters.",
        "team1/raw/I/team1_I_10.txt": f"{FENCE}\n" + (REF / "V1_L_1.program.txt").read_text() + FENCE,
        "team1/raw/A/team1_A_1.txt": f"{FENCE}\ndrop_block('b31', 0)\n{FENCE}",
        "team1/raw/A/.team1_A_3.txt": f"{FENCE}\ndrop_block('b11', 0)\n{FENCE}",
        "team2/raw/A/team2_A_1.txt": f"{FENCE}\ndrop_block('b31', 5)\ndrop_block('b31', 5)\n{FENCE}",
        "logs/old.txt": "not a team",
        "result/x.csv": "not a team",
        ".git/raw/A/x.txt": f"{FENCE}\ndrop_block('b11', 0)\n{FENCE}",
    }
    for rel, text in replies.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return src


def test_full_chain(tmp_path: Path) -> None:
    src = make_tree(tmp_path)
    assert [p.name for p in folder.list_teams(src)] == ["team1", "team2"]

    ext = folder.stage_extract(src)
    assert (ext.succeeded, ext.failed) == (4, 1)
    assert ext.failures == [("team1/raw/I/team1_I_2.txt", "Code not found.")]
    assert (src / "team1/intermediate/I/team1_I_1.txt").read_bytes() == (
        REF / "result_22.program.txt"
    ).read_bytes()
    assert not (src / "team1/intermediate/I/team1_I_2.txt").exists()
    assert not (src / "team1/intermediate/A/.team1_A_3.txt").exists()
    log = ext.log_path
    assert log is not None and log.parent == src / "logs" and log.name.startswith("extract_log_")
    assert "team1/raw/I/team1_I_2.txt: Failed - Code not found." in log.read_text()

    conv = folder.stage_convert(src)
    assert (conv.succeeded, conv.failed) == (3, 1)
    assert conv.failures == [("team1/intermediate/A/team1_A_1.txt", "Width boundary is intruded.")]
    assert (src / "team1/levels/I/team1_I_1.xml").read_bytes() == (REF / "result_22.xml").read_bytes()
    assert (src / "team1/levels/I/team1_I_10.xml").read_bytes() == (REF / "V1_L_1.xml").read_bytes()

    stab, imgs = folder.stage_physics(src, workers=2)
    assert stab.succeeded == 3 and imgs.succeeded == 3
    data = json.loads((src / "team1/stability/I.json").read_text())
    assert data["dataCount"] == 2
    assert [r["tag"] for r in data["raws"]] == [
        "competition/team1/levels/I/team1_I_1.xml",
        "competition/team1/levels/I/team1_I_10.xml",
    ]
    assert data["raws"][0] == {
        "tag": "competition/team1/levels/I/team1_I_1.xml",
        "score": 1.0,
        "startingObjects": 3,
        "movingObjects": 0,
    }
    assert data["raws"][1]["movingObjects"] == 4 and data["raws"][1]["score"] == pytest.approx(
        1 / 3, abs=1e-6
    )
    assert data["rate"] == pytest.approx((1 + 1 / 3) / 2, abs=1e-6)
    assert not (src / "team1/stability/A.json").exists()  # no level converted for A
    img = Image.open(src / "team1/images/I/team1_I_1.png")
    assert img.size == (1024, 1024) and img.mode == "RGBA"
    ref = np.asarray(Image.open(REF / "result_22.snapshot.png"))[..., 0] == 0
    assert int(((np.asarray(img)[..., 0] == 0) ^ ref).sum()) <= 20
    assert (src / "team2/images/A/team2_A_1.png").exists()


def test_physics_stages_agree_with_single_stage_runs(tmp_path: Path) -> None:
    src = make_tree(tmp_path)
    folder.stage_extract(src)
    folder.stage_convert(src)
    folder.stage_stability(src, workers=1)
    first = (src / "team1/stability/I.json").read_bytes()
    folder.stage_images(src, workers=2)
    png = (src / "team1/images/I/team1_I_10.png").read_bytes()
    folder.stage_physics(src, workers=2)
    assert (src / "team1/stability/I.json").read_bytes() == first
    assert (src / "team1/images/I/team1_I_10.png").read_bytes() == png


def test_unity_number_formats() -> None:
    assert float32_text(1.0) == "1.0"
    assert float32_text(unity_score(3, 1)) == "0.6666666"  # float32(1 - 1/3) = 0.6666666
    assert float32_text(unity_score(6, 4)) == "0.3333333"  # 1 - float32(0.6666667)
    text = stability_json([("c/t/levels/A/t_A_1.xml", 1.0, 3, 0)])
    assert text.splitlines()[:3] == ["{", '    "dataCount": 1,', '    "rate": 1.0,']
    assert json.loads(text)["raws"][0]["startingObjects"] == 3


def test_missing_source_is_usage_error(tmp_path: Path) -> None:
    from worldforge.core.errors import WorldForgeError

    with pytest.raises(WorldForgeError, match="does not exist"):
        folder.stage_extract(tmp_path / "nope")
