"""The whole field in one run: team folders qualified before any trial, as the organisers ran them.

``--programs DIR|ZIP`` takes every team folder of a folder or a ``.zip`` (read through the safe
walker: see :mod:`worldforge.pcg.programs.field`). Each team, and each submission given with
``--program``, is checked by the static qualification rules (:mod:`worldforge.pcg.programs.qualify`)
before anything runs. A team that does not qualify is reported with its reasons in the
qualification table, which is an artifact of the run (so it is bundled and attested); it is not
run, not ranked and not in the normalization sum, and the other teams run. ``--run-unqualified``
runs them anyway (the table still says they did not qualify): static checks are evidence, not
proof, and an organiser may want to see what such a program does in the sandbox.

Each submission team also gets a sanitized summary the organiser can send it: what failed, where,
and the last lines it printed (``science-birds/teams/<team>.md``).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.digests import digest_file
from worldforge.core.errors import WorldForgeError
from worldforge.core.redact import sanitize_text
from worldforge.pcg.programs.prompt import Program
from worldforge.pcg.programs.qualify import QualificationRecord
from worldforge.pcg.programs.submission import SubmissionProgram, looks_like_submission
from worldforge.suites.science_birds.records import ItemRecord

#: Where a ``.zip`` field is unpacked: one folder per archive digest, so a resumed run reads the
#: same team folders at the same paths.
FIELD_ROOT = Path(tempfile.gettempdir()) / "worldforge-fields"


class QualificationRow(QualificationRecord):
    """One team checked before the run: the verdict and where the team came from (``--program``
    or the field folder's name); a ``.zip`` field's ignored entries are added to its ``notes``."""

    source: str


def _sources(options: Mapping[str, Any]) -> list[str]:
    value = options.get("field")
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _extraction(source: Path) -> Path | None:
    if source.suffix.lower() != ".zip":
        return None
    if not source.is_file():
        raise WorldForgeError(f"--programs: {source}: no such file.")
    folder = FIELD_ROOT / digest_file(source).removeprefix("sha256:")[:24]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def qualify_programs(options: Mapping[str, Any]) -> tuple[list[str], list[QualificationRow]]:
    """The program specs to run and the qualification table (one row per team checked).

    ``--program`` values that are submissions are checked too: one that does not qualify is a
    usage error when it is the only program, else a row of the table. Prompt folders and built-in
    programs are not submissions and are not checked."""
    explicit = options.get("programs", options.get("program"))
    explicit_list = [explicit] if isinstance(explicit, str) else [str(v) for v in explicit or []]
    sources = _sources(options)
    if not sources and not any(looks_like_submission(spec) for spec in explicit_list):
        return explicit_list, []  # prompt programs only: nothing to qualify
    from worldforge.pcg.programs.field import team_folders
    from worldforge.pcg.programs.qualify import qualify_team

    run_unqualified = bool(options.get("run_unqualified", False))
    specs: list[str] = []
    table: list[QualificationRow] = []
    for spec in explicit_list:
        if not looks_like_submission(spec):
            specs.append(spec)
            continue
        verdict = qualify_team(Path(spec))
        table.append({**verdict.to_dict(), "source": "--program"})
        if verdict.qualified or run_unqualified:
            specs.append(spec)
        elif len(explicit_list) == 1 and not sources:
            raise WorldForgeError(f"{spec}: not qualified: {'; '.join(verdict.reasons)}")
    for source in sources:
        path = Path(source)
        teams, ignored = team_folders(path, extract_to=_extraction(path))
        if not teams:
            raise WorldForgeError(f"--programs: {source}: no team folder in it.")
        for team in teams:
            verdict = qualify_team(team.path, name=team.name)
            row: QualificationRow = {**verdict.to_dict(), "source": path.name}
            if ignored:
                row["notes"] = [*row["notes"], *(f"ignored in {path.name}: {i}" for i in ignored)]
            table.append(row)
            if verdict.qualified or run_unqualified:
                specs.append(str(team.path))
    return specs, table


def qualification_rows(table: Sequence[QualificationRow], ran: set[str]) -> JSONObject:
    """The report's qualification section: one row per team, whether it ran."""
    rows: list[JSON] = [
        {
            "team": row["team"],
            "qualified": bool(row["qualified"]),
            "ran": row["team"] in ran,
            "package": row.get("package"),
            "entry": row.get("entry"),
            "reasons": "; ".join(sanitize_text(str(r)) for r in row.get("reasons") or []),
            "source": row.get("source"),
        }
        for row in table
    ]
    qualified = sum(1 for row in table if row["qualified"])
    return {
        "title": "Qualification",
        "description": (
            f"{qualified} of {len(rows)} submission team(s) qualified by the static rules (see "
            "worldforge pcg qualify); a team that did not qualify is not ranked and not in the "
            "normalization sum."
        ),
        "rows": rows,
    }


def team_summaries(
    table: Sequence[QualificationRow],
    records: Mapping[str, ItemRecord],
    programs: Sequence[Program],
    tails: Mapping[str, str],
) -> dict[str, str]:
    """``science-birds/teams/<team>.md`` per submission team: sanitized, ready to send."""
    out: dict[str, str] = {}
    submission_names = {p.name for p in programs if isinstance(p, SubmissionProgram)}
    verdicts = {str(row["team"]): row for row in table}
    for team in sorted(submission_names | set(verdicts)):
        lines = [f"# {team}: evaluation summary", ""]
        verdict = verdicts.get(team)
        if verdict is not None and not verdict.get("qualified"):
            lines += [
                "Not qualified:",
                *(f"- {sanitize_text(str(r))}" for r in verdict.get("reasons") or []),
                "",
            ]
        mine = {k: r for k, r in records.items() if r.get("program") == team}
        failed = {k: r for k, r in mine.items() if r.get("status") != "ok"}
        if mine:
            lines.append(f"{len(mine)} trials, {len(failed)} failed.")
        reasons = Counter(sanitize_text(str(r.get("error") or "failed"))[:300] for r in failed.values())
        if reasons:
            lines += ["", "What failed (trials):"]
            lines += [
                f"- {count} x {reason}" for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])
            ]
        where = sorted({str(spot) for r in failed.values() if (spot := _where(r))})
        if where:
            lines += ["", "Where: " + ", ".join(where[:10])]
        shown = [k for k in sorted(failed) if tails.get(k, "").strip()][:3]
        for item in shown:
            tail = sanitize_text(tails[item]).strip().splitlines()[-12:]
            lines += ["", f"Last lines printed ({item}):", "", "```", *tail, "```"]
        if len(lines) > 2:
            out[f"science-birds/teams/{team}.md"] = "\n".join(lines) + "\n"
    return out


def _where(record: ItemRecord) -> JSON:
    """Where a submission trial raised, as its host reported it (``None`` when it did not say)."""
    evidence = record.get("submission")
    return evidence.get("where") if evidence is not None else None


__all__ = ["FIELD_ROOT", "QualificationRow", "qualification_rows", "qualify_programs", "team_summaries"]
