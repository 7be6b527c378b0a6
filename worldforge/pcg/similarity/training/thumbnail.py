"""The corpus's 128 px training images, made from a render's distinct rows.

Every level of the corpus is kept as a 128 px greyscale image, the 8x box reduction of the 1024 px
similarity render's red channel (the render is black on white: all channels agree). Pillow's
``Image.reduce(8)`` needs the whole 4 MB RGBA image, which costs more than drawing the render:
a render is a few dozen distinct rows repeated down a white page (:class:`RenderRows`), so the
same sums are taken here on the distinct rows, then gathered per output row.

Pillow's 8x8 box reduction rounds each block's sum ``s`` (64 pixels) to ``(s + 32) // 64``;
``tests/pcg/test_letter_families.py`` checks that against Pillow for every possible sum, and the
thumbnails of real renders byte for byte.
"""

from __future__ import annotations

import numpy as np

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.sim.render import IMAGE_SIZE, RenderRows

#: Reduction factor: 1024 px renders -> 128 px images.
FACTOR = 8


def thumbnail(rows: RenderRows) -> bytes:
    """The render's red channel reduced 8x by block means, as Pillow's ``reduce(8)`` gives it
    (``128 * 128`` bytes, rows top first)."""
    distinct = rows.distinct
    if distinct.shape[1] != IMAGE_SIZE or rows.new.shape[0] != IMAGE_SIZE:
        raise WorldForgeError(f"thumbnail: expected a {IMAGE_SIZE} px render, got {distinct.shape[1]} px.")
    red = distinct[:, :, 0].astype(np.uint32)
    across = red.reshape(len(red), IMAGE_SIZE // FACTOR, FACTOR).sum(axis=2)
    blocks = np.take(across, rows.row_of, axis=0).reshape(IMAGE_SIZE // FACTOR, FACTOR, -1).sum(axis=1)
    area = FACTOR * FACTOR
    return ((blocks + area // 2) // area).astype(np.uint8).tobytes()


__all__ = ["FACTOR", "thumbnail"]
