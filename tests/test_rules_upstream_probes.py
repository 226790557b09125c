"""Probes written from the upstream code of each release, one table per concern.

Each row is an object, the release and gates it is judged with, and what the API server of that
release answers: the (rule, field) of every error, or nothing. The upstream files are named per
table (kubernetes/kubernetes; commits in the rules' catalog entries and in docs/schemas.md).
"""
from __future__ import annotations

from typing import Any

import pytest
import yaml

from dralint.engine import Options, lint_text
from dralint.releases import GateError, Release, parse_gates


def errors(obj: Any, version: str, gates: dict | None = None, old: Any = None) -> list[tuple[str, str]]:
    text = obj if isinstance(obj, str) else yaml.safe_dump(obj, sort_keys=False)
    old_text = None if old is None else (old if isinstance(old, str) else yaml.safe_dump(old, sort_keys=False))
    found = lint_text(text, Options(kube_version=version, feature_gates=gates or {}), old_text=old_text)
    return sorted((f.rule, f.field) for f in found if f.severity.value == "error")


def claim(requests: list, version: str = "v1", **devices: Any) -> dict:
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": requests, **devices}}}


def device(name: str = "device-0", **fields: Any) -> dict:
    return {"name": name, "attributes": {"model": {"string": "a100"}}, "capacity": {"memory": {"value": "1Gi"}},
            **fields}


def resource_slice(devices: list, version: str = "v1", **spec: Any) -> dict:
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "pool": {"name": "p", "resourceSliceCount": 1},
                     "nodeName": "node-1", **spec, "devices": devices}}


# --- releases and their gates: pkg/features, CHANGELOG-1.38 ------------------------------------------

def test_gate_stages_of_1_38():
    # #141946 removed DynamicResourceAllocation (DRA is always on), #140256 locked the taint gates.
    r38 = Release(38)
    assert r38.stage("DynamicResourceAllocation") is None and r38.gate("DynamicResourceAllocation")
    assert r38.removed_in("DynamicResourceAllocation") == 38
    assert r38.stage("DRADeviceTaints") == r38.stage("DRADeviceTaintRules") == "L"
    # DRAFractionalCapacityRange: beta and off in 1.37, on from 1.38 (MinCompatibilityVersion 1.37).
    assert Release(37).stage("DRAFractionalCapacityRange") == "B-" and not Release(37).gate("DRAFractionalCapacityRange")
    assert r38.gate("DRAFractionalCapacityRange")
    # A withdrawn alpha gate stays off.
    assert Release(33).removed_in("DRAControlPlaneController") == 32
    assert not Release(33).gate("DRAControlPlaneController")


@pytest.mark.parametrize("text, minor, outcome", [
    ("DynamicResourceAllocation=true", 38, "note"),     # always on: harmless, but the server refuses the flag
    ("DynamicResourceAllocation=false", 38, "refused"),  # DRA cannot be turned off any more
    ("DRADeviceTaints=false", 38, "refused"),          # locked
    ("DRADeviceTaints=false", 37, "ok"),
    ("DRAControlPlaneController=true", 33, "refused"),
    ("DRAControlPlaneController=false", 33, "note"),
])
def test_removed_and_locked_gates(text, minor, outcome):
    if outcome == "refused":
        with pytest.raises(GateError):
            parse_gates(text, minor)
        return
    overrides, notes = parse_gates(text, minor)
    assert (notes != []) == (outcome == "note")
    assert (overrides != {}) == (outcome == "ok")


# --- which kinds are served: pkg/registry/resource/rest/storage_resource.go -------------------------

CLASS_BETA1 = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
               "spec": {}}
TAINT_RULE = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
              "spec": {"deviceSelector": {"driver": "gpu.example.com"},
                       "taint": {"key": "example.com/broken", "effect": "NoSchedule"}}}
POOL_STATUS = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest",
               "metadata": {"name": "pools"}, "spec": {"driver": "gpu.example.com"}}


@pytest.mark.parametrize("obj, version, gates, served", [
    # 1.32 installs its v1alpha3 and v1beta1 storage only with DynamicResourceAllocation (beta, off).
    (CLASS_BETA1, "1.32", {}, False),
    (CLASS_BETA1, "1.32", {"DynamicResourceAllocation": True}, True),
    (dict(CLASS_BETA1, apiVersion="resource.k8s.io/v1alpha3"), "1.32", {}, False),
    # 1.31 and 1.33+ register the kinds whatever the gates.
    (dict(CLASS_BETA1, apiVersion="resource.k8s.io/v1alpha3"), "1.31", {}, True),
    (CLASS_BETA1, "1.33", {}, True),
    # DeviceTaintRule is served with DRADeviceTaintRules off (the gate is the scheduler's).
    (TAINT_RULE, "1.34", {}, True),
    (TAINT_RULE, "1.35", {}, True),
    (TAINT_RULE, "1.36", {}, True),
    (dict(TAINT_RULE, apiVersion="resource.k8s.io/v1beta2"), "1.36", {}, True),
    (dict(TAINT_RULE, apiVersion="resource.k8s.io/v1beta2"), "1.35", {}, False),  # v1beta2 has it from 1.36
    (dict(TAINT_RULE, apiVersion="resource.k8s.io/v1"), "1.37", {}, True),
    # ResourcePoolStatusRequest: only with DRAResourcePoolStatus.
    (POOL_STATUS, "1.36", {}, False),
    (POOL_STATUS, "1.37", {"DRAResourcePoolStatus": True}, True),
])
def test_served_kinds(obj, version, gates, served):
    got = errors(obj, version, gates)
    assert (("DRA801", "apiVersion") not in got) == served, got
