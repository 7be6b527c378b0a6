"""canonical_json: the fast encoder path writes exactly the bytes of the rfc8785 library.

Every digest in the project goes through ``canonical_json``; if its fast path ever disagreed with
RFC 8785, digests recomputed by a reviewer with ``rfc8785`` would not match. These tests hold the
two paths to identical bytes on the shapes that are easy to get wrong (float formatting at the
exponent switch points, integral floats, the integer domain, key order across the BMP boundary,
escapes, surrogates) and on random JSON.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from enum import IntEnum
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from worldforge.core.canonical import canonical_json, json_object, reference_canonical_json
from worldforge.core.digests import digest_payload
from worldforge.core.errors import WorldForgeError

TRICKY_FLOATS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.1,
    0.5,
    1e-4,
    9.999999999999999e-05,
    1e-5,
    1e-6,
    1e-7,
    5e-324,
    2.2250738585072014e-308,
    123.456,
    1e15,
    1e16,
    1e20,
    1e21,
    1e22,
    2.0**52,
    2.0**53 - 1,
    2.0**53,
    2.0**53 + 2,
    2.0**60,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    4503599627370495.5,
    0.30000000000000004,
    1 / 3,
    -2 / 3,
    0.7741,
]


@pytest.mark.parametrize("value", TRICKY_FLOATS)
def test_floats_match_rfc8785(value: float) -> None:
    for wrapped in (value, [value], {"x": value}, {"a": [value, -value]}):
        assert canonical_json(wrapped) == bytes(rfc8785.dumps(wrapped))


def test_known_vectors() -> None:
    # RFC 8785 appendix-style expectations, written out so a regression cannot hide behind the oracle.
    assert canonical_json({"b": 1.0, "a": [1e21, 1e-7, -0.0, 100.0, 0.5]}) == (
        b'{"a":[1e+21,1e-7,0,100,0.5],"b":1}'
    )
    assert canonical_json({"\u20ac": '\n\t\x01"\\', "\U0001f600": 1, "\ufb33": 2}) == (
        '{"\u20ac":"\\n\\t\\u0001\\"\\\\","\U0001f600":1,"\ufb33":2}'.encode()
    )


def test_key_order_is_utf16_not_code_point() -> None:
    # U+1F600 is D83D DE00 in UTF-16, which sorts before U+FB33; code-point order says the opposite.
    value = {"\ufb33": 1, "\U0001f600": 2, "a": 3}
    assert canonical_json(value) == bytes(rfc8785.dumps(value))
    assert canonical_json(value).index("\U0001f600".encode()) < canonical_json(value).index("\ufb33".encode())


def test_integer_domain_and_bad_values_raise_like_the_reference() -> None:
    for bad in (2**53, -(2**53), 2**64, {"n": [2**60]}):
        with pytest.raises(WorldForgeError, match="cannot be canonicalized"):
            canonical_json(bad)
    assert canonical_json(2**53 - 1) == b"9007199254740991"
    for bad in (math.nan, math.inf, {"x": -math.inf}, (1, 2), {1: "a"}, {"s": {1, 2}}):
        with pytest.raises(WorldForgeError):
            canonical_json(bad)
    with pytest.raises(WorldForgeError, match="cannot be canonicalized"):
        canonical_json({"s": "\ud800"})


def test_subclasses_go_through_the_reference() -> None:
    class Level(IntEnum):
        HIGH = 3

    ordered = OrderedDict([("b", 1), ("a", 2)])
    assert canonical_json(ordered) == reference_canonical_json(ordered) == b'{"a":2,"b":1}'
    assert canonical_json({"level": Level.HIGH}) == reference_canonical_json({"level": Level.HIGH})


def test_input_is_not_modified() -> None:
    value: dict[str, Any] = {"a": [1.0, 2.5], "b": {"c": 3.0}}
    canonical_json(value)
    assert value == {"a": [1.0, 2.5], "b": {"c": 3.0}} and type(value["a"][0]) is float


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(TRICKY_FLOATS)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_random_json_matches_rfc8785(value: Any) -> None:
    try:
        expected = bytes(rfc8785.dumps(value))
    except rfc8785.CanonicalizationError:
        with pytest.raises(WorldForgeError):
            canonical_json(value)
        return
    assert canonical_json(value) == expected
    assert digest_payload(value) == "sha256:" + hashlib.sha256(expected).hexdigest()


def test_json_object_narrows_a_checked_object_and_names_what_is_not() -> None:
    value = {"a": [1, 2.5, None], "b": {"c": "d"}}
    assert json_object(value, "x") is value
    with pytest.raises(WorldForgeError, match=r"^x: must be an object\.$"):
        json_object([value], "x")
    with pytest.raises(WorldForgeError, match=r"x\.b\.c: value of type tuple"):
        json_object({"b": {"c": (1,)}}, "x")
