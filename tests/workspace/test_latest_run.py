"""``latest`` names the newest run wherever a run id is taken (``runs show|bundle|verify latest``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from worldforge.core.errors import WorldForgeError
from worldforge.workspace import start_run
from worldforge.workspace.store import resolve_run_dir


def test_latest_is_the_newest_run(tmp_path: Path) -> None:
    with pytest.raises(WorldForgeError, match="the run workspace has no runs yet"):
        resolve_run_dir(tmp_path, "latest")
    made = []
    for _ in range(3):
        with start_run(tmp_path, "evaluation", ["worldforge"], {}) as run:
            made.append(run.dir)
    assert resolve_run_dir(tmp_path, "latest") == made[-1]
    assert resolve_run_dir(tmp_path, made[0].name) == made[0]
