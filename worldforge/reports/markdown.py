"""Markdown renderer: the answer (winner and ranking, when the report has them), claim boundary,
provenance, provider summary, scenario details, the other sections and failure gallery.

Every dynamic string is escaped for table cells (``|``, newlines, raw HTML), so a hostile scenario
name or metric value cannot break the table or inject markup into a rendered issue.
"""

from __future__ import annotations

from collections.abc import Mapping

from worldforge.core.canonical import canonical_json_text, pretty_json
from worldforge.reports.payload import listed, member, members, number, whole
from worldforge.reports.sections import EMPTY_TABLE_TEXT, interpret_all, scalar_text

METRICS_CELL_LIMIT = 160
#: Sections that answer a report's question (who won, how the programs rank) come first, before the
#: claim boundary and provenance: the Markdown is what a terminal shows, and its first screen should
#: hold the answer. Reports without these sections keep their order.
LEAD_SECTIONS = ("winner", "ranking")


def md_escape(value: object) -> str:
    """Escape text for a Markdown table cell or inline position."""
    text = value if isinstance(value, str) else scalar_text(value)
    text = " ".join(text.split())
    return (
        text.replace("\\", "\\\\")
        .replace("|", "\\|")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("`", "\\`")
        .replace("*", "\\*")
        .replace("_", "\\_")
        .replace("[", "\\[")
        .replace("]", "\\]")
    )


def md_code(value: object, *, table: bool = False) -> str:
    """Inline code span that survives backticks inside ``value`` (and ``|`` inside table cells)."""
    text = " ".join(str(value).split())
    if table:
        text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    if not rows:
        rows = [["-"] * len(headers)]
    lines += ["| " + " | ".join(rows_cell for rows_cell in row) + " |" for row in rows]
    return lines


def _provenance(prov: Mapping[str, object]) -> list[str]:
    lines = ["## Provenance", ""]
    items: list[tuple[str, str]] = [
        ("Schema version", md_escape(prov.get("schema_version"))),
        ("Kind", md_escape(prov.get("kind"))),
        ("Suite id", md_escape(prov.get("suite_id"))),
        ("WorldForge version", md_escape(prov.get("worldforge_version"))),
        ("Suite version", md_escape(prov.get("suite_version"))),
        ("Created at", md_escape(prov.get("created_at"))),
        ("Command", md_code(_joined(prov, "command", " ")) if prov.get("command") else "-"),
        ("Providers", md_escape(_joined(prov, "providers", ", ") or "-")),
        ("Capabilities", md_escape(_joined(prov, "capabilities", ", ") or "-")),
        ("Event count", md_escape(prov.get("event_count"))),
        ("Input digest", md_code(str(prov.get("input_digest")))),
        ("Result digest", md_code(str(prov.get("result_digest")))),
    ]
    manifests = member(prov, "runtime_manifests")
    if manifests:
        items.append(
            (
                "Runtime manifests",
                "; ".join(
                    f"{md_escape(k)}: {md_code(canonical_json_text(v))}" for k, v in sorted(manifests.items())
                ),
            )
        )
    datasets = members(prov, "dataset_manifests")
    if datasets:
        items.append(
            (
                "Dataset manifests",
                ", ".join(
                    f"{md_escape(ref.get('id', '?'))} ({md_code(str(ref.get('sha256', '?')))})"
                    for ref in datasets
                ),
            )
        )
    if prov.get("notes"):
        items.append(("Notes", md_escape(prov["notes"])))
    lines += [f"- {label}: {value}" for label, value in items]
    return lines + [""]


def _joined(prov: Mapping[str, object], key: str, separator: str) -> str:
    """A list of names (argv, providers, capabilities) joined for one line."""
    return separator.join(str(item) for item in listed(prov, key))


def _sections(sections: object) -> list[str]:
    lines: list[str] = []
    for section in interpret_all(sections):
        lines += [f"## {md_escape(section.title)}", ""]
        if section.description:
            lines += [md_escape(section.description), ""]
        if section.kind == "table" and not section.rows:
            # No rows means no known columns either: a sentence, not a headerless empty table.
            if section.description:
                lines.pop()  # the description already ends the section; keep one blank line
            else:
                lines.append(EMPTY_TABLE_TEXT)
        elif section.kind == "table":
            rows = [
                [md_escape(row.get(c)) if c in row else "" for c in section.columns] for row in section.rows
            ]
            lines += _table([md_escape(c) for c in section.columns], rows)
        elif section.kind == "images":
            lines += [f"- Image: {md_escape(img['caption'] or '(no caption)')}" for img in section.images]
            if section.omitted_images:
                lines.append(
                    f"- {section.omitted_images} image(s) omitted (only inline PNG data URIs are shown)."
                )
            if not section.images and not section.omitted_images:
                lines.append("No images.")
        elif section.kind == "keyvalue":
            lines += [f"- {md_escape(k)}: {md_escape(v)}" for k, v in section.pairs.items()]
        elif section.kind == "text":
            lines.append(md_escape(section.text))
        else:
            lines += ["```json", pretty_json(section.value).rstrip("\n").replace("```", "`\u200b``"), "```"]
        lines.append("")
    return lines


def render_gallery_markdown(gallery: Mapping[str, object], *, embedded: bool = False) -> str:
    """Failure gallery Markdown (``embedded`` drops the top-level title)."""
    lines: list[str] = [] if embedded else ["# Evaluation Failure Gallery", ""]
    lines += [
        f"Suite: {md_escape(gallery.get('suite'))} ({md_code(str(gallery.get('suite_id')))})",
        "",
        f"Claim boundary: {md_escape(gallery.get('claim_boundary'))}",
        "",
        f"Metric semantics: {md_escape(gallery.get('metric_semantics'))}",
        "",
        f"Cases: {whole(gallery.get('case_count', 0), 'case_count')}",
        "",
    ]
    if gallery.get("source_input_digest"):
        lines += [f"Source input digest: {md_code(str(gallery['source_input_digest']))}", ""]
    if gallery.get("source_result_digest"):
        lines += [f"Source result digest: {md_code(str(gallery['source_result_digest']))}", ""]
    cases = members(gallery, "cases")
    if not cases:
        return "\n".join(lines + ["No failed evaluation cases.", ""])
    rows = [
        [
            md_code(c["fixture_id"], table=True),
            md_escape(c["provider"]),
            md_escape(c["scenario"]),
            f"{number(c['score'], 'a case score'):.4f}",
        ]
        for c in cases
    ]
    lines += _table(["fixture", "provider", "scenario", "score"], rows) + [""]
    for case in cases:
        lines += [
            f"### {md_escape(case['fixture_id'])} / {md_escape(case['provider'])}",
            "",
            f"- Expected: {md_escape(case['expected_contract_notes'])}",
            f"- Observed: {md_escape(case['observed_result'])}",
            "- Triage:",
        ]
        lines += [f"  {i}. {_triage(str(step))}" for i, step in enumerate(listed(case, "triage_steps"), 1)]
        preview = canonical_json_text(case.get("metrics_preview", {})).replace("```", "`\u200b``")
        lines += ["", "```json", preview, "```", ""]
    return "\n".join(lines)


def _triage(step: str) -> str:
    """Triage steps contain commands in backticks: keep those as code, escape the prose."""
    parts = step.split("`")
    out = []
    for index, part in enumerate(parts):
        if index % 2 and part:
            out.append(md_code(part))
        elif part.strip():
            lead = " " if part[0].isspace() else ""
            trail = " " if part[-1].isspace() else ""
            out.append(lead + md_escape(part) + trail)
        else:
            out.append(" " if part else "")
    return "".join(out)


def render_markdown(payload: Mapping[str, object]) -> str:
    sections = payload.get("sections")
    sections = sections if isinstance(sections, dict) else {}
    lead = {key: sections[key] for key in LEAD_SECTIONS if key in sections}
    lines = [
        "# Evaluation Report",
        "",
        f"Suite: {md_escape(payload.get('suite'))} ({md_code(str(payload.get('suite_id')))})",
        "",
        *_sections(lead),
        f"Claim boundary: {md_escape(payload.get('claim_boundary'))}",
        "",
        f"Metric semantics: {md_escape(payload.get('metric_semantics'))}",
        "",
    ]
    if payload.get("provenance"):
        lines += _provenance(member(payload, "provenance"))
    lines += ["## Provider Summary", ""]
    lines += _table(
        ["provider", "average_score", "passed", "scenarios"],
        [
            [
                md_escape(s["provider"]),
                f"{number(s['average_score'], 'average_score'):.4f}",
                f"{whole(s['passed_scenario_count'], 'passed_scenario_count')}/"
                f"{whole(s['scenario_count'], 'scenario_count')}",
                str(whole(s["scenario_count"], "scenario_count")),
            ]
            for s in members(payload, "provider_summaries")
        ],
    )
    lines += ["", "## Scenario Results", ""]
    rows = []
    for r in members(payload, "results"):
        metrics = canonical_json_text(r.get("metrics", {}))
        if len(metrics) > METRICS_CELL_LIMIT:
            metrics = metrics[: METRICS_CELL_LIMIT - 1] + "…"
        rows.append(
            [
                md_escape(r["provider"]),
                md_escape(r["scenario"]),
                f"{number(r['score'], 'a result score'):.4f}",
                "yes" if r["passed"] else "no",
                md_code(metrics, table=True),
            ]
        )
    lines += _table(["provider", "scenario", "score", "passed", "metrics"], rows)
    lines.append("")
    lines += _sections({key: value for key, value in sections.items() if key not in lead})
    if payload.get("failure_gallery"):
        lines += [
            "## Failure Gallery",
            "",
            render_gallery_markdown(member(payload, "failure_gallery"), embedded=True),
        ]
    return "\n".join(lines).rstrip("\n") + "\n"


__all__ = ["md_code", "md_escape", "render_gallery_markdown", "render_markdown"]
