#!/usr/bin/env python3
"""How long ``dralint --fix --diff`` takes on one large file full of fixable findings.

The file is generated: ResourceClaims of ``resource.k8s.io/v1`` in turn with two misspelt fields
(``cout: 2``, DRA101: renamed), two requests in v1beta1's flat shape (DRA206: moved under
``exactly:``) and three references to requests in the wrong case (DRA223, DRA227: re-cased),
two fixes per claim on average, until the file reaches ``--size`` kilobytes (default 500). The command runs in a new process each time,
as a user runs it; printed: the file's size and findings, and the median and best wall-clock
time of ``--runs`` runs, plus the machine's load average (other processes share these cores)::

    python3 bench/bench_fix.py                 # 500 KB, 3 runs
    python3 bench/bench_fix.py --size 2000 --runs 1

Prints figures, asserts nothing.
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

REPO = Path(__file__).resolve().parents[1]

_MISSPELT = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: misspelt-{n}
  namespace: bench
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        allocationMode: ExactCount
        cout: 2
    - name: nic
      exactly:
        deviceClassName: nic.example.com
        alocationMode: All
"""
_FLAT = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: flat-{n}
  namespace: bench
spec:
  devices:
    requests:
    - name: gpu
      # the big ones
      deviceClassName: gpu.example.com
      count: 1
    - name: nic
      deviceClassName: nic.example.com
"""
_CASED = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: cased-{n}
  namespace: bench
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
    - name: nic
      exactly:
        deviceClassName: nic.example.com
    constraints:
    - requests: [GPU, NIC]
      matchAttribute: dra.example.com/pcieRoot
    config:
    - requests: [Gpu]
      opaque:
        driver: gpu.example.com
        parameters: {{sharing: time-slicing}}
"""


def generate(size_kb: int) -> tuple[str, int]:
    """The file's text and the number of objects in it."""
    parts: list[str] = []
    total, n = 0, 0
    templates = (_MISSPELT, _FLAT, _CASED)
    while total < size_kb * 1000:
        part = templates[n % len(templates)].format(n=n)
        parts.append(part)
        total += len(part) + 4
        n += 1
    return "---\n".join(parts), n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=500, help="kilobytes of YAML (default 500)")
    parser.add_argument("--runs", type=int, default=3, help="runs to time (default 3)")
    args = parser.parse_args()
    text, objects = generate(args.size)
    samples: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "claims.yaml"
        path.write_text(text, encoding="utf-8")
        summary = ""
        for _ in range(args.runs):
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "dralint", "--fix", "--diff", "--no-config", str(path)],
                                  capture_output=True, text=True, cwd=REPO)
            samples.append(time.perf_counter() - start)
            summary = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    print(f"dralint --fix --diff of one {len(text.encode()) / 1000:.0f} KB file ({objects} claims): "
          f"median {statistics.median(samples):.2f} s, best {min(samples):.2f} s of {args.runs} run(s)")
    print(f"  {summary}")
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPU(s)")


if __name__ == "__main__":
    main()
