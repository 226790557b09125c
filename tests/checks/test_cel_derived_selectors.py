"""Derived-attribute expressions (1.37, DRADerivedAttributes) compiled as the API server does.

dynamic-resource-allocation ``cel/compile.go`` ``validateOutputType`` with ``DerivedAttribute``
(a scalar, or a list of scalars where list-type attributes exist) and kubernetes/kubernetes
``pkg/apis/resource/validation/validation.go`` @009801d9 ``validateCELExpression`` (each estimate
against min(selector limit, claim budget); the estimates of those that compile summed per claim).
"""
from __future__ import annotations

import pytest

from dralint.cel import (DERIVED_CLAIM_MAX_COST, DERIVED_MAX_COST, CelEnv, compile_derived_attribute,
                         compile_selector)
from dralint.engine import Options, lint_text
from dralint.kube.releases import Release

NEW = CelEnv(37, gates=frozenset({"DRAConsumableCapacity"}))
NEW_LISTS = CelEnv(37, gates=frozenset({"DRAConsumableCapacity", "DRAListTypeAttributes"}))
A = 'device.attributes["gpu.example.com"]'
# 747,310 by the estimate: 32 * (32 * (32 * 23 + ...)) over three nested comprehensions of domains
HEAVY = "device.attributes.map(a, device.attributes.map(b, device.attributes.filter(c, c == a))).size()"


@pytest.mark.parametrize("expr", [f"{A}.numa", f"{A}.numa / 2", f'{A}.model + "-x"', f"{A}.numa > 1",
                                  f'semver("1.0.0")', f'{A}.topology.split("-")[0]'])
def test_scalars_are_derived_attribute_values(expr: str) -> None:
    compiled = compile_derived_attribute(expr, NEW)
    assert compiled.ok, compiled.issues


@pytest.mark.parametrize("expr,type_name", [
    ("1.5", "double"), ('{"a": 1}', "map(string, int)"), ("2u", "uint"),
    ('device.capacity["gpu.example.com"].memory', "kubernetes.Quantity"), ("[1, 2]", "list(int)"),
])
def test_other_values_are_refused_with_the_servers_words(expr: str, type_name: str) -> None:
    issues = compile_derived_attribute(expr, NEW).issues
    assert [(i.code, i.message) for i in issues] == [
        ("output-type", f"must evaluate to a primitive scalar (string, integer, boolean, semver), not {type_name}")]


def test_lists_of_scalars_need_list_type_attributes() -> None:
    assert compile_derived_attribute(f"[{A}.a, {A}.b]", NEW_LISTS).ok
    assert compile_derived_attribute('["a", "b"]', NEW_LISTS).ok
    refused = compile_derived_attribute("[1.5]", NEW_LISTS).issues
    assert refused[0].message == ("must evaluate to a primitive scalar (string, integer, boolean, semver) or a list "
                                  "of these scalars, not list(double)")
    assert compile_derived_attribute("[1, 2]", CelEnv(37, stored=True)).ok


def test_a_selector_keeps_its_own_output_rule() -> None:
    assert compile_derived_attribute(f"{A}.numa / 2", NEW).ok
    assert not compile_selector(f"{A}.numa / 2 + 1.0", NEW).ok
    assert not compile_derived_attribute(f"{A}.numa / 2 + 1.0", NEW).ok


def test_one_expression_over_its_limit() -> None:
    over = ("device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
            "device.attributes.all(d, a == b)))) ? 1 : 0")
    compiled = compile_derived_attribute(over, NEW)
    assert compiled.cost is not None and compiled.cost > DERIVED_MAX_COST
    assert [i.code for i in compiled.issues] == ["cost"]
    assert compile_derived_attribute(HEAVY, NEW).cost == 747_310


def _claim(*expressions: str) -> str:
    attrs = "".join(f"        - name: gpu.example.com/k{i}\n          expression: '{e}'\n"
                    for i, e in enumerate(expressions))
    uses = "".join(f"    - matchAttribute: gpu.example.com/k{i}\n" for i in range(len(expressions)))
    return ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\nspec:\n"
            "  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n"
            f"        derivedAttributes:\n{attrs}    constraints:\n{uses}")


def _dra266(text: str) -> list[tuple[str, str]]:
    options = Options(release=Release(37, {"DRADerivedAttributes": True}))
    return [(f.field, f.message) for f in lint_text(text, options) if f.rule == "DRA266"]


def test_the_claim_budget_is_shared_by_its_derived_attributes() -> None:
    assert _dra266(_claim(HEAVY)) == []
    found = _dra266(_claim(HEAVY, HEAVY))
    assert [p for p, _ in found] == ["spec.devices"]
    assert "747,310 + 747,310 = 1,494,620" in found[0][1]
    assert f"budget of {DERIVED_CLAIM_MAX_COST:,}" in found[0][1]
    assert "total cost of derived attribute CEL expressions in the claim exceeds cost limit" in found[0][1]


def test_an_expression_over_its_limit_is_reported_with_the_estimate() -> None:
    over = ("device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
            "device.attributes.all(d, a == b)))) ? 1 : 0")
    cost = compile_derived_attribute(over, NEW).cost
    found = _dra266(_claim(over))
    paths = [p for p, _ in found]
    assert "spec.devices.requests[0].exactly.derivedAttributes[0].expression" in paths
    message = dict(found)["spec.devices.requests[0].exactly.derivedAttributes[0].expression"]
    assert f"{cost:,}" in message and "too complex, exceeds cost limit" in message
    # it counts toward the claim's total too, as the server adds every estimate that compiled
    assert "spec.devices" in paths


def test_wrong_output_types_and_compile_errors_are_reported() -> None:
    found = dict(_dra266(_claim("1.5", "device.nosuch")))
    base = "spec.devices.requests[0].exactly.derivedAttributes"
    assert "not double" in found[f"{base}[0].expression"]
    assert "undefined field 'nosuch'" in found[f"{base}[1].expression"]
