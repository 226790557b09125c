#!/usr/bin/env python3
"""Time dralint's feasibility stage on the allocator scale scenarios and print the figures.

    python3 bench/bench_feasibility.py [--scale DIR] [--repeat N]

DIR defaults to ../shared/conformance/allocator/scale (generated into a temporary folder with
that corpus's gen_scale.py when it is missing). For each scenario it loads the cluster state and
the claims once, then times ``judge`` alone (CEL included), checks the verdicts against the
scenario's expectations, and reports peak memory of the process. Wall and CPU seconds are the
best of ``--repeat`` runs (CPU time is the steadier figure on a busy machine).
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dralint import source  # noqa: E402
from dralint.convert import to_canonical  # noqa: E402
from dralint.feasibility import FeasibilityOptions, judge  # noqa: E402
from dralint.index import Index  # noqa: E402
from dralint.manifest import NotAnObject, identify  # noqa: E402
from dralint.kube.releases import Release  # noqa: E402

CORPUS = REPO.parent / "shared" / "conformance" / "allocator"


def load(cluster: Path, claims: Path) -> tuple[Index, set[int], float]:
    t0 = time.perf_counter()
    objs, linted = [], set()
    for path, is_cluster in ((cluster, True), (claims, False)):
        for doc in source.load_file(str(path)).documents:
            for item in identify(doc, from_cluster=is_cluster):
                if isinstance(item, NotAnObject) or not item.api_version:
                    continue
                c = to_canonical(item)
                objs.append(c)
                if not is_cluster:
                    linted.add(id(c))
    return Index.build(objs), linted, time.perf_counter() - t0


def agreement(entry: dict, report) -> tuple[int, int]:
    errors = [(o, p) for o, p in report.problems if p.rule in ("DRA701", "DRA707")]
    if entry.get("mode") == "per-claim":
        bad = {o.name for o, _ in errors}
        ok = sum((name in bad) == (want == "infeasible") for name, want in entry["claims"].items())
        return ok, len(entry["claims"])
    return int(bool(errors) == (entry["expect"] == "infeasible")), 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=Path, default=CORPUS / "scale")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per scenario; the best is shown")
    args = ap.parse_args()
    scale = args.scale
    if not (scale / "index.jsonl").is_file():
        gen = CORPUS / "gen_scale.py"
        if not gen.is_file():
            print("no scale corpus and no gen_scale.py: nothing to measure", file=sys.stderr)
            return 2
        scale = Path(tempfile.mkdtemp(prefix="dralint-scale-")) / "scale"
        subprocess.run([sys.executable, str(gen), "--out", str(scale)], check=True)
    entries = [json.loads(line) for line in (scale / "index.jsonl").read_text().splitlines() if line.strip()]
    print(f"{'scenario':<34}{'claims':>7}{'load s':>8}{'judge s':>9}{'cpu s':>8}{'agree':>9}")
    for entry in entries:
        index, linted, load_s = load(scale / entry["id"] / "cluster.yaml", scale / entry["id"] / "claims.yaml")
        release = Release(37, dict(entry.get("feature_gates") or {}))
        options = FeasibilityOptions(node=entry.get("node"))
        best, cpu, report = float("inf"), float("inf"), None
        for _ in range(max(1, args.repeat)):
            t0, c0 = time.perf_counter(), time.process_time()
            report = judge(index, release, options, lambda o: id(o) in linted)
            best = min(best, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
        ok, n = agreement(entry, report)
        print(f"{entry['id']:<34}{sum(1 for c in index.claims.values() if id(c) in linted):>7}"
              f"{load_s:>8.2f}{best:>9.3f}{cpu:>8.3f}{f'{ok}/{n}':>9}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory: {peak:.0f} MB (max RSS of this process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
