"""One name for the run workspace on every command: ``--workspace``/``-w``.

The older spellings (``--run-workspace`` on the commands that record a run, ``--workspace-dir`` on
``runs``) stay accepted but hidden, because the evaluation docs and scripts already in use type
them; naming two different folders under both spellings is a usage error, never a silent pick.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from worldforge.cli.app import app

runner = CliRunner()


def _commands() -> list[tuple[str, Any]]:
    """Every leaf command of the CLI with its full name (typer ships its own click, so the walk
    goes by what a group can do rather than by class)."""
    out: list[tuple[str, Any]] = []

    def walk(prefix: str, command: Any) -> None:
        if hasattr(command, "list_commands"):
            ctx = command.context_class(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, name
                walk(f"{prefix} {name}".strip(), sub)
        else:
            out.append((prefix, command))

    walk("", typer.main.get_command(app))
    return out


def test_every_workspace_option_is_spelled_workspace() -> None:
    seen = []
    for name, command in _commands():
        for param in command.params:
            if param.param_type_name != "option":
                continue
            spellings = set(param.opts) | set(param.secondary_opts)
            if not any("workspace" in s for s in spellings):
                continue
            if param.hidden:
                assert spellings <= {"--run-workspace", "--workspace-dir"}, (name, spellings)
            else:
                assert spellings == {"--workspace", "-w"}, (name, spellings)
                seen.append(name)
    # the commands that record or read runs, all of them
    assert {"eval", "benchmark", "pcg stage", "pcg extract", "runs list", "runs bundle"} <= set(seen)
    assert len(seen) >= 14


def test_old_spellings_still_work_and_stay_out_of_help(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    new = runner.invoke(app, ["eval", "--suite", "planning", "--provider", "mock", "--workspace", str(ws)])
    old = runner.invoke(
        app, ["eval", "--suite", "planning", "--provider", "mock", "--run-workspace", str(ws)]
    )
    assert new.exit_code == 0 and old.exit_code == 0, (new.output, old.output)
    assert len(list((ws / "runs").iterdir())) == 2
    listed = [runner.invoke(app, ["runs", "list", flag, str(ws), "--format", "json"]) for flag in
              ("--workspace", "-w", "--workspace-dir")]  # fmt: skip
    assert all(r.exit_code == 0 for r in listed) and len({r.stdout for r in listed}) == 1
    helps = [
        runner.invoke(app, [*cmd, "--help"]).stdout for cmd in (["eval"], ["runs", "list"], ["pcg", "stage"])
    ]
    assert all(
        "--workspace" in h and "--run-workspace" not in h and "--workspace-dir" not in h for h in helps
    )


def test_two_different_folders_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["runs", "list", "-w", str(tmp_path / "a"), "--workspace-dir", str(tmp_path / "b")]
    )
    assert result.exit_code == 2
    assert "--workspace and --workspace-dir name different folders" in result.stderr
    same = runner.invoke(app, ["runs", "list", "-w", str(tmp_path), "--workspace-dir", str(tmp_path)])
    assert same.exit_code == 0
    result = runner.invoke(
        app,
        ["eval", "--suite", "planning", "--provider", "mock", "--workspace", "a", "--run-workspace", "b"],
    )
    assert result.exit_code == 2 and "--run-workspace name different folders" in result.stderr
    assert not Path("a").exists() and not Path("b").exists()
