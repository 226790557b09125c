"""The CEL selector check through the engine: where selectors are found, updates, positions."""
from __future__ import annotations

from dralint.engine import Options, lint_text

CLAIM = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: c
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - name: big
        deviceClassName: gpu.example.com
        selectors:
        - cel:
            expression: 'device.capacity["gpu.example.com"].memory > "40Gi"'
"""
CLASS = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: 'gpu.model == "a100"'
"""
TAINT_RULE = """apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata:
  name: t
spec:
  deviceSelector:
    selectors:
    - cel:
        expression: 'device.nosuch'
  taint:
    key: example.com/maintenance
    effect: NoSchedule
"""


def cel_findings(text: str, **kw: object) -> list:
    return [f for f in lint_text(text, Options(**kw)) if f.category.value == "cel"]


def test_subrequest_selector_error_points_into_the_expression() -> None:
    found = cel_findings(CLAIM)
    assert [f.rule for f in found] == ["DRA501"]
    f = found[0]
    assert "firstAvailable[0].selectors[0].cel.expression" in f.field
    assert "found no matching overload for '_>_'" in f.message
    assert f.line == 15 and f.column > 20


def test_unchanged_class_selectors_are_not_judged_again() -> None:
    assert [f.rule for f in cel_findings(CLASS)] == ["DRA501"]
    found = [f for f in lint_text(CLASS, Options(), old_text=CLASS) if f.category.value == "cel"]
    assert found == []


def test_taint_rule_selectors_only_in_1_33_and_1_34() -> None:
    gates = {"DRADeviceTaints": True}
    assert [f.rule for f in cel_findings(TAINT_RULE, kube_version="1.34", feature_gates=gates)] == ["DRA501"]
