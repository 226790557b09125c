"""Object metadata rules (dralint/checks/metadata.py) for every DRA kind."""
from __future__ import annotations

import pytest

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release, parse_version

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
{meta}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
"""
CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
{meta}
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
"""


def findings(text: str, kube: str = "1.37", old: str | None = None) -> set[tuple[str, str, str]]:
    options = Options(release=Release(parse_version(kube)))
    return {(f.rule, f.field, f.severity.value) for f in lint_text(text, options, old_text=old)}


@pytest.mark.parametrize("meta, expected", [
    ("  name: gpu-claim\n  namespace: default", set()),
    ("  name: gpu-claim", set()),  # kubectl fills in the namespace
    ("  generateName: gpu-claim-\n  namespace: default", set()),
    ("  name: gpu-claim\n  generateName: prefix-", set()),
    ("  namespace: default", {("DRA120", "metadata.name", "error")}),
    ("  name: GPU_Claim", {("DRA121", "metadata.name", "error")}),
    ("  generateName: GPU_", {("DRA121", "metadata.generateName", "error")}),
    ("  name: gpu-claim\n  namespace: ml.team", {("DRA122", "metadata.namespace", "error")}),
    ("  name: gpu-claim\n  labels: {hello-world: spaces not allowed}", {("DRA124", "metadata.labels", "error")}),
    ("  name: gpu-claim\n  labels: {'!@#$%^': x}", {("DRA124", "metadata.labels", "error")}),
    ("  name: gpu-claim\n  labels: {apps.kubernetes.io/name: test}", set()),
    ("  name: gpu-claim\n  annotations: {foo: bar}", set()),
    ("  name: gpu-claim\n  annotations: {Example.COM/Key: bar}", set()),  # keys compared case-insensitively
    ("  name: gpu-claim\n  annotations: {'!@#$%^': hello world}", {("DRA125", "metadata.annotations", "error")}),
    ("  name: gpu-claim\n  finalizers: [example.com/foo]", set()),
    ("  name: gpu-claim\n  finalizers: [kubernetes, orphan]", set()),
    ("  name: gpu-claim\n  finalizers: [cleanup]", {("DRA127", "metadata.finalizers[0]", "error")}),
    ("  name: gpu-claim\n  finalizers: [orphan, foregroundDeletion]", {("DRA127", "metadata.finalizers", "error")}),
    ("  name: gpu-claim\n  uid: ac051fac-2ead-46d9-b8b4-4e0fbeb7455d\n  generation: 100\n"
     "  creationTimestamp: '2026-01-01T00:00:00Z'\n  deletionGracePeriodSeconds: 10", set()),
    ("  name: gpu-claim\n  ownerReferences: [{apiVersion: v1, kind: pod, name: foo, uid: ac051fac}]", set()),
    ("  name: gpu-claim\n  ownerReferences: [{apiVersion: v1, kind: Pod, name: foo}]",
     {("DRA128", "metadata.ownerReferences[0].uid", "error")}),
    ("  name: gpu-claim\n  ownerReferences: [{apiVersion: apps/v1, kind: A, name: a, uid: '1', controller: true},"
     " {apiVersion: apps/v1, kind: B, name: b, uid: '2', controller: true}]",
     {("DRA128", "metadata.ownerReferences", "error")}),
])
def test_claim_metadata(meta, expected):
    assert findings(CLAIM.format(meta=meta)) == expected


def test_cluster_scoped_objects_with_a_namespace_get_a_warning_not_an_error():
    assert findings(CLASS.format(meta="  name: gpu.example.com\n  namespace: ml")) == {
        ("DRA123", "metadata.namespace", "warning")}


def test_a_device_class_generated_name_is_checked_as_the_name():
    assert findings(CLASS.format(meta="  generateName: GPU-")) == {("DRA121", "metadata.name", "error")}
    assert findings(CLASS.format(meta="  generateName: gpu-")) == set()
    # With a name, a DeviceClass's generateName is not looked at.
    assert findings(CLASS.format(meta="  name: gpu.example.com\n  generateName: GPU-")) == set()


def test_annotations_at_most_256_kib():
    limit = 256 * 1024
    ok = CLASS.format(meta=f"  name: gpu.example.com\n  annotations:\n    a: {'x' * (limit - 1)}")
    too_big = CLASS.format(meta=f"  name: gpu.example.com\n  annotations:\n    a: {'x' * limit}")
    assert findings(ok) == set()
    assert findings(too_big) == {("DRA126", "metadata.annotations", "error")}


def test_template_metadata_may_only_carry_labels_and_annotations():
    template = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu-template
spec:
  metadata:
{meta}
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
"""
    assert findings(template.format(meta="    labels: {app: trainer}\n    creationTimestamp: null")) == set()
    assert findings(template.format(meta="    labels: {app: bad value}")) == {("DRA124", "spec.metadata.labels", "error")}
    assert findings(template.format(meta="    name: fixed\n    namespace: other")) == {
        ("DRA129", "spec.metadata.name", "error"), ("DRA129", "spec.metadata.namespace", "error")}


def test_update_keeps_name_and_uid():
    old = CLASS.format(meta="  name: gpu.example.com\n  uid: ac051fac-2ead-46d9-b8b4-4e0fbeb7455d")
    same = CLASS.format(meta="  name: gpu.example.com")
    other_uid = CLASS.format(meta="  name: gpu.example.com\n  uid: 0d7e0f6a-9f3b-4c55-8a61-1f2e3d4c5b6a")
    assert findings(same, old=old) == set()
    assert findings(other_uid, old=old) == {("DRA130", "metadata.uid", "error")}


@pytest.mark.parametrize("text, kube", [
    ("apiVersion: resource.k8s.io/v1alpha2\nkind: ResourceClass\nmetadata:\n  name: Bad_Name\ndriverName: gpu.example.com\n",
     "1.30"),
    ("apiVersion: resource.k8s.io/v1alpha2\nkind: PodSchedulingContext\nmetadata:\n  name: Bad_Name\nspec: {}\n", "1.30"),
    ("apiVersion: resource.k8s.io/v1alpha1\nkind: PodScheduling\nmetadata:\n  name: Bad_Name\nspec: {}\n", "1.26"),
    ("apiVersion: resource.k8s.io/v1\nkind: DeviceTaintRule\nmetadata:\n  name: Bad_Name\n"
     "spec:\n  deviceSelector: {driver: gpu.example.com}\n  taint: {key: example.com/x, effect: NoSchedule}\n", "1.37"),
])
def test_every_dra_kind_and_version_gets_the_name_check(text, kube):
    assert findings(text, kube=kube) == {("DRA121", "metadata.name", "error")}
