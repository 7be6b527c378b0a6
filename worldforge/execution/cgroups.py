"""Control groups for sandboxes: limits counted for a whole sandbox, and a kill it cannot dodge.

A trial's per-process limits (``RLIMIT_AS``, the host's timers) are not enough against a hostile
program: ``fork()`` through ``ctypes`` multiplies the memory cap by the number of processes, and
anything inside a sandbox may be stopped or starved by the trial. So each sandbox gets a group of
its own, under the evaluator's own group, in which

* ``pids`` bounds the number of tasks (processes and threads) of the whole sandbox,
* ``memory`` bounds the memory of the whole sandbox (tmpfs pages written inside count too),
* ``cpu`` gives it at most one core (a CPU hog cannot push other teams' trials into timeouts),
* ``freezer`` (v1) or ``cgroup.kill`` (v2) lets the evaluator, not a process the trial can signal,
  kill everything in it at once: freeze, SIGKILL every task, thaw.

Version 1 hierarchies (one mount per controller, writable by root) are the main path: that is what
this project's hosts mount. Version 2 is used where the evaluator's own group is delegated to it
with those controllers enabled. Without either (a non-root evaluator) there is no group: limits
are per process only and :func:`cgroup_status` says so for provenance and the report.

Groups are named ``<evaluator pid>-<its start time>-<n>`` under ``worldforge-sandboxes``: a group
whose evaluator is gone (killed before it could clean up) is found and removed by the next start.
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

V1_CONTROLLERS = ("pids", "memory", "cpu", "freezer")
V2_CONTROLLERS = ("pids", "memory", "cpu")
PARENT = "worldforge-sandboxes"
#: The shell that starts a sandbox inside its groups: it writes its own pid to each ``cgroup.procs``
#: given before ``--`` and then becomes the sandbox command (so nothing runs outside the groups).
JOIN_SCRIPT = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"'
_counter = itertools.count()
_lock = threading.Lock()


@dataclass(frozen=True)
class GroupLimits:
    """What a whole sandbox may use."""

    pids: int = 128
    memory_bytes: int = 2 * 1024 * 1024 * 1024
    cpu_cores: float = 1.0


@dataclass(frozen=True)
class CgroupSetup:
    """Where sandbox groups go: ``version`` 1 (one folder per controller) or 2 (one folder)."""

    version: int
    parents: dict[str, Path]  # controller (or "unified") -> the evaluator's own group folder


def _own_groups() -> dict[str, str]:
    """Controller -> this process's group path, from ``/proc/self/cgroup``."""
    groups: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return groups
    for line in lines:
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else ["unified"]:
            groups[name] = path
    return groups


def _mounts() -> dict[str, Path]:
    """Controller (or "unified") -> mount point, from ``/proc/self/mountinfo``."""
    mounts: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return mounts
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        if rest[0] == "cgroup2":
            mounts.setdefault("unified", Path(fields[4]))
        elif rest[0] == "cgroup":
            for option in rest[2].split(","):
                if option in V1_CONTROLLERS:
                    mounts.setdefault(option, Path(fields[4]))
    return mounts


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK)


@lru_cache(maxsize=1)
def detect() -> CgroupSetup | None:
    """The evaluator's usable cgroup setup, or ``None`` (a non-root evaluator, no delegation)."""
    mounts, own = _mounts(), _own_groups()
    if all(c in mounts and c in own for c in V1_CONTROLLERS):
        parents = {c: mounts[c] / own[c].lstrip("/") for c in V1_CONTROLLERS}
        if all(_writable(p) for p in parents.values()):
            return CgroupSetup(1, parents)
    if "unified" in mounts and "unified" in own:
        parent = mounts["unified"] / own["unified"].lstrip("/")
        try:
            enabled = (parent / "cgroup.subtree_control").read_text(encoding="utf-8").split()
            available = (parent / "cgroup.controllers").read_text(encoding="utf-8").split()
        except OSError:
            return None
        if _writable(parent) and all(c in enabled or c in available for c in V2_CONTROLLERS):
            return CgroupSetup(2, {"unified": parent})
    return None


def cgroup_status() -> tuple[bool, str]:
    """``(usable, detail)`` for provenance: which limits hold for a whole sandbox."""
    setup = detect()
    if setup is None:
        missing = [c for c in V1_CONTROLLERS if c not in _mounts()]
        why = f"no {', '.join(missing)} hierarchy" if missing else "the cgroup folders are not writable"
        return False, f"no writable cgroups ({why}): processes, memory and CPU are limited per process only"
    return True, f"cgroup v{setup.version}: pids, memory, cpu per sandbox; killed through the group"


def process_start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks after boot), or ``None`` when it is gone: with
    the pid, it names a process uniquely even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_tag() -> str:
    """``<pid>-<start time>`` of this process: the prefix of everything it leaves on the machine."""
    me = os.getpid()
    return f"{me}-{process_start_time(me) or 0}"


def owner_alive(name: str) -> bool:
    """Whether the process whose :func:`owner_tag` starts ``name`` is still running."""
    pid, _, rest = name.partition("-")
    return pid.isdigit() and process_start_time(int(pid)) == rest.split("-", 1)[0]


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)


def _procs(folder: Path) -> list[int]:
    try:
        text = (folder / "cgroup.procs").read_text(encoding="ascii")
    except OSError:
        return []
    return [int(p) for p in text.split()]


class SandboxGroup:
    """The groups of one sandbox (one folder per v1 controller, or one v2 folder)."""

    def __init__(self, setup: CgroupSetup, limits: GroupLimits) -> None:
        self.setup = setup
        with _lock:
            n = next(_counter)
        self.name = f"{owner_tag()}-{n}"
        self.folders: dict[str, Path] = {}
        try:
            for controller, parent in setup.parents.items():
                base = parent / PARENT
                base.mkdir(exist_ok=True)
                if setup.version == 2:
                    _enable_v2(parent)
                    _enable_v2(base)
                folder = base / self.name
                folder.mkdir()
                self.folders[controller] = folder
            self._limit(limits)
        except OSError:
            self.remove()
            raise

    @classmethod
    def adopt(cls, setup: CgroupSetup, name: str) -> SandboxGroup:
        """The existing groups called ``name`` (a dead evaluator's), to kill and remove them."""
        group = cls.__new__(cls)
        group.setup, group.name = setup, name
        group.folders = {c: p / PARENT / name for c, p in setup.parents.items()}
        return group

    def _limit(self, limits: GroupLimits) -> None:
        period = 100_000
        quota = str(max(1000, int(period * limits.cpu_cores)))
        if self.setup.version == 1:
            _write(self.folders["pids"] / "pids.max", str(limits.pids))
            _write(self.folders["memory"] / "memory.limit_in_bytes", str(limits.memory_bytes))
            swap = self.folders["memory"] / "memory.memsw.limit_in_bytes"
            if swap.exists():
                _write(swap, str(limits.memory_bytes))
            _write(self.folders["cpu"] / "cpu.cfs_period_us", str(period))
            _write(self.folders["cpu"] / "cpu.cfs_quota_us", quota)
            return
        folder = self.folders["unified"]
        _write(folder / "pids.max", str(limits.pids))
        _write(folder / "memory.max", str(limits.memory_bytes))
        if (folder / "memory.swap.max").exists():
            _write(folder / "memory.swap.max", "0")
        _write(folder / "cpu.max", f"{quota} {period}")

    def join_argv(self, argv: list[str]) -> list[str]:
        """``argv`` started inside this sandbox's groups (see :data:`JOIN_SCRIPT`)."""
        procs = [str(folder / "cgroup.procs") for _, folder in sorted(self.folders.items())]
        return ["/bin/sh", "-c", JOIN_SCRIPT, "sh", *procs, "--", *argv]

    def pids(self) -> list[int]:
        """Every process of the sandbox still alive."""
        folder = self.folders.get("pids") or self.folders.get("unified")
        return _procs(folder) if folder is not None else []

    def kill(self, timeout: float = 10.0) -> bool:
        """Kill every process of the sandbox; whether the group is empty afterwards."""
        if self.setup.version == 2:
            folder = self.folders["unified"]
            try:
                _write(folder / "cgroup.kill", "1")
            except OSError:
                for pid in _procs(folder):
                    _signal(pid)
            return _wait_empty(folder, timeout)
        freezer = self.folders["freezer"]
        try:
            _write(freezer / "freezer.state", "FROZEN")
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                if (freezer / "freezer.state").read_text(encoding="ascii").strip() == "FROZEN":
                    break
                time.sleep(0.005)
        except OSError:
            pass
        for pid in _procs(freezer):
            _signal(pid)
        try:
            _write(freezer / "freezer.state", "THAWED")
        except OSError:
            pass
        return _wait_empty(freezer, timeout)

    def remove(self) -> None:
        """Kill what is left and remove the groups (idempotent)."""
        if any(_procs(f) for f in self.folders.values()):
            self.kill()
        for folder in self.folders.values():
            try:
                folder.rmdir()
            except OSError:
                pass
        self.folders = {}


def _signal(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _wait_empty(folder: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _procs(folder):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _enable_v2(folder: Path) -> None:
    control = folder / "cgroup.subtree_control"
    enabled = control.read_text(encoding="ascii").split()
    missing = [c for c in V2_CONTROLLERS if c not in enabled]
    if missing:
        _write(control, " ".join(f"+{c}" for c in missing))


def remove_stale() -> list[str]:
    """Kill and remove the sandbox groups whose evaluator is gone; the names removed."""
    setup = detect()
    if setup is None:
        return []
    removed: list[str] = []
    for parent in setup.parents.values():
        base = parent / PARENT
        if not base.is_dir():
            continue
        for folder in sorted(base.iterdir()):
            if owner_alive(folder.name):
                continue  # a live evaluator's group
            SandboxGroup.adopt(setup, folder.name).remove()
            removed.append(folder.name)
    return sorted(set(removed))


__all__ = [
    "CgroupSetup",
    "GroupLimits",
    "JOIN_SCRIPT",
    "SandboxGroup",
    "cgroup_status",
    "detect",
    "owner_alive",
    "owner_tag",
    "process_start_time",
    "remove_stale",
]
