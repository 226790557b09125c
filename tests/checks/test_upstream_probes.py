"""Probes written from the upstream code of each release, one table per concern.

Each row is an object, the release and gates it is judged with, and what the API server of that
release answers: the (rule, field) of every error, or nothing. The upstream files are named per
table (kubernetes/kubernetes; commits in the rules' catalog entries and in docs/schemas.md).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
import yaml

from dralint.engine import Options, lint_text
from dralint.kube.quantity import Quantity, QuantityError, format_value
from dralint.kube.releases import Release, ReleaseError, parse_version


def errors(obj: Any, version: str, gates: dict | None = None, old: Any = None) -> list[tuple[str, str]]:
    text = obj if isinstance(obj, str) else yaml.safe_dump(obj, sort_keys=False)
    old_text = None if old is None else (old if isinstance(old, str) else yaml.safe_dump(old, sort_keys=False))
    found = lint_text(text, Options(release=Release(parse_version(version), dict(gates or {}))), old_text=old_text)
    # DRA217 (adminAccess where the namespace's labels are not known) is the strategies' namespace
    # check, apart from the validation code these probes are written from.
    return sorted((f.rule, f.field) for f in found if f.severity.value == "error" and f.rule != "DRA217")


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
    ("DRADeviceTaints=false", 38, "what-if"),          # locked: judged so, with a note
    ("DRADeviceTaints=false", 37, "ok"),
    ("DRAControlPlaneController=true", 33, "refused"),
    ("DRAControlPlaneController=false", 33, "note"),
])
def test_removed_and_locked_gates(text, minor, outcome):
    if outcome == "refused":
        with pytest.raises(ReleaseError):
            Release(minor).with_gates(text)
        return
    gated, notes = Release(minor).with_gates(text)
    assert (notes != []) == (outcome in ("note", "what-if"))
    assert (gated.overrides != {}) == (outcome in ("ok", "what-if"))


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


# --- requests of 1.33: the internal request is still flat (validation.go of 1.33) --------------------

SUB = [{"name": "s", "deviceClassName": "gpu"}]
PRIO = {"DRAPrioritizedList": True, "DRADeviceTaints": True, "DRAAdminAccess": True}


@pytest.mark.parametrize("request_, version, want_133, want_134", [
    # request-level fields next to firstAvailable: 1.33 names the field, 1.34+ the request.
    ({"name": "r", "firstAvailable": SUB, "count": 2}, "v1beta1",
     [("DRA206", "spec.devices.requests[0].count")], [("DRA206", "spec.devices.requests[0]")]),
    ({"name": "r", "firstAvailable": SUB, "selectors": []}, "v1beta1",
     [("DRA206", "spec.devices.requests[0].selectors")], [("DRA206", "spec.devices.requests[0]")]),
    ({"name": "r", "firstAvailable": SUB, "adminAccess": True}, "v1beta1",
     [("DRA206", "spec.devices.requests[0].adminAccess")], [("DRA206", "spec.devices.requests[0]")]),
    ({"name": "r", "firstAvailable": SUB, "deviceClassName": "gpu"}, "v1beta1",
     [("DRA206", "spec.devices.requests[0]")], [("DRA206", "spec.devices.requests[0]")]),
    # Tolerations are checked on every 1.33 request and never conflict; 1.34 builds `exactly` from them.
    ({"name": "r", "firstAvailable": SUB, "tolerations": [{"key": "k", "operator": "Exists"}]}, "v1beta1",
     [], [("DRA206", "spec.devices.requests[0]")]),
    # Zero values do not count as set (hasAnyMainRequestFieldsSet of 1.34+ and the 1.33 checks).
    ({"name": "r", "firstAvailable": SUB, "count": 0, "deviceClassName": ""}, "v1beta1", [], []),
    # An empty `exactly` of v1beta2 is no class to 1.33, but a request type to 1.34.
    ({"name": "r", "exactly": {}}, "v1beta2",
     [("DRA206", "spec.devices.requests[0]")], [("DRA207", "spec.devices.requests[0].exactly.deviceClassName")]),
    ({"name": "r", "exactly": {}, "firstAvailable": SUB}, "v1beta2", [], [("DRA206", "spec.devices.requests[0]")]),
    ({"name": "r"}, "v1beta1", [("DRA206", "spec.devices.requests[0]")], [("DRA206", "spec.devices.requests[0]")]),
])
def test_requests_of_1_33_and_1_34(request_, version, want_133, want_134):
    assert errors(claim([request_], version), "1.33", PRIO) == want_133
    assert errors(claim([request_], version), "1.34", PRIO) == want_134


# --- map keys: validateMap names the entry, its key shortened in the middle past the limit -----------

def test_map_key_errors_name_the_entry_before_declarative_validation():
    # 1.33-1.35 return validateMap's errors at the entry (1.33 test "bad-key-too-long": 98 > 63 + 1 + 32,
    # "..." in the middle); from 1.36 declarative validation reports keys at the map (1.37 tests).
    long_key = "x" * 64 + "/" + "y" * 33
    shown = "x" * 47 + "..." + "x" * 12 + "/" + "y" * 33
    bad_long = resource_slice([device(attributes={long_key: {"string": "z"}})], "v1beta2")
    assert set(errors(bad_long, "1.35")) == {("DRA413", f"spec.devices[0].attributes[{shown}]")}
    assert set(errors(bad_long, "1.36")) == {("DRA413", "spec.devices[0].attributes")}
    bad_name = resource_slice([device(attributes={"!@#$%^": {}})], "v1beta2")
    assert errors(bad_name, "1.34") == [("DRA413", "spec.devices[0].attributes[!@#$%^]"),
                                        ("DRA414", "spec.devices[0].attributes[!@#$%^]")]
    counters = {"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceSlice", "metadata": {"name": "s"},
                "spec": {"driver": "gpu.example.com", "pool": {"name": "p", "resourceSliceCount": 1},
                         "nodeName": "node-1", "sharedCounters": [{"name": "set", "counters": {"Bad_Name": {"value": "1"}}}]}}
    gates = {"DRAPartitionableDevices": True}
    assert errors(counters, "1.35", gates) == [("DRA421", "spec.sharedCounters[0].counters[Bad_Name]")]
    assert errors(counters, "1.37") == [("DRA421", "spec.sharedCounters[0].counters")]


# --- consumable capacity ranges: validateRequestPolicyRange of 1.35 and of 1.37 ----------------------

def _policy(valid_range: dict, default: str = "4") -> dict:
    cap = {"value": "16", "requestPolicy": {"default": default, "validRange": valid_range}}
    return resource_slice([device(allowMultipleAllocations=True, capacity={"slots": cap})])


RANGE = "spec.devices[0].capacity[slots].requestPolicy.validRange"


@pytest.mark.parametrize("valid_range, default, before_137, from_137", [
    ({"min": "0", "step": "-2"}, "4", [], ["step"]),                 # a negative step dividing: fine before 1.37
    ({"min": "0", "step": "-3"}, "4", ["step"], ["step"]),
    ({"min": "0", "step": "0"}, "4", ["step"], ["step"]),           # 1.36.2 panics on it: refused either way
    ({"min": "-2", "step": "2"}, "4", [], ["min"]),                 # no sign check before 1.37
    ({"min": "8"}, "4", ["min"], ["default"]),                      # the default below min
    ({"min": "0", "max": "2"}, "4", ["max"], ["default"]),          # the default above max
    ({"min": "0", "max": "8", "step": "2"}, "4", [], []),
    ({"min": "1", "max": "16", "step": "2"}, "4", ["step", "step"], ["step", "step"]),
])
def test_capacity_ranges_by_release(valid_range, default, before_137, from_137):
    gates = {"DRAConsumableCapacity": True}
    for version in ("1.35", "1.36"):
        want = sorted(("DRA416", f"{RANGE}.{f}") for f in before_137)
        assert errors(_policy(valid_range, default), version, gates) == want, version
    assert errors(_policy(valid_range, default), "1.37") == sorted(("DRA416", f"{RANGE}.{f}") for f in from_137)


def test_unchanged_capacities_are_rechecked_before_1_37():
    bad = _policy({"min": "0", "step": "-3"})
    assert errors(bad, "1.36", {"DRAConsumableCapacity": True}, old=bad) == [("DRA416", f"{RANGE}.step")]
    assert errors(bad, "1.37", old=bad) == []


# --- allocation results: tolerations only checked from 1.37 -------------------------------------------

def test_result_tolerations_are_checked_from_1_37():
    old = claim([{"name": "r", "exactly": {"deviceClassName": "gpu"}}])
    new = dict(old, status={"allocation": {"devices": {"results": [
        {"request": "r", "driver": "gpu.example.com", "pool": "p", "device": "d",
         "tolerations": [{"key": "k", "operator": "Bogus"}]}]}}})
    path = "status.allocation.devices.results[0].tolerations[0].operator"
    assert errors(new, "1.37", old=old) == [("DRA214", path)]
    assert errors(new, "1.36", {"DRADeviceTaints": True}, old=old) == []
    assert errors(new, "1.35", {"DRADeviceTaints": True}, old=old) == []


# --- pods: the core/v1 claim fields of each release ----------------------------------------------------

def _pod(pod_claims: list, container_claims: list) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"resourceClaims": pod_claims,
                     "containers": [{"name": "c", "image": "busybox", "resources": {"claims": container_claims}}]}}


@pytest.mark.parametrize("version, pod_claim, container_claim, want", [
    # Before 1.31 a pod claim has a `source`, and a container names a whole claim (no `request`).
    ("1.30", {"name": "gpu", "source": {"resourceClaimName": "x"}}, {"name": "gpu"}, []),
    ("1.30", {"name": "gpu", "source": {"resourceClaimName": "x"}}, {"name": "gpu", "request": "r"},
     [("DRA101", "spec.containers[0].resources.claims[0].request")]),
    ("1.30", {"name": "gpu", "resourceClaimName": "x"}, {"name": "gpu"},
     [("DRA101", "spec.resourceClaims[0].resourceClaimName"), ("DRA242", "spec.resourceClaims[0]")]),
    # From 1.31 the source fields are flat and a container may pick one request.
    ("1.31", {"name": "gpu", "resourceClaimName": "x"}, {"name": "gpu", "request": "r"}, []),
    ("1.31", {"name": "gpu", "source": {"resourceClaimName": "x"}}, {"name": "gpu"},
     [("DRA101", "spec.resourceClaims[0].source"), ("DRA242", "spec.resourceClaims[0]")]),
    ("1.34", {"name": "gpu", "resourceClaimName": "x", "resourceClaimTemplateName": "t"}, {"name": "gpu"},
     [("DRA242", "spec.resourceClaims[0]")]),
])
def test_pod_claim_fields_by_release(version, pod_claim, container_claim, want):
    gates = {"DynamicResourceAllocation": True} if version < "1.34" else {}
    assert errors(_pod([pod_claim], [container_claim]), version, gates) == want


# --- admin access: the namespace label of each release (the claim strategies) --------------------------

ADMIN = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
         "metadata": {"name": "c", "namespace": "ops"},
         "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "g", "adminAccess": True}]}}}


def _namespace(label: str) -> str:
    return f"---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ops\n  labels: {{{label}: 'true'}}\n"


@pytest.mark.parametrize("version, label, refused", [
    ("1.32", "unrelated", False),                   # no namespace check yet
    ("1.33", "resource.k8s.io/admin-access", False),
    ("1.33", "resource.kubernetes.io/admin-access", True),
    ("1.34", "resource.kubernetes.io/admin-access", False),
    ("1.34", "resource.k8s.io/admin-access", True),
])
def test_admin_access_namespace_label(version, label, refused):
    gates = {"DRAAdminAccess": True, "DynamicResourceAllocation": True} if version < "1.34" else {}
    text = yaml.safe_dump(ADMIN, sort_keys=False) + _namespace(label)
    got = errors(text, version, gates)
    assert (("DRA216", "spec.devices.requests[0].adminAccess") in got) == refused, got


def test_claim_updates_recheck_the_spec_up_to_1_33():
    # ValidateResourceClaimUpdate of 1.33 calls validateResourceClaimSpec(stored=true); 1.35 and 1.37
    # only compare the spec with the stored one.
    bad = claim([{"name": "Bad_Name", "exactly": {"deviceClassName": "gpu"}}], "v1beta2")
    relabelled = dict(bad, metadata={"name": "c", "namespace": "default", "labels": {"a": "b"}})
    assert errors(relabelled, "1.33", old=bad) == [("DRA205", "spec.devices.requests[0].name")]
    assert errors(relabelled, "1.35", old=bad) == []


# --- quantities: ParseQuantity's bounds (apimachinery resource/quantity.go) --------------------------

@pytest.mark.parametrize("text, value", [
    ("0.5n", Fraction(1, 10**9)),            # rounded up to a whole nano
    ("-0.5n", Fraction(-1, 10**9)),
    ("1e-999999", Fraction(1, 10**9)),
    ("16Ei", Fraction(2**63 - 1)),           # a binary suffix is capped at 2^63-1
    ("1e4294967297", Fraction(10)),          # the exponent keeps its low 32 bits (up to 1.37)
    ("1.5Gi", Fraction(3 * 2**29)),
])
def test_quantity_bounds(text, value):
    assert Quantity.parse(text).value == value


@pytest.mark.parametrize("text", ["1e2147483647", "1e999999999", "1" * 6000, "0." + "1" * 6000 + "e10"])
def test_huge_quantities_are_read_in_bounded_time(text):
    # An exact 10**2147483647 would never finish: the webhook must not hang on such an input.
    quantity = Quantity.parse(text)
    assert quantity.value > 0 and format_value(quantity.add(quantity).value)
    slice_ = resource_slice([device(capacity={"memory": {"value": text}})])
    assert errors(slice_, "1.37") == []


def test_exponents_beyond_64_bits_are_refused():
    with pytest.raises(QuantityError):
        Quantity.parse("1e99999999999999999999")
    slice_ = resource_slice([device(capacity={"memory": {"value": "1e99999999999999999999"}})])
    assert errors(slice_, "1.37") == [("DRA102", "spec.devices[0].capacity[memory].value")]
