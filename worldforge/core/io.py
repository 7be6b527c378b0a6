"""Atomic file writes: completed work is never left half-written.

Writers create a temporary file in the destination directory, fsync it, then ``os.replace`` it over
the target, so readers see either the old file or the complete new one, even after ``kill -9``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from worldforge.core.canonical import pretty_json


def atomic_write_bytes(path: str | Path, data: bytes, *, mode: int = 0o644, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (parent directories are created).

    ``durable=False`` skips the fsync: readers still see the old or the complete new file, even
    after ``kill -9``, but an operating-system crash may lose the write. Only for files that can be
    recomputed and whose reader validates them (caches): an fsync costs 0.3-7 ms on a busy disk.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 text atomically, byte for byte (no newline translation)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, value: object) -> Path:
    """Write :func:`pretty_json` of ``value`` atomically."""
    return atomic_write_text(path, pretty_json(value))


__all__ = ["atomic_write_bytes", "atomic_write_json", "atomic_write_text"]
