"""Submissions run in the environment of their package version, never in WorldForge's own.

``llms4pcg`` 2.0.1 pins ``openai<2``; the evaluator keeps its own client. These tests build the real
package environments from the configured index into the machine's shared cache (the first run on a
machine pays for the build, every later run and test reuses it) and run a trial inside one.
"""

from __future__ import annotations

import json
import site
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandboxing import require_sandbox
from worldforge.execution import environments
from worldforge.execution.environments import (
    SUPPORTED_PACKAGES,
    default_cache_root,
    package_environment,
    submission_environment,
)
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway
from worldforge.pcg.programs.submission import load_submission
from worldforge.suites.science_birds.config import ItemKey
from worldforge.suites.science_birds.submissions import SubmissionTrials, prepare

PROBE = """
import json, sys
from importlib import metadata, util

from llms4pcg.competition import chat_with_llm, run_evaluation
from llms4pcg.models.trial_loop import TrialLoop


def seen():
    return {
        "openai": metadata.version("openai"),
        "path": sys.path,
        "worldforge": util.find_spec("worldforge") is not None,
        "typer": util.find_spec("typer") is not None,
    }


class Probe(TrialLoop):
    @staticmethod
    def run(ctx, target_character):
        if target_character == "A":
            raise RuntimeError("REPORT " + json.dumps(seen()))
        return chat_with_llm(ctx, [{"role": "user", "content": "Build " + target_character}])[0]


if __name__ == "__main__":
    run_evaluation("probe", Probe)
"""


@pytest.fixture(autouse=True)
def sandboxed() -> None:
    """Environments are built by a confined pip: skipped without bubblewrap, a failure on CI."""
    require_sandbox()


def _forbid_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a process was started: {args!r}")

    monkeypatch.setattr(environments.subprocess, "run", refuse)


def _probe(root: Path, requirements: str | None = None) -> Path:
    folder = root / "probe"
    folder.mkdir(parents=True)
    (folder / "main.py").write_text(PROBE, encoding="utf-8")
    if requirements is not None:
        (folder / "requirements.txt").write_text(requirements, encoding="utf-8")
    return folder


@pytest.mark.parametrize("package", sorted(SUPPORTED_PACKAGES))
def test_each_package_version_has_an_environment_of_its_own(package: str) -> None:
    env = package_environment(package)
    assert env.kind == "package" and Path(env.python).parent.parent.parent == default_cache_root()
    assert env.packages[package] == SUPPORTED_PACKAGES[package]
    assert {"python-dotenv", "numpy", "openai"} <= set(env.packages)
    if package == "llms4pcg":
        assert env.packages["openai"].split(".")[0] == "1"  # its own pin, openai<2, resolved by pip


def test_the_environment_is_reused_from_the_shared_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    env = package_environment("llms4pcg")
    _forbid_subprocess(monkeypatch)  # no pip, no sandbox: the cached folder answers
    assert package_environment("llms4pcg") == env
    assert (
        json.loads((Path(env.python).parent.parent / "environment.json").read_text())["packages"]
        == env.packages
    )


def test_a_team_requirement_is_installed_together_with_the_package() -> None:
    env = submission_environment("tabulate==0.10.0\n", package="llms4pcg", install=True, where="team-x")
    assert env.kind == "venv" and env.packages["tabulate"] == "0.10.0"
    assert env.packages["llms4pcg"] == "2.0.1" and env.packages["openai"].startswith("1.")
    assert env != package_environment("llms4pcg")


def test_no_install_ignores_the_teams_file_but_uses_the_package_environment(tmp_path: Path) -> None:
    program = load_submission(_probe(tmp_path, "no-such-distribution-wf==9.9\n"))
    (ready,), envs = prepare([program], {"no_install": True})
    assert ready.error is None and envs["probe"] == package_environment("llms4pcg")
    assert ready.environment == envs["probe"].identity() and ready.digest != program.digest


def test_the_evaluator_does_not_have_the_competition_packages() -> None:
    """Asked of a fresh interpreter of the evaluator's environment (a test may have put a package
    environment on this process's path to call the real package in-process)."""
    import subprocess
    import sys

    probe = "import importlib.util as u; print([n for n in ('llms4pcg', 'chatgpt4pcg') if u.find_spec(n)])"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    with Gateway(WorldForge(), models=["mock"]) as gw:
        yield gw


def test_a_trial_runs_in_the_package_environment(tmp_path: Path, gateway: Gateway) -> None:
    options = {"no_install": True, "sandbox": "bubblewrap", "submission_wall_seconds": 30}
    programs, envs = prepare([load_submission(_probe(tmp_path))], options)
    trials = SubmissionTrials(programs, envs, options)
    try:
        report = trials.generate(gateway, ItemKey("mock", "probe", "A", 1), 7,
                                 {"target_character": "A", "trial_seed": 7}, None)  # fmt: skip
        reply = trials.generate(gateway, ItemKey("mock", "probe", "B", 1), 7,
                                {"target_character": "B", "trial_seed": 7}, None)  # fmt: skip
    finally:
        trials.close()
    error = str(report["error"])
    assert "RuntimeError: REPORT " in error, error
    found = json.loads(error.split("RuntimeError: REPORT ", 1)[1].rsplit(" at main.py", 1)[0])
    assert found["openai"] == envs["probe"].packages["openai"] and found["openai"].startswith("1.")
    assert not found["worldforge"] and not found["typer"]  # nothing of the evaluator's environment
    assert not set(found["path"]) & set(site.getsitepackages())
    assert reply["error"] is None and reply["reply"], reply
    assert reply["submission"] == {"outcome": "reply", "reply_is_model_output": True}
