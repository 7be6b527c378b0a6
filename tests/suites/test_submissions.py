"""Submissions through ``--program``: discovery, scoring beside prompt folders, replay, diff, bundles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.providers.test_real_model import MODEL as REAL_MODEL
from tests.providers.test_real_model import LlamaServer, llama_server  # noqa: F401 - fixture
from tests.suites.test_science_birds import pixel_classifier  # noqa: F401 - fixture
from worldforge.cli.app import app
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.programs.prompt import builtin_program, resolve_programs
from worldforge.pcg.programs.submission import SubmissionProgram, load_submission, looks_like_submission
from worldforge.suites.science_birds.submissions import prepare

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "submissions"
SECRET = "sk-proj-Zq3J9x7LmP2vR8tY4wK6nB1cD5fH0gA9sE3uI7oQ"
runner = CliRunner()

LOOP = """
from chatgpt4pcg.competition import chat_with_chatgpt, run_evaluation
from chatgpt4pcg.models.trial_loop import TrialLoop


class {name}(TrialLoop):
    @staticmethod
    def run(ctx, target_character):
        return chat_with_chatgpt(ctx, [{{"role": "user", "content": target_character}}])[0]
"""


def _write(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


# -- discovery (static: nothing is imported) ------------------------------------------------------------


def test_examples_are_found_with_their_package_entry_and_team() -> None:
    """The team is named after its folder; the run_evaluation literal is only recorded."""
    found = {p.name: p for p in resolve_programs([str(EXAMPLES / n) for n in sorted(
        p.name for p in EXAMPLES.iterdir())])}  # fmt: skip
    assert {n: (p.package, p.module, p.class_name, p.declared_team) for n, p in found.items()} == {
        "chatgpt4pcg-zero-shot": ("chatgpt4pcg", "main.py", "ZeroShotPrompting", "zero_shot_2024"),
        "llms4pcg-self-critique": ("llms4pcg", "main.py", "SelfCritique", "self_critique"),
        "llms4pcg-zero-shot": ("llms4pcg", "main.py", "ZeroShot", "zero_shot_2025"),
    }
    assert all(p.team_name == n for n, p in found.items())
    assert all(isinstance(p, SubmissionProgram) and p.prompt_length() is None for p in found.values())


def test_run_evaluation_under_main_picks_among_several_loops(tmp_path: Path) -> None:
    text = LOOP.format(name="First") + LOOP.format(name="Second").split("\n\n\n", 1)[1]
    _write(
        tmp_path / "two",
        {"main.py": text + '\nif __name__ == "__main__":\n    run_evaluation("t", Second)\n'},
    )
    program = load_submission(tmp_path / "two")
    assert (program.class_name, program.team_name, program.declared_team) == ("Second", "two", "t")
    _write(tmp_path / "ambiguous", {"main.py": text})
    with pytest.raises(WorldForgeError, match=r"2 TrialLoop subclasses \(First \(main.py\), Second"):
        load_submission(tmp_path / "ambiguous")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"main.py": "import openai\nclient = openai.OpenAI()\n"},
            "no TrialLoop program in this folder (it calls openai directly",
        ),
        (
            {"main.py": "def run(:\n"},
            "no TrialLoop program in this folder (1 .py file does not parse: main.py:1: syntax error",
        ),
        ({"main.py": "class X(TrialLoop):\n    pass\n"}, "imports neither chatgpt4pcg nor llms4pcg"),
        (
            {"a.py": LOOP.format(name="A"), "b.py": "import llms4pcg\n"},
            "imports both chatgpt4pcg and llms4pcg",
        ),
        ({"helper.py": "x = 1\n"}, "no TrialLoop program in this folder."),
    ],
)
def test_invalid_submissions_are_one_line_errors(tmp_path: Path, files: dict[str, str], message: str) -> None:
    folder = _write(tmp_path / "bad", files)
    assert looks_like_submission(folder)
    with pytest.raises(WorldForgeError, match=message.replace("(", r"\(")):
        resolve_programs([str(folder)])
    # among several programs it is kept as a failed program instead
    bad, good = resolve_programs([str(folder), "zero-shot"])
    assert isinstance(bad, SubmissionProgram) and message.split(" (")[0] in str(bad.error)
    assert good.name == "zero-shot"


def test_prompt_folder_with_helper_scripts_stays_a_prompt_program(tmp_path: Path) -> None:
    folder = _write(tmp_path / "prompty", {"prompts/0.txt": "Draw <OBJECT>.", "tools.py": "print(1)\n"})
    assert not looks_like_submission(folder)
    (program,) = resolve_programs([str(folder)])
    assert not isinstance(program, SubmissionProgram) and len(program.turns) == 1
    _write(folder, {"main.py": LOOP.format(name="Now")})  # a TrialLoop beside prompts/: a submission
    assert isinstance(resolve_programs([str(folder)])[0], SubmissionProgram)


def test_identity_covers_files_but_not_caches_or_the_env_file(tmp_path: Path) -> None:
    folder = _write(tmp_path / "s", {"main.py": LOOP.format(name="S"), "prompts/p.txt": "x"})
    first = load_submission(folder)
    _write(folder, {".env": f"OPENAI_API_KEY={SECRET}\n", "__pycache__/main.cpython-311.pyc": "junk"})
    assert load_submission(folder).digest == first.digest
    assert [f.path for f in first.files] == ["main.py", "prompts/p.txt"]
    _write(folder, {"prompts/p.txt": "y"})
    assert load_submission(folder).digest != first.digest
    single = load_submission(folder / "main.py")
    assert (single.name, [f.path for f in single.files]) == ("main", ["main.py"])


def test_an_unsatisfiable_requirement_is_a_per_program_error(tmp_path: Path) -> None:
    requirements = "no-such-distribution-wf==9.9  # offline on purpose: an empty wheelhouse\n"
    files = {"main.py": LOOP.format(name="Needs"), "requirements.txt": requirements}
    folder = _write(tmp_path / "needs", files)
    program = load_submission(folder)
    assert program.requirements == requirements
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    options = {"wheelhouse": str(wheelhouse)}
    message = "requirements.txt: no-such-distribution-wf==9.9 has no wheel for this Python"
    with pytest.raises(WorldForgeError, match=message):
        prepare([program], options, tmp_path / "cache")
    (bad, good), environments = prepare([program, builtin_program("zero-shot")], options, tmp_path / "cache")
    assert isinstance(bad, SubmissionProgram) and "no-such-distribution-wf" in str(bad.error)
    assert good.name == "zero-shot" and environments == {}
    assert not list((tmp_path / "cache" / "submission-envs").glob("*/environment.json"))  # nothing half-built
    # --no-install: the package's own environment, whatever the file says
    (ready,), environments = prepare([program], {"no_install": True}, tmp_path / "cache")
    assert isinstance(ready, SubmissionProgram) and ready.error is None
    assert environments["needs"].kind == "package" and ready.environment == environments["needs"].identity()


def test_rerun_commands_keep_the_submission_switches() -> None:
    from worldforge.evaluation.gallery import options_to_cli_args
    from worldforge.suites.science_birds.suite import cli_options

    options = {"programs": ["sub"], "no_install": True, "sandbox": "process", "progress": False}
    expected = ["--program", "sub", "--no-install", "--sandbox", "process"]
    assert options_to_cli_args(cli_options(options)) == expected
    assert options_to_cli_args(cli_options({**options, "no_install": False})) == [
        "--program", "sub", "--sandbox", "process"]  # fmt: skip


# -- through the command line, with the mock behind the gateway ----------------------------------------


def _eval(workspace: Path, *programs: str, extra: tuple[str, ...] = ()) -> Any:
    args = ["eval", "--suite", "science-birds", "--provider", "mock", "--characters", "A,L", "--trials", "2",
            "--workers", "2", "--no-install", "--run-workspace", str(workspace),
            "--format", "json"]  # fmt: skip
    for program in programs:
        args += ["--program", program]
    return runner.invoke(app, [*args, *extra])


def _runs(workspace: Path) -> list[Path]:
    return sorted((workspace / "runs").iterdir())


def _records(run_dir: Path) -> dict[str, dict[str, Any]]:
    bodies = [json.loads(p.read_text()) for p in sorted((run_dir / "items").glob("*.json"))]
    return {b["item_id"]: b["record"] for b in bodies}


def _manifest(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "run_manifest.json").read_text()))


def test_an_invalid_single_submission_exits_2_before_any_generation(tmp_path: Path) -> None:
    folder = _write(tmp_path / "broken", {"main.py": "import openai\n"})
    result = _eval(tmp_path / "ws", str(folder))
    assert result.exit_code == 2
    assert "no TrialLoop program in this folder (it calls openai directly" in result.output
    assert not list((tmp_path / "ws").glob("runs/*/items/*.json"))


@pytest.mark.slow
def test_submission_scored_beside_a_prompt_folder_replayed_diffed_and_bundled(
    tmp_path: Path,
    pixel_classifier: None,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    sub = Path(shutil.copytree(EXAMPLES / "llms4pcg-self-critique", tmp_path / "critique"))
    (sub / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n", encoding="utf-8")
    broken = _write(tmp_path / "broken", {"main.py": "import openai\n"})
    ws = tmp_path / "ws"
    first = _eval(ws, str(sub), "zero-shot", str(broken))
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    scored = {r["scenario"]: r for r in report["results"]}
    assert set(scored) == {"critique", "zero-shot"}  # a submission that does not qualify does not run
    assert scored["critique"]["passed"] and scored["critique"]["score"] > 0
    table = {row["team"]: row for row in report["sections"]["qualification"]["rows"]}
    assert table["critique"]["qualified"] and table["critique"]["ran"]
    assert not table["broken"]["qualified"] and not table["broken"]["ran"]
    assert "no TrialLoop program in this folder (it calls openai directly" in table["broken"]["reasons"]
    assert "isolated by" in report["provenance"]["notes"]
    (run_a,) = _runs(ws)
    records = _records(run_a)
    mine = [r for r in records.values() if r["program"] == "critique"]
    assert len(mine) == 4 and all(
        r["status"] == "ok" and r["submission"] == {"outcome": "reply", "reply_is_model_output": True}
        for r in mine
    )
    for record in mine:  # draft (n=2), critique, revision: three exchanges, the last reply is scored
        draft, critique, revise = record["exchanges"]
        assert draft["request"]["n"] == 2 and len(draft["response"]["choices"]) == 2
        assert len(revise["request"]["messages"]) == 5
        assert revise["response"]["choices"][0] == record["reply"]
        assert record["usage"]["prompt_tokens"] == sum(
            e["response"]["usage"]["prompt_tokens"] for e in record["exchanges"])  # fmt: skip
    assert not [r for r in records.values() if r["program"] == "broken"]
    names = {e["name"] for e in _manifest(run_a)["inputs"]}
    assert {"program:critique/main.py", "program:critique/prompts/1_critique.txt"} <= names
    assert not any(".env" in n for n in names)

    # --replay: the submission runs again, every answer comes from run_a's exchanges
    replayed = _eval(ws, str(sub), "zero-shot", str(broken), extra=("--replay", run_a.name))
    assert replayed.exit_code == 0, replayed.output
    run_b = _runs(ws)[-1]
    assert _manifest(run_b)["result_digest"] == _manifest(run_a)["result_digest"]

    # a changed prompt file of the submission is named as the cause
    (sub / "prompts" / "1_critique.txt").write_text("Criticise your <OBJECT> harder.\n", encoding="utf-8")
    changed = _eval(ws, str(sub), "zero-shot", str(broken))
    assert changed.exit_code == 0, changed.output
    run_c = _runs(ws)[-1]
    diff = runner.invoke(app, ["runs", "diff", run_a.name, run_c.name, "--workspace-dir", str(ws)])
    assert "inputs.program:critique/prompts/1_critique.txt" in diff.output, diff.output

    bundle = runner.invoke(app, ["runs", "bundle", run_a.name, "--workspace-dir", str(ws),
                                 "--output", str(tmp_path / "bundle")])  # fmt: skip
    assert bundle.exit_code == 0, bundle.output
    texts = {
        p: p.read_bytes().decode("utf-8", "replace") for p in (tmp_path / "bundle").rglob("*") if p.is_file()
    }
    assert any('"exchanges"' in t and "critique" in t for t in texts.values())
    assert not any(SECRET in t for t in texts.values())


def _real_model_args(
    server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, program: Path
) -> list[str]:
    """``eval`` of ``program`` on the local llama.cpp server (A x 2 trials) into ``tmp_path/ws``,
    with no model key, URL or project config from the machine running the tests."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "WORLDFORGE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    # Headroom over the default 120 s for a reply slowed by the other test worker; the package's
    # own limit (500 s a trial for llms4pcg, 120 s for chatgpt4pcg) still bounds the trial.
    (tmp_path / ".worldforge").mkdir()
    (tmp_path / ".worldforge" / "config.yaml").write_text("openai:\n  timeout_s: 450\n")
    return ["eval", "--suite", "science-birds", "--provider", f"openai:{REAL_MODEL}",
            "--openai-base-url", server.base_url, "--program", str(program),
            "--characters", "A", "--trials", "2", "--workers", "1", "--no-install",
            "--run-workspace", str(tmp_path / "ws"), "--format", "json"]  # fmt: skip


@pytest.mark.slow
def test_submission_against_a_real_model_server_and_its_replay(
    llama_server: LlamaServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pixel_classifier: None,  # noqa: F811
) -> None:
    """llms4pcg's own OpenAI client, in the sandbox, reaches llama.cpp only through the gateway."""
    ws = tmp_path / "ws"
    args = _real_model_args(llama_server, tmp_path, monkeypatch, EXAMPLES / "llms4pcg-zero-shot")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (run_dir,) = _runs(ws)
    records = _records(run_dir)
    assert len(records) == 2
    for record in records.values():
        (exchange,) = record["exchanges"]
        assert exchange["request"]["model"] == f"openai:{REAL_MODEL}"
        assert exchange["request"]["client_params"] == {"temperature": 1}  # what the package sent
        assert exchange.get("response"), f"no reply from the model server: {exchange.get('error')}"
        assert record["usage"]["served_models"] == [REAL_MODEL] and record["usage"]["prompt_tokens"] > 100
        assert record["submission"]["outcome"] == "reply" or record["failed_stage"] != "generate"
    llama_server.stop()
    replayed = runner.invoke(app, [*args, "--replay", run_dir.name])
    assert replayed.exit_code == 0, replayed.output
    assert _manifest(_runs(ws)[-1])["result_digest"] == _manifest(run_dir)["result_digest"]


@pytest.mark.slow
def test_a_published_layout_team_against_a_real_model_server(
    llama_server: LlamaServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pixel_classifier: None,  # noqa: F811
) -> None:
    """A team folder as published (layout 2: the TrialLoop module and its prompts in a package
    sub-folder, files opened relative to the team folder), unchanged, against llama.cpp."""
    ws = tmp_path / "ws"
    args = _real_model_args(llama_server, tmp_path, monkeypatch, ROOT / "examples" / "field" / "package-team")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (run_dir,) = _runs(ws)
    records = _records(run_dir)
    assert len(records) == 2 and {r["program"] for r in records.values()} == {"package-team"}
    for record in records.values():
        assert record["exchanges"], record.get("error")
        assert all(e.get("response") or e.get("error") for e in record["exchanges"])
        assert "FileNotFoundError" not in str(record.get("error"))  # its files, from its folder
        assert record["usage"]["served_models"] == [REAL_MODEL]


RESUME_SCRIPT = """
import json, sys
from tests.suites.test_science_birds import PixelClassifier
from worldforge.evaluation.suite import result_payload
from worldforge.forge import WorldForge
from worldforge.suites.science_birds import suite as science_birds
from worldforge.suites.science_birds.config import Classifier
from worldforge.suites.science_birds.run import RunState
from worldforge.workspace import start_run

fake = PixelClassifier()
Classifier.identity = lambda self: fake.identity()
Classifier.classify = lambda self, pngs, embedding=True: fake.classify(pngs, embedding)
workspace, program, resume = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else None)
options = {"programs": [program], "characters": "A-C", "trials": 3, "progress": False, "workers": 1,
           "chunk_size": 1, "no_install": True}
state = RunState()
with start_run(workspace, kind="evaluation", argv=["worldforge", "eval"], config=options,
               resume_run_id=resume) as run:
    forge = WorldForge(event_sinks=[run.event_sink])
    report = science_birds.make_suite(options, state=state).run_report(["mock"], forge=forge, run=run)
    digest = run.complete(result_payload(report), claim_boundary=report.claim_boundary)
print(json.dumps({"run_id": run.run_id, "result_digest": digest, "reused": state.reused,
                  "processed": state.processed}))
"""


@pytest.mark.slow
def test_a_killed_submission_run_resumes_to_the_uninterrupted_digest(tmp_path: Path) -> None:
    import os
    import signal
    import time

    from tests.suites.test_science_birds_resume import _finish, _python

    script = tmp_path / "run_suite.py"
    script.write_text(RESUME_SCRIPT, encoding="utf-8")
    sub = Path(shutil.copytree(EXAMPLES / "llms4pcg-zero-shot", tmp_path / "slow-sub"))
    main = sub / "main.py"  # a slow trial (the sandbox passes no environment variable to tell it)
    slow = "        __import__('time').sleep(0.4)\n        prompt = Path("
    main.write_text(main.read_text().replace("        prompt = Path(", slow), encoding="utf-8")
    reference = _finish(_python(script, str(tmp_path / "ws-ref"), str(sub)))
    assert reference["processed"] == 9 and reference["reused"] == 0

    killed_ws = tmp_path / "ws-kill"
    proc = _python(script, str(killed_ws), str(sub))
    deadline = time.monotonic() + 120
    items: list[Path] = []
    while time.monotonic() < deadline and len(items) < 3:
        items = list(killed_ws.glob("runs/*/items/*.json"))
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert 3 <= len(items) < 9, "the run was not killed mid-way"
    (run_dir,) = list((killed_ws / "runs").iterdir())
    resumed = _finish(_python(script, str(killed_ws), str(sub), run_dir.name))
    assert resumed["run_id"] == run_dir.name and resumed["reused"] >= 3
    assert resumed["reused"] + resumed["processed"] == 9
    assert resumed["result_digest"] == reference["result_digest"]
