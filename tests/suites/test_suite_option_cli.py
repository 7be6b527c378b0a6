"""``worldforge eval --suite-option KEY=VALUE``: the suite's named flags are aliases of the same keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.suites.test_science_birds import pixel_classifier  # noqa: F401 - fixture
from worldforge.cli.app import app

runner = CliRunner()


def _manifest(workspace: Path) -> dict[str, Any]:
    (run_dir,) = list((workspace / "runs").iterdir())
    manifest: dict[str, Any] = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    return manifest


def _eval(workspace: Path, *options: str) -> dict[str, Any]:
    args = ["eval", "--suite", "science-birds", "--provider", "mock", *options]
    result = runner.invoke(app, [*args, "--run-workspace", str(workspace), "--format", "json"])
    assert result.exit_code == 0, result.output
    return _manifest(workspace)


def test_flags_and_suite_options_give_the_same_run(
    tmp_path: Path,
    pixel_classifier: None,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wheels").mkdir()
    flags = _eval(
        tmp_path / "flags",
        *("--characters", "A,C", "--trials", "2", "--workers", "1", "--seed", "7"),
        *("--program", "zero-shot", "--wheelhouse", "wheels", "--no-install"),
    )
    keyed = _eval(
        tmp_path / "keyed",
        *("--suite-option", "characters=A,C", "--suite-option", "trials=2", "--suite-option", "workers=1"),
        *("--suite-option", "seed=7", "--suite-option", "programs=zero-shot"),
        *("--suite-option", "wheelhouse=wheels", "--suite-option", "no_install=true"),
    )
    assert keyed["config"] == flags["config"]
    assert keyed["config"]["options"]["no_install"] is True and "wheelhouse" in keyed["config"]["options"]
    assert (keyed["input_digest"], keyed["result_digest"]) == (flags["input_digest"], flags["result_digest"])
    mixed = _eval(tmp_path / "mixed", "--characters", "A,C", "--suite-option", "trials=2", "--seed", "7",
                  "--workers", "1", "--program", "zero-shot", "--suite-option", "wheelhouse=wheels",
                  "--no-install")  # fmt: skip
    assert mixed["result_digest"] == flags["result_digest"]


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (("--suite-option", "trails=2"), "error: --suite-option trails: not an option of 'science-birds'"),
        (("--suite-option", "trials=two"), "error: --suite-option trials: expected an integer, got 'two'."),
        (
            ("--trials", "2", "--suite-option", "trials=3"),
            "error: --suite-option trials: also given by its named flag; give it once.",
        ),
    ],
)
def test_a_bad_suite_option_is_one_line_naming_the_key(
    tmp_path: Path, extra: tuple[str, ...], line: str
) -> None:
    ws = tmp_path / "ws"
    result = runner.invoke(
        app, ["eval", "--suite", "science-birds", "--provider", "mock", "--run-workspace", str(ws), *extra]
    )
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), lines
    assert not (ws / "runs").exists()  # refused before a run was created
