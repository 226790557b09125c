"""Pools as one node sees them: generations, completeness across nodes, validity, order."""
from __future__ import annotations

import json

from dralint import source
from dralint.convert import to_canonical
from dralint.feasibility.model import read_slice
from dralint.feasibility.nodes import NodeView, candidate_nodes
from dralint.feasibility.pools import Features, SliceIndex, gather_pools
from dralint.manifest import identify


def slices(*specs: dict) -> SliceIndex:
    out, uid = [], 0
    for i, spec in enumerate(specs):
        body = {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}} | spec
        text = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                           "metadata": {"name": body.pop("name", f"s{i}")}, "spec": body})
        (item,) = identify(source.load_text(text, "s.yaml").documents[0])
        s = read_slice(to_canonical(item), uid, {})
        uid += len(s.devices)
        out.append(s)
    return SliceIndex(out)


def pool(gen: int, count: int) -> dict:
    return {"name": "p", "generation": gen, "resourceSliceCount": count}


def dev(name: str, **extra) -> dict:
    return {"name": name} | extra


NODE1, NODE2 = NodeView("node-1"), NodeView("node-2")
ON = Features(partitionable=True, binding_conditions=True)


def test_newest_generation_wins_and_older_slices_drop_out():
    idx = slices({"nodeName": "node-1", "pool": pool(1, 1), "devices": [dev("old")]},
                 {"nodeName": "node-1", "pool": pool(2, 1), "devices": [dev("new")]})
    (p,) = gather_pools(idx, NODE1, Features())
    assert [d.name for s in p.slices for d in s.devices] == ["new"] and p.usable


def test_pool_spanning_nodes_is_complete_and_keeps_other_nodes_slices_for_counters():
    idx = slices({"nodeName": "node-1", "pool": pool(1, 2), "devices": [dev("a")]},
                 {"nodeName": "node-2", "pool": pool(1, 2), "devices": [dev("b")]})
    (p,) = gather_pools(idx, NODE1, ON)
    assert p.usable and [s.name for s in p.slices] == ["s0"] and [s.name for s in p.other_slices] == ["s1"]


def test_newer_generation_elsewhere_makes_the_local_view_obsolete():
    idx = slices({"nodeName": "node-1", "pool": pool(1, 2), "devices": [dev("a")]},
                 {"nodeName": "node-2", "pool": pool(2, 2), "devices": [dev("b")]})
    assert gather_pools(idx, NODE1, Features()) == []


def test_a_locally_complete_pool_ignores_newer_generations_elsewhere():
    idx = slices({"nodeName": "node-1", "pool": pool(1, 1), "devices": [dev("a")]},
                 {"nodeName": "node-2", "pool": pool(2, 1), "devices": [dev("b")]})
    (p,) = gather_pools(idx, NODE1, Features())
    assert p.generation == 1 and p.usable


def test_missing_slice_makes_the_pool_incomplete():
    (p,) = gather_pools(slices({"nodeName": "node-1", "pool": pool(1, 2), "devices": [dev("a")]}), NODE1, Features())
    assert p.incomplete and not p.usable


def test_counter_only_slice_completes_the_pool_and_supplies_counters():
    idx = slices({"perDeviceNodeSelection": True, "pool": pool(1, 2),
                  "devices": [dev("a", nodeName="node-1", consumesCounters=[
                      {"counterSet": "cs", "counters": {"mem": {"value": "4Gi"}}}])]},
                 {"perDeviceNodeSelection": True, "pool": pool(1, 2),
                  "sharedCounters": [{"name": "cs", "counters": {"mem": {"value": "8Gi"}}}]})
    (p,) = gather_pools(idx, NODE1, ON)
    assert p.usable and set(p.counter_sets) == {"cs"}
    assert gather_pools(idx, NODE2, ON) == []            # no device of the slice targets node-2
    assert gather_pools(idx, NODE1, Features()) == []    # DRAPartitionableDevices off: slices ignored


def test_invalid_pools():
    dup = slices({"nodeName": "node-1", "pool": pool(1, 2), "devices": [dev("a")]},
                 {"nodeName": "node-1", "pool": pool(1, 2), "devices": [dev("a")]})
    assert "published twice" in gather_pools(dup, NODE1, Features())[0].invalid
    # Device names are compared only among the slices that target the node (as upstream).
    apart = slices({"nodeName": "node-1", "pool": pool(1, 2), "devices": [dev("a")]},
                   {"nodeName": "node-2", "pool": pool(1, 2), "devices": [dev("a")]})
    assert gather_pools(apart, NODE1, Features())[0].usable
    unknown = slices({"nodeName": "node-1", "devices": [dev("a", consumesCounters=[
        {"counterSet": "nope", "counters": {"mem": {"value": "1"}}}])]})
    assert "does not declare" in gather_pools(unknown, NODE1, ON)[0].invalid


def test_order_is_driver_then_pool_with_binding_condition_pools_last():
    idx = slices({"nodeName": "node-1", "driver": "b", "devices": [dev("x")]},
                 {"nodeName": "node-1", "driver": "a", "devices": [dev("y", bindingConditions=["Ready"],
                                                                         bindingFailureConditions=["Failed"])]},
                 {"nodeName": "node-1", "driver": "c", "devices": [dev("z")]})
    assert [p.key[0] for p in gather_pools(idx, NODE1, ON)] == ["b", "c", "a"]


def test_candidate_nodes_come_from_node_objects_and_slices():
    idx = slices({"nodeName": "node-2", "devices": [dev("a")]}, {"allNodes": True, "devices": [dev("b")]})
    nodes = candidate_nodes({"node-1": {"metadata": {"labels": {"zone": "z"}}}}, idx.all, None)
    assert [(n.name, dict(n.labels)) for n in nodes] == [("node-1", {"zone": "z"}), ("node-2", {})]
    assert [n.name for n in candidate_nodes({}, idx.all, "node-9")] == ["node-9"]
