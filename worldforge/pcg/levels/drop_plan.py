"""The one home for "block grid -> ``drop_block`` program" (and back).

A level on the converter's 20x16 block grid (row 0 = bottom) is built by dropping blocks; the
official converter's heightmap rule lets every block fall onto the topmost occupied cell below it
and never slides it under an overhang (section 1.5 of the pipeline spec). This module is the grid
side of that contract, independent of where a grid comes from (:mod:`worldforge.pcg.levels.glyphs`
rasterizes letters onto it):

* :func:`plan_blocks` decomposes a grid into ``b11``/``b31``/``b13`` blocks and orders them so that
  the drop rule lands every block exactly where it was planned. Overhangs get the cheapest
  supports: a ``b31`` is only ever placed with its centre supported or with both ends supported
  (never balanced on one end), ``b11``/``b13`` need the cell directly below; anything else gets a
  pillar of support cells, or a ``b31`` may cover a neighbouring empty cell when that is cheaper.
  :func:`balance_supports` is the static check that adds cells until the structure balances.
* :func:`simulate_drops` is an independent re-statement of the drop rule used to check programs.
* :func:`grid_to_text` / :func:`grid_from_text` give grids a readable picture form.

It is kept apart from glyph rasterization so the decomposition can be reasoned about, and tested,
on hand-drawn grids without fonts or Pillow.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from worldforge.core.errors import WorldForgeError

#: Behaviour version, recorded in every item record and cache key. An opaque id: bump it (any new
#: string) whenever this code's output can change; reference-output tests pin the behaviour. The
#: value is the id the code had when versions were derived from source files, so digests of runs
#: made before the package layout changed still compare equal.
VERSION = "worldforge.pcg.drop_plan:7c87977c5f3b8478"


GRID_WIDTH = 20
GRID_HEIGHT = 16

Grid = tuple[tuple[int, ...], ...]
"""``grid[row][col]`` with row 0 at the bottom, 16 rows x 20 columns, 1 = occupied (converter layout)."""


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
        extra = balance_supports(blocks) - forced
        if not extra:
            break
        forced |= extra
        blocks = _plan_once(target, random.Random(seed), pref, p13, forced)
    return blocks


def balance_supports(blocks: Sequence[Block]) -> set[tuple[int, int]]:
    """Cells ``(col, row)`` to fill so that every block's load balances over its supports.

    Empty for a structure that stands: :func:`plan_blocks` uses it to add supports, and callers can
    use it to check any block list (a non-empty answer means some block would topple).
    """
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
    inf = float("inf")
    blocks: list[Block] = []
    for y in range(GRID_HEIGHT):
        row_target = target[y]
        if not any(row_target):
            continue
        # One-row lookahead: an empty cell under a glyph cell at the edge of a run of its own row
        # is cheap for a b31 to cover, because it then supports the overhang above without a
        # pillar (a gap with glyph cells on both sides is left open: a b31 can bridge it on both
        # ends). What an empty cell adds to a b31's cost, and each column's support cost, are
        # fixed for the row (``top`` changes only after it), so they are computed once per row.
        above = target[y + 1] if y + 1 < GRID_HEIGHT else None
        cell_extra = [
            (
                0.3 - 0.8 * min(y - top[c], 3)
                if above is not None
                and above[c]
                and (c > 0 and row_target[c - 1]) + (c + 1 < GRID_WIDTH and row_target[c + 1]) == 1
                else 1.6
            )
            if not row_target[c]
            else 0.0
            for c in range(GRID_WIDTH)
        ]
        support_cost = [0] * GRID_WIDTH if y == 0 else [y - 1 - t for t in top]

        # ``rng.uniform(0.0, 0.05)`` spelled out (``a + (b - a) * random()``, the same operations):
        # the method call cost more than the rest of the row's setup.
        draw = rng.random
        noise = [0.0 + (0.05 - 0.0) * draw() for _ in range(GRID_WIDTH)]
        best: list[float] = [inf] * (GRID_WIDTH + 1)
        choice: list[tuple[str, int, tuple[int, ...]] | None] = [None] * (GRID_WIDTH + 1)
        best[GRID_WIDTH] = 0.0
        for i in range(GRID_WIDTH - 1, -1, -1):
            if not row_target[i] and best[i + 1] < best[i]:
                best[i], choice[i] = best[i + 1], ("skip", i, ())
            if row_target[i]:
                cost = support_cost[i] + 0.5 + noise[i] + best[i + 1]
                if cost < best[i]:
                    best[i], choice[i] = cost, ("b11", i, (i,) if support_cost[i] else ())
            if i + 2 < GRID_WIDTH and (row_target[i] or row_target[i + 1] or row_target[i + 2]):
                # Glyph cells add 0.0, which leaves a sum of these (never -0.0) terms unchanged.
                extra = sum((cell_extra[i], cell_extra[i + 1], cell_extra[i + 2]))
                centre = support_cost[i + 1]
                ends = support_cost[i] + support_cost[i + 2]
                pillars: tuple[int, ...] = ()
                if centre and ends:
                    pillars = (i + 1,) if centre <= ends else (i, i + 2)
                support = 0 if not centre or not ends else min(centre, ends)
                cost = support + extra + 0.5 - pref + noise[i + 1] + best[i + 3]
                if cost < best[i]:
                    best[i], choice[i] = cost, ("b31", i + 1, tuple(c for c in pillars if support_cost[c]))
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


def grid_to_program(
    grid: Sequence[Sequence[int]],
    *,
    rng: random.Random,
    b31_preference: float | None = None,
    b13_probability: float | None = None,
    balance: bool = True,
) -> str:
    """Drop program whose simulated result contains every occupied cell of ``grid`` (the options
    are :func:`plan_blocks`'s)."""
    return blocks_to_program(
        plan_blocks(
            grid, rng=rng, b31_preference=b31_preference, b13_probability=b13_probability, balance=balance
        )
    )


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


__all__ = [
    "Block",
    "GRID_HEIGHT",
    "GRID_WIDTH",
    "Grid",
    "balance_supports",
    "blocks_to_program",
    "grid_from_text",
    "grid_to_program",
    "grid_to_text",
    "plan_blocks",
    "simulate_drops",
]
