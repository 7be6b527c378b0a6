"""``runs diff`` with the science-birds comparison: one object, its exit code, text and HTML page.

:func:`run_diff` is what the command calls: the workspace's digest diff of any two runs plus, when a
run is a science-birds evaluation, :func:`~worldforge.suites.science_birds.compare.compare_runs`.
The HTML page is one offline file (inline CSS, images as data URIs, the report's content security
policy): the per-program change with its intervals, then the letters that moved most with run A's
level beside run B's, laid out to fit a 375 px phone screen.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from worldforge.pcg.scoring.uncertainty import DEFAULT_RESAMPLES, DEFAULT_SEED
from worldforge.reports.html_parts import esc, kv, page, table
from worldforge.suites.science_birds.compare import MovedLetter, RunComparison, compare_runs
from worldforge.workspace.diff import RunDiffReport, diff_runs

#: Extra CSS of the comparison page: the gallery's pairs wrap to one per row on a phone.
GALLERY_CSS = (
    "<style>.pairs{display:flex;flex-wrap:wrap;gap:12px}.pair{flex:1 1 300px;max-width:100%;"
    "border:1px solid #ccd;border-radius:6px;padding:8px}.pair .sides{display:flex;gap:8px}"
    ".pair figure{margin:0;flex:1 1 0;min-width:0;text-align:center}"
    ".pair img{width:100%;max-width:160px;height:auto;image-rendering:pixelated;border:1px solid #ddd}"
    ".pair figcaption{font-size:.85em}.regression{color:#a00;font-weight:bold}"
    ".improvement{color:#070;font-weight:bold}</style>"
)


def _interval(values: list[float], digits: int) -> str:
    return f"[{values[0]:.{digits}g}, {values[1]:.{digits}g}]"


@dataclass
class RunDiff:
    """The digest diff of two runs and, for science-birds runs, the program comparison."""

    digests: RunDiffReport
    comparison: RunComparison | None

    def to_dict(self) -> dict[str, object]:
        """The diff's JSON, with ``science_birds`` added when there is a comparison."""
        out: dict[str, object] = dict(self.digests)
        if self.comparison is not None:
            out["science_birds"] = self.comparison.to_dict()
        return out

    def exit_code(self, fail_on_regression: bool) -> int:
        """1 for a regression with ``fail_on_regression``, else 1 when the result digests differ."""
        if fail_on_regression:
            return 1 if self.comparison is not None and self.comparison.regressions else 0
        return 0 if self.digests["identical_results"] else 1

    def comparison_text(self, markdown: bool) -> str:
        """The comparison as text or Markdown lines ('' without one), printed after the digest diff."""
        comp = self.comparison
        if comp is None:
            return ""
        head = "## Program changes (science-birds)" if markdown else "program changes (science-birds):"
        lines = ["", head, ""] if markdown else ["", head]
        if comp.reason:
            lines.append(comp.reason)
        if comp.changes:
            if markdown:
                lines += [
                    "| program | Δ prompt score | 95 % interval | Δ normalized | 95 % interval | p (Holm) "
                    "| verdict |",
                    "| --- | ---: | --- | ---: | --- | ---: | --- |",
                ]
            for c in comp.changes:
                d = c.to_dict()
                cells = (
                    d["program"] if d["program"] == d["program_a"] else f"{d['program_a']} → {d['program']}",
                    f"{d['delta_prompt_score']:+.6g}",
                    _interval(d["prompt_score_interval"], 6),
                    f"{d['delta_normalized']:+.4g}",
                    _interval(d["normalized_interval"], 4),
                    f"{d['sign_flip']['p_holm']:.4g}",
                    d["verdict"] + (" (significant)" if d["significant"] else ""),
                )
                if markdown:
                    lines.append("| " + " | ".join(cells) + " |")
                else:
                    lines.append(
                        f"  {cells[0]}: Δ prompt {cells[1]} {cells[2]}, Δ normalized {cells[3]} {cells[4]}, "
                        f"p_holm {cells[5]}: {cells[6]}"
                    )
        if markdown and comp.changes:
            lines.append("")
        for stage in comp.stages:
            lines.append(f"{'- ' if markdown else '  '}{stage['stage']}: {stage['note']}")
        for row in comp.moved:
            lines.append(
                f"{'- ' if markdown else '  '}moved: {row['program']} {row['model']} {row['letter']}: "
                f"stability {row['stability'][0]:.3g} → {row['stability'][1]:.3g}, "
                f"similarity {row['similarity'][0]:.3g} → {row['similarity'][1]:.3g}"
            )
        for note in comp.mismatches:
            lines.append(f"{'- ' if markdown else '  '}not compared: {note}")
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        """The comparison page: one self-contained file."""
        a, b = self.digests["a"], self.digests["b"]
        verdict = "identical results" if self.digests["identical_results"] else "results differ"
        body = [
            f"<h1>Run diff</h1>{GALLERY_CSS}",
            kv(
                [
                    ("A (baseline)", f"<code>{esc(a['run_id'])}</code> ({esc(a['status'])})"),
                    ("B (candidate)", f"<code>{esc(b['run_id'])}</code> ({esc(b['status'])})"),
                    ("digests", esc(f"{verdict}; {self.digests['change_count']} changes")),
                    ("causes", esc(", ".join(self.digests["causes"]))),
                ]
            ),
        ]
        comp = self.comparison
        if comp is not None:
            body.append(_comparison_html(comp))
        return page(f"Run diff {a['run_id']} vs {b['run_id']}", "".join(body))


def _comparison_html(comp: RunComparison) -> str:
    parts = ["<h2>Program changes</h2>"]
    if comp.reason:
        parts.append(f"<p>{esc(comp.reason)}</p>")
    rows = []
    for c in comp.changes:
        d = c.to_dict()
        name = d["program"] if d["program"] == d["program_a"] else f"{d['program_a']} → {d['program']}"
        mark = d["verdict"].replace(" ", "-")
        verdict = f'<span class="{esc(mark)}">{esc(d["verdict"])}</span>' + (
            " (significant)" if d["significant"] else ""
        )
        rows.append(
            [
                esc(name),
                verdict,
                esc(f"{d['delta_prompt_score']:+.6g}"),
                esc(_interval(d["prompt_score_interval"], 6)),
                esc(f"{d['delta_normalized']:+.4g}"),
                esc(_interval(d["normalized_interval"], 4)),
                esc(f"{d['sign_flip']['p_value']:.4g}"),
                esc(f"{d['sign_flip']['p_holm']:.4g}"),
            ]
        )
    if rows:
        headers = ["program", "verdict", "Δ prompt score", "95 % interval", "Δ normalized",
                   "95 % interval", "p", "p (Holm)"]  # fmt: skip
        parts.append(table(headers, rows, numeric={2, 4, 6, 7}))
        parts.append(
            "<p>A program regresses when its Δ prompt score interval lies wholly below 0 "
            f"(paired letter bootstrap, {comp.resamples} draws, seed {comp.seed}; run A's weights).</p>"
        )
    programs = [[esc(p["a"] or "-"), esc(p["b"] or "-"), esc(p["match"])] for p in comp.programs]
    parts.append("<h2>Programs</h2>" + table(["A", "B", "match"], programs))
    stages = [[esc(s["stage"]), esc("yes" if s["changed"] else "no"), esc(s["note"])] for s in comp.stages]
    if stages:
        parts.append("<h2>Stages</h2>" + table(["stage", "changed", "detail"], stages))
    if comp.mismatches:
        items = "".join(f"<li>{esc(m)}</li>" for m in comp.mismatches)
        parts.append(f"<h2>Not compared</h2><ul>{items}</ul>")
    if comp.moved:
        parts.append("<h2>Letters that moved most</h2>" + _gallery(comp.moved))
    return "".join(parts)


def _figure(src: object, caption: str) -> str:
    image = (
        f'<img src="{esc(src)}" alt="{esc(caption)}">'
        if isinstance(src, str) and src.startswith("data:image/png;base64,")
        else "<p>no image</p>"
    )
    return f"<figure>{image}<figcaption>{esc(caption)}</figcaption></figure>"


def _gallery(moved: list[MovedLetter]) -> str:
    cards = []
    for row in moved:
        thumbs = row.get("thumbnails") or [None, None]
        sides = "".join(
            _figure(
                thumbs[i],
                f"{label}: stability {row['stability'][i]:.3g}, similarity {row['similarity'][i]:.3g}",
            )
            for i, label in enumerate(("A", "B"))
        )
        title = f"{row['program']} · {row['model']} · {row['letter']}"
        cards.append(f'<div class="pair"><strong>{esc(title)}</strong><div class="sides">{sides}</div></div>')
    return f'<div class="pairs">{"".join(cards)}</div>'


def run_diff(
    dir_a: Path,
    dir_b: Path,
    *,
    include_all: bool = False,
    resamples: int | None = None,
    seed: int | None = None,
) -> RunDiff:
    """``runs diff A B``: the digest diff, and the program comparison when a run is science-birds.

    ``None`` for ``resamples`` / ``seed`` means the ranking intervals' defaults."""
    comparison = compare_runs(
        dir_a,
        dir_b,
        resamples=DEFAULT_RESAMPLES if resamples is None else resamples,
        seed=DEFAULT_SEED if seed is None else seed,
    )
    return RunDiff(diff_runs(dir_a, dir_b, include_all=include_all), comparison)


__all__ = ["GALLERY_CSS", "RunDiff", "run_diff"]
