#!/usr/bin/env python3
"""The webhook under claim churn: a real ``serve --watch`` replica, a large cluster, claims changing all the time.

    python3 bench/bench_churn.py                        # 5,000 nodes x 8 GPUs, 50,000 claims, 20 changes/s, 60 s
    python3 bench/bench_churn.py --nodes 1000 --claims 10000 --duration 20

A fake API server on 127.0.0.1 (``tests/fakeapi.py``) holds the fleet of ``bench_webhook.py
--fleet`` (one ResourceSlice of 8 GPUs per node) and ``--claims`` ResourceClaims as the API server
stores them (managedFields, owner references, most of them allocated to a GPU and reserved for a
pod). ``dralint-webhook serve --watch`` (2 workers, TLS, ``feasibility: deny``) lists and watches
it. Then, in phases:

1. *idle*: nothing happens (what the processes cost at rest: heartbeats, the follow threads);
2. *churn*: ``--rate`` claim changes per second, as a scheduler and kubelets make them (a claim
   allocated, one freed, a pod added to ``reservedFor``, a claim created, one deleted), no reviews:
   the CPU time each process spent beyond the idle rate, per change;
3. *reviews*: claim reviews at ``--reviews`` per second with no churn;
4. *churn + reviews*: both at once for ``--duration`` seconds.

Printed: the time to the first full sync; per-change CPU time of the watcher and of each worker;
review p50/p99/max without and with churn (open loop: from when the request was due); resident
memory of the watcher and the workers (peak over the run, and at the end). The master forks the
watcher before the workers: its first child is the watcher.

Before/after figures: run this script from a checkout of the older commit too (its own ``bench/``
and ``tests/``, with ``PYTHONPATH`` pointing at that checkout and its ``webhook/`` folder).
"""
from __future__ import annotations

import argparse
import copy
import os
import random
import ssl
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from bench_webhook import (Sampler, fleet_bodies, fleet_cluster, free_port, percentile, rss_by_pid,  # noqa: E402
                           run_step, start_server, stop_server, wait_ready, write_kubeconfig)
from fakeapi import FakeApiServer, FakeCluster  # noqa: E402

DRIVER = "gpu.example.com"
NAMESPACES = 50
TIMESTAMP = "2026-11-25T16:46:00Z"


def claim_object(i: int, allocated: tuple[str, int] | None) -> dict:
    """Claim ``i`` as the API server stores it: made by the controller from a pod's template, allocated
    (``allocated``: its node and GPU, reserved for its pod) or pending."""
    name, namespace = f"pod-{i:06d}-gpu", f"team-{i % NAMESPACES:02d}"
    pod_uid = f"6b0c0a8e-0000-4000-8000-{i:012d}"
    fields: list[dict] = [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "resource.k8s.io/v1",
                           "time": TIMESTAMP, "fieldsType": "FieldsV1", "fieldsV1": {
                               "f:metadata": {"f:annotations": {".": {}, "f:resource.kubernetes.io/pod-claim-name": {}},
                                              "f:generateName": {}, "f:ownerReferences": {
                                                  ".": {}, f'k:{{"uid":"{pod_uid}"}}': {}}},
                               "f:spec": {"f:devices": {"f:requests": {}}}}}]
    obj: dict[str, Any] = {
        "metadata": {"name": name, "generateName": f"pod-{i:06d}-", "namespace": namespace,
                     "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": f"pod-{i:06d}", "uid": pod_uid,
                                          "controller": True, "blockOwnerDeletion": True}],
                     "creationTimestamp": TIMESTAMP, "managedFields": fields},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": 1,
            "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{"a100" if i % 2 else "h100"}"'}}]}}]}},
    }
    if allocated is not None:
        allocate(obj, *allocated, pod=(f"pod-{i:06d}", pod_uid))
    return obj


def allocate(obj: dict, node: str, gpu: int, pod: tuple[str, str]) -> None:
    """What the scheduler writes when it allocates the claim and reserves it for ``pod``."""
    obj["metadata"]["managedFields"] = obj["metadata"]["managedFields"][:1] + [{
        "manager": "kube-scheduler", "operation": "Update", "apiVersion": "resource.k8s.io/v1", "time": TIMESTAMP,
        "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": {"f:status": {
            "f:allocation": {".": {}, "f:devices": {".": {}, "f:results": {}}, "f:nodeSelector": {}},
            "f:reservedFor": {".": {}, f'k:{{"uid":"{pod[1]}"}}': {}}}}}]
    obj["status"] = {
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node,
                                                "device": f"gpu-{gpu}"}]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": [node]}]}]},
                       "allocationTimestamp": TIMESTAMP},
        "reservedFor": [{"resource": "pods", "name": pod[0], "uid": pod[1]}]}


class Churn:
    """Claims changing as a busy cluster changes them; keeps track of which GPUs are free."""

    def __init__(self, cluster: FakeCluster, nodes: int, claims: int, allocated: int, seed: int = 1) -> None:
        self.cluster = cluster
        self.rand = random.Random(seed)
        gpus = [(f"node-{n:05d}", d) for n in range(nodes) for d in range(8)]
        self.rand.shuffle(gpus)
        self.free = gpus[allocated:]
        self.held: dict[str, tuple[str, int]] = {}      # claim key → its GPU
        self.pending: list[str] = []
        self.next = claims
        for i in range(claims):
            gpu = gpus[i] if i < allocated else None
            created = cluster.create("resourceclaims", claim_object(i, gpu))
            key = f"{created['metadata']['namespace']}/{created['metadata']['name']}"
            if gpu is not None:
                self.held[key] = gpu
            else:
                self.pending.append(key)
        self.changes = 0

    def step(self) -> None:
        """One change: allocate, free, reserve for one more pod, create or delete a claim."""
        what = self.rand.choices(["allocate", "free", "reserve", "create", "delete"], [3, 3, 2, 1, 1])[0]
        objects = self.cluster.objects["resourceclaims"]
        if what == "allocate" and self.pending and self.free:
            key = self.pending.pop(self.rand.randrange(len(self.pending)))
            gpu = self.free.pop()
            obj = copy.deepcopy(objects[key])
            allocate(obj, *gpu, pod=(obj["metadata"]["ownerReferences"][0]["name"],
                                     obj["metadata"]["ownerReferences"][0]["uid"]))
            self.held[key] = gpu
            self.cluster.update("resourceclaims", obj)
        elif what == "free" and self.held:
            key = self._any(self.held)
            self.free.append(self.held.pop(key))
            obj = copy.deepcopy(objects[key])
            obj.pop("status", None)
            self.pending.append(key)
            self.cluster.update("resourceclaims", obj)
        elif what == "reserve" and self.held:
            key = self._any(self.held)
            obj = copy.deepcopy(objects[key])
            obj["status"]["reservedFor"].append({"resource": "pods", "name": f"extra-{self.changes}",
                                                 "uid": f"7c0c0a8e-0000-4000-8000-{self.changes:012d}"})
            self.cluster.update("resourceclaims", obj)
        elif what == "create":
            self.cluster.create("resourceclaims", claim_object(self.next, None))
            self.pending.append(f"team-{self.next % NAMESPACES:02d}/pod-{self.next:06d}-gpu")
            self.next += 1
        elif self.pending:
            key = self.pending.pop(self.rand.randrange(len(self.pending)))
            self.cluster.delete("resourceclaims", key)
        else:
            return
        self.changes += 1

    def _any(self, keys: dict) -> str:
        # A random key of a large dict without listing it: sample a few candidates by index in an iterator.
        skip = self.rand.randrange(min(len(keys), 5000))
        for n, key in enumerate(keys):
            if n == skip:
                return key
        return next(iter(keys))

    def run(self, rate: float, seconds: float, stop: threading.Event) -> None:
        start = time.perf_counter()
        n = 0
        while not stop.is_set() and time.perf_counter() - start < seconds:
            due = start + n / rate
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            self.step()
            n += 1


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of one process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(root: int) -> list[int]:
    """The master's children, oldest first (the watcher is forked before the workers)."""
    return sorted(int(pid) for pid in rss_by_pid(root) if int(pid) != root)


def _ms(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"p50 {statistics.median(ms):7.1f} ms  p99 {percentile(ms, 99):7.1f} ms  max {max(ms):7.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--claims", type=int, default=50_000)
    parser.add_argument("--rate", type=float, default=20.0, help="claim changes per second (default: 20)")
    parser.add_argument("--reviews", type=int, default=10, help="claim reviews per second (default: 10)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of churn with reviews (default: 60)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--extra", default="", help="more arguments for serve, space-separated")
    args = parser.parse_args()

    built = time.perf_counter()
    cluster = fleet_cluster(args.nodes)
    for n in range(NAMESPACES):
        cluster.create("namespaces", {"metadata": {"name": f"team-{n:02d}"}})
    allocated = min(int(args.claims * 0.8), int(args.nodes * 8 * 0.9))
    churn = Churn(cluster, args.nodes, args.claims, allocated)
    cluster.compact()          # watches start after the creation, as in a cluster that has been running
    cluster.create("namespaces", {"metadata": {"name": "after"}})   # lists are at a version past the compaction
    generated = time.perf_counter() - built
    with tempfile.TemporaryDirectory(prefix="dralint-bench-churn-") as tmp, FakeApiServer(cluster) as api:
        api.faults.bookmark_every = 5.0
        workdir = Path(tmp)
        config = write_kubeconfig(workdir / "kubeconfig", api.url)
        policy = workdir / "policy.yaml"
        policy.write_text("feasibility: deny\n")
        port = free_port()
        started = time.perf_counter()
        proc = start_server(workdir, port, args.workers, 8, "--watch", "--kubeconfig", str(config),
                            "--config", str(policy), *args.extra.split())
        sampler = Sampler(proc.pid)
        try:
            context = ssl.create_default_context(cafile=str(workdir / "ca.crt"))
            wait_ready(port, context, proc, timeout=1800)
            ready = time.perf_counter() - started
            pids = children(proc.pid)
            names = {pids[0]: "watcher", **{pid: f"worker {n + 1}" for n, pid in enumerate(pids[1:])}}
            print(f"{args.nodes} nodes x 8 GPUs, {args.claims} claims ({allocated} allocated), {args.workers} workers; "
                  f"cluster generated in {generated:.0f} s; server ready {ready:.0f} s after start; "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
            templates = fleet_bodies()[:3]          # the claims that fit: judged to the end, never cut short
            run_step(port, context, templates, 5, 3, 4)   # connections and the first review of each worker

            def cpu() -> dict[int, float]:
                return {pid: cpu_of(pid) for pid in names}

            stop = threading.Event()
            idle_seconds = 10.0
            before = cpu()
            time.sleep(idle_seconds)
            idle = {pid: (c - before[pid]) / idle_seconds for pid, c in cpu().items()}

            churn_seconds = min(30.0, args.duration)
            before, changes = cpu(), churn.changes
            churn.run(args.rate, churn_seconds, stop)
            time.sleep(2.0)                         # the last changes reach every worker
            spent = {pid: c - before[pid] - idle[pid] * (churn_seconds + 2.0) for pid, c in cpu().items()}
            made = churn.changes - changes
            print(f"churn alone: {made} changes in {churn_seconds:.0f} s; CPU per change beyond idle: " + ", ".join(
                f"{names[pid]} {spent[pid] / made * 1000:.1f} ms" for pid in names), flush=True)

            quiet = run_step(port, context, templates, args.reviews, churn_seconds, 8)
            print(f"reviews alone ({args.reviews}/s, {len(quiet.latencies)} reviews, {quiet.errors} errors): "
                  f"{_ms(quiet.latencies)}", flush=True)

            thread = threading.Thread(target=churn.run, args=(args.rate, args.duration, stop), daemon=True)
            changes = churn.changes
            thread.start()
            busy = run_step(port, context, templates, args.reviews, args.duration, 8)
            stop.set()
            thread.join()
            print(f"reviews under churn ({args.reviews}/s, {len(busy.latencies)} reviews, {busy.errors} errors, "
                  f"{churn.changes - changes} changes): {_ms(busy.latencies)}; load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            time.sleep(1.0)
        finally:
            sampler.close()
            stop_server(proc)
        print("resident memory (MiB), peak / at the end: " + ", ".join(
            f"{names[pid]} {sampler.peak.get(pid, 0) / 2**20:.0f} / {sampler.last.get(pid, 0) / 2**20:.0f}"
            for pid in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
