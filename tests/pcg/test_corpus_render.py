"""The corpus's renders are made from a render's distinct rows: the same bytes as the full image.

The training corpus keeps each level's 128 px image and, for evaluation sets, its PNG. They are
made without the 4 MB RGBA image (:mod:`worldforge.pcg.similarity.training.thumbnail`,
:func:`~worldforge.pcg.sim.png.encode_rows`); a difference of one grey level would change the
trained checkpoint, so both are compared here with Pillow's reduction and the full-image encoder.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.levels.convert import convert
from worldforge.pcg.sim.physics import simulate
from worldforge.pcg.sim.render import IMAGE_SIZE, RenderRows, encode_png, render_array
from worldforge.pcg.similarity.training import unseen
from worldforge.pcg.similarity.training.families import family_level
from worldforge.pcg.similarity.training.loop import IMAGE, render_item
from worldforge.pcg.similarity.training.thumbnail import FACTOR, thumbnail


def _pillow_thumbnail(rgba: np.ndarray) -> bytes:
    return Image.fromarray(np.ascontiguousarray(rgba[:, :, 0]), mode="L").reduce(FACTOR).tobytes()


def test_thumbnail_rounds_every_block_sum_as_pillow() -> None:
    # Block j (of 128 x 128) holds pixel values summing to j, for every sum an 8x8 block can have.
    area = FACTOR * FACTOR
    sums = np.arange(IMAGE * IMAGE) % (area * 255 + 1)
    full, rest = sums // 255, sums % 255
    blocks = np.zeros((IMAGE * IMAGE, area), dtype=np.uint8)
    blocks[np.arange(area)[None, :] < full[:, None]] = 255
    partial = full < area
    blocks[np.flatnonzero(partial), full[partial]] = rest[partial]
    assert (blocks.astype(np.int64).sum(axis=1) == sums).all()
    red = blocks.reshape(IMAGE, IMAGE, FACTOR, FACTOR).transpose(0, 2, 1, 3).reshape(IMAGE_SIZE, IMAGE_SIZE)
    rgba = np.repeat(red[:, :, None], 4, axis=2)
    rows = RenderRows(rgba, np.ones(IMAGE_SIZE, dtype=bool))
    assert thumbnail(rows) == _pillow_thumbnail(rgba)


def _programs() -> list[str]:
    families = ("glyph", "pixel", "block")
    programs = [family_level(family, letter, 7)[1] for family in families for letter in "AMW"]
    return programs + [unseen.unpack_program(level["program"]) for level in unseen.fixture_levels()[::150]]


@pytest.mark.parametrize("program", _programs())
def test_render_item_gives_the_full_image_bytes(program: str) -> None:
    small, png, moved = render_item((program, True))
    result = simulate(convert(program))
    rgba = render_array(result)
    assert small == _pillow_thumbnail(rgba)
    assert png == encode_png(rgba)
    assert render_item((program, False)) == (small, b"", moved)


def test_thumbnail_refuses_another_size() -> None:
    rows = RenderRows(np.zeros((1, 512, 4), dtype=np.uint8), np.ones(512, dtype=bool))
    with pytest.raises(WorldForgeError, match="1024 px"):
        thumbnail(rows)
