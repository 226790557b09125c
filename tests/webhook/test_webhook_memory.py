"""A worker near its memory ceiling drops its caches before it stops any review, and one that stays
over it retires, one worker of the replica at a time (issue 23, item 4).

The guard is driven directly (``check`` with a clock and a fake resident-memory reader); the
webhook's side (what is dropped, the retirement lock) on a real :class:`Webhook`; and the whole of
it against the real server: many distinct heavy claims stay under the ceiling without a review
stopped, and a worker that cannot get under it retires while the other one serves.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from dralint_webhook import fleet as fleet_module
from dralint_webhook.app import Settings, build_webhook, create_app
from dralint_webhook.guard import (CACHE_WAIT_SECONDS, DROP_AT, RETIRE_AFTER_SECONDS, Dropped, Guard, ReviewAborted,
                                   ReviewOverMemory)
from dralint_webhook.relief import Relief, Retirement
from test_memory_caches import big_expression
from test_webhook_server import Client, Server, children, make_certs, review_of

CEILING = 1000


class Memory:
    """A fake resident-memory reader and what the guard did, in order."""

    def __init__(self, rss: int) -> None:
        self.rss = rss
        self.events: list[str] = []

    def read(self) -> int:
        return self.rss


class InFlight:
    """A review running in a thread until the guard stops it (or the test ends it)."""

    def __init__(self, guard: Guard, memory: Memory) -> None:
        self.stopped: BaseException | None = None
        self.done = threading.Event()
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(guard, memory), daemon=True)
        self.thread.start()
        assert self.started.wait(5)

    def _run(self, guard: Guard, memory: Memory) -> None:
        try:
            with guard.review(time.monotonic() + 3600):
                self.started.set()
                while not self.done.is_set():
                    sum(range(100))
        except ReviewAborted as exc:
            memory.events.append("stopped")
            self.stopped = exc

    def end(self) -> BaseException | None:
        self.done.set()
        self.thread.join(timeout=5)
        assert not self.thread.is_alive()
        return self.stopped


def guard_with(memory: Memory, relieve=None, retire=None) -> Guard:
    return Guard(CEILING, interval=3600, relieve=relieve, retire=retire, rss=memory.read)


def test_nothing_is_dropped_well_under_the_ceiling():
    memory = Memory(int(DROP_AT * CEILING) - 1)
    guard = guard_with(memory, relieve=lambda: memory.events.append("drop") or Dropped(1))
    review = InFlight(guard, memory)
    guard.check()
    assert review.end() is None and memory.events == []


def test_near_the_ceiling_caches_are_dropped_and_no_review_is_stopped():
    memory = Memory(int(0.95 * CEILING))
    drops: list[int] = []

    def relieve() -> Dropped:
        drops.append(memory.rss)
        return Dropped(10)

    guard = guard_with(memory, relieve)
    review = InFlight(guard, memory)
    now = time.monotonic()
    guard.check(now)
    guard.check(now + 0.1)             # the memory did not grow since: the caches refill freed memory
    memory.rss += CEILING // 32        # it grew again (still under the ceiling): dropped again
    guard.check(now + 0.2)
    assert review.end() is None and guard.fired["memory"] == 0
    assert len(drops) == 2


def test_over_the_ceiling_caches_are_dropped_before_any_review_is_stopped():
    memory = Memory(CEILING + 1)

    def relieve() -> Dropped:
        memory.events.append("drop")
        memory.rss = CEILING - 1       # what the caches held was enough
        return Dropped(500)

    guard = guard_with(memory, relieve)
    review = InFlight(guard, memory)
    guard.check()
    assert review.end() is None and guard.fired["memory"] == 0 and memory.events == ["drop"]


def test_reviews_are_stopped_only_when_dropping_caches_was_not_enough():
    memory = Memory(CEILING + 1)
    guard = guard_with(memory, lambda: memory.events.append("drop") or Dropped(500))
    review = InFlight(guard, memory)
    guard.check()
    review.thread.join(timeout=5)
    assert isinstance(review.end(), ReviewOverMemory)
    assert memory.events == ["drop", "stopped"] and guard.fired["memory"] == 1


def test_a_cache_in_use_is_waited_for_before_reviews_are_stopped():
    memory = Memory(CEILING + 1)
    held = [True]

    def relieve() -> Dropped:
        memory.events.append("drop")
        return Dropped(0, complete=not held[0])

    guard = guard_with(memory, relieve)
    review = InFlight(guard, memory)
    now = time.monotonic()
    guard.check(now)
    guard.check(now + CACHE_WAIT_SECONDS / 2)
    assert guard.fired["memory"] == 0          # the fleet view's holder drops its caches as it lets go
    held[0] = False
    guard.check(now + CACHE_WAIT_SECONDS / 2 + 0.01)
    review.thread.join(timeout=5)
    assert isinstance(review.end(), ReviewOverMemory) and memory.events == ["drop"] * 3 + ["stopped"]


def test_a_cache_in_use_for_too_long_no_longer_holds_the_stop_back():
    memory = Memory(CEILING + 1)
    guard = guard_with(memory, lambda: Dropped(0, complete=False))
    review = InFlight(guard, memory)
    now = time.monotonic()
    guard.check(now)
    guard.check(now + CACHE_WAIT_SECONDS + 0.01)
    review.thread.join(timeout=5)
    assert isinstance(review.end(), ReviewOverMemory)


def test_a_worker_that_stays_over_asks_once_to_retire_and_again_when_refused():
    memory = Memory(CEILING + 1)
    answers = [False, True]
    asked: list[float] = []

    def retire() -> bool:
        asked.append(now)
        return answers.pop(0)

    guard = guard_with(memory, lambda: Dropped(0), retire)
    start = time.monotonic()
    for now in (start, start + 1, start + RETIRE_AFTER_SECONDS, start + RETIRE_AFTER_SECONDS + 1,
                start + 2 * RETIRE_AFTER_SECONDS, start + 3 * RETIRE_AFTER_SECONDS):
        guard.check(now)
    # Not before it stayed over for RETIRE_AFTER_SECONDS; refused (another worker retires), asked again
    # RETIRE_AFTER_SECONDS later; never again once retiring.
    assert asked == [start + RETIRE_AFTER_SECONDS, start + 2 * RETIRE_AFTER_SECONDS] and guard.retiring
    memory.rss = CEILING - 1
    guard.check(start + 10)
    assert len(asked) == 2


def test_a_worker_back_under_the_ceiling_starts_counting_again():
    memory = Memory(CEILING + 1)
    asked: list[int] = []
    guard = guard_with(memory, lambda: Dropped(0), lambda: asked.append(1) or True)
    start = time.monotonic()
    guard.check(start)
    memory.rss = CEILING // 2
    guard.check(start + 1)
    memory.rss = CEILING + 1
    guard.check(start + RETIRE_AFTER_SECONDS)
    assert asked == []


# --- the webhook's side: what is dropped, and one retirement at a time -------------------------------------

CLUSTER = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
""" + "".join(f"""---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: node-{n}-gpu}}
spec:
  driver: gpu.example.com
  nodeName: node-{n}
  pool: {{name: node-{n}, generation: 1, resourceSliceCount: 1}}
  devices: [{{name: gpu-0, attributes: {{model: {{string: a100}}}}}}, {{name: gpu-1, attributes: {{model: {{string: a100}}}}}}]
""" for n in range(4))
POLICY = """feasibility: warn
onInternalError: allow
organization:
  maxDevicesPerClaim: 2
  allowedDeviceClasses: {"*": [gpu.example.com]}
"""


def heavy_claim(i: int, count: int = 1, device_class: str = "gpu.example.com") -> dict:
    """A valid claim as heavy as a real one gets: a 9 KB selector, 32 configs of 10 KB parameters."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"c{i}", "namespace": "ml"},
            "spec": {"devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count,
                                                         "selectors": [{"cel": {"expression": big_expression(i)}}]}}],
                "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com",
                                                            "parameters": {"blob": f"{i}-{j}-" + "x" * 10_000}}}
                           for j in range(32)]}}}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("memory")
    (folder / "cluster.yaml").write_text(CLUSTER)
    (folder / "policy.yaml").write_text(POLICY)
    return folder


def test_relief_drops_the_engines_caches_and_the_fleet_views(files):
    hook = build_webhook(Settings(policy_file=str(files / "policy.yaml"), cluster_paths=(str(files / "cluster.yaml"),)))
    client = create_app(hook).test_client()
    for i in range(3):
        body = review_of(heavy_claim(i), "CREATE", None, "", False, str(uuid.uuid4()))
        assert client.post("/validate", data=json.dumps(body), content_type="application/json").status_code == 200
    view = hook.loaded_cluster().fleet
    world = view.fleet(hook.policy().options.release).world
    assert len(world.selection._combined)
    relief = Relief(hook.settings.max_rss, hook.loaded_cluster, hook.metrics, None)
    dropped = relief.relieve()
    assert dropped.complete and dropped.freed > 0
    assert not len(world.selection._combined) and not len(world.counts._filters)
    assert hook.metrics.collect().counters["cache_drops"] == {(): 1.0}
    assert relief.relieve() == Dropped(0)        # nothing left


def test_a_fleet_view_in_use_is_dropped_once_the_review_lets_go(files):
    hook = build_webhook(Settings(policy_file=str(files / "policy.yaml"), cluster_paths=(str(files / "cluster.yaml"),)))
    body = review_of(heavy_claim(1), "CREATE", None, "", False, "u")
    create_app(hook).test_client().post("/validate", data=json.dumps(body), content_type="application/json")
    view: fleet_module.FleetView = hook.loaded_cluster().fleet
    world = view.fleet(hook.policy().options.release).world
    with view.lock:                         # a review judging
        assert view.drop_caches() is None   # a thread waits for it
        assert view.drop_caches() is None   # ... one thread
        assert len(world.selection._combined)
    deadline = time.monotonic() + 5
    while (freed := view.drop_caches()) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert freed and not len(world.selection._combined)


def test_two_workers_never_retire_at_once(tmp_path):
    lock = str(tmp_path / "retiring.lock")
    stopped: list[str] = []
    first = Retirement(lock, spacing=30.0, stop=lambda: stopped.append("first"))
    second = Retirement(lock, spacing=30.0, stop=lambda: stopped.append("second"))
    assert first.begin()
    assert not second.begin()               # the first holds the lock until its process exits
    os.close(first._fd)                     # ... as its exit does
    assert not second.begin()               # and its replacement starts before another retires
    assert Retirement(lock, spacing=0.0, stop=lambda: None).begin()


# --- the real server ------------------------------------------------------------------------------------------

def worker_pids(server: Server) -> set[int]:
    return {pid for pid, _ in children(server)}


def rss_of(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"VmRSS:\s+(\d+) kB", text)
    return int(match.group(1)) * 1024 if match else 0


def metric(server: Server, name: str) -> float:
    text = server.scrape()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


@contextmanager
def serving(server: Server, certs: Path) -> Iterator[Client]:
    server.wait_ready(certs / "ca.crt")
    client = Client(server.port, certs / "ca.crt")
    try:
        yield client
    finally:
        client.close()
        server.stop()


ORG_PROBES = [heavy_claim(900 + i, count=5) for i in range(3)] + \
             [heavy_claim(950 + i, device_class="forbidden.example.com") for i in range(3)]


@pytest.mark.slow
def test_many_distinct_heavy_claims_stay_under_the_ceiling_without_stopping_a_review(tmp_path, files):
    """The done-when check of issue 23, bounded: distinct valid claims as heavy as the API server
    lets them be fill the caches; a worker near its ceiling drops them, none is stopped for memory,
    and claims breaking the organisation's rules are denied."""
    certs = make_certs(tmp_path / "certs")
    args = ("--config", str(files / "policy.yaml"), "--cluster", str(files / "cluster.yaml"), "--threads", "2")
    # The workers' own size here (it varies with the machine), then a ceiling some caches above it.
    baseline = Server(tmp_path, certs / "tls.crt", certs / "tls.key", *args)
    with serving(baseline, certs) as client:
        client.review(heavy_claim(0))
        idle = max(rss_of(pid) for pid in worker_pids(baseline))
    ceiling = idle + (24 << 20)
    srv = Server(tmp_path, certs / "tls.crt", certs / "tls.key", *args, "--max-worker-memory", str(ceiling >> 20))
    with serving(srv, certs) as client:
        peak = 0
        for i in range(1, 161):
            assert client.review(heavy_claim(i))["allowed"] is True
            peak = max([peak] + [rss_of(pid) for pid in worker_pids(srv)])
        for probe in ORG_PROBES:
            answer = client.review(probe)
            assert answer["allowed"] is False and re.search(r"DRA95[01]", answer["status"]["message"])
        assert metric(srv, "dralint_webhook_cache_drops_total") >= 1      # the caches did fill
        assert metric(srv, "dralint_webhook_worker_retirements_total") == 0
        assert max(rss_of(pid) for pid in worker_pids(srv)) <= ceiling
    assert peak <= ceiling + (4 << 20)        # sampled between reviews: the guard looks every 20 ms
    stopped = [line for line in srv.log_lines() if line.get("msg") == "review aborted"]
    assert stopped == []


@pytest.mark.slow
def test_a_worker_over_its_ceiling_retires_while_the_other_serves(tmp_path, files):
    """A ceiling no worker can get under (1 MiB): reviews are stopped and answered per the policy
    (the organisation's rules still deny), and a worker retires RETIRE_AFTER_SECONDS after its first
    review: it answers what it holds, gunicorn starts a fresh one, and no call fails meanwhile. The
    other workers, over the ceiling as well, are refused their turn and keep serving."""
    certs = make_certs(tmp_path / "certs")
    srv = Server(tmp_path, certs / "tls.crt", certs / "tls.key", "--config", str(files / "policy.yaml"),
                 "--cluster", str(files / "cluster.yaml"), "--max-worker-memory", "1", "--threads", "2")
    with serving(srv, certs):
        deadline = time.monotonic() + 30
        while len(worker_pids(srv)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        first = worker_pids(srv)
        failures: list[BaseException] = []
        answers: list[dict] = []

        def traffic(seconds: float) -> None:
            # One kept-alive connection sending back to back: its worker always has a review in
            # flight or on its way when it retires.
            mine = Client(srv.port, certs / "ca.crt")
            until = time.monotonic() + seconds
            try:
                while time.monotonic() < until:
                    answers.append(mine.review(heavy_claim(1, count=5)))
            except BaseException as exc:   # any failed call fails the test
                failures.append(exc)
            finally:
                mine.close()

        threads = [threading.Thread(target=traffic, args=(RETIRE_AFTER_SECONDS + 6,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not failures and answers
        # Every call answered, each by the organisation's rules (the engine's part was stopped for memory).
        assert all(a["allowed"] is False and "DRA951" in a["status"]["message"] for a in answers)
        lines = srv.log_lines()
        retiring = [i for i, line in enumerate(lines) if "worker retiring" in line.get("msg", "")]
        assert len(retiring) == 1
        gone = lines[retiring[0]]["pid"]
        deadline = time.monotonic() + 30
        while gone in worker_pids(srv) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert gone in first and gone not in worker_pids(srv)
        assert len(worker_pids(srv)) == len(first)          # gunicorn started a fresh one
        # Each process appends its lines in the order it writes them (timestamps tie within a millisecond).
        reviews = [line for line in lines[retiring[0] + 1:] if line.get("msg") == "review"]
        assert any(line["pid"] == gone for line in reviews)           # what it held, answered
        assert any(line["pid"] != gone for line in reviews)           # the others served on
        assert any("another worker is retiring" in line.get("msg", "") for line in lines if line["pid"] != gone)
        assert metric(srv, "dralint_webhook_worker_retirements_total") == 1


def test_reading_a_request_is_never_stopped_for_memory():
    memory = Memory(CEILING + 1)
    guard = guard_with(memory, lambda: Dropped(0))
    done = threading.Event()
    outcome: list[str] = []

    def parse() -> None:
        try:
            with guard.review(time.monotonic() + 3600, memory=False):
                while not done.is_set():
                    sum(range(100))
            outcome.append("read")
        except ReviewAborted:
            outcome.append("stopped")

    thread = threading.Thread(target=parse, daemon=True)
    thread.start()
    time.sleep(0.05)
    guard.check()
    done.set()
    thread.join(timeout=5)
    assert outcome == ["read"] and guard.fired["memory"] == 0
