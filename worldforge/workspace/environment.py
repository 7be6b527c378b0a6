"""What produced a run: worldforge version, Python/platform summary, git commit and dirty flag.

Git metadata is read once per process. The commit comes straight from ``.git`` files (no
subprocess); the dirty flag needs ``git status`` and is skipped silently when git is unavailable,
because a missing flag is better than a failed run.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from pathlib import Path
from typing import TypedDict

from worldforge import __version__
from worldforge.core.errors import WorldForgeError


class GitInfo(TypedDict):
    """The checkout a run's code came from: ``None`` where it could not be told."""

    commit: str | None
    dirty: bool | None


class EnvironmentSummary(TypedDict):
    """A manifest's ``environment``: what produced the run (informational, never digested)."""

    worldforge_version: str
    python: str
    implementation: str
    platform: str
    git: GitInfo | None


def _git_dir(start: Path) -> Path | None:
    for candidate in (start, *start.parents):
        git = candidate / ".git"
        if git.is_dir():
            return git
    return None


def _read_commit(git_dir: Path) -> str | None:
    try:
        head = (git_dir / "HEAD").read_text().strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head or None
    ref = head.split(":", 1)[1].strip()
    ref_file = git_dir / ref
    if ref_file.is_file():
        return ref_file.read_text().strip() or None
    packed = git_dir / "packed-refs"
    if packed.is_file():
        for line in packed.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == ref:
                return parts[0]
    return None


@functools.lru_cache(maxsize=4)
def git_info(start: str) -> GitInfo | None:
    """``{"commit", "dirty"}`` for the repository containing ``start``, or ``None`` outside one."""
    git_dir = _git_dir(Path(start).resolve())
    if git_dir is None:
        return None
    commit = _read_commit(git_dir)
    dirty: bool | None
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=git_dir.parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        dirty = bool(out.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        dirty = None
    return {"commit": commit, "dirty": dirty}


def environment_summary() -> EnvironmentSummary:
    """Runtime facts that explain a result difference (never part of the input/result digests)."""

    package_root = Path(__file__).resolve().parents[2]
    return {
        "worldforge_version": __version__,
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": f"{platform.system()}-{platform.machine()}",
        "git": git_info(str(package_root)),
    }


def read_environment(value: object, source: str) -> EnvironmentSummary:
    """A manifest's ``environment`` read from ``source``; ``WorldForgeError`` naming the field that
    is missing or of the wrong type (every manifest ever written has exactly this shape)."""
    if not isinstance(value, dict):
        raise WorldForgeError(f"{source}: field 'environment' is missing or not dict.")
    texts: dict[str, str] = {}
    for key in ("implementation", "platform", "python", "worldforge_version"):
        text = value.get(key)
        if not isinstance(text, str):
            raise WorldForgeError(f"{source}: field 'environment.{key}' is missing or not str.")
        texts[key] = text
    raw_git = value.get("git")
    git: GitInfo | None = None
    if raw_git is not None:
        if not isinstance(raw_git, dict):
            raise WorldForgeError(f"{source}: field 'environment.git' is neither an object nor null.")
        commit, dirty = raw_git.get("commit"), raw_git.get("dirty")
        if commit is not None and not isinstance(commit, str):
            raise WorldForgeError(f"{source}: field 'environment.git.commit' is neither str nor null.")
        if dirty is not None and not isinstance(dirty, bool):
            raise WorldForgeError(f"{source}: field 'environment.git.dirty' is neither bool nor null.")
        git = {"commit": commit, "dirty": dirty}
    return {  # keys in the file's (sorted) order
        "git": git,
        "implementation": texts["implementation"],
        "platform": texts["platform"],
        "python": texts["python"],
        "worldforge_version": texts["worldforge_version"],
    }


__all__ = ["EnvironmentSummary", "GitInfo", "environment_summary", "git_info", "read_environment"]
