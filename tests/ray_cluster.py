"""A real two-node Ray cluster on the loopback interface for tests (one CPU per node).

Each node runs ``ray start --block`` in its own session (process group), so a test can kill exactly
one node (``kill_worker``) and the teardown stops exactly these processes; ``ray stop`` would stop
every Ray process on the machine. Nodes import ``worldforge`` from this checkout.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OBJECT_STORE_BYTES = 200 * 1024 * 1024


def _stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, parent, process group, session) of a process, from ``/proc``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2]), int(fields[3])


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def _session_processes(leader: int) -> list[int]:
    """Processes of the session ``leader`` started (or its group), and all their descendants."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                table[int(entry.name)] = stat
    found = {pid for pid, (_, _, group, session) in table.items() if leader in (group, session)}
    grew = True
    while grew:
        children = {pid for pid, (_, parent, _, _) in table.items() if parent in found} - found
        found |= children
        grew = bool(children)
    return sorted(found)


def _kill_session(leader: int, timeout: float = 30.0) -> None:
    """SIGKILL every process of a node's session and wait until they are gone."""
    doomed = _session_processes(leader)
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(pid) for pid in doomed):
        time.sleep(0.05)


def env_value(name: str) -> str | None:
    """Runs on a worker: what it sees of an environment variable."""
    return os.environ.get(name)


_LOADS = [0]


def counting_classifier(spec: str | None) -> object:
    """Runs in a classifier actor: loads the classifier, counting loads in this worker process."""
    from worldforge.suites.science_birds.classify import actor_classifier

    _LOADS[0] += 1
    return actor_classifier(spec)


def broken_classifier(spec: str | None) -> object:
    """Runs in a classifier actor: a classifier directory that is not there on this node."""
    from worldforge.suites.science_birds.classify import actor_classifier

    _LOADS[0] += 1
    return actor_classifier(spec or "/nonexistent/letter-classifier")


def actor_env_value(_state: object, name: str) -> str | None:
    """Runs in an actor: what it sees of an environment variable."""
    return os.environ.get(name)


def classifier_loads(_state: object) -> int:
    """Runs in a classifier actor: how often this worker process loaded a classifier."""
    return _LOADS[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ray_bin() -> str:
    return str(Path(sys.executable).with_name("ray"))


class LocalRayCluster:
    """``start()`` a head and a worker node; ``address`` for ``--ray-address``; ``stop()`` always."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp = Path(tempfile.mkdtemp(prefix="wfray-", dir="/tmp"))
        # Workers import worldforge from this checkout and helpers such as env_value from here.
        path = f"{ROOT}{os.pathsep}{ROOT / 'tests'}"
        self.env = {**os.environ, **(env or {}), "PYTHONPATH": path, "RAY_USAGE_STATS_ENABLED": "0"}
        self.env.pop("RAY_ADDRESS", None)
        self.head: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None

    def _node(self, *args: str) -> subprocess.Popen[bytes]:
        common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--block", "--disable-usage-stats"]
        common += ["--object-store-memory", str(OBJECT_STORE_BYTES)]
        log = (self.temp / f"node-{len(list(self.temp.glob('node-*')))}.log").open("wb")
        return subprocess.Popen(
            [_ray_bin(), "start", *args, *common],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def start(self, timeout: float = 120.0, *, workers: bool = True) -> LocalRayCluster:
        self.head = self._node(
            "--head", "--port", str(self.port), "--include-dashboard=false", "--temp-dir", str(self.temp)
        )
        self._wait_port(timeout)
        if workers:
            self.add_worker()
        return self

    def add_worker(self) -> None:
        """Start the second node (joins the head)."""
        self.worker = self._node("--address", self.address)

    def _wait_port(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.head is not None and self.head.poll() is not None:
                raise RuntimeError(f"ray head exited: {self.logs()}")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"ray head did not listen in {timeout} s: {self.logs()}")

    def wait_cpus(self, ray: object, cpus: int, timeout: float = 120.0) -> None:
        """Until the connected cluster has ``cpus`` CPUs (both nodes registered)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if int(ray.cluster_resources().get("CPU", 0)) >= cpus:  # type: ignore[attr-defined]
                return
            time.sleep(0.3)
        raise RuntimeError(f"cluster did not reach {cpus} CPUs: {self.logs()}")

    def kill_worker(self) -> None:
        """SIGKILL every process of the worker node (raylet, object store, its task and actor
        workers), as a machine failure would, and wait until they are gone.

        Killing the node's process group alone is not enough: an actor's worker process serves the
        driver's calls directly and can go on answering for seconds after its raylet died, so a
        fast run could still send work to a node the test considers dead.
        """
        if self.worker is None or self.worker.poll() is not None:
            return
        _kill_session(self.worker.pid)
        self.worker.wait(timeout=30)

    def logs(self) -> str:
        return " | ".join(p.read_text(errors="replace")[-800:] for p in sorted(self.temp.glob("node-*.log")))

    def stop(self) -> None:
        for proc in (self.worker, self.head):
            if proc is None or proc.poll() is not None:
                continue
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        # Ray's daemons re-parent into the node's session (actor workers in groups of their own);
        # anything left there is ours.
        for proc in (self.worker, self.head):
            if proc is not None:
                _kill_session(proc.pid, timeout=10.0)
        shutil.rmtree(self.temp, ignore_errors=True)
