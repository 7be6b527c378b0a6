"""The ``block`` letter family: letters built the way people build them out of blocks.

A Science Birds letter is usually not a font: it is a few horizontal bars and vertical legs, with
diagonals laid as staircases, and the shape of a letter with several forms depends on who builds it
(an ``M`` as two legs with a V between them, or as a bar on three legs like a lower-case ``m``; a
``W`` as its mirror image; a square or a pointed ``A``; a ``B`` with cut corners or a bitmap one;
serifs capping the legs, as serif faces draw them and as a b31 laid across a leg looks).
This family draws such letters directly on the block grid from a few integer parameters: height,
width, leg and bar thickness, where the middle bar sits, whether corners are cut, and which form of
the letter. It shares no glyph source with the other families (no font, no rasterized outline, no
skeleton polylines) and draws every cell itself, so its grids are exact: nothing is quantized.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from worldforge.pcg.levels.drop_plan import GRID_HEIGHT, GRID_WIDTH
from worldforge.pcg.similarity.training.grids import Cells, counters, trim

#: Width / height ratio range of each letter (the rest use ``_ASPECT``).
_ASPECT = (0.6, 1.25)  # up to the level grid's own 20 x 16: builders fill it
_ASPECTS = {
    "I": (0.15, 0.6),
    "J": (0.45, 0.8),
    "L": (0.45, 0.8),
    "E": (0.45, 0.85),
    "F": (0.45, 0.85),
    "M": (0.8, 1.35),
    "W": (0.8, 1.35),
}
#: Strokes side by side across the widest part of a letter (legs and the steps of a diagonal).
_STROKES = {"I": 1, "K": 3, "M": 4, "N": 4, "W": 4, "A": 3, "V": 3, "X": 3, "Y": 3, "T": 1}
#: Counters (enclosed background regions) of each letter as built from blocks; the rest have none.
COUNTERS = {"A": 1, "B": 2, "D": 1, "O": 1, "P": 1, "Q": 1, "R": 1}
#: Draws of a letter until its counters are the letter's (see ``block_cells``).
DRAW_TRIES = 20
#: Letters that may get serifs, across the top of their strokes and under their feet (serif faces;
#: builders cap a leg with a b31 laid across it, as on the ``I`` and the serif ``L``).
_SERIF_TOP = set("HKMNUVWXY")
_SERIF_FOOT = set("AHKMNXY")
#: Share of the draws of those letters that get serifs.
_SERIF_SHARE = 0.3
#: Smallest height that leaves room for every bar and gap of a letter with three bars.
_MIN_ROWS = {"B": 5, "E": 5, "S": 5, "G": 5, "R": 5, "Q": 6, "M": 5, "W": 5}


class Pen:
    """A ``height`` x ``width`` grid with bars ``th`` rows thick and legs ``tv`` columns wide.

    A leg standing on the right edge may be ``tr`` columns wide instead: builders do not always
    give both legs of a ``U`` or ``H`` the same blocks, and serif faces draw them thick and thin.
    """

    def __init__(self, width: int, height: int, tv: int, th: int, tr: int | None = None) -> None:
        self.w, self.h, self.tv, self.th = width, height, tv, th
        self.tr = tv if tr is None else tr
        self.cells: Cells = [[0] * width for _ in range(height)]

    @property
    def right(self) -> int:
        """Left column of a leg standing on the right edge."""
        return self.w - self.tr

    @property
    def bottom(self) -> int:
        """Top row of a bar lying on the bottom edge."""
        return self.h - self.th

    def fill(self, x0: int, y0: int, x1: int, y1: int) -> None:
        """Ink cells x0..x1 x y0..y1 (inclusive, clipped to the grid)."""
        for y in range(max(0, y0), min(self.h - 1, y1) + 1):
            for x in range(max(0, x0), min(self.w - 1, x1) + 1):
                self.cells[y][x] = 1

    def bar(self, y: int, x0: int, x1: int) -> None:
        self.fill(x0, y, x1, y + self.th - 1)

    def leg(self, x: int, y0: int, y1: int) -> None:
        self.fill(x, y0, x + (self.tr if x == self.right else self.tv) - 1, y1)

    def diag(self, x0: int, y0: int, x1: int, y1: int) -> dict[int, int]:
        """A staircase from (x0, y0) to (x1, y1) of leg-wide steps; returns row -> left column.

        Steep diagonals get one step per row (``tv`` cells wide), shallow ones one step per column
        (``th`` cells high), the way a builder lays blocks along a slope.
        """
        rows: dict[int, int] = {}
        if abs(y1 - y0) >= abs(x1 - x0):
            n = abs(y1 - y0) or 1
            for i in range(abs(y1 - y0) + 1):
                y = y0 + (i if y1 >= y0 else -i)
                x = round(x0 + (x1 - x0) * i / n)
                self.fill(x, y, x + self.tv - 1, y)
                rows[y] = x
        else:
            n = abs(x1 - x0)
            for i in range(n + 1):
                x = x0 + (i if x1 >= x0 else -i)
                y = round(y0 + (y1 - y0) * i / n)
                self.fill(x, y, x, y + self.th - 1)
                rows.setdefault(y, x)
        return rows

    def cut_corners(self, corners: str) -> None:
        """Clear the outermost cell of the named corners (``tl``, ``tr``, ``bl``, ``br``)."""
        spots = {"tl": (0, 0), "tr": (self.w - 1, 0), "bl": (0, self.h - 1), "br": (self.w - 1, self.h - 1)}
        for name in corners.split():
            x, y = spots[name]
            self.cells[y][x] = 0


def _mid(pen: Pen, rng: random.Random, lo: float = 0.4, hi: float = 0.55) -> int:
    """Top row of a middle bar, between ``lo`` and ``hi`` of the height, clear of the outer bars."""
    y = round((pen.h - pen.th) * rng.uniform(lo, hi))
    return max(pen.th + 1, min(pen.bottom - pen.th - 1, y))


def _a(p: Pen, r: random.Random) -> None:
    form = r.choice(("square", "pointed", "trapezoid"))
    mid = _mid(p, r, 0.45, 0.65)
    if form == "square":
        p.leg(0, 0, p.h - 1)
        p.leg(p.right, 0, p.h - 1)
        p.bar(0, 0, p.w - 1)
        p.bar(mid, 0, p.w - 1)
        if r.random() < 0.5:
            p.cut_corners("tl tr")
        return
    top = (p.w - p.tv) // 2 if form == "pointed" else max(1, p.w // 4)
    left = p.diag(top, 0, 0, p.h - 1)
    right = p.diag(p.w - p.tv - top, 0, p.right, p.h - 1)
    if form == "trapezoid":
        p.bar(0, top, p.w - 1 - top)
    p.fill(left[mid], mid, right[mid] + p.tv - 1, mid + p.th - 1)


def _b(p: Pen, r: random.Random) -> None:
    mid = _mid(p, r)
    p.leg(0, 0, p.h - 1)
    if r.random() < 0.5:  # the bitmap B: bars stop short of the bowls' legs
        for y in (0, mid, p.bottom):
            p.bar(y, 0, p.right - 1)
        p.leg(p.right, p.th, mid - 1)
        p.leg(p.right, mid + p.th, p.bottom - 1)
    else:
        for y in (0, mid, p.bottom):
            p.bar(y, 0, p.w - 1)
        p.leg(p.right, 0, p.h - 1)
        p.cut_corners("tr br")


def _c(p: Pen, r: random.Random, *, lips: bool | None = None) -> None:
    p.leg(0, 0, p.h - 1)
    p.bar(0, 0, p.w - 1)
    p.bar(p.bottom, 0, p.w - 1)
    if lips is None:
        lips = r.random() < 0.35
    if lips:
        lip = max(1, p.h // 5)
        p.fill(p.right, 0, p.w - 1, p.th - 1 + lip)
        p.fill(p.right, p.bottom - lip, p.w - 1, p.h - 1)
    if r.random() < 0.5:
        p.cut_corners("tl bl")


def _d(p: Pen, r: random.Random) -> None:
    p.leg(0, 0, p.h - 1)
    # Corners cut by a single leg-wide notch read as a D only on a narrow letter (the 5x7 bitmap D);
    # on a wider box the notch is lost among the planner's pillars and the level shows an O.
    # A diagonal corner needs two steps at least: a one-step "diagonal" of a leg-wide stroke fills
    # the corner cell and draws a box, which is an O.
    k = min(p.h // 4, p.w // 3)
    if k >= 2 and (p.w > 6 or r.random() < 0.5):
        p.bar(0, 0, p.w - 1 - k)
        p.bar(p.bottom, 0, p.w - 1 - k)
        p.diag(p.w - k - p.tv + 1, 0, p.right, k)
        p.diag(p.right, p.h - 1 - k, p.w - k - p.tv + 1, p.h - 1)
        p.leg(p.right, k, p.h - 1 - k)
    else:
        p.bar(0, 0, p.w - 1 - p.tv)
        p.bar(p.bottom, 0, p.w - 1 - p.tv)
        p.leg(p.right, p.th, p.bottom - 1)


def _e(p: Pen, r: random.Random, *, bottom: bool = True) -> None:
    mid = _mid(p, r)
    p.leg(0, 0, p.h - 1)
    p.bar(0, 0, p.w - 1)
    p.bar(mid, 0, max(p.tv, round((p.w - 1) * r.uniform(0.6, 1.0))))
    if bottom:
        p.bar(p.bottom, 0, p.w - 1)


def _g(p: Pen, r: random.Random) -> None:
    _c(p, r, lips=False)
    mid = _mid(p, r, 0.4, 0.55)
    p.leg(p.right, mid, p.h - 1)
    # Always with its inward bar. A G without one (a C on a short leg, with or without a top lip)
    # is built with a pillar under the top bar's end, in the opening, down to the leg: the level
    # is a closed box, an O (the shipped block fold read 24 % of those as G, 98 % of the barred).
    p.bar(mid, p.w // 2, p.w - 1)


def _h(p: Pen, r: random.Random) -> None:
    p.leg(0, 0, p.h - 1)
    p.leg(p.right, 0, p.h - 1)
    p.bar(_mid(p, r), 0, p.w - 1)


def _i(p: Pen, r: random.Random) -> None:
    x = (p.w - p.tv) // 2
    p.leg(x, 0, p.h - 1)
    if p.w >= p.tv + 2 and r.random() < 0.7:
        p.bar(0, 0, p.w - 1)
        p.bar(p.bottom, 0, p.w - 1)


def _j(p: Pen, r: random.Random) -> None:
    x = p.right - (1 if r.random() < 0.3 and p.w > 4 else 0)
    p.leg(x, 0, p.h - 1)
    p.bar(p.bottom, 0, x + p.tv - 1)
    p.leg(0, p.h - 1 - max(1, round(p.h * r.uniform(0.2, 0.4))), p.h - 1)
    if r.random() < 0.4:
        p.bar(0, max(1, p.w // 3), p.w - 1)
    if r.random() < 0.4:
        p.cut_corners("bl")


def _k(p: Pen, r: random.Random) -> None:
    mid = _mid(p, r, 0.4, 0.55)
    p.leg(0, 0, p.h - 1)
    x0 = p.tv
    p.diag(x0, mid, p.right, 0)
    p.diag(x0, mid + p.th - 1 if r.random() < 0.5 else mid, p.right, p.h - 1)


def _l(p: Pen, r: random.Random) -> None:
    x = 0 if r.random() < 0.7 or p.w < 4 else 1
    p.leg(x, 0, p.h - 1)
    p.bar(p.bottom, 0, p.w - 1)
    if x:
        p.fill(0, 0, x + p.tv, 0)  # a serif across the top of the stem


def _m(p: Pen, r: random.Random) -> None:
    form = r.choice(("v", "v", "legs3", "stem"))
    p.leg(0, 0, p.h - 1)
    p.leg(p.right, 0, p.h - 1)
    cx = (p.w - p.tv) // 2
    if form == "v":
        depth = round((p.h - 1) * r.uniform(0.35, 1.0))  # down to the baseline, as many faces
        p.diag(p.tv, 0, cx, depth)
        p.diag(p.right - p.tv, 0, cx, depth)
        return
    p.bar(0, 0, p.w - 1)
    p.leg(cx, 0, p.h - 1 if form == "legs3" else round((p.h - 1) * r.uniform(0.4, 0.7)))
    if r.random() < 0.4:
        p.cut_corners("tl tr")


def _n(p: Pen, r: random.Random) -> None:
    p.leg(0, 0, p.h - 1)
    p.leg(p.right, 0, p.h - 1)
    if r.random() < 0.35 and p.h >= 6:  # the bitmap-font N: a short diagonal across the middle
        top = round((p.h - 1) * r.uniform(0.0, 0.3))
        p.diag(p.tv, top, p.right - p.tv, top + max(2, round((p.h - 1) * r.uniform(0.45, 0.7))))
        return
    p.diag(p.tv, 0 if r.random() < 0.6 else 1, p.right - p.tv, p.h - 1)


def _o(p: Pen, r: random.Random) -> None:
    p.leg(0, 0, p.h - 1)
    p.leg(p.right, 0, p.h - 1)
    p.bar(0, 0, p.w - 1)
    p.bar(p.bottom, 0, p.w - 1)
    if r.random() < 0.5:
        p.cut_corners("tl tr bl br")


def _p(p: Pen, r: random.Random) -> int:
    mid = _mid(p, r, 0.4, 0.6)
    p.leg(0, 0, p.h - 1)
    cut = r.random() < 0.5
    p.bar(0, 0, p.w - 1 - (p.tv if cut else 0))
    p.bar(mid, 0, p.w - 1 - (p.tv if cut else 0))
    p.leg(p.right, p.th if cut else 0, mid - 1 if cut else mid + p.th - 1)
    return mid


def _q(p: Pen, r: random.Random) -> None:
    tail = max(1, p.h // 5)
    ring = Pen(p.w, p.h - tail, p.tv, p.th)
    _o(ring, r)
    p.cells[: ring.h] = ring.cells
    x = p.w // 2
    p.diag(x, ring.h - 1 - ring.th, p.right, p.h - 1)


def _r(p: Pen, r: random.Random) -> None:
    # The leg is always slanted: a straight leg under a bowl with cut corners is a square A.
    mid = _p(p, r)
    start = r.randint(min(p.tv, p.right), min(p.right, max(p.tv, p.w // 2)))
    p.diag(start, mid + p.th, p.right, p.h - 1)


def _s(p: Pen, r: random.Random) -> None:
    mid = _mid(p, r)
    p.bar(0, 0, p.w - 1)
    p.bar(mid, 0, p.w - 1)
    p.bar(p.bottom, 0, p.w - 1)
    p.leg(0, 0, mid)
    p.leg(p.right, mid, p.h - 1)
    if r.random() < 0.3:
        p.fill(p.right, 0, p.w - 1, p.th)  # lips at the open ends
        p.fill(0, p.bottom - 1, p.tv - 1, p.h - 1)
    if r.random() < 0.4:
        p.cut_corners("tl br")


def _t(p: Pen, r: random.Random) -> None:
    p.bar(0, 0, p.w - 1)
    p.leg((p.w - p.tv) // 2, 0, p.h - 1)


def _u(p: Pen, r: random.Random) -> None:
    p.leg(0, 0, p.h - 1)
    p.leg(p.right, 0, p.h - 1)
    p.bar(p.bottom, 0, p.w - 1)
    if r.random() < 0.5:
        p.cut_corners("bl br")


def _v(p: Pen, r: random.Random) -> None:
    cx = (p.w - p.tv) // 2
    knee = 0 if r.random() < 0.6 else round((p.h - 1) * r.uniform(0.3, 0.5))
    if knee:
        p.leg(0, 0, knee)
        p.leg(p.right, 0, knee)
    p.diag(0, knee, cx, p.h - 1)
    p.diag(p.right, knee, cx, p.h - 1)


def _w(p: Pen, r: random.Random) -> None:
    form = r.choice(("v", "v", "legs3", "stem", "legs-v"))
    cx = (p.w - p.tv) // 2
    if form == "legs-v":  # the mirror image of the V-middle M: a V rising from the base
        rise = round((p.h - 1) * r.uniform(0.3, 0.8))
        p.leg(0, 0, p.h - 1)
        p.leg(p.right, 0, p.h - 1)
        p.diag(p.tv, p.h - 1, cx, p.h - 1 - rise)
        p.diag(p.right - p.tv, p.h - 1, cx, p.h - 1 - rise)
        return
    if form == "v" and p.w >= 4 * p.tv + 1:
        peak = round((p.h - 1) * r.uniform(0.25, 0.6))
        q1, q3 = p.w // 4 - p.tv // 2, (3 * p.w) // 4 - p.tv // 2
        p.diag(0, 0, q1, p.h - 1)
        p.diag(cx, peak, q1, p.h - 1)
        p.diag(cx, peak, q3, p.h - 1)
        p.diag(p.right, 0, q3, p.h - 1)
        return
    p.leg(0, 0, p.h - 1)
    p.leg(p.right, 0, p.h - 1)
    p.bar(p.bottom, 0, p.w - 1)
    top = 0 if form == "legs3" else round((p.h - 1) * r.uniform(0.3, 0.6))
    p.leg(cx, top, p.h - 1)
    if r.random() < 0.4:
        p.cut_corners("bl br")


def _x(p: Pen, r: random.Random) -> None:
    p.diag(0, 0, p.right, p.h - 1)
    p.diag(p.right, 0, 0, p.h - 1)


def _y(p: Pen, r: random.Random) -> None:
    cx = (p.w - p.tv) // 2
    fork = round((p.h - 1) * r.uniform(0.4, 0.6))
    if r.random() < 0.35:
        p.leg(0, 0, fork)
        p.leg(p.right, 0, fork)
        p.bar(fork, 0, p.w - 1)
    else:
        p.diag(0, 0, cx, fork)
        p.diag(p.right, 0, cx, fork)
    p.leg(cx, fork, p.h - 1)


def _z(p: Pen, r: random.Random) -> None:
    p.bar(0, 0, p.w - 1)
    p.bar(p.bottom, 0, p.w - 1)
    p.diag(p.right, p.th, 0, p.bottom - 1)


DRAW: dict[str, Callable[[Pen, random.Random], object]] = {
    "A": _a,
    "B": _b,
    "C": _c,
    "D": _d,
    "E": _e,
    "F": lambda p, r: _e(p, r, bottom=False),
    "G": _g,
    "H": _h,
    "I": _i,
    "J": _j,
    "K": _k,
    "L": _l,
    "M": _m,
    "N": _n,
    "O": _o,
    "P": _p,
    "Q": _q,
    "R": _r,
    "S": _s,
    "T": _t,
    "U": _u,
    "V": _v,
    "W": _w,
    "X": _x,
    "Y": _y,
    "Z": _z,
}


def block_cells(letter: str, rng: random.Random) -> Cells:
    """``letter`` built from bars, legs and staircases at a random size, thickness and form.

    A draw whose counters are not the letter's (a pointed ``A`` too small for a gap under its apex,
    a ``G`` or ``S`` whose lips close a bowl, ``K`` arms that enclose a pinhole) is replaced by the
    next draw of the same seeded generator, so the label always matches the shape and the family
    stays deterministic.
    """
    cells: Cells = []
    for _ in range(DRAW_TRIES):
        cells = trim(_draw(letter, rng))
        if counters(cells) == COUNTERS.get(letter, 0):
            break
    return cells


def _draw(letter: str, rng: random.Random) -> Cells:
    height = rng.randint(_MIN_ROWS.get(letter, 4) + 1, GRID_HEIGHT)
    lo, hi = _ASPECTS.get(letter, _ASPECT)
    width = max(3 if letter != "I" else 1, min(GRID_WIDTH, round(height * rng.uniform(lo, hi))))
    if letter in "MW":
        width = max(5, width)
    tv, strokes = rng.choice((1, 1, 2, 2, 3)), _STROKES.get(letter, 2)
    while tv > 1 and width < strokes * tv + strokes - 1:
        tv -= 1  # keep a gap between strokes: three legs or a diagonal between two need room
    tv = min(tv, width)
    th = 2 if height >= 11 and rng.random() < 0.4 else 1
    tr = max(1, tv + rng.choice((-1, 1))) if rng.random() < 0.25 else tv
    pen = Pen(width, height, tv, th, min(tr, max(1, width - 2 * tv - 1)))
    DRAW[letter](pen, rng)
    if letter in _SERIF_TOP | _SERIF_FOOT and width + 2 <= GRID_WIDTH and rng.random() < _SERIF_SHARE:
        return serifs(pen.cells, top=letter in _SERIF_TOP, foot=letter in _SERIF_FOOT)
    return pen.cells


def serifs(cells: Cells, *, top: bool, foot: bool) -> Cells:
    """``cells`` with a one-row serif across every stroke end in the top and/or bottom row.

    A stroke end is a run of ink no wider than three cells or a third of the letter (a leg, the
    first step of a diagonal; not a bar); its serif reaches one cell to each side where that cell
    and the one beyond it are empty, so a serif never joins two strokes or closes a gap.
    """
    width = len(cells[0]) + 2
    out = [[0, *row, 0] for row in cells]
    for y, wanted in ((0, top), (len(out) - 1, foot)):
        if not wanted:
            continue
        row = out[y]
        x = 0
        while x < width:
            if row[x] != 1:
                x += 1
                continue
            end = x
            while end + 1 < width and row[end + 1] == 1:
                end += 1
            if end - x + 1 <= max(3, (width - 2) // 3):
                for side, beyond in ((x - 1, x - 2), (end + 1, end + 2)):
                    clear = beyond < 0 or beyond >= width or not row[beyond]
                    if 0 <= side < width and not row[side] and clear:
                        out[y][side] = 2  # marked, so a new serif cell never counts as a stroke
            x = end + 1
    return [[1 if v else 0 for v in row] for row in out]
