#!/usr/bin/env python3
"""``dralint why-pending``: time to explain one Pending Pod, and every Pending Pod, on a large cluster.

    python3 bench/bench_why_pending.py                 # 5,000 nodes of 8 GPUs, 20 Pending Pods, 3 runs
    python3 bench/bench_why_pending.py --nodes 1000 --pods 50 --runs 5

The cluster of ``bench_cluster_list.py`` (served by the tests' fake API server in this process, so
the figures include the server's own work), plus ``--pods`` Pending Pods, each with a claim for 16
GPUs (no node has more than 8: DRA701). Printed: the median (and range) of wall-clock seconds for
``why-pending POD`` and for ``why-pending --all-pending``.
"""
from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "bench")]

from bench_cluster_list import build, timed  # noqa: E402
from dralint.cli import main  # noqa: E402
from fakeapi import FakeApiServer, write_kubeconfig  # noqa: E402


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    built = time.perf_counter()
    cluster = build(args.nodes)
    for n in range(args.pods):
        cluster.create("resourceclaims", {"metadata": {"name": f"big-{n}", "namespace": "default"}, "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 16}}]}}})
        cluster.create("pods", {"metadata": {"name": f"train-{n}", "namespace": "default"},
                                "spec": {"containers": [{"name": "main", "image": "train"}],
                                         "resourceClaims": [{"name": "gpu", "resourceClaimName": f"big-{n}"}]},
                                "status": {"phase": "Pending"}})
    print(f"cluster: {args.nodes:,} nodes with 8 GPUs each, {args.pods} Pending Pods "
          f"(built in {time.perf_counter() - built:.1f} s)")
    with FakeApiServer(cluster) as server, tempfile.TemporaryDirectory() as tmp:
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", server.url, name="bench", namespace="default")
        for label, argv in (("one pod", ["train-0"]), ("all pending", ["--all-pending"])):
            def run(argv: list[str] = argv) -> int:
                return main(["why-pending", "--kubeconfig", str(kubeconfig), *argv], stdout=io.StringIO(),
                            stderr=io.StringIO())

            median, low, high, code = timed(run, args.runs)
            print(f"{label:12} {median:6.2f} s  ({low:.2f}-{high:.2f}; exit {code})")


if __name__ == "__main__":
    main_bench()
