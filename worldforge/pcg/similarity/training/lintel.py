"""A second placement rule, "lintels and posts": a letter grid -> ``drop_block`` program.

Every training family is built by :func:`worldforge.pcg.levels.drop_plan.plan_blocks`, a row-wise
dynamic program that picks the cheapest cover, lets a ``b31`` reach past the letter when that
saves a pillar, props an overhang where it costs least and then adds cells until a static balance
check passes. A classifier trained on those levels may learn that planner's habits (its ears, its
pillar under a bar's centre) as much as the letters. The evaluation-only family is therefore built
by a different rule, the one a level builder following simple habits would use:

* rows are laid bottom-up; in each row every run of letter cells is tiled from one end (the left
  or the right, chosen per level) with ``b31`` while three cells remain, never covering a cell
  outside the letter;
* the one or two cells left over (a short run, or a run's remainder) become an upright ``b13``
  each where the column goes on upward for three letter cells, else ``b11``s;
* a block that would not stand gets posts, built as ``b13`` stacks topped by ``b11``: a ``b31``
  resting on neither its centre nor both ends gets a post under each unsupported end (a lintel on
  two posts, never a pillar under its centre as the planner prefers), a ``b11`` or ``b13`` over an
  empty cell a post under it, unless the leftover cells are a step of a diagonal stroke: then a
  ``b31`` centred on the built cell beside them carries them (see ``_leftover``);
* no balance check: a diagonal stroke stands on its posts or, if the simulation says so, falls
  (a level where most blocks moved is a heap and excluded, as in every family).

The rule is deterministic: the grid and the tiling end fix the program.
"""

from __future__ import annotations

from collections.abc import Sequence

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.levels.drop_plan import GRID_HEIGHT, GRID_WIDTH, Block, blocks_to_program

#: A leftover cell over a gap of at most this many cells stands on a post; over a deeper one it is
#: carried as a stair step where a step fits (see ``_leftover``).
MAX_POST = 2


def _runs(cells: list[int]) -> list[list[int]]:
    """Maximal runs of consecutive column indices in ``cells`` (sorted ascending)."""
    runs: list[list[int]] = []
    for c in cells:
        if runs and runs[-1][-1] == c - 1:
            runs[-1].append(c)
        else:
            runs.append([c])
    return runs


def _post(column: int, bottom: int, top: int) -> list[Block]:
    """Support blocks filling ``column`` from row ``bottom`` up to row ``top`` (inclusive)."""
    height = top - bottom + 1
    posts = [Block("b13", column, bottom + 3 * k, support=True) for k in range(height // 3)]
    start = bottom + 3 * (height // 3)
    return posts + [Block("b11", column, start + k, support=True) for k in range(height % 3)]


def lintel_blocks(grid: Sequence[Sequence[int]], *, from_right: bool) -> list[Block]:
    """Blocks (in drop order) that build ``grid`` by the lintels-and-posts rule (module docstring).

    ``grid`` is a level grid (16 rows of 20 columns, row 0 at the bottom). Every letter cell is
    covered exactly once by a letter block; posts only fill empty cells under a block.
    """
    if len(grid) != GRID_HEIGHT or any(len(row) != GRID_WIDTH for row in grid):
        raise WorldForgeError(f"grid: expected {GRID_HEIGHT} rows x {GRID_WIDTH} columns.")
    target = [[1 if v else 0 for v in row] for row in grid]
    occupied = [[0] * GRID_WIDTH for _ in range(GRID_HEIGHT)]
    top = [-1] * GRID_WIDTH  # highest occupied row per column
    blocks: list[Block] = []
    for y in range(GRID_HEIGHT):
        free = [c for c in range(GRID_WIDTH) if target[y][c] and not occupied[y][c]]
        for run in _runs(free):
            cells = run[::-1] if from_right else run
            while len(cells) >= 3:
                blocks += _lintel(sorted(cells[:3])[1], y, top, occupied)
                cells = cells[3:]
            if cells:
                blocks += _leftover(cells, y, target, top, occupied)
    return blocks


def _place(piece: Block, top: list[int], occupied: list[list[int]]) -> None:
    for c, r in piece.cells():
        occupied[r][c] = 1
        top[c] = max(top[c], r)


def _propped(piece: Block, props: list[int], top: list[int], occupied: list[list[int]]) -> list[Block]:
    """Posts under ``props`` up to the row below ``piece``, then ``piece``."""
    out: list[Block] = []
    for c in props:
        out += _post(c, top[c] + 1, piece.y - 1)
        for r in range(top[c] + 1, piece.y):
            occupied[r][c] = 1
        top[c] = piece.y - 1
    _place(piece, top, occupied)
    return [*out, piece]


def _lintel(x: int, y: int, top: list[int], occupied: list[list[int]]) -> list[Block]:
    """A ``b31`` centred on column ``x`` of row ``y``: it stands on its centre or on both ends;
    otherwise each unsupported end gets a post."""
    ends = (x - 1, x + 1)
    stands = top[x] == y - 1 or all(top[c] == y - 1 for c in ends)
    props = [] if stands else [c for c in ends if top[c] < y - 1]
    return _propped(Block("b31", x, y), props, top, occupied)


def _leftover(
    cells: list[int], y: int, target: list[list[int]], top: list[int], occupied: list[list[int]]
) -> list[Block]:
    """The one or two letter cells a run's tiling leaves over.

    Where one of them lies over a gap deeper than :data:`MAX_POST` cells, they are a step of a
    diagonal stroke or the end of a bar; a ``b31`` centred on a column that carries it (the cell
    below is built) and covering them reaches past the letter by the rest, as builders lay stair
    steps (a post under every step would fill the space beside a one-cell diagonal down to the
    ground: an ``X`` becomes a solid block). Over a shallower gap a post is the sturdier support:
    a step carrying a leg topples. Where no such ``b31`` fits (another letter cell or the grid's
    edge in the way), and for cells over built ones, each cell is an upright ``b13`` where its
    column goes on for three letter cells, else a ``b11``, on a post if it needs one.
    """
    span = sorted(cells)
    if y > 0 and any(top[c] < y - 1 - MAX_POST for c in span):
        for d in range(span[-1] - 1, span[0] + 2):
            reach = [c for c in (d - 1, d, d + 1) if c not in span]
            if (
                1 <= d < GRID_WIDTH - 1
                and top[d] == y - 1
                and all(not target[y][c] and not occupied[y][c] and top[c] <= y - 1 for c in reach)
            ):
                return _propped(Block("b31", d, y), [], top, occupied)
    out: list[Block] = []
    for c in cells:
        upright = y + 2 < GRID_HEIGHT and target[y + 1][c] and target[y + 2][c]
        props = [c] if top[c] < y - 1 else []
        out += _propped(Block("b13" if upright else "b11", c, y), props, top, occupied)
    return out


def lintel_program(grid: Sequence[Sequence[int]], *, from_right: bool) -> str:
    """The ``drop_block`` program of :func:`lintel_blocks`."""
    return blocks_to_program(lintel_blocks(grid, from_right=from_right))


__all__ = ["lintel_blocks", "lintel_program"]
