"""Conversion to the canonical shape, field paths, releases and gates, quantities."""
from __future__ import annotations

from fractions import Fraction

import pytest

from dralint.convert import to_canonical
from dralint.manifest import Manifest
from dralint.paths import FieldPath, Key
from dralint.kube.quantity import Quantity, QuantityError
from dralint.kube.releases import Release, ReleaseError, parse_version


def manifest(value: dict) -> Manifest:
    return Manifest(document=None, value=value, base=FieldPath(), api_version=value["apiVersion"], kind=value["kind"])


def test_field_path_render_and_parse_round_trip():
    path = FieldPath(("spec", "devices", 0, "attributes", Key("gpu.example.com/model"), "string"))
    assert path.render() == "spec.devices[0].attributes[gpu.example.com/model].string"
    assert FieldPath.parse(path.render()) == path


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


def test_release_gate_stages():
    assert not Release(33).gate("DRAPrioritizedList")
    assert Release(34).gate("DRAPrioritizedList")
    assert Release(36).gate("DRAConsumableCapacity") and not Release(35).gate("DRAConsumableCapacity")
    assert Release(35, {"DRAConsumableCapacity": True}).gate("DRAConsumableCapacity")
    assert Release(37).stage("DRAControlPlaneController") is None


def test_parse_version_and_gates():
    assert parse_version("v1.35.2") == 35
    with pytest.raises(ValueError):
        parse_version("1.20")
    gated, notes = Release(35).with_gates("DRAConsumableCapacity=true,PodLevelResources=true")
    assert gated.overrides == {"DRAConsumableCapacity": True} and "PodLevelResources" in notes[0]
    with pytest.raises(ReleaseError, match="did you mean DRAAdminAccess"):
        Release(35).with_gates("DRAAdminAcess=true")
    # A locked gate turned off: a real kube-apiserver refuses to start, but a what-if run (or code
    # built with the gate off, as the allocator conformance cases are) is judged so, with a note.
    gated, notes = Release(36).with_gates("DRAAdminAccess=false")
    assert gated.overrides == {"DRAAdminAccess": False}
    assert "locked on in Kubernetes 1.36" in notes[0] and "refuses to start" in notes[0]
    assert Release(35).with_gates("DRAAdminAccess=false")[0].overrides == {"DRAAdminAccess": False}  # beta there
    with pytest.raises(ReleaseError, match="does not exist"):
        Release(35).with_gates("DRAListTypeAttributes=true")
    gated, notes = Release(35).with_gates("DRAListTypeAttributes=false")
    assert gated.overrides == {} and "changes nothing" in notes[0]


@pytest.mark.parametrize(("a", "b"), [("1Gi", "1024Mi"), ("1k", "1000"), ("1e3", "1k"), (".5", "500m"), ("1500m", "1.5")])
def test_quantities_equal(a, b):
    assert Quantity.parse(a) == Quantity.parse(b)


@pytest.mark.parametrize("bad", ["200K", "10Mo", "", "1.2.3", "abc", "1 Gi", "Pi"])
def test_quantity_rejects(bad):
    with pytest.raises(QuantityError):
        Quantity.parse(bad)


@pytest.mark.parametrize(("text", "value"), [(" 1", 1), ("+", 0), ("Gi", 0)])
def test_quantity_fields_take_what_apimachinery_takes(text, value):
    # A field's text is trimmed (UnmarshalJSON); a sign or a suffix without digits is zero.
    assert Quantity.parse(text).value == value


def test_cel_quantity_text_is_not_trimmed():
    with pytest.raises(QuantityError):
        Quantity.parse_string(" 1")


def test_quantity_arithmetic_is_exact():
    assert Quantity.parse("0.1").add(Quantity.parse("0.2")).value == Fraction(3, 10)
    assert Quantity.parse("80Gi").compare(Quantity.parse("40Gi")) == 1
    assert Quantity.parse(2.5).value == Fraction(5, 2)
