"""The search against a brute-force oracle on small random clusters.

One node, devices with a `numa` attribute (some held by other claims), one claim with one or two
ExactCount requests and maybe a matchAttribute constraint over all of them. The claim fits iff
some choice of distinct free devices gives every request its count with one `numa` value (when
constrained); the oracle tries every choice.
"""
from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from test_feasibility_search import CLASS, claim, node_slice, req, run


def oracle(numas: list[int], held: set[int], counts: list[int], constrained: bool) -> bool:
    free = [i for i in range(len(numas)) if i not in held]
    total = sum(counts)
    for chosen in itertools.combinations(free, total):
        if not constrained or len({numas[i] for i in chosen}) == 1:
            return True
    return False


@settings(max_examples=60, deadline=None)
@given(numas=st.lists(st.integers(0, 1), min_size=1, max_size=6), data=st.data())
def test_search_agrees_with_brute_force(numas, data):
    held = set(data.draw(st.lists(st.integers(0, len(numas) - 1), max_size=2)))
    counts = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=2))
    constrained = data.draw(st.booleans())
    devices = [{"name": f"gpu-{i}", "attributes": {"numa": {"int": n}}} for i, n in enumerate(numas)]
    cluster = [CLASS, node_slice("node-a", devices)]
    if held:
        taken = json.loads(claim("taken", [req(count=len(held))]))
        taken["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": f"gpu-{i}"} for i in held]}}}
        cluster.append(json.dumps(taken))
    constraints = [{"matchAttribute": "gpu.example.com/numa"}] if constrained else None
    mine = claim("c", [req(f"r{i}", count=n) for i, n in enumerate(counts)], constraints)
    report = run(cluster, [mine], show_allocation=True)
    fits = not any(p.rule == "DRA701" for _, p in report.problems)
    assert fits == oracle(numas, held, counts, constrained)
    if fits:
        picked = [d for a in report.allocations for devs in a["devices"].values() for d in devs]
        assert len(picked) == len(set(picked)) == sum(counts)
        assert not {f"gpu.example.com/node-a/gpu-{i}" for i in held} & set(picked)
