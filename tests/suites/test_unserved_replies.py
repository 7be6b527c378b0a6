"""Submission replies the model never served: scored 0 by default, counted, shown, and the switches
that reach the submissions (``--keep-unserved-replies``, ``--wheelhouse``, ``submissions.index_url``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.suites.test_science_birds import pixel_classifier  # noqa: F401 - fixture
from worldforge.cli.app import app
from worldforge.core.digests import digest_text
from worldforge.core.errors import WorldForgeError
from worldforge.core.seeds import trial_seed
from worldforge.providers.mock_letters import letter_reply
from worldforge.suites.science_birds.config import DEFAULT_SEED, SuiteConfig
from worldforge.suites.science_birds.unserved import UNSERVED_ERROR

ROOT = Path(__file__).resolve().parents[2]
HONEST = ROOT / "examples" / "submissions" / "llms4pcg-zero-shot"
LETTERS = ("A", "L")
TRIALS = (1, 2)
runner = CliRunner()

FORGER = """
from llms4pcg.competition import run_evaluation
from llms4pcg.models.trial_context import TrialContext
from llms4pcg.models.trial_loop import TrialLoop

REPLIES = {replies!r}


class Forger(TrialLoop):
    @staticmethod
    def run(ctx: TrialContext, target_character: str) -> str:
        return REPLIES[target_character + str(ctx.get_trial_number())]


if __name__ == "__main__":
    run_evaluation("forger", Forger)
"""


@pytest.fixture(autouse=True)
def _no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)


def _served_replies() -> dict[str, str]:
    """What the mock serves the honest team, by letter and trial: the forger returns exactly this
    text without asking the model, so its levels are the honest team's levels."""
    return {
        f"{letter}{trial}": letter_reply(letter, trial_seed(DEFAULT_SEED, "honest", letter, trial))
        for letter in LETTERS
        for trial in TRIALS
    }


def _eval(workspace: Path, programs: list[Path], *extra: str) -> Any:
    args = ["eval", "--suite", "science-birds", "--provider", "mock", "--characters", ",".join(LETTERS),
            "--trials", str(len(TRIALS)), "--workers", "2", "--no-install", "--sandbox", "process",
            "--run-workspace", str(workspace), "--format", "json"]  # fmt: skip
    for program in programs:
        args += ["--program", str(program)]
    return runner.invoke(app, [*args, *extra])


def _run_dir(workspace: Path) -> Path:
    (run,) = sorted((workspace / "runs").iterdir())
    return run


def _records(run_dir: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    bodies = [json.loads(p.read_text()) for p in (run_dir / "items").glob("*.json")]
    return {
        (b["record"]["program"], b["record"]["letter"], b["record"]["trial"]): b["record"] for b in bodies
    }


def _ranking_json(run_dir: Path) -> dict[str, Any]:
    (path,) = run_dir.rglob("ranking.json")
    return dict(json.loads(path.read_text()))


@pytest.mark.slow
def test_unserved_replies_score_zero_unless_kept(
    tmp_path: Path,
    pixel_classifier: None,  # noqa: F811
) -> None:
    replies = _served_replies()
    honest = Path(shutil.copytree(HONEST, tmp_path / "honest"))
    forger = tmp_path / "forger"
    forger.mkdir()
    (forger / "main.py").write_text(FORGER.format(replies=replies), encoding="utf-8")

    # -- by default: the forger's trials fail at generate with the reason, the evidence kept ----------
    plain = _eval(tmp_path / "ws-plain", [honest, forger])
    assert plain.exit_code == 0, plain.output
    report = json.loads(plain.stdout)
    metrics = {r["scenario"]: r["metrics"] for r in report["results"]}
    scored = {r["scenario"]: r["score"] for r in report["results"]}
    assert scored["forger"] == 0 and scored["honest"] > 0
    assert metrics["forger"]["unserved_replies"] == 4 and metrics["honest"]["unserved_replies"] == 0
    assert metrics["forger"]["failures_by_stage"] == {"generate": 4}
    run_plain = _run_dir(tmp_path / "ws-plain")
    records = _records(run_plain)
    for letter in LETTERS:
        for trial in TRIALS:
            text = replies[f"{letter}{trial}"]
            mine, theirs = records[("forger", letter, trial)], records[("honest", letter, trial)]
            assert theirs["reply"] == text and theirs["submission"]["reply_is_model_output"] is True
            assert mine["submission"] == {"outcome": "reply", "reply_is_model_output": False}
            assert (mine["status"], mine["failed_stage"], mine["error"]) == (
                "failed",
                "generate",
                UNSERVED_ERROR,
            )
            assert (mine["reply"], mine["reply_digest"]) == (text, digest_text(text))
            assert (mine["sta"], mine["sim"]) == (0.0, 0.0) and "image" not in mine
    sections = report["sections"]
    ranking = {row["program"]: row for row in sections["ranking"]["rows"]}
    assert {name: row["unserved_replies"] for name, row in ranking.items()} == {"forger": 4, "honest": 0}
    assert ranking["forger"]["total"] == 0
    listed = sections["unserved_replies"]["rows"]
    assert len(listed) == 4 and {(r["program"], r["status"]) for r in listed} == {("forger", "failed")}
    assert sections["measurement"]["unserved_replies"].startswith("scored 0")
    assert "4 unserved replies, scored 0" in report["provenance"]["notes"]
    official = _ranking_json(run_plain)
    assert official["unserved_replies"] == {"forger": 4, "honest": 0}
    assert official["keep_unserved_replies"] is False
    html = (run_plain / "reports" / "report.html").read_text(encoding="utf-8")
    assert "<strong>Unserved replies.</strong>" in html and "forger (4)" in html
    markdown = (run_plain / "reports" / "report.md").read_text(encoding="utf-8")
    assert "| unserved\\_replies |" in markdown and "Replies the model never served" in markdown

    # -- --keep-unserved-replies: scored as returned, recorded, and a different input --------------
    kept = _eval(tmp_path / "ws-kept", [honest, forger], "--keep-unserved-replies")
    assert kept.exit_code == 0, kept.output
    report_kept = json.loads(kept.stdout)
    metrics_kept = {r["scenario"]: r["metrics"] for r in report_kept["results"]}
    run_kept = _run_dir(tmp_path / "ws-kept")
    records_kept = _records(run_kept)
    for letter in LETTERS:
        for trial in TRIALS:
            mine, theirs = records_kept[("forger", letter, trial)], records_kept[("honest", letter, trial)]
            assert mine["status"] == "ok" and mine["submission"]["reply_is_model_output"] is False
            assert (mine["sta"], mine["sim"]) == (theirs["sta"], theirs["sim"]) and mine["sim"] > 0
    # the same levels as the honest team's served replies: the same scores
    assert metrics_kept["forger"]["prompt_score"] == metrics_kept["honest"]["prompt_score"] > 0
    assert metrics_kept["forger"]["unserved_replies"] == 4
    assert report_kept["sections"]["measurement"]["unserved_replies"].startswith("scored as returned")
    assert "--keep-unserved-replies" in report_kept["provenance"]["notes"]
    assert _ranking_json(run_kept)["keep_unserved_replies"] is True
    manifest_plain = json.loads((run_plain / "run_manifest.json").read_text())
    manifest_kept = json.loads((run_kept / "run_manifest.json").read_text())
    assert manifest_kept["config"]["options"]["keep_unserved_replies"] is True
    assert manifest_kept["input_digest"] != manifest_plain["input_digest"]
    assert report_kept["provenance"]["input_digest"] != report["provenance"]["input_digest"]
    html_kept = (run_kept / "reports" / "report.html").read_text(encoding="utf-8")
    assert "<strong>Unserved replies.</strong>" in html_kept and "scored as returned" in html_kept


def test_the_switch_enters_the_identity_only_when_on_and_must_be_a_boolean() -> None:
    base = SuiteConfig.from_options({"programs": ["zero-shot"], "trials": 2})
    assert "keep_unserved_replies" not in base.identity() and not base.keep_unserved_replies
    kept = SuiteConfig.from_options({"programs": ["zero-shot"], "trials": 2, "keep_unserved_replies": True})
    assert kept.identity() == {**base.identity(), "keep_unserved_replies": True}
    with pytest.raises(WorldForgeError, match="--keep-unserved-replies: expected true or false, got 'no'"):
        SuiteConfig.from_options({"keep_unserved_replies": "no"})


def test_wheelhouse_must_be_an_existing_absolute_folder(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    assert SuiteConfig.from_options({"wheelhouse": str(wheels)}).options["wheelhouse"] == str(wheels)
    with pytest.raises(WorldForgeError, match="--wheelhouse: expected an absolute path, got 'wheels'"):
        SuiteConfig.from_options({"wheelhouse": "wheels"})
    with pytest.raises(WorldForgeError, match="is not an existing folder"):
        SuiteConfig.from_options({"wheelhouse": str(tmp_path / "missing")})


def test_wheelhouse_flag_reaches_the_suite_as_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import worldforge.evaluation.runner as evaluation_runner

    args = ["eval", "--suite", "science-birds", "--program", "zero-shot", "--trials", "2"]
    missing = runner.invoke(app, [*args, "--wheelhouse", "no-such-wheels"])
    assert missing.exit_code == 2
    errors = [line for line in missing.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "--wheelhouse" in errors[0] and "no-such-wheels" in errors[0], missing.output
    empty = runner.invoke(app, [*args, "--wheelhouse", " "])
    assert empty.exit_code == 2 and "--wheelhouse: must not be empty." in empty.output

    (tmp_path / "wheels").mkdir()
    seen: dict[str, Any] = {}

    def capture(request: Any, **_: Any) -> Any:
        seen.update(request.options)
        raise WorldForgeError("captured")

    monkeypatch.setattr(evaluation_runner, "evaluate", capture)
    result = runner.invoke(app, [*args, "--wheelhouse", "wheels", "--keep-unserved-replies"])
    assert result.exit_code == 2 and "captured" in result.output
    assert seen["wheelhouse"] == str((tmp_path / "wheels").resolve())
    assert seen["keep_unserved_replies"] is True


def test_the_projects_index_url_reaches_the_suite_options(tmp_path: Path) -> None:
    (tmp_path / ".worldforge").mkdir()
    config = tmp_path / ".worldforge" / "config.yaml"
    config.write_text("submissions:\n  index_url: https://pypi.example.org/simple\n", encoding="utf-8")
    options = SuiteConfig.from_options({"programs": ["zero-shot"]}).options
    assert options["index_url"] == "https://pypi.example.org/simple"
    explicit = {"programs": ["zero-shot"], "index_url": "file:///srv/simple"}
    assert SuiteConfig.from_options(explicit).options["index_url"] == "file:///srv/simple"
    config.write_text("workers: 1\n", encoding="utf-8")
    assert "index_url" not in SuiteConfig.from_options({"programs": ["zero-shot"]}).options
