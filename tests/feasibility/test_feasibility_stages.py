"""The stage counts of an explanation are worked out from what the class matches (kept per class)
and then from what the selectors leave: they must be the counts taken over the whole fleet, and
the same whatever was asked before them."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np

from dralint.feasibility.columns import TRUE
from dralint.feasibility.model import Alternative, read_claim
from dralint.feasibility.nodes import NodeSet
from dralint.feasibility.stages import Stages, StageCounter
from dralint.feasibility.world import World
from dralint.index import Index
from dralint.kube.releases import Release

from test_feasibility_fleet import _objects, held_claim
from test_feasibility_search import CLASS, _class, mini_cel

BIG = 'device.attributes["gpu.example.com"].memory >= 80'
SMALL = 'device.attributes["gpu.example.com"].memory < 90'


def _slice(n: int, memories: list[int], **spec) -> str:
    devices = [{"name": f"d{i}", "attributes": {"memory": {"int": m}}} for i, m in enumerate(memories)]
    body = {"driver": "gpu.example.com", "pool": {"name": f"p{n}", "generation": 1, "resourceSliceCount": 1},
            "devices": devices, **(spec or {"nodeName": f"node-{n}"})}
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                       "metadata": {"name": f"s{n}"}, "spec": body})


def _node(n: int) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{n}"}})


def _request(name: str, cls: str, selectors: tuple[str, ...] = (), admin: bool = False) -> dict:
    exactly: dict = {"deviceClassName": cls, "count": 2}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if admin:
        exactly["adminAccess"] = True
    return {"name": name, "exactly": exactly}


REQUESTS = [_request("any", "gpu"), _request("big", "gpu", (BIG,)), _request("mid", "gpu", (BIG, SMALL)),
            _request("alike", "gpu-b", (BIG,)), _request("admin", "gpu", (BIG,), admin=True),
            _request("none", "fpga"), _request("all-pass", "gpu", ('device.driver == "gpu.example.com"',))]


def _world(shared: bool, held: bool = True) -> tuple[World, list[Alternative]]:
    cluster = [CLASS, _class("gpu-b", "gpu.example.com"), _class("fpga", "fpga.example.com"),
               *(_node(n) for n in range(3)), _slice(0, [40, 80, 80]), _slice(1, [80, 96]), _slice(2, [40]),
               *([held_claim([(0, 1), (1, 0)])] if held else [])]
    if shared:   # one pool every node reaches: its devices have an entry on each node
        cluster.append(_slice(9, [80, 85], allNodes=True))
    claim = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                        "metadata": {"name": "c", "namespace": "default"},
                        "spec": {"devices": {"requests": REQUESTS}}})
    index = Index.build(_objects(cluster, True) + _objects([claim], False))
    world = World.from_index(index, Release(37, {"DRAAdminAccess": True}), mini_cel, by_name=True)
    spec = read_claim(index.claims[("default", "c")], "default/c")
    return world, [alt for r in spec.requests for alt in r.alternatives]


def _everywhere(world: World) -> NodeSet:
    nodes = world.node_list()
    return NodeSet(nodes, world.order, world.unusable_slots()[world.order], "everywhere", Counter())


def _over_the_fleet(world: World, alt: Alternative, nodes: NodeSet) -> dict[str, list[int]]:
    """The first three stages' counts per node, from masks over every entry of the fleet."""
    slot, uid, here = world.counts.flat()
    place = np.full(world.slot_count, -1, np.int64)
    place[nodes.slots] = np.arange(len(nodes.nodes))
    position = place[slot]
    cls = (world.counts.selected(alt, ())[uid] == TRUE) & (position >= 0) & here
    sel = cls & (world.counts.selected(alt, alt.selectors)[uid] == TRUE)
    free = sel if alt.admin else sel & ~world.held[uid]
    size = len(nodes.nodes)
    return {name: np.bincount(position[mask], minlength=size).tolist()
            for name, mask in (("class", cls), ("selectors", sel), ("free", free))}


def _plain(st: Stages) -> tuple:
    return ([(name, counts.tolist()) for name, counts in st.counts], st.distinct, st.survivors, st.blocked,
            st.per_selector, st.holders, st.absent, st.counters_note, st.need)


def test_stage_counts_are_those_of_the_whole_fleet_whatever_was_asked_before():
    for shared in (False, True):
        world, alts = _world(shared)
        nodes = _everywhere(world)
        assert world.held.any(), "a device must be held, or the free stage proves nothing"
        kept = StageCounter(world, world.counts)
        for alt in alts + alts[::-1]:      # the second time round, every class is known, and every filter
            st = kept.stages(alt, nodes)
            whole = _over_the_fleet(world, alt, nodes)
            assert {name: counts.tolist() for name, counts in st.counts[:3]} == whole, alt.full_name
            assert _plain(st) == _plain(StageCounter(world, world.counts).stages(alt, nodes)), alt.full_name
            assert st.alt is alt


def test_classes_that_select_differently_do_not_share_what_they_match():
    world, alts = _world(False)
    nodes = _everywhere(world)
    counter = StageCounter(world, world.counts)
    by_name = {alt.full_name: alt for alt in alts}
    gpu = counter.stages(by_name["any"], nodes)
    fpga = counter.stages(by_name["none"], nodes)
    assert gpu.distinct["class"] == 6 and fpga.distinct["class"] == 0
    # Alike classes share it; the devices the selectors leave are still the request's own.
    big, alike = counter.stages(by_name["big"], nodes), counter.stages(by_name["alike"], nodes)
    assert big.counts[0][1] is alike.counts[0][1] and alike.alt.class_name == "gpu-b"
    assert big.distinct == {"class": 6, "selectors": 4, "free": 2, "usable": 2}
    # Admin access takes held devices too: its free stage is the selectors' one.
    admin = counter.stages(by_name["admin"], nodes)
    assert admin.distinct["free"] == 4 and admin.counts[2][1] is admin.counts[1][1]


def test_a_stage_that_leaves_everything_shares_the_counts_of_the_one_before():
    world, alts = _world(False)
    nodes = _everywhere(world)
    counter = StageCounter(world, world.counts)
    st = counter.stages(next(a for a in alts if a.full_name == "all-pass"), nodes)
    assert st.counts[1][1] is st.counts[0][1]
    assert st.counts[2][1] is not st.counts[1][1]     # two devices are held
    assert st.distinct["free"] == 4


def test_alternatives_that_share_counts_share_what_their_details_say():
    from dralint.feasibility.explain import _details, _top_nodes
    world, alts = _world(False)
    nodes = _everywhere(world)
    counter = StageCounter(world, world.counts)
    by_name = {alt.full_name: alt for alt in alts}
    big, alike, plain = (counter.stages(by_name[n], nodes) for n in ("big", "alike", "any"))
    assert big.told is alike.told and big.told is not plain.told
    details = _details([big, alike, plain])
    assert set(details) == {"big", "alike", "any"}
    assert details["big"]["per_node"] == details["alike"]["per_node"] == _top_nodes(big)
    assert details["any"]["per_node"] == _top_nodes(plain) != details["big"]["per_node"]
    # Told again (kept counts, an alternative asked anew), the details are the same.
    assert _details([counter.stages(by_name["big"], nodes)]) == {"big": details["big"]}


def test_a_taint_refuses_devices_at_the_usable_stage_whether_or_not_any_is_held():
    # Nothing held is the common case: the free stage is then the selectors' own; a refused device
    # still leaves the usable stage, and a held one the free stage.
    def tainted(n: int, count: int) -> str:
        devices: list[dict] = [{"name": f"d{i}", "attributes": {"memory": {"int": 80}}} for i in range(count)]
        devices[0]["taints"] = [{"key": "broken", "value": "yes", "effect": "NoSchedule"}]
        return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"s{n}"},
                           "spec": {"driver": "gpu.example.com", "nodeName": f"node-{n}", "devices": devices,
                                    "pool": {"name": f"p{n}", "generation": 1, "resourceSliceCount": 1}}})

    claim = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                        "metadata": {"name": "c", "namespace": "default"},
                        "spec": {"devices": {"requests": [_request("any", "gpu")]}}})
    for held, free in (([], [3, 2]), ([(0, 2)], [2, 2])):
        cluster = [CLASS, _node(0), _node(1), tainted(0, 3), tainted(1, 2), *([held_claim(held)] if held else [])]
        index = Index.build(_objects(cluster, True) + _objects([claim], False))
        world = World.from_index(index, Release(37, {"DRADeviceTaints": True}), mini_cel, by_name=True)
        alt = read_claim(index.claims[("default", "c")], "default/c").requests[0].alternatives[0]
        st = StageCounter(world, world.counts).stages(alt, _everywhere(world))
        assert [(name, counts.tolist()) for name, counts in st.counts] == [
            ("class", [3, 2]), ("selectors", [3, 2]), ("free", free), ("usable", [n - 1 for n in free])]
        assert st.blocked == Counter({"have taint `broken=yes:NoSchedule` that the request does not tolerate": 2})
        assert st.distinct["usable"] == sum(free) - 2


def test_kept_counts_weigh_at_least_what_deep_size_finds_in_their_keys():
    # The keys are weighed by summing their parts, not walked: the sum must not fall below the walk,
    # with long selectors, tolerations and capacity requests as with none.
    from dralint.feasibility.counts import filter_key
    from dralint.sizes import deep_size
    world, alts = _world(False)
    nodes = _everywhere(world)
    counter = StageCounter(world, world.counts)
    long_alt = Alternative(**{**alts[1].__dict__, "selectors": ("x" * 10_000,) * 3})
    heavy = Alternative(**{**alts[1].__dict__, "tolerations": ({"key": "k" * 500, "operator": "Exists"},),
                           "capacity": {"memory": 10 ** 12}})
    for alt in (alts[0], alts[1], long_alt, heavy):
        asked = filter_key(alt, world.classes[alt.class_name].selectors)
        key = (asked, nodes.key, 1, 123456789, 0)
        st = counter.stages(alts[0], nodes)
        arrays = sum({id(c): c.nbytes for _, c in st.counts}.values())
        assert counter._stages._weigh(key, st) >= arrays + deep_size(key), alt.full_name
    match = counter.class_match(alts[1], nodes)
    key = (("y" * 5_000,) * 4, nodes.key, 1, 0)
    assert counter._classes._weigh(key, match) >= match.entries.nbytes + match.per_node.nbytes + deep_size(key)


def test_requests_whose_every_stage_is_the_class_s_share_what_the_details_say():
    from dralint.feasibility.explain import _details
    for held in (True, False):
        world, alts = _world(True, held)
        nodes = _everywhere(world)
        counter = StageCounter(world, world.counts)
        by_name = {alt.full_name: alt for alt in alts}
        for name in ("any", "all-pass", "big"):
            st = counter.stages(by_name[name], nodes)
            everything = all(counts is st.counts[0][1] for _, counts in st.counts)
            # Held devices leave the free stage, a selector the selectors' one: then the details are the request's.
            assert everything == (not held and name != "big"), (held, name)
            assert (st.told is counter.class_match(by_name[name], nodes).told) == everything
            details = _details([st])
            # The same as worked out on counts kept apart from the class's.
            alone = counter.stages(by_name[name], nodes)
            alone.told = {}
            alone.counts = [(stage, counts.copy()) for stage, counts in alone.counts]
            assert details == _details([alone]), (held, name)
