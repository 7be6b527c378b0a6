"""Submission and prompt folders read the way a hostile team cannot steer: links, FIFOs and devices in a
team's folder are refused with one line naming them, never followed, opened or digested."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.execution.test_files import deadline, record_opens
from worldforge.core.digests import digest_bytes
from worldforge.core.errors import WorldForgeError
from worldforge.execution.files import copy_tree
from worldforge.pcg.programs.prompt import load_program, resolve_programs
from worldforge.pcg.programs.submission import (
    SubmissionFile,
    SubmissionProgram,
    list_files,
    load_submission,
    looks_like_submission,
)

SECRET = "wf-test-secret-9d3b0c6e1a"
LOOP = """
from chatgpt4pcg.competition import chat_with_chatgpt, run_evaluation
from chatgpt4pcg.models.trial_loop import TrialLoop


class Loop(TrialLoop):
    @staticmethod
    def run(ctx, target_character):
        return chat_with_chatgpt(ctx, [{"role": "user", "content": target_character}])[0]
"""


def _write(folder: Path, entries: Mapping[str, str | bytes]) -> Path:
    for rel, data in entries.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return folder


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path opened from now on; the evaluator's environment is set to hold a secret."""
    monkeypatch.setenv("WF_TEST_API_KEY", SECRET)
    return record_opens(monkeypatch)


def _refused(call: Any) -> str:
    with pytest.raises(WorldForgeError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and SECRET not in message
    return message


# -- submissions ------------------------------------------------------------------------------------------


def test_a_link_to_the_environment_refuses_the_submission_unread(tmp_path: Path, opened: list[str]) -> None:
    team = _write(tmp_path / "team-x", {"main.py": LOOP, "prompts/a.txt": "<OBJECT>"})
    (team / "prompts" / "key.txt").symlink_to("/proc/self/environ")
    opened.clear()
    assert looks_like_submission(team)
    message = _refused(lambda: load_submission(team))
    assert message == f"{team}: refused: prompts/key.txt is a symbolic link (to /proc/self/environ)."
    assert _refused(lambda: resolve_programs([str(team)])) == message
    (broken,) = [p for p in resolve_programs([str(team), "zero-shot"]) if p.name == "team-x"]
    assert isinstance(broken, SubmissionProgram)
    assert broken.error == message and broken.files == ()  # recorded as failed, nothing digested
    assert not [p for p in opened if "/proc/" in p or p.endswith("key.txt")]
    assert _refused(lambda: list_files(team)) == message


def test_a_link_to_dev_zero_and_a_fifo_fail_fast(tmp_path: Path) -> None:
    team = _write(tmp_path / "team", {"main.py": LOOP})
    (team / "weights.bin").symlink_to("/dev/zero")
    with deadline(5):
        assert _refused(lambda: load_submission(team)).endswith(
            "weights.bin is a symbolic link (to /dev/zero)."
        )
    os.unlink(team / "weights.bin")
    os.mkfifo(team / "helper.py")
    with deadline(5):
        assert looks_like_submission(team)
        assert (
            _refused(lambda: load_submission(team)) == f"{team}: refused: helper.py is a FIFO (named pipe)."
        )


def test_links_to_files_inside_the_folder_and_linked_folders_are_refused(tmp_path: Path) -> None:
    team = _write(tmp_path / "team", {"main.py": LOOP, "lib/util.py": "X = 1\n"})
    (team / "util.py").symlink_to("lib/util.py")
    assert (
        _refused(lambda: load_submission(team))
        == f"{team}: refused: util.py is a symbolic link (to lib/util.py)."
    )
    os.unlink(team / "util.py")
    (team / "home").symlink_to(Path.home())
    assert (
        _refused(lambda: load_submission(team))
        == f"{team}: refused: home is a symbolic link (to {Path.home()})."
    )


def test_a_linked_requirements_file_is_refused(tmp_path: Path, opened: list[str]) -> None:
    team = _write(tmp_path / "team", {"main.py": LOOP})
    (team / "requirements.txt").symlink_to("/proc/self/environ")
    message = _refused(lambda: load_submission(team))
    assert message == f"{team}: refused: requirements.txt is a symbolic link (to /proc/self/environ)."
    single = _write(tmp_path / "single", {"loop.py": LOOP})
    (single / "requirements.txt").symlink_to("/proc/self/environ")
    message = _refused(lambda: load_submission(single / "loop.py"))
    assert (
        message
        == f"{single / 'loop.py'}: refused: requirements.txt is a symbolic link (to /proc/self/environ)."
    )
    assert not [p for p in opened if "/proc/" in p]


def test_a_linked_submission_file_or_folder_is_refused(tmp_path: Path) -> None:
    real = _write(tmp_path / "real", {"team/main.py": LOOP})
    (tmp_path / "loop.py").symlink_to(real / "team" / "main.py")
    assert looks_like_submission(tmp_path / "loop.py")
    assert _refused(lambda: load_submission(tmp_path / "loop.py")) == (
        f"{tmp_path / 'loop.py'}: refused: loop.py is a symbolic link (to {real / 'team' / 'main.py'})."
    )
    (tmp_path / "alias").symlink_to(real / "team")
    assert not looks_like_submission(tmp_path / "alias")  # then read as a prompt folder, which refuses it
    assert "refused: the folder itself is a symbolic link" in _refused(
        lambda: resolve_programs([str(tmp_path / "alias")])
    )
    assert _refused(lambda: load_submission(tmp_path / "alias")) == (
        f"{tmp_path / 'alias'}: refused: alias is a symbolic link (to {real / 'team'})."
    )


def test_a_hard_link_is_an_ordinary_file(tmp_path: Path) -> None:
    team = _write(tmp_path / "team", {"main.py": LOOP, "a.txt": "shared\n"})
    os.link(team / "a.txt", team / "b.txt")
    program = load_submission(team)
    assert [f.path for f in program.files] == ["a.txt", "b.txt", "main.py"]
    assert program.files[0].digest == program.files[1].digest


def test_identity_is_what_the_os_walk_reading_gave(tmp_path: Path) -> None:
    """Same files, order, digests and requirements text as reading the folder with ``os.walk``."""
    team = _write(
        tmp_path / "team",
        {"main.py": LOOP, "z.py": "Z = 1\n", "pkg/a.py": "A = 1\n", "pkg/deep/b.json": "{}",
         "requirements.txt": b"numpy==2.0\r\nscipy\r", ".env": f"KEY={SECRET}\n",
         "__pycache__/main.cpython-311.pyc": b"\0", "logs/run.log": "x"},
    )  # fmt: skip
    expected: list[SubmissionFile] = []
    for folder, dirs, names in os.walk(team):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "logs"))
        for name in sorted(n for n in names if n != ".env"):
            data = (Path(folder) / name).read_bytes()
            expected.append(
                SubmissionFile(
                    (Path(folder) / name).relative_to(team).as_posix(), digest_bytes(data), len(data)
                )
            )
    program = load_submission(team)
    assert list(program.files) == expected
    assert [f.path for f in program.files] == [
        "main.py",
        "requirements.txt",
        "z.py",
        "pkg/a.py",
        "pkg/deep/b.json",
    ]
    assert (
        program.requirements
        == (team / "requirements.txt").read_text(encoding="utf-8")
        == "numpy==2.0\nscipy\n"
    )
    assert list_files(team) == [team / f.path for f in expected]


def test_a_helper_link_in_a_prompt_folder_refuses_nothing_it_does_not_read(tmp_path: Path) -> None:
    folder = _write(tmp_path / "prompt-prog", {"prompts/1.txt": "Build <OBJECT>.", "tool.py": "print(1)\n"})
    assert not looks_like_submission(folder)
    (folder / "helper.py").symlink_to("/proc/self/environ")
    assert looks_like_submission(folder)  # a linked .py: loaded as a submission, which refuses it
    assert _refused(lambda: resolve_programs([str(folder)])).endswith(
        "helper.py is a symbolic link (to /proc/self/environ)."
    )


# -- staging the walked files ------------------------------------------------------------------------------


def test_the_staged_copy_is_exactly_the_loaded_files(tmp_path: Path) -> None:
    team = _write(tmp_path / "team", {"main.py": LOOP, "lib/util.py": "X = 1\n", ".env": f"KEY={SECRET}\n"})
    program = load_submission(team)
    copy_tree(program.files, program.source, tmp_path / "stage")
    staged = sorted(
        p.relative_to(tmp_path / "stage").as_posix() for p in (tmp_path / "stage").rglob("*") if p.is_file()
    )
    assert staged == ["lib/util.py", "main.py"]
    assert (tmp_path / "stage" / "main.py").read_text(encoding="utf-8") == LOOP
    with open(team / "lib" / "util.py", "w", encoding="utf-8") as handle:  # changed after loading
        handle.write("Y = 2\n")
    message = _refused(lambda: copy_tree(program.files, program.source, tmp_path / "again"))
    assert message == f"{team}: refused: lib/util.py has other bytes than when the folder was listed."
    os.unlink(team / "lib" / "util.py")
    (team / "lib" / "util.py").symlink_to("/proc/self/environ")
    assert _refused(lambda: copy_tree(program.files, program.source, tmp_path / "third")).endswith(
        "lib/util.py is a symbolic link (to /proc/self/environ); it changed after the folder was listed."
    )


# -- prompt programs --------------------------------------------------------------------------------------


def test_a_linked_prompt_file_is_refused_unread(tmp_path: Path, opened: list[str]) -> None:
    folder = _write(tmp_path / "prog", {"prompts/1.txt": "Build <OBJECT>."})
    (folder / "prompts" / "2.txt").symlink_to("/proc/self/environ")
    opened.clear()
    message = _refused(lambda: load_program(folder))
    assert message == f"{folder}: refused: prompts/2.txt is a symbolic link (to /proc/self/environ)."
    assert _refused(lambda: resolve_programs([str(folder)])) == message
    assert not [p for p in opened if "/proc/" in p or p.endswith("2.txt")]


def test_a_fifo_prompt_file_does_not_block(tmp_path: Path) -> None:
    folder = _write(tmp_path / "prog", {"prompts/1.txt": "Build <OBJECT>."})
    os.mkfifo(folder / "prompts" / "2.txt")
    with deadline(5):
        assert (
            _refused(lambda: load_program(folder))
            == f"{folder}: refused: prompts/2.txt is a FIFO (named pipe)."
        )


def test_linked_prompt_folders_are_refused(tmp_path: Path) -> None:
    real = _write(tmp_path / "real", {"prompts/1.txt": "Build <OBJECT>."})
    other = tmp_path / "other"
    other.mkdir()
    (other / "prompts").symlink_to(real / "prompts")
    assert (
        _refused(lambda: load_program(other))
        == f"{other}: refused: prompts is a symbolic link (to {real / 'prompts'})."
    )
    (tmp_path / "alias").symlink_to(real)
    assert "refused: the folder itself is a symbolic link" in _refused(
        lambda: load_program(tmp_path / "alias")
    )


def test_files_that_are_not_turns_are_not_looked_at(tmp_path: Path, opened: list[str]) -> None:
    turns = {"prompts/1.txt": "Build <OBJECT>.", "prompts/10.txt": "More <OBJECT>."}
    folder = _write(tmp_path / "prog", turns)
    (folder / "prompts" / "notes.md").symlink_to("/proc/self/environ")
    (folder / "prompts" / ".hidden.txt").symlink_to("/proc/self/environ")
    (folder / "prompts" / "sub.txt").mkdir()
    plain = load_program(_write(tmp_path / "plain" / "prog", turns))
    program = load_program(folder)
    assert [t.file for t in program.turns] == ["1.txt", "10.txt"] and program.digest == plain.digest
    assert not [p for p in opened if "/proc/" in p or p.endswith(("notes.md", ".hidden.txt"))]


def test_an_oversized_prompt_file_is_refused_before_it_is_read(tmp_path: Path, opened: list[str]) -> None:
    folder = _write(tmp_path / "prog", {"prompts/1.txt": "Build <OBJECT>."})
    with open(folder / "prompts" / "2.txt", "wb") as handle:
        handle.truncate(10 * 1024 * 1024)
    opened.clear()
    message = _refused(lambda: load_program(folder))
    assert message == f"{folder / 'prompts' / '2.txt'}: prompt file is 10485760 bytes; the limit is 65536."
    assert not [p for p in opened if p.endswith("2.txt")]
