"""Reading a run workspace: manifests, effective status, listing and resolving run references."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from worldforge.core.errors import WorldForgeError
from worldforge.core.run_events import RunStatus
from worldforge.workspace.ids import is_run_id
from worldforge.workspace.layout import EVENTS_NAME, MANIFEST_NAME, RunLock
from worldforge.workspace.records import RunManifest, read_run_manifest


class RunSummary(TypedDict):
    """One ``runs list`` row (``runs list --format json`` prints a list of them)."""

    run_id: str
    kind: str
    status: str
    created_at: str
    command: str
    input_digest: str | None
    result_digest: str | None
    item_count: int
    artifact_count: int
    event_count: int | None
    path: str


def runs_dir(workspace_dir: str | Path) -> Path:
    return Path(workspace_dir) / "runs"


def effective_status(run_dir: Path, manifest: RunManifest) -> RunStatus:
    """The manifest status, except that a ``running`` run nobody holds the lock of is ``interrupted``."""
    if manifest.status == RunStatus.RUNNING and not RunLock.is_locked(run_dir):
        return RunStatus.INTERRUPTED
    return manifest.status


def progress_counts(run_dir: Path) -> tuple[int, int]:
    """``(item records, complete event lines)`` on disk.

    The manifest's counts are written when a run starts and ends (rewriting it per item would cost
    an fsync each), so for a run that is still going, or was killed, the files are the truth.
    """
    items = sum(1 for _ in (run_dir / "items").glob("*.json"))  # layout.item_filename's folder
    try:
        events = (run_dir / EVENTS_NAME).read_bytes().count(b"\n")
    except OSError:
        events = 0
    return items, events


def run_summary(run_dir: Path, manifest: RunManifest) -> RunSummary:
    """One ``runs list`` row: identity, effective status, digests and counts (from the files on disk
    while the run is unfinished, see :func:`progress_counts`)."""
    status = effective_status(run_dir, manifest)
    item_count: int = manifest.items.count if manifest.items is not None else 0
    event_count = manifest.event_count
    if status in (RunStatus.RUNNING, RunStatus.INTERRUPTED):
        item_count, event_count = progress_counts(run_dir)
    return {
        "run_id": manifest.run_id,
        "kind": manifest.kind,
        "status": status.value,
        "created_at": manifest.created_at,
        "command": manifest.command,
        "input_digest": manifest.input_digest,
        "result_digest": manifest.result_digest,
        "item_count": item_count,
        "artifact_count": len(manifest.artifacts or []),
        "event_count": event_count,
        "path": f"runs/{run_dir.name}",
    }


def list_runs(workspace_dir: str | Path, kind: str | None = None) -> list[RunSummary]:
    """Summaries of every readable run, newest first (unreadable directories are skipped)."""
    root = runs_dir(workspace_dir)
    rows: list[RunSummary] = []
    if not root.is_dir():
        return rows
    for run_dir in sorted(root.iterdir(), key=lambda p: p.name, reverse=True):
        if not run_dir.is_dir() or not (run_dir / MANIFEST_NAME).is_file():
            continue
        try:
            manifest = read_run_manifest(run_dir)
        except WorldForgeError:
            continue
        if kind and manifest.kind != kind:
            continue
        rows.append(run_summary(run_dir, manifest))
    return rows


def resolve_run_dir(workspace_dir: str | Path, ref: str) -> Path:
    """A run directory from an id, a unique id prefix, ``latest`` (the newest run: ids sort by
    creation time) or a path to a run directory."""
    candidate = Path(ref)
    if (candidate / MANIFEST_NAME).is_file():
        return candidate
    root = runs_dir(workspace_dir)
    if ref == "latest":
        runs = sorted(p for p in root.glob("*") if (p / MANIFEST_NAME).is_file()) if root.is_dir() else []
        if not runs:
            raise WorldForgeError("run 'latest': the run workspace has no runs yet.")
        return runs[-1]
    if is_run_id(ref) and (root / ref / MANIFEST_NAME).is_file():
        return root / ref
    matches = (
        sorted(p for p in root.glob(f"{ref}*") if (p / MANIFEST_NAME).is_file()) if root.is_dir() else []
    )
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise WorldForgeError(
            f"run {ref!r}: ambiguous prefix ({len(matches)} runs match); give more characters."
        )
    raise WorldForgeError(f"run {ref!r}: not found in the run workspace (see `worldforge runs list`).")


__all__ = [
    "RunSummary",
    "effective_status",
    "list_runs",
    "progress_counts",
    "resolve_run_dir",
    "run_summary",
    "runs_dir",
]
