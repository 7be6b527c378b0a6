"""What the sandbox tests need from the machine, and how they react when it is missing.

On a developer's machine a missing bubblewrap or cgroup hierarchy skips the hostile tests with the
reason; under ``CI=true`` it fails them instead, so a CI machine that lost its sandbox can never
pass by skipping the tests that prove the sandbox holds.
"""

from __future__ import annotations

import os

import pytest

from worldforge.execution import cgroups
from worldforge.execution.confine import bubblewrap_status, is_root


def sandbox_missing() -> str | None:
    """Why the full sandbox (bubblewrap and, as root, writable cgroups) is not usable, or ``None``."""
    ok, detail = bubblewrap_status()
    if not ok:
        return detail
    if is_root() and cgroups.detect() is None:
        return cgroups.cgroup_status()[1]
    return None


def require_sandbox() -> None:
    """Skip (or, under ``CI=true``, fail) the calling test when the sandbox is not usable."""
    missing = sandbox_missing()
    if missing is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"the sandbox must work in CI: {missing}")
    pytest.skip(f"the sandbox is not usable here: {missing}")
