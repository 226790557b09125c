"""Explicit nulls found as a walk finds them, whatever the value holds (the fast text test included)."""
from __future__ import annotations

from hypothesis import given, strategies as st

from dralint.schema.decode import _has_null, _walk_for_null

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.sampled_from(["null", "a null here", "", "~", "nullable"]), st.text(max_size=8))
KEYS = st.one_of(st.text(max_size=6), st.sampled_from(["null", "x"]), st.integers(0, 3))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(KEYS, inner, max_size=4)), max_leaves=20)


@given(VALUES)
def test_has_null_agrees_with_the_walk(value) -> None:
    assert _has_null(value) == _walk_for_null(value)


def test_the_word_null_in_a_string_is_no_null() -> None:
    assert not _has_null({"spec": {"name": "null", "items": ["nullable"]}})
    assert _has_null({"spec": {"items": [{"a": None}]}})
