#!/usr/bin/env python3
"""The webhook with its cluster state from files (``serve --cluster FOLDER``) at fleet sizes.

    python3 bench/bench_webhook_files.py                          # 1,000, 5,000 and 12,000 nodes
    python3 bench/bench_webhook_files.py --nodes 12000 --rate 50 --duration 20

For each size: writes a cluster-state folder (N nodes, one ResourceSlice of 8 GPUs each, the
DeviceClass, the namespace: the cluster of ``bench_webhook.py --fleet``), starts the real server
(gunicorn, TLS, 2 workers, ``feasibility: deny``) and prints the time until ``/readyz`` answers,
then sends claim reviews at a fixed rate (open loop, latency from the moment a request was due)
while, half-way, one slice file changes: the time until every worker serves the new state, the
review latency (p50/p99/max) and the reviews that were not judged within the deadline, and the
peak resident memory of each process. Loopback only, bounded in time; the server is stopped at
the end.
"""
from __future__ import annotations

import argparse
import json
import http.client
import ssl
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_webhook import (Sampler, fleet_bodies, free_port, percentile, run_step,  # noqa: E402
                           start_server, stop_server, wait_ready)


def write_cluster(folder: Path, nodes: int) -> Path:
    """The cluster as files: one for the class and namespace, one per 1,000 nodes and their slices."""
    folder.mkdir(parents=True)
    (folder / "classes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}]}))
    for first in range(0, nodes, 1000):
        write_slices(folder / f"nodes-{first:05d}.json", range(first, min(nodes, first + 1000)))
    return folder


def write_slices(path: Path, indexes: range, devices: int = 8) -> None:
    items: list[dict] = []
    for i in indexes:
        name = f"node-{i:05d}"
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"pool": f"p{i % 10}"}}})
        items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpu"},
                      "spec": {"driver": "gpu.example.com", "nodeName": name,
                               "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                               "devices": [{"name": f"gpu-{d}",
                                            "attributes": {"model": {"string": "a100" if i % 2 else "h100"},
                                                           "index": {"int": d}},
                                            "capacity": {"memory": {"value": "80Gi"}}} for d in range(devices)]}})
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    tmp.rename(path)      # as a tool that replaces files would: one rename, never a half-written file


def reloads(health_port: int) -> float:
    """Successful cluster reloads counted by /metrics (every worker's, added up), on the health port."""
    conn = http.client.HTTPConnection("127.0.0.1", health_port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith('dralint_webhook_reloads_total{what="cluster",result="success"}'))


def measure(nodes: int, rate: int, duration: float, workers: int) -> None:
    with tempfile.TemporaryDirectory(prefix="dralint-bench-files-") as tmp:
        workdir = Path(tmp)
        folder = write_cluster(workdir / "cluster", nodes)
        (workdir / "policy.yaml").write_text("feasibility: deny\n")
        port, health_port = free_port(), free_port()
        started = time.perf_counter()
        proc = start_server(workdir, port, workers, 8, "--cluster", str(folder), "--config",
                            str(workdir / "policy.yaml"), "--health-port", str(health_port))
        sampler = Sampler(proc.pid, 0.25)
        try:
            context = ssl.create_default_context(cafile=str(workdir / "ca.crt"))
            wait_ready(port, context, proc, timeout=900)
            ready = time.perf_counter() - started
            before = reloads(health_port)
            changed: dict[str, float] = {}

            def change() -> None:
                time.sleep(duration / 2)
                write_slices(folder / "nodes-00000.json", range(0, min(nodes, 1000)), devices=4)
                changed["at"] = time.perf_counter()
                while time.perf_counter() - changed["at"] < 600:
                    if reloads(health_port) >= before + workers:
                        changed["served"] = time.perf_counter() - changed["at"]
                        return
                    time.sleep(0.1)

            changer = threading.Thread(target=change, daemon=True)
            changer.start()
            step = run_step(port, context, fleet_bodies(), rate, duration, 8)
            changer.join(timeout=600)
            ms = [x * 1000 for x in step.latencies]
            sampler.close()
            mib = sorted(((pid, rss / 2**20) for pid, rss in sampler.peak.items()), key=lambda p: p[0] != proc.pid)
            served = f"{changed['served']:.1f} s" if "served" in changed else "not within 600 s"
            print(f"{nodes:>6} nodes: ready {ready:.1f} s | {len(ms)} reviews at {rate}/s: p50 {percentile(ms, 50):.1f} "
                  f"ms, p99 {percentile(ms, 99):.1f} ms, max {max(ms):.1f} ms, errors {step.errors}, "
                  f"not judged in time {step.unjudged} | a changed file served by every worker after {served} | "
                  f"peak MiB: master {mib[0][1]:.0f}, " + ", ".join(f"{rss:.0f}" for _, rss in mib[1:]), flush=True)
        finally:
            sampler.close()
            stop_server(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="1000,5000,12000", help="cluster sizes (default: 1000,5000,12000)")
    parser.add_argument("--rate", type=int, default=50, help="claim reviews per second (default: 50)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of reviews per size (default: 20)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (default: 2)")
    args = parser.parse_args()
    print(f"dralint webhook --cluster FOLDER: N nodes x 8 GPUs, {args.workers} workers, TLS, feasibility: deny")
    for nodes in (int(n) for n in args.nodes.split(",") if n.strip()):
        measure(nodes, args.rate, min(args.duration, 60.0), args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
