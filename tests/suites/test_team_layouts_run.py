"""The published team layouts run unchanged: each trial in the sandbox, from its team folder, against the
mock model, named after its folder.

Under ``CI=true`` these tests fail instead of skipping when bubblewrap or cgroups are missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandboxing import require_sandbox
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway
from worldforge.pcg.programs.field import team_folders
from worldforge.pcg.programs.submission import load_submission
from worldforge.suites.science_birds.config import ItemKey
from worldforge.suites.science_birds.submissions import SubmissionTrials, prepare

FIELD = Path(__file__).resolve().parents[2] / "examples" / "field"


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    require_sandbox()
    with Gateway(WorldForge(), models=["mock"]) as gw:
        yield gw


def _trials(folders: list[Path], tmp: Path) -> SubmissionTrials:
    options = {"no_install": True, "sandbox": "bubblewrap", "submission_wall_seconds": 20.0}
    programs, envs = prepare([load_submission(f) for f in folders], options, tmp / "cache")
    return SubmissionTrials(programs, envs, options)


def _one(trials: SubmissionTrials, gateway: Gateway, program: str, letter: str) -> dict[str, Any]:
    key = ItemKey("mock", program, letter, 1)
    return trials.generate(gateway, key, 7, {"target_character": letter, "trial_seed": 7}, None)


def test_every_layout_of_the_field_answers_with_the_models_reply(tmp_path: Path, gateway: Gateway) -> None:
    teams, _ = team_folders(FIELD)
    trials = _trials([t.path for t in teams], tmp_path)
    try:
        assert {n: p.team_name for n, p in trials.programs.items()} == {t.name: t.name for t in teams}
        for team in teams:
            for letter in "AB":
                result = _one(trials, gateway, team.name, letter)
                assert result["error"] is None, (team.name, result["error"])
                assert result["reply"] and result["calls"] == 1
                assert result["submission"] == {"outcome": "reply", "reply_is_model_output": True}
    finally:
        trials.close()


PACKAGE_MAIN = """
import json
import os

from llms4pcg.competition import chat_with_llm
from llms4pcg.models.trial_loop import TrialLoop

from . import helper
from .common.words import LETTER_WORD
{absolute}

class Packaged(TrialLoop):
    @staticmethod
    def run(ctx, target_character):
        if target_character == "B":
            return chat_with_llm(ctx, [{{"role": "user", "content": helper.prompt(target_character)}}])[0]
        raise RuntimeError("REPORT " + json.dumps({{
            "module": __name__, "team": ctx.get_team_name(), "word": LETTER_WORD,
            "prompt": helper.prompt(target_character)[:9], "stdlib_json": json.__name__,
            "init_ran": os.environ.get("WF_INIT_RAN"),
        }}))
"""
FILES = {
    "__init__.py": "import os\n\nos.environ['WF_INIT_RAN'] = __name__\n",
    "helper.py": "from pathlib import Path\n\n\ndef prompt(letter):\n"
                 "    return Path('prompts/task.txt').read_text().replace('<OBJECT>', letter)\n",
    "common/__init__.py": "",
    "common/words.py": "LETTER_WORD = 'letter'\n",
    "prompts/task.txt": "Build <OBJECT> with drop_block.",
}  # fmt: skip


def _package_team(root: Path, name: str, absolute: str = "") -> Path:
    folder = root / name
    for rel, text in {**FILES, "main.py": PACKAGE_MAIN.format(absolute=absolute)}.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


def _report(result: dict[str, Any]) -> dict[str, Any]:
    error = str(result.get("error"))
    assert "RuntimeError: REPORT " in error, error
    return dict(json.loads(error.split("RuntimeError: REPORT ", 1)[1].rsplit(" at main.py", 1)[0]))


def test_a_top_level_entry_with_relative_imports_runs_as_the_team_folders_package(
    tmp_path: Path, gateway: Gateway
) -> None:
    """The team folder becomes a package named after it (``Alpha.main``; its absolute imports of
    itself work too), made a Python name (``Team One`` -> ``Team_One``), never shadowing a module
    (a team named ``json`` is imported as ``json_``; ``import json`` is still the standard library)."""
    folders = [
        _package_team(
            tmp_path / "field", "Alpha", absolute="from Alpha.common.words import LETTER_WORD as _"
        ),
        _package_team(tmp_path / "field", "Team One"),
        _package_team(tmp_path / "field", "json"),
    ]
    trials = _trials(folders, tmp_path)
    try:
        found = {f.name: _report(_one(trials, gateway, f.name, "A")) for f in folders}
        after = _one(trials, gateway, "Team One", "B")
    finally:
        trials.close()
    assert after["error"] is None and after["submission"]["reply_is_model_output"] is True
    common = {"word": "letter", "prompt": "Build A w", "stdlib_json": "json"}
    assert found == {
        "Alpha": {"module": "Alpha.main", "team": "Alpha", "init_ran": "Alpha", **common},
        "Team One": {"module": "Team_One.main", "team": "Team One", "init_ran": "Team_One", **common},
        "json": {"module": "json_.main", "team": "json", "init_ran": "json_", **common},
    }
