#!/usr/bin/env python3
"""A large ``kubectl get … -o yaml`` dump: time and peak memory of reading it with dralint.

    python3 bench/bench_cluster_dump.py                # a 15 MB dump, 5 runs of each mode
    python3 bench/bench_cluster_dump.py --mb 21 --runs 3

The dump is what ``kubectl get resourceslices,deviceclasses,resourceclaims -A -o yaml`` prints:
one ``kind: List`` document whose items carry the server's metadata (uid, resourceVersion,
creationTimestamp), built from ``../shared/bench/gen_corpus.py`` output. Each mode runs the
installed ``dralint`` command in its own process; the figures are the median of the runs (and
the range), wall-clock seconds and the peak resident memory of that process (ru_maxrss):

* ``--cluster dump.yaml claim.yaml``: the dump as cluster state for one claim (feasibility off:
  ``--ignore DRA7``, so that reading is what is measured);
* ``dump.yaml``: the dump linted itself (``-j 1``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO.parent / "shared" / "bench" / "gen_corpus.py"
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
CLAIM = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: one-gpu
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
"""
# The peak memory of the measured process, printed by it on exit (ru_maxrss is in KiB on Linux).
_MEASURE = ("import resource, runpy, sys; sys.argv = ['dralint'] + sys.argv[1:]\n"
            "try:\n    runpy.run_module('dralint', run_name='__main__')\n"
            "except SystemExit as exit:\n    code = exit.code\n"
            "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
            "sys.exit(code)\n")


def build_dump(folder: Path, megabytes: float) -> Path:
    """A kubectl-style List of about ``megabytes`` MB (the generated corpus, server metadata added)."""
    docs = int(megabytes * 578)  # about 1.7 kB per generated object with its metadata
    corpus = folder / "corpus"
    subprocess.run([sys.executable, str(GENERATOR), "--docs", str(docs), "--files", "10", "--out", str(corpus),
                    "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
    items = []
    for path in sorted(corpus.glob("*.yaml")):
        for n, obj in enumerate(yaml.load_all(path.read_text(), Loader=LOADER)):
            meta = obj.setdefault("metadata", {})
            meta.update({"uid": f"0000{n:08d}-aaaa-bbbb-cccc-{len(items):012d}", "resourceVersion": str(1000 + len(items)),
                         "creationTimestamp": "2026-11-20T10:00:00Z"})
            items.append(obj)
    dump = folder / "dump.yaml"
    with dump.open("w") as handle:
        yaml.dump({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}},
                  handle, Dumper=DUMPER, default_flow_style=False, sort_keys=True, width=10_000)
    return dump


def measure(args: list[str], cwd: Path) -> tuple[float, int, int]:
    """Seconds, peak resident KiB and exit code of one dralint run."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURE, *args], cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    peak = next((int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK ")), 0)
    return seconds, peak, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=15.0, help="size of the dump (default 15)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each mode (default 5; the median is printed)")
    parser.add_argument("--build", metavar="FOLDER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not GENERATOR.is_file():
        print(f"needs {GENERATOR} (the shared reference folder)")
        return 1
    if args.build:
        build_dump(Path(args.build), args.mb)
        return 0
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        # Built in its own process: a child's ru_maxrss starts from its parent's at fork (Linux keeps
        # the high-water mark across exec), so this process must stay small.
        subprocess.run([sys.executable, __file__, "--build", name, "--mb", str(args.mb)], check=True)
        dump = folder / "dump.yaml"
        (folder / "claim.yaml").write_text(CLAIM)
        size = dump.stat().st_size
        print(f"dump: {size / 1e6:.1f} MB, one kind: List document ({sys.version.split()[0]}, {os.cpu_count()} CPUs)")
        limit = ["--max-file-size", str(size + 1)]
        modes = {"--cluster dump.yaml claim.yaml": ["--no-config", *limit, "--ignore", "DRA7", "--cluster",
                                                    "dump.yaml", "claim.yaml"],
                 "dump.yaml (-j 1)": ["--no-config", *limit, "-j", "1", "--format", "json", "-o", "out.json",
                                      "dump.yaml"]}
        for label, command in modes.items():
            runs = [measure(command, folder) for _ in range(args.runs)]
            seconds = [r[0] for r in runs]
            peaks = [r[1] / 1024 for r in runs]
            print(f"{label:32s} {statistics.median(seconds):5.2f} s ({min(seconds):.2f}–{max(seconds):.2f}), "
                  f"peak {statistics.median(peaks):4.0f} MB ({min(peaks):.0f}–{max(peaks):.0f}), "
                  f"exit {runs[0][2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
