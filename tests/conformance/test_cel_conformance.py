"""The shared DRA CEL conformance cases (skipped when the reference folder is absent)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dralint.cel import CelEnv, CelRuntimeError, compile_selector, device_from_api

CASES = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "cel" / "cases.jsonl"
_STAGE = {"too-long": "too-long", "syntax": "compile-error", "check": "compile-error",
          "output-type": "compile-error", "cost": "cost-error"}


def _load() -> list[dict[str, Any]]:
    if not CASES.is_file():
        return []
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]


def _env(case: dict[str, Any]) -> CelEnv:
    minor = int(case["kube"].split(".")[1])
    stored = case["env"] == "StoredExpressions"
    features = case.get("features")
    if features is None:
        # Absent means the release's defaults: DRAConsumableCapacity is beta (on) from 1.36.
        gates = frozenset({"DRAConsumableCapacity"}) if minor >= 36 else frozenset()
    else:
        gates = frozenset(k for k, v in features.items() if v)
    return CelEnv(minor, stored, gates)


def _device(spec: dict[str, Any]):
    driver = spec.get("driver", "")
    api: dict[str, Any] = {"attributes": {}, "capacity": {}}
    for dom, ids in spec.get("attributes", {}).items():
        for name, value in ids.items():
            api["attributes"][f"{dom}/{name}"] = value
    for dom, ids in spec.get("capacity", {}).items():
        for name, value in ids.items():
            api["capacity"][f"{dom}/{name}"] = {"value": value}
    if "allowMultipleAllocations" in spec:
        api["allowMultipleAllocations"] = spec["allowMultipleAllocations"]
    return device_from_api(driver, api)


def outcome(case: dict[str, Any]) -> tuple[str, str, int | None]:
    """(expect-style outcome, message, estimated cost) for one case."""
    compiled = compile_selector(case["expression"], _env(case))
    errors = [i for i in compiled.issues if i.severity == "error"]
    if errors:
        return _STAGE[errors[0].code], " | ".join(i.message for i in errors), compiled.cost
    try:
        return ("true" if compiled.evaluate(_device(case["device"])) else "false"), "", compiled.cost
    except CelRuntimeError as exc:
        return "runtime-error", exc.message, compiled.cost


_ALL = _load()


@pytest.mark.skipif(not _ALL, reason="shared/conformance/cel/cases.jsonl is not beside the checkout")
@pytest.mark.parametrize("case", _ALL, ids=[c["id"] for c in _ALL])
def test_case(case: dict[str, Any]) -> None:
    got, message, cost = outcome(case)
    assert got == case["expect"], message
    if case.get("error"):
        assert case["error"] in message
    if case.get("cost") is not None:
        assert cost == case["cost"]


@pytest.mark.skipif(not _ALL, reason="shared/conformance/cel/cases.jsonl is not beside the checkout")
def test_agreement_figure(capsys: pytest.CaptureFixture[str]) -> None:
    agree = 0
    for case in _ALL:
        got, message, cost = outcome(case)
        agree += (got == case["expect"] and (not case.get("error") or case["error"] in message)
                  and (case.get("cost") is None or cost == case["cost"]))
    with capsys.disabled():
        print(f"\nCEL conformance: {agree}/{len(_ALL)} agree")
    assert agree == len(_ALL)


# --- the generated corpus judged by the real Kubernetes code (cel-go v0.27) --------------------
def _oracle(shared: Path) -> list[dict[str, Any]]:
    path = shared / "conformance" / "oracle-cel" / "cases.jsonl"
    if not path.is_file():
        pytest.skip("shared/conformance/oracle-cel/cases.jsonl is not there")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _evaluated_anyway(case: dict[str, Any]) -> str | None:
    """'true', 'false' or 'error: ...' for a cost-error case that the oracle evaluated anyway."""
    note = case.get("note", "")
    marker = "evaluated anyway: "
    if marker not in note:
        return None
    rest = note.split(marker, 1)[1]
    return rest.removeprefix("result ")


def test_oracle_cost_estimates_equal_cel_go(shared: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Our estimate is cel-go's MaxCost, exactly, on every compiled case of the oracle corpus."""
    compiled_cases = [c for c in _oracle(shared) if c.get("cost") is not None]
    wrong = []
    for case in compiled_cases:
        got = compile_selector(case["expression"], _env(case)).cost
        if got != case["cost"]:
            wrong.append(f"{case['id']}: {got} != {case['cost']}: {case['expression'][:120]}")
    agree = len(compiled_cases) - len(wrong)
    with capsys.disabled():
        print(f"\nCEL oracle cost: {agree}/{len(compiled_cases)} exact "
              f"({100.0 * agree / max(1, len(compiled_cases)):.1f}%)")
    assert compiled_cases and agree >= 0.99 * len(compiled_cases), "\n".join(wrong[:20])


def test_oracle_outcomes_equal_kubernetes(shared: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Compile stage, error text and evaluation result agree with the oracle, including the result
    of the cost-error cases that Kubernetes' scheduler evaluates anyway."""
    cases = _oracle(shared)
    wrong = []
    for case in cases:
        got, message, _ = outcome(case)
        ok = got == case["expect"] and (not case.get("error") or case["error"] in message)
        anyway = _evaluated_anyway(case) if ok else None
        if anyway is not None:
            try:
                result = str(compile_selector(case["expression"], _env(case)).evaluate(_device(case["device"]))).lower()
            except CelRuntimeError as exc:
                result = "error: " + exc.message
            ok = result == anyway or (anyway.startswith("error: ") and anyway[7:] in result)
            got, message = result, ""
        if not ok:
            wrong.append(f"{case['id']}: want {case['expect']} {case.get('error', '')!r}, got {got} {message[:80]!r}")
    with capsys.disabled():
        print(f"\nCEL oracle outcomes: {len(cases) - len(wrong)}/{len(cases)} agree")
    assert not wrong, "\n".join(wrong[:20])
