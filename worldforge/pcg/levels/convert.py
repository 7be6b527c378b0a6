"""``drop_block`` program -> Science Birds level XML, byte-identical to the official converter.

The official converter (npm ``chatgpt4pcg`` 1.4.1) drops blocks on a 20x16 occupancy grid with a
heightmap rule, shifts the structure to column 0, maps cells to Unity units with exact decimals
(bignumber.js) and writes a fixed XML template. We reproduce it with :mod:`decimal` so every
coordinate prints the same digits (``2.12005``, ``17.34656``) and the file is byte for byte equal;
the stability and image stages, and any digest over the XML, depend on that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from worldforge.core.errors import StageError

#: Behaviour version, recorded in every item record and cache key. An opaque id: bump it (any new
#: string) whenever this code's output can change; reference-output tests pin the behaviour. The
#: value is the id the code had when versions were derived from source files, so digests of runs
#: made before the package layout changed still compare equal.
STAGE_VERSION = "worldforge.pcg.convert:a11ae647ad424743"


GRID_WIDTH = 20
GRID_HEIGHT = 16
CELL = Decimal("0.2401")
LEVEL_WIDTH_IN_UNITY = Decimal(18)
START_X = Decimal(2)
START_Y = Decimal("-3.5")
CAMERA_ASPECT_RATIO = Decimal("1.6")
MAX_ZOOM_LEVEL = Decimal(5)
MIN_CAMERA = Decimal(17)
PREFIX = "drop_block("

ERR_BLOCK_TYPE = "BlockType does not exist."
ERR_WIDTH = "Width boundary is intruded."
ERR_HEIGHT = "Height boundary is intruded."


@dataclass(frozen=True)
class BlockSpec:
    """A ``drop_block`` token: grid footprint and the Science Birds prefab it becomes."""

    token: str
    width: int
    height: int
    sb_type: str
    rotation: int


BLOCK_SPECS: dict[str, BlockSpec] = {
    "B31": BlockSpec("b31", 3, 1, "RectSmall", 0),
    "B13": BlockSpec("b13", 1, 3, "RectSmall", 90),
    "B11": BlockSpec("b11", 1, 1, "SquareTiny", 0),
}


@dataclass(frozen=True)
class PlacedBlock:
    """A block after the drop and the left shift: center column ``x``, bottom row ``y``."""

    spec: BlockSpec
    x: int
    y: int

    @property
    def unity_x(self) -> Decimal:
        w = self.spec.width
        return self.x * CELL + w * CELL / 2 + START_X - (CELL if w > 1 else 0)

    @property
    def unity_y(self) -> Decimal:
        return self.y * CELL + self.spec.height * CELL / 2 + START_Y


@dataclass(frozen=True)
class Placement:
    """Outcome of dropping every block: the placed blocks and the final (shifted) grid."""

    blocks: tuple[PlacedBlock, ...]
    grid: tuple[tuple[int, ...], ...]  # grid[row][col], row 0 = bottom


def fmt(value: Decimal) -> str:
    """bignumber.js ``toFixed()``: plain decimal, no exponent, no trailing zeros."""
    text = format(value.normalize(), "f")
    if text in ("-0", "-0.0"):
        return "0"
    return text


def _js_substring(text: str, start: int, end: int) -> str:
    """JavaScript ``String.prototype.substring`` (clamping and argument swap)."""
    n = len(text)
    a = min(max(start, 0), n)
    b = min(max(end, 0), n)
    if a > b:
        a, b = b, a
    return text[a:b]


def _js_parse_int(text: str) -> int | None:
    """JavaScript ``parseInt(text, 10)``; ``None`` stands for NaN."""
    s = text.lstrip(" \t\n\r\v\f\u00a0\ufeff")
    sign = 1
    if s[:1] in "+-" and s:
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    digits = ""
    for ch in s:
        if "0" <= ch <= "9":
            digits += ch
        else:
            break
    return sign * int(digits) if digits else None


def parse_program(program: str) -> list[tuple[BlockSpec, int | None]]:
    """Parse program lines as the converter does; ``None`` slot = NaN. Raises the BlockType error."""
    calls: list[tuple[BlockSpec, int | None]] = []
    for line in program.lower().split("\n"):
        if not line.startswith(PREFIX):
            continue
        comma = line.find(",")
        token = _js_substring(line, len(PREFIX) + 1, comma - 1).upper()
        spec = BLOCK_SPECS.get(token)
        if spec is None:
            raise StageError(ERR_BLOCK_TYPE)
        rest = line[comma + 1 :]
        paren = rest.find(")")
        slot_text = (rest[:paren] if paren >= 0 else rest).strip()
        calls.append((spec, _js_parse_int(slot_text)))
    return calls


def place_blocks(program: str) -> Placement:
    """Run the drop algorithm (heightmap rule, official errors, left shift)."""
    grid = [[0] * GRID_WIDTH for _ in range(GRID_HEIGHT)]
    placed: list[tuple[BlockSpec, int, int]] = []
    top = GRID_HEIGHT - 1
    for spec, s in parse_program(program):
        if s is None or not 0 <= s < GRID_WIDTH or grid[top][s] != 0:
            raise StageError(ERR_HEIGHT)
        half = (spec.width - 1) // 2
        y = top
        for row in range(top, -1, -1):
            if grid[row][s]:
                break
            blocked = False
            for j in range(1, half + 1):
                if s - j < 0 or s + j > GRID_WIDTH - 1:
                    raise StageError(ERR_WIDTH)
                if grid[row][s - j] or grid[row][s + j]:
                    blocked = True
            if blocked:
                break
            y = row
        grid[y][s] = 1
        for j in range(1, half + 1):
            grid[y][s - j] = 1
            grid[y][s + j] = 1
        for j in range(1, spec.height):
            if y + j > top:
                raise StageError(ERR_HEIGHT)
            grid[y + j][s] = 1
        placed.append((spec, s, y))
    occupied_cols = [c for c in range(GRID_WIDTH) if any(grid[r][c] for r in range(GRID_HEIGHT))]
    shift = occupied_cols[0] if occupied_cols else GRID_WIDTH
    shifted = tuple(tuple(row[shift:] + [0] * shift) for row in grid)
    blocks = tuple(PlacedBlock(spec, x - shift, y) for spec, x, y in placed)
    return Placement(blocks=blocks, grid=shifted)


def camera_and_width(grid: tuple[tuple[int, ...], ...]) -> tuple[Decimal, int]:
    """Camera ``minWidth`` M and ``Level width`` from the official formulas."""
    widest = max(sum(row) for row in grid)
    level_width = START_X + widest * CELL
    rows = [r for r in range(GRID_HEIGHT) if any(grid[r])]
    highest = rows[-1] if rows else 0
    level_height = -START_Y + (highest + 1) * CELL
    m = max(2 * max(level_height * CAMERA_ASPECT_RATIO, level_width), MIN_CAMERA)
    width_attr = math.floor(level_width / LEVEL_WIDTH_IN_UNITY) + 3
    return m, width_attr


def placement_to_xml(placement: Placement) -> str:
    """Write the official XML template (UTF-16 declaration, LF, no final newline)."""
    m, width_attr = camera_and_width(placement.grid)
    lines = [
        '<?xml version="1.0" encoding="utf-16"?>',
        f'<Level width="{width_attr}">',
        f'  <Camera x="2" y="0" minWidth="{fmt(m)}" maxWidth="{fmt(m + MAX_ZOOM_LEVEL)}" />',
        "  <Birds>",
        '    <Bird type="BirdRed" />',
        "  </Birds>",
        '  <Slingshot x="-9" y="-2.5" />',
        "  <GameObjects>",
    ]
    for b in placement.blocks:
        lines.append(
            f'    <Block type="{b.spec.sb_type}" material="wood" x="{fmt(b.unity_x)}" '
            f'y="{fmt(b.unity_y)}" rotation="{b.spec.rotation}" />'
        )
    lines += ["  </GameObjects>", "</Level>"]
    return "\n".join(lines)


def convert(program: str) -> str:
    """Program text -> level XML text exactly as the official converter writes it.

    Raises :class:`~worldforge.core.errors.StageError` with ``BlockType does not exist.``,
    ``Width boundary is intruded.`` or ``Height boundary is intruded.``.
    """
    return placement_to_xml(place_blocks(program))


__all__ = [
    "BLOCK_SPECS",
    "ERR_BLOCK_TYPE",
    "ERR_HEIGHT",
    "ERR_WIDTH",
    "BlockSpec",
    "PlacedBlock",
    "Placement",
    "convert",
    "fmt",
    "parse_program",
    "place_blocks",
    "placement_to_xml",
]
