"""Competition folder stages: ``<SOURCE>/<team>/<stage>/<C>/...`` in the official file formats.

The official tools are a chain of scripts that communicate only through this folder layout, so
compatible outputs let people mix our stages with the official ones (for example our physics with
their similarity script). Rules reproduced from the Node helper package:

* team folders = direct subfolders whose name does not start with ``.`` and is not ``logs`` or
  ``result``; the same rule filters character folders; files starting with ``.`` are skipped;
* an output keeps its base name and gets the new extension, under ``<team>/<new stage>/<C>/``;
* per-character results live in ``<team>/<stage>/<C>.json``;
* logs go to ``<SOURCE>/logs/<stage>_log_<ISO time with ':' replaced by '_'>.txt``;
* a failed trial is logged (``Failed - <message>``) and produces no output; it never aborts a stage.

Listings are sorted by natural file name order (the official scripts use directory order, which is
OS-dependent; scoring matches trials by the number in the file name, so only the order changes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from worldforge import heavy
from worldforge.core.errors import StageError, WorldForgeError
from worldforge.core.io import atomic_write_bytes, atomic_write_text
from worldforge.core.timeutil import utc_now_iso
from worldforge.execution import auto_chunk, create_executor, ordered_map, parallelism
from worldforge.execution.local import default_workers
from worldforge.pcg.competition.records import StageRecord
from worldforge.pcg.levels.convert import convert
from worldforge.pcg.levels.extract import CODE_NOT_FOUND, official_extract
from worldforge.pcg.sim.cache import (
    PhysicsCache,
    PhysicsEntry,
    PhysicsJob,
    PhysicsOutcome,
    level_key,
    run_physics_job,
)
from worldforge.pcg.sim.physics import simulate
from worldforge.pcg.sim.render import IMAGE_SIZE, encode_png, render_color

if TYPE_CHECKING:
    from concurrent.futures import Executor

SKIPPED_DIRS = frozenset({"logs", "result"})
PHYSICS_STAGES = ("stability", "images")


class Progress(Protocol):
    """What stages report to: ``start`` once per stage, then one call per finished item."""

    def start(self, description: str, total: int) -> None: ...

    def __call__(self, advance: int = 1) -> None: ...


class NullProgress:
    """A progress sink that ignores everything (library use, tests)."""

    def start(self, description: str, total: int) -> None:
        return None

    def __call__(self, advance: int = 1) -> None:
        return None


@dataclass
class StageReport:
    """Outcome of one stage over a source folder."""

    stage: str
    succeeded: int = 0
    failed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)
    inputs: list[Path] = field(default_factory=list)
    log_path: Path | None = None

    def to_dict(self) -> StageRecord:
        return {
            "stage": self.stage,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "failures": [{"file": f, "message": m} for f, m in self.failures],
            "log": str(self.log_path) if self.log_path else None,
        }


def _natural_key(name: str) -> list[int | str]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _visible_dirs(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(
        (
            p
            for p in folder.iterdir()
            if p.is_dir() and not p.name.startswith(".") and p.name not in SKIPPED_DIRS
        ),
        key=lambda p: _natural_key(p.name),
    )


def list_teams(source: Path) -> list[Path]:
    """Team folders of a competition source folder."""
    if not source.is_dir():
        raise WorldForgeError(f"{source}: source folder does not exist.")
    return _visible_dirs(source)


def list_files(folder: Path, suffix: str | None = None) -> list[Path]:
    """Visible regular files of a character folder, optionally filtered by extension."""
    files = [
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and (suffix is None or p.suffix.lower() == suffix)
    ]
    return sorted(files, key=lambda p: _natural_key(p.name))


def stage_inputs(source: Path, stage: str, suffix: str) -> list[tuple[Path, str, Path]]:
    """(team folder, character, file) for every input file of ``stage`` (``raw``, ``levels``...)."""
    found: list[tuple[Path, str, Path]] = []
    for team in list_teams(source):
        for char_dir in _visible_dirs(team / stage):
            for path in list_files(char_dir, suffix):
                found.append((team, char_dir.name, path))
    return found


class StageLog:
    """The official per-stage log file (opened lazily, one line per trial)."""

    def __init__(self, source: Path, stage: str) -> None:

        stamp = utc_now_iso().replace(":", "_")
        self.path = source / "logs" / f"{stage}_log_{stamp}.txt"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = self.path.open("a", encoding="utf-8")

    def write(self, line: str) -> None:
        self._handle.write(line.rstrip("\n") + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def _rel(source: Path, path: Path) -> str:
    try:
        return path.relative_to(source).as_posix()
    except ValueError:
        return path.as_posix()


def _text_stage(
    source: Path,
    stage: str,
    in_stage: str,
    in_suffix: str,
    out_stage: str,
    out_suffix: str,
    fn: Callable[[str], str],
    progress: Progress,
) -> StageReport:
    items = stage_inputs(source, in_stage, in_suffix)
    report = StageReport(stage=stage)
    log = StageLog(source, stage)
    report.log_path = log.path
    progress.start(stage, len(items))
    try:
        for team, char, path in items:
            rel = _rel(source, path)
            report.inputs.append(path)
            try:
                text = path.read_bytes().decode("utf-8", errors="replace")
                out_text = fn(text)
            except StageError as exc:
                report.failed += 1
                report.failures.append((rel, str(exc)))
                log.write(f"{rel}: Failed - {exc}")
            else:
                target = team / out_stage / char / (path.stem + out_suffix)
                atomic_write_text(target, out_text)
                report.succeeded += 1
                report.outputs.append(target)
                log.write(f"{rel}: Succeeded - {_rel(source, target)}")
            progress(1)
    finally:
        log.close()
    return report


def _extract(text: str) -> str:

    program = official_extract(text)
    if program is None:
        raise StageError(CODE_NOT_FOUND)
    return program


def _convert(text: str) -> str:

    return convert(text)


def stage_extract(source: Path, *, progress: Progress | None = None) -> StageReport:
    """``raw/<C>/*.txt`` -> ``intermediate/<C>/*.txt`` (official extractor output)."""
    return _text_stage(
        source, "extract", "raw", ".txt", "intermediate", ".txt", _extract, progress or NullProgress()
    )


def stage_convert(source: Path, *, progress: Progress | None = None) -> StageReport:
    """``intermediate/<C>/*.txt`` -> ``levels/<C>/*.xml`` (official converter output)."""
    return _text_stage(
        source, "convert", "intermediate", ".txt", "levels", ".xml", _convert, progress or NullProgress()
    )


def float32_text(value: float) -> str:
    """A 32-bit float as Unity's JsonUtility prints it (shortest round-trip digits, ``1.0``)."""

    text = np.format_float_positional(np.float32(value), unique=True, trim="-")
    return text if "." in text else text + ".0"


def unity_score(total: int, moving: int) -> float:
    """``1 - moving/total`` in 32-bit float arithmetic, as the evaluator computes it."""

    return float(np.float32(1.0) - np.float32(moving) / np.float32(total))


def _json_string(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)


def stability_json(entries: Iterable[tuple[str, float, int, int]]) -> str:
    """``<team>/stability/<C>.json`` in JsonUtility's pretty format: dataCount, rate, raws."""

    rows = list(entries)
    scores = [np.float32(score) for _, score, _, _ in rows]
    rate = float(np.float32(sum(scores, np.float32(0.0)) / np.float32(len(rows)))) if rows else 0.0
    lines = ["{", f'    "dataCount": {len(rows)},', f'    "rate": {float32_text(rate)},', '    "raws": [']
    for i, (tag, score, starting, moving) in enumerate(rows):
        lines += [
            "        {",
            f'            "tag": {_json_string(tag)},',
            f'            "score": {float32_text(score)},',
            f'            "startingObjects": {starting},',
            f'            "movingObjects": {moving}',
            "        }" + ("," if i < len(rows) - 1 else ""),
        ]
    lines += ["    ]", "}"]
    return "\n".join(lines)


def stage_physics(
    source: Path,
    *,
    stability: bool = True,
    images: bool = True,
    workers: int | None = None,
    trials: int = 1,
    raw_images: bool = False,
    progress: Progress | None = None,
    executor: Executor | None = None,
    on_node: Callable[[str, str], None] | None = None,
) -> list[StageReport]:
    """``levels/<C>/*.xml`` -> ``stability/<C>.json`` and/or ``images/<C>/<base>.png``.

    One simulation per level feeds both outputs, within one call and across calls: every
    simulation's outcome is kept in the folder's sidecar (:mod:`worldforge.pcg.sim.cache`), so
    ``stability`` followed by ``images`` simulates each level once. ``trials`` is the evaluator's
    best-of-N stability runs. ``executor`` runs the levels (default: a local process pool of
    ``workers``); results are consumed in input order, so outputs do not depend on it.
    ``on_node(level, node)`` hears which machine simulated each level (executors that say so).
    """
    progress = progress or NullProgress()
    items = stage_inputs(source, "levels", ".xml")
    names = [s for s, on in (("stability", stability), ("images", images)) if on]
    if not names:
        raise WorldForgeError("nothing to do: neither stability nor images requested.")
    stage_name = "+".join(names)
    reports = {name: StageReport(stage=name) for name in names}
    log = StageLog(source, names[0] if len(names) == 1 else "physics")
    for r in reports.values():
        r.log_path = log.path
    cache = PhysicsCache(source)
    keys: list[str] = []
    jobs: list[PhysicsJob] = []
    for _, _, path in items:
        data = path.read_bytes()
        keys.append(level_key(data, trials))
        xml = data.decode("utf-8", errors="replace")
        jobs.append(PhysicsJob(xml, trials, render=images, entry=cache.get(keys[-1])))
    # Levels whose stored entry answers everything asked need no worker at all.
    remote = [i for i, job in enumerate(jobs) if job.entry is None or job.render]
    progress.start(stage_name, len(items))
    per_char: dict[tuple[Path, str], list[tuple[str, float, int, int]]] = {}
    tag_root = source.name or "competition"
    current: dict[str, PhysicsEntry] = {}
    own = None
    if executor is None and len(remote) > 1 and (workers or 2) > 1:
        _preload(images, any(jobs[i].entry is None for i in remote))
        executor = own = create_executor("local", workers or default_workers())
    try:
        outcomes = iter(
            ordered_map(
                executor if len(remote) > 1 else None,
                run_physics_job,
                [jobs[i] for i in remote],
                chunk=auto_chunk(len(remote), parallelism(executor)),
                on_node=_node_reporter(source, [items[i][2] for i in remote], on_node),
            )
        )
        for i, ((team, char, path), job) in enumerate(zip(items, jobs, strict=True)):
            outcome = next(outcomes) if job.entry is None or job.render else PhysicsOutcome(job.entry.copy())
            current[keys[i]] = outcome.entry
            rel = _rel(source, path)
            for r in reports.values():
                r.inputs.append(path)
            group = (team, char)
            per_char.setdefault(group, [])
            entry = outcome.entry
            if not outcome.ok:
                for r in reports.values():
                    r.failed += 1
                    r.failures.append((rel, entry["error"] or "failed"))
                log.write(f"{rel}: Failed - {entry['error']}")
                progress(1)
                continue
            total, moving = int(entry["total_blocks"]), int(entry["moving_blocks"])
            if stability:
                tag = f"{tag_root}/{rel}"
                per_char[group].append((tag, unity_score(total, moving), total, moving))
                reports["stability"].succeeded += 1
            if images and outcome.png is not None:
                target = team / "images" / char / (path.stem + ".png")
                if raw_images:
                    _write_raw_image(team / "images" / char / (path.stem + "_raw.png"), job.xml, trials)
                atomic_write_bytes(target, outcome.png)
                reports["images"].succeeded += 1
                reports["images"].outputs.append(target)
            counts = f"{moving}/{total} moving, {entry['destroyed_blocks']} dead"
            log.write(f"{rel}: Succeeded - stability {entry['stability']} ({counts})")
            progress(1)
        cache.save(current)
    finally:
        log.close()
        if own is not None:
            own.shutdown()
    if stability:
        for (team, char), entries in per_char.items():
            target = team / "stability" / f"{char}.json"
            atomic_write_text(target, stability_json(entries))
            reports["stability"].outputs.append(target)
    return [reports[n] for n in names]


def _node_reporter(
    source: Path, paths: list[Path], on_node: Callable[[str, str], None] | None
) -> Callable[[int, str | None], None] | None:
    """``ordered_map``'s ``(index, node)`` as ``on_node(level path relative to source, node)``."""
    if on_node is None:
        return None

    def report(index: int, node: str | None) -> None:
        if node is not None:
            on_node(_rel(source, paths[index]), node)

    return report


def _preload(images: bool, simulate: bool) -> None:
    """Import (and warm) here what the level workers need: forked workers inherit it, so Box2D,
    numpy and the PNG encoder's tables are set up once, not once per worker."""
    if simulate:
        heavy.box2d()
    if images:
        encode_png(np.full((IMAGE_SIZE, IMAGE_SIZE, 4), 255, dtype=np.uint8))


def _write_raw_image(target: Path, xml: str, trials: int) -> None:
    """The evaluator's ``_raw.png`` (normal textures) stand-in: a coloured render for people."""
    import io

    image = render_color(simulate(xml, trials=trials), size=1024)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    atomic_write_bytes(target, buf.getvalue())


def stage_stability(
    source: Path,
    *,
    workers: int | None = None,
    trials: int = 1,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> StageReport:
    """Stability stage only."""
    return stage_physics(
        source,
        stability=True,
        images=False,
        workers=workers,
        trials=trials,
        progress=progress,
        executor=executor,
    )[0]


def stage_images(
    source: Path,
    *,
    workers: int | None = None,
    trials: int = 1,
    raw_images: bool = False,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> StageReport:
    """Image stage only."""
    return stage_physics(
        source,
        stability=False,
        images=True,
        workers=workers,
        trials=trials,
        raw_images=raw_images,
        progress=progress,
        executor=executor,
    )[0]


__all__ = [
    "NullProgress",
    "Progress",
    "StageLog",
    "StageReport",
    "float32_text",
    "list_files",
    "list_teams",
    "stability_json",
    "stage_convert",
    "stage_extract",
    "stage_images",
    "stage_inputs",
    "stage_physics",
    "stage_stability",
    "unity_score",
]
