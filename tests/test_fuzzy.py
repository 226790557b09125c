"""dralint.fuzzy.closest gives difflib.get_close_matches(n=1)'s answer, ties and cutoffs included."""
from __future__ import annotations

import difflib
import random

import pytest

from dralint.fuzzy import closest


def _difflib(word: str, names: list[str], cutoff: float) -> str | None:
    found = difflib.get_close_matches(word, names, n=1, cutoff=cutoff)
    return found[0] if found else None


def test_closest_agrees_with_difflib_on_names_that_look_alike():
    rng = random.Random(7)
    names = [f"{rng.choice(['gpu', 'fpga', 'nic'])}-{rng.randrange(10000):05d}.{rng.choice(['gpu', 'fpga'])}.example.com"
             for _ in range(400)]
    for _ in range(200):
        word = f"{rng.choice(['gpu', 'fpga', 'nic', 'gpux'])}-{rng.randrange(10000):05d}.gpu.example.com"
        assert closest(word, names) == _difflib(word, names, 0.6)


@pytest.mark.parametrize("cutoff", [0.0, 0.3, 0.6, 0.9, 1.0])
def test_closest_agrees_with_difflib_on_short_random_words(cutoff):
    rng = random.Random(int(cutoff * 10))
    for _ in range(300):
        names = ["".join(rng.choice("abc") for _ in range(rng.randrange(0, 5))) for _ in range(rng.randrange(0, 12))]
        word = "".join(rng.choice("abcd") for _ in range(rng.randrange(0, 5)))
        assert closest(word, names, cutoff) == _difflib(word, names, cutoff)


def test_closest_breaks_a_tie_for_the_greater_name_as_difflib_does():
    names = ["abx", "aby", "abd"]  # each 2/3 like "abc"
    assert closest("abc", names, 0.5) == _difflib("abc", names, 0.5) == "aby"


def test_closest_without_a_close_name_is_none():
    assert closest("claim", ["zzzzzz", "qqq"]) is None
    assert closest("claim", []) is None


def test_closest_refuses_a_cutoff_outside_zero_to_one():
    with pytest.raises(ValueError):
        closest("a", ["a"], 1.5)
