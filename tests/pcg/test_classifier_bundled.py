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


def test_never_trained_hand_drawn_family_reproduces_the_recorded_accuracy() -> None:
    """The hand-drawn letters (never trained on) through the stage pipeline: the card's figure."""
    from worldforge.pcg.sim.pipeline import run_batch
    from worldforge.pcg.similarity.training import families

    hand = families.handdrawn_programs()
    outcomes = run_batch([program for _, _, program in hand], workers=2)
    assert all(o.ok and o.png for o in outcomes)
    training = json.loads((BUNDLED_DIR / "training.json").read_text())
    recorded = training["hand"]
    # The training script excludes heaps; none of the hand-drawn levels collapses.
    assert recorded["images"] == len(hand) == 52
    result = load_classifier().classify([o.png for o in outcomes], batch_size=64, embedding=False)
    hits = [p.top == letter for p, (_, letter, _) in zip(result, hand, strict=True)]
    assert sum(hits) / len(hits) == pytest.approx(recorded["accuracy"], abs=1e-4)
    assert recorded["accuracy"] >= 0.85


def test_card_and_report_figures_name_the_measured_accuracy() -> None:
    from worldforge.pcg.similarity.accuracy import accuracy_sentence, classifier_accuracy

    training = json.loads((BUNDLED_DIR / "training.json").read_text())
    assert set(training["lofo"]) == {"glyph", "font", "pixel", "stroke", "block", "dpi"}
    assert training["lofo_min_accuracy"] == min(f["test"]["accuracy"] for f in training["lofo"].values())
    card = (BUNDLED_DIR / "README.md").read_text()
    assert f"{training['lofo_min_accuracy']:.3f}" in card and f"{training['hand']['accuracy']:.3f}" in card
    accuracy = classifier_accuracy(load_classifier().identity)
    assert accuracy["measured"] is True
    assert accuracy["lofo_min_top1"] == training["lofo_min_accuracy"]
    assert accuracy["hand_drawn_top1"] == training["hand"]["accuracy"]
    sentence = accuracy_sentence(accuracy)
    assert str(training["lofo_min_accuracy"]) in sentence
    # The claim boundary quotes the held-out figures: the worst held-out family's calibration error
    # at a temperature fitted without it (on the other folds' held-out families), and the
    # never-trained frozen family's top-1.
    worst_ece = max(
        (f.get("test_crossfold") or f["test_calibrated"])["ece"] for f in training["lofo"].values()
    )
    assert accuracy["lofo_max_ece"] == worst_ece and f"calibration error <= {worst_ece}" in sentence
    assert accuracy["unseen_top1"] == {"fixed": training["unseen"]["fixed"]["accuracy"]}
    assert f"{training['unseen']['fixed']['accuracy']} on the never-trained 'fixed' letter family" in sentence
    # Other weights under the bundled id get no borrowed figures.
    other = classifier_accuracy({"id": BUNDLED_ID, "weights_digest": "sha256:" + "0" * 64})
    assert other == {"checkpoint": BUNDLED_ID, "measured": False}
    assert "not measured" in accuracy_sentence(classifier_accuracy({"id": "local:x", "weights_digest": "d"}))


def test_in_place_relu_gives_the_plain_models_outputs_bit_for_bit() -> None:
    """The loaded classifier runs its ReLUs in place (speed); logits and the embedding the head
    reads equal those of the checkpoint loaded by transformers alone, on renders and on noise."""
    import torch
    from transformers import AutoModelForImageClassification

    clf = load_classifier(device="cpu")
    relus = [m for m in clf.model.modules() if isinstance(m, torch.nn.ReLU)]
    assert relus and all(m.inplace for m in relus)
    plain = AutoModelForImageClassification.from_pretrained(str(BUNDLED_DIR), local_files_only=True).eval()
    plain.to(memory_format=torch.channels_last)  # the layout the classifier runs it in
    assert not any(m.inplace for m in plain.modules() if isinstance(m, torch.nn.ReLU))

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "reference-levels"
    renders = [clf._prepare(p) for p in sorted(fixtures.glob("*.png"))]
    pixel_values = clf._pixel_values(renders, 16, torch)
    pixel_values[len(renders) :] = torch.randn(
        (16 - len(renders), *pixel_values.shape[1:]), generator=torch.Generator().manual_seed(7)
    )
    seen: list[list[torch.Tensor]] = [[], []]
    for model, store in ((clf.model, seen[0]), (plain, seen[1])):
        hook = model.classifier.register_forward_pre_hook(lambda _m, args, s=store: s.append(args[0]))
        with torch.inference_mode():
            store.append(
                model(pixel_values=pixel_values.contiguous(memory_format=torch.channels_last)).logits
            )
        hook.remove()
    assert torch.equal(seen[0][0], seen[1][0])  # embedding
    assert torch.equal(seen[0][1], seen[1][1])  # logits
    assert len(renders) == 3 and not torch.equal(seen[0][1][0], seen[0][1][1])
