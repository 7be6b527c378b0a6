"""The ``dpi`` letter family: the Adobe, Bitstream and B&H X11 bitmap faces at 100 dpi.

Why it exists: the five other training families draw letters from outline fonts quantized to the
block grid, one bitmap design (Terminus), skeletons and block-laid bars. Letters of another bitmap
design whose only difference from a neighbour is one open side or one notch (``A``/``R``, ``C``/``E``,
``D``/``O``), or whose diagonals are stair steps (``X``, ``Y``), were read worst by a model that never
saw such designs. These faces were drawn by hand pixel by pixel for 100 dpi screens: serif (Times,
New Century Schoolbook, Charter), slab (Courier) and sans (Helvetica, Lucida) letters, regular, bold
and italic, 11-15 rows at 8-14 points, so every letter comes in many pixel designs.

Independence: the package ``xfonts-100dpi`` is this family's alone (the frozen evaluation-only
family :mod:`.unseen` draws from the X11 misc-fixed and Clean faces of ``xfonts-base``; the ``pixel``
family from Terminus). The ``symb`` face is left out: it maps A-Z to Greek letters (``C`` is chi,
``R`` rho), so its glyphs would carry wrong labels.

A glyph is scaled by whole cells (1-2 across, 1-2 up, where it fits the 20x16 grid) and built by
the same drop planner as the other glyph families (:func:`.families.place`,
:func:`.families.program_for_grid`).
"""

from __future__ import annotations

import gzip
import io
import random
from functools import lru_cache
from pathlib import Path

from worldforge.pcg.levels.drop_plan import GRID_HEIGHT, GRID_WIDTH
from worldforge.pcg.similarity.training.grids import Cells, scaled, whole_cell_scales

PACKAGE = "xfonts-100dpi"
FOLDER = Path("/usr/share/fonts/X11/100dpi")
#: Text faces of the package (Adobe Courier, Helvetica, New Century Schoolbook, Times; Bitstream
#: Charter; B&H Lucida, Lucida Bright, Lucida Typewriter), every style.
_FACES = (
    *(f"{name}{style}" for name in ("cour", "helv") for style in ("R", "B", "O", "BO")),
    *(f"{name}{style}" for name in ("ncen", "tim", "char") for style in ("R", "B", "I", "BI")),
    *(f"lu{style}S" for style in ("R", "B", "I", "BI")),
    *(f"lub{style}" for style in ("R", "B", "I", "BI")),
    "lutRS",
    "lutBS",
)
#: Point sizes: 11-15 rows at 100 dpi; 18 and 24 points are taller than the grid.
SIZES = ("08", "10", "12", "14")
FILES: tuple[str, ...] = tuple(str(FOLDER / f"{face}{size}.pcf.gz") for face in _FACES for size in SIZES)
#: A glyph shorter than this has no room for a letter's strokes and gaps.
MIN_ROWS = 5


@lru_cache(maxsize=4096)
def glyph(path: str, letter: str) -> tuple[tuple[int, ...], ...]:
    """The face's bitmap of ``letter``, cropped to its ink (1 = ink), row by row from the top."""
    from PIL import PcfFontFile

    with gzip.open(path) as handle:
        font = PcfFontFile.PcfFontFile(io.BytesIO(handle.read()))
    drawn = font.glyph[ord(letter)]  # (advance, destination box, source box, 1-bit image)
    box = drawn[3].getbbox() if drawn is not None else None
    if drawn is None or box is None:
        raise RuntimeError(f"dpi family: {path} has no ink for {letter!r}")
    image = drawn[3]
    image = image.crop(box).convert("L")
    data, width = image.tobytes(), image.width
    return tuple(tuple(1 if data[r * width + c] else 0 for c in range(width)) for r in range(image.height))


@lru_cache(maxsize=1)
def require_files() -> tuple[str, ...]:
    """Every face file: a partial set would silently change the corpus and its digest (checked once
    per process: every level draws through it; a missing file raises again on the next call)."""
    missing = [f for f in FILES if not Path(f).is_file()]
    if missing:
        raise RuntimeError(f"letter families need {missing[0]} (Debian package: {PACKAGE})")
    return FILES


def dpi_cells(letter: str, rng: random.Random) -> Cells:
    """One face's bitmap of ``letter`` (faces in random order), scaled by whole cells to fit the grid."""
    faces = list(require_files())
    rng.shuffle(faces)
    for path in faces:
        cells = glyph(path, letter)
        scales = whole_cell_scales(cells, GRID_WIDTH, GRID_HEIGHT)
        if not scales or len(cells) < MIN_ROWS:
            continue
        sx, sy = rng.choice(scales)
        return scaled(cells, sx, sy)
    raise RuntimeError(f"dpi family: no face's {letter!r} fits the grid")
