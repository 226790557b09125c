#!/usr/bin/env python3
"""Throughput of dralint on the benchmark corpus: documents per second and peak memory.

Generates the corpus the peer figures were measured on (``../shared/bench/gen_corpus.py --docs
10000 --files 100 --seed 1``) unless ``--corpus DIR`` names one, then measures:

* ``read+schema``: reading and the schema stage alone, in process (the issue's first target);
* ``end-to-end``: the ``dralint --format json`` command, as a user runs it (default ``-j``: one
  process per CPU), with every validation rule (``--ignore DRA7``), the same in one process
  (``-j 1``), and with feasibility too; each case runs ``--runs`` times and the median and the
  best are printed (this machine's timings vary by 20 % from run to run);
* ``cold start``: ``dralint`` on one small file (it runs in pre-commit on every commit).

The generated corpus is not valid for the API server: its device attributes are named like
``fpga-tier``, and attribute names must be C identifiers (DRA413 on every slice). The figures are
printed for the corpus as generated (about 10,000 findings, each located to its line) and for a
corrected copy (``-tier`` → ``_tier`` in names and selectors), which is what a clean repository
costs.

Prints one line per figure; run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# The command a user runs: the script installed beside this interpreter (a venv's bin/), else the module.
_SCRIPT = Path(sys.executable).with_name("dralint")
DRALINT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "dralint"]


def corpus_dir(args: argparse.Namespace) -> Path:
    if args.corpus:
        return Path(args.corpus)
    out = Path(tempfile.gettempdir()) / f"dralint-corpus-{args.docs}-{args.files}-seed1"
    if not (out / "corpus-000.yaml").exists():
        gen = SHARED / "bench" / "gen_corpus.py"
        if not gen.exists():
            sys.exit(f"no corpus: pass --corpus DIR or put ../shared beside the checkout ({gen})")
        subprocess.run([sys.executable, str(gen), "--docs", str(args.docs), "--files", str(args.files),
                        "--out", str(out), "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
    return out


def corrected_copy(corpus: Path) -> Path:
    """The corpus with its attribute names made valid (``gpu-tier`` → ``gpu_tier``)."""
    out = corpus.with_name(corpus.name + "-corrected")
    out.mkdir(exist_ok=True)
    for path in sorted(corpus.glob("*.yaml")):
        target = out / path.name
        if not target.exists():
            target.write_text(re.sub(r"([a-z]+)-tier", r"\1_tier", path.read_text()))
    return out


def end_to_end(corpus: Path, extra: list[str]) -> tuple[float, int, float]:
    """(seconds, documents, peak RSS MiB) of one dralint run over the corpus."""
    # The child reports its own peak: RUSAGE_CHILDREN would give the largest of all runs so far.
    child = ("import atexit, resource, runpy, sys; atexit.register(lambda: print('MAXRSS', "
             "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)); "
             f"sys.argv = ['dralint'] + {['--format', 'json', *extra, str(corpus)]!r}; "
             "runpy.run_module('dralint', run_name='__main__')")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    peak = int(proc.stderr.rsplit("MAXRSS", 1)[1].split()[0])
    data = json.loads(proc.stdout)
    return seconds, data["summary"]["documents"], peak / 1024, data["summary"]


def read_and_schema(corpus: Path) -> tuple[float, int]:
    sys.path.insert(0, str(REPO))
    from dralint import schema, source
    from dralint.manifest import Manifest, identify

    paths, _ = source.discover([str(corpus)])
    start = time.perf_counter()
    docs = 0
    for path in paths:
        for doc in source.load_file(path).documents:
            docs += 1
            for m in identify(doc):
                if isinstance(m, Manifest) and m.is_dra:
                    schema.validate(m.value, "1.37", m.api_version, m.kind)
    return time.perf_counter() - start, docs


def cold_start(corpus: Path, runs: int = 5) -> float:
    one = next(iter(sorted(corpus.glob("*.yaml"))))
    small = Path(tempfile.mkdtemp()) / "one.yaml"
    small.write_text(one.read_text().split("\n---\n")[0])
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([*DRALINT, str(small)], capture_output=True)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", help="an existing corpus folder")
    parser.add_argument("--docs", type=int, default=10000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5, help="end-to-end runs of each case (median and best shown)")
    args = parser.parse_args()
    corpus = corpus_dir(args)
    size = sum(p.stat().st_size for p in corpus.glob("*.yaml")) / 2**20
    print(f"corpus: {corpus} ({size:.1f} MiB), {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    # An installed dralint has byte code (pip compiles it); a checkout run with
    # PYTHONDONTWRITEBYTECODE would otherwise compile every module on every run.
    compileall.compile_dir(str(REPO / "dralint"), quiet=1)

    corrected = corrected_copy(corpus)
    cases = (("validation rules, --ignore DRA7", ["--ignore", "DRA7"]),
             ("validation rules, --ignore DRA7 -j 1 (one process)", ["--ignore", "DRA7", "-j", "1"]),
             ("all rules + feasibility", []))
    for label, folder in (("as generated", corpus), ("corrected", corrected)):
        seconds, docs = read_and_schema(folder)
        print(f"[{label}] read+schema (in process): {docs} documents in {seconds:.2f} s = "
              f"{docs / seconds:,.0f} documents/s")
        for what, extra in cases:
            runs = sorted((end_to_end(folder, extra) for _ in range(args.runs)), key=lambda run: run[0])
            median, best = runs[len(runs) // 2], runs[0]
            docs, summary = best[1], best[3]
            print(f"[{label}] end-to-end, {what}: {docs} documents; median of {len(runs)} {median[0]:.2f} s = "
                  f"{docs / median[0]:,.0f} documents/s, best {best[0]:.2f} s = {docs / best[0]:,.0f} documents/s; "
                  f"peak memory {max(run[2] for run in runs):.0f} MiB; {summary['errors']} errors, "
                  f"{summary['warnings']} warnings {summary['rules']}")
    print(f"cold start (dralint one-file.yaml, median of 5): {cold_start(corpus) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
