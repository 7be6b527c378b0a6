"""Converter output is byte-identical to the official converter (§1.10 vectors, reference levels)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worldforge.core.errors import StageError, WorldForgeError
from worldforge.pcg.levels.convert import ERR_BLOCK_TYPE, ERR_HEIGHT, ERR_WIDTH, convert, place_blocks
from worldforge.pcg.levels.extract import extract_code
from worldforge.pcg.levels.level import parse_level_xml

REF = Path(__file__).parents[1] / "fixtures" / "reference-levels"


def prog(*calls: tuple[str, int | str]) -> str:
    return "".join(f"drop_block('{t}', {x})\n" for t, x in calls)


@pytest.mark.parametrize("name", ["V1_L_1", "result_22", "result_23", "result_24"])
def test_reference_levels_byte_identical(name: str) -> None:
    program = (REF / f"{name}.program.txt").read_text(encoding="utf-8")
    expected = (REF / f"{name}.xml").read_bytes()
    assert convert(program).encode("utf-8") == expected
    assert not expected.endswith(b"\n")


def blocks_of(xml: str) -> list[tuple[str, str, str, str]]:
    import re

    return re.findall(r'type="(\w+)" material="wood" x="([-\d.]+)" y="([-\d.]+)" rotation="(\d+)"', xml)


def camera_of(xml: str) -> tuple[str, str]:
    import re

    m = re.search(r'minWidth="([\d.]+)" maxWidth="([\d.]+)"', xml)
    assert m
    return m.group(1), m.group(2)


def test_vector_v1_l_1() -> None:
    xml = convert(prog(("b11", 0), ("b13", 0), ("b31", 1), ("b31", 2), ("b31", 3), ("b11", 4)))
    assert camera_of(xml) == ("17.34656", "22.34656")
    assert blocks_of(xml) == [
        ("SquareTiny", "2.12005", "-3.37995", "0"),
        ("RectSmall", "2.12005", "-2.89975", "90"),
        ("RectSmall", "2.36015", "-2.41955", "0"),
        ("RectSmall", "2.60025", "-2.17945", "0"),
        ("RectSmall", "2.84035", "-1.93935", "0"),
        ("SquareTiny", "3.08045", "-1.69925", "0"),
    ]


def test_vector_shift() -> None:
    xml = convert(prog(("b11", 10), ("b31", 12)))
    assert blocks_of(xml) == [
        ("SquareTiny", "2.12005", "-3.37995", "0"),
        ("RectSmall", "2.60025", "-3.37995", "0"),
    ]


def test_vector_sixteen_tiny_blocks() -> None:
    xml = convert(prog(*[("b11", 5)] * 16))
    ys = [b[2] for b in blocks_of(xml)]
    assert ys[0] == "-3.37995" and ys[-1] == "0.22155" and ys[1] == "-3.13985"
    assert camera_of(xml) == ("23.49312", "28.49312")
    with pytest.raises(StageError, match="^Height boundary is intruded.$"):
        convert(prog(*[("b11", 5)] * 17))


def test_vector_few_shot_s() -> None:
    xml = convert(prog(*[("b31", x) for x in (10, 11, 10, 9, 10)]))
    assert [(b[1], b[2]) for b in blocks_of(xml)] == [
        ("2.60025", "-3.37995"),
        ("2.84035", "-3.13985"),
        ("2.60025", "-2.89975"),
        ("2.36015", "-2.65965"),
        ("2.60025", "-2.41955"),
    ]
    assert camera_of(xml) == ("17", "22")


def test_camera_ten_rows() -> None:
    xml = convert(prog(*[("b11", 3)] * 10))
    assert camera_of(xml) == ("18.8832", "23.8832")


@pytest.mark.parametrize(
    ("program", "message"),
    [
        (prog(("b33", 8)), ERR_BLOCK_TYPE),
        (prog(("b1|", 9)), ERR_BLOCK_TYPE),
        (prog(("b31", 0)), ERR_WIDTH),
        (prog(("b31", 19)), ERR_WIDTH),
        (prog(("b11", 20)), ERR_HEIGHT),
        (prog(("b11", -1)), ERR_HEIGHT),
        (prog(("b11", "")), ERR_HEIGHT),
        (prog(*[("b13", 4)] * 6), ERR_HEIGHT),
        (prog(("b11", 3), ("b33", 3)), ERR_BLOCK_TYPE),
    ],
)
def test_official_errors(program: str, message: str) -> None:
    with pytest.raises(StageError) as info:
        convert(program)
    assert str(info.value) == message


def test_line_rules() -> None:
    # pipe quotes, leading zeros, CRLF, upper case input and indented lines
    assert convert("drop_block(|b11|, 05)\r\n") == convert(prog(("b11", 5)))
    assert convert("DROP_BLOCK('B31', 4)\n") == convert(prog(("b31", 4)))
    assert convert("  drop_block('b11', 4)\n") == convert("")
    assert camera_of(convert("")) == ("17", "22")


def test_heightmap_rule_never_fills_overhang() -> None:
    # b31 at 5 over a b11 at 4 leaves a hole under its right end at column 6; b11 at 6 lands on top.
    placement = place_blocks(prog(("b11", 4), ("b31", 5), ("b11", 6)))
    assert [(b.x, b.y) for b in placement.blocks] == [(0, 0), (1, 1), (2, 2)]


def test_side_column_full_quirk() -> None:
    # column 6 full to the top; a b31 centred at 5 overlaps that side cell at row 15, no error
    placement = place_blocks(prog(*[("b11", 6)] * 16, ("b31", 5)))
    assert placement.blocks[-1].y == 15


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["b11", "b13", "b31"]), st.integers(-2, 21)), max_size=40))
def test_convert_never_crashes_and_parses_back(calls: list[tuple[str, int]]) -> None:
    program = prog(*calls)
    try:
        xml = convert(program)
    except StageError as exc:
        assert str(exc) in {ERR_BLOCK_TYPE, ERR_WIDTH, ERR_HEIGHT}
        return
    level = parse_level_xml(xml.encode("utf-8"))
    assert len(level.blocks) == len(calls)
    assert not xml.endswith("\n")
    if level.blocks:
        assert (
            min(
                round(b.x - (0.2401 if b.type == "RectSmall" and b.rotation == 0 else 0), 5)
                for b in level.blocks
            )
            == 2.12005
        )


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_convert_arbitrary_text_only_official_errors(text: str) -> None:
    try:
        convert(text)
    except StageError as exc:
        assert str(exc) in {ERR_BLOCK_TYPE, ERR_WIDTH, ERR_HEIGHT}


def test_extract_then_convert_reference() -> None:
    reply = "Sure!\n```python\n" + (REF / "result_22.program.txt").read_text().replace("'", '"') + "```"
    ex = extract_code(reply)
    assert ex.program is not None
    assert convert(ex.program).encode() == (REF / "result_22.xml").read_bytes()


def test_parse_other_science_birds_xml() -> None:
    xml = b"""<?xml version="1.0" encoding="utf-16"?>
<Level width="2"><Camera x="0" y="-1" minWidth="20" maxWidth="25" />
<Birds><Bird type="BirdRed"/><Bird type="BirdBlue"/></Birds><Slingshot x="-8" y="-2.5"/>
<GameObjects>
 <Block type="RectFat" material="stone" x="1.5" y="-3.0" rotation="90.0" />
 <Pig type="BasicSmall" material="" x="1.0" y="-2.0" rotation="0" />
 <TNT type="" x="3" y="-3.2" rotation="0" />
 <Platform type="Platform" x="0" y="0" scaleX="2" />
 <Block type="Circle" material="ice" x="4" y="-3.1" />
</GameObjects></Level>"""
    level = parse_level_xml(xml)
    assert level.width == 2 and level.birds == ("BirdRed", "BirdBlue")
    assert [o.kind for o in level.objects] == ["block", "pig", "tnt", "platform", "block"]
    assert level.blocks[0].material == "stone" and level.blocks[0].rotation == 90.0
    assert level.platforms[0].size[0] == pytest.approx(1.24)
    assert level.blocks[1].is_circle
    utf16 = xml.decode().encode("utf-16")
    assert parse_level_xml(utf16) == level


@pytest.mark.parametrize(
    ("xml", "fragment"),
    [
        ("<Level><GameObjects><Block type='SquareTiny' x='a' y='0'/></GameObjects></Level>", "not a number"),
        ("<Level><GameObjects><Block type='SquareTiny' y='0'/></GameObjects></Level>", "missing attribute"),
        ("<Nope/>", "expected <Level>"),
        ("<Level>", "malformed"),
    ],
)
def test_parse_errors_name_the_field(xml: str, fragment: str) -> None:
    with pytest.raises(WorldForgeError, match=fragment):
        parse_level_xml(xml, source="lvl.xml")


_OBJ = st.tuples(
    st.sampled_from(["Block", "Pig", "TNT", "Platform"]),
    st.sampled_from(["SquareTiny", "RectSmall", "RectFat", "Circle", "BasicSmall", "", "Unknown"]),
    st.sampled_from(["wood", "stone", "ice", ""]),
    st.floats(-30, 30, allow_nan=False),
    st.floats(-5, 10, allow_nan=False),
    st.sampled_from([0, 90, 45.5, 180]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_OBJ, max_size=12), st.sampled_from(["utf-8", "utf-16"]))
def test_level_parser_round_trips_generated_xml(
    objs: list[tuple[str, str, str, float, float, float]], enc: str
) -> None:
    body = "".join(
        f'<{tag} type="{t}" material="{m}" x="{x!r}" y="{y!r}" rotation="{r}" />'
        for tag, t, m, x, y, r in objs
    )
    xml = (
        f'<?xml version="1.0" encoding="utf-16"?>\n<Level width="3"><GameObjects>{body}</GameObjects></Level>'
    )
    level = parse_level_xml(xml.encode(enc))
    assert [(o.kind, o.x, o.y, float(o.rotation)) for o in level.objects] == [
        (tag.lower(), x, y, float(r)) for tag, _, _, x, y, r in objs
    ]
    for obj in level.objects:
        w, h = obj.size
        assert w > 0 and h > 0


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_level_parser_rejects_garbage_with_worldforge_error(data: str | bytes) -> None:
    try:
        parse_level_xml(data)
    except WorldForgeError:
        pass
