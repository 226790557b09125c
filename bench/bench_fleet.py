#!/usr/bin/env python3
"""Feasibility at fleet scale: every claim of a generated cluster judged, and the corpus figure.

    python3 bench/bench_fleet.py                      # 5,000 nodes x 8 GPUs, 20,000 claims, 3 runs
    python3 bench/bench_fleet.py --nodes 2000 --claims 5000 --repeat 1
    python3 bench/bench_fleet.py --corpus              # dralint CORPUS vs dralint --ignore DRA7 CORPUS

Default mode: a cluster state of ``--nodes`` Nodes (zone and rack labels, a few cordoned or
tainted), one ResourceSlice of 8 GPUs each (three models, two memory sizes, NUMA and PCIe-root
attributes), a DeviceClass per driver and allocated claims holding about a tenth of the GPUs;
then ``--claims`` claims of a realistic mix: claims that fit, with selectors on model, memory
capacity and index; claims with a matchAttribute constraint on NUMA or PCIe root; prioritized
alternatives; allocationMode All; and claims that fit nowhere (9 GPUs per node, a model no node
has, more memory than any GPU, a constraint no node meets). Both are written as YAML and read
the way the CLI reads them (``reading``), then every claim is judged alone against the fleet
(``judging``: the feasibility stage, CEL included). Printed: reading and judging seconds (median
of ``--repeat`` runs, each in a fresh process, so the caches of one run never help the next),
claims judged per second, findings per rule, and the peak resident memory of the process
(``resource.getrusage``; the largest of the runs).

``--corpus``: generates the benchmark corpus with ``../shared/bench/gen_corpus.py --docs 10000
--files 100 --seed 1`` (or takes ``--corpus-dir``) and runs the CLI on it ``--repeat`` times each
way, ``dralint CORPUS`` (every rule, feasibility included) and ``dralint --ignore DRA7 CORPUS``
(validation alone), alternating; prints the medians, their ratio and the DRA7 findings (DRA709:
claims left undecided by the time budget).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_feasibility import load  # noqa: E402

from dralint.feasibility import FeasibilityOptions, judge  # noqa: E402
from dralint.kube.releases import DEFAULT_MINOR, Release  # noqa: E402

RV = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"
MODELS = ("a100", "h100", "l40s")
GPUS_PER_NODE = 8


def _doc(kind: str, name: str, spec: dict | None = None, namespace: str = "", api: str = RV, **extra) -> dict:
    meta: dict = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    out: dict = {"apiVersion": api, "kind": kind, "metadata": meta}
    if spec is not None:
        out["spec"] = spec
    out.update(extra)
    return out


def cluster(nodes: int, rng: random.Random) -> list[dict]:
    """Nodes, their slices, the DeviceClass and claims already allocated (about 10 % of the GPUs)."""
    out = [_doc("DeviceClass", DRIVER, {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]})]
    allocated = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        meta: dict = {"name": name, "labels": {"topology.kubernetes.io/zone": f"zone-{i % 3}", "rack": f"r{i % 50}"}}
        spec: dict = {}
        if i % 500 == 7:
            spec["unschedulable"] = True
        if i % 250 == 3:
            spec["taints"] = [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec})
        model = MODELS[i % 3]
        memory = "80Gi" if (i // 3) % 2 else "40Gi"
        devices = [{"name": f"gpu-{d}", "attributes": {
            "model": {"string": model}, "index": {"int": d}, "numa": {"int": d // 4},
            "pcieRoot": {"string": f"pci0000:{(d // 2):02x}"}},
            "capacity": {"memory": {"value": memory}}} for d in range(GPUS_PER_NODE)]
        out.append(_doc("ResourceSlice", f"{name}-gpu", {
            "driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices}))
        if rng.random() < 0.2:
            held = sorted(rng.sample(range(GPUS_PER_NODE), rng.choice((2, 4, 6))))
            allocated.append((name, held))
    for k, (name, held) in enumerate(allocated):
        out.append(_doc("ResourceClaim", f"running-{k}", {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": len(held)}}]}}, namespace="prod",
            status={"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": DRIVER, "pool": name, "device": f"gpu-{d}"} for d in held]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [name]}]}]}}}))
    return out


def _model(m: str) -> str:
    return f'device.attributes["{DRIVER}"].model == "{m}"'


def _memory(q: str) -> str:
    return f'device.capacity["{DRIVER}"].memory.compareTo(quantity("{q}")) >= 0'


def _exact(count: int, *selectors: str, **extra) -> dict:
    body: dict = {"deviceClassName": DRIVER, "count": count, **extra}
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return body


def claim_mix(n: int, rng: random.Random) -> list[dict]:
    """``n`` claims of the mix described in the module's docstring."""
    out = []
    for k in range(n):
        roll = rng.random()
        model = rng.choice(MODELS)
        constraints: list = []
        if roll < 0.30:            # fits: some GPUs of a model
            requests = [{"name": "gpu", "exactly": _exact(rng.choice((1, 2, 4)), _model(model))}]
        elif roll < 0.42:          # memory capacity and index
            requests = [{"name": "gpu", "exactly": _exact(
                rng.choice((1, 2)), _memory(rng.choice(("40Gi", "80Gi"))),
                f'device.attributes["{DRIVER}"].index >= {rng.randrange(4)}')}]
        elif roll < 0.57:          # same NUMA node
            requests = [{"name": "gpu", "exactly": _exact(rng.choice((2, 3, 4)), _model(model))}]
            constraints = [{"matchAttribute": f"{DRIVER}/numa"}]
        elif roll < 0.65:          # same PCIe root, two requests
            requests = [{"name": "a", "exactly": _exact(1, _model(model))},
                        {"name": "b", "exactly": _exact(1)}]
            constraints = [{"matchAttribute": f"{DRIVER}/pcieRoot", "requests": ["a", "b"]}]
        elif roll < 0.75:          # prioritized alternatives
            requests = [{"name": "gpu", "firstAvailable": [
                {"name": "big", **_exact(8, _model("h100"))}, {"name": "small", **_exact(2, _model(model))}]}]
        elif roll < 0.78:          # every GPU of a model with a high index on a node
            requests = [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "allocationMode": "All", "selectors": [
                {"cel": {"expression": f'{_model(model)} && device.attributes["{DRIVER}"].index >= 6'}}]}}]
        elif roll < 0.84:          # fits nowhere: more than a node has
            requests = [{"name": "gpu", "exactly": _exact(GPUS_PER_NODE + 1)}]
        elif roll < 0.90:          # fits nowhere: a model no node has
            requests = [{"name": "gpu", "exactly": _exact(1, _model("b200"))}]
        elif roll < 0.95:          # fits nowhere: more memory than any GPU
            requests = [{"name": "gpu", "exactly": _exact(1, _memory("160Gi"))}]
        else:                      # fits nowhere: 5 GPUs on one NUMA node of 4
            requests = [{"name": "gpu", "exactly": _exact(5, _model(model))}]
            constraints = [{"matchAttribute": f"{DRIVER}/numa"}]
        devices: dict = {"requests": requests}
        if constraints:
            devices["constraints"] = constraints
        out.append(_doc("ResourceClaim", f"claim-{k:05d}", {"devices": devices}, namespace=f"team-{k % 20}"))
    return out


def _write(path: Path, docs: list[dict]) -> None:
    with path.open("w") as f:
        for d in docs:
            f.write("---\n")
            f.write(json.dumps(d))
            f.write("\n")


def one_run(workdir: Path) -> dict:
    """Read and judge once (in this process); the figures as a dict."""
    index, linted, reading = load(workdir / "cluster.yaml", workdir / "claims.yaml")
    options = FeasibilityOptions(max_seconds=600)
    t0, c0 = time.perf_counter(), time.process_time()
    report = judge(index, Release(DEFAULT_MINOR, {}), options, lambda o: id(o) in linted)
    judging, cpu = time.perf_counter() - t0, time.process_time() - c0
    rules = Counter(p.rule for _, p in report.problems)
    flagged = len({id(o) for o, p in report.problems if p.rule == "DRA701"})
    return {"reading": reading, "judging": judging, "cpu": cpu, "claims": len(linted), "rules": dict(rules),
            "infeasible": flagged, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def fleet_main(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="dralint-fleet-") as tmp:
        workdir = Path(tmp)
        state = cluster(args.nodes, rng)
        _write(workdir / "cluster.yaml", state)
        _write(workdir / "claims.yaml", claim_mix(args.claims, rng))
        held = sum(1 for d in state if d["kind"] == "ResourceClaim")
        print(f"cluster: {args.nodes} nodes x {GPUS_PER_NODE} GPUs, {held} allocated claims; "
              f"{args.claims} claims to judge (seed {args.seed}); {args.repeat} runs, each in a fresh process")
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, __file__, "--one-run", str(workdir)], check=True,
                                 capture_output=True, text=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {k: statistics.median(r[k] for r in runs) for k in ("reading", "judging", "cpu")}
    last = runs[-1]
    print(f"reading (parse, schema-free read, index): {med['reading']:.2f} s  (runs: "
          + "/".join(f"{r['reading']:.2f}" for r in runs) + ")")
    print(f"judging (feasibility of every claim):      {med['judging']:.2f} s  (runs: "
          + "/".join(f"{r['judging']:.2f}" for r in runs) + f"; cpu {med['cpu']:.2f} s)")
    print(f"claims judged: {last['claims']}, {last['claims'] / med['judging']:.0f} claims/s; "
          f"infeasible (DRA701): {last['infeasible']}; findings by rule: {last['rules']}")
    print(f"undecided (DRA709): {last['rules'].get('DRA709', 0)}")
    print(f"peak resident memory: {max(r['rss_mib'] for r in runs):.0f} MiB (max RSS of the judging process)")
    return 0


def corpus_main(args: argparse.Namespace) -> int:
    dralint = [sys.executable, "-m", "dralint"]
    with tempfile.TemporaryDirectory(prefix="dralint-corpus-") as tmp:
        corpus = args.corpus_dir
        if corpus is None:
            gen = REPO.parent / "shared" / "bench" / "gen_corpus.py"
            if not gen.is_file():
                print("no ../shared/bench/gen_corpus.py and no --corpus-dir: nothing to measure", file=sys.stderr)
                return 2
            corpus = Path(tmp) / "corpus"
            subprocess.run([sys.executable, str(gen), "--docs", "10000", "--files", "100", "--seed", "1",
                            "--out", str(corpus)], check=True, capture_output=True)
        times: dict[str, list[float]] = {"all": [], "validation": []}
        findings: dict[str, Counter] = {}
        for _ in range(args.repeat):
            for label, extra in (("validation", ["--ignore", "DRA7"]), ("all", [])):
                t0 = time.perf_counter()
                out = subprocess.run(dralint + ["--format", "json", *extra, str(corpus)], capture_output=True,
                                     text=True)
                times[label].append(time.perf_counter() - t0)
                findings[label] = _rules(out.stdout)
    full, alone = statistics.median(times["all"]), statistics.median(times["validation"])
    dra7 = {r: n for r, n in sorted(findings["all"].items()) if r.startswith("DRA7")}
    print(f"corpus: {corpus if args.corpus_dir else 'gen_corpus.py --docs 10000 --files 100 --seed 1'}; "
          f"{args.repeat} runs each way, alternating; wall seconds of the whole CLI process")
    print(f"dralint --ignore DRA7 CORPUS (validation): median {alone:.2f} s  (runs: "
          + "/".join(f"{t:.2f}" for t in times["validation"]) + ")")
    print(f"dralint CORPUS (every rule, feasibility):  median {full:.2f} s  (runs: "
          + "/".join(f"{t:.2f}" for t in times["all"]) + ")")
    print(f"ratio: {full / alone:.2f}x; DRA7 findings: {dra7 or 'none'}; DRA709: {dra7.get('DRA709', 0)}")
    return 0


def _rules(stdout: str) -> Counter:
    """Findings per rule of the CLI's JSON output."""
    try:
        data = json.loads(stdout)
    except json.JSONDecodeError:
        return Counter({"(unreadable output)": 1})
    items = data.get("findings", data) if isinstance(data, dict) else data
    return Counter(f.get("rule", "?") for f in items if isinstance(f, dict))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--claims", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="runs; medians are printed (default 3)")
    ap.add_argument("--corpus", action="store_true", help="the corpus figure instead (see above)")
    ap.add_argument("--corpus-dir", type=Path, help="an existing corpus folder for --corpus")
    ap.add_argument("--one-run", type=Path, help=argparse.SUPPRESS)   # a child run: read, judge, print JSON
    args = ap.parse_args()
    if args.one_run:
        print(json.dumps(one_run(args.one_run)))
        return 0
    if args.corpus or args.corpus_dir:
        return corpus_main(args)
    return fleet_main(args)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
