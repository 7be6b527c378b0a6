"""Similarity images exactly as the Science Birds Evaluator exports them.

The evaluator fits an orthographic camera (aspect 1) to the union of the blocks' collider AABBs after
10 s of simulation, renders the black "OCR" sprites (0.24x0.23, 0.72x0.24, rotated with the body)
into an 824x824 texture without anti-aliasing, and pastes it at (100, 100) into a white 1024x1024
RGBA image. The classifier sees only that image, so we reproduce it pixel for pixel in spirit:
a pixel is black when its center lies inside a sprite (GPU rasterization rule), sprites are clipped
at the 824 px texture edge, and the result has exactly two colours.

Rasterization is vectorized: for every sprite row we intersect the pixel-center scan line with the
rotated rectangle, giving pixel spans. A render is a few dozen distinct rows repeated down a white
page, so :func:`render_rows` merges each row's spans into its covered intervals, compares rows by
those, and paints only the rows that differ from the row above; the PNG, the classifier input
and the thumbnail are made from those rows, and the full 4 MB image only when asked for
(:func:`render_array`). Physics dominates the per-level cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray
from PIL import Image, ImageDraw

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.levels.level import Level, LevelObject, parse_level_xml
from worldforge.pcg.sim.physics import StabilityResult
from worldforge.pcg.sim.png import encode_png as _encode
from worldforge.pcg.sim.png import encode_rows

#: Behaviour version, recorded in every item record and cache key. An opaque id: bump it (any new
#: string) whenever this code's output can change; reference-output tests pin the behaviour. The
#: value is the id the code had when versions were derived from source files, so digests of runs
#: made before the package layout changed still compare equal.
STAGE_VERSION = "worldforge.pcg.render:ebf3e5106b5e78d3"


if TYPE_CHECKING:
    from PIL import Image

    from worldforge.pcg.sim.physics import StabilityResult

IMAGE_SIZE = 1024
MARGIN = 100
INNER = IMAGE_SIZE - 2 * MARGIN  # 824
FALLBACK_BOX = 20.0
_WHITE = 0xFFFFFFFF
_BLACK = 0xFF000000  # evaluator's 20x20-unit box when no block bounds exist

Box = tuple[float, float, float, float]  # x0, y0, x1, y1


def _corners(cx: float, cy: float, w: float, h: float, angle_deg: float) -> list[tuple[float, float]]:
    a = math.radians(angle_deg)
    c, s = math.cos(a), math.sin(a)
    hw, hh = w / 2, h / 2
    return [
        (cx + c * dx - s * dy, cy + s * dx + c * dy)
        for dx, dy in ((-hw, -hh), (hw, -hh), (hw, hh), (-hw, hh))
    ]


def _aabb(obj: LevelObject, x: float, y: float, angle: float) -> Box:
    w, h = obj.size
    if obj.is_circle:
        return (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
    pts = _corners(x, y, w, h, angle)
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    return (min(xs), min(ys), max(xs), max(ys))


def _scene(source: StabilityResult | Level | str | bytes) -> list[tuple[LevelObject, float, float, float]]:
    """(object, x, y, angle) of every visible block: simulated poses, or the level as written."""

    if isinstance(source, StabilityResult):
        return [
            (o, p.x, p.y, p.angle)
            for o, p, alive in zip(source.objects, source.final_poses, source.alive, strict=True)
            if alive and o.kind == "block"
        ]
    level = source if isinstance(source, Level) else parse_level_xml(source)
    return [(o, o.x, o.y, o.rotation) for o in level.blocks]


def _corner_arrays(
    scene: list[tuple[LevelObject, float, float, float]], sizes: NDArray[np.float64]
) -> NDArray[np.float64]:
    """:func:`_corners` of every object at once: ``(n, 4, 2)`` float64, the same operations in
    the same order on the same doubles (cosine and sine from :mod:`math`, as there), so the same
    values bit for bit; a render has dozens of blocks and this ran once per block in Python."""
    radians = [math.radians(a) for _, _, _, a in scene]
    c = np.array([math.cos(a) for a in radians])[:, None]
    s = np.array([math.sin(a) for a in radians])[:, None]
    cx = np.array([x for _, x, _, _ in scene])[:, None]
    cy = np.array([y for _, _, y, _ in scene])[:, None]
    hw, hh = sizes[:, 0] / 2, sizes[:, 1] / 2
    dx = np.stack([-hw, hw, hw, -hw], axis=1)
    dy = np.stack([-hh, -hh, hh, hh], axis=1)
    return np.stack([cx + c * dx - s * dy, cy + s * dx + c * dy], axis=-1)


def structure_bounds(scene: list[tuple[LevelObject, float, float, float]]) -> Box | None:
    """Union of collider AABBs (raw collider sizes, no contact offset), or ``None`` if empty."""
    if not scene:
        return None
    sizes = np.array([o.size for o, _, _, _ in scene], dtype=np.float64)
    corners = _corner_arrays(scene, sizes)
    lo, hi = corners.min(axis=1), corners.max(axis=1)  # per object: (x, y) of its AABB
    circle = np.array([o.is_circle for o, _, _, _ in scene])
    if circle.any():  # a circle's AABB is its centre +- half its size, whatever its angle
        centre = np.array([(x, y) for _, x, y, _ in scene])[circle]
        lo[circle] = centre - sizes[circle] / 2
        hi[circle] = centre + sizes[circle] / 2
    return (float(lo[:, 0].min()), float(lo[:, 1].min()), float(hi[:, 0].max()), float(hi[:, 1].max()))


#: Rows (0 = top), first column, end column (exclusive), as int64 arrays of one length.
Spans = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]


def _spans(scene: list[tuple[LevelObject, float, float, float]], bounds: Box | None) -> Spans | None:
    """Pixel spans covered by OCR sprites in the 824x824 texture, or ``None`` when nothing is covered.

    For every sprite row the pixel-center scan line is intersected with the rotated rectangle; a
    pixel is covered when its center lies in ``[lo, hi)`` (the GPU's pixel-center rule).
    """

    if bounds is None:
        bounds = structure_bounds(scene)
    if bounds is None or bounds[2] - bounds[0] <= 0 or bounds[3] - bounds[1] <= 0:
        bounds = (-FALLBACK_BOX / 2, -FALLBACK_BOX / 2, FALLBACK_BOX / 2, FALLBACK_BOX / 2)
    x0, y0, x1, y1 = bounds
    side = max(x1 - x0, y1 - y0)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    scale = INNER / side
    left, bottom = cx - side / 2, cy - side / 2
    if not scene:
        return None
    # corners of every OCR sprite in render-texture pixels (y up), shape (n, 4, 2)
    corners = _corner_arrays(scene, np.array([obj.ocr_size for obj, _, _, _ in scene], dtype=np.float64))
    corners[..., 0] = (corners[..., 0] - left) * scale
    corners[..., 1] = (corners[..., 1] - bottom) * scale
    ymin = corners[..., 1].min(axis=1)
    ymax = corners[..., 1].max(axis=1)
    j0 = np.maximum(np.ceil(ymin - 0.5), 0).astype(np.int64)
    j1 = np.minimum(np.floor(ymax - 0.5), INNER - 1).astype(np.int64)
    counts = np.maximum(j1 - j0 + 1, 0)
    total = int(counts.sum())
    if total == 0:
        return None
    # one entry per (sprite, pixel row): all sprites are rasterized in a fixed number of numpy calls
    blk = np.repeat(np.arange(len(scene)), counts)
    starts = np.cumsum(counts) - counts
    rows = j0[blk] + (np.arange(total) - starts[blk])
    yc = rows + 0.5
    crossings = np.full((4, total), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(4):
            a = corners[blk, k]
            b = corners[blk, (k + 1) % 4]
            dy = b[:, 1] - a[:, 1]
            t = (yc - a[:, 1]) / dy
            ok = (dy != 0) & (t >= 0) & (t <= 1)
            crossings[k] = np.where(ok, a[:, 0] + t * (b[:, 0] - a[:, 0]), np.nan)
    hit = ~np.all(np.isnan(crossings), axis=0)
    rows, crossings = rows[hit], crossings[:, hit]
    lo = np.nanmin(crossings, axis=0)
    hi = np.nanmax(crossings, axis=0)
    i0 = np.clip(np.ceil(lo - 0.5), 0, INNER).astype(np.int64)
    i1 = np.clip(np.ceil(hi - 0.5), 0, INNER).astype(np.int64)
    keep = i1 > i0
    if not keep.any():
        return None
    return (INNER - 1) - rows[keep], i0[keep], i1[keep]


def _coverage(spans: Spans) -> tuple[int, int, NDArray[np.bool_]]:
    """``(top row, left column, boolean window)``: the covered pixels inside the spans' bounding box.

    Spans are painted with a difference array (+1 at a span's start, -1 at its end; ``add.at`` so
    overlapping sprites add up) and one cumulative sum per row, over the occupied window only. The
    small ``int16`` arrays matter more than the operation count: between simulations the allocator
    hands large arrays fresh pages, and faulting them in cost more than the arithmetic (an ``int64``
    ``bincount`` variant was 2 ms slower per level inside the pipeline, though faster in isolation).
    """

    r, i0, i1 = spans
    r_lo, c_lo = int(r.min()), int(i0.min())
    height, width = int(r.max()) - r_lo + 1, int(i1.max()) - c_lo
    stride = width + 1
    base = (r - r_lo) * stride
    diff = np.zeros(height * stride, dtype=np.int16)
    np.add.at(diff, base + (i0 - c_lo), 1)
    np.add.at(diff, base + (i1 - c_lo), -1)
    cover = np.cumsum(diff.reshape(height, stride), axis=1, dtype=np.int16)[:, :width] > 0
    return r_lo, c_lo, cover


@dataclass(frozen=True)
class RenderRows:
    """The similarity image as its distinct rows: ``distinct`` is ``(k, 1024, 4)`` uint8 RGBA, one
    entry per row that differs from the row above; ``new`` flags those rows (row 0 always).

    A render is a few dozen distinct rows repeated down a white page, and everything made from it
    reads rows: the PNG encoder (a repeated row is an all-zero Up row), the classifier's input (its
    resize runs on distinct rows) and the thumbnail. Building the 4 MB image only to compare its
    rows again cost more than drawing the render itself.
    """

    distinct: NDArray[np.uint8]
    new: NDArray[np.bool_]

    @property
    def row_of(self) -> NDArray[np.intp]:
        """Index into ``distinct`` of every image row."""
        return np.cumsum(self.new, dtype=np.intp) - 1

    def array(self) -> NDArray[np.uint8]:
        """The full ``(1024, 1024, 4)`` uint8 image."""
        return np.take(self.distinct, self.row_of, axis=0)


def _row_intervals(spans: Spans) -> NDArray[np.int32]:
    """Each texture row's covered columns as sorted, disjoint ``[begin, end)`` pairs, padded with
    -1: ``(INNER, 2 m)`` int32, equal rows exactly when their pixels are equal.

    Spans are sorted by (row, first column); a running maximum of ``row * K + end`` is the furthest
    end so far within the row (earlier rows' keys are smaller), so a span opens a new interval
    exactly when it starts after that end. Touching spans merge, so the pairs are the canonical
    form of the covered set.
    """
    r, i0, i1 = spans
    order = np.lexsort((i0, r))
    r, i0, i1 = r[order], i0[order], i1[order]
    k = 2 * IMAGE_SIZE  # larger than any column end
    reach = np.maximum.accumulate(r * k + i1)
    opens = np.empty(len(r), dtype=bool)
    opens[0] = True
    opens[1:] = i0[1:] > reach[:-1] - r[1:] * k
    first = np.flatnonzero(opens)
    last = np.append(first[1:] - 1, len(r) - 1)
    rows = r[first]
    begin, end = i0[first], reach[last] - rows * k
    row_start = np.empty(len(rows), dtype=bool)
    row_start[0] = True
    row_start[1:] = rows[1:] != rows[:-1]
    index = np.arange(len(rows))
    slot = index - np.maximum.accumulate(np.where(row_start, index, 0))
    table = np.full((INNER, 2 * (int(slot.max()) + 1)), -1, dtype=np.int32)
    table[rows, 2 * slot] = begin
    table[rows, 2 * slot + 1] = end
    return table


def render_rows(source: StabilityResult | Level | str | bytes) -> RenderRows:
    """The similarity image (see :func:`render_level`) as :class:`RenderRows`, without the full image."""

    new = np.zeros(IMAGE_SIZE, dtype=bool)
    new[0] = True
    spans = _spans(_scene(source), None)
    if spans is None:
        white = np.full((1, IMAGE_SIZE), _WHITE, dtype="<u4")
        return RenderRows(white.view(np.uint8).reshape(1, IMAGE_SIZE, 4), new)
    table = _row_intervals(spans)
    # every image row's intervals (white margins: none), compared with the row above
    image = np.full((IMAGE_SIZE, table.shape[1]), -1, dtype=np.int32)
    image[MARGIN : MARGIN + INNER] = table
    new[1:] = np.any(image[1:] != image[:-1], axis=1)
    pairs = image[new]
    rows, slots = np.nonzero(pairs[:, 0::2] >= 0)
    diff = np.zeros((len(pairs), INNER + 1), dtype=np.int8)
    diff[rows, pairs[rows, 2 * slots]] = 1  # intervals are disjoint and never touch: no collisions
    diff[rows, pairs[rows, 2 * slots + 1]] = -1
    cover = np.cumsum(diff, axis=1, dtype=np.int8)[:, :INNER] > 0
    pixels = np.full((len(pairs), IMAGE_SIZE), _WHITE, dtype="<u4")
    np.putmask(pixels[:, MARGIN : MARGIN + INNER], cover, np.uint32(_BLACK))
    return RenderRows(pixels.view(np.uint8).reshape(len(pairs), IMAGE_SIZE, 4), new)


def render_array(source: StabilityResult | Level | str | bytes) -> NDArray[np.uint8]:
    """The similarity image as a (1024, 1024, 4) uint8 RGBA array (see :func:`render_level`)."""

    return render_rows(source).array()


def render_level(source: StabilityResult | Level | str | bytes) -> Image.Image:
    """The black-on-white 1024x1024 RGBA similarity image (two colours, no anti-aliasing).

    Pass a :class:`~worldforge.pcg.sim.physics.StabilityResult` to render the poses after simulation
    (what the evaluator exports; destroyed blocks are invisible); a level renders as written.
    """

    return Image.fromarray(render_array(source), mode="RGBA")


def encode_png(rgba: ArrayLike) -> bytes:
    """Deterministic PNG of an (h, w, 4) uint8 array (see :mod:`worldforge.pcg.sim.png`)."""

    return _encode(rgba)


def png_bytes(image: Image.Image) -> bytes:
    """:func:`encode_png` of a Pillow image (converted to RGBA)."""

    return encode_png(np.asarray(image if image.mode == "RGBA" else image.convert("RGBA")))


def render_png(source: StabilityResult | Level | str | bytes) -> bytes:
    """The similarity image encoded as PNG bytes (the bytes :func:`encode_png` gives its array)."""
    rows = render_rows(source)
    return encode_rows(rows.distinct, rows.new)


_MATERIAL_COLOURS = {"wood": (196, 140, 74), "stone": (140, 140, 150), "ice": (150, 210, 240)}


def render_color(source: StabilityResult | Level | str | bytes, *, size: int = 512) -> Image.Image:
    """A coloured picture for people: materials, pigs, TNT, ground line, destroyed blocks faded."""

    if isinstance(source, StabilityResult):
        items = [
            (o, p.x, p.y, p.angle, a)
            for o, p, a in zip(source.objects, source.final_poses, source.alive, strict=True)
        ]
    else:
        level = source if isinstance(source, Level) else parse_level_xml(source)
        items = [(o, o.x, o.y, o.rotation, True) for o in level.objects]
    if not items:
        raise WorldForgeError("nothing to render: the level has no objects.")
    boxes = [_aabb(o, x, y, a) for o, x, y, a, _ in items]
    x0 = min(b[0] for b in boxes) - 0.5
    x1 = max(b[2] for b in boxes) + 0.5
    y0 = min(min(b[1] for b in boxes), -3.5) - 0.3
    y1 = max(b[3] for b in boxes) + 0.5
    side = max(x1 - x0, y1 - y0)
    scale = size / side
    ox = (x0 + x1) / 2 - side / 2
    oy = (y0 + y1) / 2 - side / 2

    def to_px(px: float, py: float) -> tuple[float, float]:
        return ((px - ox) * scale, size - (py - oy) * scale)

    img = Image.new("RGB", (size, size), (235, 244, 250))
    draw = ImageDraw.Draw(img)
    gy = to_px(0, -3.5)[1]
    draw.rectangle([0, gy, size, size], fill=(120, 170, 90))
    for obj, x, y, angle, alive in items:
        w, h = obj.size
        if obj.kind == "pig":
            fill: tuple[int, int, int] = (110, 200, 80)
        elif obj.kind == "tnt":
            fill = (220, 60, 40)
        elif obj.kind == "platform":
            fill = (90, 90, 90)
        else:
            fill = _MATERIAL_COLOURS.get(obj.material, (196, 140, 74))
        if not alive:
            fill = tuple(int(c + (255 - c) * 0.7) for c in fill)  # type: ignore[assignment]
        if obj.is_circle:
            cx, cy = to_px(x, y)
            r = w / 2 * scale
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill, outline=(40, 40, 40))
        else:
            draw.polygon([to_px(*p) for p in _corners(x, y, w, h, angle)], fill=fill, outline=(40, 40, 40))
    return img


__all__ = [
    "RenderRows",
    "encode_png",
    "png_bytes",
    "render_array",
    "render_color",
    "render_level",
    "render_png",
    "render_rows",
    "structure_bounds",
]
