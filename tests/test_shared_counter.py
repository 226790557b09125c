"""The items processes take from a shared counter: each exactly once, in runs of the step asked."""
from __future__ import annotations

from dralint.shared_counter import new_counter, taken


def test_takers_of_one_counter_share_every_item_exactly_once():
    counter = new_counter()
    first, second = taken(counter, 10, 3), taken(counter, 10, 3)
    got_first, got_second = [next(first)], list(second)   # the first takes one run, then the second the rest
    got_first += list(first)
    assert got_first == [0, 1, 2]
    assert got_second == [3, 4, 5, 6, 7, 8, 9]
    assert list(taken(counter, 10)) == []


def test_a_step_of_one_takes_items_one_by_one_until_none_is_left():
    counter = new_counter()
    assert list(taken(counter, 4)) == [0, 1, 2, 3]
    assert counter.value >= 4
