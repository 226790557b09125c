"""The matching bound that cuts hopeless search branches, and the searches it makes short."""
from __future__ import annotations

import json
from itertools import combinations, product

from hypothesis import given, settings
from hypothesis import strategies as st

from dralint.feasibility import FeasibilityOptions, judge, search
from dralint.feasibility.bound import can_match, can_match_some
from dralint.index import Index
from dralint.kube.releases import Release

from test_feasibility_fleet import GATES, _objects
from test_feasibility_search import CLASS, mini_cel


def _brute(requests, in_use) -> bool:
    """Some choice of alternatives, and distinct free devices for every request: tried one by one."""
    for choice in product(*requests):
        def place(i: int, taken: frozenset) -> bool:
            if i == len(choice):
                return True
            devices, need = choice[i]
            free = [d for d in devices if d not in in_use and d not in taken]
            return any(place(i + 1, taken | set(pick)) for pick in combinations(free, max(need, 0)))
        if place(0, frozenset()):
            return True
    return False


requests = st.lists(st.lists(st.tuples(st.frozensets(st.integers(0, 5), max_size=5), st.integers(0, 3)),
                             min_size=1, max_size=3), max_size=3)


@settings(max_examples=300, deadline=None)
@given(requests, st.frozensets(st.integers(0, 5), max_size=3))
def test_bound_with_alternatives_is_exact_when_few(reqs, in_use):
    assert can_match_some(reqs, in_use) == _brute(reqs, in_use)


def test_alternatives_that_cannot_be_filled_do_not_hide_a_shortage():
    # Merged, {1,2} or {} with need 2 or 1 looks fillable beside request 0; chosen one by one it is not.
    reqs = [[(frozenset({1, 2, 3}), 2)], [(frozenset({1, 2}), 2), (frozenset(), 1)]]
    assert not can_match_some(reqs, frozenset())
    assert can_match([(frozenset({1, 2, 3}), 2), (frozenset({1, 2}), 1)], frozenset())


def _node_with(nics: int, fast: int) -> list[str]:
    devices = [{"name": f"n{i}", "attributes": {"fast": {"bool": i < fast}}} for i in range(nics)]
    return [CLASS, json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                               "metadata": {"name": "s"}, "spec": {
                                   "driver": "gpu.example.com", "nodeName": "node-0", "devices": devices,
                                   "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}})]


def test_a_request_taking_what_a_later_one_needs_steps_back_early():
    # 8 of any 24 devices, then the 5 fast ones (the first five): the first request takes fast ones
    # first, and without the cut in the middle of a request the search tries 659,889 ways of picking
    # 8 before the first that leaves the fast ones free; with it, each fast device taken is given
    # back at once.
    claim = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                        "metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": [
                            {"name": "any", "exactly": {"deviceClassName": "gpu", "count": 8}},
                            {"name": "fast", "exactly": {"deviceClassName": "gpu", "count": 5, "selectors": [
                                {"cel": {"expression": 'device.attributes["gpu.example.com"].fast == true'}}]}}]}}})
    mine = _objects([claim], False)
    report = judge(Index.build(_objects(_node_with(24, 5), True) + mine), Release(37, GATES),
                   FeasibilityOptions(show_allocation=True, max_steps=20_000), lambda o: o is mine[0],
                   evaluate=mini_cel)
    assert not report.problems                 # decided within 20,000 steps, not "undecided"
    devices = report.allocations[0]["devices"]
    assert devices["any"] == [f"gpu.example.com/p/n{i}" for i in range(5, 13)]
    assert devices["fast"] == [f"gpu.example.com/p/n{i}" for i in range(5)]
    assert search.PRUNE_AFTER > 0              # the cut starts only once a search runs long
