"""Ranking uncertainty: the published 2024 results, the method's rules, bad input and stability.

The 2024 table is a reviewer's independent recomputation of the letter bootstrap (10,000 draws) on
the published files; ours must agree within 1 point at each end of every interval and exactly, or
one off at one end, on every rank interval.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.pcg.test_scoring_conformance import _build as build_competition
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.competition.scoring import UNCERTAINTY_FILE, stage_score
from worldforge.pcg.scoring.scores import rank_programs
from worldforge.pcg.scoring.uncertainty import (
    DEFAULT_SEED,
    LetterScores,
    ranking_uncertainty,
    shared_ranks,
)

#: program -> (interval low, high, rank low, high), from the issue (ChatGPT4PCG 2024).
PUBLISHED_2024 = {
    "TheAlmostEngineer": (33.5, 63.9, 1, 1),
    "ijbot": (8.1, 21.6, 2, 4),
    "SpiralTeam": (2.8, 19.3, 2, 7),
    "baseline_zero_shot_multi_turn": (4.8, 11.9, 3, 6),
    "CoT": (2.4, 11.9, 3, 7),
    "A-little-HOPE": (4.1, 8.4, 4, 7),
    "IBMGPT": (0.4, 11.8, 2, 8),
    "ChuangYe": (0.4, 1.2, 7, 8),
    "baseline_zero_shot": (0.0, 0.1, 9, 9),
    "Shot_Few": (0.0, 0.0, 10, 10),
}


@pytest.fixture(scope="module")
def competition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("uncertainty2024")
    build_competition(root)
    return root


@pytest.fixture(scope="module")
def payload_2024(competition: Path) -> dict[str, object]:
    report = stage_score(competition, trials=10)
    assert report.uncertainty is not None
    assert report.uncertainty["file"] == f"result/{UNCERTAINTY_FILE}"
    payload: dict[str, object] = json.loads((competition / "result" / UNCERTAINTY_FILE).read_text())
    return payload


def test_2024_intervals_agree_with_the_published_recomputation(payload_2024: dict[str, object]) -> None:
    programs = {p["program"]: p for p in payload_2024["programs"]}  # type: ignore[attr-defined]
    assert set(programs) == set(PUBLISHED_2024)
    for name, (low, high, rank_low, rank_high) in PUBLISHED_2024.items():
        mine = programs[name]
        assert mine["interval"][0] == pytest.approx(low, abs=1.0), name
        assert mine["interval"][1] == pytest.approx(high, abs=1.0), name
        ends = [mine["rank_interval"][0] - rank_low, mine["rank_interval"][1] - rank_high]
        assert sorted(abs(e) for e in ends) in ([0, 0], [0, 1]), (name, mine["rank_interval"])
    assert payload_2024["method"]["resamples"] == 10_000  # type: ignore[index]
    assert payload_2024["method"]["seed"] == DEFAULT_SEED  # type: ignore[index]


def test_2024_shared_ranks_adjacent_pairs_and_winner(payload_2024: dict[str, object]) -> None:
    programs = payload_2024["programs"]
    # Only first place is separated; places 2-7 share rank 2 (FastChat's rule).
    assert [p["shared_rank"] for p in programs] == [1, 2, 2, 2, 2, 2, 2, 7, 9, 10]  # type: ignore[attr-defined]
    adjacent = payload_2024["adjacent"]
    first, second = adjacent[0], adjacent[1]  # type: ignore[index]
    assert (first["ahead"], first["behind"]) == ("TheAlmostEngineer", "ijbot")
    assert first["p_ahead"] > 0.99
    assert (second["ahead"], second["behind"]) == ("ijbot", "SpiralTeam")
    assert second["p_ahead"] == pytest.approx(0.8, abs=0.05)
    for pair in adjacent:  # type: ignore[attr-defined]
        flip = pair["sign_flip"]
        assert flip["p_holm"] >= flip["p_value"]
        assert flip["method"] == ("exact" if flip["letters_differing"] <= 16 else "random")
    winner = payload_2024["winner"]
    assert winner["top"] == "TheAlmostEngineer" and winner["winners"] == ["TheAlmostEngineer"]  # type: ignore[index]
    assert winner["statistically_tied_with"] == []  # type: ignore[index]
    assert "lies above every other program's" in winner["sentence"]  # type: ignore[index]


def test_official_files_are_unchanged_by_the_uncertainty(competition: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(competition, copy, ignore=shutil.ignore_patterns("result", "logs"))
    off = stage_score(copy, trials=10, uncertainty_resamples=0)
    assert off.uncertainty is None and "ranking_uncertainty" not in off.to_dict()
    assert not (copy / "result" / UNCERTAINTY_FILE).exists()
    official = ("constants.json", "trial_scores.csv", "character_scores.csv", "prompt_scores_ranks.csv")
    before = {n: (copy / "result" / n).read_bytes() for n in (*official, "report.json", "report.md")}
    on = stage_score(copy, trials=10, uncertainty_resamples=500, uncertainty_seed=5)
    assert on.to_dict()["ranking_uncertainty"]["resamples"] == 500
    assert {n: (copy / "result" / n).read_bytes() for n in before} == before
    assert json.loads((copy / "result" / UNCERTAINTY_FILE).read_text())["method"]["seed"] == 5
    stage_score(copy, trials=10, uncertainty_resamples=0)  # off again: the stale file goes
    assert not (copy / "result" / UNCERTAINTY_FILE).exists()


def test_file_is_byte_identical_across_processes_and_follows_the_seed(
    competition: Path, tmp_path: Path
) -> None:
    texts = []
    for n, seed in enumerate(["7", "7", "8"]):
        folder = tmp_path / f"run{n}"
        shutil.copytree(competition, folder, ignore=shutil.ignore_patterns("result", "logs"))
        args = ["pcg", "stage", "score", "-s", str(folder), "--uncertainty-resamples", "2000"]
        done = subprocess.run(
            [sys.executable, "-m", "worldforge", *args, "--uncertainty-seed", seed],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        texts.append((folder / "result" / UNCERTAINTY_FILE).read_bytes())
        reported = json.loads(done.stdout)[0]["ranking_uncertainty"]
        assert (reported["seed"], reported["resamples"]) == (int(seed), 2000)
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]


def test_uncertainty_options_only_fit_the_score_stages(tmp_path: Path) -> None:
    for args in (
        ["pcg", "stage", "convert", "-s", str(tmp_path), "--uncertainty-seed", "3"],
        ["pcg", "stage", "score", "-s", str(tmp_path), "--uncertainty-resamples", "-1"],
    ):
        done = subprocess.run([sys.executable, "-m", "worldforge", *args], capture_output=True, text=True)
        assert done.returncode == 2, done.stderr
        assert "--uncertainty-" in done.stderr


def _scores(rows: dict[str, list[float]]) -> LetterScores:
    letters = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(next(iter(rows.values())))])
    return LetterScores(tuple(rows), letters, tuple(tuple(r) for r in rows.values()))


def test_fastchat_shared_rank_on_a_hand_made_case() -> None:
    # Upper 12 is not below lower 10, so the second shares rank 1; only 10 lies above 6; 3 trails three.
    assert shared_ranks([10, 5, 4, 1], [20, 12, 6, 3]) == [1, 1, 2, 4]
    assert shared_ranks([1.0, 1.0], [2.0, 2.0]) == [1, 1]


def test_too_few_letters_or_programs_give_one_sentence_and_no_intervals() -> None:
    few_letters = ranking_uncertainty(_scores({"a": [0.1, 0.2, 0.3, 0.4], "b": [0.2, 0.1, 0.1, 0.1]}))
    payload = few_letters.to_dict()
    assert payload["status"] == "not-computed" and payload["programs"] == [] and payload["winner"] is None
    assert payload["reason"].count(".") == 1 and "4 letters" in payload["reason"]
    one = ranking_uncertainty(_scores({"a": [0.1, 0.2, 0.3, 0.4, 0.5]})).to_dict()
    assert one["status"] == "not-computed" and "1 program," in one["reason"] and one["adjacent"] == []
    enough = ranking_uncertainty(_scores({"a": [0.1] * 5, "b": [0.2] * 5}), resamples=50)
    assert enough.computed and len(enough.programs) == 2


def test_bad_settings_are_refused() -> None:
    scores = _scores({"a": [0.1] * 5, "b": [0.2] * 5})
    with pytest.raises(WorldForgeError, match="resamples"):
        ranking_uncertainty(scores, resamples=0)
    with pytest.raises(WorldForgeError, match="seed"):
        ranking_uncertainty(scores, seed=-1)
    with pytest.raises(WorldForgeError, match="negative or non-finite"):
        _scores({"a": [0.1, -0.2, 0.1, 0.1, 0.1]})


def test_overlapping_top_interval_reads_statistically_tied_and_the_rule_still_decides() -> None:
    rows = {
        "alpha": [0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.6, 0.4],
        "beta": [0.2, 0.8, 0.3, 0.7, 0.4, 0.6, 0.5, 0.45],
        "baseline_zero_shot": [0.01] * 8,
    }
    ranking = rank_programs([("alpha", 51.0), ("beta", 48.0), ("baseline_zero_shot", 1.0)])
    result = ranking_uncertainty(_scores(rows), ranking=ranking, resamples=2000)
    assert result.winner is not None
    assert result.winner.winners == ("alpha",) and result.winner.tied_with == ("beta",)
    assert result.winner.sentence.startswith("Winner by the competition's rule: alpha (decided by score)")
    assert "statistically tied with beta (" in result.winner.sentence
    assert [p.program for p in result.programs] == ["alpha", "beta", "baseline_zero_shot"]
    assert [p.baseline for p in result.programs] == [False, False, True]
    assert [p.shared_rank for p in result.programs] == [1, 1, 3]


letter_rows = st.integers(min_value=2, max_value=6).flatmap(
    lambda programs: st.integers(min_value=5, max_value=12).flatmap(
        lambda letters: st.lists(
            st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=letters, max_size=letters),
            min_size=programs,
            max_size=programs,
        )
    )
)


@settings(max_examples=40, deadline=None)
@given(rows=letter_rows, seed=st.integers(min_value=0, max_value=2**32))
def test_properties_that_hold_by_construction(rows: list[list[float]], seed: int) -> None:
    """Bounds, orders and scale invariance. Not "the interval contains the point estimate": the
    percentile construction does not promise it (the draws' 2.5th to 97.5th percentiles of a
    ratio are not tied to the full-sample value), so no property asserts it."""
    names = [f"p{k}" for k in range(len(rows))]
    scores = LetterScores(tuple(names), tuple("ABCDEFGHIJKL"[: len(rows[0])]), tuple(map(tuple, rows)))
    result = ranking_uncertainty(scores, resamples=200, seed=seed)
    for p in result.programs:
        assert 0.0 <= p.lower <= p.upper <= 100.0
        assert 1 <= p.rank_lower <= p.rank_upper <= len(rows)
        assert 1 <= p.shared_rank <= len(rows)
    points = [p.normalized for p in result.programs]
    assert points == sorted(points, reverse=True)
    assert sum(points) == pytest.approx(100.0 if any(any(r) for r in rows) else 0.0, abs=1e-6)
    for pair in result.adjacent:
        assert 0.0 <= pair.p_ahead <= 1.0 and pair.test.p_value <= pair.p_holm <= 1.0
    # Doubling every score is exact in binary floating point, and the normalized share cancels it.
    doubled = LetterScores(scores.programs, scores.letters, tuple(tuple(2 * v for v in r) for r in rows))
    again = ranking_uncertainty(doubled, resamples=200, seed=seed).to_dict()
    assert _without_differences(again) == _without_differences(result.to_dict())


def _without_differences(payload: dict[str, object]) -> dict[str, object]:
    """``payload`` less the one field that carries the scores' scale (the summed letter difference)."""
    out: dict[str, object] = json.loads(json.dumps(payload))
    for pair in out["adjacent"]:  # type: ignore[attr-defined]
        del pair["letter_difference"]
    return out


def test_identical_programs_tie_at_one_half() -> None:
    row = [0.3, 0.1, 0.5, 0.2, 0.4, 0.6]
    result = ranking_uncertainty(_scores({"a": row, "b": list(row)}), resamples=300)
    (pair,) = result.adjacent
    assert pair.p_ahead == 0.5 and pair.test.p_value == 1.0 and pair.test.method == "none"
    assert result.programs[0].lower == result.programs[1].lower == pytest.approx(50.0)
    assert np.isclose(result.programs[0].upper, 50.0)
