"""Shared pieces of the attestation tests: keys, a recorded run, decoded Statements, the CLI."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from worldforge.cli.app import app
from worldforge.evidence.keys import generate_keypair
from worldforge.workspace import start_run
from worldforge.workspace.layout import ATTESTATION_NAME

ZERO = "sha256:" + "0" * 64
runner = CliRunner()


def keypair(folder: Path, key_type: str = "ed25519") -> tuple[Path, Path]:
    private, public, _ = generate_keypair(folder, key_type)
    return private, public


def make_run(
    ws: Path, *, log: str = "all fine\n", reply: str = "nothing secret", failed: bool = False
) -> Path:
    """A finished evaluation run with results, items, a log and a report payload."""
    results = [
        {"provider": "mock", "scenario": "a", "passed": True, "score": 1.0},
        {"provider": "mock", "scenario": "b", "passed": not failed, "score": 0.5},
    ]
    with start_run(ws, "evaluation", ["worldforge", "eval"], {"suite": "planning"}) as run:
        run.add_input_value("suite", {"id": "planning"})
        run.record_item("mock/a", ZERO, {"score": 1.0, "reply": reply})
        run.record_item("mock/b", ZERO, {"score": 0.5, "reply": "fine"})
        run.write_artifact("logs/provider.log", log, "text/plain")
        run.write_artifact(
            "results/summary.json", json.dumps({"passed": not failed}) + "\n", "application/json"
        )
        run.complete({"results": results}, claim_boundary="contract check only")
    return Path(run.dir)


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def envelopes(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / ATTESTATION_NAME).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def statements(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(base64.b64decode(env["payload"])) for env in envelopes(folder)]


def problem_lines(out: str) -> list[str]:
    """The verification's problem lines (indented ``code: path: message``)."""
    return [line for line in out.splitlines() if line.startswith("  ")]
