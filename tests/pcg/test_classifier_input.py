"""The classifier's processor shortcut is exact: ``pixel_values`` equal the processor's, bit for bit.

The reference is always the model's own processor on the RGB image, which is what the classifier
fed it before the shortcut existed. Inputs cover level renders (1024 px RGBA, also as RGB and L),
non-square images, sizes that are not a multiple of the target, upscaling, other Pillow modes,
PNG bytes (the project's encoder, Pillow's, and hand-made ones with every row filter), and paths.
The PNG reader is also compared with Pillow's decoder directly, including the inputs it refuses.
"""

from __future__ import annotations

import functools
import io
import random
import struct
import zlib
from pathlib import Path

import pytest

from worldforge.pcg.letters import LETTERS
from worldforge.pcg.similarity.classifier import LetterClassifier, load_classifier

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
np = pytest.importorskip("numpy")
from PIL import Image  # noqa: E402

from worldforge.pcg.similarity.classifier_input import (  # noqa: E402
    Rows,
    arrow_export_safe,
    pixels_of,
    resize_rows,
    rows_from_array,
    rows_from_image,
    rows_from_png,
)


@pytest.fixture(scope="module")
def bundled() -> LetterClassifier:
    return load_classifier(None, device="cpu")


def _renders(n: int) -> list[Image.Image]:
    from worldforge.pcg.levels.convert import convert
    from worldforge.pcg.levels.glyphs import letter_program
    from worldforge.pcg.sim.render import render_level

    return [render_level(convert(letter_program(LETTERS[i * 7 % 26], 900 + i))) for i in range(n)]


def _noise(height: int, width: int, channels: int, *, seed: int, repeats: float = 0.6) -> np.ndarray:
    """Random pixels where a fraction of rows repeat the row above (like renders, but any values)."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(height, width, channels), dtype=np.uint8)
    for row in range(1, height):
        if rng.random() < repeats:
            pixels[row] = pixels[row - 1]
    return pixels if channels > 1 else pixels[:, :, 0]


def _reference(clf: LetterClassifier, image: Image.Image) -> torch.Tensor:
    return clf.processor(images=[image.convert("RGB")], return_tensors="pt")["pixel_values"]


def _ours(clf: LetterClassifier, item: object) -> tuple[torch.Tensor, object]:
    prepared = clf._prepare(item)
    return clf._pixel_values([prepared], 1, torch).contiguous(), prepared


@functools.cache
def _images() -> dict[str, Image.Image]:
    render = _renders(1)[0]
    alpha = Image.fromarray(_noise(1024, 1024, 4, seed=3))  # alpha varies: RGBA resize would premultiply
    cases = {
        "render RGBA": render,
        "render RGB": render.convert("RGB"),
        "render L": render.convert("L"),
        "render RGBX": render.convert("RGBX"),
        "noisy RGBA with alpha": alpha,
        "noise RGB no repeats": Image.fromarray(_noise(512, 512, 3, seed=4, repeats=0.0)),
        "non-square 2048x1024": Image.fromarray(_noise(1024, 2048, 4, seed=5)),
        "non-square 640x1280 L": Image.fromarray(_noise(1280, 640, 1, seed=6)),
        "not a multiple 1000x1000": Image.fromarray(_noise(1000, 1000, 3, seed=7)),
        "not a multiple 777x333": Image.fromarray(_noise(333, 777, 4, seed=8)),
        "target size 64x64": Image.fromarray(_noise(64, 64, 3, seed=9)),
        "upscale 40x30": Image.fromarray(_noise(30, 40, 3, seed=10)),
        "grey RGB": Image.fromarray(np.repeat(_noise(256, 256, 1, seed=11)[:, :, None], 3, axis=2)),
    }
    cases["P"] = cases["render RGB"].quantize(8)
    cases["LA"] = alpha.convert("LA")
    cases["1"] = render.convert("1")
    cases["CMYK"] = cases["noise RGB no repeats"].convert("CMYK")
    return cases


def test_bundled_processor_takes_the_shortcut(bundled: LetterClassifier) -> None:
    table = bundled._table
    assert table is not None and table.size == (64, 64) and table.resample == 4


@pytest.mark.parametrize("name", sorted(_images()))
def test_pixel_values_equal_the_processors(bundled: LetterClassifier, name: str) -> None:
    image = _images()[name]
    got, prepared = _ours(bundled, image)
    expected = _reference(bundled, image)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert torch.equal(got, expected)
    assert isinstance(prepared, np.ndarray), "every Pillow mode reaches the shortcut (after RGB if needed)"


def test_png_bytes_and_paths_equal_the_processor(bundled: LetterClassifier, tmp_path: Path) -> None:
    from worldforge.pcg.sim.render import png_bytes

    for i, image in enumerate(_renders(3)):
        pillow_png = io.BytesIO()
        image.save(pillow_png, format="PNG")
        path = tmp_path / f"{i}.png"
        path.write_bytes(png_bytes(image))
        expected = _reference(bundled, image)
        for item in (png_bytes(image), pillow_png.getvalue(), path, str(path)):
            got, prepared = _ours(bundled, item)
            assert torch.equal(got, expected)
            assert isinstance(prepared, np.ndarray)


def test_mixed_batch_and_inputs_give_identical_vectors(bundled: LetterClassifier, tmp_path: Path) -> None:
    from worldforge.pcg.sim.render import png_bytes

    images = _renders(4)
    paths = []
    for i, image in enumerate(images):
        paths.append(tmp_path / f"{i}.png")
        paths[-1].write_bytes(png_bytes(image))
    as_images = bundled.classify(images, batch_size=8)
    as_paths = bundled.classify(paths, batch_size=8, workers=2)
    mixed = bundled.classify(
        [images[0], png_bytes(images[1]), paths[2], images[3].convert("L")], batch_size=8
    )
    for other in (as_paths, mixed):
        assert other.softmax == as_images.softmax and other.embeddings == as_images.embeddings


def test_failed_check_falls_back_to_the_processor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from worldforge.pcg.sim.render import png_bytes

    clf = load_classifier(None, device="cpu")
    monkeypatch.setattr(clf, "_compare_with_processor", lambda channels, size: None)
    render = _images()["render RGBA"]
    path = tmp_path / "render.png"
    path.write_bytes(png_bytes(render))
    for image, item in (
        (_images()["not a multiple 777x333"], _images()["not a multiple 777x333"]),
        (render, png_bytes(render)),
        (render, path),
    ):
        got, prepared = _ours(clf, item)
        assert isinstance(prepared, Image.Image) and prepared.mode == "RGB"
        assert torch.equal(got, _reference(clf, image))


def test_unsupported_processor_configs_use_the_processor(tmp_path: Path) -> None:
    from transformers import ResNetConfig, ResNetForImageClassification, ViTImageProcessor

    config = ResNetConfig(
        embedding_size=8,
        hidden_sizes=[8],
        depths=[1],
        id2label=dict(enumerate(LETTERS)),
        label2id={c: i for i, c in enumerate(LETTERS)},
    )
    ResNetForImageClassification(config).save_pretrained(tmp_path)
    for extra in ({"do_center_crop": True, "crop_size": {"height": 24, "width": 24}}, {"resample": 0}):
        ViTImageProcessor(size={"height": 32, "width": 32}, **extra).save_pretrained(tmp_path)
        clf = load_classifier(tmp_path, device="cpu")
        assert clf._table is None
        result = clf.classify([_images()["render RGBA"]])
        assert len(result) == 1 and abs(sum(result[0].softmax) - 1) < 1e-5


@pytest.mark.parametrize("resample", [1, 2, 3, 4, 5])
@pytest.mark.parametrize(("height", "width", "channels"), [(300, 200, 3), (97, 211, 1), (256, 256, 4)])
def test_resize_rows_is_pillows_resize(resample: int, height: int, width: int, channels: int) -> None:
    pixels = _noise(height, width, channels, seed=resample * 100 + height)
    image = Image.fromarray(pixels)
    rows = rows_from_image(image) if channels != 3 else rows_from_array(pixels)
    assert rows is not None and rows.distinct.shape[0] < height  # repeated rows were folded
    for size in ((64, 64), (37, 90), (width, 48), (300, 10)):
        expected = np.asarray(image.convert("RGB").resize(size, resample))
        if channels == 1:
            expected = expected[:, :, 0]
        assert np.array_equal(resize_rows(rows, size, resample, split=False), expected)
        if width >= height and size[0] <= size[1]:  # Pillow runs the horizontal pass first here
            assert np.array_equal(resize_rows(rows, size, resample), expected)


def test_check_picks_the_split_only_where_pillow_agrees(bundled: LetterClassifier) -> None:
    mode = bundled._shortcut_mode
    assert mode(4, (1024, 1024)) is True and mode(1, (1024, 1024)) is True and mode(3, (1024, 1024)) is True
    # Tall: Pillow 13 resizes vertically first, so the split differs and one call is used instead;
    # whatever the installed Pillow does, the check picks the split exactly where it agrees.
    tall = _noise(1280, 640, 1, seed=5)
    rows = rows_from_array(tall[:, :, None])
    expected = np.asarray(Image.fromarray(tall).resize((64, 64), 4))
    assert np.array_equal(resize_rows(rows, (64, 64), 4, split=False), expected)
    agrees = np.array_equal(resize_rows(rows, (64, 64), 4, split=True), expected)
    assert mode(1, (640, 1280)) is agrees


def test_pixels_of_reads_in_place_and_refuses_what_it_cannot() -> None:
    array = _noise(50, 40, 4, seed=1)
    image = Image.frombytes("RGBA", (40, 50), array.tobytes())  # Pillow's own memory
    view = pixels_of(image)
    assert view is not None and np.array_equal(view, array) and not view.flags.writeable
    assert np.array_equal(pixels_of(image.convert("L"))[:, :, 0], np.asarray(image.convert("L")))
    assert np.array_equal(pixels_of(image.convert("RGB"))[:, :, :3], array[:, :, :3])
    assert pixels_of(image.convert("P")) is None and pixels_of(image.convert("CMYK")) is None
    assert pixels_of(Image.new("RGBA", (2100, 2100))) is None  # larger than one Pillow block


def test_arrow_export_only_where_the_pillow_version_survives_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """11.2 leaks every export; 11.3-12.x crash on images that borrow their memory (fromarray);
    there the rows come from one copy instead, and equal the in-place ones."""
    import worldforge.pcg.similarity.classifier_input as ci

    array = _noise(64, 48, 4, seed=3)
    array[10:40] = array[9]
    owned = Image.frombytes("RGBA", (48, 64), array.tobytes())
    borrowed = Image.fromarray(array)
    assert borrowed.readonly and not owned.readonly
    assert not arrow_export_safe(owned, (11, 2)) and not arrow_export_safe(borrowed, (11, 2))
    assert arrow_export_safe(owned, (12, 3)) and not arrow_export_safe(borrowed, (12, 3))
    assert arrow_export_safe(owned, (13, 0)) and arrow_export_safe(borrowed, (13, 0))
    expected = rows_from_array(array)
    # Only down to the installed version: acting as a newer Pillow would export what crashes this one.
    for version in [v for v in ((11, 2), (12, 3), (13, 0)) if v <= ci._PILLOW]:
        monkeypatch.setattr(ci, "_PILLOW", version)
        for image in (owned, borrowed, Image.fromarray(np.ascontiguousarray(array[:, :, 0]))):
            rows = rows_from_image(image)
            assert rows is not None
            want = expected if image.mode == "RGBA" else rows_from_array(array[:, :, :1])
            assert np.array_equal(rows.distinct, want.distinct) and np.array_equal(rows.row_of, want.row_of)
        in_place = pixels_of(borrowed) is not None
        assert in_place == (version >= (13, 0))


def test_grey_intermediate_takes_one_channel_and_stays_exact() -> None:
    grey = np.repeat(_noise(40, 60, 1, seed=2)[:, :, None], 4, axis=2)
    grey[:, :, 3] = _noise(40, 60, 1, seed=3)  # the fourth byte is ignored
    colour = grey.copy()
    colour[5, 6, 2] ^= 1
    for pixels, ndim in ((grey, 2), (colour, 3)):
        got = resize_rows(rows_from_array(pixels), (20, 20), 4)
        assert got.ndim == ndim
        expected = np.asarray(Image.fromarray(pixels).convert("RGB").resize((20, 20), 4))
        assert np.array_equal(got if ndim == 3 else np.repeat(got[:, :, None], 3, axis=2), expected)


def _png(pixels: np.ndarray, filters: list[int], *, extra: bytes = b"") -> bytes:
    """A PNG with the given filter type per row (0 None .. 4 Paeth), 8-bit grey/RGB/RGBA."""
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    height, width, channels = pixels.shape
    colour = {1: 0, 3: 2, 4: 6}[channels]
    rows = pixels.reshape(height, width * channels).astype(np.int64)
    out = bytearray()
    for y, kind in enumerate(filters):
        line = rows[y]
        up = rows[y - 1] if y else np.zeros_like(line)
        left = np.concatenate([np.zeros(channels, np.int64), line[:-channels]])
        upleft = np.concatenate([np.zeros(channels, np.int64), up[:-channels]])
        if kind == 0:
            pred = np.zeros_like(line)
        elif kind == 1:
            pred = left
        elif kind == 2:
            pred = up
        elif kind == 3:
            pred = (left + up) // 2
        else:
            p = left + up - upleft
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - upleft)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, upleft))
        out += bytes([kind]) + ((line - pred) % 256).astype(np.uint8).tobytes()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + extra
        + chunk(b"IDAT", zlib.compress(bytes(out)))
        + chunk(b"IEND", b"")
    )


def _decoded(rows: Rows) -> np.ndarray:
    return rows.distinct[rows.row_of]


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_png_reader_matches_pillow_for_none_sub_up(channels: int) -> None:
    rnd = random.Random(channels)
    for seed in range(4):
        pixels = _noise(45, 33, channels, seed=seed)
        filters = [rnd.choice([0, 1, 2, 2, 2]) for _ in range(45)]
        data = _png(pixels, filters)
        with Image.open(io.BytesIO(data)) as pil:
            expected = np.asarray(pil)
        rows = rows_from_png(data)
        assert rows is not None
        got = _decoded(rows)
        assert np.array_equal(got[:, :, 0] if channels == 1 else got, expected)
        assert np.array_equal(got.reshape(expected.shape), pixels)


def test_png_reader_refuses_what_pillow_should_decode() -> None:
    pixels = _noise(16, 16, 3, seed=1)
    good = _png(pixels, [2] * 16)
    assert rows_from_png(good) is not None
    trns = struct.pack(">I", 6) + b"tRNS" + bytes(6) + struct.pack(">I", zlib.crc32(b"tRNS" + bytes(6)))
    refused = {
        "Average": _png(pixels, [3] * 16),
        "Paeth": _png(pixels, [0] + [4] * 15),
        "tRNS": _png(pixels, [2] * 16, extra=trns),
        "bad CRC": good[:-20] + bytes([good[-20] ^ 1]) + good[-19:],
        "truncated": good[: len(good) // 2],
        "not a PNG": b"GIF89a" + good[6:],
        "palette": _pillow_png(Image.fromarray(pixels).quantize(4)),
        "16 bit": _pillow_png(Image.fromarray(pixels[:, :, 0].astype(np.uint16) * 257)),
        "interlaced": _pillow_png(Image.fromarray(pixels), interlace=True),
    }
    for name, data in refused.items():
        if name == "interlaced" and data[28] != 1:
            continue  # this Pillow cannot write interlaced PNGs
        assert rows_from_png(data) is None, name
    assert rows_from_png(good, max_pixels=255) is None  # Pillow's bomb limit applies first


def _pillow_png(image: Image.Image, **params: object) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", **params)
    return buf.getvalue()


def test_unreadable_inputs_fail_as_before(bundled: LetterClassifier, tmp_path: Path) -> None:
    from PIL import UnidentifiedImageError

    from worldforge.core.errors import WorldForgeError

    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    with pytest.raises(UnidentifiedImageError):
        bundled.classify([broken.read_bytes()])
    for path in (broken, tmp_path / "missing.png"):
        with pytest.raises(WorldForgeError, match="cannot read image"):
            bundled.classify([path])
