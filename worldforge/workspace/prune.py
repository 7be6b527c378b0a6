"""Retention: ``runs prune`` plans deletions (dry run by default) and applies them safely.

Safety rules, in order: a run another process holds the lock of is never touched; the newest
``keep_latest`` runs of the selected kinds are kept; runs younger than the safety window are kept
(``max_age_days=0`` means "any age" and overrides the window); a run whose age cannot be told is
kept. Deletion re-resolves each target and refuses anything that is not a direct child of
``DIR/runs`` (symlinks included), and takes the run's lock first so a run resumed meanwhile survives.
"""

from __future__ import annotations

import math
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypedDict

from worldforge.core.errors import WorldForgeError
from worldforge.workspace.ids import run_id_time
from worldforge.workspace.layout import MANIFEST_NAME, RunLock
from worldforge.workspace.records import RunManifest, read_run_manifest
from worldforge.workspace.store import effective_status, runs_dir

PRUNE_SCHEMA_VERSION = 1


class PruneCandidate(TypedDict):
    """One run the plan considered: what it is and what happens to it (``action``: ``keep``,
    ``delete``, then ``deleted`` once applied) and why."""

    run_id: str
    kind: str
    status: str
    created_at: str | None
    size_bytes: int
    action: str
    reason: str


class PrunePolicy(TypedDict):
    """The retention rules a plan applied."""

    max_age_days: int
    keep_latest: int
    kinds: list[str]
    young_hours: float


class PrunePlan(TypedDict):
    """What :func:`plan_prune` decides and :func:`apply_prune` carries out (``runs prune`` prints it)."""

    schema_version: int
    policy: PrunePolicy
    applied: bool
    candidate_count: int
    delete_count: int
    delete_bytes: int
    candidates: list[PruneCandidate]


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def plan_prune(
    workspace_dir: str | Path,
    *,
    max_age_days: int = 30,
    keep_latest: int = 10,
    kinds: tuple[str, ...] = (),
    young_hours: float = 24.0,
    now: datetime | None = None,
) -> PrunePlan:
    """Decide, for every directory under ``DIR/runs``, whether it would be deleted and why."""
    for name, value in (("max_age_days", max_age_days), ("keep_latest", keep_latest)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise WorldForgeError(f"--{name.replace('_', '-')}: must be a non-negative integer.")
    if (
        isinstance(young_hours, bool)
        or not isinstance(young_hours, (int, float))
        or not math.isfinite(young_hours)
        or young_hours < 0
    ):
        # a negative or NaN window would silently switch the young-run safety off
        raise WorldForgeError(
            f"--min-age-hours: must be a non-negative number of hours, got {young_hours!r}."
        )
    moment = now or datetime.now(UTC)
    root = runs_dir(workspace_dir)
    wanted = {k.lower() for k in kinds}
    candidates: list[PruneCandidate] = []
    kept_latest = 0
    for run_dir in (
        sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.name, reverse=True)
        if root.is_dir()
        else []
    ):
        manifest: RunManifest | None = None
        if (run_dir / MANIFEST_NAME).is_file():
            try:
                manifest = read_run_manifest(run_dir)
            except WorldForgeError:
                manifest = None
        kind = (manifest.kind if manifest is not None else "") or "unknown"
        created = run_id_time(run_dir.name)
        status = effective_status(run_dir, manifest).value if manifest is not None else "unknown"
        if wanted and kind.lower() not in wanted:
            action, reason = "keep", "skip-kind"
        elif RunLock.is_locked(run_dir):
            action, reason = "keep", "skip-running"
        elif kept_latest < keep_latest:
            kept_latest += 1
            action, reason = "keep", f"skip-keep-latest (newest {keep_latest})"
        elif max_age_days == 0:
            action, reason = "delete", "max-age-days=0 deletes any age"
        elif created is None:
            action, reason = "keep", "skip-young (creation time unknown)"
        elif moment - created < timedelta(hours=young_hours):
            action, reason = "keep", f"skip-young (younger than {young_hours:g} h)"
        elif moment - created >= timedelta(days=max_age_days):
            action, reason = "delete", f"older than {max_age_days} days"
        else:
            action, reason = "keep", "kept by policy"
        candidates.append(
            {
                "run_id": run_dir.name,
                "kind": kind,
                "status": status,
                "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ") if created else None,
                "size_bytes": _size(run_dir),
                "action": action,
                "reason": reason,
            }
        )
    deletes = [c for c in candidates if c["action"] == "delete"]
    return {
        "schema_version": PRUNE_SCHEMA_VERSION,
        "policy": {
            "max_age_days": max_age_days,
            "keep_latest": keep_latest,
            "kinds": sorted(wanted),
            "young_hours": young_hours,
        },
        "applied": False,
        "candidate_count": len(candidates),
        "delete_count": len(deletes),
        "delete_bytes": sum(c["size_bytes"] for c in deletes),
        "candidates": candidates,
    }


def apply_prune(workspace_dir: str | Path, plan: PrunePlan) -> PrunePlan:
    """Delete the plan's ``delete`` candidates, re-checking containment and locks just before."""
    if plan.get("applied"):
        raise WorldForgeError("prune plan was already applied; plan again.")
    root = runs_dir(workspace_dir).resolve()
    for candidate in plan["candidates"]:
        if candidate["action"] != "delete":
            continue
        target = runs_dir(workspace_dir) / candidate["run_id"]
        if target.is_symlink() or target.resolve().parent != root:
            candidate["action"], candidate["reason"] = "keep", "refused: outside DIR/runs"
            continue
        if not target.is_dir():
            candidate["action"], candidate["reason"] = "keep", "already gone"
            continue
        try:
            lock = RunLock(target)
        except WorldForgeError:
            candidate["action"], candidate["reason"] = "keep", "skip-running (locked at apply time)"
            continue
        try:
            shutil.rmtree(target)
        except OSError as exc:
            raise WorldForgeError(f"runs/{candidate['run_id']}: cannot delete ({exc.strerror}).") from exc
        finally:
            lock.release()
        candidate["action"] = "deleted"
    plan["applied"] = True
    plan["delete_count"] = sum(1 for c in plan["candidates"] if c["action"] == "deleted")
    return plan


__all__ = ["PRUNE_SCHEMA_VERSION", "PruneCandidate", "PrunePlan", "PrunePolicy", "apply_prune", "plan_prune"]
