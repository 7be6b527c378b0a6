"""Running untrusted submission trials: sandboxes around warm trial hosts, limits held from outside.

A submission is a stranger's Python on the organiser's machine, next to their API keys and the
other teams' programs. Each of its trials runs in a process of its own, forked by a *trial host*
(:mod:`worldforge.execution.trial_host`) from a state in which only the competition package and
``openai`` are imported. With ``isolation="bubblewrap"`` the host runs confined
(:mod:`worldforge.execution.confine`: an unprivileged kernel uid, a minimal read-only file system,
no network but its own channel to the gateway), and each trial gets user, PID, IPC and mount
namespaces of its own inside it (it cannot see or signal its host; its ``/tmp``, ``/dev/shm`` and
IPC objects die with it). The threat model is written out in ``docs/submissions.md``.

What the trial cannot reach, it cannot stop: the limits are held here, in the evaluator.

* **Wall clock.** The host kills a trial at its limit; if the host does not answer in time
  (``OUTER_GRACE_S`` later), the evaluator kills the whole sandbox itself.
* **Aggregate limits.** Each sandbox runs in control groups of its own
  (:mod:`worldforge.execution.cgroups`): tasks, memory and one CPU core for the whole sandbox, and
  a kill through the group that leaves nothing behind. Without writable cgroups (a non-root
  evaluator) only per-process limits apply, and :func:`sandbox_notes` says so.
* **Its own gateway channel.** Each host gets a unix socket of its own, bound read-only into its
  sandbox alone (no other sandbox can see, replace or reach it), served by :class:`HostRelay`,
  which forwards each connection on threads of its own with bounded buffers, so one trial cannot
  delay another team's traffic. The gateway still needs the trial's token.

``isolation="process"`` runs the same hosts without a sandbox: the limits and the audit hook still
apply, but it is no security boundary, is never chosen silently, and the report says so.
"""

from __future__ import annotations

import json
import os
import queue
import select
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from worldforge.core.canonical import JSONObject
from worldforge.core.errors import WorldForgeError
from worldforge.core.registry import Registry, choices
from worldforge.execution import cgroups
from worldforge.execution.confine import (
    Confinement,
    bubblewrap_status,
    confine_command,
    is_root,
    kernel_uid_note,
    python_hidden,
    python_paths,
)
from worldforge.execution.sandbox_types import HostConfig

HOST_SCRIPT = Path(__file__).with_name("trial_host.py")
#: Environment variables a trial may see (everything else, credentials included, is dropped).
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    # The packages' OpenAI clients need a key; the trial is named by its route, not by a key.
    "OPENAI_API_KEY": "not-used",
}
#: Where a sandbox sees the submission, the host's code and its gateway channel.
INSIDE_SUBMISSION = "/wf/submission"
INSIDE_HOST_DIR = "/wf/host"
INSIDE_SOCKET = "/wf/gateway.sock"
#: How long after a trial's wall-clock limit the evaluator kills a host that has not answered.
OUTER_GRACE_S = 10.0
#: Memory a sandbox may use beyond the trial's own cap: the warm host and its relay.
HOST_MEMORY_BYTES = 512 * 1024 * 1024
_READY_SECONDS = 120.0
#: What :meth:`TrialHost._read_line` returns when the host said nothing in time.
_SILENT = object()
_STDERR_LINES = 8
#: Evaluator-side folders of sandboxes (gateway sockets, host stderr): ``<root>/<pid>-<start>``.
RUNTIME_ROOT = Path(tempfile.gettempdir()) / "worldforge-sandboxes"


@dataclass(frozen=True)
class TrialLimits:
    """What one trial may use; exceeding any is a recorded per-trial failure, never a stopped run."""

    wall_seconds: float = 130.0
    memory_bytes: int = 1536 * 1024 * 1024
    output_bytes: int = 8 * 1024 * 1024
    result_bytes: int = 16 * 1024 * 1024
    #: The trial's own ``/tmp`` (a tmpfs; its pages also count against the sandbox's memory).
    tmp_bytes: int = 256 * 1024 * 1024
    shm_bytes: int = 64 * 1024 * 1024
    #: Tasks (processes and threads) of the whole sandbox, host included.
    tasks: int = 128

    def identity(self) -> JSONObject:
        """The limits that shape a trial's outcome (they enter its input digest)."""
        return {
            "wall_seconds": self.wall_seconds,
            "memory_bytes": self.memory_bytes,
            "output_bytes": self.output_bytes,
        }


class Isolation(Protocol):
    """An isolation mode ``--sandbox`` names: ``check`` fails closed, with one line naming what is
    missing, when the mode cannot hold a trial in on this machine."""

    def check(self, requested: str) -> None: ...


class _Process:
    """No sandbox: always available, never chosen silently (only an explicit ``--sandbox process``)."""

    def check(self, requested: str) -> None:
        return None


class _Bubblewrap:
    """Bubblewrap around each trial host, with control groups holding a root evaluator's limits."""

    def check(self, requested: str) -> None:
        ok, detail = bubblewrap_status()
        if not ok:
            raise WorldForgeError(
                f"--sandbox {requested}: submissions run only in a sandbox and {detail} "
                "(Debian: apt-get install bubblewrap); --sandbox process runs them without one, "
                "which is no security boundary."
            )
        if is_root() and cgroups.detect() is None:
            raise WorldForgeError(
                f"--sandbox {requested}: running as root needs writable cgroups to hold a sandbox's "
                f"limits ({cgroups.cgroup_status()[1]})."
            )


BUBBLEWRAP: Isolation = _Bubblewrap()
PROCESS: Isolation = _Process()
#: Isolation modes by name, equal to the project's ``worldforge.sandboxes`` entry points. Closed to
#: other packages (``plugins=False``): a sandbox is the security boundary, and trial hosts are built
#: for these modes alone, so an installed package must not be able to add one.
ISOLATIONS: Registry[Isolation] = Registry(
    "sandbox",
    {
        "bubblewrap": "worldforge.execution.sandbox:BUBBLEWRAP",
        "process": "worldforge.execution.sandbox:PROCESS",
    },
    group="worldforge.sandboxes",
    plugins=False,
)


def resolve_isolation(requested: str = "auto") -> str:
    """``bubblewrap`` or ``process`` for ``auto|bubblewrap|process``.

    Fails closed: ``auto`` and ``bubblewrap`` need a working bubblewrap and, for a root evaluator,
    writable cgroups (a one-line :class:`WorldForgeError` naming what is missing); only an explicit
    ``process`` runs without a sandbox."""
    name = "bubblewrap" if requested == "auto" else requested
    mode = ISOLATIONS.get(name)
    if mode is None:
        known = choices(["auto", *ISOLATIONS.names()])
        raise WorldForgeError(f"--sandbox: expected {known}, got {requested!r}.")
    ISOLATIONS.resolve(mode).check(requested)
    return name


def sandbox_notes(isolation: str) -> JSONObject:
    """Provenance: what held a trial in, and which limits were per process only."""
    if isolation != "bubblewrap":
        return {
            "isolation": isolation,
            "boundary": "none: process limits and an audit hook only; not a security boundary",
        }
    groups_ok, groups = cgroups.cgroup_status()
    return {
        "isolation": isolation,
        "sandbox": bubblewrap_status()[1],
        "uid": kernel_uid_note(),
        "limits": groups,
        "per_process_only": [] if groups_ok else ["processes", "memory", "cpu"],
    }


def runtime_folder() -> Path:
    """This evaluator's folder of sandbox sockets and logs (made once, ``0700``)."""
    folder = RUNTIME_ROOT / cgroups.owner_tag()
    RUNTIME_ROOT.mkdir(mode=0o711, exist_ok=True)
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def remove_stale() -> list[str]:
    """Remove what evaluators killed before they could clean up left behind: their sandboxes'
    control groups (every process in them killed) and their runtime folders."""
    removed = cgroups.remove_stale()
    if RUNTIME_ROOT.is_dir():
        for folder in sorted(RUNTIME_ROOT.iterdir()):
            if not cgroups.owner_alive(folder.name):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder.name)
    return removed


class HostRelay:
    """One trial host's channel to the gateway: a unix socket whose connections are forwarded to
    ``127.0.0.1:port``, each on two threads of its own (64 KiB at a time), so a connection that
    stalls holds nothing but itself. At most ``max_connections`` at once."""

    def __init__(self, port: int, path: str, max_connections: int = 32) -> None:
        self.port = int(port)
        self.path = path
        self.max_connections = max_connections
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        os.chmod(path, 0o666)  # the sandbox's uid connects; only that sandbox sees the file
        self._listener.listen(64)
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="worldforge-host-relay", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closed or len(self._open) >= 2 * self.max_connections:
                    client.close()
                    continue
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                upstream.connect(("127.0.0.1", self.port))
            except OSError:
                client.close()
                upstream.close()
                continue
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._open.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while True:
                data = source.recv(1 << 16)
                if not data:
                    break
                target.sendall(data)
        except OSError:
            pass
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            with self._lock:
                if sock in self._open:
                    self._open.discard(sock)
                    sock.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            socks, self._open = list(self._open), set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self._thread.join(timeout=5)
        try:
            os.unlink(self.path)
        except OSError:
            pass


@dataclass(frozen=True)
class HostSpec:
    """What a trial host needs: the interpreter, the submission and how to reach the gateway."""

    python: str
    package: str
    source: Path
    module: str
    class_name: str
    limits: TrialLimits
    isolation: str
    gateway_port: int
    #: Folders a host without a sandbox may not read (the run workspace); bubblewrap shows none.
    hidden: tuple[str, ...] = ()


def _existing(paths: Sequence[str]) -> list[str]:
    return [p for p in dict.fromkeys(paths) if p and os.path.exists(p)]


def host_config(spec: HostSpec, scratch: str) -> HostConfig:
    """The trial host's configuration (its one command-line argument)."""
    sandboxed = spec.isolation == "bubblewrap"
    home = os.path.expanduser("~")
    limits = spec.limits
    return {
        "package": spec.package,
        "source": INSIDE_SUBMISSION if sandboxed else str(spec.source.resolve()),
        "module": spec.module,
        "class_name": spec.class_name,
        "scratch": "/tmp" if sandboxed else scratch,
        "host_dir": INSIDE_HOST_DIR if sandboxed else str(HOST_SCRIPT.parent),
        "wall_seconds": limits.wall_seconds,
        "memory_bytes": limits.memory_bytes,
        "output_bytes": limits.output_bytes,
        "result_bytes": limits.result_bytes,
        "trial_tmp_bytes": limits.tmp_bytes,
        "shm_bytes": limits.shm_bytes,
        "gateway_port": spec.gateway_port,
        "relay_socket": INSIDE_SOCKET if sandboxed else None,
        "namespaces": sandboxed,
        "deny_read": [] if sandboxed else [p + os.sep for p in _existing([home, "/home", *spec.hidden])],
        "allow_read": [p + os.sep for p in _existing(python_paths(spec.python))],
        "env": dict(BASE_ENV),
    }


def host_command(spec: HostSpec, scratch: str, socket_path: str | None = None) -> list[str]:
    """The argv that starts one trial host for ``spec`` (to be started with an empty environment)."""
    cfg = host_config(spec, scratch)
    if spec.isolation != "bubblewrap":
        return [spec.python, "-I", "-B", str(HOST_SCRIPT), json.dumps(cfg)]
    argv = [spec.python, "-I", "-B", f"{INSIDE_HOST_DIR}/{HOST_SCRIPT.name}", json.dumps(cfg)]
    binds = {p: p for p in python_paths(spec.python)}
    binds[str(spec.source.resolve())] = INSIDE_SUBMISSION
    binds[str(HOST_SCRIPT.parent)] = INSIDE_HOST_DIR
    if socket_path is not None:
        binds[socket_path] = INSIDE_SOCKET
    confinement = Confinement(
        ro_binds=binds,
        tmpfs={"/tmp": 16 * 1024 * 1024},
        env=BASE_ENV,
        chdir="/tmp",
        hidden=python_hidden(spec.python),
    )
    return confine_command(argv, confinement)


class TrialHost:
    """One running trial host process (see :mod:`worldforge.execution.trial_host`)."""

    def __init__(self, spec: HostSpec) -> None:
        self.spec = spec
        self.group: cgroups.SandboxGroup | None = None
        self.relay: HostRelay | None = None
        self._folder = Path(tempfile.mkdtemp(prefix="host-", dir=runtime_folder()))
        self._stderr: IO[bytes] = open(self._folder / "stderr.log", "w+b")  # noqa: SIM115
        sandboxed = spec.isolation == "bubblewrap"
        argv: list[str]
        try:
            if sandboxed:
                self.relay = HostRelay(spec.gateway_port, str(self._folder / "gateway.sock"))
                argv = host_command(spec, str(self._folder), self.relay.path)
                setup = cgroups.detect()
                if setup is not None:
                    limits = cgroups.GroupLimits(
                        pids=spec.limits.tasks, memory_bytes=spec.limits.memory_bytes + HOST_MEMORY_BYTES
                    )
                    self.group = cgroups.SandboxGroup(setup, limits)
                    argv = self.group.join_argv(argv)
            else:
                argv = host_command(spec, str(self._folder))
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env={} if sandboxed else dict(BASE_ENV),
                start_new_session=True,
            )
        except BaseException:
            self._release()
            raise
        ready = self._read_line(_READY_SECONDS)
        if not isinstance(ready, dict) or not ready.get("ready"):
            reason = ready.get("reason") if isinstance(ready, dict) else None
            if self.alive():
                self.kill()
            self.proc.wait()
            tail = self.stderr_tail()
            self.close()
            raise WorldForgeError(
                f"{spec.source}: the trial host did not start: {reason or 'it exited before it was ready'}"
                + tail
            )

    def stderr_tail(self) -> str:
        """The last lines the host (or the sandbox starting it) wrote on stderr, for an error."""
        try:
            self._stderr.flush()
            data = (self._folder / "stderr.log").read_bytes()[-4096:]
        except (OSError, ValueError):
            return ""
        lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()][-_STDERR_LINES:]
        return (" (stderr: " + " | ".join(lines) + ")") if lines else ""

    def _read_line(self, timeout: float) -> object:
        """The next JSON line; ``None`` at end of output or for a line that is not JSON, and
        :data:`_SILENT` when nothing came within ``timeout`` (the host is hung, not gone)."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return _SILENT
        line = self.proc.stdout.readline()
        try:
            return json.loads(line) if line else None
        except ValueError:
            return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, request: Mapping[str, object]) -> JSONObject:
        """Send one trial; its answer. A host that does not answer within the wall-clock limit
        and :data:`OUTER_GRACE_S` is killed with its whole sandbox, by the evaluator."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(dict(request)) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except OSError:
            return {"outcome": "crash", "reason": "the trial host is gone"}
        limit = self.spec.limits.wall_seconds
        answer = self._read_line(limit + OUTER_GRACE_S)
        if isinstance(answer, dict):
            return answer
        self.kill()
        self.close()
        if answer is _SILENT:
            return {
                "outcome": "killed",
                "reason": f"wall-clock limit: killed after {limit:g} s (the sandbox, by the evaluator)",
            }
        return {"outcome": "crash", "reason": "the trial host stopped answering"}

    def kill(self) -> None:
        """Kill every process of the sandbox now: through its control group when it has one."""
        if self.group is not None:
            self.group.kill()
        try:
            os.killpg(self.proc.pid, 9)
        except OSError:
            pass

    def close(self) -> None:
        """Close the host's stdin (an idle host exits, and with it the whole sandbox), then kill
        what is left, through the group, and remove the group, the channel and the folder."""
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
        if self.group is not None and self.group.pids():
            self.group.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._release()

    def _release(self) -> None:
        if self.group is not None:
            self.group.remove()
            self.group = None
        if self.relay is not None:
            self.relay.close()
            self.relay = None
        self._stderr.close()
        shutil.rmtree(self._folder, ignore_errors=True)


class TrialPool:
    """``size`` warm trial hosts for one submission; :meth:`run` is safe from several threads."""

    def __init__(self, spec: HostSpec, size: int = 1) -> None:
        self.spec = spec
        self._idle: queue.Queue[TrialHost] = queue.Queue()
        self._all: list[TrialHost] = []
        self._lock = threading.Lock()
        self.start_error = ""
        for _ in range(max(1, size)):
            self._add()

    def _add(self) -> None:
        host = TrialHost(self.spec)
        with self._lock:
            self._all.append(host)
        self._idle.put(host)

    def _replace(self, host: TrialHost) -> None:
        host.close()
        with self._lock:
            if host in self._all:
                self._all.remove(host)
        try:
            self._add()
        except WorldForgeError as exc:
            self.start_error = str(exc)

    def run(self, request: Mapping[str, object]) -> JSONObject:
        """One trial on the next idle host; a host found dead is replaced before use, one that dies
        during the trial after it (the trial's answer says why)."""
        while True:
            try:
                host = self._idle.get(timeout=1.0)
            except queue.Empty:
                with self._lock:
                    if not self._all:
                        return {"outcome": "crash", "reason": f"no trial host: {self.start_error}"}
                continue
            if host.alive():
                break
            self._replace(host)
        try:
            answer = host.run(request)
        finally:
            if host.alive():
                self._idle.put(host)
            else:
                self._replace(host)
        return answer

    def close(self) -> None:
        with self._lock:
            hosts, self._all = list(self._all), []
        for host in hosts:
            host.close()


__all__ = [
    "BASE_ENV",
    "BUBBLEWRAP",
    "HOST_SCRIPT",
    "ISOLATIONS",
    "PROCESS",
    "HostRelay",
    "HostSpec",
    "Isolation",
    "OUTER_GRACE_S",
    "TrialHost",
    "TrialLimits",
    "TrialPool",
    "host_command",
    "host_config",
    "remove_stale",
    "resolve_isolation",
    "runtime_folder",
    "sandbox_notes",
]
