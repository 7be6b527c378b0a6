"""Ranking uncertainty in the science-birds report: the intervals every format carries.

A small mock run (6 letters x 2 trials, both baseline programs) must carry, per program, the
normalized score with its 95 % interval, rank interval, shared rank, P(ahead of next) and the
Holm-adjusted sign-flip p in the ranking table, their own section, the winner's sentence and
``ranking.json``; a run of fewer than 5 letters says in one sentence why there are none; turning
the intervals off leaves every other section as it was; and the numbers are the same bytes in
another process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.suites.test_science_birds import (
    PixelClassifier,
    pixel_classifier,  # noqa: F401 - fixture
)
from worldforge.cli.app import app
from worldforge.core.errors import WorldForgeError
from worldforge.forge import WorldForge
from worldforge.pcg.scoring.uncertainty import LetterScores, ranking_uncertainty
from worldforge.reports.html import render_html
from worldforge.reports.markdown import render_markdown
from worldforge.suites.science_birds.config import SuiteConfig
from worldforge.suites.science_birds.intervals import SECTION, winner_fields
from worldforge.suites.science_birds.suite import evaluate

ROOT = Path(__file__).resolve().parents[2]
LETTERS = "A-F"
RESAMPLES = 2_000
ADDED_COLUMNS = ("ci95_low", "ci95_high", "rank_interval", "shared_rank")
ADDED_WINNER_KEYS = ("uncertainty", "statistically_tied_with")


def _options(**extra: Any) -> dict[str, Any]:
    base = {"characters": LETTERS, "trials": 2, "progress": False, "workers": 1}
    return {**base, "uncertainty_resamples": RESAMPLES, **extra}


def _report(**extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report payload and the ``science-birds/ranking.json`` artifact of a small mock run."""
    report = evaluate(["mock"], forge=WorldForge(), options=_options(**extra), classifier=PixelClassifier())
    ranking: dict[str, Any] = json.loads(report.extra_artifacts["science-birds/ranking.json"])
    return report.to_dict(), ranking


@pytest.fixture(scope="module")
def run() -> tuple[dict[str, Any], dict[str, Any]]:
    return _report()


@pytest.fixture(scope="module")
def payload(run: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    return run[0]


def test_every_program_carries_its_interval_rank_interval_and_adjacent_test(payload: dict[str, Any]) -> None:
    sections = payload["sections"]
    ranking = sections["ranking"]["rows"]
    rows = sections[SECTION]["rows"]
    assert [r["program"] for r in rows] == [r["program"] for r in ranking] and len(rows) == 2
    for row, table in zip(rows, ranking, strict=True):
        assert row["ci95_low"] <= row["normalized"] <= row["ci95_high"]
        assert 0.0 <= row["ci95_low"] and row["ci95_high"] <= 100.0
        assert row["ci95_low"] < row["ci95_high"]  # six letters that differ: a real spread
        assert {k: table[k] for k in ADDED_COLUMNS} == {k: row[k] for k in ADDED_COLUMNS}
        low, _, high = str(row["rank_interval"]).partition("\N{EN DASH}")
        assert 1 <= int(low) <= int(high or low) <= 2 and row["shared_rank"] in (1, 2)
    top, last = rows
    assert top["next"] == last["program"] and last["next"] is None
    assert 0.0 <= top["p_ahead_of_next"] <= 1.0
    assert 0.0 < top["sign_flip_p"] <= top["sign_flip_p_holm"] <= 1.0
    assert last["p_ahead_of_next"] is None and last["sign_flip_p_holm"] is None
    description = sections[SECTION]["description"]
    assert f"{RESAMPLES:,} paired letter draws" in description
    assert "Weights and per-letter diversity are held as computed on the full run" in description


def test_ranking_json_carries_the_full_payload(run: tuple[dict[str, Any], dict[str, Any]]) -> None:
    payload, ranking = run
    written = ranking["uncertainty"]
    assert written["status"] == "computed" and written["letters"] == "ABCDEF"
    assert written["method"]["resamples"] == RESAMPLES
    shown = {r["program"]: r for r in payload["sections"][SECTION]["rows"]}
    for program in written["programs"]:
        row = shown[program["program"]]
        assert [round(v, 4) for v in program["interval"]] == [row["ci95_low"], row["ci95_high"]]
        assert program["shared_rank"] == row["shared_rank"]
    (pair,) = written["adjacent"]
    assert round(pair["sign_flip"]["p_holm"], 4) == shown[pair["ahead"]]["sign_flip_p_holm"]


def test_winner_section_reports_the_rule_and_the_intervals(payload: dict[str, Any]) -> None:
    winner = payload["sections"]["winner"]
    top, nxt = payload["sections"][SECTION]["rows"]
    overlap = top["ci95_low"] <= nxt["ci95_high"] and nxt["ci95_low"] <= top["ci95_high"]
    sentence = winner["uncertainty"]
    assert sentence.startswith("Winner by the competition's rule: ") or sentence.startswith("No winner")
    assert ("statistically tied with" in sentence) == overlap
    assert winner["statistically_tied_with"] == (nxt["program"] if overlap else "none")


def _scores(second: list[float]) -> LetterScores:
    first = [0.9, 0.8, 0.85, 0.95, 0.7, 0.9]
    return LetterScores(("alpha", "beta"), tuple("ABCDEF"), (tuple(first), tuple(second)))


def test_tied_and_separated_wording() -> None:
    tied = winner_fields(ranking_uncertainty(_scores([0.85, 0.9, 0.8, 0.9, 0.75, 0.85]), resamples=500))
    assert "alpha" in tied["uncertainty"] and "is statistically tied with beta (" in tied["uncertainty"]
    assert tied["statistically_tied_with"] == "beta"
    apart = winner_fields(ranking_uncertainty(_scores([0.01, 0.02, 0.0, 0.01, 0.02, 0.01]), resamples=500))
    assert "statistically tied" not in apart["uncertainty"]
    assert "lies above every other" in apart["uncertainty"]
    assert apart["statistically_tied_with"] == "none"


def test_markdown_ranking_table_shows_the_intervals(payload: dict[str, Any]) -> None:
    markdown = render_markdown(payload)
    table = markdown[markdown.index("## Ranking (totals over models") : markdown.index("Claim boundary: ")]
    header = next(line for line in table.splitlines() if line.startswith("| rank |"))
    assert "| normalized | ci95\\_low | ci95\\_high | rank\\_interval | shared\\_rank |" in header
    assert "## Ranking uncertainty (95 % intervals, letter bootstrap)" in markdown
    assert "- uncertainty: " in markdown


def test_html_ranking_chart_draws_error_bars(payload: dict[str, Any]) -> None:
    page = render_html(payload)
    chart = page[page.index("<h2>Ranking</h2>") : page.index("</figure>", page.index("<h2>Ranking</h2>"))]
    assert chart.count('<g class="errorbar">') == 2 + 1  # one per program, one in the legend
    assert "95 % interval (letter bootstrap)" in chart and "Error bars: 95 % intervals" in chart
    assert "With 95 % intervals" in page and "Ranking uncertainty (95 % intervals" in page


def test_too_few_letters_give_one_sentence_and_no_intervals() -> None:
    few, ranking = _report(characters="A-C")
    section = few["sections"][SECTION]
    reason = (
        "No intervals: the run scored 3 letters, and a letter bootstrap needs at least 5 to say "
        "anything about the ranking."
    )
    assert section["rows"] == [] and section["description"] == reason
    assert few["sections"]["winner"]["uncertainty"] == reason
    assert not any(k in row for row in few["sections"]["ranking"]["rows"] for k in ADDED_COLUMNS)
    assert ranking["uncertainty"]["status"] == "not-computed"
    assert render_markdown(few).count(reason) == 2  # the section's sentence and the winner's line
    assert '<g class="errorbar">' not in render_html(few)


def test_too_few_programs_give_one_sentence() -> None:
    one = ranking_uncertainty(LetterScores(("alpha",), tuple("ABCDEF"), ((0.5,) * 6,)))
    assert not one.computed and one.programs == ()
    assert one.reason == (
        "No intervals: the run scored 1 program, and a ranking needs at least 2 to be uncertain about."
    )


def _without_intervals(sections: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(sections))
    out.pop(SECTION)
    for key in ADDED_WINNER_KEYS:
        out["winner"].pop(key)
    for row in out["ranking"]["rows"]:
        for key in ADDED_COLUMNS:
            row.pop(key)
    return out


def test_off_leaves_every_other_section_unchanged(payload: dict[str, Any]) -> None:
    off, ranking = _report(uncertainty_resamples=0)
    assert SECTION not in off["sections"] and "uncertainty" not in ranking
    assert off["sections"] == _without_intervals(payload["sections"])
    assert off["results"] == payload["results"]


def test_options_are_checked_and_enter_the_input_only_when_changed() -> None:
    default = SuiteConfig.from_options({"characters": "A-F"})
    assert (default.uncertainty_resamples, default.uncertainty_seed) == (10_000, 2029)
    assert "uncertainty" not in default.identity()  # runs at the defaults keep their input digest
    changed = SuiteConfig.from_options({"characters": "A-F", "uncertainty_resamples": "0"})
    assert changed.identity()["uncertainty"] == {"resamples": 0, "seed": 2029}
    for bad in ({"uncertainty_resamples": -1}, {"uncertainty_seed": "x"}, {"uncertainty_resamples": True}):
        with pytest.raises(WorldForgeError, match="--uncertainty-"):
            SuiteConfig.from_options(bad)


SCRIPT = """
import json
from tests.suites.test_science_birds import PixelClassifier
from worldforge.forge import WorldForge
from worldforge.suites.science_birds.suite import evaluate
options = {"characters": "A-F", "trials": 2, "progress": False, "workers": 1, "uncertainty_resamples": 2000}
report = evaluate(["mock"], forge=WorldForge(), options=options, classifier=PixelClassifier())
print(json.dumps({"digest": report.provenance.result_digest, "sections": report.to_dict()["sections"],
                  "ranking": report.extra_artifacts["science-birds/ranking.json"]}, sort_keys=True))
"""


def test_report_is_byte_identical_across_processes() -> None:
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    parsed = json.loads(outputs[0])
    assert parsed["sections"][SECTION]["rows"] and '"status": "computed"' in parsed["ranking"]


def _eval(workspace: Path, *options: str) -> dict[str, Any]:
    args = ["eval", "--suite", "science-birds", "--provider", "mock", "--characters", "A-F", "--trials", "2"]
    args += ["--workers", "1", *options, "--run-workspace", str(workspace), "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (run_dir,) = list((workspace / "runs").iterdir())
    manifest: dict[str, Any] = json.loads((run_dir / "run_manifest.json").read_text())
    return {"manifest": manifest, "report": json.loads(result.stdout)}


def test_cli_flags_are_aliases_of_the_suite_options(
    tmp_path: Path,
    pixel_classifier: None,  # noqa: F811
) -> None:
    flags = _eval(tmp_path / "flags", "--uncertainty-resamples", "500", "--uncertainty-seed", "11")
    keyed = _eval(
        tmp_path / "keyed",
        *("--suite-option", "uncertainty_resamples=500", "--suite-option", "uncertainty_seed=11"),
    )
    assert flags["manifest"]["input_digest"] == keyed["manifest"]["input_digest"]
    assert flags["manifest"]["result_digest"] == keyed["manifest"]["result_digest"]
    description = flags["report"]["sections"][SECTION]["description"]
    assert "500 paired letter draws (seed 11)" in description
    bad = CliRunner().invoke(app, ["eval", "--suite", "science-birds", "--uncertainty-resamples", "-3"])
    assert bad.exit_code == 2 and "--uncertainty-resamples" in bad.output
