"""Resuming a run: which command finishes it, from where, and running that command.

A run records the exact command line and the directory it started in (``.local/invocation.json``).
Resuming re-invokes that command with ``--resume-run RUN_ID``: the command reopens the same run and
reuses every recorded item whose input digest still matches, so the finished run is byte-identical
to one that was never interrupted. :func:`plan_resume` checks that the run may resume and says what
to run; :func:`resume_run` runs it in a child process (the command line's ``runs resume`` runs the
same plan in-process).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from worldforge.core.errors import WorldForgeError
from worldforge.workspace.layout import load_manifest, read_invocation
from worldforge.workspace.store import effective_status, resolve_run_dir

RESUMABLE = ("interrupted", "failed")


def resume_args(argv: list[str], run_id: str) -> list[str]:
    """``argv[1:]`` without any earlier ``--resume-run``, then ``--resume-run run_id``."""
    out: list[str] = []
    skip = False
    for arg in argv[1:]:
        if skip:
            skip = False
            continue
        if arg == "--resume-run":
            skip = True
            continue
        if arg.startswith("--resume-run="):
            continue
        out.append(arg)
    return [*out, "--resume-run", run_id]


@dataclass(frozen=True)
class ResumePlan:
    """What finishes a run: the recorded program, its arguments and its start directory."""

    run_dir: Path
    program: str
    args: list[str]
    cwd: Path | None

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    @property
    def is_script(self) -> bool:
        """The run was made by a Python script (``scripts/*.py``), not by the ``worldforge`` command."""
        return self.program.endswith(".py")

    def command(self) -> list[str]:
        """The child-process command line (this interpreter, so the same environment)."""
        if self.is_script:
            return [sys.executable, self.program, *self.args]
        return [sys.executable, "-m", "worldforge", *self.args]


def plan_resume(workspace_dir: str | Path, run_id: str) -> ResumePlan:
    """The plan that finishes run ``run_id`` (a unique prefix works); ``WorldForgeError`` when the
    run completed, is still running, or recorded no command."""
    run_dir = resolve_run_dir(Path(workspace_dir), run_id)
    manifest = load_manifest(run_dir)
    status = effective_status(run_dir, manifest)
    if status not in RESUMABLE:
        raise WorldForgeError(
            f"resume {run_dir.name}: status is {status!r}; only interrupted or failed runs resume."
        )
    invocation = read_invocation(run_dir)
    cwd: Path | None = None
    if invocation is not None:
        argv, cwd = invocation
    else:
        argv = [str(a) for a in manifest.get("argv") or []]
    if len(argv) < 2:
        raise WorldForgeError(f"resume {run_dir.name}: the run recorded no command to re-invoke.")
    if cwd is not None and not cwd.is_dir():
        cwd = None
    return ResumePlan(run_dir=run_dir, program=argv[0], args=resume_args(argv, run_dir.name), cwd=cwd)


def resume_run(workspace_dir: str | Path, run_id: str) -> int:
    """Finish run ``run_id`` by re-invoking its command in a child process; returns its exit code."""
    plan = plan_resume(workspace_dir, run_id)
    cwd = plan.cwd or Path(os.getcwd())
    return subprocess.run(plan.command(), cwd=cwd, check=False).returncode


__all__ = ["RESUMABLE", "ResumePlan", "plan_resume", "resume_args", "resume_run"]
