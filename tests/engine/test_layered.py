"""LayeredDict behaves as a dict, and its copies as independent dicts, whatever the operations."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dralint.layered import FOLD_MIN, LayeredDict

OPS = st.lists(st.tuples(st.sampled_from(["set", "set", "del", "copy", "fold", "keep"]), st.integers(0, 80),
                         st.integers()), max_size=300)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_a_layered_dict_and_its_copies_behave_as_dicts(ops):
    ref: dict[int, int] = {}
    layered: LayeredDict[int, int] = LayeredDict()
    kept: list[tuple[dict[int, int], LayeredDict[int, int]]] = []
    for op, key, value in ops:
        if op == "set":
            ref[key] = layered[key] = value
        elif op == "del" and key in ref:
            del ref[key], layered[key]
        elif op == "copy":
            layered = layered.copy()
        elif op == "fold":
            layered = layered.folded()
        elif op == "keep":       # an older copy, which later changes of the newer one leave alone
            kept.append((dict(ref), layered))
            layered = layered.copy()
        assert len(layered) == len(ref) and dict(layered.items()) == ref
        assert (key in layered) == (key in ref) and layered.get(key, "none") == ref.get(key, "none")
    assert sorted(layered) == sorted(ref) and sorted(layered.values()) == sorted(ref.values())
    for snapshot, older in kept:
        assert dict(older.items()) == snapshot


def test_a_copy_costs_the_layer_and_a_fold_starts_a_new_base():
    big: LayeredDict[int, int] = LayeredDict((i, i) for i in range(10_000))
    newer = big.copy()
    newer[5] = -5
    assert newer._base is big._base and len(newer._layer) == 1 and big[5] == 5
    for i in range(FOLD_MIN + 10_000 // 8):
        newer[i] = -i
    assert newer.folded()._base is not big._base and not newer.folded()._layer
    assert newer.copy()._base is big._base          # a plain copy never folds (a review's overlay)
