"""One simulation per level for the competition folder stages.

``pcg stage stability`` and ``pcg stage images`` are separate invocations (the official tools are
separate scripts), but both need the same deterministic Box2D run of a level. The first stage that
simulates a level stores what the other one needs -- the counts and the final pose and liveness of
every body -- in a sidecar file of the competition folder, keyed by the digest of the level's bytes,
the physics version and the number of stability trials. The other stage then renders from the
stored poses (or writes the stability entry) without simulating again.

The sidecar lives in ``<SOURCE>/.worldforge-cache/`` (a dot folder: the official scripts and the
team listing skip it), so the official outputs keep exactly the files and bytes they had. Floats
round-trip exactly through JSON (shortest ``repr``), so a render from stored poses is the render of
the simulation itself, bit for bit. A different physics module, Box2D build or trial count is a
different key; a stale or unreadable sidecar is ignored and rewritten.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NotRequired, TypedDict, TypeGuard

from worldforge.core.digests import digest_bytes, digest_payload
from worldforge.core.errors import StageError, WorldForgeError
from worldforge.core.io import atomic_write_bytes
from worldforge.pcg.levels.level import parse_level_xml
from worldforge.pcg.sim import physics
from worldforge.pcg.sim.physics import Pose, StabilityResult, simulate
from worldforge.pcg.sim.render import render_png

CACHE_DIR = ".worldforge-cache"
CACHE_FILE = "physics.json"
FORMAT = "worldforge/physics-cache/v1"


@cache
def physics_version() -> str:
    """What decides a simulation's outcome: the physics stage version (its ``STAGE_VERSION``,
    changed with the physics) and the Box2D build."""
    import importlib.metadata

    try:
        box2d = importlib.metadata.version("box2d")
    except importlib.metadata.PackageNotFoundError:
        box2d = "unknown"
    version = physics.STAGE_VERSION
    return digest_payload({"physics": version, "box2d": box2d})


def level_key(level_bytes: bytes, trials: int, version: str | None = None) -> str:
    """The cache key of one level: its bytes' digest, the physics version and the trial count."""
    return digest_payload(
        {"level": digest_bytes(level_bytes), "physics": version or physics_version(), "trials": trials}
    )


class PhysicsEntry(TypedDict):
    """One level's stored simulation: ``error`` alone when it failed, else the counts, stability
    and each dynamic body's final pose ``[x, y, angle]`` and liveness (1/0)."""

    error: str | None
    total_blocks: NotRequired[int]
    moving_blocks: NotRequired[int]
    destroyed_blocks: NotRequired[int]
    stability: NotRequired[float]
    final: NotRequired[list[list[float]]]
    alive: NotRequired[list[int]]


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_physics_entry(value: object) -> TypeGuard[PhysicsEntry]:
    """An entry as :func:`run_physics_job` stores it (a failure's ``error``, or every field of a
    success with its type); anything else in a sidecar is a miss, simulated again."""
    if not isinstance(value, dict) or "error" not in value:
        return False
    if isinstance(value["error"], str):
        return True
    return (
        value["error"] is None
        and all(_is_count(value.get(k)) for k in ("total_blocks", "moving_blocks", "destroyed_blocks"))
        and isinstance(value.get("stability"), int | float)
        and isinstance(value.get("final"), list)
        and isinstance(value.get("alive"), list)
    )


@dataclass(frozen=True)
class PhysicsJob:
    """One level's work, as plain picklable values: simulate unless ``entry`` is given; render when
    ``render`` is set."""

    xml: str
    trials: int
    render: bool
    entry: PhysicsEntry | None = None


@dataclass(frozen=True)
class PhysicsOutcome:
    """What a worker returns: the entry to store (``error`` set when simulation failed) and the PNG."""

    entry: PhysicsEntry
    png: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.entry.get("error") is None


def _entry_of(result: StabilityResult) -> PhysicsEntry:
    return {
        "error": None,
        "total_blocks": result.total_blocks,
        "moving_blocks": result.moving_blocks,
        "destroyed_blocks": result.destroyed_blocks,
        "stability": result.stability,
        "final": [[p.x, p.y, p.angle] for p in result.final_poses],
        "alive": [1 if a else 0 for a in result.alive],
    }


def _result_from_entry(xml: str, entry: PhysicsEntry) -> StabilityResult:
    """A :class:`~worldforge.pcg.sim.physics.StabilityResult` with the stored poses (what rendering reads)."""
    objects = parse_level_xml(xml).dynamic_objects
    final = tuple(Pose(float(x), float(y), float(a)) for x, y, a in entry["final"])
    alive = tuple(bool(a) for a in entry["alive"])
    if len(final) != len(objects) or len(alive) != len(objects):
        raise WorldForgeError("physics cache entry does not match the level's bodies.")
    return StabilityResult(
        total_blocks=int(entry["total_blocks"]),
        moving_blocks=int(entry["moving_blocks"]),
        destroyed_blocks=int(entry["destroyed_blocks"]),
        stability=float(entry["stability"]),
        trials=0,
        runs=(),
        displacements=(),
        final_poses=final,
        start_poses=(),
        alive=alive,
        objects=objects,
    )


def run_physics_job(job: PhysicsJob) -> PhysicsOutcome:
    """Simulate (or take the stored entry) and render one level; failures are data, never raised."""
    if job.entry is not None:
        entry = job.entry.copy()
        if entry.get("error") is not None or not job.render:
            return PhysicsOutcome(entry)
        try:
            return PhysicsOutcome(entry, render_png(_result_from_entry(job.xml, entry)))
        except (WorldForgeError, StageError, KeyError, TypeError, ValueError):
            pass  # an entry that does not fit the level: simulate it again below
    try:
        result = simulate(job.xml, trials=job.trials)
    except (WorldForgeError, StageError) as exc:
        return PhysicsOutcome({"error": str(exc)})
    return PhysicsOutcome(_entry_of(result), render_png(result) if job.render else None)


class PhysicsCache:
    """The sidecar of one competition folder: ``{key: entry}``, loaded once, written once per stage."""

    def __init__(self, source: Path) -> None:
        self.path = source / CACHE_DIR / CACHE_FILE
        self.entries: dict[str, PhysicsEntry] = {}
        self.hits = 0
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("entries"), dict):
            self.entries = {k: v for k, v in data["entries"].items() if is_physics_entry(v)}

    def get(self, key: str) -> PhysicsEntry | None:
        entry = self.entries.get(key)
        if entry is not None:
            self.hits += 1
        return entry

    def save(self, current: Mapping[str, PhysicsEntry]) -> None:
        """Keep the entries of the folder's current levels only (the sidecar never outgrows it)."""
        payload = {"format": FORMAT, "entries": dict(current)}
        # Not fsynced: a sidecar an operating-system crash damaged does not parse and is rebuilt.
        atomic_write_bytes(self.path, json.dumps(payload, separators=(",", ":")).encode(), durable=False)


__all__ = [
    "CACHE_DIR",
    "PhysicsCache",
    "PhysicsEntry",
    "PhysicsJob",
    "PhysicsOutcome",
    "level_key",
    "is_physics_entry",
    "physics_version",
    "run_physics_job",
]
