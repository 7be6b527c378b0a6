"""Letter grids: the cell bitmaps the letter families draw before they are placed on the level grid."""

from __future__ import annotations

from collections.abc import Sequence

Cells = list[list[int]]  # rows top first, 1 = ink (a glyph bitmap before placement)


def whole_cell_scales(glyph: Sequence[Sequence[int]], width: int, height: int) -> list[tuple[int, int]]:
    """(across, up) factors of 1 or 2 at which ``glyph`` still fits a ``width`` x ``height`` grid,
    in a fixed order (the families draw one of them with their seeded generator)."""
    return [
        (sx, sy)
        for sx in (1, 2)
        for sy in (1, 2)
        if len(glyph[0]) * sx <= width and len(glyph) * sy <= height
    ]


def scaled(glyph: Sequence[Sequence[int]], sx: int, sy: int) -> Cells:
    """``glyph`` with every cell repeated ``sx`` times across and ``sy`` times up (a bitmap kept exact)."""
    return [[v for v in row for _ in range(sx)] for row in glyph for _ in range(sy)]


def trim(cells: Cells) -> Cells:
    """The grid cut to the bounding box of its ink."""
    rows = [r for r, row in enumerate(cells) if any(row)]
    cols = [c for c in range(len(cells[0])) if any(row[c] for row in cells)]
    return [row[cols[0] : cols[-1] + 1] for row in cells[rows[0] : rows[-1] + 1]]


def counters(cells: Sequence[Sequence[int]], min_area: int = 1) -> int:
    """Enclosed background regions (4-connected, at least ``min_area`` cells): the letter's counters."""
    h, w = len(cells), len(cells[0])
    seen = [[False] * w for _ in range(h)]
    count = 0
    for r0 in range(h):
        for c0 in range(w):
            if cells[r0][c0] or seen[r0][c0]:
                continue
            seen[r0][c0] = True
            stack, size, open_ = [(r0, c0)], 0, False
            while stack:
                r, c = stack.pop()
                size += 1
                open_ = open_ or r in (0, h - 1) or c in (0, w - 1)
                for rr, cc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                    if 0 <= rr < h and 0 <= cc < w and not cells[rr][cc] and not seen[rr][cc]:
                        seen[rr][cc] = True
                        stack.append((rr, cc))
            if not open_ and size >= min_area:
                count += 1
    return count


def beside_ink(target: Sequence[Sequence[int]], built: Sequence[Sequence[int]]) -> int:
    """Cells of ``built`` outside ``target`` with no ``target`` cell above them in their column.

    Both grids are level grids (row 0 at the bottom). The drop planner adds cells to a letter so it
    stands: a pillar under an overhang lies under the letter and leaves its outline as drawn, but
    a ``b31`` reaching past a cut corner to rest on a leg, or a block filling a notch in the top
    row, puts ink beside the letter and changes its outline (an ``O`` with one ear reads as a
    ``C``). The count separates the levels whose outline the build changed from the rest, so
    accuracy can be measured on each.
    """
    height, width = len(target), len(target[0])
    count = 0
    for c in range(width):
        covered = False  # a target cell lies above the current row (scanning top-down)
        for r in range(height - 1, -1, -1):
            if built[r][c] and not target[r][c] and not covered:
                count += 1
            covered = covered or bool(target[r][c])
    return count
