"""Fields dropped when their feature gate is off (dralint/gating.py, DRA802)."""
from __future__ import annotations

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release, parse_version


def lint(text: str, version: str, old: str | None = None, **gates: bool) -> list[tuple[str, str, str]]:
    findings = lint_text(text, Options(release=Release(parse_version(version), dict(gates))), old_text=old)
    return sorted((f.rule, f.severity.value, f.field) for f in findings)


FIRST_AVAILABLE = """apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaim
metadata: {name: c, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - name: big
        deviceClassName: gpu.example.com
        tolerations: [{operator: Exists}]
"""


def test_dropped_first_available_leaves_a_request_without_either():
    got = lint(FIRST_AVAILABLE, "1.33")
    assert got == [("DRA206", "error", "spec.devices.requests[0]"),
                   ("DRA802", "warning", "spec.devices.requests[0].firstAvailable")]
    message = next(f.message for f in lint_text(FIRST_AVAILABLE, Options(release=Release(33))) if f.rule == "DRA802")
    assert "DRAPrioritizedList" in message and "on by default from 1.34" in message
    # the tolerations of the dropped subrequests are not reported on their own
    assert lint(FIRST_AVAILABLE, "1.33", DRAPrioritizedList=True) == [
        ("DRA802", "warning", "spec.devices.requests[0].firstAvailable[0].tolerations")]
    assert lint(FIRST_AVAILABLE, "1.34", DRADeviceTaints=True) == []


def test_fields_in_use_in_the_stored_object_are_kept_on_update():
    assert lint(FIRST_AVAILABLE, "1.33", old=FIRST_AVAILABLE, DRADeviceTaints=True) == []


def test_v1beta1_flat_fields_are_reported_at_the_users_path():
    text = FIRST_AVAILABLE.replace("v1beta2", "v1beta1").replace(
        "      firstAvailable:\n      - name: big\n        deviceClassName: gpu.example.com\n"
        "        tolerations: [{operator: Exists}]\n",
        "      deviceClassName: gpu.example.com\n      adminAccess: true\n")
    assert lint(text, "1.33") == [("DRA802", "warning", "spec.devices.requests[0].adminAccess")]


def test_slice_and_class_fields():
    slice_ = """apiVersion: resource.k8s.io/v1beta2
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.example.com
  nodeName: worker-1
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    taints: [{key: example.com/t, effect: NoSchedule}]
"""
    assert ("DRA802", "warning", "spec.devices[0].taints") in lint(slice_, "1.35")
    assert not [f for f in lint(slice_, "1.36") if f[0] == "DRA802"]
    beta1 = slice_.replace("v1beta2", "v1beta1").replace("  - name: gpu-0\n    taints",
                                                         "  - name: gpu-0\n    basic:\n      taints")
    assert ("DRA802", "warning", "spec.devices[0].basic.taints") in lint(beta1, "1.35")
    klass = ("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\n"
             "spec:\n  extendedResourceName: example.com/gpu\n")
    assert ("DRA802", "warning", "spec.extendedResourceName") in lint(klass, "1.35")
    assert not [f for f in lint(klass, "1.36") if f[0] == "DRA802"]


def test_pod_claims_are_dropped_while_dra_is_off():
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n"
           "  resourceClaims: [{name: gpu, resourceClaimTemplateName: t}]\n"
           "  containers: [{name: c, image: busybox, resources: {claims: [{name: gpu}]}}]\n")
    assert lint(pod, "1.33") == [("DRA802", "warning", "spec.containers[0].resources.claims"),
                                 ("DRA802", "warning", "spec.resourceClaims")]
    assert lint(pod, "1.34") == []


def test_status_fields_only_on_status_writes():
    claim = ("apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\n"
             "spec:\n  devices:\n    requests:\n    - {name: gpu, deviceClassName: gpu.example.com}\n")
    status = ("status:\n  allocation:\n    devices:\n      results:\n"
              "      - {request: gpu, driver: gpu.example.com, pool: p, device: d}\n"
              "  devices:\n  - {driver: gpu.example.com, pool: p, device: d}\n")
    on = {"DynamicResourceAllocation": True}  # 1.32 serves resource.k8s.io only with it
    assert lint(claim + status, "1.32", **on) == [("DRA265", "info", "status")]
    assert lint(claim + status, "1.32", old=claim, **on) == [("DRA802", "warning", "status.devices")]
    assert lint(claim + status, "1.33", old=claim) == []


def test_fields_older_than_their_gate_are_kept():
    # adminAccess existed ungated in 1.31 (v1alpha3); DRAAdminAccess only arrived in 1.32.
    text = ("apiVersion: resource.k8s.io/v1alpha3\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\n"
            "spec:\n  devices:\n    requests:\n    - {name: gpu, deviceClassName: gpu.example.com, adminAccess: true}\n")
    assert lint(text, "1.31") == []  # kept, and no namespace check before 1.33
    assert lint(text.replace("v1alpha3", "v1beta1"), "1.32", DynamicResourceAllocation=True) == [
        ("DRA802", "warning", "spec.devices.requests[0].adminAccess")]
