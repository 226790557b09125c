"""Hall's condition in the pre-check (hall.py) and the "All cannot break the constraint" cut
(precheck.py) change nothing: on generated nodes whose requests of different kinds draw on the
same devices (with ``All`` requests, matchAttribute scopes, firstAvailable and, with consumable
capacity on, devices that may be allocated many times), judging with the shortcuts gives the same
findings, explanations and allocations as the exhaustive search."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint.feasibility import FeasibilityOptions, judge, search
from dralint.feasibility.hall import distinct_devices
from dralint.feasibility.model import read_claim
from dralint.feasibility.world import World
from dralint.index import Index
from dralint.kube.releases import Release

from test_feasibility_fleet import _objects, held_claim
from test_feasibility_search import mini_cel

SELECTORS = ['device.attributes["gpu.example.com"].model == "a"', 'device.attributes["gpu.example.com"].numa == 1',
             'device.attributes["gpu.example.com"].numa == 0']


def _gates(capacity: bool) -> dict:
    return {"DRAPartitionableDevices": True, "DRADeviceTaints": True, "DRAPrioritizedList": True,
            "DRAConsumableCapacity": capacity}


@st.composite
def nodes(draw):
    objs = [json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": n},
                        "spec": {"selectors": [{"cel": {"expression": e}}] if e else []}})
            for n, e in (("gpu", ""), ("gpu-a", SELECTORS[0]))]
    for n in range(draw(st.integers(1, 3))):
        devices = []
        for i in range(draw(st.integers(1, 6))):
            attrs: dict = {"model": {"string": draw(st.sampled_from(["a", "b"]))}}
            if draw(st.integers(0, 5)):
                attrs["numa"] = {"int": draw(st.integers(0, 1))}
            d: dict = {"name": f"d{i}", "attributes": attrs}
            if draw(st.integers(0, 4)) == 0:
                d["allowMultipleAllocations"] = True
            devices.append(d)
        objs.append(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                "metadata": {"name": f"s{n}"},
                                "spec": {"driver": "gpu.example.com", "nodeName": f"n{n}",
                                         "pool": {"name": f"p{n}", "generation": 1, "resourceSliceCount": 1},
                                         "devices": devices}}))
    held = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5)), max_size=2))
    if held:
        objs.append(held_claim(held))
    return objs


@st.composite
def claim(draw):
    def alt() -> dict:
        body: dict = {"deviceClassName": draw(st.sampled_from(["gpu", "gpu-a"]))}
        if draw(st.integers(0, 4)) == 0:
            body["allocationMode"] = "All"
        else:
            body["count"] = draw(st.integers(1, 3))
        if draw(st.booleans()):
            body["selectors"] = [{"cel": {"expression": draw(st.sampled_from(SELECTORS))}}]
        return body
    requests = []
    for i in range(draw(st.integers(2, 4))):
        if draw(st.integers(0, 3)) == 0:
            requests.append({"name": f"r{i}", "firstAvailable": [{"name": f"s{j}", **alt()} for j in range(2)]})
        else:
            requests.append({"name": f"r{i}", "exactly": alt()})
    devices: dict = {"requests": requests}
    if draw(st.booleans()):
        names = [r["name"] for r in requests]
        scope = draw(st.sampled_from([[], names[:2], names[1:]]))
        devices["constraints"] = [{"matchAttribute": "gpu.example.com/numa", "requests": scope}]
    return [json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                        "metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": devices}})]


def _judged(cluster: list[str], linted: list[str], exhaustive: bool, capacity: bool):
    mine = _objects(linted, False)
    ids = {id(o) for o in mine}
    report = judge(Index.build(_objects(cluster, True) + mine), Release(37, _gates(capacity)),
                   FeasibilityOptions(show_allocation=True), lambda o: id(o) in ids,
                   evaluate=mini_cel, exhaustive=exhaustive)
    return ([(o.manifest.display, p.rule, str(p.path), p.message, json.dumps(p.details, sort_keys=True, default=str))
             for o, p in report.problems], report.allocations)


def _same_as_exhaustive(state, mine, capacity):
    later, search.PRUNE_AFTER = search.PRUNE_AFTER, 0
    try:
        assert _judged(state, mine, False, capacity) == _judged(state, mine, True, capacity)
    finally:
        search.PRUNE_AFTER = later


FEW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

test_hall_changes_nothing = FEW(given(nodes(), claim(), st.booleans())(_same_as_exhaustive))
test_hall_changes_nothing_at_length = pytest.mark.slow(MANY(given(nodes(), claim(), st.booleans())(_same_as_exhaustive)))


def _world_and_claim(devices: list[dict], requests: list[dict], capacity: bool = False):
    cluster, linted = _slice_and_claim(devices, requests, [])
    index = Index.build(_objects(cluster, True) + _objects(linted, False))
    world = World.from_index(index, Release(37, _gates(capacity)), mini_cel, None, None)
    world.node_list()     # the nodes' slots (``order``) are worked out when first asked
    assert len(world.order) == 1, "the slice's node must be in the order, or the tests below prove nothing"
    return world, read_claim(next(iter(index.claims.values())), "default/c")


def test_requests_of_different_kinds_on_the_same_devices_are_refused_without_searching():
    # Three devices: "any 2" and "model a, 2" pass their counts one by one, but need 4 distinct.
    devices = [{"name": f"d{i}", "attributes": {"model": {"string": "a"}}} for i in range(3)]
    requests = [{"name": "any", "exactly": {"deviceClassName": "gpu", "count": 2}},
                {"name": "a", "exactly": {"deviceClassName": "gpu", "count": 2,
                                          "selectors": [{"cel": {"expression": SELECTORS[0]}}]}}]
    world, spec = _world_and_claim(devices, requests)
    assert distinct_devices(world.counts, [spec], world.order, False).tolist() == [False]
    # One more device and it may fit; a device allocated many times serves both requests.
    more = devices + [{"name": "d3", "attributes": {"model": {"string": "b"}}}]
    world, spec = _world_and_claim(more, requests)
    assert distinct_devices(world.counts, [spec], world.order, False).tolist() == [True]
    shared = devices[:2] + [{"name": "d2", "attributes": {"model": {"string": "a"}}, "allowMultipleAllocations": True}]
    world, spec = _world_and_claim(shared, requests, capacity=True)
    assert distinct_devices(world.counts, [spec], world.order, False).tolist() == [True]
    world, spec = _world_and_claim(shared, requests, capacity=False)
    assert distinct_devices(world.counts, [spec], world.order, False).tolist() == [False]


def test_all_requests_hold_their_devices_from_the_others():
    devices = [{"name": f"d{i}", "attributes": {"model": {"string": "ab"[i % 2]}}} for i in range(4)]
    requests = [{"name": "all-a", "exactly": {"deviceClassName": "gpu", "allocationMode": "All",
                                              "selectors": [{"cel": {"expression": SELECTORS[0]}}]}},
                {"name": "two", "exactly": {"deviceClassName": "gpu", "count": 2}}]
    world, spec = _world_and_claim(devices, requests)
    assert distinct_devices(world.counts, [spec], world.order, False).tolist() == [True]  # the two b devices
    requests[1]["exactly"]["count"] = 3
    world, spec = _world_and_claim(devices, requests)
    assert distinct_devices(world.counts, [spec], world.order, False).tolist() == [False]


def test_a_choice_taking_all_devices_leaves_them_free_for_the_next_choice():
    # The choices share the nodes' entries: the first ("all" of them, then one more: no) must not
    # take the devices away from the second (two, then one more: yes, with three devices).
    devices = [{"name": f"d{i}", "attributes": {"model": {"string": "a"}}} for i in range(3)]
    requests = [{"name": "first", "firstAvailable": [
                    {"name": "all", "deviceClassName": "gpu", "allocationMode": "All"},
                    {"name": "two", "deviceClassName": "gpu", "count": 2}]},
                {"name": "one", "exactly": {"deviceClassName": "gpu", "count": 1}}]
    for kept, fits in ((devices, [True]), (devices[:2], [False])):
        world, spec = _world_and_claim(kept, requests)
        assert distinct_devices(world.counts, [spec], world.order, False).tolist() == fits


def _slice_and_claim(devices: list[dict], requests: list[dict], constraints: list[dict]) -> tuple[list[str], list[str]]:
    cluster = [json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                           "spec": {}}),
               json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
                           "spec": {"driver": "gpu.example.com", "nodeName": "n0",
                                    "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                                    "devices": devices}})]
    linted = [json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                          "metadata": {"name": "c", "namespace": "default"},
                          "spec": {"devices": {"requests": requests, "constraints": constraints}}})]
    return cluster, linted


@pytest.mark.parametrize("numas, rule", [((0, 1), "DRA707"), ((1, 1), "DRA701")])
def test_all_request_breaking_its_constraint_is_searched_for_the_error(numas, rule):
    # The later request cannot be met on the node; the search meets the All request first, and
    # when its devices disagree on the matched attribute that is an error, not "does not fit".
    devices = [{"name": f"d{i}", "attributes": {"model": {"string": "a"}, "numa": {"int": n}}}
               for i, n in enumerate(numas)]
    requests = [{"name": "all", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}},
                {"name": "many", "exactly": {"deviceClassName": "gpu", "count": 5}}]
    cluster, linted = _slice_and_claim(devices, requests, [{"matchAttribute": "gpu.example.com/numa"}])
    fleet = _judged(cluster, linted, False, False)
    assert fleet == _judged(cluster, linted, True, False)
    assert [p[1] for p in fleet[0]] == [rule]
