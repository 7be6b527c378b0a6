"""Running untrusted submission trials: bubblewrap sandboxes around warm trial hosts.

A submission is third-party Python. Each of its trials runs in a process of its own, forked by a
*trial host* (:mod:`worldforge.execution.trial_host`) from a state in which only the competition
package and ``openai`` are imported. The host runs, where the platform has it, inside
`bubblewrap <https://github.com/containers/bubblewrap>`_ (Debian package ``bubblewrap``):

* the whole file system read-only, ``/tmp`` and the home folders replaced by empty ``tmpfs``, the
  run workspace hidden, the submission bound read-only (each trial works on a private copy);
* new user, PID, IPC, UTS and network namespaces, all capabilities dropped: the only network is
  the sandbox's own loopback, on which the host's relay forwards to a unix socket bound in from
  here, whose other end (:class:`UnixRelay`) connects to the recording gateway. ``bwrap
  --unshare-net`` cannot reach the evaluator's loopback, and sharing the network namespace would
  let a trial reach every local service, so the gateway is the only thing on the other side;
* an environment built from nothing (no credentials of the evaluator reach a trial).

On top, our own limits apply to every trial with or without bubblewrap: a wall-clock kill, an
address-space cap (``RLIMIT_AS``), a cap on what it prints, and an audit hook that refuses process
creation, connections other than the gateway's, and writes outside its folder. Without bubblewrap
the same hosts run unsandboxed (``isolation="process"``); the evaluator warns once and reports it.

Forking from a warm host is what keeps a trial cheap (importing ``openai`` costs about a second
here); a child never outlives its trial, its files are deleted and, in a PID namespace, every
process it started is killed before the next trial, so no trial sees another's state or files.
"""

from __future__ import annotations

import json
import os
import queue
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from worldforge.core.errors import WorldForgeError

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
_READY_SECONDS = 120.0


@dataclass(frozen=True)
class TrialLimits:
    """What one trial may use; exceeding any is a recorded per-trial failure, never a stopped run."""

    wall_seconds: float = 130.0
    memory_bytes: int = 1536 * 1024 * 1024
    output_bytes: int = 8 * 1024 * 1024
    result_bytes: int = 16 * 1024 * 1024

    def identity(self) -> dict[str, Any]:
        return {
            "wall_seconds": self.wall_seconds,
            "memory_bytes": self.memory_bytes,
            "output_bytes": self.output_bytes,
        }


@lru_cache(maxsize=1)
def bubblewrap_status() -> tuple[bool, str]:
    """``(usable, detail)``: whether ``bwrap`` exists and can create the namespaces we ask for."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False, "bubblewrap (bwrap) is not installed"
    probe = [exe, *_bwrap_base(), "--", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap failed to start: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return False, f"bwrap cannot create a sandbox here: {detail[-1] if detail else done.returncode}"
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    return True, version.strip() or "bwrap"


def _bwrap_base() -> list[str]:
    """The sandbox flags. No ``--die-with-parent``: its ``PR_SET_PDEATHSIG`` fires when the
    *thread* that started bwrap exits (hosts start on worker threads); a host exits instead when
    its stdin closes, which the evaluator's death also causes, and bwrap's PID namespace takes
    every remaining process of the sandbox with it."""
    return [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--unshare-all",
        "--new-session",
        "--cap-drop", "ALL",
        "--clearenv",
    ]  # fmt: skip


def resolve_isolation(requested: str = "auto") -> str:
    """``bubblewrap`` or ``process`` for ``auto|bubblewrap|process`` (``bubblewrap``: required)."""
    ok, detail = bubblewrap_status()
    if requested == "process":
        return "process"
    if requested == "bubblewrap" and not ok:
        raise WorldForgeError(f"--sandbox bubblewrap: {detail} (Debian: apt-get install bubblewrap).")
    if requested not in ("auto", "bubblewrap"):
        raise WorldForgeError(f"sandbox: expected auto, bubblewrap or process, got {requested!r}.")
    return "bubblewrap" if ok else "process"


class UnixRelay:
    """A unix socket whose connections are forwarded to ``127.0.0.1:port`` (the gateway).

    The socket file lives in a private folder bound into each sandbox; one thread forwards bytes.
    """

    def __init__(self, port: int) -> None:
        self.port = int(port)
        self.folder = tempfile.mkdtemp(prefix="wf-gw-")
        self.path = os.path.join(self.folder, "gateway.sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(128)
        self._wake_r, self._wake_w = socket.socketpair()
        self._pairs: dict[socket.socket, socket.socket] = {}
        self._thread = threading.Thread(target=self._loop, name="worldforge-sandbox-relay", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            ready, _, _ = select.select([self._listener, self._wake_r, *self._pairs], [], [])
            for sock in ready:
                if sock is self._wake_r:
                    for s in list(self._pairs):
                        s.close()
                    return
                if sock is self._listener:
                    self._accept()
                    continue
                self._forward(sock)

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            upstream.connect(("127.0.0.1", self.port))
        except OSError:
            client.close()
            return
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._pairs[client], self._pairs[upstream] = upstream, client

    def _forward(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(1 << 16)
        except OSError:
            data = b""
        peer = self._pairs.get(sock)
        if data and peer is not None:
            try:
                peer.sendall(data)
                return
            except OSError:
                pass
        for s in (sock, peer):
            if s is not None:
                self._pairs.pop(s, None)
                s.close()

    def close(self) -> None:
        self._wake_w.send(b"x")
        self._thread.join(timeout=5)
        for s in (self._listener, self._wake_r, self._wake_w):
            s.close()
        shutil.rmtree(self.folder, ignore_errors=True)


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
    relay_socket: str | None = None
    hidden: tuple[str, ...] = ()


def _existing(paths: Sequence[str]) -> list[str]:
    return [p for p in dict.fromkeys(paths) if p and os.path.exists(p)]


def host_command(spec: HostSpec, scratch: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that start one trial host for ``spec``."""
    sandboxed = spec.isolation == "bubblewrap"
    home = os.path.expanduser("~")
    source = str(spec.source.resolve())
    python_prefix = str(Path(spec.python).absolute().parent.parent)
    cfg = {
        "package": spec.package,
        "source": "/tmp/wf-submission" if sandboxed else source,
        "module": spec.module,
        "class_name": spec.class_name,
        "scratch": "/tmp" if sandboxed else scratch,
        "host_dir": str(HOST_SCRIPT.parent),
        "wall_seconds": spec.limits.wall_seconds,
        "memory_bytes": spec.limits.memory_bytes,
        "output_bytes": spec.limits.output_bytes,
        "result_bytes": spec.limits.result_bytes,
        "gateway_port": spec.gateway_port,
        "relay_socket": spec.relay_socket if sandboxed else None,
        "pid_namespace": sandboxed,
        "deny_read": [] if sandboxed else [p + os.sep for p in _existing([home, "/home", *spec.hidden])],
        "allow_read": [p + os.sep for p in _existing([python_prefix, sys.prefix, sys.base_prefix])],
        "env": dict(BASE_ENV),
    }
    argv = [spec.python, "-I", "-B", str(HOST_SCRIPT), json.dumps(cfg)]
    if not sandboxed:
        return argv, dict(BASE_ENV)
    exe = shutil.which("bwrap") or "bwrap"
    wrap = [exe, *_bwrap_base()]
    for hidden in _existing([home, "/home", "/root", *spec.hidden]):
        wrap += ["--tmpfs", hidden]
    # Paths the host needs that may sit below a hidden folder (a workspace in /tmp, a venv in a cache).
    for needed in _existing([python_prefix, sys.prefix, sys.base_prefix, str(HOST_SCRIPT.parent)]):
        wrap += ["--ro-bind", needed, needed]
    wrap += ["--ro-bind", source, "/tmp/wf-submission"]
    if spec.relay_socket:
        folder = os.path.dirname(spec.relay_socket)
        wrap += ["--bind", folder, folder]
    for key, value in BASE_ENV.items():
        wrap += ["--setenv", key, value]
    wrap += ["--chdir", "/tmp", "--"]
    return wrap + argv, dict(BASE_ENV)


class TrialHost:
    """One running trial host process (see :mod:`worldforge.execution.trial_host`)."""

    def __init__(self, spec: HostSpec) -> None:
        self.spec = spec
        self._scratch = tempfile.mkdtemp(prefix="wf-trials-")
        argv, env = host_command(spec, self._scratch)
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        ready = self._read_line(_READY_SECONDS)
        if not isinstance(ready, dict) or not ready.get("ready"):
            self.close()
            reason = ready.get("reason") if isinstance(ready, dict) else None
            raise WorldForgeError(
                f"{spec.source}: the trial host did not start: {reason or 'it exited before it was ready'}."
            )

    def _read_line(self, timeout: float) -> Any:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        try:
            return json.loads(line) if line else None
        except ValueError:
            return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Send one trial; its answer (a crashed host answers as a crashed trial)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(dict(request)) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except OSError:
            return {"outcome": "crash", "reason": "the trial host is gone"}
        answer = self._read_line(self.spec.limits.wall_seconds + 60.0)
        if not isinstance(answer, dict):
            self.close()
            return {"outcome": "crash", "reason": "the trial host stopped answering"}
        return answer

    def close(self) -> None:
        """Close the host's stdin (an idle host exits, and with it the whole sandbox), then kill
        what is left. Killing alone would not do: bwrap's inner processes are in a session and
        process group of their own."""
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        shutil.rmtree(self._scratch, ignore_errors=True)


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

    def run(self, request: Mapping[str, Any]) -> dict[str, Any]:
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


@contextmanager
def trial_pool(spec: HostSpec, size: int = 1) -> Iterator[TrialPool]:
    pool = TrialPool(spec, size)
    try:
        yield pool
    finally:
        pool.close()


__all__ = [
    "BASE_ENV",
    "HOST_SCRIPT",
    "HostSpec",
    "TrialHost",
    "TrialLimits",
    "TrialPool",
    "UnixRelay",
    "bubblewrap_status",
    "host_command",
    "resolve_isolation",
    "trial_pool",
]
