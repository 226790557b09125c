"""dralint.gojson reads what Go's encoding/json reads, as Go reads it, and writes it back."""
from __future__ import annotations

import json
import re
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dralint import gojson
from dralint.gojson import MAX_DEPTH, GoJSONError



def in_thread(fn):
    """Run ``fn`` in a thread made after allow_deep_values (the stack deep values need), returning its result."""
    gojson.allow_deep_values()   # again: an earlier test (hypothesis) may have lowered the recursion limit
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed back to the test
            out["error"] = exc
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def nested(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


def test_nesting_up_to_gos_limit_is_read():
    value = in_thread(lambda: gojson.loads(nested(MAX_DEPTH).encode()))
    depth = 0
    while isinstance(value, dict):
        value, depth = value["a"], depth + 1
    assert depth == MAX_DEPTH and value == 1


def test_nesting_deeper_than_go_reads_is_refused():
    with pytest.raises(GoJSONError, match="deeper"):
        in_thread(lambda: gojson.loads("[" * 10_100 + "]" * 10_100))


def test_a_lone_surrogate_escape_reads_as_the_replacement_character():
    assert gojson.loads(b'{"k":"a\\ud800b"}') == {"k": "a\ufffdb"}
    assert gojson.loads(b'"\\udc00"') == "\ufffd"
    # A high surrogate followed by another high one: the first is replaced, the pair after it kept.
    assert gojson.loads(b'"\\ud800\\ud83d\\ude00"') == "\ufffd\U0001F600"
    # In keys too, and an escaped backslash before "ud800" is no escape at all.
    assert gojson.loads(b'{"\\ud800":"\\\\ud800"}') == {"\ufffd": "\\ud800"}


def test_bytes_that_are_not_utf8_read_as_one_replacement_character_each():
    assert gojson.loads(b'["a\xffb", "\xe2\x82A"]') == ["a\ufffdb", "\ufffd\ufffdA"]


def test_big_integers_read_as_go_reads_them_into_interface_values():
    assert gojson.loads(b"123456789012345678901234567890") == pytest.approx(1.2345678901234568e29)


@pytest.mark.parametrize("text", [b"NaN", b"[Infinity]", b"-Infinity", b'{"a":1', b"", b"[1,]", b'"\x01"'])
def test_what_go_refuses_is_refused(text):
    with pytest.raises(GoJSONError):
        gojson.loads(text)


def test_deep_values_are_written_and_read_back():
    def roundtrip():
        value = gojson.loads(nested(5_000, '"x\\ud800"'))
        return gojson.loads(gojson.dumps(value)) == value
    assert in_thread(roundtrip)


def test_integers_beyond_64_bits_are_written():
    assert gojson.dumps({"n": 2**80}) == b'{"n":1208925819614629174706176}'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_any_json_reads_as_the_standard_library_reads_it(value):
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:   # hypothesis drew a lone surrogate: covered below
        return
    assert gojson.loads(text.encode("utf-8")) == json.loads(text)


@settings(max_examples=200, deadline=None)
@given(json_values, st.integers(0, 3))
def test_escaped_lone_surrogates_never_escape_as_surrogates(value, where):
    text = json.dumps([value, "\ud800" * where, {"\udfff" * where: 1}])   # ASCII: lone surrogates as \\u escapes
    out = gojson.loads(text.encode())
    assert not re.search("[\ud800-\udfff]", json.dumps(out, ensure_ascii=False))
    assert gojson.loads(gojson.dumps(out)) == out
