"""The one home for "letter -> ``drop_block`` program".

The mock letter generator and the bundled classifier's training data both need levels that look
like a letter *after* the official converter has dropped every block under gravity. This module
does that in two steps:

1. :func:`letter_grid` rasterizes an A-Z glyph (DejaVu fonts, Pillow's default font, or a built-in
   5x7 bitmap so it works without any font file) onto the 20x16 block grid (row 0 = bottom).
2. :func:`grid_to_program` decomposes the grid into ``b11``/``b31``/``b13`` blocks and orders them so
   that the converter's heightmap drop rule (blocks never slide under overhangs, section 1.5 of the
   pipeline spec) lands every block exactly where it was planned.  Overhangs get the cheapest
   supports: a ``b31`` is only ever placed with its centre supported or with both ends supported
   (never balanced on one end), ``b11``/``b13`` need the cell directly below; anything else gets a
   pillar of support cells, or a ``b31`` may cover a neighbouring empty cell when that is cheaper.

:func:`letter_program` ties both together deterministically for ``(letter, seed, variant)``.
:func:`simulate_drops` is an independent re-statement of the drop rule used to check programs.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from worldforge.core.errors import WorldForgeError

GRID_WIDTH = 20
GRID_HEIGHT = 16
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
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

Grid = tuple[tuple[int, ...], ...]
"""``grid[row][col]`` with row 0 at the bottom, 16 rows x 20 columns, 1 = occupied (converter layout)."""

_RENDER_SIZE = 160  # px em size for TrueType rasterization before area downsampling


@dataclass(frozen=True)
class Block:
    """One planned block: type token, centre column ``x``, bottom row ``y``, and whether it is support."""

    kind: str
    x: int
    y: int
    support: bool = False

    def cells(self) -> list[tuple[int, int]]:
        """Grid cells ``(col, row)`` the block occupies."""
        if self.kind == "b31":
            return [(self.x - 1, self.y), (self.x, self.y), (self.x + 1, self.y)]
        if self.kind == "b13":
            return [(self.x, self.y), (self.x, self.y + 1), (self.x, self.y + 2)]
        return [(self.x, self.y)]


def available_fonts() -> list[str]:
    """Font keys usable on this machine, in a fixed order (the bitmap font is always last)."""
    keys = [key for key, name in DEJAVU_FONTS.items() if (DEJAVU_DIR / name).is_file()]
    keys.append(PILLOW_FONT)
    keys.append(BITMAP_FONT)
    return keys


@lru_cache(maxsize=32)
def _load_font(font: str) -> Any:
    from PIL import ImageFont

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


def _glyph_image(letter: str, font: str) -> Any:
    """High-resolution greyscale image (ink = 255) of the glyph, cropped to its ink bounding box."""
    from PIL import Image, ImageDraw

    loaded = _load_font(font)
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
    from PIL import Image, ImageFilter

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
            img = img.filter(ImageFilter.MaxFilter(size))
    aspect = img.width / img.height
    width = max(1, min(GRID_WIDTH, int(round(scale * aspect * width_factor))))
    coverage = img.resize((width, scale), Image.Resampling.BOX)
    threshold = max(0.12, min(0.7, 0.42 / thickness)) * 255
    cells = [[0] * GRID_WIDTH for _ in range(GRID_HEIGHT)]
    left = (GRID_WIDTH - width) // 2 if x_offset is None else x_offset
    if left < 0 or left + width > GRID_WIDTH:
        raise WorldForgeError(f"x_offset: glyph of width {width} does not fit at column {x_offset}.")
    data = coverage.load()
    for r in range(scale):
        for c in range(width):
            if data[c, r] >= threshold:
                cells[scale - 1 - r][left + c] = 1
    # The glyph must stand on the ground: drop empty bottom rows (e.g. lost thin serifs).
    while not any(cells[0]) and any(any(row) for row in cells):
        cells.pop(0)
        cells.append([0] * GRID_WIDTH)
    if not any(any(row) for row in cells):
        raise WorldForgeError(f"letter {letter!r}: glyph vanished at scale {scale}, thickness {thickness}.")
    return tuple(tuple(row) for row in cells)


def grid_to_text(grid: Grid) -> str:
    """Top row first, ``#`` occupied, ``.`` empty: a readable picture for tests and debugging."""
    return "\n".join("".join("#" if v else "." for v in row) for row in reversed(grid))


def grid_from_text(text: str) -> Grid:
    """Inverse of :func:`grid_to_text`; shorter pictures are padded (bottom-left anchored)."""
    lines = [line for line in text.strip("\n").splitlines()]
    if len(lines) > GRID_HEIGHT or any(len(line) > GRID_WIDTH for line in lines):
        raise WorldForgeError(f"grid text: larger than {GRID_WIDTH}x{GRID_HEIGHT}.")
    cells = [[0] * GRID_WIDTH for _ in range(GRID_HEIGHT)]
    for r, line in enumerate(reversed(lines)):
        for c, ch in enumerate(line):
            if ch not in "#.":
                raise WorldForgeError(f"grid text: unexpected character {ch!r} (use '#' and '.').")
            cells[r][c] = 1 if ch == "#" else 0
    return tuple(tuple(row) for row in cells)


def _validate_grid(grid: Sequence[Sequence[int]]) -> list[list[int]]:
    if len(grid) != GRID_HEIGHT or any(len(row) != GRID_WIDTH for row in grid):
        raise WorldForgeError(f"grid: expected {GRID_HEIGHT} rows x {GRID_WIDTH} columns.")
    return [[1 if v else 0 for v in row] for row in grid]


#: Relative masses (collider areas: SquareTiny 0.22 x 0.21, RectSmall 0.70 x 0.22).
_MASS = {"b11": 1.0, "b31": 3.33, "b13": 3.33}
_BALANCE_MARGIN = 0.08  # cells: the combined centre of mass must sit this far inside the support


def plan_blocks(
    grid: Sequence[Sequence[int]],
    *,
    rng: random.Random,
    b31_preference: float | None = None,
    b13_probability: float | None = None,
    balance: bool = True,
) -> list[Block]:
    """Decompose ``grid`` into blocks in a drop order that reproduces it (plus supports).

    Rows are solved bottom-up with a small dynamic program per row that covers every target cell
    with ``b11`` or ``b31`` at the lowest cost, where cost = support cells added + extra cells a
    ``b31`` covers outside the glyph (+ a random block-choice preference). Stacks of three ``b11``
    may then merge into a ``b13``. Blocks are returned sorted by bottom row, which is a valid drop
    order: every block lands on the topmost occupied cell below it.

    With ``balance`` a static check follows: top-down, every block carries its own mass plus what
    rests on it, and the combined centre of mass must lie over its contact with the blocks below
    (leaning arms of V, Y, X... topple otherwise). Where it does not, a support cell is added on the
    heavy side and the grid is planned again, until the structure balances.
    """
    target = _validate_grid(grid)
    pref = rng.uniform(-0.3, 0.3) if b31_preference is None else b31_preference
    p13 = rng.uniform(0.0, 0.9) if b13_probability is None else b13_probability
    seed = rng.getrandbits(64)
    forced: set[tuple[int, int]] = set()
    blocks = _plan_once(target, random.Random(seed), pref, p13, forced)
    for _ in range(12 if balance else 0):
        extra = _balance_supports(blocks) - forced
        if not extra:
            break
        forced |= extra
        blocks = _plan_once(target, random.Random(seed), pref, p13, forced)
    return blocks


def _balance_supports(blocks: Sequence[Block]) -> set[tuple[int, int]]:
    """Cells ``(col, row)`` to fill so that every block's load balances over its supports."""
    owner: dict[tuple[int, int], int] = {}
    for i, b in enumerate(blocks):
        for cell in b.cells():
            owner[cell] = i
    loads: list[list[tuple[float, float, int]]] = [[] for _ in blocks]  # (mass, x, from block)
    need: set[tuple[int, int]] = set()
    for i in sorted(range(len(blocks)), key=lambda k: -blocks[k].y):
        b = blocks[i]
        cols = sorted({c for c, r in b.cells() if r == b.y})
        mass = _MASS[b.kind] + sum(m for m, _, _ in loads[i])
        com = (_MASS[b.kind] * (b.x + 0.5) + sum(m * x for m, x, _ in loads[i])) / mass
        if b.y == 0:
            continue
        contacts = [c for c in cols if (c, b.y - 1) in owner]
        lo, hi = min(contacts), max(contacts) + 1
        if com < lo + _BALANCE_MARGIN or com > hi - _BALANCE_MARGIN:
            left = com < lo + _BALANCE_MARGIN
            free = [c for c in cols if (c < lo if left else c >= hi)]
            if free:
                col = min(free) if left else max(free)
                need.add((col, b.y - 1))
            elif loads[i]:
                # The overhang comes from above: support the outermost block resting on this one.
                _, _, j = min(loads[i], key=lambda t: t[1]) if left else max(loads[i], key=lambda t: t[1])
                top_block = blocks[j]
                tcols = [c for c, r in top_block.cells() if r == top_block.y]
                col = min(tcols) if left else max(tcols)
                if (col, top_block.y - 1) not in owner:
                    need.add((col, top_block.y - 1))
            continue
        x1, x2 = lo + 0.5, hi - 0.5
        left_owner, right_owner = owner[(lo, b.y - 1)], owner[(hi - 1, b.y - 1)]
        if com <= x1 or left_owner == right_owner:
            shares, supporters = [(mass, com)], [left_owner if com <= x1 else right_owner]
        elif com >= x2:
            shares, supporters = [(mass, com)], [right_owner]
        else:  # lever rule between the outermost contact cells
            f2 = mass * (com - x1) / (x2 - x1)
            shares, supporters = [(mass - f2, x1), (f2, x2)], [left_owner, right_owner]
        for (m, x), j in zip(shares, supporters, strict=True):
            loads[j].append((m, x, i))
    return need


def _plan_once(
    target: list[list[int]], rng: random.Random, pref: float, p13: float, forced: set[tuple[int, int]]
) -> list[Block]:
    target = [row[:] for row in target]
    for c, r in forced:
        target[r][c] = 1
    occupied = [[0] * GRID_WIDTH for _ in range(GRID_HEIGHT)]
    top = [-1] * GRID_WIDTH  # highest occupied row per column so far
    # One-row lookahead: an empty cell under a glyph cell at the edge of a run of its own row is
    # cheap for a b31 to cover, because it then supports the overhang above without a pillar (a gap
    # with glyph cells on both sides is left open: a b31 can bridge it on both ends).
    wanted = [
        [
            y + 1 < GRID_HEIGHT
            and not target[y][c]
            and bool(target[y + 1][c])
            and sum(target[y][n] for n in (c - 1, c + 1) if 0 <= n < GRID_WIDTH) == 1
            for c in range(GRID_WIDTH)
        ]
        for y in range(GRID_HEIGHT)
    ]
    blocks: list[Block] = []
    for y in range(GRID_HEIGHT):
        row_target = target[y]
        if not any(row_target):
            continue

        def support_cost(c: int, y: int = y) -> int:
            return 0 if y == 0 else y - 1 - top[c]

        noise = [rng.uniform(0.0, 0.05) for _ in range(GRID_WIDTH)]
        inf = float("inf")
        best: list[float] = [inf] * (GRID_WIDTH + 1)
        choice: list[tuple[str, int, tuple[int, ...]] | None] = [None] * (GRID_WIDTH + 1)
        best[GRID_WIDTH] = 0.0
        for i in range(GRID_WIDTH - 1, -1, -1):
            if not row_target[i] and best[i + 1] < best[i]:
                best[i], choice[i] = best[i + 1], ("skip", i, ())
            if row_target[i]:
                cost = support_cost(i) + 0.5 + noise[i] + best[i + 1]
                if cost < best[i]:
                    best[i], choice[i] = cost, ("b11", i, (i,) if support_cost(i) else ())
            if i + 2 < GRID_WIDTH and any(row_target[i : i + 3]):
                extra = sum(
                    0.3 - 0.8 * min(y - top[c], 3) if wanted[y][c] else 1.6
                    for c in range(i, i + 3)
                    if not row_target[c]
                )
                centre = support_cost(i + 1)
                ends = support_cost(i) + support_cost(i + 2)
                pillars: tuple[int, ...] = ()
                if centre and ends:
                    pillars = (i + 1,) if centre <= ends else (i, i + 2)
                support = 0 if not centre or not ends else min(centre, ends)
                cost = support + extra + 0.5 - pref + noise[i + 1] + best[i + 3]
                if cost < best[i]:
                    best[i], choice[i] = cost, ("b31", i + 1, tuple(c for c in pillars if support_cost(c)))
        i = 0
        placed: list[Block] = []
        while i < GRID_WIDTH:
            step = choice[i]
            if step is None:  # pragma: no cover - a cover always exists
                raise WorldForgeError(f"grid: row {y} cannot be decomposed.")
            kind, x, pillars = step
            for c in pillars:
                for yy in range(top[c] + 1, y):
                    blocks.append(Block("b11", c, yy, support=True))
                    occupied[yy][c] = 1
                top[c] = max(top[c], y - 1)
            if kind == "skip":
                i += 1
                continue
            block = Block(kind, x, y)
            placed.append(block)
            i += 3 if kind == "b31" else 1
        for block in placed:
            for c, r in block.cells():
                occupied[r][c] = 1
                top[c] = max(top[c], r)
        blocks.extend(placed)
    return _merge_b13(blocks, rng, p13)


def _merge_b13(blocks: list[Block], rng: random.Random, probability: float) -> list[Block]:
    """Merge vertical runs of three ``b11`` into one ``b13`` (same cells, same support)."""
    singles = {(b.x, b.y): b for b in blocks if b.kind == "b11"}
    merged: list[Block] = [b for b in blocks if b.kind != "b11"]
    used: set[tuple[int, int]] = set()
    for x, y in sorted(singles, key=lambda xy: (xy[0], xy[1])):
        if (x, y) in used:
            continue
        run = [(x, y + k) for k in range(3)]
        if all(p in singles and p not in used for p in run) and y <= GRID_HEIGHT - 3:
            if rng.random() < probability:
                used.update(run)
                merged.append(Block("b13", x, y, support=any(singles[p].support for p in run)))
                continue
        used.add((x, y))
        merged.append(singles[(x, y)])
    merged.sort(key=lambda b: (b.y, b.x))
    return merged


def blocks_to_program(blocks: Sequence[Block]) -> str:
    """Program text, one ``drop_block('<type>', <x>)`` line per block, LF-terminated."""
    return "".join(f"drop_block('{b.kind}', {b.x})\n" for b in blocks)


def grid_to_program(grid: Sequence[Sequence[int]], *, rng: random.Random, **options: Any) -> str:
    """Drop program whose simulated result contains every occupied cell of ``grid``."""
    return blocks_to_program(plan_blocks(grid, rng=rng, **options))


def simulate_drops(program: str) -> Grid:
    """Heightmap drop of a ``drop_block`` program (converter rule, without left alignment).

    An independent restatement used to check :func:`grid_to_program`; it accepts only the exact
    line format this module writes and raises :class:`WorldForgeError` on boundary violations.
    """
    cells = [[0] * GRID_WIDTH for _ in range(GRID_HEIGHT)]
    top = [-1] * GRID_WIDTH
    for number, line in enumerate(program.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            head, tail = line.split(",", 1)
            kind = head.split("(", 1)[1].strip().strip("'\"").lower()
            x = int(tail.split(")", 1)[0].strip())
        except (IndexError, ValueError) as exc:
            raise WorldForgeError(f"program line {number}: cannot parse {line!r}.") from exc
        width, height = {"b11": (1, 1), "b31": (3, 1), "b13": (1, 3)}.get(kind, (0, 0))
        if not width:
            raise WorldForgeError(f"program line {number}: BlockType does not exist.")
        span = range(x - (width - 1) // 2, x + (width - 1) // 2 + 1)
        if not 0 <= x < GRID_WIDTH:
            raise WorldForgeError(f"program line {number}: Height boundary is intruded.")
        if span.start < 0 or span.stop > GRID_WIDTH:
            raise WorldForgeError(f"program line {number}: Width boundary is intruded.")
        y = max(top[c] for c in span) + 1
        if y + height > GRID_HEIGHT:
            raise WorldForgeError(f"program line {number}: Height boundary is intruded.")
        for c in span:
            for r in range(y, y + height):
                cells[r][c] = 1
            top[c] = y + height - 1
    return tuple(tuple(row) for row in cells)


def variant_rng(letter: str, seed: int, variant: str = "") -> random.Random:
    """A ``random.Random`` seeded from a digest of ``(letter, seed, variant)`` (platform stable)."""
    material = f"worldforge.pcg.glyphs|{letter}|{seed}|{variant}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(material).digest()[:8], "big"))


CANDIDATES = 6
"""Glyph variants drawn per ``(letter, seed, variant)``; the one needing the fewest supports wins."""


def _candidate(letter: str, seed: int, variant: str, index: int) -> dict[str, Any]:
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


def _target_for(letter: str, choice: dict[str, Any]) -> Grid:
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


def count_holes(cells: set[tuple[int, int]]) -> int:
    """Empty regions of the grid not connected (4-neighbourhood) to its border: a letter's counters.

    The border counts as outside on every side, ground included: similarity images show blocks
    only, so a gap between two legs standing on the ground is open, not a counter.
    """
    empty = {(c, r) for c in range(GRID_WIDTH) for r in range(GRID_HEIGHT)} - cells
    seen: set[tuple[int, int]] = set()
    holes = 0
    for start in sorted(empty):
        if start in seen:
            continue
        stack, region, outside = [start], [], False
        seen.add(start)
        while stack:
            c, r = stack.pop()
            region.append((c, r))
            if c in (0, GRID_WIDTH - 1) or r in (0, GRID_HEIGHT - 1):
                outside = True
            for n in ((c + 1, r), (c - 1, r), (c, r + 1), (c, r - 1)):
                if n in empty and n not in seen:
                    seen.add(n)
                    stack.append(n)
        holes += not outside
    return holes


def _grid_cells(grid: Grid) -> set[tuple[int, int]]:
    return {(c, r) for r, row in enumerate(grid) for c, v in enumerate(row) if v}


@lru_cache(maxsize=4096)
def _letter_plan(letter: str, seed: int, variant: str) -> tuple[dict[str, Any], Grid, tuple[Block, ...]]:
    """Draw :data:`CANDIDATES` glyph variants and keep the most letter-like buildable one.

    Supports (pillars, balance cells, bridge overhangs) make a level look less like its letter, and
    so do counters that a heavy stroke fills (an O that becomes a block) or merges. Each candidate
    costs its added-cell ratio plus a penalty per counter the raster gains or loses and per counter
    the built structure loses; the cheapest wins. The choice is a
    pure function of ``(letter, seed, variant)``.
    """
    expected = LETTER_HOLES.get(letter, 0)
    best: tuple[float, dict[str, Any], Grid, tuple[Block, ...]] | None = None
    for index in range(CANDIDATES):
        choice = _candidate(letter, seed, variant, index)
        target = _target_for(letter, choice)
        blocks = plan_blocks(
            target,
            rng=random.Random(choice["plan_seed"]),
            b31_preference=choice["b31_preference"],
            b13_probability=choice["b13_probability"],
        )
        glyph = _grid_cells(target)
        built = {cell for b in blocks for cell in b.cells()}
        cost = (len(built) - len(glyph)) / len(glyph)
        # Counters the raster gains or loses, and counters the built level loses (supports that
        # close an opening are not penalised: the alternative is a filled blob, which reads worse).
        cost += _HOLE_PENALTY * (abs(count_holes(glyph) - expected) + max(0, expected - count_holes(built)))
        if best is None or cost < best[0]:
            best = (cost, choice, target, tuple(blocks))
    assert best is not None
    return best[1], best[2], best[3]


def letter_variant(letter: str, seed: int, variant: str = "") -> dict[str, Any]:
    """The rasterization and decomposition choices :func:`letter_program` makes for this seed."""
    return dict(_letter_plan(_check_letter(letter), seed, variant)[0])


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
    "Block",
    "DEJAVU_FONTS",
    "GRID_HEIGHT",
    "GRID_WIDTH",
    "Grid",
    "LETTERS",
    "LETTER_HOLES",
    "PILLOW_FONT",
    "available_fonts",
    "blocks_to_program",
    "count_holes",
    "grid_from_text",
    "grid_to_program",
    "grid_to_text",
    "CANDIDATES",
    "letter_blocks",
    "letter_grid",
    "letter_program",
    "letter_target",
    "letter_variant",
    "plan_blocks",
    "simulate_drops",
    "variant_rng",
]
