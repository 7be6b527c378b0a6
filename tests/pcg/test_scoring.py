"""Scoring units: bignumber arithmetic, trial index, hand-computed weights and scores, ranking policy,
multi-model totals, missing inputs, official output formats."""

from __future__ import annotations

import json
from decimal import Context, Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.competition.scoring import stage_score
from worldforge.pcg.scoring.report import official_files, winner_sentence
from worldforge.pcg.scoring.scores import (
    ExactArithmetic,
    ProgramData,
    combine_models,
    rank_programs,
    ranking_for,
    score_competition,
    to_fixed,
    trial_index,
)

EX = ExactArithmetic()


def test_bignumber_division_rounds_to_20_places_half_up() -> None:
    assert EX.text(EX.div(Decimal(1), Decimal(3))) == "0.33333333333333333333"
    assert EX.text(EX.div(Decimal(2), Decimal(3))) == "0.66666666666666666667"
    assert EX.text(EX.div(Decimal(1), Decimal(26))) == "0.03846153846153846154"
    assert EX.text(EX.div(Decimal(1), Decimal(8))) == "0.125"
    tiny = Decimal("5e-21")
    assert EX.text(EX.div(tiny, Decimal(1))) == "0.00000000000000000001"  # .5 -> away from zero
    assert EX.text(EX.div(-tiny, Decimal(1))) == "-0.00000000000000000001"
    assert EX.text(EX.div(Decimal("4e-21"), Decimal(1))) == "0"


@given(st.integers(-(10**30), 10**30), st.integers(1, 10**12))
def test_exact_division_matches_rational_half_up(a: int, b: int) -> None:
    q = Fraction(a, b) * 10**20
    n = q.numerator // q.denominator
    rest = q - n
    n += 1 if (rest > Fraction(1, 2) or (rest == Fraction(1, 2) and q >= 0)) else 0
    assert EX.div(Decimal(a), Decimal(b)) == Decimal(n).scaleb(-20, Context(prec=200))


def test_exact_add_and_multiply_are_exact() -> None:
    a = EX.num(0.7596107721328735)  # a JS number enters through its shortest round-trip digits
    assert str(a) == "0.7596107721328735"
    w = Decimal("0.19474618658729690130802801916140687664847986026437297147")
    assert (
        EX.text(EX.mul(w, a)) == "0.147931301163509252019306168248779331181103755906224265667098836864619045"
    )
    assert EX.text(EX.add(Decimal("0.1"), Decimal("0.2"))) == "0.3"


def test_to_fixed_prints_plain_decimals() -> None:
    assert to_fixed(Decimal("1.2300")) == "1.23"
    assert to_fixed(Decimal("100")) == "100"
    assert to_fixed(Decimal("0E-20")) == "0"
    assert to_fixed(Decimal("1e-7")) == "0.0000001"
    assert to_fixed(EX.num(4.984779279896638e-06)) == "0.000004984779279896638"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("team1_A_10.png", 10),
        ("competition/team1/levels/A/team1_A_3.xml", 3),
        ("competition\\v1\\levels\\L\\V1_L_1.xml", 1),
        ("x_07.png", 7),
        ("x_12abc.png", 12),
        ("x_abc.png", None),
        ("plain.png", None),
    ],
)
def test_trial_index_rule(name: str, expected: int | None) -> None:
    assert trial_index(name) == expected


def _toy() -> list[ProgramData]:
    p1 = ProgramData(
        "P1",
        stability={
            "A": [("P1_A_1.xml", 1.0), ("P1_A_2.xml", 0.5)],
            "B": [("P1_B_1.xml", 1), ("P1_B_2.xml", 1)],
        },
        similarity={
            "A": [("P1_A_1.png", 0.8), ("P1_A_2.png", 0.6)],
            "B": [("P1_B_1.png", 0.2), ("P1_B_2.png", 0.4)],
        },
        diversity={"A": 0.5, "B": 0.1},
    )
    p2 = ProgramData(
        "P2",
        stability={"A": [("P2_A_1.xml", 1.0)]},
        similarity={"A": [("P2_A_1.png", 0.4)]},
        diversity={"A": 0.0},
    )
    return [p1, p2]


@pytest.mark.parametrize("exact", [True, False])
def test_hand_computed_weights_and_scores(exact: bool) -> None:
    result = score_competition(_toy(), trials=2, exact=exact)  # 26 letters, C-floor 1/26

    def check(value: object, expected: str) -> None:
        got = Decimal(result.arithmetic.text(value))  # type: ignore[arg-type]
        if exact:
            assert got == Decimal(expected)
        else:
            assert abs(got - Decimal(expected)) < Decimal("1e-15")

    a, b = result.weights[:2]
    # A: w_sta = 1 - 2.5/4, w_sim = 1 - 1.8/4, w_div = 1 - 0.5/2 (P = 2 programs, T = 2)
    for value, expected in zip(
        (a.stability, a.similarity, a.diversity, a.weight),
        ("0.375", "0.55", "0.75", "0.1546875"),
        strict=True,
    ):
        check(value, expected)
    for value, expected in zip(
        (b.stability, b.similarity, b.diversity, b.weight), ("0.5", "0.85", "0.95", "0.40375"), strict=True
    ):
        check(value, expected)
    assert result.arithmetic.text(result.weights[2].weight) == "1"  # nobody built C: every weight 1
    rows = {(r.program, r.character, r.trial): r for r in result.trial_rows}
    check(rows["P1", "A", 2].score, "0.04640625")
    check(rows["P2", "A", 2].score, "0")
    chars = {(r.program, r.character): r for r in result.character_rows}
    check(chars["P1", "A"].score, "0.0425390625")
    check(chars["P1", "B"].score, "0.0121125")
    check(chars["P2", "A"].mean_stability, "0.5")
    scores = {p.program: p for p in result.programs}
    # (0.0425390625 + 0.0121125) / 26, rounded to 20 places half-up
    check(scores["P1"].prompt, "0.00210198317307692308")
    check(result.competition, "0.00210198317307692308")
    check(scores["P1"].normalized, "100")
    check(scores["P2"].normalized, "0")
    missing = {(m["program"], m["character"], m["input"], m.get("trial")) for m in result.missing}
    assert ("P2", "A", "stability", 2) in missing and ("P2", "A", "similarity", 2) in missing
    assert {("P2", "B", k, None) for k in ("stability", "similarity", "diversity")} <= missing
    assert ("P1", "C", "stability", None) in missing


def test_weight_floor_is_one_over_c() -> None:
    perfect = ProgramData(
        "P",
        stability={c: [(f"P_{c}_{i}.xml", 1) for i in (1, 2)] for c in "AB"},
        similarity={c: [(f"P_{c}_{i}.png", 1) for i in (1, 2)] for c in "AB"},
        diversity={"A": 1, "B": 1},
    )
    result = score_competition([perfect], trials=2, exact=True, characters="AB")
    assert result.arithmetic.text(result.weights[0].stability) == "0.5"  # 1/C with C = 2
    full = score_competition([perfect], trials=2, exact=True)  # 26 letters: floor 1/26
    floor, ctx = Decimal("0.03846153846153846154"), Context(prec=200)
    assert full.arithmetic.text(full.weights[0].weight) == to_fixed(
        ctx.multiply(ctx.multiply(floor, floor), floor)
    )


def test_ranking_tie_break_shortest_prompt_then_co_winners() -> None:
    scores = [("a", Decimal(40)), ("b", Decimal(40)), ("c", Decimal(15)), ("baseline_zero_shot", Decimal(5))]
    r = rank_programs(scores, prompt_lengths={"a": 900, "b": 750, "c": 10})
    assert r.winners == ("b",) and r.decided_by == "shortest-prompt"
    assert [(e.program, e.rank) for e in r.entries] == [
        ("b", 1),
        ("a", 2),
        ("c", 3),
        ("baseline_zero_shot", None),
    ]
    assert r.zero_shot == "baseline_zero_shot" and r.beats_zero_shot is True
    co = rank_programs(scores, prompt_lengths={"a": 750, "b": 750})
    assert co.winners == ("a", "b") and co.decided_by == "co-winners"
    assert [e.rank for e in co.entries][:2] == [1, 1]
    unknown = rank_programs(scores)  # no prompt lengths: the tie cannot be broken
    assert unknown.decided_by == "co-winners"
    clear = rank_programs([("a", 3.0), ("b", 1.0), ("zero_shot", 4.0)], baselines=["zero_shot"])
    # The policy: the leader must overcome the zero-shot baseline to be declared the winner.
    assert clear.leaders == ("a",) and clear.beats_zero_shot is False
    assert clear.winners == () and clear.decided_by == "below-zero-shot"
    assert clear.to_dict(EX)["leaders"] == ["a"]
    equal = rank_programs([("a", 4.0), ("zero_shot", 4.0)], baselines=["zero_shot"])
    assert equal.winners == () and equal.beats_zero_shot is False  # a tie does not overcome it
    # No zero-shot baseline scored: the policy's condition cannot be checked, so no winner.
    alone = rank_programs([("a", 4.0), ("b", 1.0)])
    assert alone.winners == () and alone.leaders == ("a",) and alone.beats_zero_shot is None
    assert alone.decided_by == "no-zero-shot-baseline" and alone.zero_shot is None
    assert alone.to_dict(EX)["winners"] == [] and alone.to_dict(EX)["leaders"] == ["a"]
    named = rank_programs([("a", 4.0), ("zs", 1.0)], baselines=["zs"], zero_shot="gone")
    assert named.winners == () and named.decided_by == "no-zero-shot-baseline"


def test_winner_sentence_names_why_no_winner_is_declared() -> None:
    none = rank_programs([("a", 4.0), ("b", 1.0)]).to_dict(EX)
    assert winner_sentence(none) == (
        "Winner(s): none: no zero-shot baseline was scored, so the top program (a) "
        "cannot be declared the winner."
    )
    below = rank_programs([("a", 3.0), ("zero_shot", 4.0)], baselines=["zero_shot"]).to_dict(EX)
    assert "does not overcome the zero-shot baseline" in winner_sentence(below)
    won = rank_programs([("a", 5.0), ("zero_shot", 4.0)], baselines=["zero_shot"]).to_dict(EX)
    assert winner_sentence(won) == "Winner(s): a (decided by score)."


def test_combine_models_sums_prompt_scores_and_normalizes() -> None:
    m1 = score_competition(_toy(), trials=2, exact=True, characters="AB")
    p3 = ProgramData(
        "P3", stability={"A": [("P3_A_1.xml", 1)]}, similarity={"A": [("P3_A_1.png", 1)]}, diversity={"A": 1}
    )
    m2 = score_competition([*_toy(), p3], trials=2, exact=True, characters="AB")
    multi = combine_models({"qwen": m1, "gemma": m2})
    t = multi.arithmetic.text
    p = {x.program: x.prompt for x in m2.programs}
    assert multi.totals["P1"] == EX.add(next(x.prompt for x in m1.programs if x.program == "P1"), p["P1"])
    assert multi.totals["P3"] == p["P3"]  # absent for qwen: counted 0 and listed
    assert {"program": "P3", "model": "qwen", "input": "model results", "reason": "missing"} in multi.missing
    assert abs(sum(Decimal(t(v)) for v in multi.normalized.values()) - 100) < Decimal("1e-17")
    ranking = rank_programs(list(multi.normalized.items()))
    assert ranking.entries[0].program == max(multi.totals, key=lambda k: multi.totals[k])
    with pytest.raises(WorldForgeError):
        combine_models({"a": m1, "b": score_competition(_toy(), trials=2, exact=False, characters="AB")})


def test_official_csv_and_constants_format() -> None:
    result = score_competition(_toy(), trials=2, exact=True, characters="AB")
    files = official_files(result)
    # C = 2 here, so the 1/C floor (0.5) lifts w_sta of A from 0.375
    assert files["constants.json"].startswith(
        '{"competitionScore":"0.034415625","weights":[{"character":"A","weight":"0.20625",'
    )
    lines = files["prompt_scores_ranks.csv"].split("\r\n")
    assert lines == [
        '"team","normalizedPromptScore","promptScore","rank"',
        '"P1","100","0.034415625",1',
        '"P2","0","0",2',
    ]
    trial_lines = files["trial_scores.csv"].split("\r\n")
    assert trial_lines[1] == '"P1","A",1,"0.165","1","0.8","0.5"'
    assert len(trial_lines) == 1 + 2 * 2 * 2
    ranking = ranking_for(result)  # no baseline_zero_shot folder: a leader, not a winner
    assert ranking.leaders == ("P1",) and ranking.winners == ()
    assert ranking_for(result, zero_shot="P2").winners == ("P1",)


def test_stage_score_with_missing_and_unreadable_inputs(tmp_path: Path) -> None:
    team = tmp_path / "teamA"
    for stage, payload in (
        (
            "stability",
            {"raws": [{"tag": "teamA_A_1.xml", "score": 1.0}, {"tag": "teamA_A_2.xml", "score": None}]},
        ),
        ("similarity", {"trials": [{"id": "teamA_A_1.png", "similarity": 0.5}]}),
        ("diversity", {"diversityRate": 0.2}),
    ):
        (team / stage).mkdir(parents=True)
        (team / stage / "A.json").write_text(json.dumps(payload))
    (team / "stability" / "B.json").write_text("{broken")
    (tmp_path / "teamB").mkdir()  # a team with no files at all still scores 0
    report = stage_score(tmp_path, trials=10, exact=True).report
    reasons = {(m["program"], m["character"], m["input"], m["reason"]) for m in report["missing_inputs"]}
    assert ("teamA", "A", "stability", "entry 'teamA_A_2.xml' has no numeric 'score'") in reasons
    assert any(r[:3] == ("teamA", "B", "stability") and r[3].startswith("unreadable") for r in reasons)
    assert ("teamB", "Z", "diversity", "file missing") in reasons
    progs = {p["program"]: p for p in report["programs"]}
    assert progs["teamB"]["prompt_score"] == "0"
    assert Decimal(progs["teamA"]["normalized_score"]) == 100
    for name in ("constants.json", "trial_scores.csv", "character_scores.csv", "prompt_scores_ranks.csv"):
        assert (tmp_path / "result" / name).is_file()
    md = (tmp_path / "result" / "report.md").read_text()
    assert "Missing or unreadable inputs (counted as 0)" in md


def test_stage_score_multi_model_layout(tmp_path: Path) -> None:
    for model, score in (("qwen", 0.5), ("gemma", 1.0)):
        for team in ("t1", "baseline_zero_shot"):
            base = tmp_path / model / team
            value = score if team == "t1" else score / 2
            for stage, payload in (
                ("stability", {"raws": [{"tag": f"{team}_A_1.xml", "score": 1.0}]}),
                ("similarity", {"trials": [{"id": f"{team}_A_1.png", "similarity": value}]}),
                ("diversity", {"diversityRate": 0.5}),
            ):
                (base / stage).mkdir(parents=True, exist_ok=True)
                (base / stage / "A.json").write_text(json.dumps(payload))
    report = stage_score(tmp_path, trials=10, exact=True, models=["qwen", "gemma"]).report
    models = {p["program"]: p for p in report["models"]["programs"]}
    assert set(models["t1"]["per_model"]) == {"qwen", "gemma"}
    total = sum(Decimal(p["normalized_total"]) for p in models.values())
    assert abs(total - 100) < Decimal("1e-17")
    assert report["ranking"]["winners"] == ["t1"] and report["ranking"]["winner_beats_zero_shot"] is True
    assert (tmp_path / "qwen" / "result" / "constants.json").is_file()
    assert (tmp_path / "result" / "report.json").is_file()


@given(
    st.text(min_size=0, max_size=12), st.integers(0, 10**6), st.sampled_from([".png", ".xml", ".json", ""])
)
def test_trial_index_reads_the_number_after_the_last_underscore(prefix: str, n: int, ext: str) -> None:
    assert trial_index(f"{prefix}_{n}{ext}") == n


@given(
    st.lists(
        st.text(min_size=1, max_size=10).filter(lambda s: s.strip() == s), min_size=1, max_size=4, unique=True
    )
)
def test_csv_quoting_round_trips_program_names(names: list[str]) -> None:
    import csv
    import io

    programs = [
        ProgramData(
            n,
            stability={"A": [(f"x_{1}.xml", 1)]},
            similarity={"A": [("x_1.png", 0.5)]},
            diversity={"A": 0.5},
        )
        for n in names
    ]
    files = official_files(score_competition(programs, trials=1, exact=True, characters="A"))
    rows = list(csv.reader(io.StringIO(files["prompt_scores_ranks.csv"], newline="")))
    assert rows[0] == ["team", "normalizedPromptScore", "promptScore", "rank"]
    assert sorted(r[0] for r in rows[1:]) == sorted(names)
    assert [r[3] for r in rows[1:]] == [str(i) for i in range(1, len(names) + 1)]
