#!/usr/bin/env python3
"""Benchmark the schema stage: documents per second, ``jsonschema`` against dralint's compiled checkers.

Generate the corpus first (the same one the other benchmarks use)::

    python3 ../shared/bench/gen_corpus.py --docs 10000 --files 100 --out /tmp/corpus --seed 1
    python3 bench/bench_schema.py --corpus /tmp/corpus

Prints, for the whole corpus: YAML reading alone (PyYAML with libyaml's CSafeLoader), schema
validation alone with ``jsonschema`` (one cached Draft 2020-12 validator per kind, all errors
collected, date-time format checked) and with dralint, and reading plus dralint's validation end
to end. Each figure is the best of ``--repeat`` runs, by wall clock and by the process's CPU
time (everything here is single-threaded; CPU time is steadier on a shared machine).

Then the yes/no question every document is asked first ("is it valid?": only the few that are
not are walked again for their problems), answered by dralint's compiled checkers and, when they
are installed, by two compiled validators: ``fastjsonschema`` (generated Python code) and
``jsonschema_rs`` (Rust), each given dralint's ``quantity`` and ``date-time`` formats. This is
the measurement behind docs/performance.md's decision on the schema stage.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import jsonschema
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dralint.schema import validate  # noqa: E402  (needs the path above)
from dralint.schema.served import schema_file  # noqa: E402


def read_corpus(files: list[Path]) -> list[dict[str, Any]]:
    """Every document of every file, parsed with libyaml."""
    docs: list[dict[str, Any]] = []
    for path in files:
        with path.open(encoding="utf-8") as fh:
            docs.extend(doc for doc in yaml.load_all(fh, Loader=yaml.CSafeLoader) if isinstance(doc, dict))
    return docs


def best_of(repeat: int, run: Callable[[], object]) -> tuple[float, float]:
    """Fastest (wall-clock, CPU) times of ``repeat`` runs, in seconds."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        run()
        wall = min(wall, time.perf_counter() - start_wall)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu


def jsonschema_runner(docs: list[dict[str, Any]], release: str) -> Callable[[], int]:
    """A run of ``jsonschema`` over ``docs`` (validators built beforehand, as a real cache would)."""
    validators: dict[tuple[str, str], jsonschema.Draft202012Validator] = {}
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        if key not in validators:
            path = schema_file(release, *key)
            if path is None:
                raise SystemExit(f"{key} is not served by {release}")
            schema = json.loads(path.read_text(encoding="utf-8"))
            validators[key] = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())

    def run() -> int:
        return sum(1 for doc in docs for _ in validators[(doc["apiVersion"], doc["kind"])].iter_errors(doc))

    return run


def dralint_runner(docs: list[dict[str, Any]], release: str) -> Callable[[], int]:
    """A run of dralint's schema stage over ``docs``."""
    def run() -> int:
        return sum(len(validate(doc, release, doc["apiVersion"], doc["kind"])) for doc in docs)

    return run


def _formats() -> dict[str, Callable[[str], bool]]:
    """The two formats our schemas use, as dralint checks them (the compiled validators call back)."""
    from dralint.kube.quantity import Quantity, QuantityError
    from dralint.schema.timestamps import is_go_rfc3339

    def quantity(value: str) -> bool:
        try:
            Quantity.parse(value)
        except QuantityError:
            return False
        return True

    return {"quantity": quantity, "date-time": is_go_rfc3339}


def _schemas(docs: list[dict[str, Any]], release: str) -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        if key not in found:
            path = schema_file(release, *key)
            found[key] = json.loads(path.read_text(encoding="utf-8")) if path is not None else {}
    return found


def yes_no_runners(docs: list[dict[str, Any]], release: str) -> dict[str, Callable[[], int]]:
    """"Is it valid?" over ``docs``, per validator installed: each returns how many are not."""
    from dralint.schema.validator import compiled

    runners: dict[str, Callable[[], int]] = {}
    ours = {key: compiled(release, *key) for key in _schemas(docs, release)}
    runners["dralint compiled checkers"] = lambda: sum(
        1 for doc in docs if not ours[(doc["apiVersion"], doc["kind"])].valid(doc))
    try:
        import fastjsonschema
    except ImportError:
        print("fastjsonschema: not installed (pip install fastjsonschema), not measured")
    else:
        def fast_valid(schema: dict[str, Any]) -> Callable[[Any], bool]:
            # It knows drafts 4-7; our $defs are plain JSON pointers to it.
            check = fastjsonschema.compile({k: v for k, v in schema.items() if k != "$schema"}, formats=_formats())

            def valid(doc: Any) -> bool:
                try:
                    check(doc)
                except fastjsonschema.JsonSchemaException:
                    return False
                return True
            return valid
        fast = {key: fast_valid(schema) for key, schema in _schemas(docs, release).items()}
        runners["fastjsonschema (generated code)"] = lambda: sum(
            1 for doc in docs if not fast[(doc["apiVersion"], doc["kind"])](doc))
    try:
        import jsonschema_rs
    except ImportError:
        print("jsonschema_rs: not installed (pip install jsonschema-rs), not measured")
    else:
        rust = {key: jsonschema_rs.validator_for(schema, formats=_formats(), validate_formats=True)
                for key, schema in _schemas(docs, release).items()}
        runners["jsonschema_rs (Rust)"] = lambda: sum(
            1 for doc in docs if not rust[(doc["apiVersion"], doc["kind"])].is_valid(doc))
    return runners


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/corpus"), help="folder of corpus-*.yaml files")
    parser.add_argument("--release", default="1.35", help="Kubernetes release to validate for (default 1.35)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best counts (default 3)")
    args = parser.parse_args(argv)
    files = sorted(args.corpus.glob("*.yaml"))
    if not files:
        print(f"no *.yaml files in {args.corpus}; generate the corpus first (see --help)", file=sys.stderr)
        return 2

    docs = read_corpus(files)
    n = len(docs)
    ours, theirs = dralint_runner(docs, args.release), jsonschema_runner(docs, args.release)
    problems_ours, problems_theirs = ours(), theirs()  # also warms the caches
    print(f"corpus: {n} documents in {len(files)} files, release {args.release}; "
          f"problems found: dralint {problems_ours}, jsonschema {problems_theirs}")

    t_read = best_of(args.repeat, lambda: read_corpus(files))
    t_theirs = best_of(args.repeat, theirs)
    t_ours = best_of(args.repeat, ours)
    rows = [
        ("read (yaml.CSafeLoader)", t_read),
        ("schema, jsonschema", t_theirs),
        ("schema, dralint", t_ours),
        ("read + schema, jsonschema", (t_read[0] + t_theirs[0], t_read[1] + t_theirs[1])),
        ("read + schema, dralint", (t_read[0] + t_ours[0], t_read[1] + t_ours[1])),
    ]
    print(f"{'':28}{'docs/s (wall)':>15}{'docs/s (CPU)':>15}")
    for label, (wall, cpu) in rows:
        print(f"{label:28}{n / wall:15,.0f}{n / cpu:15,.0f}")
    print(f"dralint vs jsonschema, schema alone: {t_theirs[1] / t_ours[1]:.1f}x (CPU)")
    print("is it valid? (the first question asked of every document)")
    for label, run in yes_no_runners(docs, args.release).items():
        invalid = run()
        wall, cpu = best_of(args.repeat, run)
        print(f"  {label:34}{n / wall:12,.0f} docs/s (wall){n / cpu:12,.0f} docs/s (CPU); {invalid} not valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
