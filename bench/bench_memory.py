#!/usr/bin/env python3
"""Peak memory of one large file: the maximum resident set size of ``dralint FILE``.

    python3 bench/bench_memory.py                    # a 17 MiB file from ../shared/bench/gen_corpus.py
    python3 bench/bench_memory.py --file big.yaml

The file is ``gen_corpus.py --docs 12000 --files 1 --seed 1`` (17.0 MiB, one multi-document YAML
file), read with ``--max-file-size 64MiB``. Three runs, each in its own process (its peak is its
own: ru_maxrss of the child and of the processes it forked, whichever is largest): validation alone
(``--ignore DRA7``), every rule (feasibility included) as a user runs it, and every rule in one
process (``-j 1``: the feasibility stage judges every claim in the process that built the fleet view,
so all of the view's caches fill in one process). The last column is what the run adds to validation's
peak. Issue 30 asks for a single large file under 300 MB. When a ``kubeconform`` binary is on PATH,
``kubeconform -strict`` reads the same file in the same run (as ``bench_throughput.py`` runs it) and
its peak is printed below; otherwise the output says so.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_throughput import kubeconform_command  # noqa: E402  (the same kubeconform run as the throughput figure)

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO.parent / "shared" / "bench" / "gen_corpus.py"
RUNS = (("validation (--ignore DRA7)", ["--ignore", "DRA7"]), ("every rule (feasibility too)", []),
        ("every rule, one process (-j 1)", ["-j", "1"]))


def _generate(folder: Path) -> Path:
    if not GENERATOR.exists():
        sys.exit(f"no corpus generator at {GENERATOR}: give --file")
    subprocess.run([sys.executable, str(GENERATOR), "--docs", "12000", "--files", "1", "--seed", "1",
                    "--out", str(folder)], check=True, stdout=subprocess.DEVNULL)
    return folder / "corpus-000.yaml"


def peak_of(command: list[str]) -> tuple[float, float, str]:
    """Max RSS in MB, wall seconds and the last output line of ``command``, in a child that runs nothing else."""
    probe = ("import resource, subprocess, sys, time\n"
             "start = time.perf_counter()\n"
             "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
             "seconds = time.perf_counter() - start\n"
             "lines = done.stdout.strip().splitlines() or done.stderr.strip().splitlines() or ['']\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, seconds, lines[-1], sep='\\t')\n")
    done = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, check=True)
    kib, seconds, summary = done.stdout.strip().split("\t", 2)
    return int(kib) / 1024, float(seconds), summary


def peak(file: Path, extra: list[str]) -> tuple[float, float, str]:
    """``peak_of`` dralint on ``file`` with ``extra`` options."""
    return peak_of([sys.executable, "-m", "dralint", "--no-config", "--max-file-size", "64MiB", *extra, str(file)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=Path, help="the large file (default: generated)")
    parser.add_argument("--release", default="1.37", help="the release kubeconform validates for (dralint's default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        file = args.file or _generate(Path(tmp))
        print(f"file: {file.name}, {file.stat().st_size / 2**20:.1f} MiB; load average {os.getloadavg()[0]:.1f}")
        validation = 0.0
        for n, (label, extra) in enumerate(RUNS):
            mb, seconds, summary = peak(file, extra)
            added = f"+{mb - validation:4.0f} MB" if n else " " * 8
            validation = validation if n else mb
            print(f"  {label:32} max RSS {mb:6.0f} MB {added}  {seconds:6.1f} s   ({summary})")
        theirs = kubeconform_command(file, args.release)
        if theirs is None:
            print("  kubeconform: no kubeconform binary on PATH, not compared")
        else:
            mb, seconds, summary = peak_of(theirs)
            print(f"  {'kubeconform -strict':32} max RSS {mb:6.0f} MB {' ' * 8}  {seconds:6.1f} s   ({summary})")


if __name__ == "__main__":
    main()
