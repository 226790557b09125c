#!/usr/bin/env python3
"""The webhook's reviews right after a change of the live cluster state, in one worker's code path.

    python3 bench/bench_state_change.py                  # 5,000 nodes x 8 GPUs, 5 changes of each kind
    python3 bench/bench_state_change.py --nodes 2000 --changes 3

Builds the watcher's store for the cluster of ``bench_webhook.py --fleet`` (N nodes, one slice of
8 GPUs each), publishes it to a state folder and follows it with the worker's ``LiveCluster``
(fleet view and warm-up as ``dralint-webhook serve --watch`` wires them), then repeats: change one
object (a ResourceClaim added, or a ResourceSlice shrunk), publish, let the worker swap the state
in, and time the claim reviews that come next (``judge``, the request path without HTTP). Printed
per kind of change: the median time the worker took to take the change in (off the request path),
and the median latency of the first review after the swap and of the next one. The first review
ever is printed too: it counts its class and selectors for the first time.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_webhook import fleet_bodies, fleet_cluster  # noqa: E402

from dralint_webhook.admission import parse_review  # noqa: E402
from dralint_webhook.judge import judge  # noqa: E402
from dralint_webhook.live import LiveCluster  # noqa: E402
from dralint_webhook.policy import parse_policy  # noqa: E402
from dralint_webhook.snapshot import Publisher  # noqa: E402
from dralint_webhook.store import Store  # noqa: E402
from dralint_webhook.warmup import warm_state  # noqa: E402

RV = "resource.k8s.io/v1"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--changes", type=int, default=5, help="changes of each kind (default 5)")
    args = parser.parse_args()

    cluster = fleet_cluster(args.nodes)
    store = Store()
    for resource in store.resources:
        version, items = cluster.items(resource) if resource in cluster.objects else (1, [])
        store.replace(resource, items, str(version), RV if resource not in ("nodes", "namespaces") else "v1")
    policy = parse_policy({"feasibility": "deny"})
    folder = Path(tempfile.mkdtemp(prefix="dralint-bench-state-"))
    live = LiveCluster(str(folder), release_of=lambda: policy.options.release,
                       warm=lambda index: warm_state(policy.options, index))
    body = fleet_bodies()[0]   # a claim that fits: two a100 GPUs
    publisher = Publisher(folder)

    def publish() -> float:
        # As the watcher publishes: the whole state first, then each change as a batch of the log.
        drained = store.drain(every=publisher.epoch == 0)
        if drained.rows is not None:
            publisher.snapshot(drained.rows)
        else:
            publisher.append(drained.changes)
        started = time.perf_counter()
        assert live.refresh()
        return time.perf_counter() - started

    def review() -> float:
        started = time.perf_counter()
        judge(parse_review(body), policy, live.current())
        return time.perf_counter() - started

    built = publish()
    first = review()
    print(f"{args.nodes} nodes x 8 GPUs: state taken in {built:.2f} s; first review ever {_ms(first)}, "
          f"next {_ms(review())}")
    slices = cluster.items("resourceslices")[1]
    version = 10_000_000

    def claim_change(i: int) -> None:
        store.apply("resourceclaims", "ADDED", {"metadata": {"name": f"bench-{i}", "namespace": "ml",
                                                             "resourceVersion": str(version + i)},
                                                "spec": {"devices": {"requests": []}}}, RV)

    def slice_change(i: int) -> None:
        obj = dict(slices[i % len(slices)])
        obj["metadata"] = dict(obj["metadata"], resourceVersion=str(version + 1000 + i))
        obj["spec"] = dict(obj["spec"], devices=obj["spec"]["devices"][: 4 + i % 4])
        store.apply("resourceslices", "MODIFIED", obj, RV)

    print(f"{'change':<22} {'taken in (median)':>18} {'first review':>14} {'next review':>12}")
    for label, change in (("a ResourceClaim added", claim_change), ("a ResourceSlice shrunk", slice_change)):
        taken, firsts, nexts = [], [], []
        for i in range(args.changes):
            change(i)
            taken.append(publish())
            firsts.append(review())
            nexts.append(review())
        print(f"{label:<22} {_ms(statistics.median(taken)):>18} {_ms(statistics.median(firsts)):>14} "
              f"{_ms(statistics.median(nexts)):>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
