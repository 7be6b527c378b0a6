"""``worldforge pcg stage score --models/--baselines/--zero-shot`` on the published 2024 results.

The competition folder is rebuilt from the published ``trial_scores.csv`` (see
``test_scoring_conformance``), with the two baseline folders renamed so that the name-based default
does not recognise them: only an explicit ``--baselines`` list reproduces the published ranking.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.pcg.test_scoring_conformance import DATA, _build
from worldforge.cli.app import app

runner = CliRunner()
#: Published team name -> folder name in the rebuilt competition (baselines renamed on purpose).
FOLDERS = {
    "Strong Baseline (Zero-Shot Multi-turn)": "strong",
    "Weak Baseline (Zero-Shot)": "weak",
}


def _published() -> list[dict[str, object]]:
    entries = json.loads((DATA / "result.json").read_text(encoding="utf-8"))
    return [e for e in entries if e["rank"] != -2]  # zergy was disqualified


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("published2024")
    _build(root)
    (root / "baseline_zero_shot").rename(root / "weak")
    (root / "baseline_zero_shot_multi_turn").rename(root / "strong")
    return root


def _copy(built: Path, dest: Path) -> Path:
    shutil.copytree(built, dest)
    return dest


def _stage(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["pcg", "stage", *args])
    return result.exit_code, result.stdout, result.stderr


def test_explicit_baselines_reproduce_the_published_ranking(built: Path, tmp_path: Path) -> None:
    source = _copy(built, tmp_path / "competition")
    code, out, err = _stage(
        "score", "--source", str(source), "--exact", "--baselines", "weak,strong", "--zero-shot", "weak"
    )
    assert code == 0, err
    assert json.loads(out)[0]["stage"] == "score"
    report = json.loads((source / "result" / "report.json").read_text(encoding="utf-8"))
    programs = {p["program"]: p for p in report["programs"]}
    ranks = {e["program"]: e["rank"] for e in report["ranking"]["entries"]}
    for entry in _published():
        name = FOLDERS.get(str(entry["teamName"]), str(entry["teamName"]))
        assert float(programs[name]["normalized_score"]) == pytest.approx(
            entry["normalizedPromptScore"], abs=1e-9
        )
        assert ranks[name] == (None if entry["rank"] == -1 else entry["rank"])
    assert ranks["CoT"] == 4  # published: the strong baseline above it takes no rank
    assert report["ranking"]["winners"] == ["TheAlmostEngineer"]
    assert report["ranking"]["zero_shot_baseline"] == "weak"
    assert report["ranking"]["winner_beats_zero_shot"] is True
    assert report["competition_score"] == "0.04471980826842102499"
    published = (DATA / "constants.json").read_text(encoding="utf-8")
    assert (source / "result" / "constants.json").read_text(encoding="utf-8") == published


def test_without_baselines_the_renamed_baselines_are_ranked(built: Path, tmp_path: Path) -> None:
    source = _copy(built, tmp_path / "competition")
    code, _, err = _stage("score", "--source", str(source), "--exact")
    assert code == 0, err
    report = json.loads((source / "result" / "report.json").read_text(encoding="utf-8"))
    ranks = {e["program"]: e["rank"] for e in report["ranking"]["entries"]}
    assert ranks["strong"] == 4 and ranks["CoT"] == 5 and ranks["weak"] == 9
    assert report["ranking"]["zero_shot_baseline"] is None


def test_models_sum_per_model_scores_with_repeated_and_comma_separated_options(
    built: Path, tmp_path: Path
) -> None:
    root = tmp_path / "competition"
    for model in ("gpt-4o", "gpt-4o-mini"):
        _copy(built, root / model)
    code, _, err = _stage(
        "score",
        "--source",
        str(root),
        "--exact",
        "--models",
        "gpt-4o,gpt-4o-mini",
        "--baselines",
        "weak",
        "--baselines",
        "strong",
        "--zero-shot",
        "weak",
    )
    assert code == 0, err
    published_constants = (DATA / "constants.json").read_text(encoding="utf-8")
    for model in ("gpt-4o", "gpt-4o-mini"):  # each model is scored on its own, official files included
        assert (root / model / "result" / "constants.json").read_text(encoding="utf-8") == published_constants
    report = json.loads((root / "result" / "report.json").read_text(encoding="utf-8"))
    assert report["models"]["models"] == ["gpt-4o", "gpt-4o-mini"]
    combined = {p["program"]: p for p in report["models"]["programs"]}
    ranks = {e["program"]: e["rank"] for e in report["ranking"]["entries"]}
    for entry in _published():
        name = FOLDERS.get(str(entry["teamName"]), str(entry["teamName"]))
        # Two identical models: every total doubles, so the normalized totals are the published ones.
        assert float(combined[name]["normalized_total"]) == pytest.approx(
            entry["normalizedPromptScore"], abs=1e-9
        )
        for model in ("gpt-4o", "gpt-4o-mini"):
            assert float(combined[name]["per_model"][model]) == pytest.approx(entry["promptScore"], abs=1e-15)
        assert ranks[name] == (None if entry["rank"] == -1 else entry["rank"])
    assert report["ranking"]["winner_beats_zero_shot"] is True


@pytest.mark.parametrize(
    ("args", "option", "detail"),
    [
        (["--baselines", "weak,nope"], "--baselines", "'nope' is not a program folder"),
        (["--baselines", "weak,,strong"], "--baselines", "empty name"),
        (["--baselines", "weak", "--baselines", "weak"], "--baselines", "'weak' is given twice"),
        (["--zero-shot", "zero_shot"], "--zero-shot", "'zero_shot' is not a program folder"),
        (["--models", "gpt-5"], "--models", "is not a folder"),
        (["--models", "../elsewhere"], "--models", "is not a folder name directly under"),
        (["--models", "CoT,CoT"], "--models", "'CoT' is given twice"),
        (["--models", "empty"], "--models", "has no team folders"),
    ],
)
def test_bad_selection_exits_2_with_one_line_naming_the_option(
    built: Path, tmp_path: Path, args: list[str], option: str, detail: str
) -> None:
    source = _copy(built, tmp_path / "competition")
    (source / "empty").mkdir()
    code, out, err = _stage("score", "--source", str(source), *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {option}: "), err
    assert detail in lines[0]
    assert not (source / "result").exists()  # checked before anything is written


def test_selection_options_are_refused_by_stages_that_do_not_score(built: Path, tmp_path: Path) -> None:
    source = _copy(built, tmp_path / "competition")
    code, _, err = _stage("diversity", "--source", str(source), "--baselines", "weak")
    assert (
        code == 2
        and err.strip() == "error: --baselines: only the score or all stage takes it, not 'diversity'."
    )
    code, _, err = _stage("all", "--source", str(source), "--models", "gpt-4o")
    assert code == 2 and err.strip() == "error: --models: only the score stage takes it, not 'all'."
