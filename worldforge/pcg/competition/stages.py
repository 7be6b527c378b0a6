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
from typing import Any, Protocol

from worldforge.core.errors import StageError, WorldForgeError
from worldforge.core.io import atomic_write_bytes, atomic_write_text

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

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "failures": [{"file": f, "message": m} for f, m in self.failures],
            "log": str(self.log_path) if self.log_path else None,
        }


def _natural_key(name: str) -> list[Any]:
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
        from worldforge.core.timeutil import utc_now_iso

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
    from worldforge.pcg.levels.extract import CODE_NOT_FOUND, official_extract

    program = official_extract(text)
    if program is None:
        raise StageError(CODE_NOT_FOUND)
    return program


def _convert(text: str) -> str:
    from worldforge.pcg.levels.convert import convert

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
    import numpy as np

    text = np.format_float_positional(np.float32(value), unique=True, trim="-")
    return text if "." in text else text + ".0"


def unity_score(total: int, moving: int) -> float:
    """``1 - moving/total`` in 32-bit float arithmetic, as the evaluator computes it."""
    import numpy as np

    return float(np.float32(1.0) - np.float32(moving) / np.float32(total))


def _json_string(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)


def stability_json(entries: Iterable[tuple[str, float, int, int]]) -> str:
    """``<team>/stability/<C>.json`` in JsonUtility's pretty format: dataCount, rate, raws."""
    import numpy as np

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
) -> list[StageReport]:
    """``levels/<C>/*.xml`` -> ``stability/<C>.json`` and/or ``images/<C>/<base>.png``.

    One simulation per level feeds both outputs (the physics is deterministic, so a separate image
    run would give the same poses). ``trials`` is the evaluator's best-of-N stability runs.
    """
    from worldforge.pcg.sim.pipeline import iter_batch

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
    texts: list[str] = []
    for _, _, path in items:
        texts.append(path.read_bytes().decode("utf-8", errors="replace"))
    progress.start(stage_name, len(items))
    per_char: dict[tuple[Path, str], list[tuple[str, float, int, int]]] = {}
    tag_root = source.name or "competition"
    try:
        outcomes = iter_batch(texts, kind="xml", workers=workers, trials=trials, render=images)
        for (team, char, path), outcome in zip(items, outcomes, strict=True):
            rel = _rel(source, path)
            for r in reports.values():
                r.inputs.append(path)
            key = (team, char)
            per_char.setdefault(key, [])
            if not outcome.ok:
                for r in reports.values():
                    r.failed += 1
                    r.failures.append((rel, outcome.error or "failed"))
                log.write(f"{rel}: Failed - {outcome.error}")
                progress(1)
                continue
            if stability:
                tag = f"{tag_root}/{rel}"
                score = unity_score(outcome.total_blocks, outcome.moving_blocks)
                per_char[key].append((tag, score, outcome.total_blocks, outcome.moving_blocks))
                reports["stability"].succeeded += 1
            if images and outcome.png is not None:
                target = team / "images" / char / (path.stem + ".png")
                if raw_images:
                    _write_raw_image(
                        team / "images" / char / (path.stem + "_raw.png"), outcome.xml or "", trials
                    )
                atomic_write_bytes(target, outcome.png)
                reports["images"].succeeded += 1
                reports["images"].outputs.append(target)
            counts = f"{outcome.moving_blocks}/{outcome.total_blocks} moving, {outcome.destroyed_blocks} dead"
            log.write(f"{rel}: Succeeded - stability {outcome.stability} ({counts})")
            progress(1)
    finally:
        log.close()
    if stability:
        for (team, char), entries in per_char.items():
            target = team / "stability" / f"{char}.json"
            atomic_write_text(target, stability_json(entries))
            reports["stability"].outputs.append(target)
    return [reports[n] for n in names]


def _write_raw_image(target: Path, xml: str, trials: int) -> None:
    """The evaluator's ``_raw.png`` (normal textures) stand-in: a coloured render for people."""
    import io

    from worldforge.pcg.sim.physics import simulate
    from worldforge.pcg.sim.render import render_color

    image = render_color(simulate(xml, trials=trials), size=1024)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    atomic_write_bytes(target, buf.getvalue())


def stage_stability(
    source: Path, *, workers: int | None = None, trials: int = 1, progress: Progress | None = None
) -> StageReport:
    """Stability stage only."""
    return stage_physics(
        source, stability=True, images=False, workers=workers, trials=trials, progress=progress
    )[0]


def stage_images(
    source: Path,
    *,
    workers: int | None = None,
    trials: int = 1,
    raw_images: bool = False,
    progress: Progress | None = None,
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
