"""The allocator's search, grouping and explanations on small hand-written clusters.

Selectors here run through ``mini_cel``, a test evaluator for ``a && b`` of simple comparisons, so
these tests pin the algorithm independently of the CEL engine.
"""
from __future__ import annotations

import json
import re

from dralint import source
from dralint.convert import to_canonical
from dralint.feasibility import FeasibilityOptions, Fleet, judge
from dralint.feasibility.model import Device, nanos
from dralint.feasibility.selection import SelectorError, names_read
from dralint.feasibility.world import World
from dralint.index import Index
from dralint.manifest import NotAnObject, identify
from dralint.kube.releases import Release

_ATTR = re.compile(r'^device\.(attributes|capacity)\["([^"]+)"\]\.(\w+)\s*(.*)$')


def _lookup(device: Device, table: str, domain: str, name: str):
    items = device.attributes if table == "attributes" else device.capacity
    for key, value in items.items():
        dom, _, short = key.rpartition("/")
        if (dom or device.key[0]) == domain and short == name:
            if table == "capacity":
                return value.value
            return next(value[k] for k in ("int", "bool", "string", "version") if k in value)
    raise SelectorError(f"CEL runtime error: no such key: {name}")


def mini_cel(expression: str, device: Device) -> bool:
    """``device.driver == "x"``, ``device.attributes["d"].a == v`` / ``< v`` / ``>= v``, and
    ``device.capacity["d"].c.compareTo(quantity("q")) >= 0``, joined by ``&&``."""
    for atom in (a.strip() for a in expression.split("&&")):
        m = re.fullmatch(r'device\.driver == "([^"]*)"', atom)
        if m:
            if device.key[0] != m.group(1):
                return False
            continue
        m = _ATTR.match(atom)
        assert m, atom
        value = _lookup(device, m.group(1), m.group(2), m.group(3))
        rest = m.group(4)
        q = re.fullmatch(r'\.compareTo\(quantity\("([^"]+)"\)\) >= 0', rest)
        if q:
            ok = value >= nanos(q.group(1))
        else:
            op, lit = re.fullmatch(r"(==|<|>=) (.+)", rest).groups()
            want = json.loads(lit)
            ok = {"==": value == want, "<": value < want, ">=": value >= want}[op]
        if not ok:
            return False
    return True


CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
"""


def node_slice(node: str, devices: list[dict], extra: dict | None = None) -> str:
    spec = {"driver": "gpu.example.com", "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}
    spec.update(extra or {})
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                       "metadata": {"name": f"{node}-gpus"}, "spec": spec})


def gpus(n: int, **attrs) -> list[dict]:
    return [{"name": f"gpu-{i}", "attributes": {k: ({"int": v} if isinstance(v, int) else {"string": v})
                                                for k, v in attrs.items()}} for i in range(n)]


def claim(name: str, requests: list[dict], constraints: list[dict] | None = None, kind: str = "ResourceClaim") -> str:
    devices: dict = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    spec = {"devices": devices}
    if kind == "ResourceClaimTemplate":
        spec = {"spec": spec}
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": kind,
                       "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def req(name: str = "gpu", count: int = 1, selectors: tuple[str, ...] = (), **extra) -> dict:
    exactly = {"deviceClassName": "gpu", "count": count, **extra}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def pod(name: str, claims: list[str], templates: tuple[str, ...] = ()) -> str:
    entries = [{"name": c, "resourceClaimName": c} for c in claims]
    entries += [{"name": t, "resourceClaimTemplateName": t} for t in templates]
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                       "spec": {"containers": [{"name": "c", "image": "x"}], "resourceClaims": entries}})


def run(cluster: list[str], linted: list[str], gates: dict | None = None, *, nodes_listed: bool = False, **options):
    """Judge ``linted`` against ``cluster``; ``nodes_listed``: in a world that knows the whole node list
    (the webhook's watch), even when the cluster has no Node."""
    objs, mine = [], set()
    for texts, is_cluster in ((cluster, True), (linted, False)):
        for doc in source.load_text("\n---\n".join(texts), "x.yaml").documents:
            for item in identify(doc, from_cluster=is_cluster):
                if not isinstance(item, NotAnObject) and item.api_version:
                    c = to_canonical(item)
                    objs.append(c)
                    if not is_cluster:
                        mine.add(id(c))
    index, release = Index.build(objs), Release(37, gates or {})
    fleet = Fleet(World.from_index(index, release, mini_cel, by_name=True, nodes_listed=True)) if nodes_listed else None
    return judge(index, release, FeasibilityOptions(**options), lambda o: id(o) in mine, evaluate=mini_cel,
                 fleet=fleet)


def messages(report, rule: str = "DRA701") -> list[str]:
    return [p.message for _, p in report.problems if p.rule == rule]


def test_node_local_devices_do_not_combine_across_nodes():
    report = run([CLASS, node_slice("node-a", gpus(1)), node_slice("node-b", gpus(1))], [claim("two", [req(count=2)])])
    (msg,) = messages(report)
    assert "the class matches 2 devices on 2 nodes" in msg and "no node has 2" in msg


def test_a_device_every_node_reaches_is_counted_once():
    nodes = [json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}}) for i in range(3)]
    shared = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "shared"},
                         "spec": {"driver": "gpu.example.com", "allNodes": True,
                                  "pool": {"name": "shared", "generation": 1, "resourceSliceCount": 1},
                                  "devices": [{"name": "g0", "taints": [{"key": "k", "value": "v",
                                                                         "effect": "NoSchedule"}]}]}})
    report = run([CLASS, *nodes, shared], [claim("one", [req()])], {"DRADeviceTaints": True})
    (msg,) = messages(report)
    assert ": 1 device reachable from 3 nodes matches and is free, but 1 has taint `k=v:NoSchedule`" in msg
    (_, problem), = report.problems
    assert problem.details["requests"]["gpu"]["totals"] == {"class": 1, "selectors": 1, "free": 1, "usable": 0}
    (msg,) = messages(run([CLASS, *nodes, shared], [claim("two", [req(count=2)])]))
    assert msg.endswith("the class matches 1 device reachable from 3 nodes; no node has 2")


def _class(name: str, driver: str) -> str:
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                       "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})


def test_classes_that_select_alike_share_counts_and_keep_their_names():
    # The explanation's stage counts are kept by what a class selects: "gpu-b" is counted as "gpu"
    # was, and each message still names the class its claim asked for.
    cluster = [CLASS, _class("gpu-b", "gpu.example.com"), node_slice("node-a", gpus(1))]
    claims = [claim("one", [req(count=2)]), claim("two", [req(count=2, deviceClassName="gpu-b")])]
    report = run(cluster, claims)
    assert sorted(messages(report)) == [
        f"claim default/{name} cannot be allocated: request `gpu` needs 2 devices of class `{cls}`: "
        "the class matches 1 device on 1 node; no node has 2" for name, cls in (("one", "gpu"), ("two", "gpu-b"))]


def test_classes_that_select_differently_are_counted_apart():
    # Same request, same names but for the class: a class of another driver matches none of the devices.
    cluster = [CLASS, _class("fpga", "fpga.example.com"), node_slice("node-a", gpus(1))]
    claims = [claim("one", [req(count=2)]), claim("two", [req(count=2, deviceClassName="fpga")])]
    report = run(cluster, claims)
    one, two = sorted(messages(report))
    assert one.endswith("the class matches 1 device on 1 node; no node has 2")
    assert two.endswith("of class `fpga`: the class matches no device in a usable pool")


def test_selector_explanation_names_the_devices_left():
    sel = 'device.attributes["gpu.example.com"].memory >= 80'
    cluster = [CLASS, node_slice("node-a", gpus(2, memory=40)),
               node_slice("node-b", [{"name": "gpu-3", "attributes": {"memory": {"int": 80}}}])]
    report = run(cluster, [claim("big", [req(count=2, selectors=(sel,))])])
    (msg,) = messages(report)
    assert "the selector leaves 1 (node-b/gpu-3); no node has 2" in msg
    second = 'device.attributes["gpu.example.com"].memory < 90'
    two = run(cluster, [claim("big", [req(count=2, selectors=(sel, second))])])
    assert f"the class matches 3 devices on 2 nodes, `{sel}` leaves 1, " in messages(two)[0]
    (_, problem), = report.problems
    assert problem.details["requests"]["gpu"]["totals"] == {"class": 3, "selectors": 1, "free": 1, "usable": 1}


def test_counter_amounts_are_written_as_people_write_them():
    devices = [{"name": f"gpu-{i}", "consumesCounters": [{"counterSet": "mem", "counters": {"memory": {"value": "50Gi"}}}]}
               for i in range(2)]
    pool = {"name": "node-a", "generation": 1, "resourceSliceCount": 2}
    counters = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "mem"},
                           "spec": {"driver": "gpu.example.com", "nodeName": "node-a", "pool": pool,
                                    "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "80Gi"}}}]}})
    (msg,) = messages(run([CLASS, counters, node_slice("node-a", devices, {"pool": pool})], [claim("two", [req(count=2)])]))
    assert msg.endswith("counter `memory` of set `mem` in pool gpu.example.com/node-a: 100Gi needed, 80Gi left (of 80Gi)")


def test_match_attribute_across_requests_is_explained():
    cluster = [CLASS, node_slice("node-a", [{"name": "gpu-0", "attributes": {"numa": {"int": 0}}},
                                            {"name": "gpu-1", "attributes": {"numa": {"int": 1}}}])]
    c = claim("pair", [req("a"), req("b")], [{"requests": ["a", "b"], "matchAttribute": "gpu.example.com/numa"}])
    (msg,) = messages(run(cluster, [c]))
    assert msg.endswith("constraint matchAttribute `gpu.example.com/numa` across `a` and `b`: no node has devices "
                        "for all of them with one value")


def test_first_available_backtracks_across_claims():
    # claim-a prefers two GPUs, which would starve claim-b; the pod fits with claim-a's second choice.
    first = {"name": "gpu", "firstAvailable": [
        {"name": "two", "deviceClassName": "gpu", "count": 2},
        {"name": "one", "deviceClassName": "gpu", "count": 1}]}
    report = run([CLASS, node_slice("node-a", gpus(2))],
                 [claim("claim-a", [first]), claim("claim-b", [req()]), pod("p", ["claim-a", "claim-b"])],
                 show_allocation=True)
    assert not report.problems
    picked = {a["claim"]: a["devices"] for a in report.allocations}
    assert picked == {"default/claim-a": {"gpu/one": ["gpu.example.com/node-a/gpu-0"]},
                      "default/claim-b": {"gpu": ["gpu.example.com/node-a/gpu-1"]}}


def test_pod_whose_claims_fit_alone_but_not_together():
    report = run([CLASS, node_slice("node-a", gpus(1))],
                 [claim("x", [req()]), claim("y", [req()]), pod("p", ["x", "y"])])
    (msg,) = messages(report)
    assert msg.startswith("Pod default/p cannot get its devices: claims `default/x`, `default/y` each fit")


def test_claim_stamped_from_a_template_is_judged_for_the_pod():
    report = run([CLASS, node_slice("node-a", gpus(1))],
                 [claim("tmpl", [req(count=3)], kind="ResourceClaimTemplate"), pod("p", [], ("tmpl",))])
    objs = sorted(o.kind for o, p in report.problems if p.rule == "DRA701")
    assert objs == ["Pod", "ResourceClaimTemplate"]


def test_allocated_claims_hold_their_devices_and_pin_the_pod():
    held = json.loads(claim("held", [req()]))
    held["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]}}}
    cluster = [CLASS, node_slice("node-a", gpus(1)), node_slice("node-b", gpus(1)), json.dumps(held)]
    report = run(cluster, [claim("new", [req()]), pod("p", ["held", "new"])])
    # node-b has a free GPU, but the pod is pinned to node-a, where claim `held` took the only one.
    # That is the pod's doing, not the claim's: told on the pod only.
    assert [(o.kind, str(p.path), p.message) for o, p in report.problems] == [(
        "Pod", "spec.resourceClaims[1]",
        "claim default/new cannot be allocated (on the 1 of 2 nodes the pod can run on): request `gpu` needs 1 device "
        "of class `gpu`: 1 device on 1 node matches, but other claims hold 1 (default/held in x.yaml), which leaves "
        "none; no node has 1 free")]
    report = run(cluster, [claim("new", [req()])], show_allocation=True)
    assert report.allocations[0]["node"] == "node-b"


def test_taint_blocks_unless_tolerated():
    tainted = [{"name": "gpu-0", "taints": [{"key": "maintenance", "value": "yes", "effect": "NoSchedule"}]}]
    cluster = [CLASS, node_slice("node-a", tainted)]
    (msg,) = messages(run(cluster, [claim("c", [req()])]))
    assert "1 has taint `maintenance=yes:NoSchedule` that the request does not tolerate" in msg
    tolerating = req(tolerations=[{"key": "maintenance", "operator": "Exists"}])
    assert not run(cluster, [claim("c", [tolerating])]).problems


def test_runtime_error_only_for_devices_the_search_reaches():
    sel = ('device.attributes["gpu.example.com"].model == "a100"',)
    devices = [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}, {"name": "gpu-1"}]
    cluster = [CLASS, node_slice("node-a", devices)]
    assert not run(cluster, [claim("c", [req(selectors=sel)])]).problems   # gpu-0 fits first
    (msg,) = messages(run(cluster, [claim("c", [req(count=2, selectors=sel)])]), "DRA702")
    assert "selector #0 on device gpu.example.com/node-a/gpu-1: CEL runtime error: no such key: model" in msg


def test_runtime_error_on_another_node_still_aborts():
    # node-a can take the claim, but the scheduler also filters node-b, where the selector fails.
    sel = ('device.attributes["gpu.example.com"].model == "a100"',)
    cluster = [CLASS, node_slice("node-a", [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}]),
               node_slice("node-b", [{"name": "gpu-0"}])]
    (msg,) = messages(run(cluster, [claim("c", [req(selectors=sel)])]), "DRA702")
    assert "gpu.example.com/node-b/gpu-0" in msg


def test_placeholder_nodes_stand_in_for_node_selectors():
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}]}
    s = json.loads(node_slice("x", gpus(2)))
    del s["spec"]["nodeName"]
    s["spec"]["nodeSelector"] = selector
    report = run([CLASS, json.dumps(s)], [claim("c", [req(count=2)])], show_allocation=True)
    assert not report.problems and report.allocations[0]["node"] == "<a node matching selector 1>"


def test_trace_and_budget():
    report = run([CLASS, node_slice("node-a", gpus(2))], [claim("c", [req(count=2)])], trace=frozenset({"c"}))
    lines = report.traces["default/c"]
    assert "node-a: default/c gpu: picked gpu.example.com/node-a/gpu-1" in lines
    assert lines[-1].startswith("result: allocated")
    report = run([CLASS, node_slice("node-a", gpus(2))], [claim("c", [req(count=2)])], max_steps=1)
    assert messages(report, "DRA709")[0].startswith("undecided after 2 steps")


def test_names_read_refuses_expressions_that_see_unnamed_attributes():
    assert names_read('device.attributes["d"].model == "x"') >= {"model", "d"}
    for opaque in ('device.attributes["d"].exists(k, k == "x")', 'size(device.attributes["d"]) > 0',
                   'device.attributes[device.driver] == {}', '"m" + "odel" in device.attributes["d"]'):
        assert names_read(opaque) is None, opaque


def test_a_request_never_takes_a_multi_allocatable_device_twice_but_two_requests_may():
    # The Go allocator (1.36.2) resumes a request's search after its last pick: count 2 on the one
    # device that allowMultipleAllocations cannot be met, while two requests of count 1 share it.
    cluster = [CLASS, node_slice("node-1", [{"name": "gpu-0", "allowMultipleAllocations": True}])]
    gates = {"DRAConsumableCapacity": True}
    (msg,) = messages(run(cluster, [claim("twice", [req(count=2)])], gates))
    assert msg == ("claim default/twice cannot be allocated: request `gpu` needs 2 devices of class `gpu`: "
                   "the class matches 1 device on 1 node; no node has 2")
    both = claim("both", [req("a"), req("b")])
    report = run(cluster, [both], gates, show_allocation=True)
    assert not report.problems
    (allocation,) = report.allocations
    assert allocation["devices"] == {"a": ["gpu.example.com/node-1/gpu-0"], "b": ["gpu.example.com/node-1/gpu-0"]}
    # Without consumable capacity the device is allocated once, like any other.
    assert messages(run(cluster, [both], {"DRAConsumableCapacity": False}))


def test_devices_passed_over_unseen_cost_the_same_steps_as_under_a_trace():
    """Without a trace, the search leaves out the devices the selectors refuse and passes over those
    a matchAttribute constraint refuses before trying them; a trace walks every device. Both must
    pick the same devices after the same number of steps."""
    devices = [{"name": f"gpu-{i}", "attributes": {"root": {"string": "ab"[i % 3 == 0]},
                                                   "model": {"string": "xy"[i % 4 == 1]}}} for i in range(10)]
    cluster = [CLASS, node_slice("node-a", devices)]
    linted = [claim("c", [req("one", 2, ('device.attributes["gpu.example.com"].model == "x"',)),
                          req("two", 2, ('device.attributes["gpu.example.com"].model == "x"',))],
                    [{"matchAttribute": "gpu.example.com/root"}])]
    picked = [run(cluster, linted, show_allocation=True, trace=trace).allocations[0]
              for trace in (frozenset(), frozenset({"c"}))]
    assert picked[0] == picked[1] and picked[0]["node"] == "node-a"
    for steps in range(1, 30):
        undecided = [messages(run(cluster, linted, max_steps=steps, trace=trace), "DRA709")
                     for trace in (frozenset(), frozenset({"c"}))]
        assert undecided[0] == undecided[1], steps
        if not undecided[0]:
            break
    else:
        raise AssertionError("never decided")
    assert steps > 5   # the constraint made the search step back


def test_an_undecided_search_names_the_budget_that_stopped_it(monkeypatch):
    from dralint.feasibility import picks

    cluster, claims = [CLASS, node_slice("node-a", gpus(2))], [claim("c", [req(count=2)])]
    by_steps = messages(run(cluster, claims, max_steps=1), "DRA709")
    assert by_steps[0].endswith("ran past its step budget (raise --max-steps to search further)")

    def out_of_time(budget: picks.Budget) -> None:  # the clock runs out at the second step, steps to spare
        budget.steps += 1
        if budget.steps > 1:
            raise picks.BudgetExceeded()

    monkeypatch.setattr(picks.Budget, "tick", out_of_time)
    by_time = messages(run(cluster, claims, max_seconds=60.0), "DRA709")
    assert by_time == [by_steps[0].replace("step budget (raise --max-steps", "time budget of 60 s (raise --max-seconds")]


def test_the_place_after_a_device_is_the_next_one_in_search_order():
    """The cuts in the middle of a request look at the devices after the last one picked: the place
    ``_after`` gives is right after it (one further would let the bound skip a device it may use)."""
    from dralint.feasibility.picks import Budget
    from dralint.feasibility.search import Attempt

    def network_slice(name: str, pool: str, devices: list[dict]) -> str:
        return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
                           "spec": {"driver": "gpu.example.com", "allNodes": True, "devices": devices,
                                    "pool": {"name": pool, "generation": 1, "resourceSliceCount": 2}}})

    cluster = [CLASS, node_slice("node-a", gpus(3)), network_slice("net-1", "net", gpus(2)),
               network_slice("net-2", "net", [{"name": "nic-0"}, {"name": "nic-1"}])]
    objs = [to_canonical(item) for doc in source.load_text("\n---\n".join(cluster), "x.yaml").documents
            for item in identify(doc, from_cluster=True)]
    world = World.from_index(Index.build(objs), Release(37, {}), mini_cel, by_name=True)
    node = next(n for n in world.node_list() if n.name == "node-a")
    pools = world.pools(node)
    attempt = Attempt(world.run, node, pools, [], Budget(10, float("inf")))
    places = [(attempt._after(d), (pi, si, di + 1)) for pi, pool in enumerate(pools) if pool.usable
              for si, sl in enumerate(pool.slices) for di, d in enumerate(sl.devices)]
    assert len(places) == 7 and len({p for p, _ in places}) == 7
    assert all(got == want for got, want in places)


def _root(i: int) -> dict:
    """A device attribute ``root`` that varies: two values, a list (no scalar value) or none at all."""
    return [{"root": {"string": "a"}}, {"root": {"string": "b"}}, {"root": {"strings": ["a"]}}, {}][i % 4]


def _with_counters(devices: list[dict]) -> list[str]:
    """The class and one node's slice of ``devices`` (two slices of one pool), whose counter set
    ``mem`` holds 15Gi of memory."""
    pool = {"name": "node-a", "generation": 1, "resourceSliceCount": 2}
    counters = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "mem"},
                           "spec": {"driver": "gpu.example.com", "nodeName": "node-a", "pool": pool,
                                    "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "15Gi"}}}]}})
    return [CLASS, counters, node_slice("node-a", devices, {"pool": pool})]


def _undecided_alike_traced(cluster: list[str], linted: list[str], gates: dict, most: int) -> None:
    """With budgets of 1, 2, ... steps, claim ``c`` is left undecided (DRA709) under a trace exactly
    when it is without one, until some budget under ``most`` decides it."""
    for steps in range(1, most):
        undecided = [messages(run(cluster, linted, gates, max_steps=steps, trace=trace), "DRA709")
                     for trace in (frozenset(), frozenset({"c"}))]
        assert undecided[0] == undecided[1], (gates, steps)
        if not undecided[0]:
            return
    raise AssertionError("never decided")


def test_devices_a_constraint_refuses_are_passed_over_as_a_trace_walks_them():
    """Without a trace, the search passes over the devices the matchAttribute constraints refuse
    before trying them, except those that take counters (``allocate`` refuses them after taking the
    counters, which stay taken). A trace walks every device: the same picks after the same steps, with
    values, lists, missing attributes and one constraint or two."""
    devices = [{"name": f"gpu-{i}", "attributes": {**_root(i), "model": {"string": "xy"[i % 5 == 1]}},
                **({"consumesCounters": [{"counterSet": "mem", "counters": {"memory": {"value": "10Gi"}}}]}
                   if i % 6 == 5 else {})} for i in range(14)]
    cluster = _with_counters(devices)
    model = ('device.attributes["gpu.example.com"].model == "x"',)
    shapes = [
        [{"matchAttribute": "gpu.example.com/root"}],
        [{"requests": ["two"], "matchAttribute": "gpu.example.com/root"}],
        [{"matchAttribute": "gpu.example.com/root"}, {"requests": ["one"], "matchAttribute": "gpu.example.com/model"}],
    ]
    for n, constraints in enumerate(shapes):
        linted = [claim("c", [req("one", 2, model), req("two", 3)], constraints)]
        picked = [run(cluster, linted, show_allocation=True, trace=trace).allocations
                  for trace in (frozenset(), frozenset({"c"}))]
        assert picked[0] == picked[1], n
        _undecided_alike_traced(cluster, linted, {}, 60)


def test_a_node_search_takes_over_validation_only_for_claims_that_count_their_devices():
    """Each node's search takes over the validation made on no node for a claim that only counts its
    devices; an ``allocationMode: All`` claim is checked on the node, where its devices, and so the
    claim limit, are known (the other claim before it validated first, as the allocator does)."""
    every = {"name": "all", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}
    for n, limit in ((40, True), (20, False)):
        linted = [claim("a", [req("one", 1)]), claim("b", [every]), pod("p", ["a", "b"])]
        report = run([CLASS, node_slice("node-a", gpus(n))], linted)
        errors = messages(report, "DRA705")
        assert errors == (["claim default/b: number of requested devices 40 exceeds the claim limit of 32"]
                          if limit else []), n
        if not limit:   # searched: the All request wants the device the first claim took
            assert messages(report) == ["Pod default/p cannot get its devices: claims `default/a`, `default/b` each "
                                        "fit on some node, but no node can take all of them at once"]


def test_plain_devices_are_picked_by_the_loop_itself_as_allocate_picks_them():
    """Without a trace, a claim with no constraint and no admin access takes a plain device (no
    counters, no taint, no multiple allocations) in the search's loop, not through ``allocate``; a
    trace goes through ``allocate`` for every device. Both must pick the same devices after the same
    steps, with plain devices among ones that take counters, carry a taint or may be shared, and a
    first request whose picks leave the second too few (the search steps back)."""
    devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": "yx"[i % 3 == 0]}},
                **({"consumesCounters": [{"counterSet": "mem", "counters": {"memory": {"value": "10Gi"}}}]}
                   if i % 4 == 1 else {}),
                **({"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]} if i == 6 else {}),
                **({"allowMultipleAllocations": True} if i == 7 else {})} for i in range(12)]
    cluster = _with_counters(devices)
    model = ('device.attributes["gpu.example.com"].model == "x"',)
    for gates in ({}, {"DRAConsumableCapacity": True}):
        for linted in ([claim("c", [req("one", 3), req("two", 3, model)])],
                       [claim("c", [req("one", 2), req("two", 2, model)])]):
            reports = [run(cluster, linted, gates, show_allocation=True, trace=trace)
                       for trace in (frozenset(), frozenset({"c"}))]
            assert reports[0].allocations == reports[1].allocations and reports[0].allocations, gates
            assert any("backtrack, release" in line for line in reports[1].traces["default/c"])
            _undecided_alike_traced(cluster, linted, gates, 300)


def test_a_request_renewed_for_another_attempt_is_one_made_anew():
    """Each node's attempt renews the data of the requests its claims' validation made: equal, field
    for field, to data made anew (a field added to ``RequestData`` and not renewed fails here)."""
    import dataclasses

    from dralint.feasibility.model import read_claim
    from dralint.feasibility.picks import RequestData

    objs = [to_canonical(item) for doc in source.load_text(CLASS, "x.yaml").documents
            for item in identify(doc, from_cluster=True)]
    world = World.from_index(Index.build(objs), Release(37, {}), mini_cel, by_name=True)
    cls = world.run.classes["gpu"]
    (doc,) = source.load_text(claim("c", [req("one", 2, ("x",), adminAccess=True)]), "y.yaml").documents
    alt = read_claim(to_canonical(next(identify(doc))), "default/c").requests[0].exactly
    used = RequestData(alt, cls, 2)
    used.answers, used.known, used.candidates, used.all_devices = {1: 1}, 2, [], [object()]
    fresh, renewed = RequestData(alt, cls, 2), used.renewed()
    for f in dataclasses.fields(RequestData):
        assert getattr(renewed, f.name) == getattr(fresh, f.name), f.name
    assert renewed.all_devices is not used.all_devices and renewed.admin and renewed.base == "one"
