"""Run ids: sortable by creation time, unguessable, created exclusively.

Format ``YYYYMMDDTHHMMSS.mmmZ-<12 hex>``: the UTC creation time to the millisecond (so a plain
string sort is chronological) followed by 48 random bits from :func:`secrets.token_hex` (so two
runs started in the same millisecond on different machines do not collide). The run directory is
created with ``os.mkdir``, which fails when the name exists, so a collision is retried with a new id
and an existing run is never overwritten.
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path

from worldforge.core.errors import WorldForgeError

RUN_ID_RE = re.compile(r"^(?P<ts>\d{8}T\d{6}\.\d{3}Z)-(?P<rand>[0-9a-f]{12})$")
RANDOM_BITS = 48


def new_run_id(now: datetime | None = None) -> str:
    """A fresh run id for ``now`` (UTC)."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    stamp = moment.strftime("%Y%m%dT%H%M%S") + f".{moment.microsecond // 1000:03d}Z"
    return f"{stamp}-{secrets.token_hex(RANDOM_BITS // 8)}"


def is_run_id(value: object) -> bool:
    return isinstance(value, str) and bool(RUN_ID_RE.match(value))


def require_run_id(value: str) -> str:
    if not is_run_id(value):
        raise WorldForgeError(
            f"run id {value!r}: expected YYYYMMDDTHHMMSS.mmmZ-<12 lowercase hex> "
            "(see `worldforge runs list`)."
        )
    return value


def run_id_time(run_id: str) -> datetime | None:
    """Creation time encoded in a run id, or ``None`` when the id is malformed."""
    match = RUN_ID_RE.match(run_id)
    if not match:
        return None
    return datetime.strptime(match.group("ts"), "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)


def create_run_dir(runs_root: Path, attempts: int = 16) -> tuple[str, Path]:
    """Create ``runs_root/<new id>`` exclusively and return ``(run_id, path)``."""
    runs_root.mkdir(parents=True, exist_ok=True)
    for _ in range(attempts):
        run_id = new_run_id()
        path = runs_root / run_id
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return run_id, path
    raise WorldForgeError(f"{runs_root}: could not allocate a unique run id after {attempts} attempts.")


__all__ = [
    "RANDOM_BITS",
    "RUN_ID_RE",
    "create_run_dir",
    "is_run_id",
    "new_run_id",
    "require_run_id",
    "run_id_time",
]
