"""The built-in baselines are recognised by what they are, not by how ``--program`` spells them.

Baselines are scored but not ranked, and the zero-shot baseline decides whether the top program is
a winner, so a spelling that silently turned the shipped baseline into a competitor (or a user
folder that borrowed its name into the baseline) would change the ranking and the result digest of
an otherwise identical run. These runs are small (one letter, two trials) on the pixel classifier.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.suites.test_science_birds import PixelClassifier, pixel_classifier  # noqa: F401 - fixture
from worldforge.cli.app import app
from worldforge.core.errors import WorldForgeError
from worldforge.forge import WorldForge
from worldforge.presets import PROGRAMS_DIR
from worldforge.suites.science_birds.suite import evaluate

ROOT = Path(__file__).resolve().parents[2]
OPTIONS: dict[str, Any] = {"characters": "A", "trials": 2, "progress": False, "workers": 1}


def _program(root: Path, text: str) -> str:
    (root / "prompts").mkdir(parents=True)
    (root / "prompts" / "1.txt").write_text(text, encoding="utf-8")
    return str(root)


def _run(programs: list[str]) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    report = evaluate(["mock"], forge=WorldForge(), options={**OPTIONS, "programs": programs})
    return report.provenance.result_digest, report.sections["ranking"]["rows"], report.sections["winner"]


def test_every_spelling_of_the_shipped_baseline_is_the_baseline(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pixel_classifier: None,  # noqa: F811
) -> None:
    mine = _program(tmp_path / "mine", "Build the letter <OBJECT> with drop_block calls.")
    copy = tmp_path / "copy" / "zero-shot"  # e.g. a checkout's folder next to a wheel install
    shutil.copytree(PROGRAMS_DIR / "zero-shot", copy)
    monkeypatch.chdir(ROOT)  # the documented checkout path is relative to the repository root
    spellings = ["zero-shot", "presets/programs/zero-shot", str(PROGRAMS_DIR / "zero-shot"), str(copy)]
    runs = [_run([spelling, mine]) for spelling in spellings]

    digests = {digest for digest, _, _ in runs}
    assert len(digests) == 1 and "" not in digests
    for _, ranking, winner in runs:
        assert ranking == runs[0][1] and winner == runs[0][2]
        rank = {row["program"]: row["rank"] for row in ranking}
        assert rank == {"mine": 1, "zero-shot": None}  # the baseline is scored, not ranked
        assert isinstance(winner["winner_beats_zero_shot_baseline"], bool)


def test_a_user_folder_named_like_a_baseline_is_refused(
    tmp_path: Path,
    pixel_classifier: None,  # noqa: F811
) -> None:
    impostor = _program(tmp_path / "zz" / "zero-shot", "custom <OBJECT>\n")
    mine = _program(tmp_path / "mine", "Build the letter <OBJECT> with drop_block calls.")
    with pytest.raises(WorldForgeError, match="reserved for the built-in baseline") as info:
        _run([impostor, mine])
    assert impostor in str(info.value)


def test_the_cli_names_the_impostor_in_one_line_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)
    _program(tmp_path / "zz" / "zero-shot", "custom <OBJECT>\n")
    _program(tmp_path / "mine", "Build the letter <OBJECT> with drop_block calls.")
    args = ["eval", "--suite", "science-birds", "--provider", "mock", "--characters", "A", "--trials", "2"]
    result = CliRunner().invoke(app, [*args, "--program", "zz/zero-shot", "--program", "mine"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: zz/zero-shot: the program name 'zero-shot' is reserved for the built-in baseline and "
        "these prompts differ from it; rename the folder."
    ]
    assert result.stdout == ""
