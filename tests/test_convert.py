"""Conversion of every served version to the canonical (v1) shape, and its map back to the user's paths."""
from __future__ import annotations

from dralint.convert import to_canonical
from dralint.manifest import Manifest
from dralint.paths import FieldPath


def manifest(value: dict) -> Manifest:
    return Manifest(document=None, value=value, base=FieldPath(), api_version=value["apiVersion"], kind=value["kind"])


def test_v1beta1_request_moves_under_exactly_and_maps_back():
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "c"},
             "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "x", "count": 0},
                                               {"name": "alt", "firstAvailable": [{"name": "a", "deviceClassName": "x"}]}]}}}
    canonical = to_canonical(manifest(claim))
    assert canonical.value["spec"]["devices"]["requests"][0] == {"name": "gpu", "exactly": {"deviceClassName": "x", "count": 0}}
    assert canonical.value["spec"]["devices"]["requests"][1] == claim["spec"]["devices"]["requests"][1]
    assert claim["spec"]["devices"]["requests"][0] == {"name": "gpu", "deviceClassName": "x", "count": 0}, "input untouched"
    back = canonical.to_user(FieldPath.parse("spec.devices.requests[0].exactly.count"))
    assert back.render() == "spec.devices.requests[0].count"
    assert canonical.to_user(FieldPath.parse("spec.devices.requests[1].firstAvailable[0].name")).render() \
        == "spec.devices.requests[1].firstAvailable[0].name"


def test_template_requests_map_back_under_spec_spec():
    tmpl = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "x"}]}}}}
    canonical = to_canonical(manifest(tmpl))
    assert canonical.get("spec", "spec", "devices", "requests", 0, "exactly", "deviceClassName") == "x"
    assert canonical.to_user(FieldPath.parse("spec.spec.devices.requests[0].exactly.deviceClassName")).render() \
        == "spec.spec.devices.requests[0].deviceClassName"


def test_v1beta1_slice_devices_lose_basic_and_map_back():
    sl = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
          "spec": {"devices": [{"name": "d", "basic": {"attributes": {"a": {"int": 1}}, "capacity": {"m": {"value": "1Gi"}}}}]}}
    canonical = to_canonical(manifest(sl))
    assert canonical.value["spec"]["devices"][0] == {"name": "d", "attributes": {"a": {"int": 1}}, "capacity": {"m": {"value": "1Gi"}}}
    assert canonical.to_user(FieldPath.parse("spec.devices[0].attributes[a]")).render() == "spec.devices[0].basic.attributes[a]"
    assert canonical.to_user(FieldPath.parse("spec.devices[0].name")).render() == "spec.devices[0].name"
    assert canonical.to_user(FieldPath.parse("spec.devices[0]")).render() == "spec.devices[0]"


def test_v1alpha3_bare_capacity_becomes_value_and_maps_back():
    sl = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceSlice", "metadata": {"name": "s"},
          "spec": {"devices": [{"name": "d", "basic": {"capacity": {"memory": "80Gi"}}}]}}
    canonical = to_canonical(manifest(sl))
    assert canonical.value["spec"]["devices"][0]["capacity"] == {"memory": {"value": "80Gi"}}
    assert canonical.to_user(FieldPath.parse("spec.devices[0].capacity[memory].value")).render() \
        == "spec.devices[0].basic.capacity[memory]"


def test_v1_objects_pass_unchanged():
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "spec": {"devices": {"requests": []}}}
    canonical = to_canonical(manifest(claim))
    assert canonical.value is claim
    assert canonical.to_user(FieldPath.parse("spec.devices")) == FieldPath.parse("spec.devices")


def test_a_pod_template_inside_a_list_is_read_as_written():
    # A JobSet keeps its pod templates under replicatedJobs[*]: a custom resource's, stored as
    # written. Its explicit nulls were once decoded through the list and crashed the conversion.
    from dralint.engine import Options, lint_text

    jobset = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: pretrain, namespace: ml-training}
spec:
  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      spec:
        template:
          spec:
            containers: [{name: main, image: train, resources: {claims: [{name: gpu, request: null}]}}]
            resourceClaims: [{name: gpu, resourceClaimTemplateName: gpus, resourceClaimName: null}]
"""
    assert [f.message for f in lint_text(jobset, Options()) if f.rule == "DRA000"] == []
