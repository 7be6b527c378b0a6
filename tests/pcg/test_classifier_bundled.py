"""The bundled letter classifier: packaging, identity, manifest, and held-out accuracy >= 0.90.

The held-out set is fixed: letter programs for seeds 200000..200005 (never used in training, which
uses seeds from 0 and evaluates on 100000+), run through the project's own converter, Box2D physics
and renderer, then classified from the full-size 1024 px PNGs exactly as the similarity stage does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worldforge.core.digests import digest_file
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.similarity.classifier import BUNDLED_DIR, BUNDLED_ID, load_classifier

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]
SEEDS = range(200_000, 200_006)


def test_checkpoint_files_and_size() -> None:
    files = {p.name: p.stat().st_size for p in BUNDLED_DIR.iterdir()}
    assert {"config.json", "model.safetensors", "preprocessor_config.json", "README.md"} <= set(files)
    assert sum(files.values()) <= 10 * 1024 * 1024
    config = json.loads((BUNDLED_DIR / "config.json").read_text())
    assert [config["id2label"][str(i)] for i in range(26)] == list(LETTERS)
    card = (BUNDLED_DIR / "README.md").read_text()
    training = json.loads((BUNDLED_DIR / "training.json").read_text())
    assert f"{training['heldout']['accuracy']:.3f}" in card
    assert training["weights_digest"] == digest_file(BUNDLED_DIR / "model.safetensors")


def test_manifest_entry_matches_the_shipped_files() -> None:
    from worldforge.datasets import load_manifest

    manifest, _ = load_manifest(ROOT / "dataset-manifests" / "letter-classifier.json", root=ROOT)
    by_id = {e["id"]: e for e in manifest["entries"]}
    weights = by_id["letter-classifier/model.safetensors"]
    assert weights["sha256"] == digest_file(BUNDLED_DIR / "model.safetensors")
    assert manifest["safety"]["contains_model_weights"] is True


def test_default_classifier_is_the_bundled_one() -> None:
    clf = load_classifier()
    assert clf.identity == {
        "id": BUNDLED_ID,
        "weights_digest": digest_file(BUNDLED_DIR / "model.safetensors"),
    }
    assert load_classifier("bundled").identity == clf.identity


def test_heldout_accuracy_on_generated_level_images() -> None:
    from worldforge.pcg.levels.glyphs import letter_program
    from worldforge.pcg.sim.pipeline import run_batch

    programs = [letter_program(c, seed) for seed in SEEDS for c in LETTERS]
    outcomes = run_batch(programs, workers=2)
    assert all(o.ok and o.png for o in outcomes)
    result = load_classifier().classify([o.png for o in outcomes], batch_size=64, embedding=False)
    labels = [c for _ in SEEDS for c in LETTERS]
    hits = sum(p.top == c for p, c in zip(result, labels, strict=True))
    accuracy = hits / len(labels)
    assert accuracy >= 0.90, f"held-out accuracy {accuracy:.3f} on {len(labels)} images"
