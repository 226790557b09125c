#!/usr/bin/env python3
"""Parser benchmark: documents/s, MB/s and peak memory for each YAML reading candidate.

    python3 bench/bench_parse.py --corpus /tmp/corpus
    python3 bench/bench_parse.py            # generates the corpus with ../shared/bench/gen_corpus.py

The corpus is ``gen_corpus.py --docs 10000 --files 100 --seed 1`` (10,010 documents, 15 MB).
Each candidate runs in its own process so that its peak resident memory (ru_maxrss, which
includes C/C++ allocations) is its own; the best of ``--repeat`` runs is reported, both by
wall-clock time and by the process's CPU time (steadier when other jobs share the machine).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO.parent / "shared" / "bench" / "gen_corpus.py"


def _dralint(texts: list[tuple[str, str]]) -> int:
    from dralint.source import load_text

    return sum(len(load_text(text, name).documents) for name, text in texts)


def _dralint_exact(texts: list[tuple[str, str]]) -> int:
    from dralint.source.composer import DocumentComposer
    from dralint.source.splitter import split_chunks

    composer = DocumentComposer()
    count = 0
    for _, text in texts:
        for chunk in split_chunks(text):
            documents, _ = composer.compose(chunk.body)
            count += sum(1 for d in documents if d.value is not None)
    return count


def _dralint_locate(texts: list[tuple[str, str]]) -> int:
    """Values plus the position index of every document (the cost when every document has a finding)."""
    from dralint.source import load_text

    count = 0
    for name, text in texts:
        for document in load_text(text, name).documents:
            document.positions()
            count += 1
    return count


def _pyyaml_load(texts: list[tuple[str, str]]) -> int:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return sum(sum(1 for d in yaml.load_all(text, Loader=loader) if d is not None) for _, text in texts)


def _pyyaml_compose(texts: list[tuple[str, str]]) -> int:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return sum(sum(1 for _ in yaml.compose_all(text, Loader=loader)) for _, text in texts)


def _pyyaml_events(texts: list[tuple[str, str]]) -> int:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    count = 0
    for _, text in texts:
        for event in yaml.parse(text, Loader=loader):
            count += isinstance(event, yaml.DocumentStartEvent)
    return count


def _ryml_tree(texts: list[tuple[str, str]]) -> int:
    import ryml

    count = 0
    for _, text in texts:
        tree = ryml.parse_in_arena(text.encode())
        root = tree.root_id()
        count += tree.num_children(root) if tree.is_stream(root) else 1
    return count


def _ryml_json(texts: list[tuple[str, str]]) -> int:
    import orjson
    import ryml

    count = 0
    for _, text in texts:
        tree = ryml.parse_in_arena(text.encode())
        value = orjson.loads(ryml.emit_json(tree))
        count += len(value) if isinstance(value, list) else 1
    return count


CANDIDATES: dict[str, tuple[Callable[[list[tuple[str, str]]], int], str]] = {
    "dralint load_text": (_dralint, "what dralint runs: rapidyaml fast path, exact reader where needed"),
    "dralint exact reader": (_dralint_exact, "libyaml events + goyaml.v2 rules for every document"),
    "dralint + positions": (_dralint_locate, "load_text, then the position index of every document"),
    "pyyaml load_all (C)": (_pyyaml_load, "YAML 1.1 values, not Kubernetes'"),
    "pyyaml compose_all (C)": (_pyyaml_compose, "nodes with positions, no values"),
    "pyyaml events (C)": (_pyyaml_events, "libyaml events only"),
    "ryml tree": (_ryml_tree, "C++ tree only, no Python values"),
    "ryml + emit_json + orjson": (_ryml_json, "whole-file JSON, no checks"),
}


def run_one(name: str, corpus: str, repeat: int) -> dict:
    """Run candidate ``name`` in this process and return its figures."""
    files = sorted(glob.glob(os.path.join(corpus, "*.yaml")))
    texts = [(path, Path(path).read_text(encoding="utf-8")) for path in files]
    size = sum(len(text.encode()) for _, text in texts)
    function = CANDIDATES[name][0]
    best = best_cpu = float("inf")
    documents = 0
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        documents = function(texts)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"name": name, "documents": documents, "seconds": best, "docs_per_s": documents / best,
            "cpu_docs_per_s": documents / best_cpu, "mb_per_s": size / 1e6 / best_cpu,
            "peak_mib": peak_kib / 1024}


def ensure_corpus(corpus: str | None) -> str:
    if corpus:
        return corpus
    out = os.path.join(tempfile.gettempdir(), "dralint-bench-corpus")
    if not glob.glob(os.path.join(out, "*.yaml")):
        subprocess.run([sys.executable, str(GENERATOR), "--docs", "10000", "--files", "100",
                        "--out", out, "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", help="folder of *.yaml files (default: generate one)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="run one candidate in this process and print JSON")
    args = parser.parse_args()
    corpus = ensure_corpus(args.corpus)
    if args.only:
        print(json.dumps(run_one(args.only, corpus, args.repeat)))
        return
    print(f"corpus: {corpus}")
    print(f"{'candidate':28} {'docs':>6} {'docs/s':>9} {'CPU docs/s':>11} {'CPU MB/s':>9} {'peak MiB':>9}  note")
    for name, (_, note) in CANDIDATES.items():
        done = subprocess.run([sys.executable, __file__, "--corpus", corpus, "--repeat", str(args.repeat),
                               "--only", name], capture_output=True, text=True, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        if done.returncode != 0:
            print(f"{name:28} failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(done.stdout)
        print(f"{name:28} {r['documents']:>6} {r['docs_per_s']:>9,.0f} {r['cpu_docs_per_s']:>11,.0f} "
              f"{r['mb_per_s']:>9.1f} {r['peak_mib']:>9.0f}  {note}")


if __name__ == "__main__":
    main()
