"""A fleet view kept across changes judges like one built afresh.

The webhook builds its world once and then applies the cluster's changes to it (slices replaced
or removed, claims allocated or freed, nodes relabelled, classes edited), judging claims in
between: the counts, selector columns and node sets it keeps must follow every change. On
generated clusters and change sequences, each judgement of the kept world is compared with the
judgement of a world built from the objects as they are at that moment.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint.feasibility import FeasibilityOptions, Fleet, judge
from dralint.feasibility.explain import _top_nodes
from dralint.feasibility.nodes import NodeView
from dralint.feasibility.stages import Stages, name_ranks
from dralint.feasibility.world import World
from dralint.index import Index
from dralint.kube.releases import Release

from test_feasibility_fleet import GATES, _objects, claims, cluster, device
from test_feasibility_search import mini_cel

RELEASE = Release(37, GATES)
RV = "resource.k8s.io/v1"


def _key(text: str) -> tuple[str, str]:
    obj = json.loads(text) if text.lstrip().startswith("{") else None
    if obj is None:                      # the DeviceClass, written as YAML
        return ("DeviceClass", "/gpu")
    meta = obj["metadata"]
    return (obj["kind"], f"{meta.get('namespace', '')}/{meta['name']}")


@st.composite
def change(draw, n_nodes: int = 4):
    """One change of the cluster: (kind, name, new text or None for removed)."""
    what = draw(st.sampled_from(["slice", "slice", "drop", "claim", "free", "node", "class"]))
    n = draw(st.integers(0, n_nodes - 1))
    if what == "slice":
        devices = [draw(device(100 + i, False)) for i in range(draw(st.integers(0, 4)))]
        spec = {"driver": "gpu.example.com", "nodeName": f"node-{n}", "devices": devices,
                "pool": {"name": f"p{n}", "generation": 1, "resourceSliceCount": 1}}
        return ("ResourceSlice", f"/s{n}-0", json.dumps({"apiVersion": RV, "kind": "ResourceSlice",
                                                         "metadata": {"name": f"s{n}-0"}, "spec": spec}))
    if what == "drop":
        return ("ResourceSlice", f"/s{n}-{draw(st.integers(0, 1))}", None)
    if what in ("claim", "free"):
        name = f"held{draw(st.integers(0, 1))}"
        if what == "free":
            return ("ResourceClaim", f"default/{name}", None)
        results = [{"request": "r", "driver": "gpu.example.com", "pool": f"p{n}", "device": f"d{i}"}
                   for i in sorted(set(draw(st.lists(st.sampled_from([0, 1, 2, 3, 100, 101]), min_size=1,
                                                      max_size=3))))]
        return ("ResourceClaim", f"default/{name}", json.dumps({
            "apiVersion": RV, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": {"allocation": {"devices": {"results": results}}}}))
    if what == "node":
        if draw(st.booleans()):
            return ("Node", f"/node-{n}", None)
        return ("Node", f"/node-{n}", json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": f"node-{n}", "labels": {"zone": draw(st.sampled_from(["a", "b"]))}}}))
    selector = draw(st.sampled_from(['device.driver == "gpu.example.com"',
                                     'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"]'
                                     '.numa == 1']))
    return ("DeviceClass", "/gpu", json.dumps({"apiVersion": RV, "kind": "DeviceClass", "metadata": {"name": "gpu"},
                                               "spec": {"selectors": [{"cel": {"expression": selector}}]}}))


def _apply(world: World, kind: str, name: str, text: str | None) -> None:
    obj = _objects([text], True)[0] if text is not None else None
    short = name.split("/", 1)[1]
    if kind == "ResourceSlice":
        world.put_slice(obj) if obj is not None else world.drop_slice(short)
    elif kind == "ResourceClaim":
        world.put_claim(obj, ("default", short))
    elif kind == "Node":
        world.put_node(short, obj.value if obj is not None else None)
    else:
        world.put_class(obj) if obj is not None else world.drop_class(short)


def _judged(state: dict, linted: list[str], world: World | None):
    mine = _objects(linted, False)
    ids = {id(o) for o in mine}
    index = Index.build(_objects(list(state.values()), True) + mine)
    if world is None:
        world = World.from_index(index, RELEASE, mini_cel, by_name=True)
    report = judge(index, RELEASE, FeasibilityOptions(show_allocation=True), lambda o: id(o) in ids,
                   evaluate=mini_cel, fleet=Fleet(world))
    return ([(o.manifest.display, p.rule, str(p.path), p.message, json.dumps(p.details, sort_keys=True, default=str))
             for o, p in report.problems], report.allocations)


def _node_facts(world: World) -> tuple:
    """What the questions over every node see, by node name (slots differ between worlds)."""
    nodes = world.node_list()
    unusable = world.unusable_slots()
    return ([n.name for n in nodes], [bool(unusable[world.slot_of(n)]) for n in nodes],
            list(dict.fromkeys(p.key for p in world.unusable_pools())), [n.name for n in world.failing_nodes()])


def _kept_like_fresh(objects, linted, changes):
    state = {_key(t): t for t in objects}
    kept = World.from_index(Index.build(_objects(list(state.values()), True)), RELEASE, mini_cel, by_name=True)
    assert _judged(state, linted, kept) == _judged(state, linted, None)
    for kind, name, text in changes:
        if text is None:
            state.pop((kind, name), None)
        else:
            state[(kind, name)] = text
        _apply(kept, kind, name, text)
        assert _judged(state, linted, kept) == _judged(state, linted, None)
        fresh = World.from_index(Index.build(_objects(list(state.values()), True)), RELEASE, mini_cel, by_name=True)
        assert _node_facts(kept) == _node_facts(fresh)   # kept per node, updated for the changed ones only


_CASES = given(cluster(), claims(), st.lists(change(), min_size=1, max_size=6))
test_a_kept_world_judges_like_a_fresh_one = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])(_CASES(_kept_like_fresh))
test_a_kept_world_judges_like_a_fresh_one_at_length = pytest.mark.slow(settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])(_CASES(_kept_like_fresh)))


def _top_by_sorting(st_: Stages) -> dict:
    """What the explanation's per-node details are: every node with a non-zero stage, sorted."""
    per_node: dict[str, dict[str, int]] = {}
    for stage, counts in st_.counts:
        for node, n in zip(st_.nodes, counts):
            if n:
                per_node.setdefault(node.name, {})[stage] = int(n)
    return dict(sorted(per_node.items(), key=lambda kv: (-kv[1].get("usable", 0), kv[0]))[:20])


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60), st.integers(0, 3), st.data())
def test_the_nodes_shown_are_those_a_full_sort_shows(real, placeholders, data):
    nodes = [NodeView(f"node-{i:03d}") for i in range(real)]
    nodes += [NodeView(f"<a node matching selector {i + 1}>", assumed_selectors=frozenset({str(i)}))
              for i in range(placeholders)]
    # Nodes out of name order, names that sort before or after a placeholder's: the order shown is
    # still by name.
    nodes = data.draw(st.permutations(nodes))
    nodes += [NodeView(name) for name in data.draw(st.lists(st.sampled_from(["0-first", "a", "zz"]), unique=True))]
    if not nodes:
        return
    size = len(nodes)
    usable = np.array(data.draw(st.lists(st.integers(0, 2), min_size=size, max_size=size)), np.int64)
    free = usable + np.array(data.draw(st.lists(st.integers(0, 1), min_size=size, max_size=size)), np.int64)
    stages = Stages(alt=None, need=1, nodes=nodes, name_ranks=name_ranks(nodes),  # type: ignore[arg-type]
                    counts=[("class", free), ("selectors", free), ("free", free), ("usable", usable)])
    shown = _top_nodes(stages)
    assert shown == _top_by_sorting(stages) and list(shown) == list(_top_by_sorting(stages))



def test_counts_kept_in_step_are_counted_again_when_a_node_outgrows_their_type(monkeypatch):
    # Counts per node take the narrowest integer type that holds the most entries a node has (int16
    # for real fleets). A node that comes to hold more (a label now matches a slice's node selector)
    # has the counts kept so far counted again, in a wider type.
    from dralint.feasibility import counts as counts_module
    monkeypatch.setattr(counts_module, "_NARROW_MOST", 3)

    def node(name: str, zone: str) -> str:
        return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": zone}}})

    def gpus(name: str, count: int, where: dict) -> str:
        devices = [{"name": f"{name}-{i}"} for i in range(count)]
        return json.dumps({"apiVersion": RV, "kind": "ResourceSlice", "metadata": {"name": name},
                           "spec": {"driver": "gpu.example.com", "devices": devices, **where,
                                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}}})

    wants_four = json.dumps({"apiVersion": RV, "kind": "ResourceClaim", "metadata": {"name": "four", "namespace": "default"},
                             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu",
                                                                                         "count": 4}}]}}})
    cls = json.dumps({"apiVersion": RV, "kind": "DeviceClass", "metadata": {"name": "gpu"},
                      "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})
    state = {("DeviceClass", "/gpu"): cls, ("Node", "/node-0"): node("node-0", "b"), ("Node", "/node-1"): node("node-1", "a"),
             ("ResourceSlice", "/own"): gpus("own", 1, {"nodeName": "node-0"}),
             ("ResourceSlice", "/zone-a"): gpus("zone-a", 3, {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                 {"key": "zone", "operator": "In", "values": ["a"]}]}]}})}
    kept = World.from_index(Index.build(_objects(list(state.values()), True)), RELEASE, mini_cel, by_name=True)
    before = _judged(state, [wants_four], kept)
    assert [rule for _, rule, *_ in before[0]] == ["DRA701"] and kept.counts.count_type() is np.int16
    state[("Node", "/node-0")] = node("node-0", "a")
    _apply(kept, "Node", "/node-0", state[("Node", "/node-0")])
    after = _judged(state, [wants_four], kept)
    assert after == _judged(state, [wants_four], None) and after[0] == [] and after[1]
    assert kept.counts.count_type() is np.int32
    assert {fc.sel.dtype for fc in kept.counts._filters._entries.values()} == {np.dtype(np.int32)}
