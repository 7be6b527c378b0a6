"""``runs diff A B`` for two science-birds runs: how far each program moved, and whether it is noise.

The workspace's diff (:mod:`worldforge.workspace.diff`) says which digests changed; for two
science-birds evaluations this adds, read from the item records alone (``items/*.json``, never the
reports, so a record edited by hand is what is compared):

* programs matched by program digest; a program whose digest changed is matched by name
  (``modified``), a program whose prompts are the same under another name by its prompts
  (``renamed``); the rest are ``added`` / ``removed``;
* cells matched by (model, letter) over the models and letters both runs scored;
* per matched program Δ prompt score and Δ normalized with a paired letter-bootstrap 95 % interval,
  the paired sign-flip p and its Holm adjustment (:mod:`.compare_stats`);
* the letters whose stability or similarity moved most, with both runs' levels side by side;
* which stages changed: replayed or new replies, classifier weights, physics version.

Character scores are each run's own (its weights, diversity and trials), except that B's are put
on run A's per-letter weights: the competition's weight of a letter rises when programs do worse on
it, which would otherwise hide part of a drop. Runs that differ in suite, letters, models or trials
are compared on what matches and the rest is listed; nothing about two valid runs raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

import numpy as np

from worldforge.core.canonical import JSONObject
from worldforge.core.digests import digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.programs.prompt import PromptProgram
from worldforge.pcg.scoring.uncertainty import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MIN_LETTERS,
    MIN_PROGRAMS,
    rounded,
)
from worldforge.suites.science_birds.compare_stats import (
    MethodNote,
    ProgramChange,
    ProgramChangePayload,
    mean_or_zero,
    method_note,
    paired_changes,
)
from worldforge.suites.science_birds.records import ItemRecord, is_item_record
from worldforge.suites.science_birds.scores import score_model
from worldforge.workspace.entries import InputEntry
from worldforge.workspace.eventlog import read_chain
from worldforge.workspace.layout import EVENTS_NAME
from worldforge.workspace.records import iter_item_files, read_run_manifest

SUITE = "science-birds"
SCHEMA = "worldforge.run-comparison/1"
#: How many moved letters the comparison lists (and the HTML gallery shows).
MOVED_LETTERS = 8


class ProgramMatch(TypedDict):
    """A program of run A (``a``) matched to one of run B (``b``), and by which rule."""

    a: str
    b: str
    #: ``same`` (digest), ``modified`` (name) or ``renamed`` (prompts).
    match: str


class ProgramPair(TypedDict):
    """A program of either run: matched, ``removed`` (only in A) or ``added`` (only in B)."""

    a: str | None
    b: str | None
    match: str


class MovedLetter(TypedDict):
    """A (program, model, letter) cell whose mean stability or similarity moved: A's value, then B's."""

    program: str
    model: str
    letter: str
    stability: list[float]
    similarity: list[float]
    moved: float
    thumbnails: list[str | None]


class StageChange(TypedDict):
    """Whether a stage changed across the matched cells; the classifier and physics rows name the
    versions or weights each run used."""

    stage: str
    changed: bool
    differing: int
    a: NotRequired[list[str]]
    b: NotRequired[list[str]]
    note: str


class ComparisonPayload(TypedDict):
    """:meth:`RunComparison.to_dict`: the ``science_birds`` part of ``runs diff --format json``."""

    schema: str
    a: str
    b: str
    status: str
    reason: str | None
    letters: str
    models: list[str]
    programs: list[ProgramPair]
    changes: list[ProgramChangePayload]
    regressions: list[str]
    moved_letters: list[MovedLetter]
    stages: list[StageChange]
    mismatches: list[str]
    method: MethodNote


@dataclass
class RunSide:
    """What the comparison reads of one run: its manifest's evaluation input and its item records."""

    run_id: str
    suite: str | None
    letters: tuple[str, ...]
    trials: int
    models: tuple[str, ...]
    programs: dict[str, str | None]  # name -> program digest (None when the manifest lacks it)
    records: list[ItemRecord] = field(default_factory=list)
    replay_of: str | None = None

    def cells(self) -> dict[tuple[str, str, str, int], ItemRecord]:
        """Records by (program, model, letter, trial)."""
        return {
            (str(r["program"]), str(r["model"]), str(r["letter"]), int(r["trial"])): r for r in self.records
        }

    def prompt_key(self, program: str) -> str | None:
        """The program's prompts for every letter, by digest: equal under a rename."""
        seen: dict[str, list[str]] = {}
        for r in self.records:
            if r["program"] == program and isinstance(r.get("prompt_digests"), list):
                seen.setdefault(str(r["letter"]), r["prompt_digests"])
        return digest_payload(dict(sorted(seen.items()))) if seen else None


def _evaluation_value(inputs: Sequence[InputEntry]) -> JSONObject:
    for entry in inputs:
        value = entry.get("value")
        if entry.get("name") == "evaluation" and isinstance(value, dict):
            return dict(value)
    return {}


def _replay_of(run_dir: Path) -> str | None:
    """The run whose replies answered this one (``eval --replay``), from its gateway's start event."""
    for event in read_chain(run_dir / EVENTS_NAME).events:
        if event.get("type") == "gateway.started":
            source = (event.get("payload") or {}).get("replay_of")
            return str(source) if source else None
    return None


def _records(run_dir: Path) -> list[ItemRecord]:
    """The item records that carry a scored cell; unreadable files, and records that are not whole,
    are skipped (``verify`` finds them)."""
    return [item.record for item in iter_item_files(run_dir) if is_item_record(item.record)]


def load_side(run_dir: Path) -> RunSide:
    """One run as the comparison sees it (``WorldForgeError`` when it is not a run at all)."""
    manifest = read_run_manifest(run_dir)
    value = _evaluation_value(manifest.inputs)
    found = value.get("config")
    config: JSONObject = found if isinstance(found, dict) else {}
    records = _records(run_dir)
    letters = str(config.get("letters") or "") or "".join(sorted({str(r["letter"]) for r in records}))
    programs: dict[str, str | None] = {}
    listed = config.get("programs")
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, dict) and entry.get("name"):
            programs[str(entry["name"])] = str(entry["digest"]) if entry.get("digest") else None
    for r in records:
        programs.setdefault(str(r["program"]), None)
    models = value.get("models")
    model_names = tuple(models) if isinstance(models, dict) else ()
    model_names += tuple(sorted({str(r["model"]) for r in records} - set(model_names)))
    trials = config.get("trials")
    if not isinstance(trials, int):
        trials = max((int(r["trial"]) for r in records), default=0)
    suite = value.get("suite_id") or manifest.config.get("suite")
    return RunSide(
        run_id=manifest.run_id,
        suite=str(suite) if suite else None,
        letters=tuple(letters),
        trials=trials,
        models=model_names,
        programs=programs,
        records=records,
        replay_of=_replay_of(run_dir),
    )


def match_programs(a: RunSide, b: RunSide) -> tuple[list[ProgramMatch], list[str], list[str]]:
    """Matched programs (``{"a", "b", "match"}``), then the removed and the added ones."""
    left, right = list(a.programs), list(b.programs)
    matched: list[ProgramMatch] = []

    def take(rule: str, same: Callable[[str, str], bool]) -> None:
        for name_a in list(left):
            partner = next((n for n in right if same(name_a, n)), None)
            if partner is not None:
                matched.append({"a": name_a, "b": partner, "match": rule})
                left.remove(name_a)
                right.remove(partner)

    take("same", lambda x, y: a.programs[x] is not None and a.programs[x] == b.programs[y])
    take("modified", lambda x, y: x == y)
    keys_a = {n: a.prompt_key(n) for n in left}
    keys_b = {n: b.prompt_key(n) for n in right}
    take("renamed", lambda x, y: keys_a[x] is not None and keys_a[x] == keys_b[y])
    return matched, left, right


def _stand_ins(names: Sequence[str]) -> list[PromptProgram]:
    """Programs by name only: scoring reads names from them; prompt lengths only break rank ties."""
    return [PromptProgram(name=n, turns=()) for n in names]


def character_scores(
    side: RunSide, models: Sequence[str]
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, float]]]:
    """``scores[model][program][letter]`` and ``weights[model][letter]`` as the run scored them."""
    names = list(side.programs)
    scores: dict[str, dict[str, dict[str, float]]] = {}
    weights: dict[str, dict[str, float]] = {}
    for model in models:
        mine = [r for r in side.records if r["model"] == model]
        ms = score_model(model, mine, _stand_ins(names), side.letters, side.trials)
        scores[model] = ms.char_scores
        weights[model] = {c: w["weight"] for c, w in ms.weights.items()}
    return scores, weights


def _matrix(
    scores: Mapping[str, Mapping[str, Mapping[str, float]]],
    programs: Sequence[str],
    letters: Sequence[str],
    scale: Mapping[str, Mapping[str, float]] | None = None,
) -> np.ndarray:
    """Letters x programs, summed over models; ``scale[model][letter]`` multiplies a model's scores."""
    out = np.zeros((len(letters), len(programs)), dtype=np.float64)
    for model, by_program in scores.items():
        for k, program in enumerate(programs):
            for j, letter in enumerate(letters):
                factor = 1.0 if scale is None else scale[model][letter]
                out[j, k] += by_program.get(program, {}).get(letter, 0.0) * factor
    return out


def _means(records: Sequence[ItemRecord], key: Literal["sta", "sim"]) -> float:
    return mean_or_zero([float(r[key] or 0.0) if r.get("status") == "ok" else 0.0 for r in records])


def _by_cell(side: RunSide) -> dict[tuple[str, str, str], list[ItemRecord]]:
    """Records by (program, model, letter), in trial order."""
    groups: dict[tuple[str, str, str], list[ItemRecord]] = {}
    for (program, model, letter, _), record in sorted(side.cells().items()):
        groups.setdefault((program, model, letter), []).append(record)
    return groups


def moved_letters(
    a: RunSide,
    b: RunSide,
    matched: Sequence[ProgramMatch],
    models: Sequence[str],
    letters: Sequence[str],
) -> list[MovedLetter]:
    """The (program, model, letter) cells whose mean stability or similarity moved most."""
    groups_a, groups_b = _by_cell(a), _by_cell(b)
    rows: list[MovedLetter] = []
    for pair in matched:
        for model in models:
            for letter in letters:
                ra = groups_a.get((pair["a"], model, letter), [])
                rb = groups_b.get((pair["b"], model, letter), [])
                if not ra or not rb:
                    continue
                sta = (_means(ra, "sta"), _means(rb, "sta"))
                sim = (_means(ra, "sim"), _means(rb, "sim"))
                moved = abs(sta[1] - sta[0]) + abs(sim[1] - sim[0])
                if rounded(moved) == 0.0:
                    continue
                rows.append(
                    {
                        "program": pair["b"],
                        "model": model,
                        "letter": letter,
                        "stability": [rounded(sta[0]), rounded(sta[1])],
                        "similarity": [rounded(sim[0]), rounded(sim[1])],
                        "moved": rounded(moved),
                        "thumbnails": [ra[0].get("thumbnail"), rb[0].get("thumbnail")],
                    }
                )
    rows.sort(key=lambda r: (-r["moved"], r["program"], r["model"], r["letter"]))
    return rows[:MOVED_LETTERS]


def _stage_values(records: Sequence[ItemRecord], stage: str, key: str) -> list[str]:
    values = set()
    for r in records:
        meta: Mapping[str, object] | None = (r.get("stages") or {}).get(stage)
        value = meta.get(key) if isinstance(meta, dict) else None
        if value:
            values.add(str(value))
    return sorted(values)


def _stage_digest(record: ItemRecord, stage: str) -> object:
    """The digest a record's stage entry holds (``None`` when the stage did not run)."""
    entry: Mapping[str, object] | None = (record.get("stages") or {}).get(stage)
    return (entry or {}).get("digest")


def stage_changes(a: RunSide, b: RunSide, matched: Sequence[ProgramMatch]) -> list[StageChange]:
    """Which stages changed across the matched cells: replies, classifier weights, physics code."""
    names = {p["a"]: p["b"] for p in matched}
    cells_b = b.cells()
    pairs = [
        (ra, cells_b[cell])
        for (p, m, c, t), ra in sorted(a.cells().items())
        if p in names and (cell := (names[p], m, c, t)) in cells_b
    ]

    def differing(stage: str) -> int:
        return sum(1 for ra, rb in pairs if _stage_digest(ra, stage) != _stage_digest(rb, stage))

    recs_a, recs_b = [p[0] for p in pairs], [p[1] for p in pairs]
    replies = differing("generate")
    if not pairs:
        generation = "no cell was scored in both runs"
    elif b.replay_of is not None and b.replay_of == a.run_id:
        generation = f"replayed: B answered every request from A's recorded replies ({replies} differ)"
    elif b.replay_of is not None:
        generation = f"replayed from another run ({b.replay_of}); {replies} of {len(pairs)} replies differ"
    elif replies:
        generation = f"new replies: {replies} of {len(pairs)} differ"
    else:
        generation = f"the same replies in all {len(pairs)} cells"
    rows: list[StageChange] = [
        {"stage": "generation", "changed": replies > 0, "differing": replies, "note": generation}
    ]
    for stage, label, key in (
        ("classify", "classifier", "weights_digest"),
        ("simulate", "physics", "version"),
    ):
        va, vb = _stage_values(recs_a, stage, key), _stage_values(recs_b, stage, key)
        count = differing(stage)
        rows.append(
            {
                "stage": label,
                "changed": va != vb,
                "differing": count,
                "a": va,
                "b": vb,
                "note": f"{key} {'changed' if va != vb else 'unchanged'}; {count} of {len(pairs)} "
                f"{stage} results differ",
            }
        )
    return rows


@dataclass
class RunComparison:
    """The science-birds part of ``runs diff``: JSON-native via :meth:`to_dict`."""

    a: str
    b: str
    status: str
    reason: str | None
    letters: tuple[str, ...]
    models: tuple[str, ...]
    programs: list[ProgramPair]
    changes: list[ProgramChange]
    moved: list[MovedLetter]
    stages: list[StageChange]
    mismatches: list[str]
    resamples: int
    seed: int

    @property
    def regressions(self) -> list[str]:
        return [c.program for c in self.changes if c.regressed]

    def to_dict(self) -> ComparisonPayload:
        return {
            "schema": SCHEMA,
            "a": self.a,
            "b": self.b,
            "status": self.status,
            "reason": self.reason,
            "letters": "".join(self.letters),
            "models": list(self.models),
            "programs": self.programs,
            "changes": [c.to_dict() for c in self.changes],
            "regressions": self.regressions,
            "moved_letters": self.moved,
            "stages": self.stages,
            "mismatches": self.mismatches,
            "method": method_note(self.resamples, self.seed),
        }


def _mismatches(a: RunSide, b: RunSide, removed: Sequence[str], added: Sequence[str]) -> list[str]:
    out: list[str] = []
    if set(a.letters) != set(b.letters):
        only_a = "".join(c for c in a.letters if c not in b.letters) or "none"
        only_b = "".join(c for c in b.letters if c not in a.letters) or "none"
        out.append(f"letters: only in A {only_a}, only in B {only_b}; the shared letters are compared")
    if a.trials != b.trials:
        out.append(f"trials: A ran {a.trials} per letter, B {b.trials}; character scores are each run's own")
    for label, left, right in (("models", a.models, b.models),):
        if set(left) != set(right):
            out.append(
                f"{label}: only in A {', '.join(sorted(set(left) - set(right))) or 'none'}, only in B "
                f"{', '.join(sorted(set(right) - set(left))) or 'none'}; the shared models are compared"
            )
    if removed:
        out.append(f"programs only in A (removed): {', '.join(removed)}")
    if added:
        out.append(f"programs only in B (added): {', '.join(added)}")
    return out


def compare_sides(a: RunSide, b: RunSide, *, resamples: int, seed: int) -> RunComparison:
    """The comparison of two loaded runs (see the module docstring)."""
    matched, removed, added = match_programs(a, b)
    letters = tuple(c for c in a.letters if c in b.letters)
    models = tuple(m for m in a.models if m in b.models)
    mismatches = _mismatches(a, b, removed, added)
    programs: list[ProgramPair] = [{"a": p["a"], "b": p["b"], "match": p["match"]} for p in matched]
    programs += [{"a": n, "b": None, "match": "removed"} for n in removed]
    programs += [{"a": None, "b": n, "match": "added"} for n in added]

    def result(status: str, reason: str | None, changes: list[ProgramChange]) -> RunComparison:
        moved = moved_letters(a, b, matched, models, letters) if status != "not-comparable" else []
        stages = stage_changes(a, b, matched) if status != "not-comparable" else []
        return RunComparison(
            a.run_id, b.run_id, status, reason, letters, models, programs, changes, moved, stages,
            mismatches, resamples, seed,
        )  # fmt: skip

    if a.suite != SUITE or b.suite != SUITE:
        mismatches.insert(0, f"suite: A is {a.suite or 'unknown'}, B is {b.suite or 'unknown'}")
        return result("not-comparable", "Only two science-birds runs have programs to compare.", [])
    if not matched or not models:
        return result("no-intervals", "No program and model were scored in both runs.", [])
    if len(letters) < MIN_LETTERS:
        return result(
            "no-intervals",
            f"No intervals: the runs share {len(letters)} letter{'s' if len(letters) != 1 else ''}, and "
            f"a letter bootstrap needs at least {MIN_LETTERS}.",
            [],
        )
    if len(a.programs) < MIN_PROGRAMS or len(b.programs) < MIN_PROGRAMS:
        return result(
            "no-intervals",
            f"No intervals: a run scored fewer than {MIN_PROGRAMS} programs, so its normalized share "
            "cannot move.",
            [],
        )
    try:
        scores_a, weights_a = character_scores(a, models)
        scores_b, weights_b = character_scores(b, models)
    except WorldForgeError as exc:
        return result("no-intervals", f"No intervals: a run cannot be scored ({exc}).", [])
    names_a, names_b = list(a.programs), list(b.programs)
    scale = {m: {c: weights_a[m][c] / weights_b[m][c] for c in letters} for m in models}
    matrix_a = _matrix(scores_a, names_a, letters)
    matrix_b = _matrix(scores_b, names_b, letters, scale)
    pairs = [(names_a.index(p["a"]), names_b.index(p["b"]), p["a"], p["b"]) for p in matched]
    changes = paired_changes(matrix_a, matrix_b, pairs, resamples=resamples, seed=seed)
    return result("computed", None, changes)


def compare_runs(
    dir_a: Path, dir_b: Path, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> RunComparison | None:
    """The comparison of two run directories, or ``None`` when neither is a science-birds run."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise WorldForgeError(f"--uncertainty-resamples: must be a whole number >= 1, got {resamples!r}.")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise WorldForgeError(f"--uncertainty-seed: must be a whole number in [0, 2**63), got {seed!r}.")
    a, b = load_side(dir_a), load_side(dir_b)
    if SUITE not in (a.suite, b.suite):
        return None
    return compare_sides(a, b, resamples=resamples, seed=seed)


__all__ = [
    "MOVED_LETTERS",
    "SCHEMA",
    "SUITE",
    "ComparisonPayload",
    "MovedLetter",
    "ProgramMatch",
    "ProgramPair",
    "RunComparison",
    "RunSide",
    "StageChange",
    "character_scores",
    "compare_runs",
    "compare_sides",
    "load_side",
    "match_programs",
    "moved_letters",
    "stage_changes",
]
