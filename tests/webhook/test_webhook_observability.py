"""What an admin sees of a replica: every process in /metrics, JSON logs from the first line, relists logged.

The real server (``Server``: gunicorn, 2 workers, TLS) with ``--watch`` against the fake API server,
scraped on its health port as Prometheus scrapes it; each server is bounded in time and stopped by
the test that started it.
"""
from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
from typing import Callable

from dralint_webhook.logs import LOGGER
from dralint_webhook.store import RESOURCES
from fakeapi import FakeApiServer, FakeCluster
from test_webhook_server import Client, Server, children, claim, labelled
from test_webhook_watch import TOKEN, Running, kubeconfig, slice_of, wait_for

EVERY_PROCESS = {("master", "0"), ("worker", "0"), ("worker", "1"), ("watcher", "0")}


def gauge(metrics: str, name: str, labels: str = "") -> float | None:
    match = re.search(rf"^{name}{re.escape(labels)} (\S+)$", metrics, re.MULTILINE)
    return float(match.group(1)) if match else None


def generations(metrics: str) -> tuple[float | None, set[float]]:
    """The watcher's published generation, and the one of each worker."""
    workers = {gauge(metrics, "dralint_webhook_cluster_state_generation", f'{{role="worker",slot="{slot}"}}')
               for slot in ("0", "1")}
    return gauge(metrics, "dralint_webhook_cluster_published_generation"), {g for g in workers if g is not None}


def scraped_when(server: Server, condition: Callable[[str], bool], what: str) -> str:
    """The first scrape that meets ``condition`` (bounded)."""
    return wait_for(lambda: (lambda m: m if condition(m) else None)(server.scrape()), seconds=15, what=what)


def caught_up(metrics: str) -> bool:
    """Whether both workers judge with the state the watcher published last."""
    published, workers = generations(metrics)
    return bool(published) and workers == {published}


def test_serve_watch_shows_every_process_and_each_worker_s_state(tmp_path, certs):
    cluster = FakeCluster()
    cluster.create("deviceclasses", {"metadata": {"name": "gpu.example.com"}, "spec": {}})
    cluster.create("resourceslices", slice_of("node-0"))
    with FakeApiServer(cluster) as api:
        api.faults.token = TOKEN
        srv = Server(tmp_path, certs / "tls.crt", certs / "tls.key", "--watch",
                     "--kubeconfig", str(kubeconfig(tmp_path / "kubeconfig", api.url)))
        try:
            srv.wait_ready(certs / "ca.crt")
            metrics = scraped_when(srv, lambda m: labelled(m, "process_resident_memory_bytes") == EVERY_PROCESS,
                                   "every process in /metrics")
            assert len(children(srv)) == 3        # 2 workers and the watcher: one series each, and the master's
            for family in ("process_cpu_seconds_total", "process_start_time_seconds", "process_open_fds"):
                assert labelled(metrics, family) == EVERY_PROCESS, family
            assert metrics.count("\ndralint_webhook_build_info{") == 1
            before = generations(scraped_when(srv, caught_up, "both workers on the published state"))[0]
            assert before is not None
            cluster.create("resourceslices", slice_of("node-1"))
            scraped_when(srv, lambda m: caught_up(m) and (generations(m)[0] or 0) > before,
                         "both workers on the state with the new slice")

            api.faults.expire_watches = True      # every watch answered 410: each resource listed again
            wait_for(lambda: {line["resource"] for line in srv.log_lines()
                              if line.get("msg") == "cluster watch listed" and line["relist"]} == set(_names()),
                     seconds=30, what="every resource relisted and logged")
            api.faults.expire_watches = False
        finally:
            assert srv.stop() == 0
    lines = srv.log.read_text().splitlines()
    assert [line for line in lines if not line.startswith("{")] == []
    logged = [json.loads(line) for line in lines]
    assert logged[0]["role"] == "master"
    listed = [line for line in logged if line.get("msg") == "cluster watch listed"]
    assert {line["resource"] for line in listed if not line["relist"]} == set(_names())
    assert all(line["role"] == "watcher" and line["objects"] >= 0 and line["resource_version"] for line in listed)


def _names() -> list[str]:
    return [name for name, *_ in RESOURCES]


def test_a_relist_is_logged_with_what_it_read(tmp_path, caplog):
    cluster = FakeCluster()
    cluster.create("resourceslices", slice_of("node-0"))
    with FakeApiServer(cluster) as api, caplog.at_level(logging.INFO, logger=LOGGER):
        api.faults.token = TOKEN
        running = Running(tmp_path, api)
        try:
            wait_for(running.synced, what="the first sync")
            api.faults.expire_watches = True
            wait_for(lambda: [r for r in caplog.records if r.getMessage() == "cluster watch listed"
                              and r.fields["resource"] == "resourceslices" and r.fields["relist"]],
                     what="the relist of resourceslices")
        finally:
            api.faults.expire_watches = False
            running.close()
    first, *relists = [r.fields for r in caplog.records if r.getMessage() == "cluster watch listed"
                       and r.fields["resource"] == "resourceslices"]
    assert first["relist"] is False and relists and all(r["relist"] for r in relists)
    assert relists[0]["objects"] == 1 and int(relists[0]["resource_version"]) >= int(first["resource_version"])
    assert any("expired" in r.fields["reason"] for r in caplog.records
               if r.getMessage() == "cluster watch interrupted; listing again")


def test_a_replaced_worker_s_slot_is_reused_and_its_counts_are_kept(tmp_path, certs):
    """A worker stopped as a retirement or SIGHUP stops it (its last counts written as it exits; a
    SIGKILL loses what it counted in its last second): its replacement takes its slot."""
    srv = Server(tmp_path, certs / "tls.crt", certs / "tls.key")
    requests = 'dralint_webhook_requests_total{kind="ResourceClaim",operation="CREATE",allowed="true"}'
    try:
        srv.wait_ready(certs / "ca.crt")
        sent = 20
        for _ in range(sent):      # a new connection each time: both workers get some
            client = Client(srv.port, certs / "ca.crt")
            client.review(claim())
            client.close()
        # Every worker's snapshot is written within a second of its last review.
        wait_for(lambda: gauge(srv.scrape(), requests) == sent, seconds=15, what="the reviews counted")
        started = {slot: gauge(srv.scrape(), "process_start_time_seconds", f'{{role="worker",slot="{slot}"}}')
                   for slot in ("0", "1")}
        workers = [pid for pid, _ in children(srv)]
        os.kill(workers[0], signal.SIGTERM)
        wait_for(lambda: len(children(srv)) == 2 and workers[0] not in [p for p, _ in children(srv)], seconds=30,
                 what="gunicorn to start a new worker")
        metrics = scraped_when(srv, lambda m: labelled(m, "process_start_time_seconds")
                               == {("master", "0"), ("worker", "0"), ("worker", "1")}, "the new worker listed")
        now = {slot: gauge(metrics, "process_start_time_seconds", f'{{role="worker",slot="{slot}"}}')
               for slot in ("0", "1")}
        assert sum(now[slot] != started[slot] for slot in now) == 1    # one slot has a new process, no new slot
        assert gauge(metrics, requests) == sent                         # the stopped worker's reviews still count
        # What each worker serves: one series per slot, the stopped worker's gone with it.
        served = re.findall(r'^dralint_webhook_policy_info\{role="worker",slot="(\d+)"', metrics, re.MULTILINE)
        assert sorted(served) == ["0", "1"]
    finally:
        assert srv.stop() == 0


def test_serve_writes_json_from_its_first_line(tmp_path, certs):
    def serve(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "dralint_webhook", "serve", *args],
                              capture_output=True, text=True, timeout=60)

    bad_policy = tmp_path / "policy.yaml"
    bad_policy.write_text("onInternalError: sometimes\n")
    cases = [(("--cert", str(certs / "tls.crt")), "--key"),                     # argparse: a missing option
             (("--cert", "c", "--key", "k", "--bogus"), "--bogus"),             # argparse: an unknown one
             (("--cert", "c", "--key", "k", "--workers", "0"), "--workers"),    # our own checks
             (("--cert", str(certs / "tls.crt"), "--key", str(certs / "tls.key"), "--config", str(bad_policy)),
              "onInternalError")]
    for args, named in cases:
        result = serve(*args)
        assert result.returncode == 2 and result.stdout == ""
        lines = [json.loads(line) for line in result.stderr.splitlines()]      # every line JSON
        assert lines[-1]["level"] == "error" and named in lines[-1]["msg"], result.stderr
        assert lines[0]["role"] == "master"
    # The commands people run keep writing plain text.
    result = subprocess.run([sys.executable, "-m", "dralint_webhook", "check-policy", str(bad_policy)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and not result.stderr.startswith("{")


def test_uncaught_exceptions_and_warnings_are_json_lines():
    script = """
import threading, warnings
from dralint_webhook.logs import identify, install
install()
identify("worker", 1)
warnings.warn("something to know")
thread = threading.Thread(target=lambda: 1 / 0, name="reviewer")
thread.start()
thread.join()
raise RuntimeError("the end")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [(line["level"], line["role"], line["slot"]) for line in lines] == [("warning", "worker", 1)] + \
        [("critical", "worker", 1)] * 2
    assert "something to know" in lines[0]["msg"]
    assert lines[1]["thread"] == "reviewer" and "ZeroDivisionError" in lines[1]["exception"]
    assert "RuntimeError: the end" in lines[2]["exception"]
