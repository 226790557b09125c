"""Agreement with the API server where it once differed: decoding (nulls, quantities, pod claim
fields), ResourcePoolStatusRequest, release-dependent names and counters, the newest fields, and
objects judged by others as the server stores them."""
from __future__ import annotations

import pytest

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release, ReleaseError, parse_version


def found(text: str, version: str = "1.37", gates: dict | None = None, old: str | None = None,
          **options) -> list[tuple[str, str, str]]:
    release = Release(parse_version(version), dict(gates or {}))
    findings = lint_text(text, Options(release=release, **options), old_text=old)
    return sorted((f.rule, f.severity.value, f.field) for f in findings)


def errors(*args, **kwargs) -> list[tuple[str, str]]:
    return [(rule, field) for rule, severity, field in found(*args, **kwargs) if severity == "error"]


SLICE = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.example.com
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
  - name: gpu-0
"""


# --- decoding ------------------------------------------------------------------------------------

def test_explicit_null_is_an_absent_field_and_a_null_item_an_empty_one():
    selector = SLICE.replace("  nodeName: node-1\n", "  nodeSelector:\n    nodeSelectorTerms:\n"
                                                     "    - matchExpressions:\n      - key: null\n"
                                                     "        operator: Exists\n")
    # An empty key, as the server words it: the name part is empty, and it does not match the pattern.
    key = ("DRA405", "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].key")
    assert errors(selector) == [key, key]
    devices = SLICE + "  - null\n"  # a device without a name
    assert errors(devices) == [("DRA410", "spec.devices[1].name")]
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  resourceClaims:\n"
           "  - null\n  containers:\n  - name: main\n    image: busybox\n")
    assert errors(pod) == [("DRA240", "spec.resourceClaims[0].name"), ("DRA242", "spec.resourceClaims[0]")]


def test_quantities_are_checked_where_they_are_decoded():
    text = SLICE + "    capacity:\n      memory: {value: 80 GB}\n"
    assert errors(text) == [("DRA102", "spec.devices[0].capacity[memory].value")]
    assert errors(SLICE + "    capacity:\n      memory: {value: 80Gi}\n") == []


def test_pod_claim_fields_are_strictly_decoded():
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  resourceClaims:\n"
           "  - {name: gpu, resourceClaimName: gpu, selector: x}\n  containers:\n  - name: main\n    image: busybox\n"
           "    resources:\n      claims: {CLAIMS}\n")
    assert errors(pod.replace("{CLAIMS}", "[{name: gpu, enabled: true}]")) == [
        ("DRA101", "spec.containers[0].resources.claims[0].enabled"), ("DRA101", "spec.resourceClaims[0].selector")]
    assert errors(pod.replace("{CLAIMS}", "gpu")) == [("DRA101", "spec.resourceClaims[0].selector"),
                                                      ("DRA102", "spec.containers[0].resources.claims")]
    assert errors(pod.replace("{CLAIMS}", "[{name: gpu}]"), strict=False) == []


def test_an_object_without_spec_is_only_warned_about():
    claim = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\n"
    assert found(claim) == [("DRA103", "warning", "spec")]


def test_an_empty_cel_selector_is_compiled_as_the_server_does():
    text = ("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\n"
            "spec:\n  selectors:\n  - cel: {}\n")
    assert errors(text) == [("DRA501", "spec.selectors[0].cel.expression")]


# --- ResourcePoolStatusRequest -------------------------------------------------------------------

RPSR = ("apiVersion: resource.k8s.io/v1alpha3\nkind: ResourcePoolStatusRequest\nmetadata: {name: pools}\n"
        "spec:\n  driver: gpu.example.com\n")
RPSR_GATES = {"DRAResourcePoolStatus": True}


@pytest.mark.parametrize(("spec", "field"), [
    ("spec: {}\n", "spec.driver"), ("spec:\n  driver: gpu_x\n", "spec.driver"),
    ("spec:\n  driver: gpu.example.com\n  poolName: a//b\n", "spec.poolName"),
    ("spec:\n  driver: gpu.example.com\n  poolName: ''\n", "spec.poolName"),
    ("spec:\n  driver: gpu.example.com\n  poolName: Node_1\n", "spec.poolName"),
    ("spec:\n  driver: gpu.example.com\n  poolName: " + "p" * 254 + "\n", "spec.poolName"),
    ("spec:\n  driver: gpu.example.com\n  limit: 0\n", "spec.limit"),
    ("spec:\n  driver: gpu.example.com\n  limit: 1001\n", "spec.limit"),
])
def test_pool_status_request_spec(spec, field):
    text = RPSR.split("spec:\n")[0] + spec
    assert {f for _, f in errors(text, "1.36", RPSR_GATES)} == {field}


def test_pool_status_request_without_spec_needs_a_driver():
    text = RPSR.split("spec:\n")[0]
    assert errors(text, "1.36", RPSR_GATES) == [("DRA460", "spec.driver")]


def test_pool_status_request_updates():
    changed = RPSR.replace("gpu.example.com", "nic.example.com")
    assert errors(changed, "1.36", RPSR_GATES, old=RPSR) == [("DRA461", "spec")]
    assert errors(RPSR + "  limit: 5\n", "1.36", RPSR_GATES, old=RPSR + "  limit: 5\n") == []


# --- release-dependent answers --------------------------------------------------------------------

def test_names_with_two_slashes_depend_on_the_release():
    text = SLICE + "    attributes:\n      gpu.example.com/a/b: {string: x}\n"
    assert errors(text, "1.36") == []
    assert errors(text, "1.37") == []
    assert errors(text, "1.38") == [("DRA413", "spec.devices[0].attributes")]


def test_counters_live_in_the_devices_slice_in_1_34():
    gates = {"DRAPartitionableDevices": True}
    two_slices = SLICE + "    consumesCounters:\n    - counterSet: gpu-0\n      counters:\n        memory: {value: 5Gi}\n"
    assert errors(two_slices, "1.35", gates) == []
    assert errors(two_slices, "1.34", gates) == [("DRA420", "spec.devices[0].consumesCounters[0].counterSet")]
    sets = "".join(f"  - name: set-{i}\n    counters:\n      c: {{value: '1'}}\n" for i in range(33))
    same = two_slices.replace("  devices:\n", "  sharedCounters:\n" + sets + "  devices:\n").replace("gpu-0\n", "set-0\n")
    same = same.replace("memory: {value: 5Gi}", "c: {value: '1'}")
    # 33 counters in total: too many in 1.34, which has no limit on the number of sets.
    assert errors(same, "1.34", gates) == [("DRA421", "spec.sharedCounters")]


def test_distinct_attribute_is_stored_by_1_34_with_its_gate_off():
    claim = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\nspec:\n"
             "  devices:\n    requests:\n    - name: nic\n      exactly: {deviceClassName: nic.example.com, count: 2}\n"
             "    constraints:\n    - distinctAttribute: nic.example.com/port\n")
    assert not [r for r, _, _ in found(claim, "1.34") if r == "DRA802"]
    assert ("DRA802", "warning", "spec.devices.constraints[0].distinctAttribute") in found(
        claim, "1.35", {"DRAConsumableCapacity": False})


def test_locked_gates_turned_off_are_a_what_if_and_new_gates_are_known():
    gated, notes = Release(36).with_gates("DRAAdminAccess=false")
    assert gated.overrides == {"DRAAdminAccess": False} and "locked on" in notes[0]
    for gate, minor in (("DRAResourcePoolStatus", 36), ("DRAResourceClaimGranularStatusAuthorization", 36),
                        ("DRAPartitionableDevicesType", 37)):
        assert Release(minor).with_gates(f"{gate}=true")[0].overrides == {gate: True}
    with pytest.raises(ReleaseError, match="does not exist"):
        Release(36).with_gates("DRAPartitionableDevicesType=true")


# --- newest fields -------------------------------------------------------------------------------

def test_compatibility_groups():
    gates = {"DRAPartitionableDevices": True, "DRADeviceCompatibilityGroups": True}
    text = SLICE + ("    consumesCounters:\n    - counterSet: gpu-0\n      counters:\n        memory: {value: 5Gi}\n"
                    "      compatibilityGroups: [{GROUPS}]\n")
    assert errors(text.replace("{GROUPS}", "a, b"), gates=gates) == []
    assert errors(text.replace("{GROUPS}", "a, a"), gates=gates) == [
        ("DRA420", "spec.devices[0].consumesCounters[0].compatibilityGroups[1]")]
    assert errors(text.replace("{GROUPS}", "a, b, c"), gates=gates) == [
        ("DRA420", "spec.devices[0].consumesCounters[0].compatibilityGroups")]
    dropped = found(text.replace("{GROUPS}", "a, a"), gates={"DRAPartitionableDevices": True})
    assert [r for r, _, _ in dropped] == ["DRA802"]


def test_partition_type_attribute_is_forbidden_without_its_gate():
    text = SLICE.replace("  devices:\n", "  partitionTypeAttribute: gpu.example.com/profile\n  devices:\n")
    assert errors(text) == [("DRA428", "spec.partitionTypeAttribute")]
    assert errors(text, gates={"DRAPartitionableDevicesType": True}) == [("DRA428", "spec.partitionTypeAttribute")]


def test_derived_attributes_follow_the_constraints_of_their_request():
    claim = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\nspec:\n"
             "  devices:\n    requests:\n    - name: gpu\n      firstAvailable:\n      - name: big\n"
             "        deviceClassName: gpu.example.com\n        derivedAttributes:\n"
             "        - {name: gpu.example.com/socket, expression: 'device.attributes[\"gpu.example.com\"].numa'}\n"
             "        - {name: gpu.example.com/socket, expression: ''}\n"
             "    constraints:\n    - requests: [gpu]\n      matchAttribute: gpu.example.com/socket\n")
    base = "spec.devices.requests[0].firstAvailable[0].derivedAttributes"
    assert errors(claim, gates={"DRADerivedAttributes": True}) == [
        ("DRA266", f"{base}[1].expression"), ("DRA266", f"{base}[1].name")]


def test_claim_status_drops_binding_conditions_with_their_gate_off():
    stored = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\nspec:\n"
              "  devices:\n    requests:\n    - name: gpu\n      exactly: {deviceClassName: gpu.example.com}\n")
    written = stored + ("status:\n  allocation:\n    devices:\n      results:\n      - request: gpu\n"
                        "        driver: gpu.example.com\n        pool: node-1\n        device: gpu-0\n"
                        "        bindingConditions: [dra.example.com/ready]\n"
                        "        bindingFailureConditions: [dra.example.com/failed]\n")
    field = "status.allocation.devices.results[0].bindingConditions"
    assert ("DRA802", "warning", field) in found(written, "1.35", old=stored)
    assert ("DRA802", "warning", field) not in found(written, "1.36", old=stored)


def test_template_updates_are_validated_in_full():
    template = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t, namespace: default}\n"
                "spec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n"
                "        exactly: {deviceClassName: gpu.example.com, count: -1}\n")
    assert errors(template, old=template) == [("DRA201", "spec.spec.devices.requests[0].exactly.count")]


# --- what other objects see ------------------------------------------------------------------------

def test_feasibility_judges_a_new_claim_as_stored_and_a_stored_one_as_written_where_a_gate_is_off():
    claim = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\nspec:\n"
             "  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n"
             "        capacity:\n          requests: {memory: 1Ti}\n---\n"
             "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\nspec: {}\n---\n")
    slice_ = SLICE + "    capacity:\n      memory: {value: 80Gi}\n"
    off = {"DRAConsumableCapacity": False}
    # Created with the gate off, the claim loses its capacity request (DRA802) and any device will do.
    created = {r for r, _, _ in found(claim + slice_, "1.36", off)}
    assert "DRA802" in created and not created & {"DRA704", "DRA701"}
    # A stored claim keeps the field, and the allocator stops as the Go allocator does: the feature
    # is disabled (DRA704), not "no device has 1Ti".
    stored = {r for r, _, _ in found(claim + slice_, "1.36", off, as_stored=True)}
    assert "DRA704" in stored and "DRA701" not in stored
    assert "DRA701" in {r for r, _, _ in found(claim + slice_, "1.36")}


def test_dra604_says_it_is_dralints_own_check():
    text = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\nspec:\n"
            "  devices:\n    requests:\n    - name: gpu\n      exactly: {deviceClassName: gpu.example.com}\n---\n"
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  resourceClaims:\n"
            "  - {name: c, resourceClaimName: c}\n  containers:\n  - name: main\n    image: busybox\n"
            "    resources:\n      claims: [{name: c, request: nic}]\n")
    (finding,) = [f for f in lint_text(text, Options()) if f.rule == "DRA604"]
    assert "dralint's own cross-object check" in finding.message


def test_pool_status_request_default_partition_type():
    text = RPSR + "  defaultPartitionTypeAttribute: {NAME}\n"
    assert errors(text.replace("{NAME}", "gpu.example.com/profile"), "1.37", RPSR_GATES) == [
        ("DRA460", "spec.defaultPartitionTypeAttribute")]
    gates = {**RPSR_GATES, "DRAPartitionableDevicesType": True}
    assert errors(text.replace("{NAME}", "gpu.example.com/profile"), "1.37", gates) == []
    assert errors(text.replace("{NAME}", "profile"), "1.37", gates) == [("DRA460", "spec.defaultPartitionTypeAttribute")]


def test_map_keys_with_two_slashes_still_have_a_length_limit_in_1_36():
    long_key = "gpu.example.com/" + "a" * 40 + "/" + "b" * 40
    text = SLICE + f"    attributes:\n      {long_key}: {{string: x}}\n"
    assert errors(text, "1.36") == [("DRA413", "spec.devices[0].attributes")]


def test_pool_status_requests_are_served_only_with_their_gate():
    (finding,) = lint_text(RPSR, Options(release=Release(36)))
    assert finding.rule == "DRA801" and "DRAResourcePoolStatus" in finding.message
    assert lint_text(RPSR, Options(release=Release(36, RPSR_GATES))) == []
