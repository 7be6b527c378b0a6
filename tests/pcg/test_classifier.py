"""Classifier loading (local / hub / offline), label validation, softmax order and embeddings.

Checkpoints are built inside the tests with random weights and saved with ``save_pretrained``; the
network is never touched (``HF_HUB_OFFLINE=1`` and an empty cache for the hub-id case).
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from worldforge.core.digests import digest_file
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.similarity.classifier import OFFICIAL_MODEL_ID, letter_indices, load_classifier

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _images(n: int, size: int = 96) -> list[object]:
    from PIL import Image, ImageDraw

    out = []
    for i in range(n):
        img = Image.new("RGB", (size, size), "white")
        ImageDraw.Draw(img).rectangle((10 + 5 * i, 20, 40 + 7 * i, 80), fill="black")
        out.append(img)
    return out


def _vit_checkpoint(folder: Path, *, hidden: int, layers: int, heads: int, shuffled: bool) -> Path:
    """A ViTForImageClassification laid out like the official checkpoint (224 px, patch 16, 0.5 norm)."""
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    letters = list(LETTERS)
    if shuffled:
        random.Random(0).shuffle(letters)
    config = ViTConfig(
        image_size=224,
        patch_size=16,
        num_channels=3,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        id2label=dict(enumerate(letters)),
        label2id={c: i for i, c in enumerate(letters)},
    )
    torch.manual_seed(0)
    ViTForImageClassification(config).save_pretrained(folder)
    ViTImageProcessor(
        do_resize=True,
        size={"height": 224, "width": 224},
        resample=2,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    ).save_pretrained(folder)
    return folder


def test_letter_indices_accepts_letters_in_any_order_and_generic_labels() -> None:
    shuffled = {i: c for i, c in enumerate("ZYXWVUTSRQPONMLKJIHGFEDCBA")}
    assert letter_indices(shuffled, source="t") == list(range(25, -1, -1))
    assert letter_indices({i: f"LABEL_{i}" for i in range(26)}, source="t") == list(range(26))
    with_extra = {**{i: c.lower() for i, c in enumerate(LETTERS)}, 26: "digit-0"}
    assert letter_indices(with_extra, source="t") == list(range(26))
    with pytest.raises(WorldForgeError, match="missing Z"):
        letter_indices({i: c for i, c in enumerate(LETTERS[:25])}, source="t")
    with pytest.raises(WorldForgeError, match="appears twice"):
        letter_indices({0: "A", 1: "a", **{i + 2: c for i, c in enumerate(LETTERS[1:])}}, source="t")


def test_local_vit_checkpoint_softmax_and_pre_layernorm_cls_embedding(tmp_path: Path) -> None:
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    folder = _vit_checkpoint(tmp_path / "vit", hidden=48, layers=2, heads=4, shuffled=True)
    clf = load_classifier(str(folder), device="cpu")
    assert clf.identity == {"id": "local:vit", "weights_digest": digest_file(folder / "model.safetensors")}
    images = _images(3)
    result = clf.classify(images, batch_size=2)
    assert len(result) == 3

    # Independent reference through the plain transformers API.
    processor = AutoImageProcessor.from_pretrained(folder)
    model = AutoModelForImageClassification.from_pretrained(folder).eval()
    with torch.inference_mode():
        out = model(**processor(images=images, return_tensors="pt"), output_hidden_states=True)
    order = [model.config.label2id[c] for c in LETTERS]
    expected = torch.softmax(out.logits[:, order], dim=-1)
    got = torch.tensor(result.softmax)
    assert torch.allclose(got, expected, atol=1e-6)
    assert torch.allclose(got.sum(-1), torch.ones(3), atol=1e-6)
    pre_ln = out.hidden_states[-1][:, 0, :]
    emb = torch.tensor(result.embeddings)
    assert emb.shape == (3, 48)
    assert torch.allclose(emb, pre_ln, atol=1e-5)
    with torch.inference_mode():
        post_ln = model.vit.layernorm(out.hidden_states[-1])[:, 0, :]
    assert not torch.allclose(emb, post_ln, atol=1e-3)  # really the token *before* the final LayerNorm
    assert [p.top for p in result] == [LETTERS[int(i)] for i in expected.argmax(-1)]


@pytest.mark.slow
def test_official_size_vit_checkpoint_loads_through_the_same_path(tmp_path: Path) -> None:
    folder = _vit_checkpoint(tmp_path / "vit-base", hidden=768, layers=12, heads=12, shuffled=False)
    clf = load_classifier(folder, device="cpu")
    result = clf.classify(_images(1), embedding=True)
    assert len(result[0].softmax) == 26 and len(result[0].embedding or []) == 768


def test_resnet_embedding_is_the_pooled_head_input(tmp_path: Path) -> None:
    from transformers import ResNetConfig, ResNetForImageClassification, ViTImageProcessor

    config = ResNetConfig(
        embedding_size=8,
        hidden_sizes=[8, 16],
        depths=[1, 1],
        layer_type="basic",
        id2label=dict(enumerate(LETTERS)),
        label2id={c: i for i, c in enumerate(LETTERS)},
    )
    torch.manual_seed(1)
    model = ResNetForImageClassification(config).eval()
    model.save_pretrained(tmp_path)
    processor = ViTImageProcessor(
        size={"height": 32, "width": 32}, resample=4, image_mean=[0.5] * 3, image_std=[0.5] * 3
    )
    processor.save_pretrained(tmp_path)
    clf = load_classifier(tmp_path)
    assert clf._table is not None and clf._table.size == (32, 32)
    images = _images(2, size=128)  # goes through the processor shortcut, which is exact
    result = clf.classify(images)
    with torch.inference_mode():
        pixels = processor(images=images, return_tensors="pt")["pixel_values"]
        pooled = model.resnet(pixels).pooler_output.flatten(1)
        logits = model(pixel_values=pixels).logits
    # Only the memory layout differs (channels-last, padded batch), so the floats agree closely.
    assert torch.allclose(torch.tensor(result.embeddings), pooled, atol=1e-5)
    assert torch.allclose(torch.tensor(result.softmax), torch.softmax(logits, -1), atol=1e-6)


def test_offline_hub_id_fails_fast_with_one_line_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    start = time.monotonic()
    with pytest.raises(WorldForgeError) as info:
        load_classifier(OFFICIAL_MODEL_ID)
    assert time.monotonic() - start < 30
    message = str(info.value)
    assert "\n" not in message
    assert OFFICIAL_MODEL_ID in message and "--classifier" in message and "bundled" in message


def test_bad_specs() -> None:
    with pytest.raises(WorldForgeError, match="does not exist"):
        load_classifier("./no/such/checkpoint")
    with pytest.raises(WorldForgeError, match="no config.json"):
        load_classifier(Path(__file__).parent)


def test_import_worldforge_does_not_import_torch() -> None:
    code = (
        "import sys, worldforge, worldforge.pcg.similarity.classifier, worldforge.pcg.competition.scoring, "
        "worldforge.pcg.levels.glyphs, worldforge.pcg.scoring.scores, worldforge.pcg.scoring.diversity\n"
        "bad = [m for m in ('torch', 'transformers', 'Box2D') if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _noisy_images(n: int) -> list[object]:
    from PIL import Image, ImageDraw

    rng = random.Random(7)
    out = []
    for _ in range(n):
        img = Image.new("RGB", (256, 256), "white")
        draw = ImageDraw.Draw(img)
        for _ in range(rng.randint(3, 15)):
            x, y = rng.randint(0, 220), rng.randint(0, 220)
            draw.rectangle((x, y, x + rng.randint(4, 40), y + rng.randint(4, 40)), fill="black")
        out.append(img)
    return out


@pytest.mark.parametrize("kind", ["bundled", "vit"])
def test_vectors_do_not_depend_on_batch_composition(tmp_path: Path, kind: str) -> None:
    """An image gets bit-identical vectors alone, in a short last batch and among other images.

    Without fixed-size batches CPU kernels differ in the last bits between batch sizes, and a
    resumed run (which classifies a different set of images per batch) would not reproduce an
    uninterrupted run's result digest.
    """
    spec = (
        None
        if kind == "bundled"
        else str(_vit_checkpoint(tmp_path / "vit", hidden=48, layers=2, heads=4, shuffled=False))
    )
    clf = load_classifier(spec, device="cpu")
    images = _noisy_images(40)
    target = images[0]
    alone = clf.classify([target], batch_size=16)
    for batch in (images[1:5] + [target], images[5:40] + [target], [target, *images[1:16]]):
        got = clf.classify(batch, batch_size=16)
        row = batch.index(target)
        assert got.softmax[row] == alone.softmax[0]
        assert got.embeddings[row] == alone.embeddings[0]


def test_processors_load_with_the_pillow_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where torchvision is installed, transformers would pick its backend: other resized pixels
    than the official Pillow pipeline, and no BOX filter (the bundled processor's), which failed
    at the first image. The classifier asks for Pillow every time."""
    from transformers import AutoImageProcessor

    asked: list[object] = []
    original = AutoImageProcessor.from_pretrained.__func__  # type: ignore[attr-defined]

    def spy(cls: type, *args: object, **kwargs: object) -> object:
        asked.append(kwargs.get("backend"))
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(AutoImageProcessor, "from_pretrained", classmethod(spy))
    folder = _vit_checkpoint(tmp_path / "vit", hidden=48, layers=2, heads=4, shuffled=False)
    for spec in (None, str(folder)):
        clf = load_classifier(spec, device="cpu")
        assert getattr(clf.processor, "backend", "pil") == "pil"
    assert asked == ["pil", "pil"]
