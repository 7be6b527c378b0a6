"""Prompt programs: folder loading, ordering, placeholder substitution and the input checks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.programs import prompt as programs
from worldforge.pcg.programs.prompt import (
    PLACEHOLDER,
    builtin_program,
    load_program,
    program_from_texts,
    resolve_programs,
)
from worldforge.presets import PROGRAMS_DIR


def _write(root: Path, files: dict[str, bytes | str]) -> Path:
    (root / "prompts").mkdir(parents=True)
    for name, data in files.items():
        path = root / "prompts" / name
        if isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            path.write_bytes(data)
    return root


def test_builtin_baselines_shape() -> None:
    zs = builtin_program("zero-shot")
    mt = builtin_program("zero-shot-multi-turn")
    assert [t.file for t in zs.turns] == ["0.txt"]
    assert [t.file for t in mt.turns] == ["0.txt", "1.txt"]
    # turn 1 of the multi-turn baseline is the zero-shot prompt; turn 2 asks for one code block
    assert mt.turns[0].text == zs.turns[0].text
    assert "code block" in mt.turns[1].text and PLACEHOLDER not in mt.turns[1].text
    prompt = zs.prompts_for("K")[0]
    assert PLACEHOLDER not in prompt and '"K"' in prompt
    assert zs.turns[0].text.count(PLACEHOLDER) == prompt.count('"K"')
    for word in ("drop_block(block_type: str, x_position: int)", "W = 20", "H = 16", "b11", "b31", "b13"):
        assert word in prompt
    assert prompt.rstrip().endswith("---")
    # the tie-break measure: characters after substitution, summed over turns
    assert mt.prompt_length() == len(mt.prompts_for("A")[0]) + len(mt.prompts_for("A")[1])
    assert zs.prompt_length() < mt.prompt_length()
    assert zs.builtin and zs.digest != mt.digest


def test_default_resolution_is_both_baselines_in_order() -> None:
    assert [p.name for p in resolve_programs(None)] == ["zero-shot", "zero-shot-multi-turn"]
    assert [p.name for p in resolve_programs(["zero-shot-multi-turn"])] == ["zero-shot-multi-turn"]


def test_turns_sorted_naturally_and_every_placeholder_replaced(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "mine",
        {
            "10.txt": "last <OBJECT>",
            "2.txt": "second",
            "1.txt": "<OBJECT> and <OBJECT> first",
            ".hidden.txt": "x",
        },
    )
    prog = load_program(root)
    assert prog.name == "mine"
    assert [t.file for t in prog.turns] == ["1.txt", "2.txt", "10.txt"]
    assert prog.prompts_for("Q") == ["Q and Q first", "second", "last Q"]
    assert prog.prompt_length("Q") == len("Q and Q first") + len("second") + len("last Q")


def test_digest_ignores_location(tmp_path: Path) -> None:
    a = load_program(_write(tmp_path / "a" / "p", {"0.txt": "build <OBJECT>"}))
    b = load_program(_write(tmp_path / "b" / "p", {"0.txt": "build <OBJECT>"}))
    c = load_program(_write(tmp_path / "c" / "p", {"0.txt": "build <OBJECT>!"}))
    assert a.digest == b.digest != c.digest


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"0.txt": "no placeholder here"}, "no prompt file contains the <OBJECT> placeholder"),
        ({"0.txt": b"bad \xff\xfe <OBJECT>"}, "not valid UTF-8"),
        ({"0.txt": b"<OBJECT>\x00\x01"}, "NUL bytes"),
        ({"0.txt": "   \n"}, "empty"),
        ({"0.txt": "<OBJECT>" + "x" * programs.MAX_TURN_BYTES}, "the limit is 65536"),
        ({}, "no *.txt prompt files"),
        ({f"{i}.txt": "<OBJECT>" for i in range(programs.MAX_TURNS + 1)}, "the limit is 16 turns"),
    ],
)
def test_bad_programs_fail_with_the_file_named(
    tmp_path: Path, files: dict[str, bytes | str], message: str
) -> None:
    root = _write(tmp_path / "bad", files)
    with pytest.raises(WorldForgeError) as info:
        load_program(root)
    assert message in str(info.value)
    assert str(root) in str(info.value)


def test_missing_folder_and_prompts_dir(tmp_path: Path) -> None:
    with pytest.raises(WorldForgeError, match="folder not found"):
        load_program(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(WorldForgeError, match="'prompts/' folder"):
        load_program(tmp_path / "empty")
    with pytest.raises(WorldForgeError, match="unknown built-in program"):
        builtin_program("few-shot")


def test_duplicate_names_rejected(tmp_path: Path) -> None:
    a = _write(tmp_path / "x" / "mine", {"0.txt": "<OBJECT>"})
    b = _write(tmp_path / "y" / "mine", {"0.txt": "other <OBJECT>"})
    with pytest.raises(WorldForgeError, match="two programs are named 'mine'"):
        resolve_programs([str(a), str(b)])
    # the shipped baseline spelled twice is still one name twice
    with pytest.raises(WorldForgeError, match="two programs are named 'zero-shot'"):
        resolve_programs(["zero-shot", str(PROGRAMS_DIR / "zero-shot")])


@pytest.mark.parametrize("name", programs.BUILTIN_PROGRAMS)
def test_a_folder_holding_a_shipped_baseline_is_that_baseline(tmp_path: Path, name: str) -> None:
    copy = tmp_path / "copy" / name
    shutil.copytree(PROGRAMS_DIR / name, copy)
    (canonical,) = resolve_programs([name])
    for spelling in (str(PROGRAMS_DIR / name), PROGRAMS_DIR / name, str(copy)):
        (prog,) = resolve_programs([spelling])
        assert prog.builtin and prog.name == name
        assert prog.identity() == canonical.identity() and prog.digest == canonical.digest
    (prog,) = resolve_programs([str(copy)])
    assert prog.source == copy  # inputs are recorded from the folder actually read


def test_a_different_program_under_a_reserved_name_is_refused(tmp_path: Path) -> None:
    impostor = _write(tmp_path / "zz" / "zero-shot", {"0.txt": "custom <OBJECT>\n"})
    with pytest.raises(WorldForgeError) as info:
        resolve_programs([str(impostor), "zero-shot-multi-turn"])
    assert str(info.value) == (
        f"{impostor}: the program name 'zero-shot' is reserved for the built-in baseline and these "
        "prompts differ from it; rename the folder."
    )
    # an extra turn is a different program too, even with the baseline's first turn verbatim
    shipped = (PROGRAMS_DIR / "zero-shot" / "prompts" / "0.txt").read_text(encoding="utf-8")
    longer = _write(tmp_path / "longer" / "zero-shot", {"0.txt": shipped, "1.txt": "again <OBJECT>"})
    with pytest.raises(WorldForgeError, match="reserved for the built-in baseline"):
        resolve_programs([str(longer)])


def test_a_baseline_copy_under_another_name_is_an_ordinary_program(tmp_path: Path) -> None:
    copy = tmp_path / "my-zero-shot"
    shutil.copytree(PROGRAMS_DIR / "zero-shot", copy)
    (prog,) = resolve_programs([str(copy)])
    assert prog.name == "my-zero-shot" and not prog.builtin


def test_bad_letter_rejected() -> None:
    with pytest.raises(WorldForgeError, match="uppercase letter"):
        builtin_program("zero-shot").prompts_for("ab")


def test_utf8_bom_is_stripped(tmp_path: Path) -> None:
    prog = load_program(_write(tmp_path / "bom", {"0.txt": b"\xef\xbb\xbfdraw <OBJECT>"}))
    assert prog.prompts_for("Z") == ["draw Z"]


@given(
    st.text(min_size=1, max_size=200).filter(lambda s: s.strip() and "\x00" not in s),
    st.sampled_from("ABCXYZ"),
)
def test_substitution_property(text: str, letter: str) -> None:
    template = text + PLACEHOLDER + text
    prog = program_from_texts("prop", [template])
    (out,) = prog.prompts_for(letter)
    assert out == template.replace(PLACEHOLDER, letter)
    assert prog.prompt_length(letter) == len(out)
