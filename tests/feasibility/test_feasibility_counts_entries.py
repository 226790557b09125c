"""The filter counts' shortcuts against counting every entry of the fleet.

Where every device is an entry of one node, the counts read each selected device's entry off a map
from device to entry; where a slice's devices are seen by several nodes (a node selector), they go
through every entry. Both must count what a pass over every entry counts. The per-value counts are
kept a row per value: each cell is the devices of that value on that node. And reading per-node
arrays without a gather is only for the nodes that are every slot in order.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from dralint.feasibility.columns import TRUE
from dralint.feasibility.counts import Counts
from dralint.feasibility.hall import distinct_devices
from dralint.feasibility.model import Alternative, read_claim
from dralint.feasibility.precheck import must_search
from dralint.feasibility.world import World
from dralint.index import Index
from dralint.kube.releases import Release
from dralint.paths import FieldPath

from test_feasibility_fleet import GATES, _objects
from test_feasibility_search import mini_cel

RV = "resource.k8s.io/v1"
NUMA = "gpu.example.com/numa"
CLASS = json.dumps({"apiVersion": RV, "kind": "DeviceClass", "metadata": {"name": "gpu"},
                    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})
ZONE_A = {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "zone", "operator": "In", "values": ["a"]}]}]}}


def _node(name: str, zone: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": zone}}})


def _slice(name: str, numas: list[int | None], where: dict) -> str:
    devices = [{"name": f"{name}-{i}", "attributes": {} if numa is None else {"numa": {"int": numa}}}
               for i, numa in enumerate(numas)]
    return json.dumps({"apiVersion": RV, "kind": "ResourceSlice", "metadata": {"name": name},
                       "spec": {"driver": "gpu.example.com", "devices": devices, **where,
                                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}}})


def _other_driver(name: str, node: str) -> str:
    return json.dumps({"apiVersion": RV, "kind": "ResourceSlice", "metadata": {"name": name},
                       "spec": {"driver": "nic.example.com", "devices": [{"name": f"{name}-0"}], "nodeName": node,
                                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}}})


def _world(shared: bool) -> World:
    nowhere = {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["c"]}]}]}}
    texts = [CLASS, _node("node-0", "a"), _node("node-1", "b"), _node("node-2", "a"),
             _slice("a-nowhere", [5], nowhere),           # a device on no node
             _slice("own-0", [0, 1, 1], {"nodeName": "node-0"}), _other_driver("nic-1", "node-1"),
             _slice("own-1", [2, None], {"nodeName": "node-1"}), _slice("own-2", [0], {"nodeName": "node-2"})]
    if shared:   # seen by node-0 and node-2: one device, two entries
        texts.append(_slice("zone-a", [1, 1, 3], ZONE_A))
    return World.from_index(Index.build(_objects(texts, True)), Release(37, GATES), mini_cel, by_name=True)


def _alt(count: int = 1) -> Alternative:
    return Alternative("r", "", "gpu", (), "ExactCount", count, None, (), None, False, FieldPath(()))


def _counted(shared: bool):
    """The world (kept by the caller: the counts know their world by a weak reference), its counts,
    and the filter of a plain request counted."""
    world = _world(shared)
    fc = world.counts.get(_alt())
    assert fc is not None
    return world, world.counts, fc


@pytest.mark.parametrize("shared", [False, True])
def test_filter_counts_and_entries_are_those_of_every_entry(shared):
    world, counts, fc = _counted(shared)
    slot, uid, here = counts.flat()
    # Both ways of finding the entries are taken (with a device that is no entry at all).
    assert (counts._home is None) == shared and (shared or counts._home.gaps)
    every = np.flatnonzero((fc.dev_sel[uid] == TRUE) & here)
    assert sorted(counts.entries(fc)) == list(every) and len(every) == (12 if shared else 6)
    assert list(fc.sel) == list(np.bincount(slot[every], minlength=len(fc.sel)))


@pytest.mark.parametrize("shared", [False, True])
def test_per_value_counts_count_each_value_on_each_node(shared):
    world, counts, fc = _counted(shared)
    slot, uid, here = counts.flat()
    ids, nvals = counts.value_ids(NUMA)
    per_value, most = counts.by_value(_alt(), NUMA), counts.most_of_one_value(_alt(), NUMA)
    assert per_value is not None and most is not None and per_value.shape == (nvals, len(fc.sel))
    for s in range(len(fc.sel)):
        on_node = [ids[u] for p, u in enumerate(uid) if slot[p] == s and here[p] and fc.dev_sel[u] == TRUE]
        assert [int(n) for n in per_value[:, s]] == [on_node.count(v) for v in range(nvals)]
        assert most[s] == max((on_node.count(v) for v in range(nvals)), default=0)


def test_only_every_slot_in_order_is_read_without_a_gather():
    world = _world(True)
    counts: Counts = world.counts
    size = counts.world.slot_count
    every = np.arange(size)
    assert counts.everywhere(every) and counts.everywhere(every)     # the second time: the same array
    assert counts.everywhere(np.arange(size))
    assert not counts.everywhere(every[::-1].copy()) and not counts.everywhere(every[1:])


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("take_all", [True, False])
def test_the_precheck_answers_per_node_in_the_order_asked(quick, take_all):
    # node-1 has 2 devices for 3; node-2 has 4, at most 2 of one numa (which only the full pass
    # sees); with "All" under the constraint, node-0 holds devices of several values (an error).
    world = _world(True)
    counts = world.counts
    requests = [{"name": "three", "exactly": {"deviceClassName": "gpu", "count": 3}}]
    if take_all:
        requests.append({"name": "all", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}})
    text = json.dumps({"apiVersion": RV, "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
                       "spec": {"devices": {"requests": requests, "constraints": [{"matchAttribute": NUMA}]}}})
    claim = read_claim(_objects([text], True)[0], "default/c")
    every = np.arange(counts.world.slot_count)
    unusable = np.zeros(len(every), bool)
    forwards = must_search(counts, [claim], every, unusable, quick=quick)
    backwards = must_search(counts, [claim], every[::-1].copy(), unusable, quick=quick)
    names = [n.name for n in world.node_list()]
    assert [names[s] for s in np.flatnonzero(forwards)] == \
        (["node-0", "node-2"] if quick else ["node-0"])
    assert list(backwards) == list(forwards[::-1])


@pytest.mark.parametrize("shared", [False, True])
def test_a_filters_entries_are_its_own_with_and_without_the_selectors_answers_kept(shared):
    # The selected devices are read off the kept answers of the selectors, or off the uids they leave
    # when those answers were let go: a filter asking numa 1 gets its own entries either way.
    world = _world(shared)
    counts = world.counts
    slot, uid, here = counts.flat()
    one = Alternative("r", "", "gpu", ('device.attributes["gpu.example.com"].numa == 1',), "ExactCount", 1, None, (),
                      None, False, FieldPath(()))
    for alt in (_alt(), one, _alt(), one):
        fc = counts.get(alt)
        assert fc is not None
        every = np.flatnonzero((fc.dev_sel[uid] == TRUE) & here)
        for dropped in (False, True):
            if dropped:
                world.selection.drop_caches()
            assert sorted(counts.entries(fc)) == list(every)
    assert len(counts.entries(counts.get(one))) == (6 if shared else 2)


@pytest.mark.parametrize("shared", [False, True])
def test_hall_counted_for_some_nodes_answers_as_for_each_alone(shared):
    # The tables have a row per node asked, in the order asked; entries_of gives every node's entries
    # when asked for many, and those of the nodes not asked must not be counted for any.
    world = _world(shared)
    counts = world.counts
    requests = [{"name": "a", "exactly": {"deviceClassName": "gpu", "count": 1}},
                {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "gpu", "count": 2},
                                                 {"name": "y", "deviceClassName": "gpu", "count": 1}]}]
    differ = False
    for constraints in ([], [{"matchAttribute": NUMA}]):
        text = json.dumps({"apiVersion": RV, "kind": "ResourceClaim",
                           "metadata": {"name": "c", "namespace": "default"},
                           "spec": {"devices": {"requests": requests, "constraints": constraints}}})
        claim = read_claim(_objects([text], True)[0], "default/c")
        size = counts.world.slot_count
        alone = [bool(distinct_devices(counts, [claim], np.array([s]), False)[0]) for s in range(size)]
        differ |= alone != [alone[0]] * size
        for slots in ([0], [2, 0], [1, 2], [2, 1, 0], list(range(size))):
            asked = distinct_devices(counts, [claim], np.array(slots), False)
            assert asked.tolist() == [alone[s] for s in slots]
    assert differ      # some nodes fit and some do not
