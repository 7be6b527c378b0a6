"""``worldforge pcg classify --truth``: a user's own labelled images measured as the recipe measures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from worldforge.cli.app import app
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.similarity.classifier import BUNDLED_DIR
from worldforge.pcg.similarity.labelled import measure, truth_of


@pytest.mark.parametrize(
    ("name", "letter"), [("A_03.png", "A"), ("a.png", "A"), ("z-1.jpg", "Z"), ("Q", "Q"), ("M 2.png", "M")]
)
def test_the_letter_of_a_file_name(name: str, letter: str) -> None:
    assert truth_of(Path("levels") / name, "name") == letter


@pytest.mark.parametrize("name", ["Apple.png", "3A.png", "_A.png", "level.png", ".png", "É.png"])
def test_a_file_name_that_names_no_letter_is_an_error_naming_the_file(name: str) -> None:
    with pytest.raises(WorldForgeError, match=r"^levels/.*--truth name"):
        truth_of(Path("levels") / name, "name")


@given(st.sampled_from(LETTERS), st.booleans(), st.text(alphabet="0123456789_-. ()", max_size=12))
def test_any_letter_followed_by_no_letter_is_read(letter: str, lower: bool, rest: str) -> None:
    name = (letter.lower() if lower else letter) + rest
    assert truth_of(Path(name), "name") == letter


def test_the_letter_of_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "r").mkdir()
    assert truth_of(tmp_path / "r" / "level-7.png", "folder") == "R"
    monkeypatch.chdir(tmp_path / "r")
    assert truth_of(Path("level-7.png"), "folder") == "R"  # a relative path in the letter's folder
    with pytest.raises(WorldForgeError, match="folder named by its letter"):
        truth_of(tmp_path / "levels" / "A.png", "folder")
    with pytest.raises(WorldForgeError, match="expected one of name, folder"):
        truth_of(tmp_path / "A.png", "path")


def test_measure_adds_the_whole_confusion_matrix() -> None:
    one_hot = [[1.0 if i == k else 0.0 for i in range(26)] for k in (0, 0, 3)]
    figures = measure(one_hot, ["A", "B", "D"])
    assert figures["accuracy"] == round(2 / 3, 4) and figures["confusions"] == {"B->A": 1}
    assert figures["confusion_matrix"] == {"A": {"A": 1}, "B": {"A": 1}, "D": {"D": 1}}
    assert measure([], []) == {"images": 0}


@pytest.fixture(scope="module")
def hand_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The never-trained hand-drawn letters, rendered as the recipe renders them, one folder per
    letter, each file named after its fixture entry."""
    from worldforge.pcg.similarity.training import families
    from worldforge.pcg.similarity.training.loop import render_item

    root = tmp_path_factory.mktemp("hand")
    paths = []
    for name, letter, program in families.handdrawn_programs():
        _small, png, _moved = render_item((program, True))
        path = root / letter / f"{name}.png"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(png)
        paths.append(str(path))
    return root, paths


def test_truth_from_folders_reproduces_the_recorded_hand_drawn_figures(
    hand_folder: tuple[Path, list[str]],
) -> None:
    """The measurement the training run recorded for the hand-drawn family (top-1, per letter,
    confusions, calibration error, NLL), reproduced from image files by one command."""
    _root, paths = hand_folder
    res = CliRunner().invoke(app, ["pcg", "classify", *paths, "--truth", "folder", "--format", "json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    recorded = json.loads((BUNDLED_DIR / "training.json").read_text())["hand"]
    measured = payload["measurement"]
    for key in (
        "images",
        "accuracy",
        "min_letter",
        "per_letter",
        "confusions",
        "ece",
        "mean_confidence",
        "nll",
    ):
        assert measured[key] == recorded[key], key
    assert (
        measured["images"] == 52
        and sum(sum(row.values()) for row in measured["confusion_matrix"].values()) == 52
    )
    assert [item["truth"] for item in payload["images"]] == [Path(p).parent.name for p in paths]


def test_truth_text_summary_and_misreads(hand_folder: tuple[Path, list[str]]) -> None:
    _root, paths = hand_folder
    res = CliRunner().invoke(app, ["pcg", "classify", *paths, "--truth", "folder"])
    assert res.exit_code == 0, res.output
    recorded = json.loads((BUNDLED_DIR / "training.json").read_text())["hand"]
    assert f"measured on 52 images with known letters: top-1 {recorded['accuracy']}" in res.stdout
    missed = [line for line in res.stdout.splitlines() if "[shows " in line]
    assert len(missed) == sum(recorded["confusions"].values())
    for pair in recorded["confusions"]:
        assert pair in res.stdout


def test_a_name_without_a_letter_stops_before_the_model_loads(tmp_path: Path) -> None:
    good, bad = tmp_path / "A_1.png", tmp_path / "level.png"
    for path in (good, bad):
        path.write_bytes(b"not read")
    res = CliRunner().invoke(app, ["pcg", "classify", str(good), str(bad), "--truth", "name"])
    assert res.exit_code == 2
    assert "level.png: --truth name" in res.output and len(res.output.strip().splitlines()) == 1
    res = CliRunner().invoke(app, ["pcg", "classify", str(good), "--truth", "size"])
    assert res.exit_code == 2 and "expected one of name, folder" in res.output
