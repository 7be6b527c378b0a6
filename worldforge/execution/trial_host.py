"""The trial host: runs inside the sandbox and forks one fresh process per submission trial.

Started by :mod:`worldforge.execution.sandbox` as ``python -I -B trial_host.py CONFIG_JSON``
(standard library only, so it runs under a submission's own virtual environment too). It

1. imports the competition package and ``openai`` once (about a second on a small machine: this
   is why trials are forked from a warm host instead of started cold), and warms the values the
   OpenAI client would otherwise compute by running ``uname -p`` inside a trial;
2. in a sandbox (no network of its own but loopback), forks a relay that forwards
   ``127.0.0.1:<port>`` to the host's own gateway socket bound into it, and stops being dumpable
   (its ``/proc`` files, pipes and memory, are closed to the trials, which share its uid);
3. reads one JSON request per line on stdin and, for each, forks a setup process that gives the
   trial user, PID, IPC and mount namespaces of its own with a fresh, sized ``/tmp`` and
   ``/dev/shm`` (in a sandbox), copies the read-only submission there, and forks the namespace's
   first process, which forks the trial (with every capability dropped). The host enforces the
   wall-clock and output limits, kills whatever is left, and answers one JSON line on stdout.

The trial cannot see or signal the host: the host has no pid in the trial's namespace, and when
the trial's first process ends the kernel kills every process left in it. The trial builds the
package's ``TrialContext`` as ``run_evaluation`` does and calls the package's own trial function;
the reply is ``run()``'s return value as the package writes it (a file the program wrote itself is
not a reply). The host never imports the submission itself: every submission module is imported
only in a trial process, and its module state and files die with it.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import resource
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
from typing import Any

#: Audit events a trial may not raise: starting processes. (The sandbox is the boundary; this
#: turns an attempt into a recorded reason instead of a confusing downstream failure.)
_BLOCKED_EVENTS = ("os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.fork", "os.forkpty")
_TAIL = 4096


def _load_setup() -> Any:
    """The sibling ``trial_setup.py`` (namespaces, privileges, importing the entry), loaded by path:
    the host's own folder is not on ``sys.path``, and a team's module must never stand in for it."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trial_setup.py")
    spec = importlib.util.spec_from_file_location("_worldforge_trial_setup", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_setup = _load_setup()


class _Discovered(Exception):
    """Raised by the stand-in ``run_evaluation`` a module calls at import time (no main guard)."""

    def __init__(self, fn: Any) -> None:
        super().__init__("run_evaluation called at import time")
        self.fn = fn


def _relay(listener: socket.socket, unix_path: str) -> None:
    """Forward every connection on ``listener`` to ``unix_path`` (runs in its own process)."""
    pairs: dict[socket.socket, socket.socket] = {}
    while True:
        readable, _, _ = select.select([listener, *pairs], [], [])
        for sock in readable:
            if sock is listener:
                client, _ = listener.accept()
                upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    upstream.connect(unix_path)
                except OSError:
                    client.close()
                    continue
                pairs[client], pairs[upstream] = upstream, client
                continue
            try:
                data = sock.recv(65536)
            except OSError:
                data = b""
            peer = pairs.get(sock)
            if data and peer is not None:
                try:
                    peer.sendall(data)
                    continue
                except OSError:
                    pass
            for s in (sock, peer):
                if s is not None:
                    pairs.pop(s, None)
                    s.close()


def _die_with_parent(parent: int) -> None:
    """SIGKILL this process when ``parent`` (single-threaded) exits (Linux ``PR_SET_PDEATHSIG``)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:
        os._exit(0)


def _start_relay(unix_path: str) -> tuple[int, int]:
    """A relay process listening on 127.0.0.1 in this network namespace: ``(port, pid)``."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = int(listener.getsockname()[1])
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            # Dies with the host (bwrap's init would otherwise wait for it forever) and holds
            # none of the host's pipes (the evaluator must see the host's stdout close).
            _die_with_parent(parent)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            _relay(listener, unix_path)
        finally:
            os._exit(0)
    listener.close()
    return port, pid


def _warm(package: str) -> None:
    """Import what every trial needs, before any trial exists."""
    import platform

    platform.processor()  # openai's client headers ask for it; computing it runs ``uname -p``
    "warm".encode("idna")  # httpx encodes host names; load the codec once, here
    importlib.import_module(f"{package}.competition")
    importlib.import_module(f"{package}.models.trial_context")
    try:
        _warm_client()
    except Exception:  # noqa: BLE001 - only a warm-up; the trial reports real failures
        pass


def _warm_client() -> None:
    """Run the OpenAI client's lazy first-use work once, here, instead of in every trial: building
    a client, a request (to a closed loopback port) and parsing a chat completion (pydantic builds
    its validators on first use). Only module-level caches change; no submission code has run."""
    from openai import OpenAI
    from openai.types.chat import ChatCompletion

    client = OpenAI(api_key="warm-up", base_url="http://127.0.0.1:1/v1", max_retries=0, timeout=2.0)
    try:
        client.chat.completions.create(messages=[{"role": "user", "content": "warm-up"}], model="warm-up")
    except Exception:  # noqa: BLE001 - nothing listens on port 1: the connection error is expected
        pass
    finally:
        client.close()
    ChatCompletion.model_validate(
        {
            "id": "warm-up",
            "object": "chat.completion",
            "created": 0,
            "model": "warm-up",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _audit(
    allowed_port: int, writable: tuple[str, ...], unreadable: tuple[str, ...], readable: tuple[str, ...]
) -> None:
    """Refuse process creation, any connection but the gateway's, writes outside the trial's
    folders and reads of the denied folders, with a clear message. Inside bubblewrap these are
    impossible anyway; without it this hook is what keeps a trial in its folder."""

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _BLOCKED_EVENTS or event.startswith("os.exec"):
            raise PermissionError(f"blocked by the trial sandbox: {event}")
        if event == "open" and args and isinstance(args[0], str | bytes):
            path = os.path.abspath(os.fsdecode(args[0]))
            mode, flags = args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else 0
            writes = bool(isinstance(flags, int) and flags & _WRITE_FLAGS) or bool(
                isinstance(mode, str) and set(mode) & set("wax+")
            )
            if writes and not path.startswith(writable):
                raise PermissionError(f"blocked by the trial sandbox: writing {path}")
            if path.startswith(unreadable) and not path.startswith(readable):
                raise PermissionError(f"blocked by the trial sandbox: reading {path}")
            return
        if event == "socket.connect":
            address = args[1] if len(args) > 1 else None
            if isinstance(address, tuple) and address[:2] == ("127.0.0.1", allowed_port):
                return
            raise PermissionError(f"blocked by the trial sandbox: network connection to {address!r}")

    sys.addaudithook(hook)


def _failed_reason(log_path: str) -> str:
    """The message the package logged for a ``TimeoutError``/``ValueError`` trial."""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            lines = [ln for ln in handle.read().splitlines() if " failed with error: " in ln]
    except OSError:
        return ""
    return lines[-1].split(" failed with error: ", 1)[1] if lines else ""


def _child(cfg: dict[str, Any], req: dict[str, Any], workdir: str, result_fd: int) -> None:
    """One trial, in a forked child (never returns)."""
    package = cfg["package"]
    os.chdir(workdir)  # the team folder's copy: programs open their files relative to it
    base = [p for p in sys.path if p and not p.startswith(cfg["host_dir"])]
    sys.path[:] = _setup.search_path(workdir, cfg["module"], base)
    os.environ.clear()
    os.environ.update(cfg["env"])
    base_url = f"http://127.0.0.1:{cfg['gateway_port']}/t/{req['token']}/v1"
    os.environ["OPENAI_BASE_URL"] = base_url
    os.environ["HOME"] = os.environ["TMPDIR"] = os.path.dirname(workdir)
    limit = int(cfg["memory_bytes"])
    if limit > 0:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    scratch = os.path.dirname(workdir) + os.sep
    # In a sandbox the trial's /tmp and /dev/shm are its own (sized tmpfs that die with it).
    private = ("/tmp/", "/dev/shm/") if cfg["namespaces"] else ()
    _audit(
        int(cfg["gateway_port"]),
        (scratch, "/dev/null", *private),
        tuple(cfg.get("deny_read") or ()),
        tuple(cfg.get("allow_read") or ()),
    )
    result: dict[str, Any]
    competition: Any = importlib.import_module(f"{package}.competition")
    context_mod = importlib.import_module(f"{package}.models.trial_context")
    run_trial = getattr(competition, "__run_trial")
    original_run_evaluation = competition.run_evaluation

    def stand_in(team_name: str, fn: Any, *args: Any, **kwargs: Any) -> None:
        raise _Discovered(fn)

    returned: list[Any] = []
    try:
        competition.run_evaluation = stand_in
        try:
            module = _setup.import_entry(workdir, cfg["module"], str(req["team"]))
            fn = getattr(module, cfg["class_name"])
        except _Discovered as found:
            fn = found.fn
        finally:
            competition.run_evaluation = original_run_evaluation

        def run(ctx: Any, target_character: str) -> Any:
            # The package writes the reply from run()'s return value; only that value is a reply
            # (not a file the program wrote itself, nor one left behind by a failed run()).
            value = fn.run(ctx, target_character)
            returned.append(value)
            return value

        shim = type(fn.__name__, (), {"run": staticmethod(run)})
        team, letter, trial = req["team"], req["letter"], int(req["trial"])
        # As run_evaluation lays out its folders and builds the context.
        os.makedirs(os.path.join(team, "raw", letter), exist_ok=True)
        os.makedirs(os.path.join(os.path.dirname(team) or ".", "logs"), exist_ok=True)
        log_file = os.path.join(os.path.dirname(team) or ".", "logs", f"{team}_raw.log")
        open(log_file, "a").close()
        from pathlib import Path

        args: list[Any] = [team, letter, trial, Path(log_file)]
        if package == "llms4pcg":
            args += [req["model"], base_url]
        ctx = context_mod.TrialContext(*args)
        run_trial(ctx, shim)
        out = ctx.get_output_file_path()
        if returned and isinstance(returned[0], str) and os.path.exists(out):
            result = {"outcome": "reply", "reply": returned[0]}
        else:
            result = {"outcome": "no_output", "reason": _failed_reason(log_file)}
    except BaseException as exc:  # noqa: BLE001 - every failure of a trial is a recorded outcome
        frames = traceback.extract_tb(exc.__traceback__)
        where = next(
            (
                f"{os.path.relpath(f.filename, workdir)}:{f.lineno}"
                for f in reversed(frames)
                if f.filename.startswith(workdir)
            ),
            None,
        )
        reason = f"{type(exc).__name__}: {exc}"
        cause = exc.__cause__
        if cause is not None:  # openai's "Connection error." says why only in its cause
            reason += f" (caused by {type(cause).__name__}: {cause})"
        result = {"outcome": "error", "reason": reason[:2000], "where": where}
    data = json.dumps(result, ensure_ascii=True).encode("ascii")
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view) :]
    finally:
        os._exit(0)


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _sweep(keep: set[int]) -> None:
    """Kill every process of this sandbox but ``keep`` (only meaningful in a PID namespace)."""
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in keep and int(name) != 1:
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass


def _trial_process(cfg: dict[str, Any], req: dict[str, Any], workdir: str, out_w: int, res_w: int) -> None:
    """Become the trial: output to the host's pipe, then :func:`_child` (never returns)."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1, errors="replace")
    sys.stderr = os.fdopen(2, "w", buffering=1, errors="replace")
    try:
        _child(cfg, req, workdir, res_w)
    finally:
        os._exit(70)


def _reap(trial: int) -> int:
    """As the first process of the trial's PID namespace: reap orphans until the trial itself
    ends; its wait status."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        if pid == trial:
            return status


def _setup_failure(res_w: int, exc: BaseException) -> None:
    data = json.dumps({"outcome": "crash", "reason": f"trial setup failed: {type(exc).__name__}: {exc}"})
    os.write(res_w, data.encode("ascii", "backslashreplace"))


def _fork_trial(cfg: dict[str, Any], req: dict[str, Any], scratch: str, pipes: dict[str, int]) -> int:
    """Fork the trial: in a sandbox through namespaces of its own (host -> setup -> init -> trial),
    else directly. Returns the pid the host waits for; its process group holds every stage."""
    workdir = os.path.join(scratch, "submission")
    pid = os.fork()
    if pid != 0:
        return pid
    try:
        os.setsid()
        for name in ("out_r", "res_r", "status_r"):
            os.close(pipes[name])
        if cfg["namespaces"]:
            _setup.enter_trial_namespaces(cfg)
            os.makedirs(scratch, mode=0o700)
        shutil.copytree(cfg["source"], workdir, symlinks=True)
        if not cfg["namespaces"]:
            os.close(pipes["status_w"])
            _trial_process(cfg, req, workdir, pipes["out_w"], pipes["res_w"])
        init = os.fork()
        if init == 0:
            trial = os.fork()
            if trial == 0:
                os.close(pipes["status_w"])
                _setup.drop_privileges()
                _trial_process(cfg, req, workdir, pipes["out_w"], pipes["res_w"])
            os.close(pipes["out_w"])
            os.close(pipes["res_w"])
            status = _reap(trial)
            os.write(pipes["status_w"], str(status).encode("ascii"))
            os._exit(0)  # the namespace's first process: every process left in it dies now
        for name in ("out_w", "res_w", "status_w"):
            os.close(pipes[name])
        os.waitpid(init, 0)
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - reported as the trial's outcome
        try:
            _setup_failure(pipes["res_w"], exc)
        finally:
            os._exit(71)
    finally:
        os._exit(70)


def _status_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return f"the trial process was killed by {name}"
    return f"the trial process exited with status {os.WEXITSTATUS(status)} without a result"


def _run(cfg: dict[str, Any], req: dict[str, Any], relay_pid: int | None) -> dict[str, Any]:
    if cfg["namespaces"]:
        scratch = "/tmp/wf-trial"  # inside the trial's own tmpfs, which dies with its namespaces
    else:
        scratch = tempfile.mkdtemp(prefix="wf-trial-", dir=cfg["scratch"])
    pipes: dict[str, int] = {}
    for name in ("out", "res", "status"):
        pipes[f"{name}_r"], pipes[f"{name}_w"] = os.pipe()
    started = time.monotonic()
    pid = _fork_trial(cfg, req, scratch, pipes)
    for name in ("out_w", "res_w", "status_w"):
        os.close(pipes[name])
    out_r, res_r = pipes["out_r"], pipes["res_r"]
    deadline = started + float(cfg["wall_seconds"])
    cap = int(cfg["output_bytes"])
    output, tail, killed = 0, b"", ""
    result = b""
    open_fds = {out_r, res_r}
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            killed = f"wall-clock limit: killed after {cfg['wall_seconds']:g} s"
            break
        # The evaluator writes nothing while a trial runs: stdin readable now means it is gone.
        ready, _, _ = select.select([*open_fds, 0], [], [], left)
        if 0 in ready:
            os.killpg(pid, signal.SIGKILL)
            shutil.rmtree(scratch, ignore_errors=True)
            os._exit(3)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.discard(fd)
            elif fd == out_r:
                output += len(chunk)
                tail = (tail + chunk)[-_TAIL:]
            else:
                result += chunk
        if output > cap:
            killed = f"output limit: the trial printed more than {cap} bytes"
            break
        if len(result) > int(cfg["result_bytes"]):
            killed = f"reply limit: the reply is larger than {cfg['result_bytes']} bytes"
            break
    if killed:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    _, status = os.waitpid(pid, 0)
    if cfg["namespaces"]:
        text = _read_all(pipes["status_r"]).strip()
        status = int(text) if text.isdigit() else signal.SIGKILL
    for fd in (out_r, res_r, pipes["status_r"]):
        os.close(fd)
    if cfg["namespaces"]:  # the trial's files died with its mount namespace
        _sweep({os.getpid(), *([relay_pid] if relay_pid else [])})
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        shutil.rmtree(scratch, ignore_errors=True)
    seconds = round(time.monotonic() - started, 3)
    answer: dict[str, Any] = {"id": req.get("id"), "seconds": seconds, "output_bytes": output}
    answer["output_tail"] = tail.decode("utf-8", "replace")
    if killed:
        answer.update(outcome="killed", reason=killed)
        return answer
    try:
        parsed = json.loads(result) if result else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("outcome") in ("reply", "no_output", "error", "crash"):
        answer.update(parsed)
        return answer
    answer.update(outcome="crash", reason=_status_reason(status))
    return answer


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[1])
    sys.path[:] = [p for p in sys.path if p and not p.startswith(cfg["host_dir"])]
    if cfg["namespaces"]:
        # Same uid as the trials: without this a trial could open the host's /proc files (its
        # pipes to the evaluator, its memory). Each trial turns it back on for itself.
        _setup.set_dumpable(False)
    relay_pid = None
    if cfg.get("relay_socket"):
        port, relay_pid = _start_relay(cfg["relay_socket"])
        cfg["gateway_port"] = port
    try:
        _warm(cfg["package"])
        ready: dict[str, Any] = {"ready": True, "gateway_port": cfg["gateway_port"]}
    except BaseException as exc:  # noqa: BLE001 - reported to the evaluator as a program failure
        ready = {"ready": False, "reason": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    if not ready["ready"]:
        return 1
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            answer = _run(cfg, req, relay_pid)
        except Exception as exc:  # noqa: BLE001 - the host survives; the trial is a failure
            answer = {"id": req.get("id"), "outcome": "crash", "reason": f"trial host: {exc!r}"}
        sys.stdout.write(json.dumps(answer, ensure_ascii=True) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))


__all__ = ["main"]
