"""The science-birds suite end to end with the mock generator inside a run workspace."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.checkpoints import tiny_vit
from worldforge.core.digests import digest_file, digest_payload, digest_text
from worldforge.core.seeds import trial_seed
from worldforge.evaluation import EvaluationSuite
from worldforge.evaluation.suite import result_payload
from worldforge.forge import WorldForge
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.levels.glyphs import letter_program
from worldforge.suites.science_birds.config import Classifier, ItemKey, parse_characters
from worldforge.suites.science_birds.run import RunState
from worldforge.suites.science_birds.suite import SUITE_ID, evaluate
from worldforge.workspace import start_run

OPTIONS: dict[str, Any] = {"characters": "A-C", "trials": 3, "progress": False, "workers": 1}


class PixelClassifier(Classifier):
    """Deterministic stand-in used when the suite's plumbing (not the classifier) is under test.

    Softmax over 26 classes from the image's column-occupancy profile, so different levels give
    different vectors and the same level always the same vector.
    """

    def __init__(self) -> None:
        super().__init__("pixel-test")

    def identity(self) -> dict[str, Any]:
        return {"id": "pixel-test", "weights_digest": digest_text("pixel-test/v1")}

    def classify(
        self, pngs: Sequence[bytes], embedding: bool = True
    ) -> list[tuple[list[float], list[float]]]:
        from PIL import Image

        out = []
        for png in pngs:
            img = Image.open(io.BytesIO(png)).convert("L").resize((26, 26))
            cols = [sum(1 for y in range(26) if img.getpixel((x, y)) < 128) for x in range(26)]
            logits = [c / 4.0 for c in cols]
            top = max(logits)
            exps = [math.exp(v - top) for v in logits]
            total = sum(exps)
            out.append(([round(e / total, 7) for e in exps], [float(c) for c in cols]))
        return out


def _expected_prompt_scores(
    records: dict[str, dict[str, Any]], programs: list[str], letters: str, trials: int
) -> dict[str, float]:
    """Independent restatement of the seed's scoring policy for one model."""

    def cos(u: list[float], v: list[float]) -> float:
        dot = sum(a * b for a, b in zip(u, v, strict=True))
        return 1.0 - dot / math.sqrt(sum(a * a for a in u) * sum(b * b for b in v))

    cell = {(r["program"], r["letter"], r["trial"]): r for r in records.values()}
    div = {}
    for p in programs:
        for c in letters:
            vecs = [
                cell[(p, c, t)]["softmax"] for t in range(1, trials + 1) if cell[(p, c, t)]["status"] == "ok"
            ]
            pairs = [cos(vecs[i], vecs[j]) for i in range(len(vecs)) for j in range(i + 1, len(vecs))]
            div[(p, c)] = sum(pairs) / (trials * (trials + 1) / 2 - trials)
    scores = {}
    for p in programs:
        total = 0.0
        for c in letters:
            n = len(programs) * trials
            w_sta = max(
                1 - sum(cell[(q, c, t)]["sta"] for q in programs for t in range(1, trials + 1)) / n,
                1 / len(letters),
            )
            w_sim = max(
                1 - sum(cell[(q, c, t)]["sim"] for q in programs for t in range(1, trials + 1)) / n,
                1 / len(letters),
            )
            w_div = max(1 - sum(div[(q, c)] for q in programs) / len(programs), 1 / len(letters))
            w = w_sta * w_sim * w_div
            total += (
                div[(p, c)]
                * sum(w * cell[(p, c, t)]["sta"] * cell[(p, c, t)]["sim"] for t in range(1, trials + 1))
                / trials
            )
        scores[p] = total / len(letters)
    return scores


@pytest.fixture
def pixel_classifier(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Route the suite's classifier through :class:`PixelClassifier` (also via from_builtin)."""
    fake = PixelClassifier()
    monkeypatch.setattr(Classifier, "identity", lambda self: fake.identity())
    monkeypatch.setattr(
        Classifier, "classify", lambda self, pngs, embedding=True: fake.classify(pngs, embedding)
    )
    yield


def _run(workspace: Path, options: dict[str, Any], providers: list[str]) -> tuple[Any, Any]:
    forge_holder: dict[str, Any] = {}
    with start_run(workspace, kind="evaluation", argv=["test"], config={"suite": SUITE_ID, **options}) as run:
        forge = WorldForge(event_sinks=[run.event_sink])
        forge_holder["forge"] = forge
        suite = EvaluationSuite.from_builtin("science-birds", options=options)
        report = suite.run_report(providers, forge=forge, run=run)
        for name, blob in report.extra_artifacts.items():
            run.write_artifact(name, blob)
        run.complete(result_payload(report), claim_boundary=report.claim_boundary)
    return report, run


def test_parse_characters() -> None:
    assert parse_characters(None) == tuple(LETTERS)
    assert parse_characters("A-C,x, Z") == ("A", "B", "C", "X", "Z")
    assert parse_characters(["Q", "B"]) == ("B", "Q")
    with pytest.raises(ValueError, match="reversed"):
        parse_characters("Z-A")
    with pytest.raises(ValueError, match="not a letter"):
        parse_characters("A1")


def test_end_to_end_mock_in_run_workspace(tmp_path: Path, pixel_classifier: None) -> None:
    report, run = _run(tmp_path / "ws", OPTIONS, ["mock"])
    records = run.completed_items()
    assert len(records) == 3 * 3 * 2
    # every unit is one record with per-stage digests that match the data they describe
    for item_id, rec in records.items():
        key = ItemKey(rec["model"], rec["program"], rec["letter"], rec["trial"])
        assert item_id == key.item_id
        assert rec["trial_seed"] == trial_seed(42, rec["program"], rec["letter"], rec["trial"])
        assert rec["status"] == "ok", rec.get("error")
        assert set(rec["stages"]) == {"generate", "extract", "convert", "simulate", "render", "classify"}
        assert rec["stages"]["generate"]["digest"] == digest_text(rec["reply"])
        assert rec["program_text"] == letter_program(rec["letter"], rec["trial_seed"], "").lower()
        image = run.dir / rec["image"]["path"]
        assert digest_file(image) == rec["image"]["digest"] == rec["stages"]["render"]["digest"]
        assert 0.0 <= rec["sta"] <= 1.0 and rec["sim"] == rec["softmax"][LETTERS.index(rec["letter"])]
        assert rec["thumbnail"].startswith("data:image/png;base64,")
        # the classifier's top-2 margin, recomputable from the recorded softmax by any reader
        first, second = sorted(rec["softmax"], reverse=True)[:2]
        assert rec["margin"] == pytest.approx(first - second, abs=1e-7) and 0.0 <= rec["margin"] <= 1.0
    # results: one per (model, program), scores equal to an independent recomputation
    assert [(r.provider, r.scenario) for r in report.results] == [
        ("mock", "zero-shot"),
        ("mock", "zero-shot-multi-turn"),
    ]
    expected = _expected_prompt_scores(records, ["zero-shot", "zero-shot-multi-turn"], "ABC", 3)
    for result in report.results:
        assert 0.0 < result.score <= 1.0 and result.passed
        assert result.score == pytest.approx(expected[result.scenario], rel=1e-12, abs=1e-15)
        assert result.metrics["ok_trials"] == 9 and result.metrics["failed_trials"] == 0
    total = sum(expected.values())
    ranking = report.sections["ranking"]["rows"]
    assert [row["normalized"] for row in ranking] == sorted(
        (round(100 * v / total, 4) for v in expected.values()), reverse=True
    )
    # sections: galleries with one embedded thumbnail per item, weights per letter, baseline comparison
    assert len(report.sections["gallery[zero-shot]"]["images"]) == 9
    assert [w["letter"] for w in report.sections["weights_per_letter"]["rows"]] == ["A", "B", "C"]
    assert report.sections["measurement"]["classifier.id"] == "pixel-test"
    # worst levels: each program represented, listed worst first across programs
    worst = report.sections["worst_levels"]["rows"]
    assert {row["program"] for row in worst} == {"zero-shot", "zero-shot-multi-turn"}
    badness = [row["sta"] * row["sim"] for row in worst]
    assert badness == sorted(badness) or all(
        a <= b + 1e-4 for a, b in zip(badness, badness[1:], strict=False)
    )  # rows carry values rounded to 4 places
    baseline_rows = report.sections["baseline_comparison"]["rows"]
    assert {row["program"]: row["beats_baseline"] for row in baseline_rows} == {
        "zero-shot": False,
        "zero-shot-multi-turn": expected["zero-shot-multi-turn"] > expected["zero-shot"],
    }
    # the HTML report is one file with the galleries embedded
    html = report.to_html()
    assert html.count('src="data:image/png;base64,') >= 18 + 2
    # official result files in the official formats
    trial_csv = report.extra_artifacts["science-birds/mock/result/trial_scores.csv"]
    rows = list(csv.reader(io.StringIO(str(trial_csv))))
    assert rows[0] == [
        "teamName",
        "character",
        "trial",
        "trial_score",
        "stabilityScore",
        "similarityScore",
        "diversityScore",
    ]
    assert len(rows) == 1 + 18
    manifest = run.manifest
    assert manifest["status"] == "completed"
    assert (
        manifest["result_digest"] == report.provenance.result_digest == digest_payload(result_payload(report))
    )
    assert any(i["name"] == "program:zero-shot-multi-turn/prompts/1.txt" for i in manifest["inputs"])


def test_identical_runs_identical_digests_and_cache_reuse(tmp_path: Path, pixel_classifier: None) -> None:
    first, _ = _run(tmp_path / "ws", OPTIONS, ["mock"])
    state = RunState()
    forge = WorldForge()
    second = evaluate(
        ["mock"],
        forge=forge,
        options={**OPTIONS, "cache_dir": str(tmp_path / "ws" / "cache" / "science-birds")},
        state=state,
    )
    assert second.provenance.result_digest == first.provenance.result_digest
    assert second.provenance.input_digest != ""
    # nothing was reused as a finished item (no run), but every stage came from the workspace cache
    assert state.processed == 18 and state.reused == 0
    assert state.cache_hits == {
        "generate": 18,
        "extract": 18,
        "convert": 18,
        "simulate": 18,
        "render": 18,
        "classify": 18,
    }
    assert state.cache_misses == {}


def test_several_mock_models_sum_per_model_scores(tmp_path: Path, pixel_classifier: None) -> None:
    options = {**OPTIONS, "characters": "AB", "programs": ["zero-shot"]}
    report = evaluate(["mock:qwen", "mock:gemma"], forge=WorldForge(), options=options)
    images = [k for k in report.extra_artifacts if k.startswith("images/")]
    assert len(images) == 2 * 2 * 3 and all(isinstance(report.extra_artifacts[k], bytes) for k in images)
    per_model = {r.provider: r.metrics["prompt_score"] for r in report.results}
    assert set(per_model) == {"mock:qwen", "mock:gemma"} and per_model["mock:qwen"] != per_model["mock:gemma"]
    total = report.results[0].metrics["total_prompt_score"]
    assert total == pytest.approx(sum(per_model.values()), rel=1e-12)
    assert report.results[0].metrics["normalized_total"] == pytest.approx(100.0)


def test_bad_options_fail_before_any_call() -> None:
    with pytest.raises(ValueError, match="--trials"):
        EvaluationSuite.from_builtin("science-birds", options={"trials": 0})
    with pytest.raises(ValueError, match="diversity-vector"):
        EvaluationSuite.from_builtin("science-birds", options={"diversity_vector": "pixels"})
    suite = EvaluationSuite.from_builtin("science-birds", options={"trials": 2, "characters": "A"})
    with pytest.raises(ValueError, match="missing required capabilities: generate"):
        forge = WorldForge()

        class NoGen:
            name = "nogen"
            capabilities = frozenset({"predict"})

            def runtime_manifest(self) -> None:
                return None

        forge.register_provider("nogen", NoGen())
        suite.run_report(["nogen"], forge=forge)


def test_real_classifier_code_path_with_a_local_checkpoint(tmp_path: Path) -> None:
    """The suite drives ``pcg.classifier`` (Auto classes) on a tiny random ViT saved locally."""
    folder = tiny_vit(tmp_path / "tiny-vit")
    options = {**OPTIONS, "characters": "AB", "classifier": str(folder), "diversity_vector": "embedding"}
    forge = WorldForge()
    with start_run(tmp_path / "ws", kind="evaluation", argv=["test"], config=options) as run:
        report = evaluate(["mock"], forge=forge, options=options, run=run)
        run.complete(result_payload(report))
    records = run.completed_items()
    assert len(records) == 2 * 3 * 2
    for rec in records.values():
        assert len(rec["softmax"]) == 26 and sum(rec["softmax"]) == pytest.approx(1.0, abs=1e-5)
        assert len(rec["embedding"]) == 32  # the CLS token of the last hidden state
    measurement = report.sections["measurement"]
    assert measurement["classifier.id"] == "local:tiny-vit"
    assert measurement["classifier.weights_digest"] == digest_file(folder / "model.safetensors")
    assert measurement["diversity_vector"] == "embedding"


def test_runs_diff_names_the_changed_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same replies, another classifier: only the classify stage changes, as a model change."""
    from worldforge.workspace import diff_runs

    options = {**OPTIONS, "characters": "AB", "trials": 2, "programs": ["zero-shot"]}
    runs = []
    fake = PixelClassifier()
    for salt in ("v1", "v2"):

        def identity(self: Classifier, salt: str = salt) -> dict[str, Any]:
            return {"id": "pixel-test", "weights_digest": digest_text(f"pixel-test/{salt}")}

        def classify(
            self: Classifier, pngs: Sequence[bytes], embedding: bool = True, salt: str = salt
        ) -> list[tuple[list[float], list[float]]]:
            rows = fake.classify(pngs, embedding)
            if salt == "v1":
                return rows
            return [([round(v * 0.5 + 0.5 / 26, 7) for v in sm], em) for sm, em in rows]

        monkeypatch.setattr(Classifier, "identity", identity)
        monkeypatch.setattr(Classifier, "classify", classify)
        _, run = _run(tmp_path / "ws", options, ["mock"])
        runs.append(run)
    diff = diff_runs(runs[0].dir, runs[1].dir)
    assert diff["identical_results"] is False
    stage_changes = [c for c in diff["changes"] if c["section"] == "stages"]
    assert stage_changes and {c["path"].rsplit("/", 1)[1] for c in stage_changes} == {"classify"}
    assert {c["reason"] for c in stage_changes} == {"model-changed"}
    assert len(stage_changes) == 4  # every item, and nothing upstream of the classifier


def test_pool_and_prefetch_do_not_change_results(pixel_classifier: None) -> None:
    """workers=2 (process pool, mock programs prefetched in the pool, small chunks) == workers=1."""
    options = {**OPTIONS, "characters": "AZ", "trials": 2}
    serial = evaluate(["mock", "mock:b"], forge=WorldForge(), options=options)
    state = RunState()
    pooled = evaluate(
        ["mock", "mock:b"],
        forge=WorldForge(),
        options={**options, "workers": 2, "chunk_size": 3},
        state=state,
    )
    assert pooled.provenance.result_digest == serial.provenance.result_digest
    assert "generate_prefetch_wait" in state.timings


def test_bundled_classifier_recognises_the_mock_letters() -> None:
    """With the default (bundled) classifier the mock's levels read as their letters."""
    from worldforge.pcg.similarity.classifier import BUNDLED_DIR

    if not (BUNDLED_DIR / "config.json").is_file():
        pytest.skip("bundled letter classifier not built (python -m worldforge.pcg.similarity.training)")
    options = {**OPTIONS, "characters": "AHOTX", "programs": ["zero-shot-multi-turn"], "workers": 2}
    report = evaluate(["mock"], forge=WorldForge(), options=options)
    (result,) = report.results
    assert result.metrics["ok_trials"] == 15
    assert result.metrics["mean_similarity"] > 0.7
    assert report.sections["measurement"]["classifier.id"] == "worldforge/letter-classifier"
    # The report says how far similarity can be trusted: the checkpoint's measured accuracy.
    assert report.sections["measurement"]["classifier_accuracy.measured"] is True
    lofo = report.sections["measurement"]["classifier_accuracy.lofo_min_top1"]
    assert f"leave-one-family-out top-1 >= {lofo}" in report.claim_boundary
    rows = report.sections["per_letter"]["rows"]
    assert all(row["sim[mock]"] > 0.4 for row in rows), rows


def test_exact_decimal_mode_matches_float_scores(pixel_classifier: None) -> None:
    options = {**OPTIONS, "characters": "AB", "trials": 2}
    plain = evaluate(["mock"], forge=WorldForge(), options=options)
    exact = evaluate(["mock"], forge=WorldForge(), options={**options, "exact": True})
    for a, b in zip(plain.results, exact.results, strict=True):
        assert b.score == pytest.approx(a.score, rel=1e-12, abs=1e-18)
    assert exact.sections["measurement"]["arithmetic"] == "exact-decimal"
    ranks = str(exact.extra_artifacts["science-birds/mock/result/prompt_scores_ranks.csv"])
    assert "e-" not in ranks.lower()  # decimals printed like bignumber.js toFixed(), never exponents
