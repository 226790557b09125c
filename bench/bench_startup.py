#!/usr/bin/env python3
"""Cold start: the wall time of ``dralint FILE`` on one small file, beside a bare interpreter.

    python3 bench/bench_startup.py                       # examples/gpu-inference/training-claim.yaml
    python3 bench/bench_startup.py --runs 9 FILE

Each command runs ``--runs`` times in a fresh process (after one untimed run that warms the
file cache and the bytecode); the median is printed, and the extra time over ``python -c pass``
is the figure issue 30 bounds (≤ 100 ms). ``kubeconform -strict FILE`` is timed beside them when
a ``kubeconform`` binary is on PATH. The import part alone comes from ``python -X importtime``:
the sum of the top-level imports' cumulative times, steadier than wall time on a busy machine.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "examples" / "gpu-inference" / "training-claim.yaml"


# As after ``pip install``: the bytecode is written once and read by every later run (an environment
# with PYTHONDONTWRITEBYTECODE would compile every module on every start, which no user pays).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _median_seconds(command: list[str], runs: int) -> float:
    """The median wall time of ``command`` run ``runs`` times, output discarded."""
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=_ENV)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=_ENV)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def import_totals(python: str, file: Path) -> tuple[float, int]:
    """Seconds spent importing (the sum of the top-level imports' cumulative times) and the number
    of modules imported by ``python -X importtime -m dralint FILE``."""
    done = subprocess.run([python, "-X", "importtime", "-m", "dralint", "--no-config", str(file)],
                          capture_output=True, text=True, check=False, env=_ENV)
    total, count = 0, 0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        _, cumulative, name = line.split("|", 2)
        count += 1
        if not name[1:].startswith(" "):   # one space of indent: imported by the run itself
            total += int(cumulative)
    return total / 1e6, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", type=Path, default=SMALL, help="the small manifest to lint")
    parser.add_argument("--runs", type=int, default=7, help="runs per command (median)")
    args = parser.parse_args()
    python = sys.executable
    dralint = [python, "-m", "dralint", "--no-config", str(args.file)]
    bare = _median_seconds([python, "-c", "pass"], args.runs)
    cold = _median_seconds(dralint, args.runs)
    imports, modules = import_totals(python, args.file)
    print(f"file: {args.file} ({args.file.stat().st_size} bytes), median of {args.runs} runs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  python -c pass          {bare * 1000:7.1f} ms")
    print(f"  dralint FILE            {cold * 1000:7.1f} ms   (+{(cold - bare) * 1000:.1f} ms over bare Python; "
          "issue 30 asks ≤ 100)")
    print(f"  imports (-X importtime) {imports * 1000:7.1f} ms   ({modules} modules)")
    kubeconform = shutil.which("kubeconform")
    if kubeconform:
        theirs = _median_seconds([kubeconform, "-strict", str(args.file)], args.runs)
        print(f"  kubeconform -strict     {theirs * 1000:7.1f} ms   (dralint {cold / theirs:.2f}×)")
    else:
        print("  kubeconform: no kubeconform binary on PATH, not compared")


if __name__ == "__main__":
    main()
