"""The bounded memory of the fleet view: by the bytes of keys and values, never by a count."""
from __future__ import annotations

from dralint.feasibility.lru import Lru


def test_least_recently_used_goes_first():
    lru: Lru[str, bytes] = Lru(8, lambda key, value: len(value))
    lru.put("a", b"1234")
    lru.put("b", b"1234")
    assert lru.get("a") == b"1234"     # "b" is now the oldest
    lru.put("c", b"1234")
    assert "b" not in lru and "a" in lru and "c" in lru


def test_weighed_entries_stay_within_the_budget():
    evicted: list[str] = []
    lru: Lru[str, bytes] = Lru(10, lambda key, value: len(value), lambda key, _: evicted.append(key))
    lru.put("a", b"1234")
    lru.put("b", b"1234")
    assert lru.weight == 8 and not evicted
    lru.put("c", b"1234")             # 12 > 10: the oldest goes
    assert evicted == ["a"] and lru.weight == 8
    lru.put("b", b"1")                # put again: weighed again, not twice
    assert lru.weight == 5 and len(lru) == 2


def test_keys_are_weighed_too():
    lru: Lru[str, int] = Lru(100, lambda key, value: len(key))
    for i in range(10):
        lru.put(f"{i}" * 30, i)        # a hostile key of 30 bytes holding a small value
    assert lru.weight <= 100 and len(lru) == 3


def test_an_entry_heavier_than_the_budget_is_still_kept():
    lru: Lru[str, bytes] = Lru(4, lambda key, value: len(value))
    lru.put("a", b"12")
    lru.put("big", b"123456789")
    assert "big" in lru and "a" not in lru and lru.weight == 9


def test_reweigh_accounts_for_an_entry_that_grew():
    lru: Lru[str, list[int]] = Lru(5, lambda key, value: len(value))
    lru.put("a", [1, 2])
    grown = [1]
    lru.put("b", grown)
    grown.extend([2, 3, 4])
    lru.reweigh("b")
    assert lru.weight == 4 and "a" not in lru


def test_clear_forgets_everything_and_says_what_it_held():
    evicted: list[str] = []
    lru: Lru[str, bytes] = Lru(100, lambda key, value: len(value), lambda key, _: evicted.append(key))
    lru.put("a", b"123")
    lru.put("b", b"45")
    assert lru.clear() == 5
    assert len(lru) == 0 and lru.weight == 0 and lru.get("a") is None and not evicted
