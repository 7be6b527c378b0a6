"""Classifier inputs prepared by level workers from in-memory renders equal the classifier's own
inputs from the PNG bit for bit, so the suite's vectors (and result digest) do not change."""

from __future__ import annotations

import pickle

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
np = pytest.importorskip("numpy")

from worldforge.pcg.levels.convert import convert  # noqa: E402
from worldforge.pcg.levels.glyphs import letter_program  # noqa: E402
from worldforge.pcg.sim.physics import simulate  # noqa: E402
from worldforge.pcg.sim.render import IMAGE_SIZE, encode_png, render_array  # noqa: E402
from worldforge.pcg.similarity.classifier import LetterClassifier, load_classifier  # noqa: E402
from worldforge.pcg.similarity.prep import PreparedPng, prepare_pixels  # noqa: E402


@pytest.fixture(scope="module")
def bundled() -> LetterClassifier:
    return load_classifier(None, device="cpu")


def renders() -> list[np.ndarray]:
    return [render_array(simulate(convert(letter_program(c, 900 + i)))) for i, c in enumerate("AMQZ")]


def test_prepared_inputs_give_the_png_vectors_bit_for_bit(bundled: LetterClassifier) -> None:
    spec = bundled.prep_spec(4, (IMAGE_SIZE, IMAGE_SIZE))
    assert spec is not None
    spec = pickle.loads(pickle.dumps(spec))  # it travels to the workers
    images = renders()
    pngs = [encode_png(a) for a in images]
    values = [prepare_pixels(a, spec) for a in images]
    assert all(v is not None and v.dtype == np.float32 for v in values)
    prepared = [PreparedPng(png, v) for png, v in zip(pngs, values, strict=True)]
    assert prepared[0] == pngs[0]  # still the PNG bytes for classifiers that read them
    from_png = bundled.classify(pngs, embedding=True)
    from_render = bundled.classify(prepared, embedding=True)
    assert from_render.softmax == from_png.softmax
    assert from_render.embeddings == from_png.embeddings
    assert from_png.top == ["A", "M", "Q", "Z"]
    # a layout the spec was not verified for is left to the classifier
    assert prepare_pixels(images[0][:, :, :3], spec) is None
    assert prepare_pixels(images[0][:512], spec) is None


def test_vectors_do_not_depend_on_the_thread_count(bundled: LetterClassifier) -> None:
    pngs = [encode_png(a) for a in renders()]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = bundled.classify(pngs, embedding=True)
        torch.set_num_threads(2)
        two = bundled.classify(pngs, embedding=True)
    finally:
        torch.set_num_threads(before)
    assert one.softmax == two.softmax and one.embeddings == two.embeddings
