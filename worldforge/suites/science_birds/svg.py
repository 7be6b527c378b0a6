"""Inline SVG charts for the HTML reports, drawn from numbers already in the report payload.

The report is one offline file under a Content-Security-Policy that forbids scripts and remote
resources, so charts are plain SVG markup: shapes and text that the escaper covers, that scale with
``viewBox`` to any screen width, print, and need no library. Every label goes through :func:`esc`,
the only image source is a PNG data URI the caller has already checked, and every coordinate is
rounded, so the same numbers always give the same bytes. Tooltips are ``<title>`` elements; the
heatmap's level previews show on ``:hover``/``:focus`` through the page's CSS.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

#: Colour-blind-safe series colours (Okabe & Ito), one per model.
SERIES_COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#7a6a00", "#444444")
#: Sequential scale for the heatmap, light to dark (ColorBrewer "Blues").
HEAT_STOPS = ("#eff3ff", "#c6dbef", "#9ecae1", "#6baed6", "#3182bd", "#08519c", "#08306b")
ZERO_FILL = "#f1f1f1"
PLAIN_FILL = "#4a7ab8"
WINNER_FILL = "#1a7f37"
BASELINE_STROKE = "#8a5a00"
TEXT = "#1d2330"
MUTED = "#57606a"
GRID = "#d8dde6"


def esc(value: object) -> str:
    """Escape text for SVG/HTML text and attribute positions."""
    return html.escape(str(value), quote=True)


def num(value: float | None, digits: int = 3) -> str:
    """A short, fixed-rule number label (``50.3``, ``0.000614``, ``4e-8``; ``-`` when missing)."""
    if value is None or math.isnan(value):
        return "-"
    if value == 0:
        return "0"
    return f"{value:.{digits}g}".replace("e-0", "e-").replace("e+0", "e+")


def _c(value: float) -> str:
    """A coordinate with at most one decimal (deterministic, compact)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def clip(label: str, limit: int) -> str:
    """Shorten a label to ``limit`` characters (the full text stays in the element's tooltip)."""
    return label if len(label) <= limit else label[: limit - 1] + "\u2026"


def nice_max(value: float) -> float:
    """The smallest 1/2/2.5/5 x 10^k at or above ``value`` (an axis end with round ticks)."""
    if value <= 0 or math.isnan(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= step * power * (1 + 1e-12):
            return step * power
    return 10.0 * power


def _svg(width: float, height: float, label: str, body: str, font: int = 12) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {_c(width)} {_c(height)}" style="max-width:{_c(width * 1.1)}px" '
        f'role="img" aria-label="{esc(label)}" font-size="{font}" fill="{TEXT}">{body}</svg>'
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{_c(x)}" y="{_c(y)}" text-anchor="{anchor}"{extra}>{esc(text)}</text>'


def _axis(x0: float, x1: float, top: float, bottom: float, vmax: float) -> str:
    parts = []
    for i in range(5):
        value = vmax * i / 4
        x = x0 + (x1 - x0) * i / 4
        parts.append(f'<line x1="{_c(x)}" y1="{_c(top)}" x2="{_c(x)}" y2="{_c(bottom)}" stroke="{GRID}"/>')
        parts.append(_text(x, bottom + 14, num(value), anchor="middle", extra=f' fill="{MUTED}"'))
    return "".join(parts)


def _hatch(pid: str) -> str:
    return (
        f'<defs><pattern id="{pid}" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#f6e7c8"/>'
        f'<line x1="0" y1="0" x2="0" y2="6" stroke="{BASELINE_STROKE}" stroke-width="2"/></pattern></defs>'
    )


@dataclass(frozen=True, slots=True)
class Bar:
    """One program's bar: ``kind`` is ``plain``, ``baseline`` or ``winner``; ``tag`` follows the value.

    ``low``/``high`` (both or neither) draw an error bar: the 95 % interval of the value.
    """

    label: str
    value: float
    kind: str = "plain"
    tag: str = ""
    title: str = ""
    low: float | None = None
    high: float | None = None


def _error_bar(x0: float, scale: float, y: float, low: float, high: float) -> str:
    """A horizontal interval with end caps across the bar's middle (dark on any fill)."""
    a, b = x0 + max(low, 0.0) * scale, x0 + max(high, 0.0) * scale
    stroke = f'stroke="{TEXT}" stroke-width="1.5"'
    return (
        f'<g class="errorbar"><line x1="{_c(a)}" y1="{_c(y)}" x2="{_c(b)}" y2="{_c(y)}" {stroke}/>'
        f'<line x1="{_c(a)}" y1="{_c(y - 6)}" x2="{_c(a)}" y2="{_c(y + 6)}" {stroke}/>'
        f'<line x1="{_c(b)}" y1="{_c(y - 6)}" x2="{_c(b)}" y2="{_c(y + 6)}" {stroke}/></g>'
    )


def bar_chart(
    bars: Sequence[Bar], *, label: str, pid: str, reference: tuple[str, float] | None = None
) -> str:
    """Horizontal bars, one per row in the given order, each under its label (so the bars keep the
    full width on a phone); baselines hatched, winners green, an error bar where a bar has an
    interval, and an optional dashed reference line (the value a winner has to beat)."""
    x0, x1, row, top = 8.0, 330.0, 42.0, 4.0
    bottom = top + row * max(len(bars), 1)
    highs = [b.high for b in bars if b.high is not None]
    vmax = nice_max(max([b.value for b in bars] + highs + [reference[1] if reference else 0.0]))
    scale = (x1 - x0) / vmax
    parts = [_hatch(pid), _axis(x0, x1, top, bottom, vmax)]
    for i, bar in enumerate(bars):
        y = top + i * row
        w = max(bar.value, 0.0) * scale
        if bar.kind == "baseline":
            fill = f'fill="url(#{pid})" stroke="{BASELINE_STROKE}" stroke-width="1.5"'
        else:
            fill = f'fill="{WINNER_FILL if bar.kind == "winner" else PLAIN_FILL}"'
        tip = bar.title or f"{bar.label}: {num(bar.value, 6)}"
        value = num(bar.value, 4) + (f" \u00b7 {bar.tag}" if bar.tag else "")
        whisker, right = "", w
        if bar.low is not None and bar.high is not None:
            whisker = _error_bar(x0, scale, y + 28, bar.low, bar.high)
            right = max(w, max(bar.high, 0.0) * scale)
        parts.append(
            f'<g class="bar" data-kind="{esc(bar.kind)}"><title>{esc(tip)}</title>'
            + _text(x0, y + 14, clip(bar.label, 40), extra=' font-weight="600"')
            + f'<rect x="{_c(x0)}" y="{_c(y + 19)}" width="{_c(w)}" height="18" {fill}/>'
            + whisker
            + _text(x0 + right + 5, y + 32, value, extra=' font-size="12"')
            + "</g>"
        )
    if reference is not None:
        rx = x0 + reference[1] * scale
        parts.append(
            f'<line class="reference" x1="{_c(rx)}" y1="{_c(top + 16)}" x2="{_c(rx)}" y2="{_c(bottom)}" '
            f'stroke="{BASELINE_STROKE}" stroke-width="2" stroke-dasharray="5 3"/>'
        )
    kinds = {b.kind for b in bars}
    legend = [
        (kind, text)
        for kind, text in (
            ("plain", "program"),
            ("baseline", "built-in baseline (scored, not ranked)"),
            ("winner", "declared winner"),
        )
        if kind in kinds
    ]
    y = bottom + 36
    for kind, text in legend:
        fill = (
            f'fill="url(#{pid})" stroke="{BASELINE_STROKE}"'
            if kind == "baseline"
            else (f'fill="{WINNER_FILL if kind == "winner" else PLAIN_FILL}"')
        )
        parts.append(f'<rect x="{_c(x0)}" y="{_c(y - 10)}" width="14" height="12" {fill}/>')
        parts.append(_text(x0 + 20, y, text))
        y += 18
    if highs:
        parts.append(_error_bar(x0, 1.0, y - 4, 0.0, 14.0))
        parts.append(_text(x0 + 20, y, "95 % interval (letter bootstrap)"))
        y += 18
    if reference is not None:
        parts.append(
            f'<line x1="{_c(x0)}" y1="{_c(y - 4)}" x2="{_c(x0 + 14)}" y2="{_c(y - 4)}" '
            f'stroke="{BASELINE_STROKE}" stroke-width="2" stroke-dasharray="4 2"/>'
        )
        parts.append(_text(x0 + 20, y, f"{reference[0]} ({num(reference[1], 4)})"))
        y += 18
    # A value label follows the error bar's end, which may lie at the axis end: room for it.
    return _svg(500 if highs else 410, y - 6, label, "".join(parts), font=14)


def stacked_chart(rows: Sequence[tuple[str, Sequence[float]]], series: Sequence[str], *, label: str) -> str:
    """One horizontal bar per row (under its label), split into one segment per series; the total
    follows the bar."""
    x0, x1, row, top = 8.0, 320.0, 42.0, 4.0
    bottom = top + row * max(len(rows), 1)
    vmax = nice_max(max([sum(max(v, 0.0) for v in values) for _, values in rows] + [0.0]))
    scale = (x1 - x0) / vmax
    parts = [_axis(x0, x1, top, bottom, vmax)]
    for i, (name, values) in enumerate(rows):
        y = top + i * row
        x = x0
        parts.append('<g class="stack">' + _text(x0, y + 14, clip(name, 40), extra=' font-weight="600"'))
        for j, value in enumerate(values):
            w = max(value, 0.0) * scale
            colour = SERIES_COLOURS[j % len(SERIES_COLOURS)]
            parts.append(
                f'<rect class="segment" x="{_c(x)}" y="{_c(y + 19)}" width="{_c(w)}" height="18" '
                f'fill="{colour}"><title>{esc(f"{name} / {series[j]}: {num(value, 6)}")}</title></rect>'
            )
            x += w
        parts.append(_text(x + 5, y + 32, num(sum(values), 4), extra=' font-size="12"') + "</g>")
    y = bottom + 36
    for j, name in enumerate(series):
        colour = SERIES_COLOURS[j % len(SERIES_COLOURS)]
        parts.append(f'<rect x="{_c(x0)}" y="{_c(y - 10)}" width="14" height="12" fill="{colour}"/>')
        parts.append(_text(x0 + 20, y, clip(name, 50)))
        y += 18
    return _svg(410, y - 6, label, "".join(parts), font=14)


def heat_colour(t: float) -> str:
    """Interpolate :data:`HEAT_STOPS` at ``t`` in [0, 1]."""
    t = min(max(t, 0.0), 1.0) * (len(HEAT_STOPS) - 1)
    i = min(int(t), len(HEAT_STOPS) - 2)
    f = t - i
    a, b = HEAT_STOPS[i], HEAT_STOPS[i + 1]
    rgb = [round(int(a[k : k + 2], 16) * (1 - f) + int(b[k : k + 2], 16) * f) for k in (1, 3, 5)]
    return "#" + "".join(f"{v:02x}" for v in rgb)


@dataclass(frozen=True, slots=True)
class HeatScale:
    """Maps values to [0, 1]: logarithmic when positive values span more than two decades (the
    character scores of a run easily span six, and a linear scale would show one dark cell)."""

    low: float
    high: float
    log: bool

    @classmethod
    def of(cls, values: Sequence[float]) -> HeatScale:
        positive = [v for v in values if v > 0]
        if not positive:
            return cls(0.0, 1.0, False)
        low, high = min(positive), max(positive)
        return cls(low, high, high / low > 100)

    def position(self, value: float) -> float:
        if value <= 0:
            return 0.0
        if self.high <= self.low:
            return 1.0
        if self.log:
            span = math.log10(self.high) - math.log10(self.low)
            return 0.12 + 0.88 * (math.log10(value) - math.log10(self.low)) / span
        return 0.12 + 0.88 * (value - self.low) / (self.high - self.low)


@dataclass(frozen=True, slots=True)
class Cell:
    """One heatmap cell: its value, tooltip and the level image shown on hover (a checked data URI)
    with up to three caption lines (separated by newlines)."""

    value: float | None
    title: str
    preview_src: str | None = None
    preview_caption: str = ""


def heatmap(
    rows: Sequence[str], columns: Sequence[str], cells: Sequence[Sequence[Cell]], *, label: str, pid: str
) -> str:
    """Rows x columns of coloured cells with values under a colour legend; hovering or focusing a
    cell shows its preview image in a column to the right, beside the cell's row (never over other
    cells)."""
    cw, ch, left, top = (96.0 if len(columns) <= 3 else 72.0), 22.0, 40.0, 78.0
    pane_x = left + cw * len(columns) + 18
    pane = 150.0
    width = pane_x + pane + 8
    grid_bottom = top + ch * len(rows)
    height = max(grid_bottom, top + pane + 66) + 8
    scale = HeatScale.of([c.value for row in cells for c in row if c.value is not None])
    parts = [
        _text(pane_x, top + 14, "Hover or tap a cell", extra=f' fill="{MUTED}"'),
        _text(pane_x, top + 30, "to see that letter's", extra=f' fill="{MUTED}"'),
        _text(pane_x, top + 46, "best level.", extra=f' fill="{MUTED}"'),
    ]
    for j, name in enumerate(columns):
        parts.append(
            f"<g><title>{esc(name)}</title>"
            + _text(
                left + cw * j + cw / 2,
                top - 10,
                clip(name, 14 if cw > 90 else 10),
                anchor="middle",
                extra=' font-weight="600"' + ("" if cw > 90 else ' font-size="11"'),
            )
            + "</g>"
        )
    for i, letter in enumerate(rows):
        y = top + ch * i
        parts.append(_text(left - 10, y + 15, letter, anchor="end", extra=' font-weight="600"'))
        for j, cell in enumerate(cells[i]):
            x = left + cw * j
            value = cell.value
            if value is None:
                fill, ink = "#ffffff", MUTED
            else:
                t = scale.position(value)
                fill = heat_colour(t) if value > 0 else ZERO_FILL
                ink = "#ffffff" if t > 0.55 else TEXT
            preview = ""
            if cell.preview_src:
                py = min(max(y - pane / 2, top), height - 8 - pane - 60)
                lines = "".join(
                    _text(pane_x, py + pane + 17 + 16 * k, clip(line, 24), extra=' font-size="12"')
                    for k, line in enumerate(cell.preview_caption.split("\n")[:3])
                )
                preview = (
                    f'<g class="pv"><rect x="{_c(pane_x - 3)}" y="{_c(py - 3)}" width="{_c(pane + 6)}" '
                    f'height="{_c(pane + 60)}" fill="#ffffff" stroke="{TEXT}"/>'
                    f'<image href="{esc(cell.preview_src)}" x="{_c(pane_x)}" y="{_c(py)}" '
                    f'width="{_c(pane)}" height="{_c(pane)}" style="image-rendering:pixelated"/>'
                    + lines
                    + "</g>"
                )
            parts.append(
                f'<g class="hm" tabindex="0"><title>{esc(cell.title)}</title>'
                f'<rect class="cell" x="{_c(x + 1)}" y="{_c(y + 1)}" width="{_c(cw - 2)}" '
                f'height="{_c(ch - 2)}" fill="{fill}"/>'
                + _text(x + cw / 2, y + 15, num(value, 2), anchor="middle", extra=f' fill="{ink}"')
                + preview
                + "</g>"
            )
    parts.append(_heat_legend(scale, left, 4, pid))
    return _svg(width, height, label, "".join(parts))


def _heat_legend(scale: HeatScale, x: float, y: float, pid: str) -> str:
    stops = "".join(
        f'<stop offset="{_c(100 * k / (len(HEAT_STOPS) - 1))}%" stop-color="{c}"/>'
        for k, c in enumerate(HEAT_STOPS)
    )
    kind = "log scale" if scale.log else "linear scale"
    return (
        f'<defs><linearGradient id="{pid}">{stops}</linearGradient></defs>'
        f'<rect x="{_c(x)}" y="{_c(y)}" width="14" height="12" fill="{ZERO_FILL}" stroke="{GRID}"/>'
        + _text(x + 20, y + 11, "0")
        + f'<rect x="{_c(x + 44)}" y="{_c(y)}" width="160" height="12" fill="url(#{pid})"/>'
        + _text(x + 44, y + 28, num(scale.low, 2))
        + _text(x + 204, y + 28, num(scale.high, 2), anchor="end")
        + _text(x + 214, y + 11, kind, extra=f' fill="{MUTED}"')
    )


@dataclass(frozen=True, slots=True)
class Column:
    """One column of :func:`bar_matrix`: bars scaled to ``scale_max`` (or numbers only)."""

    name: str
    values: Sequence[float | None]
    scale_max: float = 1.0
    bars: bool = True
    titles: Sequence[str] = field(default_factory=tuple)


def bar_matrix(rows: Sequence[str], columns: Sequence[Column], *, label: str) -> str:
    """A row per letter and a small bar (or number) per column: values compared down each column."""
    left, top, row = 34.0, 26.0, 20.0
    widths = [122.0 if col.bars else 64.0 for col in columns]
    width = left + sum(widths) + 6
    height = top + row * len(rows) + 8
    parts = []
    x = left
    for col, w in zip(columns, widths, strict=True):
        parts.append(_text(x, 14, clip(col.name, 18 if col.bars else 9), extra=' font-weight="600"'))
        if col.bars:
            parts.append(
                f'<line x1="{_c(x)}" y1="{_c(top - 4)}" x2="{_c(x)}" y2="{_c(height - 6)}" stroke="{GRID}"/>'
            )
        for i, value in enumerate(col.values):
            y = top + row * i
            title = col.titles[i] if i < len(col.titles) else f"{rows[i]} {col.name}: {num(value, 6)}"
            inner = ""
            if col.bars:
                length = 0.0 if value is None else 78 * min(max(value, 0.0) / (col.scale_max or 1.0), 1.0)
                inner = (
                    f'<rect x="{_c(x)}" y="{_c(y + 4)}" width="{_c(length)}" height="12" '
                    f'fill="{PLAIN_FILL}"/>'
                )
                inner += _text(x + length + 4, y + 14, num(value, 3), extra=' font-size="12"')
            else:
                inner = _text(x, y + 14, num(value, 3), extra=' font-size="12"')
            parts.append(f'<g class="mbar"><title>{esc(title)}</title>{inner}</g>')
        x += w
    for i, name in enumerate(rows):
        parts.append(_text(left - 10, top + row * i + 14, name, anchor="end", extra=' font-weight="600"'))
    return _svg(width, height, label, "".join(parts), font=13)


__all__ = [
    "Bar",
    "Cell",
    "Column",
    "HeatScale",
    "bar_chart",
    "bar_matrix",
    "clip",
    "esc",
    "heat_colour",
    "heatmap",
    "nice_max",
    "num",
    "stacked_chart",
]
