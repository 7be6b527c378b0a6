"""Competition folder stages end to end: images -> similarity -> diversity -> score, plus the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worldforge.pcg.competition.scoring import stage_diversity, stage_score, stage_similarity

pytest.importorskip("torch")


def _competition(root: Path) -> None:
    from worldforge.pcg.levels.glyphs import letter_program
    from worldforge.pcg.sim.pipeline import run_batch

    jobs = [(team, c, n) for team in ("alpha", "beta") for c in "AHO" for n in (1, 2, 3)]
    outcomes = run_batch(
        [letter_program(c, n + (0 if team == "alpha" else 50)) for team, c, n in jobs], workers=2
    )
    for (team, c, n), out in zip(jobs, outcomes, strict=True):
        folder = root / team / "images" / c
        folder.mkdir(parents=True, exist_ok=True)
        assert out.png is not None
        (folder / f"{team}_{c}_{n}.png").write_bytes(out.png)
        (folder / f"{team}_{c}_{n}_raw.png").write_bytes(b"ignored")  # colour renders are skipped
        stab = root / team / "stability" / f"{c}.json"
        stab.parent.mkdir(parents=True, exist_ok=True)
        data = json.loads(stab.read_text()) if stab.exists() else {"dataCount": 0, "rate": 0, "raws": []}
        data["raws"].append(
            {"tag": f"competition/{team}/levels/{c}/{team}_{c}_{n}.xml", "score": out.stability}
        )
        stab.write_text(json.dumps(data))


def test_similarity_diversity_score_chain(tmp_path: Path) -> None:
    _competition(tmp_path)
    sim = stage_similarity(tmp_path, workers=2)
    assert sim.succeeded == 18 and not sim.failures
    assert sim.log_path is not None and sim.log_path.name.startswith("similarity_log_")
    log_lines = sim.log_path.read_text().splitlines()
    assert len(log_lines) == 18 and all(": Succeeded - similarity " in line for line in log_lines)
    assert any(line.startswith("alpha/images/H/alpha_H_1.png: Succeeded - similarity ") for line in log_lines)
    data = json.loads((tmp_path / "alpha" / "similarity" / "H.json").read_text())
    assert list(data) == ["count", "similarityRate", "trials", "similarities", "classifier"]
    assert data["count"] == 3
    assert [t["id"] for t in data["trials"]] == ["alpha_H_1.png", "alpha_H_2.png", "alpha_H_3.png"]
    first = data["similarities"][0]
    assert [r["label"] for r in first["raws"]] == [chr(65 + i) for i in range(26)]
    assert data["trials"][0]["similarity"] == first["raws"][7]["softmax_prob"]
    assert sum(r["softmax_prob"] for r in first["raws"]) == pytest.approx(1.0, abs=1e-5)
    assert len(first["cls_embedding"]) == 128
    assert data["similarityRate"] == pytest.approx(sum(t["similarity"] for t in data["trials"]) / 3)
    assert data["classifier"]["id"] == "worldforge/letter-classifier"

    div = stage_diversity(tmp_path, trials=10)
    assert div.succeeded == 6
    d = json.loads((tmp_path / "beta" / "diversity" / "O.json").read_text())
    assert len(d["diversities"]) == 3 and d["count"] == 3

    report = stage_score(tmp_path, trials=10, exact=True).report
    assert report["classifier"] == data["classifier"]
    assert {p["program"] for p in report["programs"]} == {"alpha", "beta"}
    # letters other than A, H, O have no files: listed as missing, counted 0
    assert any(m["character"] == "Z" and m["reason"] == "file missing" for m in report["missing_inputs"])
    rows = (tmp_path / "result" / "prompt_scores_ranks.csv").read_bytes().decode().split("\r\n")
    assert rows[0] == '"team","normalizedPromptScore","promptScore","rank"' and len(rows) == 3


def test_classify_cli_json_and_text(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from worldforge.cli.app import app
    from worldforge.pcg.levels.glyphs import letter_program
    from worldforge.pcg.sim.pipeline import run_program

    paths = []
    for c in "LT":
        out = run_program(letter_program(c, 7))
        assert out.png is not None
        path = tmp_path / f"{c}.png"
        path.write_bytes(out.png)
        paths.append(str(path))
    runner = CliRunner()
    res = runner.invoke(app, ["pcg", "classify", *paths, "--format", "json", "--embedding"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["classifier"]["id"] == "worldforge/letter-classifier"
    assert [i["top"] for i in payload["images"]] == ["L", "T"]
    assert len(payload["images"][0]["softmax"]) == 26 and len(payload["images"][0]["embedding"]) == 128
    text = runner.invoke(app, ["pcg", "classify", paths[0]])
    assert text.exit_code == 0 and f"{paths[0]}: L" in text.stdout
    missing = runner.invoke(app, ["pcg", "classify", str(tmp_path / "nope.png")])
    assert missing.exit_code == 2
