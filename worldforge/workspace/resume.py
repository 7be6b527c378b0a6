"""Resuming a run: may it resume, which request finishes it, and running ``runs resume``.

A run records the request its service answered (:mod:`worldforge.workspace.requests`). Resuming
asks the same service that request again with the run's id, so the service reopens the run and
reuses every recorded item whose input digest still matches: the finished run is byte-identical to
one that was never interrupted. :func:`plan_resume` checks that the run may resume and returns its
request; the service for each run kind lives above this layer (``worldforge runs resume`` maps the
kind to it), and :func:`resume_run` runs that command in a child process for Python callers.

Nothing here re-invokes a command line or changes this process's directory: paths in a request are
as the command got them (relative ones relative to where it started), so a run resumes from the
directory it started in, and :func:`plan_resume` says so in one line when asked from elsewhere. A
run recorded without a request (before requests were kept, or by a command that does not resume)
is refused in one line that names the command to rerun.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from worldforge.core.canonical import JSONObject
from worldforge.core.errors import WorldForgeError
from worldforge.core.run_events import RunStatus
from worldforge.workspace.layout import read_invocation
from worldforge.workspace.records import RunManifest, read_run_manifest
from worldforge.workspace.requests import read_request
from worldforge.workspace.store import effective_status, resolve_run_dir

RESUMABLE = (RunStatus.INTERRUPTED, RunStatus.FAILED)


@dataclass(frozen=True)
class ResumePlan:
    """What finishes a run: its workspace and directory, its kind (which names the service), the
    service's recorded request as JSON and the command line the run recorded."""

    workspace: Path
    run_dir: Path
    kind: str
    request: JSONObject = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.run_dir.name


def _rerun_hint(manifest: RunManifest) -> str:
    if not manifest.command:
        return "rerun its command instead"
    return f"rerun the command instead: {manifest.command}"


def plan_resume(workspace_dir: str | Path, run_id: str) -> ResumePlan:
    """The plan that finishes run ``run_id`` (a unique prefix works); ``WorldForgeError`` when the
    run completed or is still running, recorded no request, or started in another directory."""
    workspace = Path(workspace_dir)
    run_dir = resolve_run_dir(workspace, run_id)
    manifest = read_run_manifest(run_dir)
    status = effective_status(run_dir, manifest)
    if status not in RESUMABLE:
        raise WorldForgeError(
            f"resume {run_dir.name}: status is {status.value!r}; only interrupted or failed runs resume."
        )
    recorded = read_request(run_dir)
    if recorded is None:
        raise WorldForgeError(
            f"resume {run_dir.name}: the run recorded no request to resume from (it predates recorded "
            f"requests or its command does not resume); {_rerun_hint(manifest)}"
        )
    if recorded.kind != manifest.kind:
        raise WorldForgeError(
            f"resume {run_dir.name}: the recorded request is for a {recorded.kind!r} run, "
            f"the run is {manifest.kind!r}."
        )
    invocation = read_invocation(run_dir)
    argv = invocation[0] if invocation is not None else list(manifest.argv)
    start = invocation[1] if invocation is not None else None
    if start is not None and start.is_dir() and start.resolve() != Path.cwd().resolve():
        raise WorldForgeError(
            f"resume {run_dir.name}: resume it from the directory it started in ({start}); "
            "the paths in its request are relative to that directory."
        )
    return ResumePlan(
        workspace=workspace, run_dir=run_dir, kind=recorded.kind, request=recorded.request, argv=argv
    )


def resume_run(workspace_dir: str | Path, run_id: str) -> int:
    """Finish run ``run_id`` with ``worldforge runs resume`` in a child process (this interpreter,
    this directory); returns its exit code. A run that may not resume raises here, before any
    process starts."""
    plan = plan_resume(workspace_dir, run_id)
    command = [sys.executable, "-m", "worldforge", "runs", "resume", plan.run_id]
    return subprocess.run([*command, "--workspace", str(plan.workspace)], check=False).returncode


__all__ = ["RESUMABLE", "ResumePlan", "plan_resume", "resume_run"]
