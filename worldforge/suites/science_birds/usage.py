"""Token and cost accounting: what each (model, program) spent, summed from the item records.

Every item record carries its trial's exchanges as the gateway recorded them, each answer with the
``usage`` the gateway counted against the trial's budget (the same count that bounds each request
before it is forwarded), so the report's totals are sums over the records, never a second count:
a resumed run, a stage-cache hit and a ``--replay`` all report the counts that were recorded. A run
without the gateway has no exchanges; its items' own ``usage`` is summed instead.

Everything here is a pure function of the records (and of the price map, when one is given), so the
``token_usage`` section and ``ranking.json``'s ``usage`` stay byte-stable and digestable. Wall-clock
time spent in the gateway depends on the machine: it is never in these payloads, only in the run's
event log (``gateway.usage`` events, see :func:`wall_seconds_by_program`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from worldforge.config import Price
from worldforge.core.canonical import JSONObject
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.letters import LETTERS
from worldforge.suites.science_birds.records import ItemRecord

#: Digits kept for the derived ratios and costs (the counts themselves are exact integers).
_RATIO_DIGITS = 4
_COST_DIGITS = 6
#: The label of the run's total row.
ALL = "(all)"


@dataclass(frozen=True)
class ItemUsage:
    """One item's requests and tokens, as the gateway counted them."""

    requests: int
    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def item_usage(record: Mapping[str, object]) -> ItemUsage:
    """The item's counts: from its recorded exchanges (every request, answered or refused, and the
    usage of each answer); without exchanges (a run that bypassed the gateway), its ``usage``."""
    exchanges = record.get("exchanges")
    if isinstance(exchanges, list):
        prompt = completion = 0
        for exchange in exchanges:
            response = exchange.get("response") if isinstance(exchange, Mapping) else None
            usage = response.get("usage") if isinstance(response, Mapping) else None
            if isinstance(usage, Mapping):
                prompt += _int(usage.get("prompt_tokens"))
                completion += _int(usage.get("completion_tokens"))
        return ItemUsage(len(exchanges), prompt, completion)
    usage = record.get("usage")
    if isinstance(usage, Mapping):
        return ItemUsage(0, _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")))
    return ItemUsage(0, 0, 0)


def stable_and_recognised(record: Mapping[str, object]) -> bool:
    """A level that scored: no block moved in the simulation, and the classifier's most likely
    letter is the one asked for."""
    if record.get("status") != "ok":
        return False
    stability = record.get("stability")
    softmax = record.get("softmax")
    if not isinstance(stability, Mapping) or stability.get("moving_blocks") != 0:
        return False
    if not isinstance(softmax, list) or len(softmax) != len(LETTERS):
        return False
    best = max(range(len(softmax)), key=lambda i: float(softmax[i]))
    return LETTERS[best] == record.get("letter")


def check_pricing(pricing: Mapping[str, Price] | None, models: Iterable[str]) -> None:
    """A price map that lacks a model of the run is refused before any request: a priced run
    reports the cost of every model or of none."""
    if pricing is None:
        return
    missing = [m for m in models if m not in pricing]
    if missing:
        raise WorldForgeError(
            f"pricing: no price for model(s) {', '.join(missing)}; add them to the `pricing:` map "
            "or remove the map."
        )


@dataclass(frozen=True)
class UsageRow:
    """One (model, program)'s requests and tokens (or the run's total: both :data:`ALL`), the
    stable and recognised levels they bought and, for a priced run, their cost."""

    model: str
    program: str
    requests: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    failed_trial_tokens: int
    stable_recognised_levels: int
    cost: float | None = None

    @property
    def tokens_per_stable_recognised_level(self) -> float | None:
        levels = self.stable_recognised_levels
        return round(self.total_tokens / levels, _RATIO_DIGITS) if levels else None

    def to_dict(self) -> JSONObject:
        """The row as the ``token_usage`` section and ``ranking.json`` carry it (``cost`` only
        when priced)."""
        row: JSONObject = {
            "model": self.model,
            "program": self.program,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "failed_trial_tokens": self.failed_trial_tokens,
            "stable_recognised_levels": self.stable_recognised_levels,
            "tokens_per_stable_recognised_level": self.tokens_per_stable_recognised_level,
        }
        if self.cost is not None:
            row["cost"] = self.cost
        return row


def _row(model: str, program: str, items: Sequence[ItemRecord], price: Price | None) -> UsageRow:
    requests = prompt = completion = total = failed = levels = 0
    for record in items:
        use = item_usage(record)
        requests += use.requests
        prompt += use.prompt_tokens
        completion += use.completion_tokens
        total += use.total_tokens
        if record.get("status") != "ok":
            failed += use.total_tokens
        levels += stable_and_recognised(record)
    cost = round(price.cost(prompt, completion), _COST_DIGITS) if price is not None else None
    return UsageRow(model, program, requests, prompt, completion, total, failed, levels, cost)


def usage_rows(
    records: Mapping[str, ItemRecord],
    models: Sequence[str],
    programs: Sequence[str],
    pricing: Mapping[str, Price] | None = None,
) -> list[UsageRow]:
    """One row per (model, program), in run order, then the run's total row (model and program
    :data:`ALL`); with ``pricing``, each row's cost."""
    by_pair: dict[tuple[str, str], list[ItemRecord]] = {}
    for record in records.values():
        by_pair.setdefault((str(record["model"]), str(record["program"])), []).append(record)
    rows = [
        _row(m, p, by_pair.get((m, p), []), pricing.get(m) if pricing is not None else None)
        for m in models
        for p in programs
    ]
    total = UsageRow(
        ALL,
        ALL,
        sum(r.requests for r in rows),
        sum(r.prompt_tokens for r in rows),
        sum(r.completion_tokens for r in rows),
        sum(r.total_tokens for r in rows),
        sum(r.failed_trial_tokens for r in rows),
        sum(r.stable_recognised_levels for r in rows),
        round(sum(r.cost or 0.0 for r in rows), _COST_DIGITS) if pricing is not None else None,
    )
    return [*rows, total]


def cost_per_program(rows: Sequence[UsageRow]) -> dict[str, float]:
    """Each program's cost over every model (rows of a priced run)."""
    out: dict[str, float] = {}
    for row in rows:
        if row.program != ALL and row.cost is not None:
            out[row.program] = round(out.get(row.program, 0.0) + row.cost, _COST_DIGITS)
    return out


def usage_section(rows: Sequence[UsageRow], stopped: str | None = None) -> JSONObject:
    """The report's ``token_usage`` section: the rows, the total (what ``results/summary.json``
    carries) and, for a priced run, the cost per program."""
    description = (
        "Requests and prompt/completion tokens as the gateway counted them, summed over the item "
        "records; failed_trial_tokens were spent on trials that produced no scored level; a stable "
        "and recognised level has no moving block and is classified as its letter."
    )
    if stopped:
        description += f" Generation stopped early: {stopped}"
    total = rows[-1].to_dict()
    if stopped:
        total["stopped"] = stopped
    section: JSONObject = {
        "title": "Token usage per model and program",
        "description": description,
        "rows": [r.to_dict() for r in rows],
        "total": total,
    }
    costs: JSONObject = {**cost_per_program(rows)}
    if costs:
        section["cost_per_program"] = costs
    if stopped:
        section["stopped"] = stopped
    return section


class WallSeconds(TypedDict):
    """Gateway wall-clock seconds one (model, program) spent (machine-dependent: events only)."""

    model: str
    program: str
    gateway_wall_seconds: float


def wall_seconds_by_program(
    seconds: Mapping[str, float], records: Mapping[str, ItemRecord]
) -> list[WallSeconds]:
    """Gateway wall-seconds per (model, program) from the gateway's per-item times (this run's
    requests only: reused items spent none). For the event log, never for a digested payload."""
    totals: dict[tuple[str, str], float] = {}
    for item_id, value in seconds.items():
        record = records.get(item_id)
        if record is not None:
            pair = (str(record["model"]), str(record["program"]))
            totals[pair] = totals.get(pair, 0.0) + value
    return [
        {"model": m, "program": p, "gateway_wall_seconds": round(s, 3)}
        for (m, p), s in sorted(totals.items())
    ]


__all__ = [
    "ALL",
    "ItemUsage",
    "UsageRow",
    "WallSeconds",
    "check_pricing",
    "cost_per_program",
    "item_usage",
    "stable_and_recognised",
    "usage_rows",
    "usage_section",
    "wall_seconds_by_program",
]
