"""``runs diff A B`` on two science-birds runs: how far each program moved, and whether it is noise.

A small mock run (10 letters x 2 trials, both baseline programs) is diffed against its own
``--replay`` (every change exactly 0, interval [0, 0]) and against copies of it whose item records
carry a planted 20 % stability drop on 5 or 8 letters of one program: the bootstrap interval flags
the program (``--fail-on-regression`` exits 1), with 8 letters the Holm-adjusted sign-flip flag
fires too, and the other program is never flagged. Runs of other letters, trials or suites are
compared on what matches and listed, and the HTML page fits a 375 px screen in headless Chromium.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.suites.test_science_birds import PixelClassifier
from worldforge.cli.app import app
from worldforge.suites.science_birds.compare import character_scores, compare_runs, load_side
from worldforge.suites.science_birds.config import Classifier

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_RUNS = ROOT / "tests" / "fixtures" / "workspace-v1" / "runs"
PCG_STAGE_RUN = FIXTURE_RUNS / "20261128T024934.377Z-d4c6e62fe4f9"
ONE_LETTER_RUN = FIXTURE_RUNS / "20261128T024912.531Z-639b3b7d0e8c"
RESAMPLES = "2000"
PLANTED = "zero-shot"
OTHER = "zero-shot-multi-turn"
runner = CliRunner()


def _eval(ws: Path, *extra: str, letters: str = "A-J", trials: str = "2") -> Path:
    args = ["eval", "--suite", "science-birds", "--provider", "mock", "--characters", letters,
            "--trials", trials, "--program", PLANTED, "--program", OTHER, "--workers", "1",
            "--run-workspace", str(ws), "--format", "json", *extra]  # fmt: skip
    before = set((ws / "runs").iterdir()) if (ws / "runs").is_dir() else set()
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (run_dir,) = set((ws / "runs").iterdir()) - before
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Run A, its replay B, and a run of other letters and trials, all with the pixel classifier."""
    fake = PixelClassifier()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Classifier, "identity", lambda self: fake.identity())
        mp.setattr(Classifier, "classify", lambda self, pngs, embedding=True: fake.classify(pngs, embedding))
        ws = tmp_path_factory.mktemp("compare") / "ws"
        a = _eval(ws)
        b = _eval(ws, "--replay", a.name)
        other = _eval(ws, letters="A-C", trials="3")
        yield {"ws": ws, "a": a, "b": b, "other": other}


def _plant(run_dir: Path, dest: Path, letters: int) -> list[str]:
    """A copy of ``run_dir`` whose item records of :data:`PLANTED` lose 20 % stability on the first
    ``letters`` letters that program scored above 0 (a letter that scored 0 cannot drop)."""
    side = load_side(run_dir)
    scores, _ = character_scores(side, side.models)
    chosen = [c for c in side.letters if all(scores[m][PLANTED][c] > 0 for m in side.models)][:letters]
    assert len(chosen) == letters, scores
    shutil.copytree(run_dir, dest)
    for path in (dest / "items").glob("*.json"):
        body = json.loads(path.read_text(encoding="utf-8"))
        record = body["record"]
        if record["program"] == PLANTED and record["letter"] in chosen:
            record["sta"] = float(record["sta"]) * 0.8
            path.write_text(json.dumps(body), encoding="utf-8")
    return chosen


def _diff(runs: dict[str, Path], a: Path, b: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(
        app,
        ["runs", "diff", str(a), str(b), "--workspace", str(runs["ws"]), "--format", "json",
         "--uncertainty-resamples", RESAMPLES, *extra],
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def _changes(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["program"]: c for c in payload["science_birds"]["changes"]}


def test_a_run_against_its_own_replay_moves_by_exactly_zero(runs: dict[str, Path]) -> None:
    code, payload = _diff(runs, runs["a"], runs["b"], "--fail-on-regression")
    assert code == 0
    comparison = payload["science_birds"]
    assert comparison["status"] == "computed" and comparison["letters"] == "ABCDEFGHIJ"
    assert [p["match"] for p in comparison["programs"]] == ["same", "same"]
    for change in comparison["changes"]:
        assert change["delta_prompt_score"] == 0.0 and change["prompt_score_interval"] == [0.0, 0.0]
        assert change["delta_normalized"] == 0.0 and change["normalized_interval"] == [0.0, 0.0]
        assert change["sign_flip"]["p_value"] == 1.0 and not change["regressed"]
    assert comparison["moved_letters"] == [] and comparison["mismatches"] == []
    generation = comparison["stages"][0]
    assert generation["stage"] == "generation" and generation["note"].startswith("replayed")
    assert not any(stage["changed"] for stage in comparison["stages"])
    # without the flag, today's exit code: the replay's result digest is not A's
    code, _ = _diff(runs, runs["a"], runs["b"])
    assert code == (0 if payload["identical_results"] else 1)


def test_a_planted_drop_on_five_letters_is_flagged_by_its_interval(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    planted = _plant(runs["a"], tmp_path / "planted5", 5)
    code, payload = _diff(runs, runs["a"], tmp_path / "planted5", "--fail-on-regression")
    assert code == 1
    changes = _changes(payload)
    drop = changes[PLANTED]
    assert drop["regressed"] and drop["prompt_score_interval"][1] < 0 < -drop["delta_prompt_score"]
    assert drop["normalized_interval"][1] < 0
    # five letters: a two-sided sign-flip test cannot go below 2 / 2**5
    assert drop["sign_flip"]["letters_differing"] == 5 and drop["sign_flip"]["p_value"] == 0.0625
    assert not drop["significant"]
    assert not changes[OTHER]["regressed"] and not changes[OTHER]["significant"]
    assert changes[OTHER]["delta_prompt_score"] == 0.0
    assert payload["science_birds"]["regressions"] == [PLANTED]
    moved = payload["science_birds"]["moved_letters"]
    assert {m["letter"] for m in moved} == set(planted) and all(m["program"] == PLANTED for m in moved)
    assert all(m["stability"][1] < m["stability"][0] for m in moved)
    # the same diff without the flag keeps today's exit code (the copy's digests are A's)
    code, _ = _diff(runs, runs["a"], tmp_path / "planted5")
    assert code == 0


def test_a_planted_drop_on_eight_letters_fires_the_holm_flag_too(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    _plant(runs["a"], tmp_path / "planted8", 8)
    code, payload = _diff(runs, runs["a"], tmp_path / "planted8", "--fail-on-regression")
    assert code == 1
    changes = _changes(payload)
    assert changes[PLANTED]["regressed"] and changes[PLANTED]["significant"]
    assert changes[PLANTED]["sign_flip"]["p_holm"] < 0.05
    assert not changes[OTHER]["regressed"] and not changes[OTHER]["significant"]
    # the other way round the drop is an improvement, and nothing regresses
    code, payload = _diff(runs, tmp_path / "planted8", runs["a"], "--fail-on-regression")
    assert code == 0 and _changes(payload)[PLANTED]["verdict"] == "improvement"


def test_a_renamed_program_is_matched_by_its_prompts(runs: dict[str, Path], tmp_path: Path) -> None:
    dest = tmp_path / "renamed"
    shutil.copytree(runs["a"], dest)
    for path in (dest / "items").glob("*.json"):
        body = json.loads(path.read_text(encoding="utf-8"))
        if body["record"]["program"] == OTHER:
            body["record"]["program"] = "multi"
            path.write_text(json.dumps(body), encoding="utf-8")
    manifest = json.loads((dest / "run_manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["inputs"]:
        if entry["name"] == "evaluation":
            for program in entry["value"]["config"]["programs"]:
                if program["name"] == OTHER:
                    program["name"], program["digest"] = "multi", "sha256:" + "0" * 64
    (dest / "run_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    comparison = compare_runs(runs["a"], dest, resamples=200)
    assert comparison is not None
    assert {(p["a"], p["b"], p["match"]) for p in comparison.programs} == {
        (PLANTED, PLANTED, "same"), (OTHER, "multi", "renamed")}  # fmt: skip
    assert all(c.delta_prompt == 0.0 for c in comparison.changes)


def test_runs_of_other_letters_trials_and_suites_are_listed_not_crashing(runs: dict[str, Path]) -> None:
    code, payload = _diff(runs, runs["a"], runs["other"], "--fail-on-regression")
    assert code == 0
    comparison = payload["science_birds"]
    assert comparison["letters"] == "ABC" and comparison["status"] == "no-intervals"
    assert "share 3 letters" in comparison["reason"] and comparison["changes"] == []
    assert any(m.startswith("letters: only in A DEFGHIJ") for m in comparison["mismatches"])
    assert any(m.startswith("trials: A ran 2") for m in comparison["mismatches"])
    # a pcg stage run against a science-birds run: the suites are listed, nothing raises
    for a, b in ((runs["a"], PCG_STAGE_RUN), (PCG_STAGE_RUN, runs["a"])):
        result = runner.invoke(app, ["runs", "diff", str(a), str(b), "--workspace", str(runs["ws"])])
        assert result.exit_code == 1, result.output
        assert "not compared: suite:" in result.stdout and "Traceback" not in result.output
    # a run written by an older version, with one letter: compared on what matches
    comparison_old = compare_runs(ONE_LETTER_RUN, runs["a"], resamples=200)
    assert comparison_old is not None and comparison_old.status == "no-intervals"
    assert any(m.startswith("models:") or m.startswith("letters:") for m in comparison_old.mismatches)
    # two runs that are no science-birds runs at all get the digest diff only
    assert compare_runs(PCG_STAGE_RUN, PCG_STAGE_RUN) is None


def test_markdown_and_text_show_the_change_with_its_interval(runs: dict[str, Path], tmp_path: Path) -> None:
    _plant(runs["a"], tmp_path / "planted", 8)
    for fmt, marker in (("md", "| zero-shot | -"), ("text", "zero-shot: Δ prompt -")):
        result = runner.invoke(
            app, ["runs", "diff", str(runs["a"]), str(tmp_path / "planted"), "--workspace", str(runs["ws"]),
                  "--format", fmt, "--uncertainty-resamples", RESAMPLES],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert marker in result.stdout and "regression (significant)" in result.stdout


def test_html_diff_is_one_offline_file_that_fits_a_phone(runs: dict[str, Path], tmp_path: Path) -> None:
    _plant(runs["a"], tmp_path / "planted", 8)
    out = tmp_path / "diff.html"
    result = runner.invoke(
        app, ["runs", "diff", str(runs["a"]), str(tmp_path / "planted"), "--workspace", str(runs["ws"]),
              "--format", "html", "-o", str(out), "--uncertainty-resamples", RESAMPLES],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "Content-Security-Policy" in page and "http://" not in page and "https://" not in page
    assert page.count('<div class="pair">') == 8 and page.count('<img src="data:image/png;base64,') == 16
    assert "regression" in page and "Letters that moved most" in page
    from tests.reports.test_browser_science_birds import CHROMIUM, _measure

    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed")
    measured = _measure(page, tmp_path, 375)
    assert measured["innerWidth"] == 375
    assert measured["fits"] and not measured["wide"], measured
    assert measured["images"] == 16 and measured["decoded"] == 16, measured
