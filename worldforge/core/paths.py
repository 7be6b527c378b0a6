"""Paths safe to record: relative to where the command runs, never the host's directory layout.

Every layer that writes a path into a record, a report or stdout (run manifests, stage logs, suite
options) uses these two, so the same run made in two checkouts records the same strings.
"""

from __future__ import annotations

from pathlib import Path


def cwd_relative(path: str | Path) -> str | None:
    """``path`` relative to the current directory (``.`` for the directory itself), or ``None`` when
    it lies elsewhere. Lossless, so a command given the result still finds the same file."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return None


def portable_path(path: str | Path) -> str:
    """A path safe to record: relative to the current directory when inside it, else ``<external>/name``."""
    relative = cwd_relative(path)
    return relative if relative is not None else f"<external>/{Path(path).resolve().name}"


__all__ = ["cwd_relative", "portable_path"]
