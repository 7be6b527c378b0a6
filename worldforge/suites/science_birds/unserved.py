"""Replies the model never served: the competition's rule, the evidence count and how the report says it.

The rules forbid changing the model's reply before it is returned. For every submission trial that
returns a reply, the generate stage records ``submission.reply_is_model_output``: whether the text
is byte-equal to a choice the gateway served to that trial. Hard-coded text, an edited reply or a
file the program wrote without asking the model are all ``false``.

Such a trial is scored as the official pipeline scores a trial without output: a failed trial (no
level, stability and similarity 0, absent from the diversity pairs), failed at ``generate`` with
:data:`UNSERVED_ERROR`. The record still holds the returned text, its digest and the evidence, so
the decision can be checked. ``keep_unserved_replies`` (``--keep-unserved-replies``) scores the
text as returned instead, for studying a program rather than ranking it.

The rule is applied right after generation, after the stage cache: the cached generate value is
what the program returned, whatever the rule, so toggling the switch never needs the model again.

Only runs with submissions carry the count (per program in the ranking and ``ranking.json``, per
model and program in the results, one row per trial in its own section): prompt programs' replies
are the gateway's by construction, and a run without submissions keeps the payload, and so the
digests, it always had.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.digests import digest_text
from worldforge.pcg.programs.prompt import Program
from worldforge.pcg.programs.submission import SubmissionProgram
from worldforge.suites.science_birds.records import GeneratedReply, ItemRecord

UNSERVED_ERROR = "submission: the reply is not a model output (the rules forbid changing the reply)"
KEEP_FLAG = "--keep-unserved-replies"
SECTION = "unserved_replies"


def is_unserved(value: Mapping[str, object]) -> bool:
    """A generated value (or record) whose reply the gateway never served to its trial."""
    submission = value.get("submission")
    return isinstance(submission, Mapping) and submission.get("reply_is_model_output") is False


def apply_rule(value: GeneratedReply, *, keep: bool) -> GeneratedReply:
    """The generated value as the rule scores it: an unserved reply becomes a failed trial (the
    reply stays in the value as evidence; the error keeps it away from the level stages)."""
    if keep or not isinstance(value.get("reply"), str) or not is_unserved(value):
        return value.copy()
    return {**value, "error": UNSERVED_ERROR}


def has_submissions(programs: Sequence[Program]) -> bool:
    return any(isinstance(p, SubmissionProgram) for p in programs)


def unserved_counts(
    records: Mapping[str, ItemRecord], programs: Sequence[Program], model: str | None = None
) -> dict[str, int] | None:
    """Unserved replies per program (of one model, or all), or ``None`` for a run without submissions."""
    if not has_submissions(programs):
        return None
    counts = {p.name: 0 for p in programs}
    for record in records.values():
        if (model is None or record.get("model") == model) and is_unserved(record):
            counts[str(record["program"])] = counts.get(str(record["program"]), 0) + 1
    return counts


def treatment(keep: bool) -> str:
    """How this run scored them (the measurement section: what produced the numbers)."""
    if keep:
        return f"scored as returned ({KEEP_FLAG}; the competition scores them 0)"
    return "scored 0, as the rules require"


def _returned_digest(record: ItemRecord) -> str | None:
    """The digest of the text the trial returned (kept whole, or only as its digest when rejected)."""
    reply = record.get("reply")
    return digest_text(reply) if isinstance(reply, str) else record.get("reply_digest")


def unserved_section(records: Mapping[str, ItemRecord], keep: bool) -> JSONObject:
    """One row per trial whose reply was not served, with the digest of what it returned."""
    rows: list[JSON] = [
        {
            "item": r["item_id"],
            "program": r["program"],
            "model": r["model"],
            "letter": r["letter"],
            "trial": r["trial"],
            "reply_digest": _returned_digest(r),
            "status": r.get("status"),
        }
        for r in sorted(records.values(), key=lambda r: str(r["item_id"]))
        if is_unserved(r)
    ]
    return {
        "title": "Replies the model never served",
        "description": (
            f"{len(rows)} submission trial(s) returned text that is not byte-equal to any reply the "
            f"gateway served to the trial; {treatment(keep)}."
        ),
        "rows": rows,
    }


def provenance_note(records: Mapping[str, ItemRecord], programs: Sequence[Program], keep: bool) -> str:
    """The provenance notes' clause (empty for a run without submissions)."""
    counts = unserved_counts(records, programs)
    if counts is None:
        return ""
    return f"; {sum(counts.values())} unserved replies, {treatment(keep)}"


__all__ = [
    "KEEP_FLAG",
    "SECTION",
    "UNSERVED_ERROR",
    "apply_rule",
    "has_submissions",
    "is_unserved",
    "provenance_note",
    "treatment",
    "unserved_counts",
    "unserved_section",
]
