"""The science-birds report payload read back into typed values for its HTML page.

The HTML renderer may not recompute or add numbers (every format renders the same canonical
payload, and the payload's digests must not move), so the charts are drawn from the sections the
suite already writes: the ranking rows, the per-letter and weight rows, the gallery captions
(``"A | mock | trial 1 | sta 1.00 sim 0.94"``) and the failed-trial item ids
(``<model>__<program>__<letter>__<trial>``). Anything that does not have the expected shape makes
:func:`read_view` return None, and the generic page is rendered instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from worldforge.core.canonical import JSON, JSONObject
from worldforge.pcg.programs.prompt import BUILTIN_PROGRAMS, ZERO_SHOT_BASELINE
from worldforge.reports.sections import is_safe_png_data_uri

SUITE_ID = "science-birds"
_CAPTION_RE = re.compile(
    r"^(?P<letter>[A-Z]) \| (?P<model>.+) \| trial (?P<trial>\d+) \| "
    r"sta (?P<sta>-?\d+(?:\.\d+)?) sim (?P<sim>-?\d+(?:\.\d+)?)$"
)
_ITEM_TAIL_RE = re.compile(r"^(?P<letter>[A-Z])__(?P<trial>\d+)$")
_MODEL_KEY_RE = re.compile(r"^prompt\[(?P<model>.+)\]$")


@dataclass(frozen=True, slots=True)
class Trial:
    """One trial as the report shows it: its level image, or the stage and reason it failed."""

    model: str
    trial: int
    sta: float | None = None
    sim: float | None = None
    src: str | None = None
    failed_stage: str | None = None
    error: str | None = None

    @property
    def quality(self) -> float:
        return (self.sta or 0.0) * (self.sim or 0.0)


@dataclass(frozen=True, slots=True)
class Program:
    """A ranking row: the program's totals, per-model prompt scores and whether it is a baseline;
    ``low``/``high`` are its 95 % interval when the report carries one (``ci95_low``/``ci95_high``)."""

    name: str
    #: The ranking row's rank (``None`` for a baseline, which is scored but not ranked).
    rank: JSON
    normalized: float
    total: float
    per_model: dict[str, float]
    winner: bool
    baseline: bool
    row: JSONObject
    low: float | None = None
    high: float | None = None


@dataclass(slots=True)
class View:
    programs: list[Program]
    models: list[str]
    letters: list[str]
    #: (program, letter) -> {"char" | "sta" | "sim" | "div": {model: value}}
    per_letter: dict[tuple[str, str], dict[str, dict[str, float]]]
    #: (model, letter) -> {"weight": ..., "w_sta": ..., ...}
    weights: dict[tuple[str, str], dict[str, float]]
    #: (program, letter) -> trials sorted by (model order, trial)
    trials: dict[tuple[str, str], list[Trial]] = field(default_factory=dict)
    #: captions of gallery images whose caption could not be read (shown as a plain gallery)
    other_images: list[dict[str, str]] = field(default_factory=list)
    winner: JSONObject = field(default_factory=dict)

    @property
    def zero_shot(self) -> Program | None:
        return next((p for p in self.programs if p.name == ZERO_SHOT_BASELINE), None)

    def best(self, program: str, letter: str) -> Trial | None:
        """The trial with the highest stability x similarity (first by model, then trial, on ties)."""
        shown = [t for t in self.trials.get((program, letter), []) if t.src]
        return max(shown, key=lambda t: t.quality, default=None)


def _slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model)


def _float(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def _rows(sections: Mapping[str, object], key: str) -> list[JSONObject]:
    """A section's table rows (the payload is JSON, so a row that is a dict is a JSON object)."""
    value = sections.get(key)
    rows = value.get("rows") if isinstance(value, Mapping) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise TypeError(f"section {key!r} has no rows")
    return rows


def read_view(payload: Mapping[str, object]) -> View | None:
    """The typed view of a science-birds payload, or None when it is not one (or is malformed)."""
    sections = payload.get("sections")
    if payload.get("suite_id") != SUITE_ID or not isinstance(sections, Mapping):
        return None
    try:
        return _read(sections)
    except (KeyError, TypeError, ValueError):
        return None


def _read(sections: Mapping[str, object]) -> View | None:
    ranking = _rows(sections, "ranking")
    if not ranking:
        return None
    models = [m.group("model") for k in ranking[0] if (m := _MODEL_KEY_RE.match(str(k)))]
    programs = [
        Program(
            name=str(row["program"]),
            rank=row.get("rank"),
            normalized=_float(row["normalized"]),
            total=_float(row["total"]),
            per_model={m: _float(row[f"prompt[{m}]"]) for m in models},
            winner=bool(row.get("winner")),
            baseline=str(row["program"]) in BUILTIN_PROGRAMS,
            row=row,
            low=_float(row["ci95_low"]) if "ci95_low" in row else None,
            high=_float(row["ci95_high"]) if "ci95_high" in row else None,
        )
        for row in ranking
    ]
    letters: list[str] = []
    per_letter: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for row in _rows(sections, "per_letter"):
        letter, program = str(row["letter"]), str(row["program"])
        if letter not in letters:
            letters.append(letter)
        per_letter[(program, letter)] = {
            kind: {m: _float(row[f"{kind}[{m}]"]) for m in models} for kind in ("char", "sta", "sim", "div")
        }
    weights = {
        (str(row["model"]), str(row["letter"])): {
            k: _float(v) for k, v in row.items() if k not in ("model", "letter")
        }
        for row in _rows(sections, "weights_per_letter")
    }
    winner = sections.get("winner")
    view = View(
        programs,
        models,
        letters,
        per_letter,
        weights,
        winner=dict(winner) if isinstance(winner, Mapping) else {},
    )
    _read_trials(view, sections)
    return view


def _read_trials(view: View, sections: Mapping[str, object]) -> None:
    order = {m: i for i, m in enumerate(view.models)}
    found: dict[tuple[str, str, str, int], Trial] = {}
    for prog in view.programs:
        gallery = sections.get(f"gallery[{prog.name}]")
        images = gallery.get("images") if isinstance(gallery, Mapping) else None
        for image in images if isinstance(images, list) else []:
            if not isinstance(image, Mapping) or not is_safe_png_data_uri(image.get("src")):
                continue
            caption = str(image.get("caption", ""))
            m = _CAPTION_RE.match(caption)
            if m is None or m.group("model") not in order:
                view.other_images.append({"caption": caption, "src": str(image["src"])})
                continue
            key = (prog.name, m.group("letter"), m.group("model"), int(m.group("trial")))
            found[key] = Trial(
                m.group("model"), key[3], float(m.group("sta")), float(m.group("sim")), str(image["src"])
            )
    failed = sections.get("failed_trials")
    rows = failed.get("rows") if isinstance(failed, Mapping) else None
    slugs = {_slug(m): m for m in view.models}
    for row in rows if isinstance(rows, list) else []:
        where = _item_key(str(row.get("item", "")) if isinstance(row, Mapping) else "", slugs, view)
        if where is None:
            continue
        prior = found.get(where)
        found[where] = Trial(
            where[2],
            where[3],
            prior.sta if prior else None,
            prior.sim if prior else None,
            prior.src if prior else None,
            failed_stage=str(row.get("failed_stage") or "unknown"),
            error=str(row.get("error") or ""),
        )
    for (program, letter, _, _), trial in sorted(found.items(), key=lambda kv: (order[kv[0][2]], kv[0][3])):
        view.trials.setdefault((program, letter), []).append(trial)


def _item_key(item: str, slugs: Mapping[str, str], view: View) -> tuple[str, str, str, int] | None:
    """``<model slug>__<program>__<letter>__<trial>`` back to its parts, matching known names (a
    model or program name may itself contain ``__``)."""
    for slug, model in slugs.items():
        for prog in view.programs:
            prefix = f"{slug}__{prog.name}__"
            if item.startswith(prefix) and (m := _ITEM_TAIL_RE.match(item[len(prefix) :])):
                return prog.name, m.group("letter"), model, int(m.group("trial"))
    return None


__all__ = ["SUITE_ID", "Program", "Trial", "View", "read_view"]
