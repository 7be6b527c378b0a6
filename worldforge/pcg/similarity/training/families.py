"""Independent letter families for training and measuring the bundled letter classifier.

Each family turns ``(letter, seed)`` into a ``drop_block`` program through a generator that shares
no glyph source with the others, so leave-one-family-out accuracy says how well the classifier reads
letters drawn in a way it never saw:

* ``glyph``  - the mock generator :func:`worldforge.pcg.levels.glyphs.letter_program` (DejaVu faces,
  Pillow's default font, the built-in 5x7 bitmap), as before.
* ``font``   - outline fonts from Debian packages (Liberation, FreeFont, Noto; regular and bold,
  upright and italic) rasterized at 8-16 rows, several widths and stroke weights and quantized to
  the block grid by area coverage.
* ``pixel``  - the Terminus bitmap font (Debian ``fonts-terminus-otb``), native pixel glyphs of
  6-20 rows, scaled by whole cells and optionally thickened: blocky dot-matrix letters.
* ``stroke`` - skeletons written here as polylines in a unit box, with alternate shapes for letters
  that have several (single/two-storey, square/round, W as U with a middle stem, ...), jittered and
  drawn with strokes one to three cells thick.
* ``block``  - letters laid directly on the block grid as bars, legs and staircases, in the forms
  builders use (:mod:`.blocks`): exact, nothing quantized.
* ``dpi``    - the Adobe, Bitstream and B&H X11 bitmap faces at 100 dpi (:mod:`.dpi`, Debian
  ``xfonts-100dpi``): hand-made pixel designs of serif, slab and sans letters, scaled by whole cells.
* ``hand``   - letters drawn by hand on the block grid (``dataset-manifests/fixtures/letter-classifier/
  handdrawn-letters.json``). Never used for training in any fold: the independent check.

A ``font`` or ``stroke`` grid that gained or lost a counter against the drawing it was quantized
from (a filled bowl, ``C`` closed into ``O``) is drawn again: its label would be wrong.

Every target grid is decomposed by :func:`worldforge.pcg.levels.drop_plan.plan_blocks` with a random
block-type preference (``b31`` vs ``b11``, merging into ``b13``), and for a fifth of the levels
without the static balance supports, so the physics also produces leaning and partly collapsed
letters, as language-model levels do.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from worldforge.core.seeds import variant_rng
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.levels.drop_plan import (
    GRID_HEIGHT,
    GRID_WIDTH,
    Grid,
    blocks_to_program,
    plan_blocks,
    simulate_drops,
)
from worldforge.pcg.levels.glyphs import letter_program, letter_target
from worldforge.pcg.similarity.training import dpi
from worldforge.pcg.similarity.training.blocks import block_cells
from worldforge.pcg.similarity.training.grids import Cells, counters, trim

if TYPE_CHECKING:  # Pillow loads inside the drawing functions
    from PIL.Image import Image as PILImage

ROOT = Path(__file__).resolve().parents[4]
HANDDRAWN = ROOT / "dataset-manifests" / "fixtures" / "letter-classifier" / "handdrawn-letters.json"
TRAIN_FAMILIES = ("glyph", "font", "pixel", "stroke", "block", "dpi")
EVAL_ONLY_FAMILIES = ("hand",)

FONT_FILES: tuple[str, ...] = tuple(
    f"/usr/share/fonts/truetype/{name}"
    for name in (
        "liberation/LiberationSans-Regular.ttf",
        "liberation/LiberationSans-Bold.ttf",
        "liberation/LiberationSansNarrow-Bold.ttf",
        "liberation/LiberationSerif-Regular.ttf",
        "liberation/LiberationSerif-Bold.ttf",
        "liberation/LiberationMono-Regular.ttf",
        "liberation/LiberationMono-Bold.ttf",
        "liberation/LiberationSans-BoldItalic.ttf",
        "freefont/FreeSans.ttf",
        "freefont/FreeSansBold.ttf",
        "freefont/FreeSerif.ttf",
        "freefont/FreeSerifBold.ttf",
        "freefont/FreeMono.ttf",
        "freefont/FreeMonoBold.ttf",
        "noto/NotoSans-Regular.ttf",
        "noto/NotoSans-Bold.ttf",
        "noto/NotoSerif-Regular.ttf",
        "noto/NotoSerif-Bold.ttf",
        "noto/NotoSansDisplay-Bold.ttf",
        "noto/NotoSerifDisplay-Bold.ttf",
        "noto/NotoSerif-BoldItalic.ttf",
    )
)
PIXEL_FONTS = (
    "/usr/share/fonts/opentype/terminus/terminus-normal.otb",
    "/usr/share/fonts/opentype/terminus/terminus-bold.otb",
)
PIXEL_SIZES = (12, 14, 16, 20, 24, 28, 32)
_HI = 160  # px em size for outline rasterization
#: Outline letters are drawn at least this many rows high: below it a serif or bold face has no room
#: for its strokes and gaps (a bitmap design, the ``pixel`` family, draws letters that small).
FONT_MIN_ROWS = 8
#: Draws of a glyph until the block grid keeps its counters and strokes (see ``_faithful``).
FAITHFUL_TRIES = 20
#: Share of the drawing's ink that must lie on or beside an inked cell of the grid: a stroke the
#: quantization dropped (a serif face's hairline stem, the right half of a thin ``U``) lies further.
MIN_INK_KEPT = 0.97
FONT_PACKAGES = "fonts-liberation fonts-freefont-ttf fonts-noto-core fonts-terminus-otb xfonts-100dpi"


def missing_fonts() -> list[str]:
    """Glyph source files of the font, pixel and dpi families that are not installed."""
    return [f for f in (*FONT_FILES, *PIXEL_FONTS, *dpi.FILES) if not Path(f).is_file()]


def require_fonts(files: Sequence[str]) -> Sequence[str]:
    """All of ``files``: a partial font set would silently change the corpus and its digest."""
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        raise RuntimeError(f"letter families need {missing[0]} (Debian packages: {FONT_PACKAGES})")
    return files


Point = tuple[float, float]


def _arc(cx: float, cy: float, rx: float, ry: float, a0: float, a1: float, n: int = 10) -> list[Point]:
    return [
        (
            cx + rx * math.cos(math.radians(a0 + (a1 - a0) * i / n)),
            cy + ry * math.sin(math.radians(a0 + (a1 - a0) * i / n)),
        )
        for i in range(n + 1)
    ]


def _skeletons() -> dict[str, list[list[list[Point]]]]:
    """Letter skeletons in a unit box (x right, y up): letter -> shapes -> strokes -> points."""
    bowl_top = [(0.0, 1.0), (0.6, 1.0), *_arc(0.6, 0.76, 0.38, 0.24, 90, -90, 8), (0.0, 0.52)]
    bowl_p = [(0.0, 1.0), (0.6, 1.0), *_arc(0.6, 0.72, 0.4, 0.28, 90, -90, 8), (0.0, 0.44)]
    bowl_low = [(0.0, 0.52), (0.62, 0.52), *_arc(0.62, 0.26, 0.38, 0.26, 90, -90, 8), (0.0, 0.0)]
    ring = _arc(0.5, 0.5, 0.5, 0.5, 0, 360, 16)
    c_open = _arc(0.5, 0.5, 0.5, 0.5, 40, 320, 14)
    octagon = [(0.3, 0), (0.7, 0), (1, 0.3), (1, 0.7), (0.7, 1), (0.3, 1), (0, 0.7), (0, 0.3), (0.3, 0)]
    stem = [(0.0, 0.0), (0.0, 1.0)]
    s_round = [*_arc(0.5, 0.75, 0.5, 0.25, 20, 270, 8), *_arc(0.5, 0.25, 0.5, 0.25, 90, -160, 8)]
    return {
        "A": [
            [[(0, 0), (0.5, 1), (1, 0)], [(0.22, 0.4), (0.78, 0.4)]],
            [[(0, 0), (0, 0.75), (0.3, 1), (0.7, 1), (1, 0.75), (1, 0)], [(0, 0.45), (1, 0.45)]],
            [[(0, 0), (0.35, 1), (0.65, 1), (1, 0)], [(0.15, 0.4), (0.85, 0.4)]],
        ],
        "B": [
            [stem, bowl_top, bowl_low],
            [[(0, 0), (0, 1), (0.8, 1), (0.8, 0.5), (0, 0.5)], [(0.8, 0.5), (1, 0.4), (1, 0), (0, 0)]],
        ],
        "C": [
            [c_open],
            [[(1, 1), (0, 1), (0, 0), (1, 0)]],
            [[(1, 0.85), (0.8, 1), (0.2, 1), (0, 0.8), (0, 0.2), (0.2, 0), (0.8, 0), (1, 0.15)]],
        ],
        "D": [
            [stem, [(0, 1), (0.45, 1), *_arc(0.45, 0.5, 0.55, 0.5, 90, -90, 10), (0, 0)]],
            [[(0, 0), (0, 1), (0.7, 1), (1, 0.7), (1, 0.3), (0.7, 0), (0, 0)]],
        ],
        "E": [
            [[(1, 1), (0, 1), (0, 0), (1, 0)], [(0, 0.5), (0.8, 0.5)]],
            [[(1, 1), (0, 1), (0, 0), (1, 0)], [(0, 0.55), (0.6, 0.55)]],
        ],
        "F": [
            [[(1, 1), (0, 1), (0, 0)], [(0, 0.5), (0.8, 0.5)]],
            [[(1, 1), (0, 1), (0, 0)], [(0, 0.55), (0.6, 0.55)]],
        ],
        "G": [
            [c_open, [(1, 0.2), (1, 0.45), (0.55, 0.45)]],
            [[(1, 1), (0, 1), (0, 0), (1, 0), (1, 0.5), (0.5, 0.5)]],
            [[*_arc(0.5, 0.5, 0.5, 0.5, 40, 360, 14), (0.55, 0.5)]],
        ],
        "H": [[stem, [(1, 0), (1, 1)], [(0, 0.5), (1, 0.5)]]],
        "I": [[[(0.5, 0), (0.5, 1)], [(0, 1), (1, 1)], [(0, 0), (1, 0)]], [[(0.5, 0), (0.5, 1)]]],
        "J": [
            [[(1, 1), (1, 0.3), *_arc(0.5, 0.3, 0.5, 0.3, 0, -180, 8)]],
            [[(0.3, 1), (1, 1)], [(0.75, 1), (0.75, 0), (0, 0), (0, 0.3)]],
        ],
        "K": [[stem, [(1, 1), (0, 0.45)], [(0.3, 0.6), (1, 0)]], [stem, [(1, 1), (0, 0.5), (1, 0)]]],
        "L": [[[(0, 1), (0, 0), (1, 0)]]],
        "M": [
            [[(0, 0), (0, 1), (0.5, 0.4), (1, 1), (1, 0)]],
            [[(0, 0), (0, 1), (0.5, 0), (1, 1), (1, 0)]],
            [[(0, 0), (0.15, 1), (0.5, 0.3), (0.85, 1), (1, 0)]],
            [[(0, 0), (0, 1), (1, 1), (1, 0)], [(0.5, 1), (0.5, 0.35)]],
        ],
        "N": [[[(0, 0), (0, 1), (1, 0), (1, 1)]], [stem, [(1, 0), (1, 1)], [(0, 0.75), (1, 0.25)]]],
        "O": [[ring], [octagon], [[(0, 0), (0, 1), (1, 1), (1, 0), (0, 0)]]],
        "P": [[stem, bowl_p], [[(0, 0), (0, 1), (1, 1), (1, 0.45), (0, 0.45)]]],
        "Q": [
            [_arc(0.5, 0.58, 0.5, 0.42, 0, 360, 16), [(0.6, 0.35), (1, 0)]],
            [
                [
                    (0.3, 0.15),
                    (0.7, 0.15),
                    (1, 0.45),
                    (1, 0.75),
                    (0.7, 1),
                    (0.3, 1),
                    (0, 0.75),
                    (0, 0.45),
                    (0.3, 0.15),
                ],
                [(0.55, 0.3), (0.85, 0)],
            ],
        ],
        "R": [
            [stem, bowl_p, [(0.35, 0.44), (1, 0)]],
            [stem, bowl_p, [(0.7, 0.44), (1, 0.2), (1, 0)]],
            [[(0, 0), (0, 1), (1, 1), (1, 0.5), (0, 0.5)], [(0.5, 0.5), (1, 0)]],
        ],
        "S": [[s_round], [[(1, 1), (0, 1), (0, 0.5), (1, 0.5), (1, 0), (0, 0)]]],
        "T": [[[(0, 1), (1, 1)], [(0.5, 1), (0.5, 0)]]],
        "U": [
            [[(0, 1), (0, 0.35), *_arc(0.5, 0.35, 0.5, 0.35, 180, 360, 8), (1, 1)]],
            [[(0, 1), (0, 0), (1, 0), (1, 1)]],
        ],
        "V": [[[(0, 1), (0.5, 0), (1, 1)]], [[(0, 1), (0, 0.4), (0.5, 0), (1, 0.4), (1, 1)]]],
        "W": [
            [[(0, 1), (0.25, 0), (0.5, 0.7), (0.75, 0), (1, 1)]],
            [[(0, 1), (0.25, 0), (0.5, 0.45), (0.75, 0), (1, 1)]],
            [[(0, 1), (0, 0), (1, 0), (1, 1)], [(0.5, 0), (0.5, 0.65)]],
        ],
        "X": [[[(0, 0), (1, 1)], [(0, 1), (1, 0)]]],
        "Y": [
            [[(0, 1), (0.5, 0.5), (1, 1)], [(0.5, 0.5), (0.5, 0)]],
            [[(0, 1), (0, 0.55), (1, 0.55)], [(1, 1), (1, 0.55)], [(0.5, 0.55), (0.5, 0)]],
            [[(0, 1), (0.5, 0.45)], [(1, 1), (0.5, 0.45), (0.5, 0)]],
        ],
        "Z": [[[(0, 1), (1, 1), (0, 0), (1, 0)]]],
    }


SKELETONS = _skeletons()
#: Share of ``stroke`` letters drawn low and wide (see ``_stroke_draw``).
WIDE_SHARE = 0.25
_NARROW = {"I": 0.45, "J": 0.65, "L": 0.7, "F": 0.7, "E": 0.7, "M": 1.05, "W": 1.1}


def _dilate(cells: Cells, dx: int, dy: int) -> Cells:
    """Thicken ink by ``dx`` cells to the right and ``dy`` cells downwards."""
    h, w = len(cells), len(cells[0])
    out = [[0] * (w + dx) for _ in range(h + dy)]
    for r in range(h):
        for c in range(w):
            if cells[r][c]:
                for rr in range(r, r + dy + 1):
                    for cc in range(c, c + dx + 1):
                        out[rr][cc] = 1
    return out


def _box_ink(img: PILImage, width: int, height: int, cutoff: float) -> Cells:
    """``img`` (a greyscale drawing) box-resized to ``width`` x ``height``: 1 where a pixel's value
    reaches ``cutoff`` (0-255), else 0."""
    from PIL import Image

    if img.mode != "L":
        raise ValueError(f"expected a greyscale ('L') drawing, got mode {img.mode!r}")
    data = img.resize((width, height), Image.Resampling.BOX).tobytes()  # one byte per pixel, by rows
    return [[1 if data[r * width + c] >= cutoff else 0 for c in range(width)] for r in range(height)]


def _coverage(img: PILImage, width: int, height: int, threshold: float) -> Cells:
    return _box_ink(img, width, height, threshold * 255)


def stroke_cells(letter: str, rng: random.Random) -> Cells:
    """A skeleton shape of ``letter``, jittered, drawn 1-3 cells thick at a random size."""
    return _faithful(_stroke_draw, letter, rng)


def _stroke_draw(letter: str, rng: random.Random) -> tuple[PILImage, Cells]:
    from PIL import Image, ImageDraw

    shape = rng.choice(SKELETONS[letter])
    # A quarter of the letters are low and wide (1.4-2.2 times the usual width, at most 12 rows), as
    # builders fill the 20 x 16 grid and bitmap letters scaled across come out (a wide ``N`` whose
    # shallow diagonal stands on pillars read as ``H`` while no training family drew one).
    wide = rng.random() < WIDE_SHARE
    height = rng.randint(5, 12 if wide else GRID_HEIGHT)
    thick = 1 if height < 8 else rng.choice((1, 1, 2) if height < 12 else (1, 2, 2, 3))
    aspect = _NARROW.get(letter, 0.8) * rng.uniform(0.75, 1.25) * (rng.uniform(1.4, 2.2) if wide else 1.0)
    width = max(3, min(GRID_WIDTH, round(height * aspect)))
    px = 8
    img = Image.new("L", (width * px, height * px), 0)
    draw = ImageDraw.Draw(img)
    inner_w, inner_h = (width - thick) * px, (height - thick) * px
    for stroke in shape:
        points = [
            (
                (min(1.0, max(0.0, x + rng.uniform(-0.04, 0.04)))) * inner_w + thick * px / 2,
                (1.0 - min(1.0, max(0.0, y + rng.uniform(-0.04, 0.04)))) * inner_h + thick * px / 2,
            )
            for x, y in stroke
        ]
        draw.line(points, fill=255, width=thick * px, joint="curve")
        for x, y in (points[0], points[-1]):
            r = thick * px / 2
            draw.rectangle((x - r, y - r, x + r - 1, y + r - 1), fill=255)
    return img, _coverage(img, width, height, rng.uniform(0.3, 0.5))


@lru_cache(maxsize=64)
def _outline(path: str, letter: str) -> PILImage:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(path, _HI)
    img = Image.new("L", (_HI * 2, _HI * 2), 0)
    ImageDraw.Draw(img).text((_HI // 3, _HI // 3), letter, font=font, fill=255)
    return img.crop(img.getbbox())


def font_cells(letter: str, rng: random.Random) -> Cells:
    """An outline-font glyph area-quantized to 8-16 rows with a random stroke weight and width."""
    return _faithful(_font_draw, letter, rng)


def _font_draw(letter: str, rng: random.Random) -> tuple[PILImage, Cells]:
    from PIL import ImageFilter

    img = _outline(rng.choice(require_fonts(FONT_FILES)), letter)
    height = rng.randint(FONT_MIN_ROWS, GRID_HEIGHT)
    weight = rng.uniform(0.8, 1.6)
    if weight > 1.0:
        size = int(round((weight - 1.0) * img.height / height * 0.6)) * 2 + 1
        if size >= 3:
            img = img.filter(ImageFilter.MaxFilter(size))
    width = max(2, min(GRID_WIDTH, round(height * img.width / img.height * rng.uniform(0.7, 1.15))))
    return img, _coverage(img, width, height, max(0.15, min(0.6, rng.uniform(0.33, 0.5) / weight)))


def _fine(img: PILImage, cells: Cells) -> Cells:
    """The drawing a grid was quantized from, as ink/background at 4x the grid's resolution."""
    return _box_ink(img, len(cells[0]) * 4, len(cells) * 4, 128)


def _drawing_counters(img: PILImage, cells: Cells) -> int:
    """Counters of the drawing a grid was quantized from, at 4x the grid's resolution."""
    return _fine_counters(_fine(img, cells))


def _fine_counters(fine: Cells) -> int:
    """Counters of a 4x drawing; one smaller than half a cell (a joint's pinhole) does not count."""
    return counters(fine, min_area=8)


def ink_kept(img: PILImage, cells: Cells) -> float:
    """Share of the drawing's ink (at 4x the grid's resolution) on an inked cell or one of its eight
    neighbours. Near 1 for a faithful grid; a stroke the quantization dropped lies further away."""
    return _ink_kept(_fine(img, cells), cells)


def _ink_kept(fine: Cells, cells: Cells) -> float:
    height, width = len(cells), len(cells[0])
    near = [
        [
            any(
                cells[rr][cc]
                for rr in range(max(0, r - 1), min(height, r + 2))
                for cc in range(max(0, c - 1), min(width, c + 2))
            )
            for c in range(width)
        ]
        for r in range(height)
    ]
    ink = [(r // 4, c // 4) for r, row in enumerate(fine) for c, v in enumerate(row) if v]
    return sum(near[r][c] for r, c in ink) / max(1, len(ink))


def faithful(img: PILImage, cells: Cells) -> bool:
    """Whether a grid shows the drawing it came from: the same counters, and no stroke dropped."""
    fine = _fine(img, cells)  # one resize of the drawing serves both checks
    return counters(cells) == _fine_counters(fine) and _ink_kept(fine, cells) >= MIN_INK_KEPT


def _faithful(
    draw: Callable[[str, random.Random], tuple[PILImage, Cells]], letter: str, rng: random.Random
) -> Cells:
    """Draw until the block grid shows its drawing (at most ``FAITHFUL_TRIES`` draws).

    Quantizing a glyph to a few rows can fill a counter (a bold ``A``, ``B`` or ``e``-like ``S`` becomes
    a blob), close an opening into one (``C`` -> ``O``, ``E`` -> ``B``) or drop a thin stroke (a serif
    ``U`` without its hairline stem, a ``T`` without its bar): the level then shows another letter or
    none, and its label would be wrong. Such draws are replaced by the next draw of the same seeded
    generator, so the family stays deterministic.
    """
    cells: Cells = []
    for _ in range(FAITHFUL_TRIES):
        img, cells = draw(letter, rng)
        if faithful(img, cells):
            return cells
    return cells


@lru_cache(maxsize=64)
def _pixel_glyph(path: str, size: int, letter: str) -> tuple[tuple[int, ...], ...]:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(path, size)
    img = Image.new("L", (size * 2, size * 2), 0)
    ImageDraw.Draw(img).text((size // 2, size // 2), letter, font=font, fill=255)
    img = img.crop(img.getbbox())
    data, width = img.tobytes(), img.width  # mode "L": one byte per pixel, row by row
    rows = (data[r * width : (r + 1) * width] for r in range(img.height))
    return tuple(tuple(1 if v > 127 else 0 for v in row) for row in rows)


def pixel_cells(letter: str, rng: random.Random) -> Cells:
    """A Terminus bitmap glyph, scaled by whole cells (1-3 across, 1-2 up) and maybe thickened."""
    options = [(f, s) for f in require_fonts(PIXEL_FONTS) for s in PIXEL_SIZES]
    rng.shuffle(options)
    for path, size in options:
        glyph = [list(row) for row in _pixel_glyph(path, size, letter)]
        dx = 1 if rng.random() < 0.3 else 0
        dy = 1 if rng.random() < 0.2 else 0
        scales = [
            (sx, sy)
            for sx in (1, 2, 3)
            for sy in (1, 2)
            if (len(glyph[0]) + dx) * sx <= GRID_WIDTH and (len(glyph) + dy) * sy <= GRID_HEIGHT
        ]
        if not scales:
            continue
        sx, sy = rng.choice(scales)
        cells = _dilate(glyph, dx, dy)
        return [[v for v in row for _ in range(sx)] for row in cells for _ in range(sy)]
    raise RuntimeError(f"pixel family: no Terminus glyph of {letter!r} fits the grid")


CELL_FAMILIES: dict[str, Callable[[str, random.Random], Cells]] = {
    "font": font_cells,
    "pixel": pixel_cells,
    "stroke": stroke_cells,
    "block": block_cells,
    "dpi": dpi.dpi_cells,
}


def place(cells: Cells, rng: random.Random) -> Grid:
    """Stand the glyph bitmap on the ground at a random column of the 20x16 grid."""
    cells = trim(cells)
    height, width = len(cells), len(cells[0])
    left = rng.randint(0, GRID_WIDTH - width)
    grid = [[0] * GRID_WIDTH for _ in range(GRID_HEIGHT)]
    for r, row in enumerate(cells):
        for c, v in enumerate(row):
            grid[height - 1 - r][left + c] = v
    return tuple(tuple(row) for row in grid)


def program_for_grid(grid: Grid, rng: random.Random, *, balance: bool) -> str:
    """Blocks for ``grid`` with a random b11/b31/b13 mix (block-type substitution)."""
    blocks = plan_blocks(
        grid,
        rng=random.Random(rng.getrandbits(64)),
        b31_preference=rng.uniform(-0.4, 0.5),
        b13_probability=rng.uniform(0.0, 0.9),
        balance=balance,
    )
    return blocks_to_program(blocks)


#: Letters whose build :func:`built_shows` checks (the only ones the drop planner can turn into an O).
BUILT_CHECKED = ("C", "D")


def built_shows(letter: str, grid: Grid, built: Grid) -> bool:
    """Whether the built level still shows ``letter``, as far as the drop planner can take it away.

    The planner adds cells so a letter stands. Two letters can lose what tells them from an ``O``:

    * a ``D`` its cut right corners: the bottom one is filled under the right leg (a leg cannot hang
      over an empty cell), the top one by a ``b31`` laid on the leg to carry the top bar's end. With
      both filled the level is a box (13 of 300 ``block`` and one of 300 ``stroke`` ``D``s were; the
      ``block`` ones were read as ``O`` every time); with one left open it still shows a ``D``.
    * a ``C`` its opening: the top bar's end is carried by a pillar, and one standing at its very
      end, down to the bottom bar, closes the mouth (about one ``C`` in seven in every family).

    Such a level shows an ``O`` under the label of another letter. No other letter has its identity
    in cells the planner adds.
    """
    if letter not in BUILT_CHECKED:
        return True
    rows = [r for r, row in enumerate(grid) if any(row)]
    right = max(c for row in grid for c, v in enumerate(row) if v)
    if letter == "C":
        return any(not built[r][right] for r in range(rows[0] + 1, rows[-1]))
    corners = [(r, right) for r in (rows[0], rows[-1]) if not grid[r][right]]
    return not corners or any(not built[r][c] for r, c in corners)


def family_level(family: str, letter: str, seed: int) -> tuple[Grid, str]:
    """(target grid, ``drop_block`` program) of ``letter`` from ``family`` for ``seed``; deterministic.

    A level whose build no longer shows its letter (:func:`built_shows`) is drawn again by the next
    draws of the same seeded generator (at most ``FAITHFUL_TRIES`` draws), so the family stays
    deterministic and every other level is unchanged.
    """
    if family == "glyph":
        return letter_target(letter, seed), letter_program(letter, seed)
    rng = variant_rng(letter, seed, f"family:{family}")
    for _ in range(FAITHFUL_TRIES):
        grid = place(CELL_FAMILIES[family](letter, rng), rng)
        program = program_for_grid(grid, rng, balance=rng.random() >= 0.2)
        if letter not in BUILT_CHECKED or built_shows(letter, grid, simulate_drops(program)):
            break
    return grid, program


def family_program(family: str, letter: str, seed: int) -> str:
    """Deterministic ``drop_block`` program of ``letter`` from ``family`` for ``seed``."""
    return family_level(family, letter, seed)[1]


def handdrawn() -> list[tuple[str, str, Grid]]:
    """(name, letter, grid) of every hand-drawn letter in the fixture, in file order."""
    data = json.loads(HANDDRAWN.read_text(encoding="utf-8"))
    out = []
    for item in data["letters"]:
        rows: Sequence[str] = item["rows"]
        cells = [[1 if ch == "#" else 0 for ch in row.ljust(max(map(len, rows)), ".")] for row in rows]
        out.append((item["name"], item["letter"], place(cells, random.Random(0))))
    return out


def handdrawn_levels() -> list[tuple[str, str, Grid, str]]:
    """(name, letter, grid, program): each hand-drawn grid built with supports where it needs them."""
    return [
        (name, letter, grid, program_for_grid(grid, random.Random(f"hand:{name}"), balance=True))
        for name, letter, grid in handdrawn()
    ]


def handdrawn_programs() -> list[tuple[str, str, str]]:
    """(name, letter, program) of :func:`handdrawn_levels`."""
    return [(name, letter, program) for name, letter, _, program in handdrawn_levels()]


def corpus_levels(family: str, seeds: Sequence[int]) -> list[tuple[str, int, Grid, str]]:
    """(letter, label index, target grid, program) for every seed x letter of ``family``."""
    return [(c, i, *family_level(family, c, s)) for s in seeds for i, c in enumerate(LETTERS)]
