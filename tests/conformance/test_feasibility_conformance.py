"""The allocator conformance corpus (../shared/conformance/allocator), judged by dralint.feasibility.

Verdicts must agree with the upstream allocator, and where a scenario states the devices the
allocator picks, ``show_allocation`` must name the same ones. Selectors run through dralint's CEL
in the scheduler's environment. The generated scale scenarios run as a slow test.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dralint.convert import to_canonical
from dralint.feasibility import FeasibilityOptions, judge
from dralint.index import Index
from dralint.manifest import NotAnObject, identify
from dralint.kube.releases import Release
from dralint import source

SHARED = Path(__file__).resolve().parents[3] / "shared"
CORPUS = SHARED / "conformance" / "allocator"

def load_index(*paths: Path) -> tuple[Index, set[int]]:
    """Objects of the given files; the ids of the last file's objects count as linted."""
    objs, linted = [], set()
    for n, path in enumerate(paths):
        f = source.load_file(str(path))
        for doc in f.documents:
            for item in identify(doc, from_cluster=n < len(paths) - 1):
                if isinstance(item, NotAnObject) or not item.api_version:
                    continue
                c = to_canonical(item)
                objs.append(c)
                if n == len(paths) - 1:
                    linted.add(id(c))
    return Index.build(objs), linted


def run_scenario(entry: dict, scen: Path, show: bool = True):
    index, linted = load_index(scen / "cluster.yaml", scen / "claims.yaml")
    release = Release(37, dict(entry.get("feature_gates") or {}))
    options = FeasibilityOptions(node=entry.get("node"), show_allocation=show)
    return judge(index, release, options, lambda o: id(o) in linted)


def verdict(report) -> str:
    rules = {p.rule for _, p in report.problems if p.severity is None or p.severity.value == "error"}
    feas = {"DRA701", "DRA707"} & rules
    other = rules - {"DRA701", "DRA707"}
    return "error" if other else "infeasible" if feas else "feasible"


def _entries() -> list[dict]:
    index = CORPUS / "index.jsonl"
    if not index.is_file():
        return []
    return [json.loads(line) for line in index.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("entry", _entries(), ids=lambda e: e["id"])
def test_scenario_verdict_and_devices(entry):
    report = run_scenario(entry, CORPUS / entry["id"])
    got = verdict(report)
    expect = entry["expect"]
    if expect == "error" and "data-dependent-fatal" in entry.get("tags", []):
        assert got in ("error", "infeasible"), report.problems
    else:
        assert got == expect, [(p.rule, p.message) for _, p in report.problems]
    if entry.get("devices"):
        picked = {}
        for a in report.allocations:
            for req, devs in a["devices"].items():
                picked[f"{a['claim'].split('/', 1)[1]}/{req}"] = sorted(devs)
        assert picked == {k: sorted(v) for k, v in entry["devices"].items()}


def test_corpus_is_present_or_skipped():
    if not CORPUS.is_dir():
        pytest.skip("../shared is not beside the checkout")
    assert _entries(), "index.jsonl lists scenarios"


@pytest.mark.slow
def test_scale_scenarios(tmp_path):
    gen = CORPUS / "gen_scale.py"
    if not gen.is_file():
        pytest.skip("../shared is not beside the checkout")
    scale = tmp_path / "scale"
    subprocess.run([sys.executable, str(gen), "--out", str(scale)], check=True, capture_output=True)
    for line in (scale / "index.jsonl").read_text().splitlines():
        entry = json.loads(line)
        report = run_scenario(entry, scale / entry["id"], show=False)
        if entry.get("mode") == "per-claim":
            bad = {o.name for o, p in report.problems if p.rule == "DRA701"}
            assert bad == {c for c, want in entry["claims"].items() if want == "infeasible"}, entry["id"]
        else:
            assert verdict(report) == entry["expect"], entry["id"]
