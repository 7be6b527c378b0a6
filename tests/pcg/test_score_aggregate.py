"""Several models' aggregate report, and a partly missing character, against independent computations.

The aggregate (pipeline spec section 7.3) is recomputed here from the raw inputs with the section 7.1
formulas and bignumber.js rules (exact sums and products, every division to 20 places half-up), so a
report that shows one model's numbers as the totals cannot pass. The partly missing character follows
section 7.2: one missing file empties all three inputs of that character for scoring, while the
weights still read every file on its own.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal, localcontext
from pathlib import Path

import pytest

from worldforge.pcg.competition.scoring import stage_score
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.scoring.scores import ProgramData, score_competition

T = 2
#: model -> program -> letter -> (stability per trial, similarity per trial, diversityRate).
#: The models differ in every number; team3 exists for qwen only.
Inputs = dict[str, dict[str, dict[str, tuple[list[float], list[float], float]]]]
MODELS: Inputs = {
    "qwen": {
        "team1": {"A": ([0.9, 0.8], [0.7, 0.6], 0.5), "B": ([1.0, 0.5], [0.25, 0.75], 0.4)},
        "team2": {"A": ([0.3, 0.2], [0.1, 0.2], 0.3)},
        "baseline_zero_shot": {"A": ([0.5, 0.5], [0.5, 0.5], 0.2)},
        "team3": {"A": ([0.6, 0.6], [0.6, 0.6], 0.6)},
    },
    "gemma": {
        "team1": {"A": ([0.2, 0.4], [0.3, 0.9], 0.7)},
        "team2": {"A": ([1.0, 1.0], [0.95, 0.85], 0.9), "B": ([0.5, 0.5], [0.5, 0.5], 0.5)},
        "baseline_zero_shot": {"A": ([0.1, 0.2], [0.3, 0.4], 0.1)},
    },
}


def _div(a: Decimal, b: Decimal) -> Decimal:
    """bignumber.js ``div``: the quotient rounded to 20 decimal places, half away from zero."""
    with localcontext() as ctx:
        ctx.prec = 200
        return (a / b).quantize(Decimal("1e-20"), rounding=ROUND_HALF_UP)


def _d(x: float) -> Decimal:
    return Decimal(repr(x))


def _prompt_scores(
    programs: dict[str, dict[str, tuple[list[float], list[float], float]]],
) -> dict[str, Decimal]:
    """Section 7.1 for one model, every letter A-Z, missing letters counting 0."""
    n_prog = Decimal(len(programs))
    floor = _div(Decimal(1), Decimal(len(LETTERS)))
    char_sums = {name: Decimal(0) for name in programs}
    for c in LETTERS:
        cells = [letters[c] for letters in programs.values() if c in letters]
        sta_sum = sum((_d(s) for sta, _, _ in cells for s in sta), Decimal(0))
        sim_sum = sum((_d(s) for _, sim, _ in cells for s in sim), Decimal(0))
        div_sum = sum((_d(div) for _, _, div in cells), Decimal(0))
        w_sta = max(1 - _div(sta_sum, n_prog * T), floor)
        w_sim = max(1 - _div(sim_sum, n_prog * T), floor)
        w_div = max(1 - _div(div_sum, n_prog), floor)
        weight = w_sta * w_sim * w_div
        for name, letters in programs.items():
            if c in letters:
                sta, sim, div = letters[c]
                trials = sum((weight * _d(a) * _d(b) for a, b in zip(sta, sim, strict=True)), Decimal(0))
                char_sums[name] += _div(trials, Decimal(T)) * _d(div)
    return {name: _div(total, Decimal(len(LETTERS))) for name, total in char_sums.items()}


def _write(root: Path, inputs: Inputs) -> None:
    for model, programs in inputs.items():
        for program, letters in programs.items():
            for c, (sta, sim, div) in letters.items():
                files = {
                    "stability": {
                        "raws": [{"tag": f"{program}_{c}_{i}.xml", "score": s} for i, s in enumerate(sta, 1)]
                    },
                    "similarity": {
                        "trials": [
                            {"id": f"{program}_{c}_{i}.png", "similarity": s} for i, s in enumerate(sim, 1)
                        ]
                    },
                    "diversity": {"diversityRate": div},
                }
                for kind, payload in files.items():
                    path = root / model / program / kind / f"{c}.json"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps(payload), encoding="utf-8")


def test_several_models_report_the_summed_totals_everywhere(tmp_path: Path) -> None:
    _write(tmp_path, MODELS)
    report = stage_score(tmp_path, trials=T, exact=True, models=["qwen", "gemma"]).report

    per_model = {model: _prompt_scores(programs) for model, programs in MODELS.items()}
    names = sorted({name for programs in MODELS.values() for name in programs})
    totals = {n: sum((per_model[m].get(n, Decimal(0)) for m in MODELS), Decimal(0)) for n in names}
    competition = sum(totals.values(), Decimal(0))
    normalized = {n: _div(totals[n], competition) * 100 for n in names}
    assert per_model["qwen"]["team1"] != per_model["gemma"]["team1"]  # the models really differ

    assert Decimal(report["competition_score"]) == competition
    assert Decimal(report["models"]["competition_score"]) == competition
    assert {m: Decimal(v) for m, v in report["models"]["competition_score_per_model"].items()} == {
        m: sum(scores.values(), Decimal(0)) for m, scores in per_model.items()
    }
    programs = {p["program"]: p for p in report["programs"]}
    assert set(programs) == set(names)
    for n in names:
        assert Decimal(programs[n]["prompt_score"]) == totals[n]
        assert Decimal(programs[n]["normalized_score"]) == normalized[n]
        assert {m: Decimal(v) for m, v in programs[n]["per_model"].items()} == {
            m: per_model[m].get(n, Decimal(0)) for m in MODELS
        }
    order = sorted(names, key=lambda n: normalized[n], reverse=True)
    assert [p["program"] for p in report["programs"]] == order
    assert [p["official_rank"] for p in report["programs"]] == [1, 2, 3, 4]
    entries = {e["program"]: e for e in report["ranking"]["entries"]}
    assert all(Decimal(entries[n]["normalized_score"]) == normalized[n] for n in names)
    assert report["ranking"]["leaders"] == [
        max((n for n in names if n.startswith("team")), key=totals.__getitem__)
    ]

    # Weights exist per model only; each is that model's own result.
    assert list(report["weights"]) == ["qwen", "gemma"]
    for model in MODELS:
        own = json.loads((tmp_path / model / "result" / "report.json").read_text(encoding="utf-8"))
        assert report["weights"][model] == own["weights"]

    # Missing inputs: 3 files per absent letter per program, plus team3's absent gemma results.
    expected = {
        model: sum(3 * (len(LETTERS) - len(letters)) for letters in programs.values())
        + sum(name not in programs for name in names)
        for model, programs in MODELS.items()
    }
    assert expected == {"qwen": 297, "gemma": 223}
    assert report["models"]["missing_count"] == expected
    assert report["missing_count"] == len(report["missing_inputs"]) == 520
    assert report["models"]["missing_inputs"] == report["missing_inputs"]
    assert all(sum(e["model"] == m for e in report["missing_inputs"]) == n for m, n in expected.items())
    assert {"program": "team3", "model": "gemma", "input": "model results", "reason": "missing"} in report[
        "missing_inputs"
    ]
    assert {
        "model": "gemma",
        "program": "team1",
        "character": "B",
        "input": "diversity",
        "reason": "file missing",
    } in report["missing_inputs"]

    md = (tmp_path / "result" / "report.md").read_text(encoding="utf-8")
    assert (
        "| rank | program | prompt score (qwen) | prompt score (gemma) | total prompt score "
        "| normalized total | prompt length |"
    ) in md
    for n in names:
        p = programs[n]
        cells = [p["per_model"]["qwen"], p["per_model"]["gemma"], p["prompt_score"], p["normalized_score"]]
        assert f"| {n} | " + " | ".join(cells) + " |" in md
    assert f"(the sum of all totals): {report['competition_score']}." in md
    assert "Missing or unreadable inputs (counted as 0): 520 (qwen: 297, gemma: 223)." in md


def test_several_models_in_float_arithmetic_sum_the_same_totals(tmp_path: Path) -> None:
    _write(tmp_path, MODELS)
    report = stage_score(tmp_path, trials=T, exact=False, models=["qwen", "gemma"]).report
    competition = sum(sum(_prompt_scores(p).values(), Decimal(0)) for p in MODELS.values())
    assert float(report["competition_score"]) == pytest.approx(float(competition), rel=1e-12)
    assert float(report["models"]["competition_score"]) == float(report["competition_score"])


# ----------------------------------------------------------------------------------------------
# A partly missing character (spec section 7.2)


def _data(
    name: str, letters: dict[str, tuple[list[float] | None, list[float] | None, float | None]]
) -> ProgramData:
    data = ProgramData(name)
    for c, (sta, sim, div) in letters.items():
        if sta is not None:
            data.stability[c] = [(f"{name}_{c}_{i}.xml", s) for i, s in enumerate(sta, 1)]
        if sim is not None:
            data.similarity[c] = [(f"{name}_{c}_{i}.png", s) for i, s in enumerate(sim, 1)]
        if div is not None:
            data.diversity[c] = div
    return data


@pytest.mark.parametrize("gone", ["stability", "similarity", "diversity"])
def test_one_missing_file_empties_all_three_inputs_but_not_the_weights(gone: str) -> None:
    full = ([0.5, 0.25], [0.25, 0.25], 0.25)
    partial = tuple(
        None if kind == gone else v
        for kind, v in zip(("stability", "similarity", "diversity"), full, strict=True)
    )
    p1 = _data("P1", {"A": full, "B": partial})  # type: ignore[dict-item]
    p2 = _data("P2", {"A": full, "B": ([0.25, 0.25], [0.25, 0.25], 0.25)})
    result = score_competition([p1, p2], trials=2, exact=True, characters="AB")
    t = result.arithmetic.text

    rows = [r for r in result.trial_rows if (r.program, r.character) == ("P1", "B")]
    assert [(t(r.score), t(r.stability), t(r.similarity), t(r.diversity)) for r in rows] == [("0",) * 4] * 2
    (char,) = [r for r in result.character_rows if (r.program, r.character) == ("P1", "B")]
    assert (t(char.score), t(char.mean_stability), t(char.mean_similarity), t(char.diversity)) == ("0",) * 4

    # The weight pass still reads every present file: P1's B files count for B's weights.
    b = result.weights[1]
    expected = {  # 1 - (P1's B + P2's B) / (P*T), or P2's B alone when P1's file is gone
        "stability": "0.875" if gone == "stability" else "0.6875",  # 1 - 0.5/4, 1 - (0.75 + 0.5)/4
        "similarity": "0.875" if gone == "similarity" else "0.75",  # 1 - 0.5/4, 1 - (0.5 + 0.5)/4
        "diversity": "0.875" if gone == "diversity" else "0.75",  # 1 - 0.25/2, 1 - (0.25 + 0.25)/2
    }
    assert {k: t(getattr(b, k)) for k in expected} == expected

    reasons = {
        (m["input"], m["reason"]) for m in result.missing if (m["program"], m["character"]) == ("P1", "B")
    }
    kept = [k for k in ("stability", "similarity", "diversity") if k != gone]
    assert reasons == {(gone, "file missing")} | {
        (k, f"not scored: its {gone} input is missing or unreadable") for k in kept
    }
    assert not any(m.get("trial") for m in result.missing)  # no per-trial noise for an unscored letter


def test_score_stage_writes_zero_rows_for_a_partly_missing_character(tmp_path: Path) -> None:
    inputs: Inputs = {"m": {"team1": {c: ([1.0, 0.875], [0.5, 0.25], 0.5) for c in "AB"}}}
    _write(tmp_path, inputs)
    (tmp_path / "m" / "team1" / "diversity" / "B.json").unlink()
    stage_score(tmp_path / "m", trials=T, exact=True)
    trials = (tmp_path / "m" / "result" / "trial_scores.csv").read_bytes().decode().split("\r\n")
    assert [r for r in trials if r.startswith('"team1","B",')] == [
        '"team1","B",1,"0","0","0","0"',
        '"team1","B",2,"0","0","0","0"',
    ]
    chars = (tmp_path / "m" / "result" / "character_scores.csv").read_bytes().decode().split("\r\n")
    assert '"team1","B","0","0","0","0"' in chars
    (a_row,) = [r for r in chars if r.startswith('"team1","A",')]
    assert a_row.endswith(',"0.9375","0.375","0.5"')  # the complete character keeps its inputs
