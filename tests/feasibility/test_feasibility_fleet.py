"""The fleet view's shortcuts change nothing: on generated clusters, judging with the counts (nodes
skipped, search branches cut) gives the same findings, explanations and allocations as searching
every node exhaustively."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint import source
from dralint.convert import to_canonical
from dralint.feasibility import FeasibilityOptions, judge, search
from dralint.index import Index
from dralint.manifest import NotAnObject, identify
from dralint.kube.releases import Release

from test_feasibility_search import CLASS, mini_cel

GATES = {"DRAPartitionableDevices": True, "DRADeviceTaints": True, "DRAPrioritizedList": True,
         "DRAConsumableCapacity": False}


def _objects(texts: list[str], cluster: bool) -> list:
    out = []
    for doc in source.load_text("\n---\n".join(texts), "gen.yaml").documents:
        for item in identify(doc, from_cluster=cluster):
            if not isinstance(item, NotAnObject) and item.api_version:
                out.append(to_canonical(item))
    return out


def both(cluster: list[str], linted: list[str], **options):
    """The report with the fleet's shortcuts and the one from the exhaustive search (searches cut
    from their first step, so that small clusters exercise the cuts too)."""
    out = []
    later, search.PRUNE_AFTER = search.PRUNE_AFTER, 0
    try:
        for exhaustive in (False, True):
            out.append(_judged(cluster, linted, exhaustive, **options))
    finally:
        search.PRUNE_AFTER = later
    return out


def _judged(cluster: list[str], linted: list[str], exhaustive: bool, **options):
    mine = _objects(linted, False)
    ids = {id(o) for o in mine}
    report = judge(Index.build(_objects(cluster, True) + mine), Release(37, GATES),
                   FeasibilityOptions(show_allocation=True, **options), lambda o: id(o) in ids,
                   evaluate=mini_cel, exhaustive=exhaustive)
    return ([(o.manifest.display, p.rule, str(p.path), p.message, json.dumps(p.details, sort_keys=True, default=str))
             for o, p in report.problems], report.allocations)


@st.composite
def device(draw, i: int, counters: bool):
    attrs: dict = {"numa": {"int": draw(st.integers(0, 1))}}
    if draw(st.booleans()):
        attrs["model"] = {"string": draw(st.sampled_from(["a", "b"]))}  # absent: selectors on it fail
    d: dict = {"name": f"d{i}", "attributes": attrs}
    if draw(st.integers(0, 4)) == 0:
        d["taints"] = [{"key": "k", "value": "v", "effect": draw(st.sampled_from(["NoSchedule", "None"]))}]
    if counters and draw(st.booleans()):
        d["consumesCounters"] = [{"counterSet": "cs", "counters": {"mem": {"value": f"{draw(st.integers(1, 3))}"}}}]
    return d


@st.composite
def cluster(draw):
    n_nodes = draw(st.integers(1, 4))
    objs = [CLASS]
    for n in range(n_nodes):
        objs.append(json.dumps({"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": f"node-{n}", "labels": {"zone": "a" if n % 2 else "b"}}}))
    uid = 0
    for n in range(n_nodes):
        if not draw(st.booleans()):
            continue
        counters = draw(st.booleans())
        devices = []
        for _ in range(draw(st.integers(0, 4))):
            devices.append(draw(device(uid, counters)))
            uid += 1
        slices = [{"nodeName": f"node-{n}", "devices": devices}]
        if counters:
            slices.append({"nodeName": f"node-{n}", "sharedCounters": [
                {"name": "cs", "counters": {"mem": {"value": f"{draw(st.integers(1, 5))}"}}}]})
        count = len(slices) + draw(st.sampled_from([0, 0, 0, 1]))  # sometimes a slice is missing
        for k, spec in enumerate(slices):
            spec.update(driver="gpu.example.com", pool={"name": f"p{n}", "generation": 1, "resourceSliceCount": count})
            objs.append(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                    "metadata": {"name": f"s{n}-{k}"}, "spec": spec}))
    if draw(st.booleans()):
        devices = [draw(device(uid + i, False)) for i in range(draw(st.integers(1, 3)))]
        where = draw(st.sampled_from([{"allNodes": True},
                                      {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                                          {"key": "zone", "operator": "In", "values": ["a"]}]}]}}]))
        objs.append(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                "metadata": {"name": "shared"}, "spec": {
                                    "driver": "gpu.example.com", "devices": devices,
                                    "pool": {"name": "shared", "generation": 1, "resourceSliceCount": 1}, **where}}))
    held = draw(st.lists(st.tuples(st.integers(0, n_nodes - 1), st.integers(0, 4)), max_size=3))
    if held:
        objs.append(held_claim(held))
    return objs


def held_claim(held: list[tuple[int, int]]) -> str:
    """An allocated claim holding device ``d{i}`` of pool ``p{n}`` for each (n, i)."""
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": "held", "namespace": "default"},
                       "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
                       "status": {"allocation": {"devices": {"results": [
                           {"request": "r", "driver": "gpu.example.com", "pool": f"p{n}", "device": f"d{i}"}
                           for n, i in held]}}}})


SELECTORS = ['device.attributes["gpu.example.com"].model == "a"', 'device.attributes["gpu.example.com"].numa == 1']


@st.composite
def request(draw, name: str):
    def exact() -> dict:
        body: dict = {"deviceClassName": "gpu"}
        if draw(st.integers(0, 5)) == 0:
            body["allocationMode"] = "All"
        else:
            body["count"] = draw(st.integers(1, 3))
        if draw(st.booleans()):
            body["selectors"] = [{"cel": {"expression": draw(st.sampled_from(SELECTORS))}}]
        if draw(st.integers(0, 3)) == 0:
            body["tolerations"] = [{"key": "k", "operator": "Exists"}]
        return body
    if draw(st.integers(0, 3)) == 0:
        return {"name": name, "firstAvailable": [{"name": f"s{i}", **exact()} for i in range(2)]}
    return {"name": name, "exactly": exact()}


@st.composite
def claims(draw, most: int = 2):
    out = []
    names = []
    for c in range(draw(st.integers(1, most))):
        requests = [draw(request(f"r{i}")) for i in range(draw(st.integers(1, most)))]
        devices: dict = {"requests": requests}
        if draw(st.booleans()):
            scope = draw(st.sampled_from([[], [r["name"] for r in requests[:1]]]))
            devices["constraints"] = [{"matchAttribute": "gpu.example.com/numa", "requests": scope}]
        out.append(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                               "metadata": {"name": f"c{c}", "namespace": "default"}, "spec": {"devices": devices}}))
        names.append(f"c{c}")
    if len(names) > 1 or draw(st.booleans()):
        spec: dict = {"containers": [{"name": "x", "image": "x"}],
                      "resourceClaims": [{"name": n, "resourceClaimName": n} for n in names]}
        if draw(st.booleans()):
            spec["nodeSelector"] = {"zone": "a"}
        out.append(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment",
                               "metadata": {"name": "w", "namespace": "default"},
                               "spec": {"replicas": draw(st.integers(1, 2)), "template": {"spec": spec}}}))
    return out


# A few examples in the default suite; the slow suite runs many more.
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _shortcuts_change_nothing(state, mine, together):
    fleet, exhaustive = both(state, mine, together=together)
    assert fleet == exhaustive


test_fleet_shortcuts_change_nothing = FEW(given(cluster(), claims(), st.booleans())(_shortcuts_change_nothing))
test_fleet_shortcuts_change_nothing_at_length = pytest.mark.slow(
    MANY(given(cluster(), claims(), st.booleans())(_shortcuts_change_nothing)))


@st.composite
def one_node(draw):
    """One node with many devices: deep searches, where cutting branches matters."""
    counters = draw(st.booleans())
    devices = [draw(device(i, counters)) for i in range(draw(st.integers(2, 9)))]
    slices = [{"devices": devices}]
    if counters:
        slices.append({"sharedCounters": [{"name": "cs", "counters": {"mem": {"value": f"{draw(st.integers(2, 9))}"}}}]})
    objs = [CLASS]
    for k, spec in enumerate(slices):
        spec.update(driver="gpu.example.com", nodeName="node-0",
                    pool={"name": "p0", "generation": 1, "resourceSliceCount": len(slices)})
        objs.append(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                "metadata": {"name": f"s{k}"}, "spec": spec}))
    return objs


def _cuts_change_nothing(state, mine):
    fleet, exhaustive = both(state, mine)
    assert fleet == exhaustive


test_cutting_search_branches_changes_nothing = FEW(given(one_node(), claims(most=3))(_cuts_change_nothing))
test_cutting_search_branches_changes_nothing_at_length = pytest.mark.slow(
    MANY(given(one_node(), claims(most=3))(_cuts_change_nothing)))


def test_counts_skip_nodes_where_nothing_fits():
    nodes = [json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"}}) for i in range(50)]
    slices = [json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"s{i}"},
                          "spec": {"driver": "gpu.example.com", "nodeName": f"node-{i}",
                                   "pool": {"name": f"p{i}", "generation": 1, "resourceSliceCount": 1},
                                   "devices": [{"name": "d0", "attributes": {"numa": {"int": 0}}}]}})
              for i in range(50)]
    two = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                      "metadata": {"name": "two", "namespace": "default"},
                      "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", "count": 2}}]}}})
    trace_fleet, trace_all = [], []
    for exhaustive, lines in ((False, trace_fleet), (True, trace_all)):
        mine = _objects([two], False)
        report = judge(Index.build(_objects([CLASS] + nodes + slices, True) + mine), Release(37, GATES),
                       FeasibilityOptions(), lambda o: o is mine[0], evaluate=mini_cel, exhaustive=exhaustive)
        (p,) = [p for _, p in report.problems]
        lines.append(p.message)
    assert trace_fleet == trace_all
    assert "the class matches 50 devices on 50 nodes; no node has 2" in trace_fleet[0]
