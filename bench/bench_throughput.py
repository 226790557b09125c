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

Each end-to-end figure is the wall time and the CPU time (user + sys of the command and its worker
processes): on a shared machine the wall time follows the load, the CPU time much less. When a
``kubeconform`` binary is on PATH, ``kubeconform -strict`` validates the same corpus in the same
run (against dralint's own schemas of the release, laid out as kubeconform looks them up), and
each figure is printed beside it as a ratio of wall times; when it is not, the output says so.

Older corpora named device attributes like ``fpga-tier`` (DRA413 on every slice); for such a
corpus the figures are also printed for a corrected copy (``-tier`` → ``_tier``), which is what a
clean repository costs.

Prints one line per figure; run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import shutil
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


def measured(command: list[str]) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS MiB, stdout) of one command.

    ``wait4`` gives the command's own usage with that of the processes it waited for (dralint's
    workers), where RUSAGE_CHILDREN would add up every run so far and keep the largest peak.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def end_to_end(corpus: Path, extra: list[str]) -> tuple[float, float, float, dict]:
    """(wall seconds, CPU seconds, peak RSS MiB, the JSON summary) of one dralint run over the corpus."""
    seconds, cpu, peak, out = measured([*DRALINT, "--format", "json", *extra, str(corpus)])
    return seconds, cpu, peak, json.loads(out)["summary"]


def kubeconform_command(corpus: Path, release: str) -> list[str] | None:
    """``kubeconform -strict`` over the corpus against dralint's schemas of ``release``; None when
    no kubeconform binary is on PATH. kubeconform looks a schema up by lower-case kind."""
    binary = shutil.which("kubeconform")
    if binary is None:
        return None
    layout = Path(tempfile.mkdtemp(prefix="kubeconform-schemas-"))
    for schema in (REPO / "schemas" / release).glob("*/*.json"):
        target = layout / schema.parent.name / schema.name.lower()
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(schema, target)
    location = str(layout) + "/{{ .ResourceAPIVersion }}/{{ .ResourceKind }}.json"
    return [binary, "-strict", "-summary", "-schema-location", location, str(corpus)]


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def read_and_schema(corpus: Path, release: str) -> tuple[float, int]:
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
                    schema.validate(m.value, release, m.api_version, m.kind)
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
    parser.add_argument("--release", default="1.37", help="the release kubeconform validates for (dralint's default)")
    args = parser.parse_args()
    corpus = corpus_dir(args)
    size = sum(p.stat().st_size for p in corpus.glob("*.yaml")) / 2**20
    print(f"corpus: {corpus} ({size:.1f} MiB), {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    # An installed dralint has byte code (pip compiles it); a checkout run with
    # PYTHONDONTWRITEBYTECODE would otherwise compile every module on every run.
    compileall.compile_dir(str(REPO / "dralint"), quiet=1)

    kubeconform = kubeconform_command(corpus, args.release)
    if kubeconform is None:
        print("kubeconform: no kubeconform binary on PATH, not measured here (no ratios to it below)")
    folders = [("as generated", corpus)]
    if any("-tier" in path.read_text() for path in corpus.glob("*.yaml")):
        folders.append(("corrected", corrected_copy(corpus)))
    cases = (("validation rules, --ignore DRA7", ["--ignore", "DRA7"]),
             ("validation rules, --ignore DRA7 -j 1 (one process)", ["--ignore", "DRA7", "-j", "1"]),
             ("all rules + feasibility", []))
    for label, folder in folders:
        seconds, docs = read_and_schema(folder, args.release)
        print(f"[{label}] read+schema (in process): {docs} documents in {seconds:.2f} s = "
              f"{docs / seconds:,.0f} documents/s")
        theirs = None
        if kubeconform is not None:
            theirs = [measured(kubeconform[:-1] + [str(folder)]) for _ in range(args.runs)]
            print(f"[{label}] kubeconform -strict: median of {args.runs} {median([t[0] for t in theirs]):.2f} s wall, "
                  f"{median([t[1] for t in theirs]):.2f} s CPU")
        walls: dict[str, float] = {}
        cpus: dict[str, float] = {}
        for what, extra in cases:
            runs = [end_to_end(folder, extra) for _ in range(args.runs)]
            wall, cpu = median([r[0] for r in runs]), median([r[1] for r in runs])
            walls[what], cpus[what] = wall, cpu
            summary = runs[0][3]
            docs = summary["documents"]
            beside = (f"; {wall / median([t[0] for t in theirs]):.2f}x kubeconform's wall time"
                      if theirs is not None else "")
            print(f"[{label}] end-to-end, {what}: {docs} documents; median of {len(runs)} {wall:.2f} s wall = "
                  f"{docs / wall:,.0f} documents/s, {cpu:.2f} s CPU (user+sys){beside}; best {min(r[0] for r in runs):.2f} s; "
                  f"peak memory {max(r[2] for r in runs):.0f} MiB; {summary['errors']} errors, "
                  f"{summary['warnings']} warnings {summary['rules']}")
        print(f"[{label}] feasibility / validation alone: "
              f"{walls['all rules + feasibility'] / walls['validation rules, --ignore DRA7']:.2f}x (wall), "
              f"{cpus['all rules + feasibility'] / cpus['validation rules, --ignore DRA7']:.2f}x (CPU)")
    print(f"cold start (dralint one-file.yaml, median of 5): {cold_start(corpus) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
