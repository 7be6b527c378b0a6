"""The Science Birds report page: the answer first (winner, ranking), then the charts a person reads
to see why, then every level, then the numbers and provenance behind them.

Drawn only from the payload (see :mod:`worldforge.suites.science_birds.page_view`), so the page
agrees with the JSON, Markdown and CSV reports and is byte-identical for the same payload. Free
text that came from a model or an error (program text, failure reasons) passes through the
project's sanitizer again before it is escaped: it is the text most likely to carry something that
should not be on a page someone attaches to an issue. The suite registers :func:`render_page` with
the HTML renderer (:func:`worldforge.reports.html.register_html_page`), which never imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from worldforge.core.redact import sanitize_text
from worldforge.reports.html_parts import (
    claim_block,
    esc,
    kv,
    results_table,
    table,
    value_html,
)
from worldforge.reports.html_sections import finish_page, section_html
from worldforge.reports.sections import interpret, is_safe_png_data_uri
from worldforge.suites.science_birds.page_view import Program, Trial, View, read_view
from worldforge.suites.science_birds.svg import (
    Bar,
    Cell,
    Column,
    bar_chart,
    bar_matrix,
    heatmap,
    num,
    stacked_chart,
)

#: Sections this page draws itself; any other section is rendered generically after them.
DRAWN = ("ranking", "winner", "per_letter", "weights_per_letter", "worst_levels", "worst_levels_gallery")
#: The ranking's intervals: drawn as error bars and shown under the ranking table, not at the end.
UNCERTAINTY = "ranking_uncertainty"
WHY_LIMIT = 160
NO_LEVEL = '<div class="nolevel">no level</div>'
#: The ranking table's first columns (the rest follow in payload order).
RANKING_LEAD = ("rank", "program", "normalized", "total", "winner")


def _tags(program: Program) -> str:
    tags = ""
    if program.winner:
        tags += ' <span class="tag winner">winner</span>'
    if program.baseline:
        tags += ' <span class="tag baseline">baseline</span>'
    return tags


def _mean(values: Mapping[str, float]) -> float | None:
    return sum(values.values()) / len(values) if values else None


def _headline(view: View, payload: Mapping[str, Any]) -> str:
    winners = [p for p in view.programs if p.winner]
    text = str(view.winner.get("winners", "none"))
    top = view.programs[0]
    if winners:
        big = "Winner: " + ", ".join(p.name for p in winners)
    else:
        big = "No winner declared"
    facts = [
        ("Top program", f"{esc(top.name)}{_tags(top)} ({esc(num(top.normalized, 4))} of 100)"),
        ("Decision", esc(text)),
        ("Decided by", esc(view.winner.get("decided_by"))),
        ("Beats the zero-shot baseline", value_html(view.winner.get("winner_beats_zero_shot_baseline"))),
    ]
    if view.winner.get("uncertainty"):  # the rule decides; the intervals say how sure the lead is
        facts.append(("With 95 % intervals", esc(view.winner["uncertainty"])))
    rule = view.winner.get("tie_break")
    note = f'<p class="note">Tie-break: {esc(rule)}.</p>' if rule else ""
    kind = "headline" if winners else "headline undecided"
    return f'<section class="{kind}"><p class="big">{esc(big)}</p>{kv(facts)}{note}</section>'


def _summary_line(view: View, payload: Mapping[str, Any]) -> str:
    measurement = (payload.get("sections") or {}).get("measurement") or {}
    trials = measurement.get("trials") if isinstance(measurement, Mapping) else None
    prov = payload.get("provenance") or {}
    bits = [
        f"suite <code>{esc(payload.get('suite_id'))}</code> {esc(prov.get('suite_version') or '')}".rstrip(),
        f"{len(view.models)} model(s): {esc(', '.join(view.models))}",
        f"{len(view.programs)} program(s)",
        f"{len(view.letters)} letter(s)" + (f" x {esc(trials)} trials" if trials is not None else ""),
    ]
    return f'<p class="note">WorldForge evaluation report &middot; {" &middot; ".join(bits)}</p>'


def _ranking(view: View) -> str:
    zero = view.zero_shot
    bars = [
        Bar(
            label=f"{p.rank}. {p.name}" if isinstance(p.rank, int) else p.name,
            value=p.normalized,
            kind="winner" if p.winner else "baseline" if p.baseline else "plain",
            tag=" ".join(t for t, on in (("winner", p.winner), ("baseline", p.baseline)) if on),
            title=f"{p.name}: {num(p.normalized, 6)} of 100 (total {num(p.total, 6)})"
            + (f", 95 % interval {num(p.low, 4)}\u2013{num(p.high, 4)}" if p.high is not None else ""),
            low=p.low if p.high is not None else None,
            high=p.high if p.low is not None else None,
        )
        for p in view.programs
    ]
    reference = ("zero-shot baseline", zero.normalized) if zero is not None else None
    chart = bar_chart(
        bars,
        label="Normalised score per program (sum of all programs = 100)",
        pid="sb-hatch",
        reference=reference,
    )
    columns: list[str] = list(RANKING_LEAD)
    for p in view.programs:
        columns += [c for c in p.row if c not in columns]
    columns = [c for c in columns if any(c in p.row for p in view.programs)]
    rows = [
        [
            f'<span class="name">{esc(p.name)}</span>{_tags(p)}'
            if c == "program"
            else value_html(p.row.get(c))
            for c in columns
        ]
        for p in view.programs
    ]
    numeric = {i for i, c in enumerate(columns) if c not in ("program", "winner")}
    stacked = stacked_chart(
        [(p.name, [p.per_model[m] for m in view.models]) for p in view.programs],
        view.models,
        label="Prompt score per model, stacked to the total",
    )
    return (
        "<h2>Ranking</h2>"
        '<div class="charts"><figure><figcaption>Normalised score: each program\'s total as a share of '
        "all programs' totals (100). Baselines are hatched; the dashed line is the zero-shot "
        f"baseline a winner has to beat.{_whiskers(view)}</figcaption>{chart}</figure>"
        "<figure><figcaption>Totals per model: each program's total is the sum of its prompt "
        f"scores per model (one colour per model).</figcaption>{stacked}</figure></div>"
        f"{table(columns, rows, numeric)}"
    )


def _whiskers(view: View) -> str:
    """The caption's sentence on the error bars, only when the chart draws them."""
    if not any(p.high is not None for p in view.programs):
        return ""
    return (
        " Error bars: 95 % intervals from resampling the letters (see Ranking uncertainty); "
        "overlapping bars are statistical ties."
    )


def _uncertainty(payload: Mapping[str, Any]) -> str:
    """The intervals' table (or the sentence why there are none), right under the ranking."""
    sections = payload.get("sections") or {}
    if UNCERTAINTY not in sections:
        return ""
    return section_html(interpret(UNCERTAINTY, sections[UNCERTAINTY]))


def _unserved_note(view: View, payload: Mapping[str, Any]) -> str:
    """A visible warning when a submission returned text the model never served (the rules forbid
    changing the reply); the ranking column alone is easy to miss. Empty when there is none."""
    counts = {p.name: p.row.get("unserved_replies") for p in view.programs}
    found = {n: c for n, c in counts.items() if isinstance(c, int) and not isinstance(c, bool) and c > 0}
    if not found:
        return ""
    measurement = (payload.get("sections") or {}).get("measurement") or {}
    how = measurement.get("unserved_replies") if isinstance(measurement, Mapping) else None
    who = ", ".join(f"{esc(name)} ({count})" for name, count in found.items())
    return (
        '<section class="warning"><strong>Unserved replies.</strong> '
        f"Trials of {who} returned text the model never served (hard-coded or edited): the rules "
        f"forbid changing the reply. This run: {esc(how or 'see the unserved replies section')}.</section>"
    )


def _heatmap(view: View) -> str:
    names = [p.name for p in view.programs]
    cells = []
    for letter in view.letters:
        row = []
        for program in names:
            values = view.per_letter.get((program, letter), {}).get("char")
            total = sum(values.values()) if values else None
            per_model = ", ".join(f"{m} {num(v, 4)}" for m, v in (values or {}).items())
            best = view.best(program, letter)
            title = f"{letter} / {program}: character score {num(total, 6)}"
            if len(view.models) > 1 and per_model:
                title += f" ({per_model})"
            caption = ""
            if best is not None:
                who = f"{best.model} \u00b7 " if len(view.models) > 1 else ""
                caption = (
                    f"{letter} \u00b7 {program}\n{who}trial {best.trial}\n"
                    f"sta {best.sta or 0.0:.2f} \u00b7 sim {best.sim or 0.0:.2f}"
                )
                title += f"; best level: {best.model} trial {best.trial}"
            row.append(Cell(total, title, best.src if best else None, caption))
        cells.append(row)
    chart = heatmap(view.letters, names, cells, label="Character score per letter and program", pid="sb-heat")
    summed = " (summed over models)" if len(view.models) > 1 else ""
    return (
        f"<h2>Character scores per letter</h2><p>Weighted character score{esc(summed)} for every letter "
        "and program; darker is higher. Hover over or tap a cell to see that letter's best level "
        "(highest stability x similarity) for the program.</p>" + chart
    )


def _letter_stats(view: View) -> str:
    figures = []
    for p in view.programs:
        cols = []
        for kind, name in (("sta", "Stability"), ("sim", "Similarity"), ("div", "Diversity")):
            stats = [view.per_letter.get((p.name, letter), {}).get(kind, {}) for letter in view.letters]
            titles = [
                f"{letter} {name.lower()}: " + ", ".join(f"{m} {num(v, 4)}" for m, v in s.items())
                for letter, s in zip(view.letters, stats, strict=True)
            ]
            cols.append(Column(name, [_mean(s) for s in stats], 1.0, True, titles))
        chart = bar_matrix(
            view.letters, cols, label=f"Stability, similarity and diversity per letter: {p.name}"
        )
        figures.append(f"<figure><figcaption>{esc(p.name)}{_tags(p)}</figcaption>{chart}</figure>")
    over = " (mean over models)" if len(view.models) > 1 else ""
    return (
        f"<h2>Stability, similarity and diversity per letter</h2><p>Mean over trials{esc(over)}, "
        "each on a 0 to 1 scale.</p>" + f'<div class="charts">{"".join(figures)}</div>'
    )


def _weights(view: View, payload: Mapping[str, Any]) -> str:
    figures = []
    for model in view.models:
        rows = [view.weights.get((model, letter), {}) for letter in view.letters]
        keys = ["weight"] + sorted({k for r in rows for k in r if k != "weight"})
        top = max([r.get("weight", 0.0) for r in rows] + [0.0]) or 1.0
        cols = [
            Column(key, [r.get(key) for r in rows], top if key == "weight" else 1.0, key == "weight")
            for key in keys
        ]
        chart = bar_matrix(view.letters, cols, label=f"Weights per letter: {model}")
        figures.append(f"<figure><figcaption>{esc(model)}</figcaption>{chart}</figure>")
    sections = payload.get("sections") or {}
    data = "".join(
        f"<details><summary>{esc(title)} as a table</summary>"
        f"{section_html(interpret(key, sections[key]))}</details>"
        for key, title in (("per_letter", "Per-letter values"), ("weights_per_letter", "Weights"))
        if key in sections
    )
    return (
        "<h2>Weights per letter</h2><p>The weight each letter's trials carry in the prompt score "
        "(bars scaled to the largest weight) and its factors.</p>"
        f'<div class="charts">{"".join(figures)}</div>{data}'
    )


def _why(text: str | None) -> str:
    clean = sanitize_text(text or "")
    short = clean if len(clean) <= WHY_LIMIT else clean[: WHY_LIMIT - 1] + "\u2026"
    return f'<span class="why" title="{esc(clean)}">{esc(short)}</span>'


def _figure(trial: Trial, letter: str, program: str, multi: bool, best: Trial | None) -> str:
    who = f"{trial.model}, " if multi else ""
    alt = f"{letter}, {program}, {who}trial {trial.trial}"
    img = (
        f'<img src="{esc(trial.src)}" alt="{esc(alt)}">'
        if trial.src and is_safe_png_data_uri(trial.src)
        else ""
    )
    head = f'<span class="v">{esc(trial.model)}</span><br>' if multi else ""
    if trial.failed_stage is not None:
        return (
            f'<figure class="failed">{img or NO_LEVEL}<figcaption>{head}trial {trial.trial} '
            f'<span class="tag failed">failed</span> at <strong>{esc(trial.failed_stage)}</strong>'
            f"{_why(trial.error)}</figcaption></figure>"
        )
    kind = ' class="best"' if trial is best else ""
    return (
        f"<figure{kind}>{img}<figcaption>{head}trial {trial.trial}<br>"
        f'<span class="v">sta {esc(f"{trial.sta or 0.0:.2f}")}</span> '
        f'<span class="v">sim {esc(f"{trial.sim or 0.0:.2f}")}</span>'
        "</figcaption></figure>"
    )


def _gallery(view: View) -> str:
    parts = [
        "<h2>Levels</h2><p>Every trial's level after the 10 s simulation, by program and letter, "
        "with its stability (sta) and similarity (sim). The best level of each letter is framed in "
        "green; failed trials are marked with the stage that failed and why.</p>"
    ]
    multi = len(view.models) > 1
    for p in view.programs:
        rows = []
        for letter in view.letters:
            trials = view.trials.get((p.name, letter), [])
            if not trials:
                continue
            best = view.best(p.name, letter)
            figures = "".join(_figure(t, letter, p.name, multi, best) for t in trials)
            rows.append(
                f'<div class="letter-row"><div class="letter">{esc(letter)}</div>'
                f'<div class="trials">{figures}</div></div>'
            )
        body = "".join(rows) or "<p>No levels.</p>"
        parts.append(f"<details open><summary><h3>{esc(p.name)}{_tags(p)}</h3></summary>{body}</details>")
    if view.other_images:
        figures = "".join(
            f'<figure><img src="{esc(i["src"])}" alt="{esc(i["caption"])}">'
            f"<figcaption>{esc(i['caption'])}</figcaption></figure>"
            for i in view.other_images
        )
        parts.append(f'<h3>Other levels</h3><div class="gallery">{figures}</div>')
    return "".join(parts)


def _worst(payload: Mapping[str, Any]) -> str:
    sections = payload.get("sections") or {}
    section = sections.get("worst_levels")
    if not isinstance(section, Mapping) or not isinstance(section.get("rows"), list):
        return ""
    rows = section["rows"]
    gallery = sections.get("worst_levels_gallery")
    images = gallery.get("images") if isinstance(gallery, Mapping) else None
    by_item = {
        str(i.get("caption", "")).split(" (", 1)[0]: str(i["src"])
        for i in (images if isinstance(images, list) else [])
        if isinstance(i, Mapping) and is_safe_png_data_uri(i.get("src"))
    }
    cards = []
    for row in rows:
        if not isinstance(row, Mapping):
            continue
        item = str(row.get("item", ""))
        src = by_item.get(item)
        img = f'<img src="{esc(src)}" alt="{esc(item)}">' if src else "<div></div>"
        facts = [
            ("program", esc(row.get("program"))),
            ("model", esc(row.get("model"))),
            ("letter", esc(row.get("letter"))),
            ("trial", esc(row.get("trial"))),
            ("sta", _number(row.get("sta"))),
            ("sim", _number(row.get("sim"))),
        ]
        if row.get("margin") is not None:  # the classifier's top-2 margin: near 0, sim is a coin flip
            facts.append(("margin", _number(row.get("margin"))))
        if row.get("failed_stage"):
            facts.append(
                ("failed at", f"{esc(row.get('failed_stage'))}: {_why(str(row.get('error') or ''))}")
            )
        text = sanitize_text(str(row.get("program_text") or ""))
        detail = f"<details><summary>Program text</summary><pre>{esc(text)}</pre></details>" if text else ""
        cards.append(f"<article><header><code>{esc(item)}</code></header>{img}{kv(facts)}{detail}</article>")
    title = section.get("title") if isinstance(section.get("title"), str) else "Worst levels"
    return f"<h2>{esc(title)}</h2>" + (
        f'<div class="cards">{"".join(cards)}</div>' if cards else "<p>None.</p>"
    )


def _number(value: object) -> str:
    return (
        esc(num(float(value), 4))
        if isinstance(value, int | float) and not isinstance(value, bool)
        else esc(value)
    )


def _rest(payload: Mapping[str, Any], view: View, skip: Sequence[str]) -> str:
    sections = payload.get("sections") or {}
    out = []
    for key, value in sections.items():
        if key in skip or (key.startswith("gallery[") and key.endswith("]")):
            continue
        out.append(section_html(interpret(key, value)))
    return "".join(out)


def render_science_birds(payload: dict[str, Any], view: View) -> str:
    suite = str(payload.get("suite", ""))
    sections = payload.get("sections") or {}
    body = [
        f"<h1>{esc(suite)}</h1>",
        _summary_line(view, payload),
        _headline(view, payload),
        _ranking(view),
        _uncertainty(payload),
        _unserved_note(view, payload),
    ]
    if "baseline_comparison" in sections:
        body.append(section_html(interpret("baseline_comparison", sections["baseline_comparison"])))
    body += [
        claim_block(payload),
        _heatmap(view),
        _letter_stats(view),
        _weights(view, payload),
        _gallery(view),
    ]
    body.append(_worst(payload))
    body.append(_rest(payload, view, (*DRAWN, UNCERTAINTY, "baseline_comparison", "measurement")))
    body.append("<h2>Scenario results</h2>" + results_table(payload.get("results", [])))
    if "measurement" in sections:
        body.append(section_html(interpret("measurement", sections["measurement"])))
    return finish_page(payload, body)


def render_page(payload: dict[str, Any]) -> str | None:
    """The suite's HTML page for ``payload`` (registered with the HTML renderer by the suite), or
    None when the payload does not have this page's shape, so the generic page is rendered."""
    view = read_view(payload)
    return render_science_birds(payload, view) if view is not None else None


__all__ = ["DRAWN", "render_page", "render_science_birds"]
