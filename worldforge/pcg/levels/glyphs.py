"""The one home for "letter -> ``drop_block`` program".

The mock letter generator and the bundled classifier's training data both need levels that look
like a letter *after* the official converter has dropped every block under gravity. This module
does that in two steps:

1. :func:`letter_grid` rasterizes an A-Z glyph (DejaVu fonts, Pillow's default font, or a built-in
   5x7 bitmap so it works without any font file) onto the 20x16 block grid (row 0 = bottom).
2. :func:`worldforge.pcg.levels.drop_plan.grid_to_program` decomposes the grid into blocks in a
   drop order the converter reproduces (supports and balance included); that grid-side half lives
   in :mod:`worldforge.pcg.levels.drop_plan`.

:func:`letter_program` ties both together deterministically for ``(letter, seed, variant)``: it
draws a few glyph variants and keeps the most letter-like buildable one.
:func:`simulate_drops` is an independent re-statement of the drop rule used to check programs.
"""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path
from typing import TypedDict

from PIL import Image, ImageDraw, ImageFilter, ImageFont

from worldforge.core.errors import WorldForgeError
from worldforge.core.seeds import variant_rng
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.levels.drop_plan import (
    GRID_HEIGHT,
    GRID_WIDTH,
    Block,
    Grid,
    blocks_to_program,
    plan_blocks,
)

#: Behaviour version, recorded in every item record and cache key. An opaque id: bump it (any new
#: string) whenever this code's output can change; reference-output tests pin the behaviour. The
#: value is the id the code had when versions were derived from source files, so digests of runs
#: made before the package layout changed still compare equal.
VERSION = "worldforge.pcg.glyphs:5492815dce17444a"


DEJAVU_DIR = Path("/usr/share/fonts/truetype/dejavu")

#: Font keys -> DejaVu file names. Upright faces only: oblique strokes need many supports.
DEJAVU_FONTS: dict[str, str] = {
    "dejavu-sans": "DejaVuSans.ttf",
    "dejavu-sans-bold": "DejaVuSans-Bold.ttf",
    "dejavu-sans-condensed": "DejaVuSansCondensed.ttf",
    "dejavu-sans-condensed-bold": "DejaVuSansCondensed-Bold.ttf",
    "dejavu-sans-mono": "DejaVuSansMono.ttf",
    "dejavu-sans-mono-bold": "DejaVuSansMono-Bold.ttf",
    "dejavu-serif": "DejaVuSerif.ttf",
    "dejavu-serif-bold": "DejaVuSerif-Bold.ttf",
    "dejavu-serif-condensed-bold": "DejaVuSerifCondensed-Bold.ttf",
}
PILLOW_FONT = "pillow-default"
BITMAP_FONT = "bitmap-5x7"

#: Built-in 5x7 capitals (top row first). The fallback when no TrueType font can be loaded.
BITMAP_5X7: dict[str, tuple[str, ...]] = {
    "A": (".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "B": ("####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."),
    "C": (".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."),
    "D": ("####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."),
    "E": ("#####", "#....", "#....", "####.", "#....", "#....", "#####"),
    "F": ("#####", "#....", "#....", "####.", "#....", "#....", "#...."),
    "G": (".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"),
    "H": ("#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "I": ("#####", "..#..", "..#..", "..#..", "..#..", "..#..", "#####"),
    "J": ("..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."),
    "K": ("#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"),
    "L": ("#....", "#....", "#....", "#....", "#....", "#....", "#####"),
    "M": ("#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"),
    "N": ("#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#", "#...#"),
    "O": (".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "P": ("####.", "#...#", "#...#", "####.", "#....", "#....", "#...."),
    "Q": (".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"),
    "R": ("####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"),
    "S": (".####", "#....", "#....", ".###.", "....#", "....#", "####."),
    "T": ("#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."),
    "U": ("#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "V": ("#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."),
    "W": ("#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."),
    "X": ("#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"),
    "Y": ("#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."),
    "Z": ("#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"),
}

_RENDER_SIZE = 160  # px em size for TrueType rasterization before area downsampling


def available_fonts() -> list[str]:
    """Font keys usable on this machine, in a fixed order (the bitmap font is always last)."""
    return [*_dejavu_fonts(DEJAVU_DIR), PILLOW_FONT, BITMAP_FONT]


@lru_cache(maxsize=8)
def _dejavu_fonts(folder: Path) -> tuple[str, ...]:
    """The DejaVu font keys found in ``folder``, looked up once per folder: every glyph candidate
    asks, and nine file checks cost about as much as planning the candidate's first row."""
    return tuple(key for key, name in DEJAVU_FONTS.items() if (folder / name).is_file())


@lru_cache(maxsize=32)
def _load_font(font: str) -> ImageFont.FreeTypeFont | None:

    if font in DEJAVU_FONTS:
        path = DEJAVU_DIR / DEJAVU_FONTS[font]
        if path.is_file():
            return ImageFont.truetype(str(path), _RENDER_SIZE)
        font = PILLOW_FONT  # documented fallback chain: DejaVu -> Pillow default -> bitmap
    if font == PILLOW_FONT:
        try:
            loaded = ImageFont.load_default(size=_RENDER_SIZE)
        except (ImportError, OSError, TypeError, AttributeError):
            return None
        # Without FreeType Pillow returns its tiny fixed bitmap font; use ours instead.
        return loaded if isinstance(loaded, ImageFont.FreeTypeFont) else None
    if font == BITMAP_FONT:
        return None
    raise WorldForgeError(f"font: unknown glyph font {font!r}; expected one of {available_fonts()}.")


def _glyph_image(letter: str, font: str) -> Image.Image:
    """High-resolution greyscale image (ink = 255) of the glyph, cropped to its ink bounding box."""
    return _drawn_glyph(letter, font, _load_font(font))


@lru_cache(maxsize=1024)
def _drawn_glyph(letter: str, font: str, loaded: ImageFont.FreeTypeFont | None) -> Image.Image:
    """:func:`_glyph_image` for the loaded font object ``loaded`` (``None``: the bitmap font).

    Cached: a letter plan draws six candidates, mostly from the same few fonts, and drawing text
    costs more than the rest of rasterizing. The key holds the font object itself, so a font
    loaded again (another folder) draws again. Callers never modify the image (Pillow's
    ``filter`` and ``resize`` return new ones)."""

    if loaded is None:
        rows = BITMAP_5X7[letter]
        cell = 24
        img = Image.new("L", (5 * cell, 7 * cell), 0)
        draw = ImageDraw.Draw(img)
        for r, row in enumerate(rows):
            for c, ch in enumerate(row):
                if ch == "#":
                    draw.rectangle((c * cell, r * cell, (c + 1) * cell - 1, (r + 1) * cell - 1), fill=255)
        return img
    img = Image.new("L", (_RENDER_SIZE * 2, _RENDER_SIZE * 2), 0)
    ImageDraw.Draw(img).text((_RENDER_SIZE // 3, _RENDER_SIZE // 3), letter, font=loaded, fill=255)
    bbox = img.getbbox()
    if bbox is None:  # pragma: no cover - every supported font has A-Z
        raise WorldForgeError(f"font: {font!r} has no glyph for {letter!r}.")
    return img.crop(bbox)


def _dilated(letter: str, font: str, size: int) -> Image.Image:
    """The glyph image under a ``size`` px maximum filter."""
    return _dilated_glyph(letter, font, _load_font(font), size)


@lru_cache(maxsize=1024)
def _dilated_glyph(letter: str, font: str, loaded: ImageFont.FreeTypeFont | None, size: int) -> Image.Image:
    """:func:`_dilated` for the loaded font object ``loaded`` (cached like :func:`_drawn_glyph`)."""
    return _drawn_glyph(letter, font, loaded).filter(ImageFilter.MaxFilter(size))


def letter_grid(
    letter: str,
    *,
    font: str = "dejavu-sans-bold",
    scale: int = 11,
    thickness: float = 1.0,
    width_factor: float = 1.0,
    x_offset: int | None = None,
) -> Grid:
    """Rasterize ``letter`` onto the 20x16 block grid, standing on row 0.

    ``scale`` is the glyph height in rows (3..16). ``thickness`` > 1 makes strokes heavier (the
    high-resolution glyph is dilated and the coverage threshold lowered), < 1 lighter.
    ``width_factor`` stretches the glyph horizontally. ``x_offset`` is the first column (default:
    centred); the converter left-aligns levels anyway, so it only varies the program text.
    """

    letter = letter.upper()
    if len(letter) != 1 or letter not in LETTERS:
        raise WorldForgeError(f"letter: expected one of A-Z, got {letter!r}.")
    if not 3 <= scale <= GRID_HEIGHT:
        raise WorldForgeError(f"scale: glyph height must be 3..{GRID_HEIGHT} rows, got {scale}.")
    if not 0.3 <= thickness <= 3.0:
        raise WorldForgeError(f"thickness: must be within 0.3..3.0, got {thickness}.")
    img = _glyph_image(letter, font)
    if thickness > 1.0:
        # Dilate in proportion to one grid cell so the effect is resolution independent.
        cell_px = img.height / scale
        size = int(round((thickness - 1.0) * cell_px * 0.6)) * 2 + 1
        if size >= 3:
            img = _dilated(letter, font, size)
    aspect = img.width / img.height
    width = max(1, min(GRID_WIDTH, int(round(scale * aspect * width_factor))))
    coverage = img.resize((width, scale), Image.Resampling.BOX)
    threshold = max(0.12, min(0.7, 0.42 / thickness)) * 255
    cells = [[0] * GRID_WIDTH for _ in range(GRID_HEIGHT)]
    left = (GRID_WIDTH - width) // 2 if x_offset is None else x_offset
    if left < 0 or left + width > GRID_WIDTH:
        raise WorldForgeError(f"x_offset: glyph of width {width} does not fit at column {x_offset}.")
    data = coverage.tobytes()  # mode "L": one byte per pixel, row by row
    for r in range(scale):
        for c in range(width):
            if data[r * width + c] >= threshold:
                cells[scale - 1 - r][left + c] = 1
    # The glyph must stand on the ground: drop empty bottom rows (e.g. lost thin serifs).
    while not any(cells[0]) and any(any(row) for row in cells):
        cells.pop(0)
        cells.append([0] * GRID_WIDTH)
    if not any(any(row) for row in cells):
        raise WorldForgeError(f"letter {letter!r}: glyph vanished at scale {scale}, thickness {thickness}.")
    return tuple(tuple(row) for row in cells)


CANDIDATES = 6
"""Glyph variants drawn per ``(letter, seed, variant)``; the one needing the fewest supports wins."""


class GlyphChoice(TypedDict):
    """One candidate's rasterization and decomposition choices (:func:`letter_variant`)."""

    font: str
    scale: int
    thickness: float
    width_factor: float
    b31_preference: float
    b13_probability: float
    offset_fraction: float
    plan_seed: int
    candidate: int


def _candidate(letter: str, seed: int, variant: str, index: int) -> GlyphChoice:
    rng = variant_rng(letter, seed, f"{variant}#{index}")
    fonts = available_fonts()
    font = variant if variant in fonts else fonts[rng.randrange(len(fonts))]
    return {
        "font": font,
        "scale": rng.randint(8, 14),
        "thickness": round(rng.uniform(0.8, 1.35), 2),
        "width_factor": round(rng.uniform(0.65, 1.1), 2),
        "b31_preference": round(rng.uniform(-0.3, 0.4), 2),
        "b13_probability": round(rng.uniform(0.0, 0.9), 2),
        "offset_fraction": round(rng.random(), 3),
        "plan_seed": rng.getrandbits(32),
        "candidate": index,
    }


def _target_for(letter: str, choice: GlyphChoice) -> Grid:
    grid = letter_grid(
        letter,
        font=choice["font"],
        scale=choice["scale"],
        thickness=choice["thickness"],
        width_factor=choice["width_factor"],
        x_offset=0,
    )
    used = [c for row in grid for c, v in enumerate(row) if v]
    left, width = min(used), max(used) - min(used) + 1
    offset = int(choice["offset_fraction"] * (GRID_WIDTH - width + 1))
    return tuple(tuple(([0] * offset + list(row[left:]) + [0] * left)[:GRID_WIDTH]) for row in grid)


#: Enclosed counters of the upright capitals (A, B, D, O, P, Q, R); every other letter has none.
LETTER_HOLES = {"A": 1, "B": 2, "D": 1, "O": 1, "P": 1, "Q": 1, "R": 1}
_HOLE_PENALTY = 0.6


_STRIDE = GRID_WIDTH + 1  # bit r * _STRIDE + c is cell (c, r); the extra column is always 0
_CELLS = sum(((1 << GRID_WIDTH) - 1) << (r * _STRIDE) for r in range(GRID_HEIGHT))
_BORDER = sum(
    1 << (r * _STRIDE + c)
    for r in range(GRID_HEIGHT)
    for c in range(GRID_WIDTH)
    if c in (0, GRID_WIDTH - 1) or r in (0, GRID_HEIGHT - 1)
)


def _flood(seed: int, region: int) -> int:
    """Cells of ``region`` 4-connected to ``seed`` (bit sets): grow by one step until stable. The
    always-empty padding column stops a shift by one from wrapping into the next row."""
    reach = seed & region
    while True:
        grown = (reach | reach << 1 | reach >> 1 | reach << _STRIDE | reach >> _STRIDE) & region
        if grown == reach:
            return reach
        reach = grown


def count_holes(cells: set[tuple[int, int]]) -> int:
    """Empty regions of the grid not connected (4-neighbourhood) to its border: a letter's counters.

    The border counts as outside on every side, ground included: similarity images show blocks
    only, so a gap between two legs standing on the ground is open, not a counter. Grids are bit
    sets here: every candidate of every letter plan counts twice, and a flood fill over Python
    integers is a few dozen big-integer operations instead of one step per cell.
    """
    empty = _CELLS
    for c, r in cells:
        if 0 <= c < GRID_WIDTH and 0 <= r < GRID_HEIGHT:
            empty &= ~(1 << (r * _STRIDE + c))
    inside = empty & ~_flood(empty & _BORDER, empty)
    holes = 0
    while inside:
        inside &= ~_flood(inside & -inside, inside)  # one enclosed region, from its lowest cell
        holes += 1
    return holes


def _grid_cells(grid: Grid) -> set[tuple[int, int]]:
    return {(c, r) for r, row in enumerate(grid) for c, v in enumerate(row) if v}


@lru_cache(maxsize=4096)
def _letter_plan(letter: str, seed: int, variant: str) -> tuple[GlyphChoice, Grid, tuple[Block, ...]]:
    """Draw :data:`CANDIDATES` glyph variants and keep the most letter-like buildable one.

    Supports (pillars, balance cells, bridge overhangs) make a level look less like its letter, and
    so do counters that a heavy stroke fills (an O that becomes a block) or merges. Each candidate
    costs its added-cell ratio plus a penalty per counter the raster gains or loses and per counter
    the built structure loses; the cheapest wins. The choice is a
    pure function of ``(letter, seed, variant)``.
    """
    expected = LETTER_HOLES.get(letter, 0)
    best: tuple[float, GlyphChoice, Grid, tuple[Block, ...]] | None = None
    for index in range(CANDIDATES):
        choice = _candidate(letter, seed, variant, index)
        target = _target_for(letter, choice)
        glyph = _grid_cells(target)
        raster_holes = count_holes(glyph)
        # The cost below is at least the raster's counter penalty (the built level covers every
        # glyph cell, and both terms only add), so a candidate whose penalty alone is no cheaper
        # than the best so far cannot win: it is not planned (each candidate has its own seeds).
        if best is not None and _HOLE_PENALTY * abs(raster_holes - expected) >= best[0]:
            continue
        blocks = plan_blocks(
            target,
            rng=random.Random(choice["plan_seed"]),
            b31_preference=choice["b31_preference"],
            b13_probability=choice["b13_probability"],
        )
        built = {cell for b in blocks for cell in b.cells()}
        cost = (len(built) - len(glyph)) / len(glyph)
        # Counters the raster gains or loses, and counters the built level loses (supports that
        # close an opening are not penalised: the alternative is a filled blob, which reads worse).
        cost += _HOLE_PENALTY * (abs(raster_holes - expected) + max(0, expected - count_holes(built)))
        if best is None or cost < best[0]:
            best = (cost, choice, target, tuple(blocks))
    assert best is not None
    return best[1], best[2], best[3]


def letter_variant(letter: str, seed: int, variant: str = "") -> GlyphChoice:
    """The rasterization and decomposition choices :func:`letter_program` makes for this seed."""
    return _letter_plan(_check_letter(letter), seed, variant)[0].copy()


def letter_target(letter: str, seed: int, variant: str = "") -> Grid:
    """The glyph grid :func:`letter_program` builds for ``(letter, seed, variant)`` (before supports)."""
    return _letter_plan(_check_letter(letter), seed, variant)[1]


def letter_blocks(letter: str, seed: int, variant: str = "") -> list[Block]:
    """The planned blocks of :func:`letter_program`, supports flagged."""
    return list(_letter_plan(_check_letter(letter), seed, variant)[2])


def letter_program(letter: str, seed: int, variant: str = "") -> str:
    """Deterministic letter-like ``drop_block`` program for ``(letter, seed, variant)``.

    Different seeds vary font, scale, stroke thickness, width, horizontal position and block
    choice. ``variant`` salts the choice; a font key (see :func:`available_fonts`) forces that font.
    The simulated drop of the program contains every cell of :func:`letter_target`, and the static
    balance check of :func:`plan_blocks` holds for it.
    """
    return blocks_to_program(letter_blocks(letter, seed, variant))


def _check_letter(letter: str) -> str:
    up = letter.upper() if isinstance(letter, str) else ""
    if len(up) != 1 or up not in LETTERS:
        raise WorldForgeError(f"letter: expected one of A-Z, got {letter!r}.")
    return up


__all__ = [
    "BITMAP_FONT",
    "BITMAP_5X7",
    "DEJAVU_FONTS",
    "LETTER_HOLES",
    "GlyphChoice",
    "PILLOW_FONT",
    "available_fonts",
    "count_holes",
    "CANDIDATES",
    "letter_blocks",
    "letter_grid",
    "letter_program",
    "letter_target",
    "letter_variant",
]
