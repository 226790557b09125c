#!/usr/bin/env python3
"""``dralint --kubeconfig``: time to list a large cluster from the API server and to judge a claim against it.

    python3 bench/bench_cluster_list.py              # 5,000 nodes, one 8-GPU ResourceSlice each, 3 runs
    python3 bench/bench_cluster_list.py --nodes 1000 --runs 5

The fake API server of the tests (``tests/fakeapi.py``, kube-apiserver 1.36's shapes, 500 objects
a page) serves the nodes, their slices and one DeviceClass over plain HTTP on 127.0.0.1, in this
process's threads (so the figures include the server's own work on the same CPUs). Measured, the
median of the runs (and the range), wall-clock seconds:

* ``list``: :func:`dralint.cluster.state.list_cluster` (discovery, ``/version``, every resource);
* ``judge``: one claim for 8 GPUs judged against the listed objects (``engine.lint_files``);
* ``command``: ``dralint --kubeconfig K claim.yaml`` in this process, both together;
* ``dump``: ``dralint --cluster dump.json claim.yaml`` with the same objects written as one
  ``kind: List`` (what the live run replaces), for comparison.
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
from typing import Callable


REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from dralint import engine, source  # noqa: E402
from dralint.cli import main  # noqa: E402
from dralint.cluster.connect import connect  # noqa: E402
from dralint.cluster.state import list_cluster  # noqa: E402
from dralint.options import Options  # noqa: E402
from dralint.kube.releases import Release  # noqa: E402
from fakeapi import FakeApiServer, FakeCluster, write_kubeconfig  # noqa: E402

CLAIM = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: eight-gpus, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, count: 8}
"""


def build(nodes: int) -> FakeCluster:
    cluster = FakeCluster()
    cluster.create("namespaces", {"metadata": {"name": "default"}})
    cluster.create("deviceclasses", {"metadata": {"name": "gpu.example.com"},
                                     "spec": {"selectors": [{"cel": {"expression":
                                                                     'device.driver == "gpu.example.com"'}}]}})
    for n in range(nodes):
        name = f"node-{n:05d}"
        cluster.create("nodes", {"metadata": {"name": name, "labels": {"pool": f"rack-{n % 50}"}}})
        cluster.create("resourceslices", {"metadata": {"name": f"{name}-gpu"}, "spec": {
            "driver": "gpu.example.com", "nodeName": name, "pool": {"name": name, "generation": 1,
                                                                    "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}, "index": {"int": i}},
                         "capacity": {"memory": {"value": "80Gi"}}} for i in range(8)]}})
    return cluster


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float, float, object]:
    samples, value = [], None
    for _ in range(runs):
        start = time.perf_counter()
        value = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), min(samples), max(samples), value


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    built = time.perf_counter()
    cluster = build(args.nodes)
    print(f"cluster: {args.nodes:,} nodes, {args.nodes:,} ResourceSlices of 8 GPUs "
          f"(built in {time.perf_counter() - built:.1f} s)")
    with FakeApiServer(cluster) as server, tempfile.TemporaryDirectory() as tmp:
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", server.url, name="bench")
        claim = Path(tmp) / "claim.yaml"
        claim.write_text(CLAIM)
        api = connect(str(kubeconfig))
        median, low, high, snapshot = timed(lambda: list_cluster(api), args.runs)
        objects = len(snapshot.objects())  # type: ignore[attr-defined]
        print(f"list:    {median:6.2f} s  ({low:.2f}-{high:.2f}; {objects:,} objects)")
        files = snapshot.source_files()  # type: ignore[attr-defined]
        options = Options(release=Release(36))
        median, low, high, result = timed(lambda: engine.lint_files([source.load_file(str(claim))], options,
                                                                     cluster_files=files), args.runs)
        rules = sorted({f.rule for f in result.findings}) or ["none"]  # type: ignore[attr-defined]
        print(f"judge:   {median:6.2f} s  ({low:.2f}-{high:.2f}; findings: {', '.join(rules)})")

        def command() -> int:
            return main(["--kubeconfig", str(kubeconfig), "--no-config", str(claim)], stdout=io.StringIO(),
                        stderr=io.StringIO())

        median, low, high, code = timed(command, args.runs)
        print(f"command: {median:6.2f} s  ({low:.2f}-{high:.2f}; exit {code})")
        dump = Path(tmp) / "dump.json"
        dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": snapshot.objects()}))  # type: ignore[attr-defined]

        def from_dump() -> int:
            return main(["--cluster", str(dump), "--kube-version", "1.36", "--no-config", str(claim)],
                        stdout=io.StringIO(), stderr=io.StringIO())

        median, low, high, code = timed(from_dump, args.runs)
        print(f"dump:    {median:6.2f} s  ({low:.2f}-{high:.2f}; exit {code}; {dump.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main_bench()
