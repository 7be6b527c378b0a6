"""Team folders laid out as the published programs are: discovery over the whole folder, the field of
teams in a folder or a zip, and zips that try to write where they should not."""

from __future__ import annotations

import os
import stat
import warnings
import zipfile
from pathlib import Path

import pytest

from worldforge.core.errors import WorldForgeError
from worldforge.execution.files import TreeLimits
from worldforge.execution.trial_setup import entry_import_name, package_name
from worldforge.pcg.programs.field import team_folders
from worldforge.pcg.programs.prompt import resolve_programs
from worldforge.pcg.programs.submission import SubmissionProgram, load_submission, looks_like_submission

FIELD = Path(__file__).resolve().parents[2] / "examples" / "field"
TEAMS = ["hard-coded-team", "package-team", "prompts-top-team", "relative-imports-team", "top_level_team"]
LOOP = """
from llms4pcg.competition import chat_with_llm, run_evaluation
from llms4pcg.models.trial_loop import TrialLoop


class {name}(TrialLoop):
    @staticmethod
    def run(ctx, target_character):
        return chat_with_llm(ctx, [{{"role": "user", "content": target_character}}])[0]
"""


def _write(folder: Path, files: dict[str, str | bytes]) -> Path:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return folder


def _refused(call: object, *args: object, **kwargs: object) -> str:
    with pytest.raises(WorldForgeError) as info:
        call(*args, **kwargs)  # type: ignore[operator]
    message = str(info.value)
    assert "\n" not in message
    return message


# -- discovery of the published layouts -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("team", "package", "module", "dotted", "cls", "declared"),
    [
        ("top_level_team", "llms4pcg", "main.py", "main", "TopLevelLoop", "top_level_team"),
        ("package-team", "chatgpt4pcg", "tot/main.py", "tot.main", "StepByStep", "package-team"),
        ("prompts-top-team", "llms4pcg", "solver/loop.py", "solver.loop", "ZeroShotFromTop", None),
        ("relative-imports-team", "llms4pcg", "agent/loop.py", "agent.loop", "Builder", "something-else"),
        ("hard-coded-team", "chatgpt4pcg", "main.py", "main", "Recipes", "hard-coded-team"),
    ],
)
def test_each_layout_is_found_and_named_after_its_folder(
    team: str, package: str, module: str, dotted: str, cls: str, declared: str | None
) -> None:
    folder = FIELD / team
    assert looks_like_submission(folder)
    (program,) = resolve_programs([str(folder)])
    assert isinstance(program, SubmissionProgram)
    assert (program.package, program.module, program.entry_module, program.class_name) == (
        package, module, dotted, cls,
    )  # fmt: skip
    assert (program.name, program.team_name, program.declared_team) == (team, team, declared)
    assert program.ignored == () and program.error is None


def test_the_trial_imports_each_entry_by_its_dotted_path_or_as_the_team_package() -> None:
    plans = {team: entry_import_name(str(FIELD / team), load_submission(FIELD / team).module, team, set())
             for team in TEAMS}  # fmt: skip
    assert plans == {
        "hard-coded-team": ("main", None),
        "package-team": ("tot.main", None),
        "prompts-top-team": ("solver.loop", None),
        "relative-imports-team": ("agent.loop", None),  # its relative imports stay inside agent/
        "top_level_team": ("top_level_team.main", "top_level_team"),  # `from .common` in main.py
    }


def test_the_team_package_is_named_after_the_folder_without_shadowing_a_module() -> None:
    assert package_name("ChuangYe", set()) == "ChuangYe"
    assert package_name("top-level-team", set()) == "top_level_team"
    assert package_name("1st place", set()) == "_1st_place"
    assert package_name("class", set()) == "class_"
    assert package_name("json", set()) == "json_"  # a standard-library module
    assert package_name("mine", {"mine", "mine_"}) == "mine__"  # already imported in the trial


def test_the_run_evaluation_class_wins_and_its_literal_is_recorded(tmp_path: Path) -> None:
    team = _write(tmp_path / "Team", {
        "run.py": 'from tot.loop import Deep\nfrom llms4pcg.competition import run_evaluation\n\n'
                  'if __name__ == "__main__":\n    run_evaluation("other-name", Deep, num_trials=3)\n',
        "tot/__init__.py": "",
        "tot/loop.py": LOOP.format(name="Deep"),
        "top.py": LOOP.format(name="Shallow"),
    })  # fmt: skip
    program = load_submission(team)
    assert (program.module, program.class_name, program.team_name, program.declared_team) == (
        "tot/loop.py", "Deep", "Team", "other-name",
    )  # fmt: skip


def test_without_run_evaluation_the_shallowest_program_is_run(tmp_path: Path) -> None:
    team = _write(tmp_path / "t", {
        "main.py": "from common.base import Base\n\n\nclass Mine(Base):\n    pass\n",
        "common/base.py": LOOP.format(name="Base"),
        "vendor/lib/examples/loop.py": LOOP.format(name="Example"),
    })  # fmt: skip
    assert (load_submission(team).module, load_submission(team).class_name) == ("main.py", "Mine")
    same_file = _write(
        tmp_path / "s", {"main.py": LOOP.format(name="Base") + "\n\nclass Mine(Base):\n    pass\n"}
    )
    assert load_submission(same_file).class_name == "Mine"  # a team's own base class is not the program


def test_several_candidates_are_refused_with_the_list(tmp_path: Path) -> None:
    team = _write(tmp_path / "two", {"a/x.py": LOOP.format(name="X"), "b/y.py": LOOP.format(name="Y"),
                                     "c/deeper/z.py": LOOP.format(name="Z")})  # fmt: skip
    message = _refused(load_submission, team)
    assert message == (
        f"{team}: 2 TrialLoop subclasses (X (a/x.py), Y (b/y.py)) and no run_evaluation(...) under "
        "__main__ choosing one."
    )
    calls = "\nif __name__ == '__main__':\n    run_evaluation('t', {})\n"
    _write(
        team,
        {
            "a/x.py": LOOP.format(name="X") + calls.format("X"),
            "b/y.py": LOOP.format(name="Y") + calls.format("Y"),
        },
    )
    assert "run_evaluation(...) under __main__ names 2 classes (X (a/x.py), Y (b/y.py))" in _refused(
        load_submission, team
    )


# -- files that are not the team's code -------------------------------------------------------------------

APPLEDOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        \xff\xfe\x00\x01"


def test_macos_litter_is_skipped_and_listed(tmp_path: Path) -> None:
    team = _write(tmp_path / "mac", {
        "main.py": LOOP.format(name="Loop"), "prompts/p.txt": "Build <OBJECT>.",
        "._main.py": APPLEDOUBLE, "prompts/._p.txt": APPLEDOUBLE,
        "__MACOSX/._main.py": APPLEDOUBLE, "__MACOSX/prompts/._p.txt": APPLEDOUBLE,
    })  # fmt: skip
    assert looks_like_submission(team)
    program = load_submission(team)
    assert [f.path for f in program.files] == ["main.py", "prompts/p.txt"]
    assert program.ignored == (
        "__MACOSX/: macOS archive metadata (2 files)",
        "._main.py: AppleDouble metadata",
        "prompts/._p.txt: AppleDouble metadata",
    )
    plain = {"main.py": LOOP.format(name="Loop"), "prompts/p.txt": "Build <OBJECT>."}
    clean = load_submission(_write(tmp_path / "clean" / "mac", plain))
    assert program.digest == clean.digest


def test_python_files_that_do_not_parse_are_listed_not_fatal(tmp_path: Path) -> None:
    team = _write(tmp_path / "t", {
        "main.py": LOOP.format(name="Loop"),
        "vendor/legacy.py": 'print "python 2"\n',
        "data/weights.py": b"\x89PNG\r\n\x1a\n\xff\xfe\x00binary",
    })  # fmt: skip
    program = load_submission(team)
    assert program.class_name == "Loop"
    assert program.ignored == (
        "data/weights.py: not UTF-8 Python source",
        "vendor/legacy.py:1: syntax error: Missing parentheses in call to 'print'. Did you mean print(...)?",
    )
    assert "data/weights.py" in [f.path for f in program.files]  # still the team's file, copied


def test_no_trial_loop_anywhere_is_one_line_naming_what_did_not_parse(tmp_path: Path) -> None:
    blobs = {f"{n}.py": bytes([0xFF, 0xFE, i]) for i, n in enumerate("abcd")}
    team = _write(tmp_path / "blobs", {**blobs, "prompts/p.txt": "x", "._e.py": APPLEDOUBLE})
    assert looks_like_submission(tmp_path / "blobs") is False  # prompts/ and no program: a prompt folder
    message = _refused(load_submission, team)
    assert message == (
        f"{team}: no TrialLoop program in this folder (4 .py files do not parse: a.py: not UTF-8 Python "
        "source; b.py: not UTF-8 Python source; c.py: not UTF-8 Python source; ...)."
    )
    assert _refused(
        load_submission, _write(tmp_path / "empty", {"README.md": "x", "util.py": "X = 1\n"})
    ) == (f"{tmp_path / 'empty'}: no TrialLoop program in this folder.")


def test_an_unparseable_file_that_may_be_the_entry_is_the_error(tmp_path: Path) -> None:
    broken = "from llms4pcg.models.trial_loop import TrialLoop\n\nclass Mine(TrialLoop):\n    def run(:\n"
    team = _write(tmp_path / "t", {"main.py": broken, "vendor/pkg/loop.py": LOOP.format(name="Vendored")})
    assert _refused(load_submission, team).startswith(f"{team}: main.py:4: syntax error: ")
    named = _write(tmp_path / "n", {
        "run.py": "from tot.loop import Mine\nfrom llms4pcg.competition import run_evaluation\n\n"
                  "if __name__ == '__main__':\n    run_evaluation('n', Mine)\n",
        "tot/loop.py": broken, "top.py": LOOP.format(name="Other"),
    })  # fmt: skip
    message = _refused(load_submission, named)
    assert message.startswith(f"{named}: tot/loop.py:4: syntax error: ") and "(it defines Mine" in message


def test_prompts_at_the_top_and_code_in_a_package_is_a_submission(tmp_path: Path) -> None:
    helpers = _write(
        tmp_path / "prompt-prog", {"prompts/1.txt": "Build <OBJECT>.", "tools/stats.py": "X = 1\n"}
    )
    assert not looks_like_submission(helpers)
    _write(helpers, {"tools/old.py": "print 'py2'\n"})  # a broken helper script is still not a program
    assert not looks_like_submission(helpers)
    _write(helpers, {"solver/run.py": "import llms4pcg\n"})
    assert looks_like_submission(helpers)
    code_only = _write(tmp_path / "ChuangYe", {"README": "x", "tot/main.py": LOOP.format(name="T")})
    assert looks_like_submission(code_only) and load_submission(code_only).module == "tot/main.py"


# -- the field ---------------------------------------------------------------------------------------------


def _zip(path: Path, root: Path, prefix: str = "", extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(root.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.write(file, prefix + file.relative_to(root).as_posix())
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return path


def test_team_folders_of_a_folder() -> None:
    teams, ignored = team_folders(FIELD)
    assert [(t.name, t.path) for t in teams] == [(n, FIELD / n) for n in TEAMS]
    assert ignored == ["README.md: a file, not a team folder"]


def test_team_folders_of_a_hidden_and_linked_entries(tmp_path: Path) -> None:
    _write(tmp_path / "f", {"b/main.py": "x", "a/main.py": "x", ".git/HEAD": "x", "__MACOSX/._a": "x"})
    (tmp_path / "f" / "alias").symlink_to(tmp_path / "f" / "a")
    teams, ignored = team_folders(tmp_path / "f")
    assert [t.name for t in teams] == ["a", "b"]
    assert ignored == [
        ".git: hidden",
        "__MACOSX: macOS archive metadata",
        "alias: a symbolic link (not followed)",
    ]


def test_team_folders_of_a_zip_unwrapped_and_loaded_like_the_folder(tmp_path: Path) -> None:
    litter = {"__MACOSX/submissions/._package-team": APPLEDOUBLE,
              "submissions/package-team/tot/._main.py": APPLEDOUBLE}  # fmt: skip
    archive = _zip(tmp_path / "field.zip", FIELD, "submissions/", litter)
    out = tmp_path / "out"
    teams, ignored = team_folders(archive, extract_to=out)
    assert [t.name for t in teams] == TEAMS
    assert all(t.path == out / "submissions" / t.name for t in teams)
    assert ignored == [
        "__MACOSX/: macOS archive metadata (1 entry)",
        "submissions/package-team/tot/._main.py: AppleDouble metadata",
        "README.md: a file, not a team folder",
    ]
    for team in teams:
        assert load_submission(team.path).digest == load_submission(FIELD / team.name).digest
    for path in out.rglob("*"):
        expected = 0o755 if path.is_dir() else 0o644
        assert stat.S_IMODE(path.stat().st_mode) == expected, path
    again, _ = team_folders(archive, extract_to=out)  # the same zip: listed again, not re-extracted
    assert again == teams
    other = _zip(tmp_path / "other.zip", FIELD / "package-team", "package-team/")
    assert "it is not empty and holds no extraction of this zip" in _refused(
        team_folders, other, extract_to=out
    )
    assert _refused(team_folders, archive) == f"{archive}: a .zip of teams needs a folder to extract it into."


def _snapshot(root: Path, skip: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if skip not in p.parents and p != skip)


def _hostile(tmp_path: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    path = tmp_path / "hostile.zip"
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        warnings.simplefilter("ignore")  # a duplicate name is the point of one of them
        for info, data in entries:
            archive.writestr(info, data)
    return path


def _typed(name: str, kind: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (kind | 0o777) << 16
    return info


SMALL = TreeLimits(max_files=5, max_file_bytes=1000, max_total_bytes=1500, max_depth=8)


@pytest.mark.parametrize(
    ("entries", "refusal"),
    [
        ([("team/main.py", b"x"), ("/etc/evil.py", b"x")], "/etc/evil.py is not a plain relative path"),
        ([("team/../../evil.py", b"x")], "team/../../evil.py is not a plain relative path"),
        ([("team\\..\\..\\evil.py", b"x")], "team/../../evil.py is not a plain relative path"),
        ([(_typed("team/key", stat.S_IFLNK), b"/proc/self/environ")], "team/key is a symbolic link"),
        ([(_typed("team/pipe", stat.S_IFIFO), b"")], "team/pipe is a FIFO (named pipe)"),
        ([(_typed("team/dev", stat.S_IFCHR), b"")], "team/dev is a character device"),
        ([("team/a.py", b"1"), ("team/a.py", b"2")], "team/a.py appears twice in the archive"),
        ([("team/a", b"1"), ("team/a/b.py", b"2")], "team/a/b.py is inside team/a, which is a file"),
        ([(f"team/{i}.py", b"x") for i in range(6)], "more than 5 files and folders"),
        ([("team/a.py", b"x" * 1001)], "team/a.py is 1001 bytes; the limit per file is 1000"),
        (
            [("team/a.py", b"x" * 800), ("team/b.py", b"x" * 800)],
            "larger than 1500 bytes in all (reached at team/b.py)",
        ),
    ],
)
def test_a_hostile_zip_is_refused_before_anything_is_written(
    tmp_path: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]], refusal: str
) -> None:
    archive = _hostile(tmp_path, entries)
    out = tmp_path / "out"
    before = _snapshot(tmp_path, out)
    message = _refused(team_folders, archive, extract_to=out, limits=SMALL)
    assert message == f"{archive}: refused: {refusal}."
    assert _snapshot(tmp_path, out) == before and not (tmp_path / "evil.py").exists()
    assert not out.exists() or os.listdir(out) == []


def test_a_member_that_inflates_past_its_declared_size_is_cut_and_refused(tmp_path: Path) -> None:
    archive = _hostile(tmp_path, [("team/main.py", b"x"), ("team/bomb.bin", b"\0" * (4 << 20))])
    data = bytearray(archive.read_bytes())  # declare 1,000 bytes for the 4 MiB member
    local = data.find(b"PK\x03\x04", data.find(b"PK\x03\x04") + 4)
    central = data.find(b"PK\x01\x02", data.find(b"PK\x01\x02") + 4)
    data[local + 22 : local + 26] = data[central + 24 : central + 28] = (1000).to_bytes(4, "little")
    archive.write_bytes(bytes(data))
    assert zipfile.ZipFile(archive).getinfo("team/bomb.bin").file_size == 1000
    out = tmp_path / "out"
    before = _snapshot(tmp_path, out)
    message = _refused(team_folders, archive, extract_to=out)
    assert message.startswith(
        f"{archive}: refused: team/bomb.bin does not inflate to its declared 1000 bytes"
    )
    assert "Bad CRC-32" in message
    assert os.listdir(out) == [] and _snapshot(tmp_path, out) == before  # what was written is removed
