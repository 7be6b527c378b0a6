"""Qualification: which teams may be run, by the competition's rules (static checks only)."""

from __future__ import annotations

import json
import os
import random
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from worldforge.cli.app import app
from worldforge.core.errors import WorldForgeError
from worldforge.execution.files import MAX_FILE_BYTES
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.programs.qualify import (
    HARDCODED_LETTERS,
    Qualification,
    is_team_folder,
    qualify_field,
    qualify_source,
    qualify_team,
    tied_letters,
)
from worldforge.presets import PROGRAMS_DIR

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "submissions"
FENCE = "```"
runner = CliRunner()

MAIN = '''"""A team's program: one prompt file, one turn."""

from pathlib import Path

from llms4pcg.competition import chat_with_llm, run_evaluation
from llms4pcg.models.trial_context import TrialContext
from llms4pcg.models.trial_loop import TrialLoop


class Team(TrialLoop):
    @staticmethod
    def run(ctx: TrialContext, target_character: str) -> str:
        prompt = Path("prompts/p.txt").read_text(encoding="utf-8").replace("<OBJECT>", target_character)
        return chat_with_llm(ctx, [{"role": "user", "content": prompt}])[0]


if __name__ == "__main__":
    run_evaluation("team", Team, num_trials=10)
'''

TASK = (
    'Build the uppercase character "<OBJECT>" from drop_block(block_type: str, x_position: int) calls.\n'
    "- W = 20 slots, H = 16 layers; blocks b11, b31 and b13.\n"
    "For example drop_block('b11', 3) drops a square on slot 3.\n"
)


def recipe(rng: random.Random, calls: int | None = None) -> str:
    count = calls if calls is not None else rng.randint(3, 12)
    quote = rng.choice(["'", '"'])
    return "\n".join(
        f"drop_block({quote}{rng.choice(['b11', 'b13', 'b31'])}{quote}, {rng.randint(1, 18)})"
        for _ in range(count)
    )


LABELS = (
    'Input: "{L}"\nOutput:\n' + FENCE,
    "Letter {L}:\n" + FENCE,
    'For the character "{L}", drop:\n' + FENCE + "python",
    "{L}:\n" + FENCE,
    "# {L}\n",
    "<{L}>\n",
    "### Shape of {L}\nHere is one way to build it.\n\n" + FENCE,
    "An {L}-shaped structure:\n" + FENCE,
)


def labelled(letters: str, rng: random.Random) -> str:
    """A prompt with one recipe per letter, each labelled in some style."""
    parts = [TASK, "Examples:\n"]
    for letter in letters:
        label = rng.choice(LABELS).replace("{L}", letter)
        closing = FENCE if label.endswith((FENCE, "python")) else ""
        parts.append(f"{label}\n{recipe(rng)}\n{closing}\n")
    parts.append('Now build "<OBJECT>".\n')
    return "\n".join(parts)


def team(root: Path, name: str, files: dict[str, str], main: str | None = MAIN) -> Path:
    folder = root / name
    for rel, text in (({"main.py": main} if main is not None else {}) | files).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def prompt_team(root: Path, name: str, prompt: str, **extra: str) -> Path:
    return team(root, name, {"prompts/p.txt": prompt, **extra})


def with_import(line: str) -> str:
    return MAIN.replace("from pathlib import Path\n", f"from pathlib import Path\n{line}\n", 1)


# --- the honest programs --------------------------------------------------------------------------------


def test_every_shipped_program_qualifies() -> None:
    shipped = sorted(p for p in EXAMPLES.iterdir() if p.is_dir())
    assert len(shipped) >= 3
    for folder in shipped:
        q = qualify_team(folder)
        assert q.qualified and q.reasons == (), q
        assert q.package in ("chatgpt4pcg", "llms4pcg") and q.entry and q.entry.startswith("main.py:")
    field = REPO / "examples" / "field"  # the team layouts: all qualify but the hard-coded one
    for folder in sorted(p for p in field.iterdir() if p.is_dir()) if field.is_dir() else []:
        q = qualify_team(folder)
        assert q.qualified is (folder.name != "hard-coded-team"), q
        assert q.qualified or "hard-coded per-letter answers" in q.reasons[0], q
    prompts = sorted(PROGRAMS_DIR.glob("*/prompts/*.txt"))
    assert len(prompts) >= 3
    for prompt in prompts:  # prompt programs (2023 form): no per-letter answers either
        assert tied_letters(prompt.read_text(encoding="utf-8")) == set(), prompt


def test_a_few_shot_team_with_two_letters_qualifies_with_a_note(tmp_path: Path) -> None:
    rng = random.Random(2)
    prompt = (
        f'{TASK}\n6. Examples\n6.1. Input: "G"\nOutput:\n{FENCE}\n{recipe(rng, 17)}\n{FENCE}\n\n'
        f'6.2. Input: "S"\nOutput:\n{FENCE}\n{recipe(rng, 5)}\n{FENCE}\n---\nInput: "<OBJECT>"\nOutput:'
    )
    q = qualify_team(prompt_team(tmp_path, "few", prompt))
    assert q.qualified, q
    assert q.package == "llms4pcg" and q.entry == "main.py:Team"
    assert any("2 target letters (G, S) in prompts/p.txt" in note for note in q.notes), q.notes


def test_the_organisers_few_shot_shape_three_letters_and_a_layered_example_qualify(tmp_path: Path) -> None:
    rng = random.Random(3)
    few = "".join(
        f'6.{i}. Input: "{letter}"\nOutput:\n{FENCE}\n{recipe(rng)}\n{FENCE}\n\n'
        for i, letter in enumerate("GQS", 1)
    )
    layered = (
        f"Example\nCharacter <OBJECT>:\n{FENCE}\n# Base layer\n{recipe(rng, 5)}\n{FENCE}\n\n"
        f"{FENCE}\n# Top layer\n{recipe(rng, 3)}\n{FENCE}\n"
    )
    assert tied_letters(few) == {"G", "Q", "S"}
    assert tied_letters(layered) == set()
    assert qualify_team(prompt_team(tmp_path, "t", TASK + few + layered)).qualified


def test_what_ties_a_recipe_and_what_does_not() -> None:
    rng = random.Random(4)

    def r(calls: int = 4) -> str:
        return recipe(rng, calls)

    assert tied_letters(f"Q: build the letter T\nA:\n{FENCE}\n{r()}\n{FENCE}") == {"T"}  # keyword wins
    assert tied_letters(f'RECIPES = {{\n    "K": """\n{r()}\n"""}}') == {"K"}
    assert tied_letters(f"<Z>\n{r()}\nLetter Y\n{r()}") == {"Z", "Y"}
    for honest in (
        f"Examples for the letter A or the letter B:\n{r()}",  # two letters on the label line
        f'if c == "A" or c == "B":\n{r()}',
        f"Letters: A\n{r()}",  # "letters" ties nothing
        f"A tall tower:\n{r()}",  # an article, not a label
        f"- W = 20 slots\n- H = 16 layers\n{r()}",  # definitions, not labels
        "Letter A:\n" + "\n" * 7 + r(),  # too far above
        f"Letter A:\n{r(2)}",  # too short to be a recipe
        f"Character <OBJECT>:\n{r()}",
    ):
        assert tied_letters(honest) == set(), honest


@pytest.mark.parametrize("count", [26, 5, 4])
def test_hard_coded_recipes_disqualify_from_five_letters(tmp_path: Path, count: int) -> None:
    letters = "".join(LETTERS[:count])
    q = qualify_team(prompt_team(tmp_path, f"hard{count}", labelled(letters, random.Random(count))))
    assert q.qualified is (count < HARDCODED_LETTERS), q
    text = " ".join(q.reasons if count >= HARDCODED_LETTERS else q.notes)
    assert f"tied to {count} target letters ({', '.join(letters)}) in prompts/p.txt" in text


def test_recipes_keyed_by_letters_in_code_are_seen(tmp_path: Path) -> None:
    rng = random.Random(5)
    filler = "\n".join(f'    prompt += "Keep the structure stable, rule {i}.\\n"' for i in range(8))
    branches = "\n".join(
        f'{"if" if i == 0 else "elif"} target_character == "{letter}":\n{filler}\n'
        + "\n".join(f'    prompt += "{line}\\n"' for line in recipe(rng, 4).replace('"', "'").splitlines())
        for i, letter in enumerate("ABCDE")
    )
    tuples = (
        "RECIPES = {\n"
        + "".join(f'    "{letter}": [("b31", 10), ("b13", 9), ("b11", 11)],\n' for letter in "VWXYZ")
        + "}\n"
    )
    match = "match c:\n" + "".join(
        f'    case "{letter}":\n        p = """\n{recipe(rng, 3)}\n"""\n' for letter in "KLMNO"
    )
    for name, code in (("branches", f'prompt = ""\n{branches}'), ("tuples", tuples), ("match", match)):
        q = qualify_team(team(tmp_path, name, {"recipes.py": code}))
        assert not q.qualified and "recipes.py" in q.reasons[-1], (name, q)
    honest = 'if target_character == "I":\n    prompt += "I is one tall column."\nHINTS = {"A": "two legs"}\n'
    assert qualify_team(team(tmp_path, "honest", {"hints.py": honest})).qualified


def test_a_dict_on_one_line_as_json_writes_it(tmp_path: Path) -> None:
    rng = random.Random(6)
    data = json.dumps({letter: recipe(rng) for letter in "ABCDEF"})
    q = qualify_team(team(tmp_path, "json", {"answers.json": data}))
    assert not q.qualified and "6 target letters (A, B, C, D, E, F) in answers.json" in q.reasons[0]


# --- the model only through the chat function ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("import requests", "main.py:4: imports requests, a network client"),
        ("from openai import OpenAI", "main.py:4: imports openai, a network client"),
        ("import urllib.request", "main.py:4: imports urllib.request"),
        ("from langchain_openai import ChatOpenAI", "main.py:4: imports langchain_openai"),
        ('import importlib\nx = importlib.import_module("openai")', "main.py:5: imports openai"),
        ('sock = __import__("socket")', "main.py:4: imports socket"),
        ("import subprocess", "main.py:4: imports subprocess; submissions may not start processes"),
        ("import os\nos.system('curl example.com')", "main.py:5: uses os.system"),
        ("from llms4pcg.competition import OpenAI", "main.py:4: imports OpenAI from llms4pcg.competition"),
    ],
)
def test_reaching_past_the_chat_function_disqualifies(tmp_path: Path, line: str, expected: str) -> None:
    q = qualify_team(team(tmp_path, "t", {"prompts/p.txt": TASK}, main=with_import(line)))
    assert not q.qualified
    assert any(r.startswith(expected) for r in q.reasons), q.reasons
    assert any("chat_with_llm" in r or "processes" in r for r in q.reasons)


def test_openai_without_a_trial_loop_names_both_problems(tmp_path: Path) -> None:
    code = "import openai\nprint(openai.OpenAI().models.list())\n"
    q = qualify_team(team(tmp_path, "direct", {}, main=code))
    assert not q.qualified and q.package is None and q.entry is None
    assert "calls openai directly" in q.reasons[0]
    assert q.reasons[1].startswith("main.py:1: imports openai")


def test_a_computed_import_name_is_not_seen(tmp_path: Path) -> None:
    """Static checks are evidence: the sandbox and the gateway stay the enforcement."""
    line = 'import importlib\nx = importlib.import_module("op" + "enai")'
    assert qualify_team(team(tmp_path, "t", {"prompts/p.txt": TASK}, main=with_import(line))).qualified


@pytest.mark.parametrize("vendored", ["openai/__init__.py", "llms4pcg/competition.py", "lib/httpx.py"])
def test_a_vendored_package_disqualifies(tmp_path: Path, vendored: str) -> None:
    q = qualify_team(team(tmp_path, "v", {"prompts/p.txt": TASK, vendored: "x = 1\n"}))
    assert not q.qualified
    assert any(r.startswith(f"{vendored}: ships its own") for r in q.reasons), q.reasons


# --- requirements and package versions -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirements", "expected"),
    [
        ("numpy\n--index-url https://example.com/simple\n", "requirements.txt line 2: '--index-url"),
        ("llms4pcg==1.0\n", "requirements.txt line 1: llms4pcg==1.0 excludes llms4pcg 2.0.1"),
        (
            "# pinned\nchatgpt4pcg<1.2\n",
            "requirements.txt line 2: chatgpt4pcg<1.2 excludes chatgpt4pcg 1.2.2",
        ),
        ("pkg @ https://example.com/pkg.whl\n", "requirements.txt line 1: 'pkg @ https"),
    ],
)
def test_requirements_must_install_the_supported_versions(
    tmp_path: Path, requirements: str, expected: str
) -> None:
    q = qualify_team(team(tmp_path, "r", {"prompts/p.txt": TASK, "requirements.txt": requirements}))
    assert not q.qualified and len(q.reasons) == 1 and q.reasons[0].startswith(expected), q.reasons


def test_requirements_that_admit_the_supported_versions_qualify(tmp_path: Path) -> None:
    text = "llms4pcg>=2.0,<3\nchatgpt4pcg==1.2.2\npython-dotenv\nnumpy ; python_version < '3'\n"
    assert qualify_team(team(tmp_path, "r", {"prompts/p.txt": TASK, "requirements.txt": text})).qualified


def test_both_packages_or_no_program_is_the_loaders_error(tmp_path: Path) -> None:
    both = with_import("import chatgpt4pcg")
    q = qualify_team(team(tmp_path, "both", {"prompts/p.txt": TASK}, main=both))
    assert not q.qualified and "imports both chatgpt4pcg and llms4pcg" in q.reasons[0]
    q = qualify_team(team(tmp_path, "notes", {"README.md": "our ideas"}, main=None))
    assert not q.qualified and len(q.reasons) == 1 and "TrialLoop" in q.reasons[0], q.reasons
    assert str(tmp_path) not in q.reasons[0]  # the folder's own path is left out


def test_the_walkers_refusals_and_caps_disqualify(tmp_path: Path) -> None:
    folder = prompt_team(tmp_path, "linked", TASK)
    os.symlink("/etc/hostname", folder / "prompts" / "secret.txt")
    q = qualify_team(folder)
    assert not q.qualified and q.reasons == (
        "refused: prompts/secret.txt is a symbolic link (to /etc/hostname).",
    )
    big = prompt_team(tmp_path, "big", TASK)
    with open(big / "weights.bin", "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: the cap is checked on the listed size
    q = qualify_team(big)
    assert not q.qualified and q.reasons == (
        f"refused: weights.bin is {MAX_FILE_BYTES + 1} bytes; the limit per file is {MAX_FILE_BYTES}.",
    )


def test_ignored_files_are_notes_not_reasons(tmp_path: Path) -> None:
    folder = prompt_team(tmp_path, "t", TASK, **{".env": "OPENAI_API_KEY=x\n", "logs/run.log": "..."})
    q = qualify_team(folder)
    assert q.qualified and any("never read nor copied): .env, logs" in n for n in q.notes), q.notes


def test_to_dict_has_the_documented_keys() -> None:
    q = Qualification("t", False, ("why",), ("note",), "llms4pcg", "main.py:T")
    assert q.to_dict() == {
        "team": "t", "qualified": False, "reasons": ["why"], "notes": ["note"],
        "package": "llms4pcg", "entry": "main.py:T",
    }  # fmt: skip


# --- a field of teams, the command ---------------------------------------------------------------------


def build_field(root: Path) -> Path:
    rng = random.Random(9)
    prompt_team(root, "few_shot", f'{TASK}Input: "G"\n{FENCE}\n{recipe(rng)}\n{FENCE}\n')
    prompt_team(root, "hard_coded", labelled("".join(LETTERS), rng))
    team(root, "requests", {"prompts/p.txt": TASK}, main=with_import("import requests"))
    team(root, "vendored", {"prompts/p.txt": TASK, "llms4pcg/__init__.py": ""})
    team(root, "index", {"prompts/p.txt": TASK, "requirements.txt": "--index-url https://example.com\n"})
    team(root, "notes", {"README.md": "no program"}, main=None)
    return root


EXPECTED = {
    "few_shot": True, "hard_coded": False, "index": False,
    "notes": False, "requests": False, "vendored": False,
}  # fmt: skip


def test_qualify_field_over_a_folder_and_its_zip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = build_field(tmp_path / "field")
    assert not is_team_folder(root) and is_team_folder(root / "few_shot")
    results = qualify_field(root)
    assert {q.team: q.qualified for q in results} == EXPECTED
    archive = tmp_path / "field.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(root).as_posix())
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    zipped = qualify_field(archive)
    assert [q.to_dict() for q in zipped] == [q.to_dict() for q in results]
    assert list(scratch.iterdir()) == []  # the extraction folder is gone
    result = runner.invoke(app, ["pcg", "qualify", str(archive), "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == [q.to_dict() for q in results]
    assert list(scratch.iterdir()) == []
    extracted = tmp_path / "out"
    qualify_field(archive, extract_to=extracted)
    assert (extracted / "few_shot" / "main.py").is_file()


def test_the_command_prints_json_and_a_table(tmp_path: Path) -> None:
    root = build_field(tmp_path / "field")
    result = runner.invoke(app, ["pcg", "qualify", str(root), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [row["team"] for row in rows] == sorted(EXPECTED)
    for row in rows:
        assert set(row) == {"team", "qualified", "reasons", "notes", "package", "entry"}
        assert row["qualified"] is EXPECTED[row["team"]]
        assert (row["reasons"] == []) is row["qualified"]
    by_team = {row["team"]: row for row in rows}
    assert by_team["requests"]["reasons"][0].startswith("main.py:4: imports requests")
    assert "26 target letters" in by_team["hard_coded"]["reasons"][0]
    assert "1 of 6 teams qualified" in result.stderr
    table = runner.invoke(app, ["pcg", "qualify", str(root)])
    assert table.exit_code == 0
    for name in EXPECTED:
        assert name in table.stdout
    assert "imports requests" in table.stdout and "--index-url" in table.stdout
    gate = runner.invoke(app, ["pcg", "qualify", str(root), "--fail-on-unqualified"])
    assert gate.exit_code == 1 and "5 of 6 teams are not qualified" in gate.stderr


def test_the_command_on_one_team_and_on_nothing(tmp_path: Path) -> None:
    result = runner.invoke(app, ["pcg", "qualify", str(EXAMPLES / "llms4pcg-zero-shot"), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"team": "llms4pcg-zero-shot", "qualified": True, "reasons": [], "notes": [],
         "package": "llms4pcg", "entry": "main.py:ZeroShot"}
    ]  # fmt: skip
    gate = runner.invoke(
        app, ["pcg", "qualify", str(EXAMPLES / "llms4pcg-zero-shot"), "--fail-on-unqualified"]
    )
    assert gate.exit_code == 0
    missing = runner.invoke(app, ["pcg", "qualify", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not found" in missing.stderr
    bad = runner.invoke(app, ["pcg", "qualify", str(tmp_path), "--format", "yaml"])
    assert bad.exit_code == 2
    with pytest.raises(WorldForgeError, match="not found"):
        qualify_source(tmp_path / "nope")


# --- the detector's properties -------------------------------------------------------------------------

HONEST = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",))
    | st.sampled_from(list(LETTERS) + [":", "\n"]),
    max_size=400,
)


@given(st.lists(HONEST | st.sampled_from([TASK, *LABELS]).map(lambda s: s.replace("{L}", "A")), max_size=30))
@settings(max_examples=150, deadline=None)
def test_text_without_drop_block_never_ties_a_letter(pieces: list[str]) -> None:
    text = "\n".join(pieces).replace("drop_block", "drop block").replace("ab_drop", "ab drop")
    assert tied_letters(text) == set()


@given(st.integers(1, 26), st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_n_labelled_recipes_tie_n_letters(n: int, rng: random.Random) -> None:
    letters = "".join(rng.sample(LETTERS, n))
    found = tied_letters(labelled(letters, rng))
    assert found == set(letters)
    assert (len(found) >= HARDCODED_LETTERS) is (n >= HARDCODED_LETTERS)
