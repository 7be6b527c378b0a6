"""Submission trials in the sandbox: each hostile behaviour is a recorded per-trial failure.

One hostile ``llms4pcg`` submission picks its misbehaviour by target letter, so one warm trial host
serves every case; the run (a gateway with the mock behind it) must survive all of them, and a
well-behaved letter afterwards must still get its reply.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandboxing import require_sandbox
from worldforge.execution.environments import package_environment
from worldforge.execution.sandbox import HostSpec, TrialHost, TrialLimits
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway
from worldforge.pcg.programs.submission import load_submission
from worldforge.suites.science_birds.config import ItemKey
from worldforge.suites.science_birds.submissions import SubmissionTrials, prepare

SECRET = "sk-proj-Zq3J9x7LmP2vR8tY4wK6nB1cD5fH0gA9sE3uI7oQ"

HOSTILE = """
import ctypes, os, socket, subprocess, sys
from pathlib import Path

from llms4pcg.competition import chat_with_llm, run_evaluation
from llms4pcg.models.trial_loop import TrialLoop

import state

ORIGINAL = %(original)r


class Hostile(TrialLoop):
    @staticmethod
    def run(ctx, target_character):
        c = target_character
        if c == "A":
            while True:
                pass
        if c == "B":
            return str(len(bytearray(2 * 1024 ** 3)))
        if c == "C":
            for _ in range(100):
                sys.stdout.write("x" * (1024 * 1024))
        if c == "D":
            sys.exit(3)
        if c == "E":
            os._exit(5)
        if c == "F":
            ctypes.string_at(0)
        if c == "G":
            os.system("echo hello")
        if c == "H":
            subprocess.run(["ls", "/"], check=True)
        if c == "I":
            key = Path(os.path.expanduser("~/.ssh/id_rsa")).read_text()
            return key + Path("%(home)s/.ssh/id_rsa").read_text()
        if c == "J":
            raise RuntimeError("env: " + json_env())
        if c == "K":
            Path(ORIGINAL, "main.py").write_text("tampered")
        if c == "L":
            socket.create_connection(("10.255.255.1", 80), timeout=2)
        if c == "M":
            import not_a_module_anywhere  # noqa: F401
        if c == "N":
            raise TimeoutError("slow on purpose")
        if c == "O":
            raise ValueError("bad on purpose")
        if c == "P":
            state.counter += 1
            if Path("marker.txt").exists() or state.counter != 1:
                raise RuntimeError("saw another trial's state")
            Path("marker.txt").write_text("mine")
            Path("prompts", "task.txt").write_text("changed by a trial")
        if c == "Z":
            return "```\\ndrop_block('b11', 10)\\n```"  # never asked the model
        text = Path("prompts", "task.txt").read_text().replace("<OBJECT>", c)
        return chat_with_llm(ctx, [{"role": "user", "content": text}])[0]


def json_env():
    return repr(sorted(os.environ.items()))


if __name__ == "__main__":
    run_evaluation("hostile", Hostile, model_name="x", local_model_base_url="http://localhost:11434/v1")
"""


def _hostile(root: Path) -> Path:
    folder = root / "hostile"
    (folder / "prompts").mkdir(parents=True)
    (folder / "main.py").write_text(
        HOSTILE % {"original": str(folder), "home": os.path.expanduser("~")}, encoding="utf-8"
    )
    (folder / "state.py").write_text("counter = 0\n", encoding="utf-8")
    (folder / "prompts" / "task.txt").write_text("Build <OBJECT> with drop_block.\n", encoding="utf-8")
    (folder / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n", encoding="utf-8")
    return folder


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    with Gateway(WorldForge(), models=["mock"]) as gw:
        yield gw


def _trials(folder: Path, isolation: str, tmp: Path) -> SubmissionTrials:
    options = {"no_install": True, "sandbox": isolation, "submission_wall_seconds": 4}
    programs, envs = prepare([load_submission(folder)], options, tmp / "cache")
    return SubmissionTrials(programs, envs, options, workers=1)


def _one(trials: SubmissionTrials, gateway: Gateway, letter: str, trial: int = 1) -> dict[str, Any]:
    key = ItemKey("mock", "hostile", letter, trial)
    return trials.generate(gateway, key, 7, {"target_character": letter, "trial_seed": 7}, None)


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


ISOLATIONS = ["process", "bubblewrap"]


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_hostile_trials_are_recorded_failures_and_the_run_goes_on(
    isolation: str, tmp_path: Path, gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    if isolation == "bubblewrap":
        require_sandbox()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("WF_TEST_CREDENTIAL", SECRET)
    folder = _hostile(tmp_path)
    before = (folder / "main.py").read_bytes()
    trials = _trials(folder, isolation, tmp_path)
    try:
        assert trials.isolation == isolation
        got = {c: _one(trials, gateway, c) for c in "ABCDEFGHIJKLMNOPZ"}
        again = _one(trials, gateway, "P", 2)  # a fresh process and folder: no marker, counter 1
        staged = str(trials._staged[0])
    finally:
        trials.close()
    time.sleep(0.5)
    assert _processes_mentioning(staged) == []  # no host, relay or trial outlives the pool
    errors = {c: g["error"] for c, g in got.items() if c != "Z"}
    assert errors["A"] == "submission: wall-clock limit: killed after 4 s"
    assert errors["B"].startswith("submission raised MemoryError")
    assert errors["C"] == f"submission: output limit: the trial printed more than {8 * 1024 * 1024} bytes"
    assert errors["D"].startswith("submission raised SystemExit: 3")
    assert errors["E"] == "submission crashed: the trial process exited with status 5 without a result"
    assert errors["F"] == "submission crashed: the trial process was killed by SIGSEGV"
    assert errors["G"].startswith(
        "submission raised PermissionError: blocked by the trial sandbox: os.system"
    )
    assert errors["H"].startswith(
        "submission raised PermissionError: blocked by the trial sandbox: subprocess"
    )
    assert errors["I"].startswith(
        ("submission raised FileNotFoundError", "submission raised PermissionError")
    )
    assert errors["J"].startswith("submission raised RuntimeError: env: ")
    assert "OPENAI_API_KEY', 'not-used'" in errors["J"] and "WF_TEST_CREDENTIAL" not in errors["J"]
    assert errors["K"].startswith(  # read-only, refused, or (in the sandbox) not there at all
        ("submission raised OSError: [Errno 30]", "submission raised PermissionError",
         "submission raised FileNotFoundError")
    )  # fmt: skip
    assert "blocked by the trial sandbox: network connection to ('10.255.255.1', 80)" in errors["L"]
    assert errors["M"].startswith(
        "submission raised ModuleNotFoundError: No module named 'not_a_module_anywhere'"
    )
    assert errors["M"].endswith("at main.py:45")
    assert errors["N"] == "submission: no output (the package caught slow on purpose)"
    assert errors["O"] == "submission: no output (the package caught bad on purpose)"
    assert errors["P"] is None and got["P"]["reply"] and again["error"] is None
    assert got["P"]["submission"] == {"outcome": "reply", "reply_is_model_output": True}
    made_up = got.pop("Z")
    assert made_up["error"] is None and made_up["exchanges"] == []
    assert made_up["submission"] == {"outcome": "reply", "reply_is_model_output": False}
    for c, g in got.items():
        assert g["reply"] is None or c == "P"
        assert SECRET not in json.dumps(g)
    assert len(got["P"]["exchanges"]) == 1 and got["A"]["exchanges"] == []
    assert (folder / "main.py").read_bytes() == before  # the original is untouched
    assert (folder / "prompts" / "task.txt").read_text() == "Build <OBJECT> with drop_block.\n"


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_hosts_outlive_the_thread_that_started_them(isolation: str, tmp_path: Path, gateway: Gateway) -> None:
    """Hosts start lazily on a generation thread; the next chunk's threads must still find them."""
    if isolation == "bubblewrap":
        require_sandbox()
    trials = _trials(_hostile(tmp_path), isolation, tmp_path)
    try:
        first: list[dict[str, Any]] = []
        worker = threading.Thread(target=lambda: first.append(_one(trials, gateway, "Q")))
        worker.start()
        worker.join()
        time.sleep(0.5)  # a sandbox tied to the finished thread would be gone by now
        (pool,) = trials._pools.values()
        hosts = list(pool._all)
        assert hosts and all(host.alive() for host in hosts)
        second = _one(trials, gateway, "R")
        assert first[0]["error"] is None and second["error"] is None
        assert pool._all == hosts and pool.start_error == ""
    finally:
        trials.close()


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_host_whose_evaluator_is_gone_stops_its_running_trial(
    isolation: str, tmp_path: Path, gateway: Gateway
) -> None:
    """The evaluator died mid-trial (its end of the host's stdin closed): the host must not wait
    for the trial's wall-clock limit, and nothing of the sandbox may survive."""
    if isolation == "bubblewrap":
        require_sandbox()
    folder = _hostile(tmp_path)
    folder.chmod(0o755)
    python = package_environment("llms4pcg").python
    spec = HostSpec(python, "llms4pcg", folder, "main.py", "Hostile", TrialLimits(wall_seconds=120),
                    isolation, gateway.port)  # fmt: skip
    host = TrialHost(spec)
    try:
        answers: list[dict[str, Any]] = []
        request = {"token": "t", "team": "hostile", "letter": "A", "trial": 1, "model": "mock"}
        runner = threading.Thread(target=lambda: answers.append(host.run(request)))  # A loops forever
        runner.start()
        time.sleep(2.0)
        assert host.alive() and not answers
        started = time.monotonic()
        assert host.proc.stdin is not None
        host.proc.stdin.close()
        host.proc.wait(timeout=20)
        runner.join(timeout=20)
        assert time.monotonic() - started < 10
        assert answers == [{"outcome": "crash", "reason": "the trial host stopped answering"}]
        time.sleep(0.5)
        assert _processes_mentioning(str(folder)) == []
    finally:
        host.close()


def test_a_host_that_cannot_start_says_why(tmp_path: Path, gateway: Gateway) -> None:
    """A start failure carries the last lines the sandbox printed, not just "it exited"."""
    require_sandbox()
    from worldforge.core.errors import WorldForgeError

    folder = tmp_path / "team"
    folder.mkdir()
    folder.chmod(0o755)
    spec = HostSpec("/nonexistent/bin/python3", "llms4pcg", folder, "main.py", "X", TrialLimits(),
                    "bubblewrap", gateway.port)  # fmt: skip
    with pytest.raises(WorldForgeError) as caught:
        TrialHost(spec)
    message = str(caught.value)
    assert "the trial host did not start: it exited before it was ready (stderr: " in message
    assert "/nonexistent/bin/python3" in message and "No such file or directory" in message
