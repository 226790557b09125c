"""The allocator conformance corpus (../shared/conformance/allocator), judged by dralint.feasibility.

Verdicts must agree with the upstream allocator, and where a scenario states the devices the
allocator picks, ``show_allocation`` must name the same ones. Selectors run through dralint's
CEL when it is available, else through the small evaluator below, which understands the
expression shapes the corpus uses.
"""
from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from dralint.convert import to_canonical
from dralint.feasibility import FeasibilityOptions, judge
from dralint.feasibility.model import Device, quantity
from dralint.feasibility.selection import SelectorError
from dralint.index import Index
from dralint.manifest import NotAnObject, identify
from dralint.releases import Release
from dralint import source

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "conformance" / "allocator"

_ATTR = re.compile(r'^device\.(attributes|capacity)\["([^"]+)"\]\.(\w+)(.*)$')


def _attr_value(raw: dict):
    for kind in ("int", "bool", "string", "version"):
        if kind in raw:
            return raw[kind]
    raise SelectorError("CEL runtime error: unsupported attribute value")


def _lookup(device: Device, field: str, domain: str, name: str):
    table = device.attributes if field == "attributes" else device.capacity
    for key, value in table.items():
        dom, _, short = key.rpartition("/")
        if (dom or device.key[0]) == domain and short == name:
            return _attr_value(value) if field == "attributes" else value.value
    raise SelectorError(f"CEL runtime error: no such key: {name}")


def _atom(atom: str, device: Device) -> bool:
    atom = atom.strip()
    m = re.fullmatch(r'device\.driver == "([^"]*)"', atom)
    if m:
        return device.key[0] == m.group(1)
    m = re.fullmatch(r"device\.allowMultipleAllocations == (true|false)", atom)
    if m:
        return device.allow_multiple == (m.group(1) == "true")
    m = _ATTR.match(atom)
    if not m:
        raise AssertionError(f"test evaluator cannot read {atom!r}")
    value = _lookup(device, m.group(1), m.group(2), m.group(3))
    rest = m.group(4).strip()
    if not rest:
        if not isinstance(value, bool):
            raise SelectorError("CEL runtime error: result is not a bool")
        return value
    m2 = re.fullmatch(r'\.compareTo\(quantity\("([^"]+)"\)\) >= 0', rest)
    if m2:
        return value >= quantity(m2.group(1))
    m2 = re.fullmatch(r"(==|<|>=) (.+)", rest)
    if not m2:
        raise AssertionError(f"test evaluator cannot read {atom!r}")
    op, lit = m2.groups()
    if lit.startswith("["):
        raise AssertionError("use `in` for lists")
    want = json.loads(lit)
    return {"==": value == want, "<": value < want, ">=": value >= want}[op] if type(value) is type(want) or op != "==" else False


def mini_cel(expression: str, device: Device) -> bool:
    """``a && b && ...`` of the atoms above; ``x in [..]`` for string lists."""
    for atom in expression.split("&&"):
        m = re.fullmatch(r'\s*(device\.attributes\["[^"]+"\]\.\w+) in (\[.*\])\s*', atom)
        if m:
            inner = _ATTR.match(m.group(1))
            assert inner
            if _lookup(device, inner.group(1), inner.group(2), inner.group(3)) not in json.loads(m.group(2)):
                return False
            continue
        if not _atom(atom, device):
            return False
    return True


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
    return judge(index, release, options, lambda o: id(o) in linted, evaluate=mini_cel)


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
