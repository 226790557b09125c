#!/usr/bin/env python3
"""``dralint audit``: time to list and judge every stored DRA object of a large cluster.

    python3 bench/bench_audit.py                    # 5,000 nodes, 1,000 claims, 200 Pods, 3 runs
    python3 bench/bench_audit.py --nodes 1000 --claims 200 --pods 50 --runs 5

The cluster of bench_cluster_list.py (one 8-GPU ResourceSlice per node, one DeviceClass), plus
``--claims`` claims in namespace ``ml`` (half of them allocated on a node, half pending, one in ten
pending ones asking for more GPUs than a node has) and ``--pods`` Pods with a claim each, served by
the tests' fake API server over plain HTTP in this process's threads. Measured, the median of the
runs (and the range), wall-clock seconds, of ``dralint audit --format json`` in this process, the
median CPU seconds of this process over the same runs (the fake API server's threads included: on
a busy machine the wall clock says more about the neighbours than about dralint), and how many
objects it judged and found errors in.
"""
from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "bench")]

from bench_cluster_list import build, timed  # noqa: E402
from dralint.cli import main  # noqa: E402
from fakeapi import FakeApiServer, FakeCluster, write_kubeconfig  # noqa: E402


def add_workload(cluster: FakeCluster, claims: int, pods: int) -> None:
    cluster.create("namespaces", {"metadata": {"name": "ml"}})
    for n in range(claims):
        node = f"node-{n:05d}"
        count = 9 if n % 20 == 1 else 2
        claim: dict = {"metadata": {"name": f"claim-{n:05d}", "namespace": "ml"},
                       "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                           "deviceClassName": "gpu.example.com", "count": count}}]}}}
        if n % 2 == 0:
            claim["status"] = {"allocation": {
                "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": node,
                                         "device": f"gpu-{i}"} for i in range(2)]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
        cluster.create("resourceclaims", claim)
    for n in range(pods):
        cluster.create("pods", {"metadata": {"name": f"pod-{n:05d}", "namespace": "ml"}, "spec": {
            "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": f"claim-{n:05d}"}]}})


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--claims", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    built = time.perf_counter()
    cluster = build(args.nodes)
    add_workload(cluster, min(args.claims, args.nodes), args.pods)
    print(f"cluster: {args.nodes:,} nodes and slices, {args.claims:,} claims, {args.pods:,} Pods "
          f"(built in {time.perf_counter() - built:.1f} s)")
    with FakeApiServer(cluster) as server, tempfile.TemporaryDirectory() as tmp:
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", server.url, name="bench")

        cpu: list[float] = []

        def audit() -> tuple[int, dict]:
            started = time.process_time()
            out = io.StringIO()
            code = main(["audit", "--kubeconfig", str(kubeconfig), "--format", "json"], stdout=out,
                        stderr=io.StringIO())
            cpu.append(time.process_time() - started)
            return code, json.loads(out.getvalue())

        median, low, high, (code, report) = timed(audit, args.runs)   # type: ignore[misc]
        with_errors = len({f["object"] for f in report["findings"] if f["severity"] == "error"})
        print(f"audit:   {median:6.2f} s  ({low:.2f}-{high:.2f}; CPU {statistics.median(cpu):.2f} s; exit {code}; "
              f"{report['summary']['objects']:,} objects judged, {with_errors:,} with errors)")


if __name__ == "__main__":
    main_bench()
