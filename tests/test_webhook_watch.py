"""The cluster watch against a fake API server: lists, watches, expiry, auth errors and faults.

Each test starts :mod:`fakeapi` on 127.0.0.1 and the watcher (``dralint_webhook.watcher.run``) in a
thread with a kubeconfig pointing at it, and stops both. Waits are polls bounded in time.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson
import pytest
import yaml

from dralint_webhook.live import LiveCluster
from dralint_webhook.reflector import PAGE_SIZE, Backoff, Timing
from dralint_webhook.snapshot import Follower
from dralint_webhook.watcher import WatchSettings, run
from fakeapi import FakeApiServer, FakeCluster

FAST = Timing(watch_seconds=(2, 3), read_margin=2.0, list_timeout=5.0, backoff_initial=0.05, backoff_max=0.4)
TOKEN = "s3cr3t-token"


def kubeconfig(path: Path, url: str, token: str = TOKEN) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "fake", "user": {"token": token}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}))
    return path


def wait_for(condition: Callable[[], Any], seconds: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class Running:
    """A watcher thread publishing into ``folder``, and its store once it has one."""

    def __init__(self, tmp: Path, server: FakeApiServer, token: str = TOKEN, timing: Timing = FAST) -> None:
        self.folder = tmp / "state"
        self.stop = threading.Event()
        settings = WatchSettings(folder=str(self.folder), kubeconfig=str(kubeconfig(tmp / "kubeconfig", server.url,
                                                                                     token)),
                                 interval=0.05, timing=timing)
        self.result: dict[str, Any] = {}
        self.thread = threading.Thread(target=lambda: self.result.setdefault("store", run(settings, self.stop)),
                                       daemon=True)
        self.thread.start()
        self.live = LiveCluster(str(self.folder), interval=0.05)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=15)
        assert not self.thread.is_alive()

    def objects(self, resource: str) -> dict[str, dict]:
        read = Follower(self.folder).poll()       # a worker started now: the snapshot and its log
        if read is None:
            return {}
        return {row.key: orjson.loads(row.data) for row in read.rows if row.resource == resource}

    def synced(self) -> bool:
        self.live.refresh()
        return self.live.readiness() == []


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.create("namespaces", {"metadata": {"name": "ml", "labels": {"resource.kubernetes.io/admin-access": "true"}}})
    c.create("nodes", {"metadata": {"name": "node-0", "labels": {"pool": "a"}},
                       "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
                       "status": {"images": [{"names": ["x" * 100]}] * 50}})
    c.create("deviceclasses", {"metadata": {"name": "gpu.example.com"},
                               "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})
    c.create("resourceslices", slice_of("node-0"))
    return c


def slice_of(node: str, devices: int = 2, generation: int = 1) -> dict:
    return {"metadata": {"name": f"{node}-gpu"},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}}
                                 for i in range(devices)]}}


@pytest.fixture
def server(cluster: FakeCluster) -> Iterator[FakeApiServer]:
    with FakeApiServer(cluster) as srv:
        srv.faults.token = TOKEN
        yield srv


@pytest.fixture
def watching(tmp_path: Path, server: FakeApiServer) -> Iterator[Running]:
    running = Running(tmp_path, server)
    try:
        yield running
    finally:
        running.close()


def test_lists_every_resource_then_watches_from_the_lists_version(watching, server):
    wait_for(watching.synced, what="first full sync")
    assert set(watching.objects("resourceslices")) == {"node-0-gpu"}
    assert set(watching.objects("namespaces")) == {"ml"}
    node = watching.objects("nodes")["node-0"]
    # A Node is kept with what judging reads: labels and taints, not its status.
    assert node["metadata"]["labels"] == {"pool": "a"} and node["spec"]["taints"] and "status" not in node
    lists = server.calls("resourceslices", watch=False)
    assert lists[0]["limit"] == str(PAGE_SIZE) and "resourceVersion" not in lists[0]
    watch = wait_for(lambda: server.calls("resourceslices", watch=True), what="a watch")[0]
    assert watch["allowWatchBookmarks"] == "true" and int(watch["resourceVersion"]) >= 104
    assert 2 <= int(watch["timeoutSeconds"]) <= 3


TAINT_RULE = {"metadata": {"name": "drain-node-1"},
              "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": "node-1"},
                       "taint": {"key": "maintenance", "effect": "NoSchedule"}}}


def test_device_taint_rules_are_watched_in_the_version_that_serves_them(watching, cluster, server):
    wait_for(watching.synced, what="first full sync")
    cluster.create("devicetaintrules", TAINT_RULE)
    rule = wait_for(lambda: watching.objects("devicetaintrules").get("drain-node-1"), what="the rule")
    assert rule["apiVersion"] == "resource.k8s.io/v1alpha3" and rule["kind"] == "DeviceTaintRule"
    assert wait_for(lambda: server.calls("devicetaintrules", watch=True), what="a watch of the rules")
    assert all(path == "/apis/resource.k8s.io/v1alpha3/devicetaintrules"
               for path, _ in server.requests if path.endswith("/devicetaintrules"))
    status = wait_for(lambda: (r := watching.live.status()["resources"]["devicetaintrules"])["objects"] == 1 and r,
                      what="the heartbeat to count the rule")
    assert status["served"] and status["synced"] and not status["error"]


def test_a_cluster_that_does_not_serve_device_taint_rules_is_ready_without_them(tmp_path, cluster, server):
    server.faults.taint_rules_served = False   # the DRADeviceTaintRules gate off, as in most clusters
    running = Running(tmp_path, server)
    try:
        wait_for(running.synced, what="first full sync")
        status = running.live.status()["resources"]["devicetaintrules"]
        assert status["synced"] and not status["served"] and status["objects"] == 0 and not status["error"]
        assert not server.calls("devicetaintrules")   # looked up in discovery, never listed
        assert set(running.objects("resourceslices")) == {"node-0-gpu"}
    finally:
        running.close()


def test_device_taint_rules_served_later_are_found_again(tmp_path, cluster, server):
    # The API server restarts with the gate on: a 404-free discovery a while later finds the rules.
    server.faults.taint_rules_served = False
    cluster.create("devicetaintrules", TAINT_RULE)
    running = Running(tmp_path, server, timing=replace(FAST, rediscover=0.2))
    try:
        wait_for(running.synced, what="first full sync")
        server.faults.taint_rules_served = True
        wait_for(lambda: "drain-node-1" in running.objects("devicetaintrules"), what="the rule after rediscovery")
        server.faults.taint_rules_served = False      # and restarts with it off again: a 404, then none
        wait_for(lambda: not running.objects("devicetaintrules"), seconds=15, what="the rules to go")
        assert running.thread.is_alive()
    finally:
        running.close()


def test_live_state_follows_create_update_delete_within_two_seconds(watching, cluster):
    wait_for(watching.synced, what="first full sync")
    live = LiveCluster(str(watching.folder), interval=0.05)
    live.start()
    try:
        def devices(name: str) -> int | None:
            state = live.current()
            found = [s for s in state.index.slices if s.name == name] if state else []
            return len(found[0].value["spec"]["devices"]) if found else None

        for change, expect in ((lambda: cluster.create("resourceslices", slice_of("node-1", 4)), 4),
                               (lambda: cluster.update("resourceslices", slice_of("node-1", 6, 2)), 6),
                               (lambda: cluster.delete("resourceslices", "node-1-gpu"), None)):
            started = time.monotonic()
            change()
            wait_for(lambda: devices("node-1-gpu") == expect if expect else
                     (live.current() is not None and devices("node-1-gpu") is None and live.swaps > 2),
                     seconds=2.0, what=f"the live state to show {expect} devices")
            assert time.monotonic() - started < 2.0
    finally:
        live.stop()


def test_pages_are_followed_to_the_end(tmp_path, cluster, server):
    for i in range(PAGE_SIZE * 2 + 7):
        cluster.create("resourceclaims", {"metadata": {"name": f"c{i:05d}", "namespace": "ml"},
                                          "spec": {"devices": {"requests": []}}})
    running = Running(tmp_path, server)
    try:
        wait_for(running.synced, what="first full sync")
        assert len(running.objects("resourceclaims")) == PAGE_SIZE * 2 + 7
        pages = server.calls("resourceclaims", watch=False)
        assert [bool(p.get("continue")) for p in pages[:3]] == [False, True, True]
    finally:
        running.close()


def test_an_expired_watch_is_answered_with_a_full_list(watching, cluster, server):
    server.faults.bookmark_every = 3600     # no bookmark moves the position past the compaction
    wait_for(watching.synced, what="first full sync")
    wait_for(lambda: server.calls("resourceslices", watch=True), what="a watch")
    cluster.create("nodes", {"metadata": {"name": "node-9"}})     # other changes move the cluster's version
    cluster.compact()
    cluster.create("resourceslices", slice_of("node-2"))
    cluster.compact()                                              # that event is gone from the log too
    wait_for(lambda: "node-2-gpu" in watching.objects("resourceslices"), seconds=10, what="relist")
    status = wait_for(lambda: watching.live.status()["resources"]["resourceslices"]["relists"] >= 1 and
                      watching.live.status(), what="relist counted")
    assert status["resources"]["resourceslices"]["synced"]


def test_a_stream_cut_in_the_middle_of_an_event_loses_nothing(watching, cluster, server):
    wait_for(watching.synced, what="first full sync")
    wait_for(lambda: server.calls("resourceslices", watch=True), what="a watch")
    server.faults.cut_watches = 1
    cluster.create("resourceslices", slice_of("node-3"))
    cluster.create("resourceslices", slice_of("node-4"))
    wait_for(lambda: {"node-3-gpu", "node-4-gpu"} <= set(watching.objects("resourceslices")), what="both slices")
    assert server.faults.cut_watches == 0


def test_unauthorized_is_not_ready_with_a_message_and_never_a_crash(tmp_path, server):
    running = Running(tmp_path, server, token="wrong")
    try:
        problems = wait_for(lambda: (running.live.refresh() or True) and
                            [p for p in running.live.readiness() if "401" in p], what="401 reported")
        assert "credentials" in problems[0]
        assert running.thread.is_alive()
    finally:
        running.close()


def test_forbidden_names_the_missing_permission_until_it_is_granted(tmp_path, server):
    server.faults.forbidden = {"resourceslices"}
    running = Running(tmp_path, server)
    try:
        problems = wait_for(lambda: [p for p in running.live.readiness() if "403" in p], what="403 reported")
        assert "resourceslices.resource.k8s.io" in problems[0] and "get, list and watch" in problems[0]
        assert not running.synced()
        server.faults.forbidden = set()
        wait_for(running.synced, what="ready once RBAC allows it")
    finally:
        running.close()


def test_rbac_from_before_taint_rules_were_watched_leaves_the_webhook_ready(tmp_path, cluster, server):
    # An upgrade that kept the old ClusterRole: the rules are refused, the webhook still serves.
    server.faults.forbidden = {"devicetaintrules"}
    cluster.create("devicetaintrules", TAINT_RULE)
    running = Running(tmp_path, server)
    try:
        wait_for(running.synced, what="ready without the rules")
        status = wait_for(lambda: (r := running.live.status()["resources"]["devicetaintrules"])["denied"] and r,
                          what="the refusal in the heartbeat")
        assert "403" in status["error"] and "devicetaintrules.resource.k8s.io" in status["error"]
        server.faults.forbidden = set()
        wait_for(lambda: "drain-node-1" in running.objects("devicetaintrules"), what="the rule once RBAC allows it")
    finally:
        running.close()


def test_a_slow_server_is_waited_for(tmp_path, server):
    server.faults.delay = 0.3
    running = Running(tmp_path, server)
    try:
        wait_for(running.synced, seconds=15, what="sync with a slow server")
    finally:
        running.close()


def test_an_unreachable_server_is_not_ready_and_retried(tmp_path):
    folder = tmp_path / "state"
    stop = threading.Event()
    settings = WatchSettings(folder=str(folder), kubeconfig=str(kubeconfig(tmp_path / "kc", "http://127.0.0.1:9")),
                             interval=0.05, timing=FAST)
    thread = threading.Thread(target=run, args=(settings, stop), daemon=True)
    thread.start()
    live = LiveCluster(str(folder))
    try:
        problems = wait_for(lambda: [p for p in live.readiness() if "cannot reach" in p], what="unreachable reported")
        assert problems
    finally:
        stop.set()
        thread.join(timeout=10)


def test_readiness_names_a_watcher_that_stopped(tmp_path):
    from dralint_webhook.snapshot import write_status

    folder = tmp_path / "state"
    folder.mkdir()
    live = LiveCluster(str(folder))
    assert live.readiness() == ["cluster watcher has not reported yet"]
    write_status(folder, {"time": time.time() - 60, "resources": {}, "problem": ""})
    live._status = (0.0, None)
    assert "not running" in live.readiness()[0]


def test_backoff_grows_with_jitter_and_is_capped():
    backoff = Backoff(0.8, 30.0, rand=lambda: 1.0)
    assert [backoff.next() for _ in range(7)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0]
    low = Backoff(0.8, 30.0, rand=lambda: 0.0)
    assert low.next() == 0.4
    backoff.reset()
    assert backoff.next() == 0.8


# --- replayed: the responses of a real kube-apiserver v1.36.2 ----------------------------------------

@pytest.fixture
def replayed(shared: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(replay=shared / "fixtures" / "apiserver-1.36") as srv:
        yield srv


def test_replayed_lists_watch_and_expiry(tmp_path, replayed):
    running = Running(tmp_path, replayed, timing=Timing(watch_seconds=(1, 1), read_margin=2.0, list_timeout=5.0,
                                                         backoff_initial=0.05, backoff_max=0.4))
    try:
        wait_for(running.synced, what="first full sync")
        assert set(running.objects("namespaces")) == {"default", "kube-node-lease", "kube-public", "kube-system", "ml"}
        assert set(running.objects("nodes")) == {"node-0", "node-1", "node-2"}
        assert set(running.objects("deviceclasses")) == {"gpu.example.com", "nic.example.com"}
        claim = running.objects("resourceclaims")["ml/train"]
        assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
        assert "managedFields" not in claim["metadata"]
        # The recorded watch (ADDED, MODIFIED, DELETED, BOOKMARK) and then the recorded expiry: a relist.
        status = wait_for(lambda: (running.live.status() or {}).get("resources", {}).get("resourceslices", {}).get(
            "relists", 0) >= 1 and running.live.status()["resources"]["resourceslices"], what="relist after 410")
        assert status["events"] >= 5 and status["synced"]
        assert set(running.objects("resourceslices")) == {"node-0-gpu", "node-1-gpu", "node-2-gpu"}
        watches = replayed.calls("resourceslices", watch=True)
        assert watches[0]["resourceVersion"] == "225" and watches[1]["resourceVersion"] == "228"
        pages = replayed.calls("namespaces", watch=False)
        assert [bool(p.get("continue")) for p in pages[:3]] == [False, True, True]
        live = LiveCluster(str(running.folder))
        live.refresh()
        assert live.current().index.namespace_labels("ml") == {"kubernetes.io/metadata.name": "ml",
                                                               "resource.kubernetes.io/admin-access": "true"}
    finally:
        running.close()


def test_replayed_forbidden_and_unauthorized(tmp_path, replayed):
    replayed.faults.forbidden = {"resourceslices"}
    running = Running(tmp_path / "a", replayed) if (tmp_path / "a").mkdir() is None else None
    try:
        problems = wait_for(lambda: [p for p in running.live.readiness() if "403" in p], what="403 reported")
        assert 'cannot list resource \\"resourceslices\\"' in problems[0] or "cannot list resource" in problems[0]
    finally:
        running.close()
    replayed.faults.forbidden = set()
    replayed.faults.token = "the-right-one"
    running = Running(tmp_path / "b", replayed, token="wrong") if (tmp_path / "b").mkdir() is None else None
    try:
        wait_for(lambda: [p for p in running.live.readiness() if "401" in p], what="401 reported")
    finally:
        running.close()


# --- the real server with --watch: one watcher per replica, reviews follow the cluster ------------------

def test_serve_watch_judges_against_the_live_cluster(tmp_path, cluster):
    from test_webhook_server import Client, Server, claim, free_port, make_certs

    certs = make_certs(tmp_path / "certs")
    with FakeApiServer(cluster, tls=(str(certs / "tls.crt"), str(certs / "tls.key"))) as api:
        api.faults.token = TOKEN
        config = tmp_path / "kubeconfig"
        config.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": api.url, "certificate-authority": str(certs / "ca.crt"),
                                                      "tls-server-name": "dralint-webhook.dralint.svc"}}],
            "users": [{"name": "fake", "user": {"token": TOKEN}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}))
        policy = tmp_path / "policy.yaml"
        policy.write_text("feasibility: deny\n")
        health = free_port()
        srv = Server(tmp_path, certs / "tls.crt", certs / "tls.key", "--config", str(policy), "--watch",
                     "--kubeconfig", str(config), "--health-port", str(health))
        try:
            srv.wait_ready(certs / "ca.crt")
            client = Client(srv.port, certs / "ca.crt")

            def verdict(obj: dict) -> dict:
                return client.review(obj)

            big = claim(count=4)
            assert verdict(big)["allowed"] is False                      # node-0 has 2 devices
            cluster.create("resourceslices", slice_of("node-1", 8))
            wait_for(lambda: verdict(big)["allowed"], seconds=5, what="the new slice to count")
            cluster.create("devicetaintrules", TAINT_RULE)              # node-1's GPUs drained for maintenance
            wait_for(lambda: not verdict(big)["allowed"], seconds=10, what="the taint rule to count")
            message = verdict(big)["status"]["message"]
            assert "DRA701" in message and "taint `maintenance=:NoSchedule`" in message
            cluster.delete("devicetaintrules", "drain-node-1")
            wait_for(lambda: verdict(big)["allowed"], seconds=10, what="the taint rule's removal to count")
            nic = claim(device_class="nic.example.com")
            assert "DRA703" in verdict(nic)["status"]["message"]         # the class does not exist yet
            cluster.create("deviceclasses", {"metadata": {"name": "nic.example.com"}, "spec": {}})
            wait_for(lambda: "DRA703" not in json.dumps(verdict(nic)), seconds=5, what="the new class to count")
            client.close()
            import http.client as hc
            conn = hc.HTTPConnection("127.0.0.1", health, timeout=5)
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
            assert 'dralint_webhook_cluster_synced{resource="resourceslices"} 1' in text
            assert "dralint_webhook_cluster_last_event_age_seconds" in text
            # One list and one watch stream per resource for the replica, whatever the number of workers.
            assert len(api.calls("resourceslices", watch=False)) == 1
        finally:
            assert srv.stop() == 0
