"""DeviceClass, DeviceTaintRule and node-selector rules (classes.py, taint_rules.py, nodeselector.py)."""
from __future__ import annotations

import textwrap

import pytest

from dralint.checks.nodeselector import node_selector_problems
from dralint.engine import Options, lint_text
from dralint.paths import FieldPath
from dralint.kube.releases import Release, parse_version

SELECTOR = '- cel:\n    expression: device.driver == "gpu.example.com"\n'
CONFIG = "- opaque:\n    driver: gpu.example.com\n    parameters: {kind: GpuConfig}\n"


def device_class(spec: str, version: str = "v1") -> str:
    return (f"apiVersion: resource.k8s.io/{version}\nkind: DeviceClass\nmetadata:\n  name: gpu.example.com\nspec:\n"
            + textwrap.indent(textwrap.dedent(spec).strip("\n"), "  ") + "\n")


def taint_rule(spec: str, version: str = "v1", status: str = "") -> str:
    text = (f"apiVersion: resource.k8s.io/{version}\nkind: DeviceTaintRule\nmetadata:\n  name: maintenance\nspec:\n"
            + textwrap.indent(textwrap.dedent(spec).strip("\n"), "  ") + "\n")
    return text + ("status:\n" + textwrap.indent(textwrap.dedent(status).strip("\n"), "  ") + "\n" if status else "")


def errors(text: str, kube: str = "1.37", old: str | None = None, **gates: bool) -> set[tuple[str, str]]:
    findings = lint_text(text, Options(release=Release(parse_version(kube), dict(gates))), old_text=old)
    return {(f.rule, f.field) for f in findings if f.severity.value == "error"}


@pytest.mark.parametrize("spec, expected", [
    ("selectors:\n" + SELECTOR * 32, set()),
    ("selectors:\n" + SELECTOR * 33, {("DRA300", "spec.selectors")}),
    ("selectors:\n" + SELECTOR + "- {}\n", {("DRA301", "spec.selectors[1].cel")}),
    ("config:\n" + CONFIG * 32, set()),
    ("config:\n" + CONFIG * 33, {("DRA302", "spec.config")}),
    ("config:\n- {}\n", {("DRA228", "spec.config[0].opaque")}),
    ("extendedResourceName: example.com/gpu", set()),
    ("extendedResourceName: kubernetes.io/gpu", {("DRA303", "spec.extendedResourceName")}),
    ("extendedResourceName: gpu", {("DRA303", "spec.extendedResourceName")}),
    ("extendedResourceName: requests.example.com/gpu", {("DRA303", "spec.extendedResourceName")}),
])
def test_device_class(spec, expected):
    assert errors(device_class(spec)) == expected


def test_v1beta1_class_paths():
    assert errors(device_class("selectors:\n- {}\n", version="v1beta1")) == {("DRA301", "spec.selectors[0].cel")}


def test_class_config_size_is_not_reapplied_to_an_unchanged_list():
    big = "config:\n- opaque:\n    driver: gpu.example.com\n    parameters: {blob: " + "x" * 11000 + "}\n"
    assert errors(device_class(big)) == {("DRA231", "spec.config[0].opaque.parameters")}
    stored = device_class(big)
    updated = stored.replace("name: gpu.example.com\nspec", "name: gpu.example.com\n  labels: {a: b}\nspec")
    assert errors(updated, old=stored) == set()


def test_suitable_nodes_of_the_131_class():
    spec = "selectors:\n" + SELECTOR + "suitableNodes: {nodeSelectorTerms: []}\n"
    assert errors(device_class(spec, version="v1alpha3"), kube="1.31", DRAControlPlaneController=True) == {
        ("DRA405", "spec.suitableNodes.nodeSelectorTerms")}


GOOD_TAINT = "taint: {key: example.com/maintenance, value: planned, effect: NoExecute}"


@pytest.mark.parametrize("spec, expected", [
    (GOOD_TAINT, set()),
    ("deviceSelector: {driver: gpu.example.com, pool: rack-1/node-1, device: gpu-0}\n" + GOOD_TAINT, set()),
    ("deviceSelector: {driver: '!@#$%^'}\n" + GOOD_TAINT, {("DRA400", "spec.deviceSelector.driver")}),
    ("deviceSelector: {pool: '!@#$%^'}\n" + GOOD_TAINT, {("DRA401", "spec.deviceSelector.pool")}),
    ("deviceSelector: {device: '!@#$%^'}\n" + GOOD_TAINT, {("DRA410", "spec.deviceSelector.device")}),
    ("taint: {key: example.com/x, value: x}", {("DRA419", "spec.taint.effect")}),
    ("taint: {key: example.com/x, value: not ok, effect: NoSchedule}", {("DRA418", "spec.taint.value")}),
    ("taint: {key: example.com/x, effect: None}", set()),
    ("taint: {key: example.com/x, effect: PreferNoSchedule}", {("DRA419", "spec.taint.effect")}),
])
def test_device_taint_rule(spec, expected):
    assert errors(taint_rule(spec)) == expected


def test_the_133_selector_had_classes_and_cel():
    spec = "deviceSelector:\n  deviceClassName: '!@#$%^'\n  selectors: [{}]\n" + GOOD_TAINT
    assert errors(taint_rule(spec, version="v1alpha3"), kube="1.33", DRADeviceTaints=True) == {
        ("DRA450", "spec.deviceSelector.deviceClassName"), ("DRA450", "spec.deviceSelector.selectors[0].cel")}


def test_effect_none_is_unknown_before_135():
    spec = "taint: {key: example.com/x, effect: None}"
    assert errors(taint_rule(spec, version="v1alpha3"), kube="1.34", DRADeviceTaints=True) == {
        ("DRA419", "spec.taint.effect")}


def test_taint_rule_status_is_judged_on_a_status_write():
    bad = "conditions:\n- {type: Ready, status: Maybe, reason: Evicting, lastTransitionTime: '2026-01-01T00:00:00Z'}"
    old = taint_rule(GOOD_TAINT)
    new = taint_rule(GOOD_TAINT, status=bad)
    assert errors(new) == set()  # on create the server drops the status
    assert errors(new, old=old) == {("DRA451", "status.conditions[0].status")}
    many = "conditions:\n" + "".join(
        f"- {{type: T{i}, status: 'True', reason: R, lastTransitionTime: '2026-01-01T00:00:00Z'}}\n" for i in range(9))
    assert errors(taint_rule(GOOD_TAINT, status=many), old=old) == {("DRA451", "status.conditions")}


def ns(selector: dict, minor: int = 37, one_term: bool = False) -> set[str]:
    problems = node_selector_problems(selector, FieldPath(("n",)), Release(minor),
                                      one_term_rule="X" if one_term else None)
    return {f"{pr.rule} {pr.path}" for pr in problems}


def test_node_selector_core_rules():
    assert ns({"nodeSelectorTerms": []}) == {"DRA405 n.nodeSelectorTerms"}
    expressions = [{"key": "a", "operator": "In"}, {"key": "a", "operator": "Exists", "values": ["x"]},
                   {"key": "a", "operator": "Gt", "values": ["1", "2"]}, {"key": "a", "operator": "Foo"},
                   {"key": "a b", "operator": "Exists"}, {"key": "a", "operator": "Lt", "values": ["3"]}]
    assert ns({"nodeSelectorTerms": [{"matchExpressions": expressions}]}) == {
        "DRA405 n.nodeSelectorTerms[0].matchExpressions[0].values",
        "DRA405 n.nodeSelectorTerms[0].matchExpressions[1].values",
        "DRA405 n.nodeSelectorTerms[0].matchExpressions[2].values",
        "DRA405 n.nodeSelectorTerms[0].matchExpressions[3].operator",
        "DRA405 n.nodeSelectorTerms[0].matchExpressions[4].key"}
    fields = [{"key": "metadata.name", "operator": "In", "values": ["node-1"]},
              {"key": "metadata.name", "operator": "NotIn", "values": ["a", "b"]},
              {"key": "metadata.name", "operator": "Exists"},
              {"key": "spec.nodeName", "operator": "In", "values": ["n"]},
              {"key": "metadata.name", "operator": "In", "values": ["Node_1"]}]
    assert ns({"nodeSelectorTerms": [{"matchFields": fields}]}) == {
        "DRA405 n.nodeSelectorTerms[0].matchFields[1].values",
        "DRA405 n.nodeSelectorTerms[0].matchFields[2].operator",
        "DRA405 n.nodeSelectorTerms[0].matchFields[3].key",
        "DRA405 n.nodeSelectorTerms[0].matchFields[4].values[0]"}


def test_node_selector_one_term_variant_and_release_dependent_values():
    two = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}] * 2}
    assert ns(two) == set()
    assert ns(two, one_term=True) == {"X n.nodeSelectorTerms"}
    bad_value = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In", "values": ["-1"]}]}]}
    assert ns(bad_value, minor=31) == set()
    assert ns(bad_value, minor=32) == {"DRA405 n.nodeSelectorTerms[0].matchExpressions[0].values[0]"}
    assert ns("not a mapping") == set()  # wrong types are the schema stage's
