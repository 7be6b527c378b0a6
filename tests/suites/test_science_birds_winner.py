"""The winner rule of the Science Birds suite: only a program above the zero-shot baseline wins.

The competition declares a winner only when the top program "overcomes our zero-shot baseline";
these tests pin what the report says when that baseline is not part of the run (no winner, the
leader named, a sentence instead of an empty comparison table) and when it is.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from tests.suites.test_science_birds import PixelClassifier, pixel_classifier  # noqa: F401 - fixture
from worldforge.forge import WorldForge
from worldforge.reports import render_report
from worldforge.suites.science_birds.report import NO_BASELINE_TEXT
from worldforge.suites.science_birds.suite import evaluate

OPTIONS: dict[str, Any] = {"characters": "AB", "trials": 2, "progress": False, "workers": 1}


def _program(root: Path, name: str, text: str) -> str:
    prompts = root / name / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "1.txt").write_text(text, encoding="utf-8")
    return str(root / name)


def _programs(root: Path) -> list[str]:
    return [
        _program(root, "alpha", "Build the letter <OBJECT> with drop_block calls."),
        _program(root, "beta", "Stack blocks shaped like <OBJECT>. Answer with Python code."),
    ]


def test_no_zero_shot_baseline_means_no_winner(tmp_path: Path, pixel_classifier: None) -> None:  # noqa: F811
    report = evaluate(["mock"], forge=WorldForge(), options={**OPTIONS, "programs": _programs(tmp_path)})
    sections = report.sections
    ranking = sections["ranking"]["rows"]
    leader = ranking[0]["program"]
    assert ranking[0]["rank"] == 1 and not any(row["winner"] for row in ranking)
    winner = sections["winner"]
    assert winner["decided_by"] == "no-zero-shot-baseline"
    assert winner["winner_beats_zero_shot_baseline"] is None
    assert winner["winners"] == (
        f"none (top program {leader}; no winner can be declared because the zero-shot baseline "
        "`zero-shot` was not run)"
    )
    assert sections["baseline_comparison"] == {
        "title": "Comparison with the zero-shot baseline",
        "description": NO_BASELINE_TEXT,
        "rows": [],
    }
    official = json.loads(report.extra_artifacts["science-birds/ranking.json"])["ranking"]
    assert official["winners"] == [] and official["leaders"] == [leader]
    assert official["decided_by"] == "no-zero-shot-baseline" and official["zero_shot_baseline"] is None

    payload = report.to_dict()
    markdown = render_report(payload, "markdown")
    assert "|  |" not in markdown
    comparison = markdown.split("## Comparison with the zero-shot baseline\n\n", 1)[1].split("\n## ", 1)[0]
    assert comparison.strip() == NO_BASELINE_TEXT.replace("`", "\\`")
    assert "- winners: none (top program " in markdown
    document = render_report(payload, "html")
    assert "<thead><tr></tr></thead>" not in document and "<tbody><tr></tr></tbody>" not in document
    assert "<h2>Comparison with the zero-shot baseline</h2><p>The zero-shot baseline" in document
    rows = list(csv.DictReader(io.StringIO(render_report(payload, "csv"))))
    assert {row["scenario"] for row in rows} == {"alpha", "beta"}
    assert json.loads(render_report(payload, "json"))["sections"]["winner"]["winners"] == winner["winners"]


def test_with_the_zero_shot_baseline_the_comparison_is_a_table(
    tmp_path: Path,
    pixel_classifier: None,  # noqa: F811
) -> None:
    programs = [*_programs(tmp_path), "zero-shot"]
    report = evaluate(["mock"], forge=WorldForge(), options={**OPTIONS, "programs": programs})
    sections = report.sections
    rows = sections["baseline_comparison"]["rows"]
    assert {row["program"] for row in rows} == {"alpha", "beta", "zero-shot"}
    assert "description" not in sections["baseline_comparison"]
    winner = sections["winner"]
    assert winner["decided_by"] in {"score", "shortest-prompt", "co-winners", "below-zero-shot"}
    beats = winner["winner_beats_zero_shot_baseline"]
    assert isinstance(beats, bool)
    declared = [row["program"] for row in sections["ranking"]["rows"] if row["winner"]]
    assert bool(declared) is beats
    markdown = render_report(report.to_dict(), "markdown")
    assert "| program | total | baseline | baseline\\_total | beats\\_baseline |" in markdown
