"""A hostile corpus: one submission per attack, each written as an outside team would write it.

Each attacker is a real ``llms4pcg`` ``TrialLoop`` program. On letter ``A`` it attacks and raises
``RuntimeError("REPORT {...}")`` with what it managed to see or do (so the evidence is in the trial's
recorded reason); on any other letter it behaves (asks the model, returns its reply), which proves
the same warm host still answers after the attack. Every attack must end as a recorded,
clearly-reasoned failure of its own trial, with nothing read, written or reached outside.

Under ``CI=true`` these tests fail instead of skipping when bubblewrap or cgroups are missing.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandboxing import require_sandbox
from worldforge.core.digests import digest_payload
from worldforge.execution import cgroups
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway
from worldforge.pcg.programs.submission import load_submission
from worldforge.suites.science_birds.config import ItemKey
from worldforge.suites.science_birds.submissions import SubmissionTrials, prepare

SECRET = "sk-proj-Hq7J2x9LmP4vR1tY8wK3nB6cD0fH5gA2sE7uI9oZ"

TEMPLATE = """
import ctypes, errno, json, os, signal, socket, sys, time
from pathlib import Path

from llms4pcg.competition import chat_with_llm, run_evaluation
from llms4pcg.models.trial_loop import TrialLoop

PARAMS = json.loads(%(params)r)
libc = ctypes.CDLL(None, use_errno=True)


def report(**found):
    raise RuntimeError("REPORT " + json.dumps(found, sort_keys=True))


def attempt(fn):
    try:
        return ["ok", repr(fn())[:200]]
    except Exception as exc:  # noqa: BLE001
        return ["refused", type(exc).__name__]


def ask(ctx, c):
    return chat_with_llm(ctx, [{"role": "user", "content": "Build " + c + " with drop_block."}])[0]


def attack(ctx):
%(body)s


class Attacker(TrialLoop):
    @staticmethod
    def run(ctx, target_character):
        if target_character == "A":
            return attack(ctx)
        return ask(ctx, target_character)


if __name__ == "__main__":
    run_evaluation("%(name)s", Attacker)
"""

SIGNAL_HOST = """
    me = os.getpid()
    outer = int(os.readlink("/proc/self"))  # this process as the sandbox's /proc numbers it
    visible = sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != outer)
    targets = [os.getppid(), -1, *visible]
    sent = {}
    for pid in targets:
        if pid in (0, me):
            continue
        sent[str(pid)] = attempt(lambda: os.kill(pid, signal.SIGSTOP))[0]
    traced = [p for p in visible if p != me and libc.ptrace(16, p, 0, 0) == 0]  # PTRACE_ATTACH
    opened = [p for p in visible if p != me and attempt(lambda: open(f"/proc/{p}/mem", "rb"))[0] == "ok"]
    pipes = [f"{p}/{fd}" for p in visible if p != me
             for fd in ("0", "1") if attempt(lambda: open(f"/proc/{p}/fd/{fd}", "wb"))[0] == "ok"]
    report(ppid=os.getppid(), pid=me, traced=traced, mem=opened, pipes=pipes, sent=sent)
"""

CHANNEL = """
    listing = sorted(os.listdir("/wf"))
    rename = attempt(lambda: os.rename("/wf/gateway.sock", "/tmp/stolen.sock"))
    unlink = attempt(lambda: os.unlink("/wf/gateway.sock"))
    def listen():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind("/wf/gateway.sock")
    bind = attempt(listen)
    others = [p for p in ("/tmp", "/run", "/var/run") if os.path.isdir(p) and any(
        "gw" in n or n.endswith(".sock") for n in os.listdir(p))]
    report(listing=listing, rename=rename, unlink=unlink, bind=bind, others=others)
"""

HOST_FILES = """
    status = Path("/proc/self/status").read_text()
    uid = int(status.split("Uid:")[1].split()[1])
    top = sorted(os.listdir("/"))
    reads = {p: attempt(lambda: Path(p).read_bytes()[:40]) for p in PARAMS["paths"]}
    def unix():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(PARAMS["unix"])
    def tcp(address):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(address)
    report(uid=uid, top=top, reads=reads, unix=attempt(unix),
           gateway=attempt(lambda: tcp(("127.0.0.1", PARAMS["gateway_port"]))),
           outside=attempt(lambda: tcp(("192.0.2.1", 80))),
           environ=sorted(os.environ))
"""

LIMITS = """
    libc.fork.restype = ctypes.c_int
    forked = 0
    for _ in range(300):
        pid = libc.fork()
        if pid == 0:
            block = bytearray(8 * 1024 * 1024)
            time.sleep(30)
            os._exit(0)
        if pid < 0:
            break
        forked += 1
    def fill(folder, total):
        written = 0
        fd = os.open(os.path.join(folder, "fill.bin"), os.O_WRONLY | os.O_CREAT)
        try:
            while written < total:
                written += os.write(fd, b"x" * (1 << 20))
        except OSError as exc:
            return [written, exc.errno]
        finally:
            os.close(fd)
        return [written, 0]
    report(forked=forked, tmp=fill("/tmp", 800 << 20), shm=fill("/dev/shm", 800 << 20))
"""

LEAVE_STATE = """
    rt = ctypes.CDLL("librt.so.1", use_errno=True)
    rt.mq_open.restype = ctypes.c_int
    if ctx.get_trial_number() == 1:
        Path("/tmp/left.txt").write_text("trial 1 was here")
        Path("/dev/shm/left.txt").write_text("trial 1 was here")
        shm = libc.shmget(0x5746, 4096, 0o1000 | 0o666)  # IPC_CREAT
        mq = rt.mq_open(b"/wf-left", os.O_CREAT | os.O_RDWR, 0o666, None)
        libc.fork.restype = ctypes.c_int
        if libc.fork() == 0:  # a process left behind, holding a file open
            handle = open("/tmp/daemon.txt", "w")
            time.sleep(60)
            os._exit(0)
        report(planted=[shm >= 0, mq >= 0])
    report(tmp=os.path.exists("/tmp/left.txt"), shm_file=os.path.exists("/dev/shm/left.txt"),
           sysv=libc.shmget(0x5746, 4096, 0) >= 0, mq=rt.mq_open(b"/wf-left", os.O_RDWR) >= 0,
           daemon=os.path.exists("/tmp/daemon.txt"))
"""

OVERSPEND = """
    try:
        replies = chat_with_llm(ctx, [{"role": "user", "content": "word " * 2800}], n=128)
    except ValueError:
        replies = None
    import importlib
    client = importlib.import_module("op" + "enai").OpenAI()  # escapes any static scan
    answer = client.chat.completions.create(model=ctx.get_model_name(),
                                            messages=[{"role": "user", "content": "Build A"}])
    return answer.choices[0].message.content
"""

REPLY_FILE = """
    text = ask(ctx, "A")
    Path(ctx.get_output_file_path()).write_text(text)
    raise ValueError("the file is written: give up")
"""

STALL = """
    held = []
    for _ in range(40):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect("/wf/gateway.sock")
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\\r\\nHost: x\\r\\n")
            s.sendall(b"Content-Length: 900000\\r\\n\\r\\n")
            s.sendall(b"{" * 60000)
        except OSError:
            pass
        held.append(s)
    time.sleep(PARAMS["stall"])
    report(held=len(held))
"""


def _attacker(root: Path, name: str, body: str, **params: Any) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    text = TEMPLATE % {"params": json.dumps(params), "body": body.strip("\n"), "name": name}
    (folder / "main.py").write_text(text, encoding="utf-8")
    (folder / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n", encoding="utf-8")
    return folder


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    require_sandbox()
    with Gateway(WorldForge(), models=["mock"]) as gw:
        yield gw


def _trials(folders: list[Path], tmp: Path, wall: float = 8.0, workers: int = 1) -> SubmissionTrials:
    options = {"no_install": True, "sandbox": "bubblewrap", "submission_wall_seconds": wall}
    programs, envs = prepare([load_submission(f) for f in folders], options, tmp / "cache")
    return SubmissionTrials(programs, envs, options, workers=workers)


def _one(
    trials: SubmissionTrials, gateway: Gateway, program: str, letter: str, trial: int = 1
) -> dict[str, Any]:
    key = ItemKey("mock", program, letter, trial)
    return trials.generate(gateway, key, 7, {"target_character": letter, "trial_seed": 7}, None)


def _report(result: dict[str, Any]) -> dict[str, Any]:
    error = str(result.get("error"))
    assert "RuntimeError: REPORT " in error, error
    return dict(json.loads(error.split("RuntimeError: REPORT ", 1)[1].rsplit(" at main.py", 1)[0]))


def _honest_after(trials: SubmissionTrials, gateway: Gateway, program: str) -> float:
    """The same host answers a well-behaved trial after the attack, quickly."""
    started = time.monotonic()
    after = _one(trials, gateway, program, "B")
    assert after["error"] is None and after["reply"], after
    assert after["submission"] == {"outcome": "reply", "reply_is_model_output": True}
    return time.monotonic() - started


def test_a_trial_cannot_stop_trace_or_write_to_its_host(tmp_path: Path, gateway: Gateway) -> None:
    trials = _trials([_attacker(tmp_path, "signals", SIGNAL_HOST)], tmp_path)
    try:
        found = _report(_one(trials, gateway, "signals", "A"))
        assert _honest_after(trials, gateway, "signals") < 5.0
    finally:
        trials.close()
    assert found["ppid"] == 1  # its parent is its namespace's first process, not the host
    assert found["traced"] == [] and found["mem"] == [] and found["pipes"] == []
    assert found["sent"]  # it did try every pid it could see


def test_the_gateway_channel_cannot_be_replaced(tmp_path: Path, gateway: Gateway) -> None:
    trials = _trials([_attacker(tmp_path, "channel", CHANNEL)], tmp_path)
    try:
        found = _report(_one(trials, gateway, "channel", "A"))
        _honest_after(trials, gateway, "channel")
    finally:
        trials.close()
    assert found["listing"] == ["gateway.sock", "host", "submission"]
    assert found["rename"][0] == found["unlink"][0] == found["bind"][0] == "refused"
    assert found["others"] == []


def test_the_host_file_system_and_network_are_not_there(tmp_path: Path, gateway: Gateway) -> None:
    env_file = tmp_path / "organiser" / ".env"
    env_file.parent.mkdir()
    env_file.write_text(f"OPENAI_API_KEY={SECRET}\n", encoding="utf-8")
    env_file.chmod(0o600)
    prompt = tmp_path / "other-team" / "prompts" / "task.txt"
    prompt.parent.mkdir(parents=True)
    prompt.write_text("another team's secret prompt", encoding="utf-8")
    service = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    service.bind(str(tmp_path / "service.sock"))
    service.listen(1)
    project = Path(__file__).resolve().parents[2]
    paths = [str(env_file), str(prompt), "/etc/shadow", "/root/.ssh/id_rsa", "/var/log/dpkg.log",
             str(project / "worldforge" / "__init__.py"), str(Path.home() / ".bashrc")]  # fmt: skip
    folder = _attacker(tmp_path, "files", HOST_FILES, paths=paths, unix=str(tmp_path / "service.sock"),
                       gateway_port=gateway.port)  # fmt: skip
    trials = _trials([folder], tmp_path)
    try:
        found = _report(_one(trials, gateway, "files", "A"))
        _honest_after(trials, gateway, "files")
    finally:
        trials.close()
        service.close()
    assert found["uid"] not in (0, os.getuid())  # kernel uid, outside every namespace
    assert not {"var", "srv", "run", "home", "opt", "work", "mnt", "media"} & set(found["top"])
    assert all(outcome[0] == "refused" for outcome in found["reads"].values()), found["reads"]
    assert found["unix"][0] == found["gateway"][0] == found["outside"][0] == "refused"
    assert "OPENAI_BASE_URL" in found["environ"] and not any("SECRET" in k for k in found["environ"])


def test_a_0600_file_at_a_bound_path_is_unreadable(tmp_path: Path, gateway: Gateway) -> None:
    """The attack on the uid itself: a file the evaluator owns, mode 0600, inside the very folder
    bound into the sandbox. Root inside a user namespace would still read it; the sandbox's uid
    cannot, so already copying the folder for the trial fails on it."""
    body = '    report(read=attempt(lambda: Path("secret.txt").read_text()))'
    folder = _attacker(tmp_path, "uid", body)
    (folder / "secret.txt").write_text(SECRET, encoding="utf-8")
    trials = _trials([folder], tmp_path)
    try:
        staged = trials._pool(trials.programs["uid"], gateway.port).spec.source
        (staged / "secret.txt").chmod(0o600)
        got = _one(trials, gateway, "uid", "A")
    finally:
        trials.close()
    assert got["reply"] is None and SECRET not in json.dumps(got)
    assert "[Errno 13] Permission denied: '/wf/submission/secret.txt'" in got["error"]


def test_aggregate_limits_hold_for_the_whole_sandbox(tmp_path: Path, gateway: Gateway) -> None:
    trials = _trials([_attacker(tmp_path, "limits", LIMITS)], tmp_path, wall=20.0)
    try:
        found = _report(_one(trials, gateway, "limits", "A"))
        (pool,) = trials._pools.values()
        (host,) = pool._all
        assert host.group is not None and len(host.group.pids()) <= 4  # host, relay, bwrap, its shell
        _honest_after(trials, gateway, "limits")
    finally:
        trials.close()
    assert found["forked"] < 128  # the sandbox's task limit, not 300
    assert found["tmp"][1] == found["shm"][1] == 28  # ENOSPC: every tmpfs has a size
    assert found["tmp"][0] <= 256 << 20 and found["shm"][0] <= 64 << 20


def test_trials_leave_nothing_for_the_next(tmp_path: Path, gateway: Gateway) -> None:
    trials = _trials([_attacker(tmp_path, "state", LEAVE_STATE)], tmp_path)
    try:
        planted = _report(_one(trials, gateway, "state", "A", 1))
        found = _report(_one(trials, gateway, "state", "A", 2))
    finally:
        trials.close()
    assert planted == {"planted": [True, True]}
    assert found == {"tmp": False, "shm_file": False, "sysv": False, "mq": False, "daemon": False}


def test_the_token_budget_holds_whatever_the_program_does(tmp_path: Path, gateway: Gateway) -> None:
    trials = _trials([_attacker(tmp_path, "overspend", OVERSPEND)], tmp_path, wall=60.0)
    try:
        got = _one(trials, gateway, "overspend", "A")
        _honest_after(trials, gateway, "overspend")
    finally:
        trials.close()
    assert got["reply"] is None and got["submission"]["over_budget"] is True
    assert got["error"].startswith("submission: no output (the package caught Prompt token limit exceeded. ")


def test_a_reply_file_written_by_the_program_is_not_a_reply(tmp_path: Path, gateway: Gateway) -> None:
    trials = _trials([_attacker(tmp_path, "file", REPLY_FILE)], tmp_path)
    try:
        got = _one(trials, gateway, "file", "A")
    finally:
        trials.close()
    assert got["reply"] is None and got["submission"]["outcome"] == "no_output"
    assert got["error"] == "submission: no output (the package caught the file is written: give up)"


def test_one_team_cannot_stall_another_teams_gateway_traffic(tmp_path: Path, gateway: Gateway) -> None:
    stall = _attacker(tmp_path, "stall", STALL, stall=6)
    honest = _attacker(tmp_path, "honest", '    report(never="called")')
    trials = _trials([stall, honest], tmp_path, wall=20.0)
    try:
        _honest_after(trials, gateway, "honest")  # its host is warm before the clock starts
        attack = threading.Thread(target=lambda: _one(trials, gateway, "stall", "A"))
        attack.start()
        time.sleep(2.0)  # the attacker holds its connections now
        seconds = _honest_after(trials, gateway, "honest")
        attack.join()
    finally:
        trials.close()
    assert seconds < 2.0


def test_no_sandbox_outlives_a_killed_evaluator(tmp_path: Path) -> None:
    """SIGKILL the evaluator mid-trial: within 10 s no process of its sandbox remains, and the next
    start removes the groups and folders it left."""
    require_sandbox()
    import signal
    import subprocess
    import sys

    folder = _attacker(tmp_path, "loop", "    while True:\n        pass")
    folder.chmod(0o755)
    script = f"""
import sys, threading
from pathlib import Path
from worldforge.execution.environments import package_environment
from worldforge.execution.sandbox import HostSpec, TrialHost, TrialLimits
python = package_environment("llms4pcg").python
spec = HostSpec(python, "llms4pcg", Path({str(folder)!r}), "main.py", "Attacker",
                TrialLimits(wall_seconds=300), "bubblewrap", 9)
host = TrialHost(spec)
print(host.group.name if host.group else "", host.proc.pid, flush=True)
host.run({{"token": "t", "team": "loop", "letter": "A", "trial": 1, "model": "m"}})
"""
    evaluator = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                                 cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    assert evaluator.stdout is not None
    group_name, host_pid = evaluator.stdout.readline().split()
    time.sleep(2.0)  # the trial is spinning now
    setup = cgroups.detect()
    assert setup is not None and group_name
    procs = setup.parents["pids"] / cgroups.PARENT / group_name / "cgroup.procs"
    assert procs.read_text().split()  # the sandbox is running
    os.kill(evaluator.pid, signal.SIGKILL)
    evaluator.wait()
    deadline = time.monotonic() + 10.0
    while procs.read_text().split() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert procs.read_text().split() == []
    from worldforge.execution.sandbox import remove_stale

    assert group_name in remove_stale()
    assert not procs.parent.exists()


@pytest.mark.slow
def test_other_teams_records_are_the_same_with_the_attackers_in_the_field(tmp_path: Path) -> None:
    """The whole field through ``eval``: attackers beside an honest team change the cohort (its
    digest, weights and normalized scores), never the rest of the honest team's item records
    (replies, exchanges, stage results)."""
    require_sandbox()
    from typer.testing import CliRunner

    from worldforge.cli.app import app

    honest = Path(__file__).resolve().parents[2] / "examples" / "submissions" / "llms4pcg-zero-shot"
    attackers = [
        _attacker(tmp_path / "field", name, body, **params)
        for name, body, params in (
            ("signals", SIGNAL_HOST, {}),
            ("channel", CHANNEL, {}),
            ("state", LEAVE_STATE, {}),
            ("overspend", OVERSPEND, {}),
            ("file", REPLY_FILE, {}),
            ("stall", STALL, {"stall": 3}),
        )
    ]

    def run(workspace: Path, programs: list[Path]) -> dict[str, str]:
        args = ["eval", "--suite", "science-birds", "--provider", "mock", "--characters", "AB",
                "--trials", "2", "--sandbox", "bubblewrap", "--no-install", "--run-unqualified",
                "--run-workspace", str(workspace)]  # fmt: skip
        for program in programs:
            args += ["--program", str(program)]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        (run_dir,) = (workspace / "runs").iterdir()
        items = [json.loads(p.read_text()) for p in sorted((run_dir / "items").glob("*.json"))]
        # The cohort (which programs ran beside it) is named in each record; all else must match.
        return {i["item_id"]: digest_payload({**i["record"], "cohort_digest": None}) for i in items}

    alone = run(tmp_path / "alone", [honest])
    field = run(tmp_path / "field-ws", [honest, *attackers])
    assert len(alone) == 4 and {k: field[k] for k in alone} == alone
    assert len(field) == 4 * (1 + len(attackers))
