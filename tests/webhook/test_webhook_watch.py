"""The cluster watch against a fake API server: lists, watches, expiry, auth errors and faults.

Each test starts :mod:`fakeapi` on 127.0.0.1 and the watcher (``dralint_webhook.watcher.run``) in a
thread with a kubeconfig pointing at it, and stops both. Waits are polls bounded in time.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from dralint import gojson
from dralint_webhook.admission import AdmissionRequest, parse_review
from dralint_webhook.jsonscan import identity, split_items
from dralint_webhook.judge import judge
from dralint.cluster.api import Api, load_endpoint
from dralint_webhook.live import LiveCluster
from dralint_webhook.logs import LOGGER
from dralint_webhook.policy import Policy, parse_policy
from dralint_webhook.reflector import PAGE_SIZE, STALL_FACTOR, Backoff, Reflector, Timing
from dralint_webhook.snapshot import Follower
from dralint_webhook.store import RESOURCES, Store
from dralint_webhook.verdict import Verdict
from dralint_webhook.watcher import WatchSettings, run
from fakeapi import FakeApiServer, FakeCluster, raw, write_kubeconfig

FAST = Timing(watch_seconds=(2, 3), read_margin=2.0, list_timeout=5.0, backoff_initial=0.05, backoff_max=0.4)
# client-go's backoff (0.8 s doubling to 30 s), with short watches: for rates the API server would see.
REAL_BACKOFF = Timing(watch_seconds=(2, 3), read_margin=2.0, list_timeout=5.0)
TOKEN = "s3cr3t-token"


def kubeconfig(path: Path, url: str, token: str = TOKEN, token_file: Path | None = None) -> Path:
    user = {"tokenFile": str(token_file)} if token_file is not None else {"token": token}
    return write_kubeconfig(path, url, user=user)


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

    def __init__(self, tmp: Path, server: FakeApiServer, token: str = TOKEN, timing: Timing = FAST,
                 token_file: Path | None = None) -> None:
        self.folder = tmp / "state"
        self.stop = threading.Event()
        config = kubeconfig(tmp / "kubeconfig", server.url, token, token_file)
        settings = WatchSettings(folder=str(self.folder), kubeconfig=str(config), interval=0.05, timing=timing)
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
        return {row.key: gojson.loads(row.data) for row in read.rows if row.resource == resource}

    def synced(self) -> bool:
        self.live.refresh()
        return self.live.readiness() == []

    def status(self, resource: str) -> dict[str, Any]:
        """The resource's part of the watcher's latest heartbeat."""
        self.live._status = (0.0, None)   # read the file now, not the half-second cache
        return (self.live.status() or {}).get("resources", {}).get(resource, {})


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


def test_backoff_doubles_with_jitter_to_its_cap_and_starts_over_after_two_quiet_minutes():
    now = [0.0]
    backoff = Backoff(0.8, 30.0, 120.0, rand=lambda: 0.0, clock=lambda: now[0])
    waits = []
    for _ in range(8):
        waits.append(backoff.next())
        now[0] += waits[-1]
    assert waits == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    now[0] += 80                      # failing again within two minutes of the last wait: still capped
    assert backoff.next() == 30.0
    now[0] += 121                     # two quiet minutes: from the start again
    assert backoff.next() == 0.8
    # client-go's jitter 1.0: each wait between the step and twice it.
    assert Backoff(0.8, 30.0, rand=lambda: 0.99).next() == pytest.approx(1.592)


# --- objects the API server keeps but common decoders refuse: decoded, or skipped and named ----------

def claim_with(name: str, parameters: Any) -> dict:
    return {"metadata": {"name": name, "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}],
                                 "config": [{"opaque": {"driver": "gpu.example.com", "parameters": parameters}}]}}}


def parameters(claim: dict) -> Any:
    return claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]


def depth(value: Any) -> int:
    levels = 0
    while isinstance(value, list):
        levels += 1
        value = value[0] if value else None
    return levels


DEEP = raw(b"[" * 5000 + b"]" * 5000)                   # Go reads 10,000 levels; orjson stops at 1,024
LONE_SURROGATE = raw(b'{"note": "\\ud800"}')             # Go reads it as U+FFFD
NOT_JSON = raw(b'{"x": NaN}')                            # Go refuses it too: no API server sends it


def skipped_names(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.fields["object"] for r in caplog.records  # type: ignore[attr-defined]
            if r.getMessage() == "cluster watch skipped an object it cannot read"]


def test_a_replica_started_with_unreadable_claims_stored_becomes_ready_and_follows_new_ones(
        tmp_path, cluster, server, caplog):
    for name, value in (("deep", DEEP), ("surrogate", LONE_SURROGATE), ("broken", NOT_JSON)):
        cluster.create("resourceclaims", claim_with(name, value))
    running = Running(tmp_path, server)
    try:
        wait_for(running.synced, what="ready with those claims stored")
        claims = running.objects("resourceclaims")
        assert set(claims) == {"ml/deep", "ml/surrogate"}
        assert depth(parameters(claims["ml/deep"])) == 5000
        assert parameters(claims["ml/surrogate"]) == {"note": "\ufffd"}
        # The page that held the broken claim was read item by item: it alone is left out, and named.
        assert running.status("resourceclaims")["skipped"] == 1
        assert skipped_names(caplog) == ["ml/broken"]
        cluster.create("resourceclaims", claim_with("later", {"size": 1}))
        wait_for(lambda: "ml/later" in running.objects("resourceclaims"), what="a claim created afterwards")
    finally:
        running.close()


def test_a_synced_watcher_keeps_following_claims_after_unreadable_ones_are_created(watching, cluster, caplog):
    wait_for(watching.synced, what="first full sync")
    for name, value in (("deep", DEEP), ("surrogate", LONE_SURROGATE), ("broken", NOT_JSON)):
        cluster.create("resourceclaims", claim_with(name, value))
    cluster.create("resourceclaims", claim_with("after", {"size": 1}))
    wait_for(lambda: {"ml/deep", "ml/surrogate", "ml/after"} <= set(watching.objects("resourceclaims")),
             what="the claims around the broken one")
    assert "ml/broken" not in watching.objects("resourceclaims")
    assert depth(parameters(watching.objects("resourceclaims")["ml/deep"])) == 5000
    status = watching.status("resourceclaims")
    assert status["skipped"] == 1 and status["failures"] == 0 and status["relists"] == 0
    assert skipped_names(caplog) == ["ml/broken"]
    assert watching.synced()


def test_a_list_page_that_does_not_decode_is_split_item_by_item():
    page = (b'{"kind":"ResourceClaimList","metadata":{"resourceVersion":"7"},"items":[\n'
            b' {"metadata":{"name":"a","namespace":"ml"},"spec":{"s":"]}[{\\"\\\\","t":1}},'   # brackets in a string
            b'{"metadata":{"namespace":"ml","name":"bad","resourceVersion":"6"},"spec":{"x":NaN}} ,'
            b'{"metadata":{"name":"c"}}]}')
    envelope, items = split_items(page)
    assert envelope == {"kind": "ResourceClaimList", "metadata": {"resourceVersion": "7"}, "items": []}
    assert len(items) == 3
    assert gojson.loads(items[0])["spec"] == {"s": ']}[{"\\', "t": 1}
    with pytest.raises(gojson.GoJSONError):
        gojson.loads(items[1])
    assert (str(identity(items[1])), identity(items[1]).resource_version) == ("ml/bad", "6")
    assert str(identity(items[2])) == "c"
    # A watch event names its object, not a label called "name"; text that never closes still names it.
    event = (b'{"type":"ADDED","object":{"kind":"ResourceClaim","metadata":{"name":"n","namespace":"ns",'
             b'"labels":{"name":"not-this"}},"spec":{"a":[1,}}}')
    assert str(identity(event)) == "ns/n"
    assert str(identity(b'{"metadata":{"namespace":"q","name":"cut","x":[')) == "q/cut"
    assert str(identity(b"garbage")) == "(no name found)"


# --- restarts like client-go's reflector: backoff, short watches, stalls, connections ---------------------

def requests_per_second(server: FakeApiServer, seconds: float) -> float:
    """Every request the fake receives (lists and watches of all resources) over the next ``seconds``."""
    start = time.monotonic()
    time.sleep(seconds)
    return server.requests_between(start, start + seconds) / seconds


@pytest.mark.slow  # seconds of real backoff and deadlines: run by CI with the slow suites
def test_a_410_storm_is_answered_with_backed_off_relists(tmp_path, server, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    running = Running(tmp_path, server, timing=REAL_BACKOFF)
    try:
        wait_for(running.synced, what="first full sync")
        server.faults.expire_watches = True      # every watch, the open ones too, gets ERROR 410 Expired
        rate = requests_per_second(server, 12.0)
        print(f"410 storm: {rate:.2f} requests/s over 12 s")
        assert rate <= 5.0, f"{rate:.1f} requests/s under a 410 storm"
        assert running.status("resourceslices")["relists"] >= 2
        wait_for(lambda: not running.status("resourceslices")["connected"], what="the watch shown down")
        assert running.synced()                  # the last good state keeps serving
        reasons = [r.fields["reason"] for r in caplog.records  # type: ignore[attr-defined]
                   if r.getMessage() == "cluster watch interrupted; listing again"]
        assert reasons and all("expired" in reason for reason in reasons)
    finally:
        running.close()


@pytest.mark.slow  # seconds of real backoff and deadlines: run by CI with the slow suites
def test_watches_that_end_at_once_are_backed_off_as_failures(tmp_path, server):
    running = Running(tmp_path, server, timing=REAL_BACKOFF)
    try:
        wait_for(running.synced, what="first full sync")
        server.faults.close_watches = True
        rate = requests_per_second(server, 12.0)
        print(f"watches that end at once: {rate:.2f} requests/s over 12 s")
        assert rate <= 5.0, f"{rate:.1f} requests/s with watches that end at once"
        status = wait_for(lambda: (s := running.status("resourceslices"))["error"] and s, what="the failure shown")
        assert status["failures"] >= 2 and "without an event" in status["error"]
        assert status["relists"] == 0            # the position is still good: watched again, not listed
    finally:
        running.close()


def test_a_stalled_watch_is_noticed_within_the_bookmark_bound(tmp_path, cluster, server):
    timing = replace(FAST, watch_seconds=(30, 30), read_margin=5.0, bookmark_interval=0.4)
    bound = STALL_FACTOR * timing.bookmark_interval
    running = Running(tmp_path, server, timing=timing)
    try:
        wait_for(running.synced, what="first full sync")
        wait_for(lambda: running.status("resourceslices").get("events", 0) >= 2, what="bookmarks")
        watches = len(server.calls("resourceslices", watch=True))
        server.faults.stall_watches = 1   # each watch: one bookmark, then silence on an open connection
        stalled = time.monotonic()
        wait_for(lambda: len(server.calls("resourceslices", watch=True)) > watches, seconds=bound + 10,
                 what="a new watch after the stall")
        noticed = time.monotonic() - stalled
        print(f"a stall noticed after {noticed:.2f} s (bound {bound} s)")
        assert noticed < bound + 5.0, f"a stall noticed after {noticed:.1f} s (bound {bound} s)"
        wait_for(lambda: running.status("resourceslices")["failures"] >= 1, what="the stall counted")
        server.faults.stall_watches = None
        cluster.create("resourceslices", slice_of("node-5"))
        wait_for(lambda: "node-5-gpu" in running.objects("resourceslices"), what="the slice after the stall")
    finally:
        running.close()


def test_before_its_first_bookmark_a_watch_is_given_its_whole_timeout(tmp_path, server):
    timing = replace(FAST, watch_seconds=(3, 3), read_margin=1.0, bookmark_interval=0.4)
    running = Running(tmp_path, server, timing=timing)
    try:
        wait_for(running.synced, what="first full sync")
        server.faults.stall_watches = 0   # new watches send nothing at all (a server without periodic bookmarks)
        before = len(server.calls("resourceslices", watch=True))
        wait_for(lambda: len(server.calls("resourceslices", watch=True)) >= before + 2, seconds=15,
                 what="a silent watch given up")
        with server.lock:
            times = [t for (path, params), t in zip(server.requests, server.times)
                     if path.endswith("/resourceslices") and params.get("watch") == "1"]
        silent = times[before + 1] - times[before]
        print(f"a watch without bookmarks given up after {silent:.2f} s")
        assert silent >= timing.watch_seconds[0], f"a watch without bookmarks given up after {silent:.1f} s"
    finally:
        running.close()


def test_an_abandoned_watch_never_breaks_the_next_request_on_its_connection(tmp_path, server):
    server.faults.bookmark_every = 0.3
    api = Api(load_endpoint(str(kubeconfig(tmp_path / "kubeconfig", server.url))))
    path = "/apis/resource.k8s.io/v1/resourceslices"
    try:
        for _ in range(3):
            with api.watch(path, {"watch": "1", "resourceVersion": "1", "allowWatchBookmarks": "true",
                                  "timeoutSeconds": "30"}, timeout=5) as stream:
                for line in stream.lines():   # the stream goes on: more bookmarks are coming
                    if gojson.loads(line)["type"] == "BOOKMARK":
                        break
            page = api.get(path, {"limit": 10}, timeout=5)
            assert page["kind"] == "ResourceSliceList" and len(page["items"]) == 1
    finally:
        api.close()


def test_a_401_makes_the_next_request_read_the_token_again(tmp_path, cluster, server):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    running = Running(tmp_path, server, token_file=token_file)
    try:
        wait_for(running.synced, what="first full sync")
        server.faults.token = "rotated-token"   # the old token expired...
        wait_for(lambda: running.status("resourceslices").get("denied"), what="the 401")
        token_file.write_text("rotated-token")   # ...and the kubelet wrote the new one
        cluster.create("resourceslices", slice_of("node-7"))
        wait_for(lambda: "node-7-gpu" in running.objects("resourceslices"), what="the slice with the new token")
    finally:
        running.close()


def test_the_in_cluster_token_is_read_again_when_asked(tmp_path, monkeypatch):
    from kubernetes.config import incluster_config

    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("first")
    ca.write_text("not read here")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    endpoint = load_endpoint(None)
    assert endpoint.authorization() == "bearer first"
    token.write_text("second")
    assert endpoint.authorization() == "bearer first"     # the client's own refresh waits a minute
    assert endpoint.reload is not None
    endpoint.reload(endpoint.config)                      # what a 401 does
    assert endpoint.authorization() == "bearer second"


# --- readiness on the last good state, and the metrics that say how it is going ----------------------------

def metric(lines: list[str], name: str, resource: str) -> float:
    prefix = f'{name}{{resource="{resource}"}} '
    return float(next(line[len(prefix):] for line in lines if line.startswith(prefix)))


def test_after_the_first_sync_refused_watches_leave_the_replica_ready_and_the_metrics_say_so(
        watching, cluster, server):
    wait_for(watching.synced, what="first full sync")
    server.faults.forbidden = {"resourceslices"}       # a binding edited away, or a restarted API server
    wait_for(lambda: watching.status("resourceslices").get("denied"), what="the 403")
    assert watching.synced()
    lines = watching.live.metric_lines()
    assert metric(lines, "dralint_webhook_cluster_denied", "resourceslices") == 1
    assert metric(lines, "dralint_webhook_cluster_watch_connected", "resourceslices") == 0
    assert metric(lines, "dralint_webhook_cluster_watch_failures_total", "resourceslices") >= 1
    assert metric(lines, "dralint_webhook_cluster_last_list_timestamp_seconds", "resourceslices") > 0
    wait_for(lambda: watching.status("nodes").get("connected"), what="the other watches")
    server.faults.forbidden = set()
    cluster.create("resourceslices", slice_of("node-8"))
    wait_for(lambda: "node-8-gpu" in watching.objects("resourceslices"), what="the slice once allowed again")
    wait_for(lambda: (s := watching.status("resourceslices"))["connected"] and not s["denied"],
             what="connected again")
    assert watching.status("resourceslices")["relists"] >= 1


def test_a_reflector_the_server_did_not_answer_tries_again_once_another_request_is_answered(
        tmp_path, cluster, server):
    api = Api(load_endpoint(str(kubeconfig(tmp_path / "kubeconfig", server.url))))
    store = Store()
    stop = threading.Event()
    reflector = Reflector(api, store, "resourceslices", "v1", stop=stop,
                          timing=replace(FAST, backoff_initial=20.0, backoff_max=20.0))
    server.faults.down = True
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: store.status()["resourceslices"]["failures"] >= 1, what="the unanswered list")
        server.faults.down = False
        assert not store.status()["resourceslices"]["synced"]      # its own wait has 20 s or more to go
        api.get("/apis/resource.k8s.io", timeout=5)                 # another request of the watcher gets through
        wait_for(lambda: store.status()["resourceslices"]["synced"], seconds=5, what="the list once answered")
    finally:
        stop.set()
        thread.join(timeout=10)
        api.close()


@pytest.mark.slow
def test_after_a_30_s_outage_the_replica_stays_ready_and_catches_up(tmp_path, cluster, server):
    running = Running(tmp_path, server, timing=REAL_BACKOFF)
    try:
        wait_for(running.synced, what="first full sync")
        server.faults.down = True
        start = time.monotonic()
        while time.monotonic() - start < 30:
            assert running.synced(), "unready during the outage"
            time.sleep(1)
        assert not any(running.status(r)["connected"] for r, *_ in RESOURCES)
        server.faults.down = False
        back = time.monotonic()
        cluster.create("resourceclaims", claim_with("after-outage", {"size": 1}))
        wait_for(lambda: "ml/after-outage" in running.objects("resourceclaims"), seconds=70, what="the new claim")
        claim_after = time.monotonic() - back
        wait_for(lambda: all(running.status(r)["connected"] for r, *_ in RESOURCES), seconds=70,
                 what="every watch connected again")
        all_after = time.monotonic() - back
        print(f"after a 30 s outage: the new claim in the state {claim_after:.1f} s, every watch {all_after:.1f} s")
        assert claim_after < 2 * REAL_BACKOFF.backoff_max + 5   # at most one capped wait after the server is back
    finally:
        running.close()


# --- judging against the live state ------------------------------------------------------------------

def claim_review(count: int) -> AdmissionRequest:
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "train", "namespace": "ml"},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                                                         "count": count}}]}}}
    return parse_review(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-1", "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceclaims"},
        "operation": "CREATE", "namespace": "ml", "name": "train", "object": obj}}).encode())


@contextmanager
def judging(folder: Path, policy: Policy) -> Iterator[Callable[[AdmissionRequest], Verdict]]:
    """A worker's live state with its feasibility view, and the verdict on a request against it."""
    live = LiveCluster(str(folder), interval=0.05, release_of=lambda: policy.options.release)
    live.start()
    try:
        wait_for(lambda: live.readiness() == [], what="the worker's feasibility view")
        yield lambda request: judge(request, policy, live.current())
    finally:
        live.stop()


def test_slices_of_nodes_without_a_node_object_never_make_a_claim_pass_under_deny(watching, cluster):
    # node-0 has 2 GPUs; a slice names node "ghost", which no Node object stands for (never registered).
    cluster.create("resourceslices", slice_of("ghost", 8))
    wait_for(watching.synced, what="first full sync")
    policy = parse_policy({"feasibility": "deny"})
    with judging(watching.folder, policy) as verdict:
        wait_for(lambda: "ghost-gpu" in watching.objects("resourceslices"), what="the ghost's slice")
        denied = wait_for(lambda: (v := verdict(claim_review(4))) and not v.allowed and v, what="a denial")
        (error,) = denied.errors
        assert error.rule == "DRA701" and "8 matching devices are published for node ghost, which has no Node object" \
            in error.message
        cluster.create("nodes", {"metadata": {"name": "ghost"}})        # the node registers: its GPUs count
        wait_for(lambda: verdict(claim_review(4)).allowed, what="the node's GPUs to count")
        cluster.delete("nodes", "ghost")                                 # and is deleted, its slice left behind
        wait_for(lambda: not verdict(claim_review(4)).allowed, what="the deleted node's GPUs to stop counting")


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
        assert live.server_release() == 36                  # its /version: the release reviews judge as
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
        # The server (1.36, its /version) serves DeviceTaintRules: its DRADeviceTaintRules gate (beta, off by
        # default in 1.36) is on, and the policy says so.
        policy.write_text("feasibility: deny\nfeatureGates: {DRADeviceTaintRules: true}\n")
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
            cluster.create("nodes", {"metadata": {"name": "node-1"}})   # a slice counts on a node that exists
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
