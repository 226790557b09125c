"""What the filter counts keep: shared zeros for the filters that fail nowhere, weighed once."""
from __future__ import annotations

import numpy as np

from dralint.feasibility.counts import FilterCounts
from dralint.feasibility.model import Alternative
from dralint.paths import FieldPath


class _Answers:
    """The selection's combined answers, as the counts read them."""

    def __init__(self) -> None:
        self.answers = np.zeros(10, np.int8)
        self.answers.flags.writeable = False

    def combined(self, expressions: tuple) -> np.ndarray:
        return self.answers


_SELECTION = _Answers()


def _counts(zeros: np.ndarray) -> FilterCounts:
    alt = Alternative("r", "", "gpu", (), "ExactCount", 1, None, (), None, False, FieldPath(()))
    sel = np.array([2, 0, 1], np.int32)
    return FilterCounts(("gpu",), alt, _SELECTION, ("gpu",), None,   # type: ignore[arg-type]
                        sel=sel, free=sel, usable=sel, err_search=zeros, err_all=zeros)


def _shared_zeros(size: int) -> np.ndarray:
    zeros = np.zeros(size, np.int32)
    zeros.flags.writeable = False
    return zeros


def test_shared_zeros_are_not_weighed_by_each_filter():
    fc = _counts(_shared_zeros(3))
    assert fc.nbytes() == 3 * 4   # one per-node array: not the zeros, nor the selection's answers


def test_a_change_gets_its_own_arrays_and_leaves_the_shared_zeros_alone():
    zeros = _shared_zeros(3)
    one, other = _counts(zeros), _counts(zeros)
    one.own()
    one.err_search[1] -= 1
    one.free[0] -= 1
    assert one.err_search.flags.writeable and one.err_search is not one.err_all
    assert not zeros.any() and other.err_search is zeros and list(other.free) == [2, 0, 1]
    assert one.nbytes() == 10 + 5 * 3 * 4    # its own usable flags and per-node arrays now
    assert one.dev_sel is other.dev_sel and not one.dev_sel.flags.writeable   # one copy, read-only
