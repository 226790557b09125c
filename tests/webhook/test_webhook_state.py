"""The watcher's store and the engine's kept index (no server): property tests and the review path."""
from __future__ import annotations

import copy
import os
import threading
import time
from pathlib import Path

import orjson
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dralint.engine import Options, cluster_object, review
from dralint.index import Index
from dralint_webhook.app import Settings, Webhook, build_webhook, create_app
from dralint_webhook.cluster import LIVE_CONTEXT, ClusterState
from dralint_webhook.guard import Guard, ReviewAborted, ReviewTimedOut
from dralint_webhook.live import LiveCluster
from dralint_webhook.logs import FIELD_MAX, JsonFormatter, log
from dralint_webhook.metrics import Metrics
from dralint_webhook.policy import parse_policy
from dralint_webhook.snapshot import Follower, Publisher, write_status
from dralint_webhook.store import RESOURCES as WATCHED
from dralint_webhook.store import Store, trim

class Published:
    """A store published into a folder as the watcher does it: a snapshot, then a batch per call."""

    def __init__(self, folder: Path, store: Store) -> None:
        self.store = store
        self.publisher = Publisher(folder)
        self.publisher.snapshot(store.drain(every=True).rows or [])

    def __call__(self) -> None:
        changes = self.store.drain().changes
        if changes:
            self.publisher.append(changes)


# --- the store: state after any events equals a fresh list ----------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "d"])
RESOURCES = st.sampled_from(["resourceslices", "deviceclasses", "nodes", "resourceclaims"])
OPS = st.lists(st.tuples(st.sampled_from(["put", "delete", "bookmark", "relist"]), RESOURCES, NAMES,
                         st.integers(0, 3)), max_size=40)


def obj(resource: str, name: str, payload: int, version: int) -> dict:
    meta: dict = {"name": name, "resourceVersion": str(version), "managedFields": [{"manager": "x"}]}
    if resource == "resourceclaims":
        meta["namespace"] = "ml"
    return {"metadata": meta, "spec": {"payload": payload}, "status": {"images": ["big"] * payload}}


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_state_after_any_events_equals_a_fresh_list(ops):
    """Replay a cluster's changes as a watch delivers them (relists included) and compare with a list."""
    cluster: dict[str, dict[str, dict]] = {r: {} for r in ("resourceslices", "deviceclasses", "nodes", "resourceclaims")}
    watched = Store(cluster)
    version = 10
    for resource in cluster:
        watched.replace(resource, [], str(version), "v1")
    for op, resource, name, payload in ops:
        version += 1
        key = f"ml/{name}" if resource == "resourceclaims" else name
        if op == "put":
            event = "MODIFIED" if key in cluster[resource] else "ADDED"
            cluster[resource][key] = obj(resource, name, payload, version)
            watched.apply(resource, event, copy.deepcopy(cluster[resource][key]), "v1")
        elif op == "delete" and key in cluster[resource]:
            gone = cluster[resource].pop(key)
            gone["metadata"]["resourceVersion"] = str(version)
            watched.apply(resource, "DELETED", gone, "v1")
        elif op == "bookmark":
            watched.apply(resource, "BOOKMARK", {"metadata": {"resourceVersion": str(version)}}, "v1")
        elif op == "relist":
            watched.replace(resource, copy.deepcopy(list(cluster[resource].values())), str(version), "v1")
    fresh = Store(cluster)
    for resource, objects in cluster.items():
        fresh.replace(resource, copy.deepcopy(list(objects.values())), str(version), "v1")
    for resource in cluster:
        assert watched.objects(resource) == fresh.objects(resource)


def test_trimming_keeps_what_judging_reads():
    node = {"metadata": {"name": "n", "labels": {"pool": "a"}, "annotations": {"x": "y"}, "managedFields": [{}]},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "podCIDR": "10.0.0.0/24"},
            "status": {"images": ["..."]}}
    assert trim("nodes", node, "v1") == {"apiVersion": "v1", "kind": "Node",
                                         "metadata": {"name": "n", "labels": {"pool": "a"}},
                                         "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}
    device_class = {"metadata": {"name": "c", "managedFields": [{}], "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": "{...}", "keep": "me"}}, "spec": {}}
    out = trim("deviceclasses", device_class, "resource.k8s.io/v1")
    assert out["metadata"] == {"name": "c", "annotations": {"keep": "me"}}
    assert out["kind"] == "DeviceClass" and out["apiVersion"] == "resource.k8s.io/v1" and "spec" in out
    # A claim keeps its identity, its requests and what its allocation holds, not who it is reserved for.
    allocation = {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "p", "device": "g"}]}}
    claim = {"metadata": {"name": "c", "namespace": "ml", "uid": "u", "resourceVersion": "7", "managedFields": [{}],
                          "ownerReferences": [{"kind": "Pod"}], "annotations": {"a": "b"}, "labels": {"l": "v"}},
             "spec": {"devices": {"requests": []}},
             "status": {"allocation": allocation, "reservedFor": [{"name": "p"}], "devices": [{"data": "x" * 100}]}}
    assert trim("resourceclaims", claim, "resource.k8s.io/v1") == {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ml", "uid": "u", "resourceVersion": "7", "labels": {"l": "v"}},
        "spec": {"devices": {"requests": []}}, "status": {"allocation": allocation}}
    pending = dict(claim, status={"reservedFor": []})
    assert "status" not in trim("resourceclaims", pending, "resource.k8s.io/v1")


# --- the engine's kept index ------------------------------------------------------------------------

CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}


def slice_obj(node: str, devices: int = 2) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpu"},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}}
                                 for i in range(devices)]}}


def claim_obj(count: int = 1, selector: str | None = None, annotations: dict | None = None) -> dict:
    exactly: dict = {"deviceClassName": "gpu.example.com", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    meta: dict = {"name": "train", "namespace": "ml"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def cluster_index(*objects: dict) -> Index:
    return Index.build(o for o in (cluster_object(v, "cluster") for v in objects) if o is not None)


def test_an_overlay_leaves_its_base_alone_and_takes_the_place_of_a_namesake():
    base = cluster_index(CLASS, slice_obj("node-0"), claim_obj(1))
    newer = cluster_object(claim_obj(4), "request")
    over = base.overlay([newer])
    assert over.claims[("ml", "train")] is newer and base.claims[("ml", "train")] is not newer
    assert len(over.slices) == len(base.slices) == 1


def test_derived_facts_are_shared_only_where_the_overlay_changed_nothing():
    base = cluster_index(CLASS, slice_obj("node-0"))
    calls: list[str] = []

    def drivers(idx):
        calls.append("drivers")
        return {s.get("spec", "driver") for s in idx.slices}

    over = base.overlay([cluster_object(claim_obj(), "r1")])
    assert over.derived("drivers", drivers) == {"gpu.example.com"}
    # The fact read only the slices, which the claim did not touch: the base keeps it for the next review.
    assert base.overlay([cluster_object(claim_obj(), "r2")]).derived("drivers", drivers) == {"gpu.example.com"}
    assert calls == ["drivers"]
    # A review of a slice changes the slices: computed again, and not given back to the base.
    assert base.overlay([cluster_object(slice_obj("node-9"), "r3")]).derived("drivers", drivers) == {"gpu.example.com"}
    assert calls == ["drivers", "drivers"]
    # A cache (reads nothing, filled by its user) stays with its overlay.
    base.overlay([cluster_object(claim_obj(), "r4")]).derived("cache", lambda _: {}).update({"x": 1})
    assert base.overlay([cluster_object(claim_obj(), "r5")]).derived("cache", lambda _: {}) == {}


def test_the_next_live_state_keeps_the_facts_its_changes_leave_alone():
    claim = cluster_object(claim_obj(1), "c")
    old = cluster_index(CLASS, slice_obj("node-0"))
    old.derived("drivers", lambda idx: {s.get("spec", "driver") for s in idx.slices})
    old.derived("claims", lambda idx: len(idx.claims))
    old.derived("cache", lambda _: {"x": 1})
    new = old.updated([], [claim])     # a claim came: facts about the slices still hold
    assert new.derived("drivers", lambda idx: {"computed again"}) == {"gpu.example.com"}
    assert new.derived("claims", lambda idx: len(idx.claims)) == 1
    assert new.derived("cache", lambda _: {}) == {}   # a cache (reads nothing) is never handed on
    assert new.slices is old.slices and new.claims is not old.claims and not old.claims   # shared; copied
    grown = cluster_object(slice_obj("node-0", 4), "s")
    newest = new.updated([new.slices[0]], [grown])
    assert newest.derived("drivers", lambda idx: {"computed again"}) == {"computed again"}
    assert newest.derived("claims", lambda idx: -1) == 1
    assert newest.slices == [grown] and new.slices[0] is not grown


def test_each_new_live_state_is_warmed_before_it_serves(tmp_path):
    from dralint_webhook.warmup import warm_state

    store = Store()
    store.replace("deviceclasses", [dict(CLASS, metadata={"name": "gpu.example.com", "resourceVersion": "1"})],
                  "5", "resource.k8s.io/v1")
    store.replace("resourceslices", [dict(slice_obj("node-0"), metadata={"name": "node-0-gpu", "resourceVersion": "2"})],
                  "5", "resource.k8s.io/v1")
    warmed: list[Index] = []

    def warm(index: Index) -> None:
        assert live._state is None or live._state.index is not index   # not serving yet
        warm_state(parse_policy({}).options, index)
        warmed.append(index)

    live = LiveCluster(str(tmp_path), warm=warm)
    Published(tmp_path, store)
    live.refresh()
    index = live.current().index
    assert warmed == [index]
    # The facts a claim's review derives from the slices are there before the first review.
    assert "cel-published-names" in index._derived and "published-drivers" in index._derived


def test_a_review_against_a_kept_index_never_rebuilds_it(monkeypatch):
    base = cluster_index(CLASS, *[slice_obj(f"node-{i}") for i in range(50)])
    builds: list[int] = []
    original = Index.build.__func__

    def counting(cls, objects):
        builds.append(1)
        return original(cls, objects)

    monkeypatch.setattr(Index, "build", classmethod(counting))
    findings = review(claim_obj(3), None, "CREATE", "", Options(context=LIVE_CONTEXT), cluster=base,
                      name="ResourceClaim ml/train")
    assert builds == []
    assert any(f.rule == "DRA701" for f in findings)


def test_warnings_name_the_cluster_not_this_run():
    base = cluster_index(CLASS, slice_obj("node-0"))
    obj = claim_obj()
    obj["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nic.example.com"
    findings = review(obj, None, "CREATE", "", Options(context=LIVE_CONTEXT), cluster=base, name="x")
    messages = [f.message for f in findings if f.rule == "DRA600"]
    assert messages and "this run" not in messages[0] and LIVE_CONTEXT in messages[0]


# --- policy over an object's own annotation ----------------------------------------------------------

def hook_with_state(policy: str, *objects: dict) -> Webhook:
    hook = Webhook(settings=Settings(), metrics=Metrics(), default_policy=parse_policy(yaml.safe_load(policy) or {}),
                   warmed=True)
    state = ClusterState(cluster_index(*objects), (), context=LIVE_CONTEXT)
    hook.live = LiveCluster("/nonexistent")
    hook.live._state = state
    hook.live.readiness = lambda: []      # type: ignore[method-assign]
    return hook


def answer(hook: Webhook, obj: dict) -> dict:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u", "kind": {"group": "resource.k8s.io", "version": "v1", "kind": obj["kind"]},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceclaims"},
        "operation": "CREATE", "namespace": "ml", "name": "train", "object": obj}}
    resp = create_app(hook).test_client().post("/validate", json=body)
    assert resp.status_code == 200
    return resp.get_json()["response"]


@pytest.mark.parametrize("mode, allowed", [(None, False), ("exceptPolicyRules", False), ("all", True),
                                           ("none", False)])
def test_an_objects_annotation_cannot_switch_off_what_the_policy_denies(mode, allowed):
    policy = "feasibility: deny\n" + (f"annotationSuppressions: {mode}\n" if mode else "")
    hook = hook_with_state(policy, CLASS, slice_obj("node-0"))
    resp = answer(hook, claim_obj(8, annotations={"dralint.io/ignore": "DRA701"}))
    assert resp["allowed"] is allowed


def test_annotations_still_hide_rules_the_policy_does_not_name():
    hook = hook_with_state("severities: {DRA208: error}\n", CLASS, slice_obj("node-0"))
    obj = claim_obj(annotations={"dralint.io/ignore": "DRA600"})
    obj["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nic.example.com"
    resp = answer(hook, obj)
    assert not any("DRA600" in w for w in resp.get("warnings", []))


# --- the live state in a worker ------------------------------------------------------------------------

def test_a_worker_parses_only_what_changed(tmp_path):
    folder = tmp_path / "state"
    folder.mkdir()
    store = Store()
    store.replace("deviceclasses", [CLASS], "5", "resource.k8s.io/v1")
    slices = [slice_obj(f"node-{i}") for i in range(20)]
    for s in slices:
        s["metadata"]["resourceVersion"] = "4"
    store.replace("resourceslices", slices, "5", "resource.k8s.io/v1")
    publish = Published(folder, store)
    live = LiveCluster(str(folder))
    assert live.refresh()
    first = {s.name: s for s in live.current().index.slices}
    changed = slice_obj("node-3", 5)
    changed["metadata"]["resourceVersion"] = "6"
    store.apply("resourceslices", "MODIFIED", changed, "resource.k8s.io/v1")
    publish()
    assert live.refresh()
    second = {s.name: s for s in live.current().index.slices}
    assert second["node-3-gpu"] is not first["node-3-gpu"] and len(second["node-3-gpu"].value["spec"]["devices"]) == 5
    assert all(second[n] is first[n] for n in first if n != "node-3-gpu")
    assert not live.refresh()      # nothing new: nothing read


# --- readiness: unready until the first full sync, then ready on the last good state ------------------

FORBIDDEN = ("the webhook may not list and watch resourceslices.resource.k8s.io (403 Forbidden: ...); give its "
             "ServiceAccount get, list and watch on it (webhook/deploy/base/rbac.yaml)")


def publish(folder: Path, store: Store, synced: bool) -> LiveCluster:
    """The watcher's files for ``store`` (a snapshot and the heartbeat; ``synced``: it says every resource
    was listed), and a worker that has read them."""
    publisher = Publisher(folder)
    publisher.snapshot(store.drain(every=True).rows or [])
    write_status(folder, {"pid": 1, "time": time.time(), "generation": publisher.generation,
                          "synced_at": publisher.generation if synced else 0, "problem": "",
                          "resources": store.status()})
    live = LiveCluster(str(folder))
    live.refresh()
    return live


def test_before_the_first_sync_a_refused_resource_is_named_and_the_replica_unready(tmp_path):
    store = Store()
    for name, *_ in WATCHED:
        if name != "resourceslices":
            store.replace(name, [], "5", "v1")
    store.failed("resourceslices", FORBIDDEN, denied=True)
    problems = publish(tmp_path, store, False).readiness()
    assert problems == [FORBIDDEN, "cluster state not synced yet: resourceslices"]


def test_after_the_first_sync_degraded_watches_leave_the_replica_ready(tmp_path):
    store = Store()
    for name, *_ in WATCHED:
        store.replace(name, [], "5", "v1")
    store.failed("resourceslices", FORBIDDEN, denied=True)                        # a binding edited away
    store.failed("nodes", "nodes: GET /api/v1/nodes: connection refused")         # the API server restarting
    live = publish(tmp_path, store, True)
    assert live.readiness() == []
    lines = live.metric_lines()
    assert 'dralint_webhook_cluster_denied{resource="resourceslices"} 1' in lines
    assert 'dralint_webhook_cluster_watch_connected{resource="nodes"} 0' in lines
    assert 'dralint_webhook_cluster_watch_failures_total{resource="nodes"} 1' in lines


def test_a_worker_that_was_ready_stays_ready_while_the_watcher_is_replaced(tmp_path):
    store = Store()
    for name, *_ in WATCHED:
        store.replace(name, [], "5", "v1")
    live = publish(tmp_path, store, True)
    assert live.readiness() == []
    # The watcher died (no heartbeat for a minute), then a new one starts and has listed nothing yet.
    write_status(tmp_path, {"pid": 2, "time": time.time() - 60, "generation": 0, "synced_at": 0, "problem": "",
                            "resources": Store().status()})
    live._status = (0.0, None)     # read the heartbeat now, not from the half-second cache
    assert live.readiness() == []
    assert live.metric_lines()[-1].startswith("dralint_webhook_cluster_watcher_heartbeat_age_seconds 6")
    # A worker that never served a synced state is not ready on the same files.
    assert LiveCluster(str(tmp_path)).readiness() == ["cluster watcher not running (last heartbeat 60 s ago)"]


def test_every_cluster_metric_is_documented(tmp_path):
    families = [line.split()[2] for line in LiveCluster(str(tmp_path)).metric_lines() if line.startswith("# TYPE")]
    root = Path(__file__).resolve().parents[2]
    for doc in (root / "webhook" / "README.md", root / "docs" / "webhook-cluster-state.md"):
        text = doc.read_text()
        assert [name for name in families if f"`{name}`" not in text] == [], doc


# --- the guard ----------------------------------------------------------------------------------------

def test_a_review_past_its_deadline_is_stopped_wherever_it_is():
    guard = Guard(interval=0.01)
    started = time.monotonic()
    with pytest.raises(ReviewTimedOut):
        with guard.review(time.monotonic() + 0.2):
            while True:          # pure Python that never ends by itself
                sum(range(100))
    assert time.monotonic() - started < 5
    assert guard.fired["deadline"] == 1


def test_a_review_that_ends_in_time_is_never_interrupted_later():
    guard = Guard(interval=0.001)
    for _ in range(200):
        try:
            with guard.review(time.monotonic() + 0.002):
                sum(range(2000))
        except ReviewAborted:
            pass
    time.sleep(0.05)
    sum(range(100000))       # no stray exception arrives after the reviews


def test_over_memory_stops_the_reviews_in_flight():
    guard = Guard(max_rss=1, interval=3600)
    hit = threading.Event()

    def busy() -> None:
        try:
            with guard.review(time.monotonic() + 60):
                while True:
                    sum(range(100))
        except ReviewAborted as exc:
            hit.set() if "memory" in exc.reason else None

    thread = threading.Thread(target=busy)
    thread.start()
    time.sleep(0.05)
    guard.check()
    thread.join(timeout=5)
    assert hit.is_set() and guard.fired["memory"] == 1


# --- files: renames, emptied folders, log fields ----------------------------------------------------------

def test_a_rename_in_the_cluster_folder_is_noticed_and_an_emptied_folder_refused(tmp_path):
    folder = tmp_path / "cluster"
    folder.mkdir()
    (folder / "a.yaml").write_text(yaml.safe_dump(CLASS) + "---\n" + yaml.safe_dump(slice_obj("node-0")))
    hook = build_webhook(Settings(cluster_paths=(str(folder),), reload_interval=0))
    assert len(hook.cluster().index.slices) == 1
    (folder / "a.yaml").rename(folder / "b.yml")
    hook.cluster()
    assert hook.cluster_source.error == "" and hook.metrics.collect().counters["reloads"] == {
        ("cluster", "success"): 1.0}
    (folder / "b.yml").unlink()
    assert len(hook.cluster().index.slices) == 1      # the good state stays
    assert "no objects" in hook.cluster_source.error


def test_log_fields_are_cut():
    import logging

    record = logging.LogRecord("x", logging.INFO, "f", 1, "review", (), None)
    captured: list[dict] = []

    class Keep(logging.Handler):
        def emit(self, rec: logging.LogRecord) -> None:
            captured.append(orjson.loads(JsonFormatter().format(rec)))

    logger = logging.getLogger("dralint_webhook.test")
    logger.addHandler(Keep())
    logger.setLevel(logging.INFO)
    log(logger, logging.INFO, "review", uid="u" * 100_000, name="n" * 5000, count=3)
    assert len(captured[0]["uid"]) == FIELD_MAX and len(captured[0]["name"]) == FIELD_MAX and captured[0]["count"] == 3
    assert captured[0]["pid"] == os.getpid()   # tells gunicorn's workers apart
    assert record.getMessage() == "review"


def test_snapshot_rows_keep_their_bytes(tmp_path):
    store = Store()
    store.replace("namespaces", [{"metadata": {"name": "ml", "labels": {"a": "b\tc\nd"}}}], "3", "v1")
    Published(tmp_path, store)
    update = Follower(tmp_path).poll()
    assert [orjson.loads(r.data)["metadata"]["labels"] for r in update.rows] == [{"a": "b\tc\nd"}]
    assert Path(tmp_path / "state").read_bytes().count(b"\n") == 2


def test_the_fleet_view_follows_changes_in_place_and_judges_like_a_fresh_one(tmp_path):
    from dralint_webhook.cluster import ClusterState as State
    from dralint_webhook.judge import judge
    from dralint_webhook.admission import parse_review
    import json as _json

    folder = tmp_path / "state"
    folder.mkdir()
    store = Store()
    cls = dict(CLASS, metadata={"name": "gpu.example.com", "resourceVersion": "1"})
    store.replace("deviceclasses", [cls], "5", "resource.k8s.io/v1")
    slices = [dict(slice_obj(f"node-{i}"), metadata={"name": f"node-{i}-gpu", "resourceVersion": "2"}) for i in range(3)]
    store.replace("resourceslices", slices, "5", "resource.k8s.io/v1")
    # The watch lists every Node: the slices' nodes exist (a slice of a node without one gives nothing).
    store.replace("nodes", [{"metadata": {"name": f"node-{i}", "resourceVersion": "3"}} for i in range(3)], "5", "v1")
    policy = parse_policy({"feasibility": "deny"})
    live = LiveCluster(str(folder), release_of=lambda: policy.options.release)
    publish = Published(folder, store)
    live.refresh()

    def allowed(count: int) -> bool:
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": "u", "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"},
            "operation": "CREATE", "namespace": "ml", "name": "train", "object": claim_obj(count)}}
        state = live._state
        fresh = State(state.index, (), context=LIVE_CONTEXT)     # no kept view: the engine builds one
        kept = judge(parse_review(_json.dumps(body).encode()), policy, state).allowed
        assert kept == judge(parse_review(_json.dumps(body).encode()), policy, fresh).allowed
        return kept

    assert allowed(2) and not allowed(3)
    bigger = dict(slice_obj("node-1", 4), metadata={"name": "node-1-gpu", "resourceVersion": "9"})
    store.apply("resourceslices", "MODIFIED", bigger, "resource.k8s.io/v1")
    publish()
    live.refresh()
    assert allowed(4) and not allowed(5)
    store.apply("resourceslices", "DELETED", bigger, "resource.k8s.io/v1")
    publish()
    live.refresh()
    assert allowed(2) and not allowed(3)
    assert live.fleet.builds == 1          # changed in place, never built again
    # A DeviceTaintRule may taint any device of the fleet: the view is built again beside the old one.
    rule = {"metadata": {"name": "drain", "resourceVersion": "10"},
            "spec": {"deviceSelector": {"driver": "gpu.example.com"},
                     "taint": {"key": "maintenance", "effect": "NoSchedule"}}}
    for event, fits in (("ADDED", 0), ("DELETED", 2)):
        store.apply("devicetaintrules", event, rule, "resource.k8s.io/v1alpha3")
        publish()
        live.refresh()
        assert (fits == 0 or allowed(fits)) and not allowed(fits + 1)
    assert live.fleet.builds == 3
