"""The live state under churn: published as a snapshot and a log, taken in change by change.

The watcher publishes each batch of changed objects to a log and compacts it into a snapshot now
and then (``snapshot.py``); each worker applies the batches to its index (``Index.updated``) and to
its feasibility view, parsing only what changed. Compared here with what a fresh start would give,
on generated change sequences (adds, updates, deletes, relists, compactions, restarted watchers,
workers started late or fallen behind), and under the failures a log must survive: a batch cut
short, a batch whose bytes do not match its commit line, a compaction while a worker is behind.
"""
from __future__ import annotations

import copy
import json
import threading
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint import gojson
from dralint.engine import cluster_object
from dralint.feasibility.selection import cel_evaluator, cel_required_driver
from dralint.feasibility.world import World
from dralint.index import Index
from dralint_webhook.admission import parse_review
from dralint_webhook.cluster import LIVE_CONTEXT, ClusterState
from dralint_webhook.fleet import FleetView
from dralint_webhook.judge import judge
from dralint_webhook.live import LiveCluster
from dralint_webhook.policy import parse_policy
from dralint_webhook.snapshot import DamagedLog, Follower, Publisher
from dralint_webhook.store import Store

from test_feasibility_fleet_updates import _node_facts

RV = "resource.k8s.io/v1"

# --- the snapshot and its log ----------------------------------------------------------------------


def row(key: str, version: int, payload: int = 0) -> tuple[str, str, str, bytes]:
    return ("namespaces", key, str(version), orjson.dumps({"metadata": {"name": key}, "payload": payload}))


def gone(key: str) -> tuple[str, str, str, None]:
    return ("namespaces", key, "", None)


class Followed:
    """What a worker holds: the rows it was given, applied as they came."""

    def __init__(self, folder: Path) -> None:
        self.follower = Follower(folder)
        self.rows: dict[str, bytes] = {}
        self.fulls = 0

    def poll(self) -> bool:
        update = self.follower.poll()
        if update is None:
            return False
        if update.full:
            self.rows, self.fulls = {}, self.fulls + 1
        for r in update.rows:
            if r.data:
                self.rows[r.key] = r.data
            else:
                self.rows.pop(r.key, None)
        return True


OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from("abcde"), st.integers(0, 3)),
    st.tuples(st.just("delete"), st.sampled_from("abcde"), st.just(0)),
    st.tuples(st.sampled_from(["publish", "compact", "restart", "poll", "late"]), st.just(""), st.integers(0, 2))),
    max_size=60)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_a_worker_always_holds_the_state_of_the_generation_it_reached(tmp_path_factory, ops):
    """Workers that poll at any moment (started late, behind a compaction or two, across a new watcher)
    hold exactly what the watcher had published at the generation they reached."""
    folder = tmp_path_factory.mktemp("state")
    cluster: dict[str, bytes] = {}
    pending: list = []
    published: dict[int, dict[str, bytes]] = {}
    publisher = Publisher(folder)
    publisher.snapshot([])
    published[publisher.generation] = {}
    workers = [Followed(folder)]
    version = 1
    for op, key, n in ops:
        version += 1
        if op == "put":
            pending.append(row(key, version, n))
            cluster[key] = pending[-1][3]
        elif op == "delete" and key in cluster:
            pending.append(gone(key))
            del cluster[key]
        elif op in ("publish", "compact") and pending:
            publisher.append(pending)
            pending = []
            published[publisher.generation] = dict(cluster)
        if op == "compact" and not pending:
            publisher.snapshot([row(k, 1)[:3] + (v,) for k, v in cluster.items()])
        elif op == "restart":
            # A new watcher process: a new epoch, the whole state again, the old log never sealed.
            publisher.close()
            publisher = Publisher(folder)
            publisher.snapshot([row(k, 1)[:3] + (v,) for k, v in cluster.items()])
            pending = []
            published[publisher.generation] = dict(cluster)
        elif op == "poll":
            worker = workers[n % len(workers)]
            worker.poll()
            assert worker.rows == published[worker.follower.generation]
        elif op == "late":
            workers.append(Followed(folder))
    publisher.append(pending) if pending else None
    published[publisher.generation] = dict(cluster)
    for worker in workers:
        worker.poll()
        assert worker.follower.generation == publisher.generation
        assert worker.rows == cluster


def test_a_batch_cut_short_is_never_applied_and_taken_once_complete(tmp_path):
    publisher = Publisher(tmp_path)
    publisher.snapshot([row("a", 1)])
    worker = Followed(tmp_path)
    worker.poll()
    log = tmp_path / "log.1"
    publisher.append([row("b", 2), gone("a")])
    whole = log.read_bytes()
    for cut in (5, len(whole) // 2, len(whole) - 3, len(whole) - 1):  # in a record, in the commit line
        log.write_bytes(whole[:cut])
        probe = Followed(tmp_path)
        probe.poll()
        assert probe.rows == {"a": row("a", 1)[3]} and probe.follower.generation == 1
    log.write_bytes(whole[:len(whole) // 2])
    assert not worker.poll()                 # half a batch: nothing yet
    with open(log, "ab") as fh:
        fh.write(whole[len(whole) // 2:])    # the rest of the same write arrives
    assert worker.poll() and worker.rows == {"b": row("b", 2)[3]} and worker.follower.generation == 2


def test_a_batch_that_does_not_match_its_commit_line_is_refused_until_a_new_snapshot(tmp_path):
    publisher = Publisher(tmp_path)
    publisher.snapshot([row("a", 1)])
    worker = Followed(tmp_path)
    worker.poll()
    publisher.append([row("a", 2, 7)])
    log = tmp_path / "log.1"
    data = bytearray(log.read_bytes())
    data[data.index(b"payload") + 9] ^= 1    # 7 becomes 6, the line still a line
    log.write_bytes(bytes(data))
    with pytest.raises(DamagedLog):
        worker.poll()
    assert worker.rows == {"a": row("a", 1)[3]}
    assert not worker.poll()                 # the same log is not read again
    publisher.snapshot([row("a", 2, 7)])     # the next compaction
    assert worker.poll() and worker.rows == {"a": row("a", 2, 7)[3]} and worker.fulls == 2


def test_a_worker_behind_a_compaction_goes_on_through_the_seal_without_the_snapshot(tmp_path):
    publisher = Publisher(tmp_path)
    publisher.snapshot([row("a", 1)])
    worker = Followed(tmp_path)
    worker.poll()
    publisher.append([row("b", 2)])
    publisher.snapshot([row("a", 1), row("b", 2)])          # compaction: log.1 sealed into log.2
    publisher.append([row("c", 3)])
    assert worker.poll() and worker.fulls == 1 and set(worker.rows) == {"a", "b", "c"}
    assert worker.follower.epoch == 2 and sorted(p.name for p in tmp_path.iterdir()) == ["log.1", "log.2", "state"]


def test_a_worker_behind_more_compactions_than_the_logs_kept_reads_the_snapshot(tmp_path):
    publisher = Publisher(tmp_path)
    publisher.snapshot([row("a", 1)])
    worker = Followed(tmp_path)
    worker.poll()
    state = {"a": row("a", 1)}
    for version in range(2, 6):
        state[f"k{version}"] = row(f"k{version}", version)
        publisher.append([state[f"k{version}"]])
        publisher.snapshot(list(state.values()))
    assert not (tmp_path / "log.2").exists()  # the log after the one the worker reads is gone
    assert worker.poll() and worker.fulls == 2
    assert worker.rows == {k: r[3] for k, r in state.items()} and worker.follower.generation == publisher.generation


def test_a_new_watcher_publishes_after_the_old_one_and_its_workers_read_the_new_snapshot(tmp_path):
    first = Publisher(tmp_path)
    first.snapshot([row("a", 1)])
    first.append([row("b", 2)])
    worker = Followed(tmp_path)
    worker.poll()
    with open(tmp_path / "log.1", "ab") as fh:
        fh.write(b"namespaces\tc\t3\t{\"half")    # it died in the middle of a batch
    second = Publisher(tmp_path)
    assert second.generation == 2 and second.epoch == 1   # numbers go on from what was published
    assert not worker.poll()                              # nothing new until the new watcher publishes
    second.snapshot([row("a", 1), row("d", 4)])
    assert worker.poll() and worker.fulls == 2 and set(worker.rows) == {"a", "d"}
    assert worker.follower.generation == 3 and sorted(p.name for p in tmp_path.iterdir()) == ["log.2", "state"]


# --- the store: a change costs the changed object -----------------------------------------------------

def test_the_store_drains_what_changed_and_a_relist_only_its_differences():
    store = Store(["namespaces"])
    items = [{"metadata": {"name": n, "resourceVersion": "1"}} for n in "abc"]
    store.replace("namespaces", items, "1", "v1")
    assert sorted(c[1] for c in store.drain().changes) == ["a", "b", "c"]
    store.apply("namespaces", "MODIFIED", {"metadata": {"name": "a", "resourceVersion": "2", "labels": {"x": "y"}}},
                "v1")
    store.apply("namespaces", "DELETED", {"metadata": {"name": "b", "resourceVersion": "3"}}, "v1")
    store.apply("namespaces", "BOOKMARK", {"metadata": {"resourceVersion": "4"}}, "v1")
    drained = store.drain(every=True)
    assert [(c[1], c[2], c[3] is None) for c in drained.changes] == [("a", "2", False), ("b", "", True)]
    assert sorted(r[1] for r in drained.rows) == ["a", "c"]
    assert store.drain().changes == []
    # A relist after an expired watch: what the list shows differently, nothing else.
    store.replace("namespaces", [{"metadata": {"name": "a", "resourceVersion": "2", "labels": {"x": "y"}}},
                                 {"metadata": {"name": "d", "resourceVersion": "5"}}], "5", "v1")
    assert sorted((c[1], c[3] is None) for c in store.drain().changes) == [("c", True), ("d", False)]


# --- the worker: the index and the feasibility view kept like fresh ones --------------------------------

CLASS = {"metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}


def slice_of(node: int, devices: int) -> dict:
    return {"metadata": {"name": f"node-{node}-gpu"},
            "spec": {"driver": "gpu.example.com", "nodeName": f"node-{node}",
                     "pool": {"name": f"node-{node}", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{d}", "attributes": {"model": {"string": "a100"}}}
                                 for d in range(devices)]}}


def claim_of(name: str, count: int, allocated: tuple[int, int] | None) -> dict:
    obj: dict = {"metadata": {"name": name, "namespace": "ml"},
                 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                     "deviceClassName": "gpu.example.com", "count": count}}]}}}
    if allocated is not None:
        node, device = allocated
        obj["status"] = {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": f"node-{node}",
                                     "device": f"gpu-{device}"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [f"node-{node}"]}]}]}},
            "reservedFor": [{"resource": "pods", "name": name, "uid": name}]}
    return obj


def generated(resource: str, name: str, n: int) -> dict:
    """An object of ``resource`` named after ``name``, its content chosen by ``n``."""
    if resource == "resourceclaims":
        return claim_of(name, 1 + n % 3, None if n % 4 == 0 else (n % 3, n % 4))
    if resource == "resourceslices":
        return slice_of(int(name[-1]) % 3, 1 + n % 4)
    if resource == "nodes":
        return {"metadata": {"name": f"node-{name[-1]}", "labels": {"zone": "ab"[n % 2]}}}
    if resource == "namespaces":
        return {"metadata": {"name": f"ns-{name}", "labels": {"tier": str(n)}}}
    if resource == "resourceclaimtemplates":
        return {"metadata": {"name": name, "namespace": "ml"},
                "spec": {"spec": claim_of(name, 1 + n % 2, None)["spec"]}}
    return dict(CLASS, spec={"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"' +
                                                    (' && device.attributes["gpu.example.com"].model == "a100"'
                                                     if n % 2 else "")}}]})


KINDS = ["resourceclaims", "resourceclaims", "resourceclaims", "resourceslices", "nodes", "namespaces",
         "resourceclaimtemplates", "deviceclasses"]
CHANGES = st.lists(st.tuples(st.sampled_from(["put", "put", "delete", "relist", "publish", "compact", "late"]),
                             st.sampled_from(KINDS), st.sampled_from(["x0", "x1", "x2"]), st.integers(0, 11)),
                   min_size=1, max_size=25)


def _name(resource: str, name: str) -> str:
    return {"resourceslices": f"node-{int(name[-1]) % 3}-gpu", "nodes": f"node-{name[-1]}",
            "namespaces": f"ns-{name}", "deviceclasses": "gpu.example.com"}.get(resource, name)


def _contents(index: Index) -> dict:
    """What an index holds, as values (two indexes of the same objects compare equal)."""
    def values(objs):
        return sorted(json.dumps(o.value, sort_keys=True) for o in objs)
    return {"classes": {k: v.value for k, v in index.classes.items()},
            "claims": {k: v.value for k, v in index.claims.items()},
            "templates": {k: v.value for k, v in index.templates.items()},
            "slices": values(index.slices), "taint_rules": values(index.taint_rules), "nodes": dict(index.nodes),
            "namespaces": dict(index.namespaces), "context": values(index.context_objects),
            "same": {k: [o.value for o in v] for k, v in index.same.items()}, "refused": dict(index.refused)}


def _world_facts(world: World) -> tuple:
    allocated = world.allocated
    return (sorted(allocated.dedicated), sorted(allocated.shared), allocated.consumed, sorted(world._claims),
            sorted(world.classes), _node_facts(world), world.held[[u for k in sorted(allocated.dedicated)
                                                                    for u in world.uids_of(k)]].all())


POLICY = parse_policy({"feasibility": "deny"})


def _review(count: int) -> bytes:
    obj = claim_of("judged", count, None)
    obj.update(apiVersion=RV, kind="ResourceClaim")
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u", "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"},
        "operation": "CREATE", "namespace": "ml", "name": "judged", "object": obj}}).encode()


def _kept_like_fresh(tmp: Path, changes: list) -> None:
    cluster: dict[str, dict[str, dict]] = {r: {} for r in KINDS}
    store = Store()
    for resource in store.resources:
        store.replace(resource, [], "1", RV)
    publisher = Publisher(tmp)
    publisher.snapshot(store.drain(every=True).rows or [])
    live = LiveCluster(str(tmp), release_of=lambda: POLICY.options.release)
    live.refresh()
    version = 10
    for op, resource, name, n in changes:
        version += 1
        key = (f"ml/{name}" if resource in ("resourceclaims", "resourceclaimtemplates") else _name(resource, name))
        api_version = "v1" if resource in ("nodes", "namespaces") else RV
        if op == "put":
            obj = generated(resource, name, n)
            obj["metadata"]["resourceVersion"] = str(version)
            event = "MODIFIED" if key in cluster[resource] else "ADDED"
            cluster[resource][key] = obj
            store.apply(resource, event, copy.deepcopy(obj), api_version)
        elif op == "delete" and key in cluster[resource]:
            store.apply(resource, "DELETED", cluster[resource].pop(key), api_version)
        elif op == "relist":
            for obj in list(cluster[resource].values())[: n % 2]:   # changed while the watch was down
                obj["metadata"]["resourceVersion"] = str(version)
                obj["metadata"].setdefault("labels", {})["relisted"] = str(version)
            store.replace(resource, copy.deepcopy(list(cluster[resource].values())), str(version), api_version)
        drained = store.drain(every=op == "compact")
        if drained.changes:
            publisher.append(drained.changes)
        if drained.rows is not None:
            publisher.snapshot(drained.rows)
        if op == "late":   # a worker started now reads the snapshot and the log
            late = LiveCluster(str(tmp))
            late.refresh()
            live.refresh()
            assert _contents(late.current().index) == _contents(live.current().index)
            continue
        live.refresh()
        rows = store.drain(every=True)
        assert not rows.changes
        fresh = Index.build(o for o in (cluster_object(gojson.loads(r[3]), "fresh") for r in rows.rows) if o)
        state = live.current()
        assert _contents(state.index) == _contents(fresh)
        kept = live.fleet.fleet(POLICY.options.release).world
        release = POLICY.options.release
        built = World.from_index(fresh, release, cel_evaluator(release), None, cel_required_driver(release),
                                 by_name=True, nodes_listed=True)    # the watch lists every Node
        assert _world_facts(kept) == _world_facts(built)
    state = live.current()
    fresh_index = Index.build(state.index.all_objects() + state.index.context_objects)
    fresh_fleet = FleetView(lambda: POLICY.options.release, nodes_listed=True)
    fresh_fleet.update(fresh_index, [])              # built from the objects as they are now
    fresh_state = ClusterState(fresh_index, (), context=LIVE_CONTEXT, fleet=fresh_fleet)
    for count in (1, 3):
        assert judge(parse_review(_review(count)), POLICY, state) == judge(parse_review(_review(count)), POLICY,
                                                                           fresh_state)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(CHANGES)
def test_the_kept_index_and_fleet_view_equal_fresh_ones_after_any_changes(tmp_path_factory, changes):
    _kept_like_fresh(tmp_path_factory.mktemp("live"), changes)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(CHANGES)
def test_the_kept_index_and_fleet_view_equal_fresh_ones_at_length(tmp_path_factory, changes):
    _kept_like_fresh(tmp_path_factory.mktemp("live"), changes)


def test_an_object_removed_from_a_shared_name_gives_its_place_to_the_next():
    """Files may hold two objects of one name: removing the first leaves the index a fresh build of the rest
    would be."""
    first, second, other = (cluster_object(dict(claim_of(name, n, None), apiVersion=RV, kind="ResourceClaim"),
                                           f"{n}.yaml") for n, name in ((1, "train"), (2, "train"), (3, "other")))
    index = Index.build([first, second])
    after = index.updated([first], [other])
    assert _contents(after) == _contents(Index.build([second, other]))
    assert after.find("ResourceClaim", "ml", "train") is second and index.find("ResourceClaim", "ml", "train") is first
    assert _contents(after.updated([second], [])) == _contents(Index.build([other]))


# --- the watcher: a new one publishes nothing until it has listed everything; a memory ceiling ----------

def _watcher(tmp: Path, server, folder: Path, **settings) -> tuple[threading.Thread, threading.Event]:
    from dralint_webhook.watcher import WatchSettings, run
    from test_webhook_watch import FAST, kubeconfig

    stop = threading.Event()
    config = WatchSettings(folder=str(folder), kubeconfig=str(kubeconfig(tmp / f"kubeconfig-{len(settings)}",
                                                                          server.url)),
                           interval=0.05, timing=FAST, **settings)
    thread = threading.Thread(target=run, args=(config, stop), daemon=True)
    thread.start()
    return thread, stop


def _slices(live: LiveCluster) -> list[str]:
    return sorted(s.name for s in live.current().index.slices)


def test_workers_keep_the_last_state_until_a_new_watcher_has_listed_everything(tmp_path):
    from fakeapi import FakeApiServer, FakeCluster
    from test_webhook_watch import TOKEN, slice_of, wait_for

    cluster = FakeCluster()
    cluster.create("resourceslices", slice_of("node-0"))
    folder = tmp_path / "state"
    with FakeApiServer(cluster) as server:
        server.faults.token = TOKEN
        first, stop = _watcher(tmp_path, server, folder)
        live = LiveCluster(str(folder))
        wait_for(lambda: live.refresh() and _slices(live) == ["node-0-gpu"], what="the first state")
        stop.set()
        first.join(timeout=15)
        before = live.current()
        server.faults.forbidden = {"resourceclaims"}     # the new watcher cannot list everything yet
        cluster.create("resourceslices", slice_of("node-1"))
        second, stop = _watcher(tmp_path, server, folder)
        try:
            wait_for(lambda: server.calls("resourceclaims"), what="the new watcher listing")
            time.sleep(0.5)
            assert not live.refresh() and live.current() is before    # nothing half listed was published
            server.faults.forbidden = set()
            wait_for(lambda: live.refresh() and _slices(live) == ["node-0-gpu", "node-1-gpu"], what="the new state")
            assert live.current().generation > before.generation
        finally:
            stop.set()
            second.join(timeout=15)


def test_a_watcher_over_its_memory_ceiling_exits_by_itself(tmp_path, caplog):
    from fakeapi import FakeApiServer, FakeCluster
    from test_webhook_watch import TOKEN

    with FakeApiServer(FakeCluster()) as server, caplog.at_level("ERROR", logger="dralint_webhook"):
        server.faults.token = TOKEN
        thread, stop = _watcher(tmp_path, server, tmp_path / "state", max_memory=1)
        thread.join(timeout=15)
        stop.set()
        assert not thread.is_alive()                    # ended without being told to: the master starts another
    assert any("over its memory ceiling" in r.getMessage() for r in caplog.records)


def test_a_review_looks_at_its_own_claims_not_at_every_claim_of_the_cluster():
    from dralint.feasibility.groups import build_groups

    def converted(obj: dict, kind: str = "ResourceClaim") -> object:
        return cluster_object(dict(obj, apiVersion=RV, kind=kind), "cluster")

    cluster = Index.build([converted(claim_of(f"c{i}", 1, (0, i % 2) if i % 2 else None)) for i in range(6)])
    template = converted({"metadata": {"name": "t", "namespace": "ml"},
                          "spec": {"spec": claim_of("t", 1, None)["spec"]}}, "ResourceClaimTemplate")
    for reviewed in ([converted(claim_of("c3", 2, None))], [converted(claim_of("new", 1, None)), template],
                     [converted(claim_of("c1", 1, (0, 1)))]):
        index = cluster.overlay(reviewed)
        ids = {id(o) for o in reviewed}

        def linted(obj: object) -> bool:
            return id(obj) in ids

        def shape(groups: list) -> list:
            return [(id(g.owner), [id(m.obj) for m in g.members]) for g in groups]

        walked = build_groups(index, linted)
        assert shape(build_groups(index, linted, reviewed)) == shape(walked)
        assert shape(build_groups(index, linted, reviewed + [converted(claim_of("absent", 1, None))])) == shape(walked)
