"""Report sections and the failure gallery as HTML, shared by the generic page
(:mod:`worldforge.reports.html`) and the pages suites register for their own reports (the Science
Birds page, :mod:`worldforge.suites.science_birds.page`), so neither page imports the other."""

from __future__ import annotations

from collections.abc import Mapping

from worldforge.reports.html_parts import esc, footer, kv, metrics_list, page, provenance, table, value_html
from worldforge.reports.payload import listed, member, members, number
from worldforge.reports.sections import EMPTY_TABLE_TEXT, Section, is_safe_png_data_uri

#: Table cells with at most this many characters never wrap (names such as
#: ``zero-shot-multi-turn`` would otherwise break at every hyphen); the table scrolls instead.
NOWRAP_CHARS = 40


def _cell(value: object) -> str:
    text = value_html(value)
    short = len(value) <= NOWRAP_CHARS if isinstance(value, str) else isinstance(value, int | float | None)
    return f'<span class="name">{text}</span>' if short else text


def section_html(section: Section) -> str:
    """One generic section: table, image gallery, key/value list, paragraph or formatted value."""
    parts = [f"<h2>{esc(section.title)}</h2>"]
    if section.description:
        parts.append(f"<p>{esc(section.description)}</p>")
    if section.kind == "table" and not section.rows:
        # No rows means no known columns either: a sentence, not a headerless empty table.
        if not section.description:
            parts.append(f"<p>{EMPTY_TABLE_TEXT}</p>")
    elif section.kind == "table":
        rows = [[_cell(row[c]) if c in row else "" for c in section.columns] for row in section.rows]
        parts.append(table(section.columns, rows))
    elif section.kind == "images":
        figures = []
        for image in section.images:
            if not is_safe_png_data_uri(image["src"]):  # re-checked here: renderer owns the rule
                continue
            caption = esc(image["caption"])
            figures.append(
                f'<figure><img src="{esc(image["src"])}" alt="{caption}">'
                f"<figcaption>{caption}</figcaption></figure>"
            )
        parts.append(
            '<div class="gallery">' + "".join(figures) + "</div>" if figures else "<p>No images.</p>"
        )
        if section.omitted_images:
            parts.append(
                f"<p>{section.omitted_images} image(s) omitted: only inline PNG data URIs are shown.</p>"
            )
    elif section.kind == "keyvalue":
        parts.append(
            kv([(str(k), value_html(v)) for k, v in sorted(section.pairs.items(), key=lambda i: str(i[0]))])
        )
    elif section.kind == "text":
        parts.append(f"<p>{esc(section.text)}</p>")
    else:
        parts.append(f'<div class="scroll">{value_html(section.value)}</div>')
    return "".join(parts)


def failure_gallery_html(gallery: Mapping[str, object]) -> str:
    cases = members(gallery, "cases")
    parts = ["<h2>Failure Gallery</h2>", f"<p>Cases: {len(cases)}</p>"]
    parts.append(
        table(
            ["Fixture", "Provider", "Scenario", "Observed score", "Expected contract", "Observed"],
            [
                [
                    f"<code>{esc(c.get('fixture_id'))}</code>",
                    esc(c.get("provider")),
                    esc(c.get("scenario")),
                    esc(f"{number(c.get('score', 0.0), 'a case score'):.4f}"),
                    esc(c.get("expected_contract_notes")),
                    esc(c.get("observed_result")),
                ]
                for c in cases
            ],
            numeric={3},
        )
    )
    for case in cases:
        steps = "".join(f"<li>{esc(step)}</li>" for step in listed(case, "triage_steps"))
        parts.append(
            f"<h3>{esc(case.get('fixture_id'))} / {esc(case.get('provider'))}</h3>"
            f"<ol>{steps}</ol>{metrics_list(case.get('metrics_preview', {}))}"
        )
    return "".join(parts)


def finish_page(payload: Mapping[str, object], body: list[str]) -> str:
    """Close a report page: failure gallery, provenance and footer, then the page shell."""
    prov = member(payload, "provenance")
    if payload.get("failure_gallery"):
        body.append(failure_gallery_html(member(payload, "failure_gallery")))
    if prov:
        body.append(provenance(prov))
        body.append(footer(prov))
    return page(f"WorldForge Evaluation Report: {payload.get('suite', '')}", "".join(body))


__all__ = ["NOWRAP_CHARS", "failure_gallery_html", "finish_page", "section_html"]
