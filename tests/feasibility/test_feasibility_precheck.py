"""The precheck's shortcuts (precheck.py, counts.py) on the cases each one is about, against the
search of every node: a constraint over an ``all`` request with one value, two values or none on
a node; requests of one kind alone and together; selectors that fail on some devices and on none;
devices held and free. The generated clusters of test_feasibility_fleet.py cover the mixtures."""
from __future__ import annotations

import json

import pytest

from test_feasibility_fleet import both, held_claim
from test_feasibility_search import CLASS, claim, req


def _node(n: int, numas: list[int | None], model: bool = True) -> list[str]:
    devices = []
    for i, numa in enumerate(numas):
        attrs: dict = {} if numa is None else {"numa": {"int": numa}}
        if model:
            attrs["model"] = {"string": "a"}
        devices.append({"name": f"d{i}", "attributes": attrs})
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{n}"}}
    spec = {"driver": "gpu.example.com", "nodeName": f"node-{n}", "devices": devices,
            "pool": {"name": f"p{n}", "generation": 1, "resourceSliceCount": 1}}
    return [json.dumps(node), json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                          "metadata": {"name": f"s{n}"}, "spec": spec})]


def _cluster(*nodes: list[str], held: list[tuple[int, int]] = ()) -> list[str]:
    out = [CLASS] + [text for node in nodes for text in node]
    return out + [held_claim(list(held))] if held else out


NUMA = [{"matchAttribute": "gpu.example.com/numa"}]
ALL = {"name": "all", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}
MODEL = 'device.attributes["gpu.example.com"].model == "a"'

CASES = {
    # One value, two values, a device without the value: "all" under the constraint breaks it on
    # the second and third node only (an error, not a plain failure).
    "all-under-a-constraint": (_cluster(_node(0, [0, 0]), _node(1, [0, 1]), _node(2, [0, None])),
                               [claim("c", [req("one"), ALL], NUMA)]),
    "all-under-a-constraint-held": (_cluster(_node(0, [0, 1, 0]), _node(1, [1, 1]), held=[(0, 1)]),
                                    [claim("c", [req("one"), ALL], NUMA)]),
    # Two requests asking the same need their devices together: 3 devices are not enough for 2 + 2.
    "one-kind-twice": (_cluster(_node(0, [0, 0, 0]), _node(1, [0, 0, 1, 1])),
                       [claim("c", [req("a", count=2), req("b", count=2)])]),
    "one-kind-once": (_cluster(_node(0, [0]), _node(1, [0, 0])), [claim("c", [req("a", count=2)])]),
    "one-kind-once-held": (_cluster(_node(0, [0, 0]), _node(1, [0, 0, 0]), held=[(1, 0), (0, 1)]),
                           [claim("c", [req("a", count=2)])]),
    # The selector fails where "model" is missing (node 0), and nowhere on node 1.
    "failing-selector": (_cluster(_node(0, [0, 0], model=False), _node(1, [0, 0])),
                         [claim("c", [req("a", count=2, selectors=(MODEL,))])]),
    "matched-counts": (_cluster(_node(0, [0, 1, 0]), _node(1, [0, 1, 1, 1])),
                       [claim("c", [req("a", count=2), req("b", count=1)], NUMA)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_precheck_agrees_with_searching_every_node(name):
    cluster, mine = CASES[name]
    fleet, exhaustive = both(cluster, mine)
    assert fleet == exhaustive


def test_an_all_request_breaking_its_constraint_is_an_error():
    cluster, mine = CASES["all-under-a-constraint"]
    fleet, _ = both(cluster, mine)
    problems = fleet[0]
    assert problems and all(rule != "DRA701" for _, rule, *_ in problems), problems
