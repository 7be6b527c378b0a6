"""Extraction matches the official extractor (§2 behaviour matrix) and explains what it drops."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worldforge.pcg.levels.extract import CODE_NOT_FOUND, extract_code, official_extract

FENCE = "```"


def wrap(body: str, lang: str = "python") -> str:
    return f"Here you go:\n{FENCE}{lang}\n{body}\n{FENCE}\nDone."


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("drop_block('b11',3)", "drop_block('b11',3)\n"),
        ('drop_block("b31", 5)', "drop_block('b31', 5)\n"),
        ("drop_block('b11',    7)", "drop_block('b11',    7)\n"),
        ("# drop_block('b13', 12)", "drop_block('b13', 12)\n"),
        ("drop_block(\"b31', 14)", "drop_block('b31', 14)\n"),
        ("drop_block('b33', 8)", "drop_block('b33', 8)\n"),
        ("drop_block('b1|', 9)", "drop_block('b1|', 9)\n"),
        ("drop_block(|b11|, 10)", "drop_block(|b11|, 10)\n"),
        ("drop_block('b11', )", "drop_block('b11', )\n"),
        ("for i in range(3):\n    drop_block('b11', 4)", "drop_block('b11', 4)\n"),
        ("drop_block('b11', 1); drop_block('b13', 2)", "drop_block('b11', 1)\ndrop_block('b13', 2)\n"),
    ],
)
def test_matched_forms(call: str, expected: str) -> None:
    ex = extract_code(wrap(call))
    assert ex.program == expected
    assert ex.error is None
    assert official_extract(wrap(call)) == expected


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        ("DROP_BLOCK('b11', 2)", "not lower case"),
        ("drop_block('B11', 2)", "block type is not lower case"),
        ("drop_block('b11' , 2)", "space before the comma"),
        ("drop_block( 'b11', 2)", "space after '('"),
        ("drop_block('b11', 2 )", "space before ')'"),
        ("drop_block('b11', -2)", "negative column"),
        ("drop_block('b11', x)", "column is not an integer literal"),
        ("drop_block('b11', x + 1)", "column is not an integer literal"),
        ("drop_block(kind, 3)", "not a quoted literal"),
        ("drop_block(block_type='b11', x_position=3)", "keyword argument"),
    ],
)
def test_silently_dropped_forms(call: str, reason: str) -> None:
    ex = extract_code(wrap(call + "\ndrop_block('b11', 0)"))
    assert ex.program == "drop_block('b11', 0)\n"
    assert len(ex.dropped) == 1
    assert reason in ex.dropped[0].reason
    assert ex.dropped[0].line == 3


def test_only_last_block_and_outside_calls_reported() -> None:
    text = (
        "drop_block('b31', 9)\n"
        f"{FENCE}\ndrop_block('b11', 1)\n{FENCE}\n"
        f"and finally\n{FENCE}\ndrop_block('b13', 2)\n{FENCE}\n"
    )
    ex = extract_code(text)
    assert ex.program == "drop_block('b13', 2)\n"
    reasons = [d.reason for d in ex.dropped]
    assert reasons == ["outside the last fenced block", "outside the last fenced block"]
    assert any("only the last one" in n for n in ex.notes)


def test_code_not_found_cases() -> None:
    assert extract_code("drop_block('b11', 1)").error == CODE_NOT_FOUND
    assert extract_code("drop_block('b11', 1)").program is None
    # a single backtick inside a block breaks it
    assert extract_code(f"{FENCE}\n# `drop_block`\ndrop_block('b11', 1)\n{FENCE}").error == CODE_NOT_FOUND
    # a fenced block without calls
    assert extract_code(wrap("print('hi')")).error == CODE_NOT_FOUND


def test_odd_fence_count_uses_last_complete_pair() -> None:
    text = f"{FENCE}\ndrop_block('b11', 1)\n{FENCE}\ntext\n{FENCE}\ndrop_block('b31', 5)\n"
    assert extract_code(text).program == "drop_block('b11', 1)\n"


def test_lower_cases_and_double_quotes() -> None:
    assert official_extract(wrap('drop_block("b31",4)')) == "drop_block('b31',4)\n"


_FENCE_RE = re.compile(r"```([^`]+)```")
_CALL_RE = re.compile(r"drop_block\(['|\"]b[1|3][1|3]['|\"], *[0-9]*\)")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("`'\"|b13 ,()0123456789drop_lckDROP\n#x=")), max_size=120))
def test_extractor_agrees_with_reference_regexes(text: str) -> None:
    blocks = _FENCE_RE.findall(text)
    ex = extract_code(text)
    if not blocks:
        assert ex.program is None and ex.error == CODE_NOT_FOUND
        return
    last = list(_FENCE_RE.finditer(text))[-1].group(0)
    expected = "".join(m.replace('"', "'") + "\n" for m in _CALL_RE.findall(last)).lower() or None
    assert ex.program == expected
    assert ex.program == official_extract(text)
    if ex.program is not None:
        assert all(line.startswith("drop_block(") for line in ex.program.splitlines())
        assert ex.program.endswith("\n")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["b11", "b13", "b31"]), st.integers(0, 19), st.sampled_from(["'", '"'])),
        min_size=1,
        max_size=20,
    ),
    st.text(max_size=40).filter(lambda s: "`" not in s),
)
def test_valid_calls_round_trip(calls: list[tuple[str, int, str]], prose: str) -> None:
    body = "\n".join(f"drop_block({q}{t}{q}, {x})" for t, x, q in calls)
    ex = extract_code(prose + "\n" + wrap(body))
    assert ex.program == "".join(f"drop_block('{t}', {x})\n" for t, x, _ in calls)
    assert ex.dropped == () or all(d.reason == "outside the last fenced block" for d in ex.dropped)


def test_multiline_call_reason() -> None:
    ex = extract_code(wrap("drop_block(\n    'b11', 3)\ndrop_block('b13', 1)"))
    assert ex.program == "drop_block('b13', 1)\n"
    assert [d.reason for d in ex.dropped] == [
        "call is not closed on the same line (each call must be on one line)"
    ]
