"""The v1alpha1 (1.26) and v1alpha2 (1.27-1.30) kinds (dralint/checks/legacy.py)."""
from __future__ import annotations

import textwrap

import pytest

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release, parse_version

UID = "6f1c1b9e-3c7a-4a53-9d0e-2b1c5f8e7a10"


def claim(spec: str = "resourceClassName: gpu.example.com", status: str = "", version: str = "v1alpha2",
          meta: str = "") -> str:
    text = (f"apiVersion: resource.k8s.io/{version}\nkind: ResourceClaim\nmetadata:\n  name: gpu\n  namespace: default\n"
            f"{meta}spec:\n" + textwrap.indent(textwrap.dedent(spec).strip("\n"), "  ") + "\n")
    return text + ("status:\n" + textwrap.indent(textwrap.dedent(status).strip("\n"), "  ") + "\n" if status else "")


def errors(text: str, kube: str = "1.30", old: str | None = None) -> set[tuple[str, str]]:
    findings = lint_text(text, Options(release=Release(parse_version(kube))), old_text=old)
    return {(f.rule, f.field) for f in findings if f.severity.value == "error"}


@pytest.mark.parametrize("spec, expected", [
    ("resourceClassName: gpu.example.com", set()),
    ("resourceClassName: gpu.example.com\nallocationMode: Immediate", set()),
    ("resourceClassName: ''", {("DRA281", "spec.resourceClassName")}),
    ("resourceClassName: Bad_Class", {("DRA281", "spec.resourceClassName")}),
    ("resourceClassName: gpu.example.com\nallocationMode: All", {("DRA282", "spec.allocationMode")}),
    ("resourceClassName: gpu.example.com\nparametersRef: {name: p}", {("DRA280", "spec.parametersRef.kind")}),
])
def test_claim_spec(spec, expected):
    assert errors(claim(spec)) == expected


def test_v1alpha1_claims_follow_the_same_rules():
    assert errors(claim("resourceClassName: Bad_Class", version="v1alpha1"), kube="1.26") == {
        ("DRA281", "spec.resourceClassName")}


def test_the_spec_is_immutable_and_the_status_ignored_on_create():
    assert errors(claim("resourceClassName: other"), old=claim()) == {("DRA283", "spec")}
    assert errors(claim(status="reservedFor: [{resource: pods}]")) == set()


@pytest.mark.parametrize("status, expected", [
    ("driverName: gpu.example.com\nallocation: {shareable: true}", set()),
    ("allocation: {shareable: true}", {("DRA284", "status.driverName")}),
    ("driverName: Bad_Driver\nallocation: {}", {("DRA400", "status.driverName")}),
    ("driverName: d.example.com\nallocation:\n  resourceHandles:\n" + "  - {driverName: d.example.com}\n" * 33,
     {("DRA284", "status.allocation.resourceHandles")}),
    ("driverName: d.example.com\nallocation:\n  resourceHandles:\n  - {driverName: d.example.com, data: "
     + "x" * (16 * 1024 + 1) + "}", {("DRA284", "status.allocation.resourceHandles[0].data")}),
    ("driverName: d.example.com\nallocation:\n  resourceHandles:\n  - driverName: d.example.com\n    data: x\n"
     "    structuredData: {results: [{}]}",
     {("DRA284", "status.allocation.resourceHandles[0]"),
      ("DRA284", "status.allocation.resourceHandles[0].structuredData.results[0]")}),
    ("driverName: d.example.com\nallocation: {availableOnNodes: {nodeSelectorTerms: []}}",
     {("DRA405", "status.allocation.availableOnNodes.nodeSelectorTerms")}),
    (f"reservedFor: [{{resource: pods, name: a, uid: {UID}}}]", {("DRA285", "status.reservedFor")}),
    (f"driverName: d.example.com\nallocation: {{}}\nreservedFor: [{{resource: pods, name: a, uid: {UID}}},"
     f" {{resource: pods, name: b, uid: {UID[:-1]}1}}]", {("DRA285", "status.reservedFor")}),
    (f"driverName: d.example.com\nallocation: {{shareable: true}}\nreservedFor: [{{resource: pods, name: a, uid: {UID}}},"
     f" {{resource: pods, name: b, uid: {UID}}}]", {("DRA285", "status.reservedFor[1].uid")}),
    ("driverName: d.example.com\nallocation: {}\nreservedFor: [{name: a, uid: x}]",
     {("DRA285", "status.reservedFor[0].resource")}),
    ("deallocationRequested: true", {("DRA286", "status")}),
    (f"driverName: d.example.com\nallocation: {{}}\ndeallocationRequested: true\n"
     f"reservedFor: [{{resource: pods, name: a, uid: {UID}}}]",
     {("DRA286", "status.deallocationRequested"), ("DRA285", "status.reservedFor")}),
])
def test_claim_status_writes(status, expected):
    assert errors(claim(status=status), old=claim()) == expected


def test_v1alpha1_resource_handle_limit():
    status = "driverName: d.example.com\nallocation:\n  resourceHandle: " + "x" * (16 * 1024 + 1)
    assert errors(claim(status=status, version="v1alpha1"), kube="1.26", old=claim(version="v1alpha1")) == {
        ("DRA284", "status.allocation.resourceHandle")}


def test_allocation_and_deallocation_history():
    allocated = claim(status="driverName: d.example.com\nallocation: {shareable: true}")
    assert errors(claim(status="driverName: d.example.com\nallocation: {shareable: false}"), old=allocated) == {
        ("DRA284", "status.allocation")}
    requested = claim(status="driverName: d.example.com\nallocation: {}\ndeallocationRequested: true")
    assert errors(claim(status="driverName: d.example.com\nallocation: {}"), old=requested) == {
        ("DRA286", "status.deallocationRequested")}
    deleting = claim(status=f"driverName: d.example.com\nallocation: {{shareable: true}}\n"
                            f"reservedFor: [{{resource: pods, name: b, uid: {UID}}}]",
                     meta="  deletionTimestamp: '2026-01-01T00:00:00Z'\n")
    added = deleting.replace("reservedFor: [", "reservedFor: [{resource: pods, name: c, uid: '2'}, ")
    assert errors(added, old=deleting) == {("DRA285", "status.reservedFor")}


def test_template_spec_rules():
    template = ("apiVersion: resource.k8s.io/v1alpha2\nkind: ResourceClaimTemplate\nmetadata:\n  name: t\n"
                "spec:\n  metadata: {labels: {a: b}}\n  spec:\n    resourceClassName: {name}\n")
    assert errors(template.replace("{name}", "gpu.example.com")) == set()
    assert errors(template.replace("{name}", "Bad_Class")) == {("DRA281", "spec.spec.resourceClassName")}
    assert errors(template.replace("{name}", "other"), old=template.replace("{name}", "gpu")) == {("DRA283", "spec")}


@pytest.mark.parametrize("body, expected", [
    ("driverName: gpu.example.com", set()),
    ("driverName: ''", {("DRA400", "driverName")}),
    ("driverName: gpu.example.com\nparametersRef: {kind: K, name: params, namespace: Bad.NS}",
     {("DRA380", "parametersRef.namespace")}),
    ("driverName: gpu.example.com\nsuitableNodes: {nodeSelectorTerms: [{matchFields: [{key: x, operator: In, "
     "values: [a]}]}]}", {("DRA405", "suitableNodes.nodeSelectorTerms[0].matchFields[0].key")}),
])
def test_resource_class(body, expected):
    text = "apiVersion: resource.k8s.io/v1alpha2\nkind: ResourceClass\nmetadata:\n  name: gpu.example.com\n" + body + "\n"
    assert errors(text) == expected


def scheduling(spec: str, status: str = "", kind: str = "PodSchedulingContext", version: str = "v1alpha2") -> str:
    text = f"apiVersion: resource.k8s.io/{version}\nkind: {kind}\nmetadata:\n  name: pod\n  namespace: default\nspec: {spec}\n"
    return text + (f"status: {status}\n" if status else "")


def test_scheduling_context():
    assert errors(scheduling("{potentialNodes: [a, b]}")) == set()
    assert errors(scheduling("{potentialNodes: [a, a, Bad_Node]}")) == {
        ("DRA287", "spec.potentialNodes[1]"), ("DRA287", "spec.potentialNodes[2]")}
    many = "{potentialNodes: [" + ", ".join(f"n{i}" for i in range(129)) + "]}"
    assert errors(scheduling(many)) == {("DRA287", "spec.potentialNodes")}
    assert errors(scheduling("{potentialNodes: [a, a]}", kind="PodScheduling", version="v1alpha1"), kube="1.26") == {
        ("DRA287", "spec.potentialNodes[1]")}
    old = scheduling("{selectedNode: a}")
    status = "{resourceClaims: [{name: gpu, unsuitableNodes: [x, x]}, {name: gpu}]}"
    assert errors(scheduling("{selectedNode: a}", status), old=old) == {
        ("DRA287", "status.resourceClaims[0].unsuitableNodes[1]"), ("DRA288", "status.resourceClaims[1]")}


def named_slice(body: str) -> str:
    return ("apiVersion: resource.k8s.io/v1alpha2\nkind: ResourceSlice\nmetadata:\n  name: s\nnodeName: node-1\n"
            "driverName: gpu.example.com\n" + body)


def test_130_resource_slice():
    instances = "namedResources:\n  instances:\n"
    assert errors(named_slice(instances + "  - name: gpu-0\n    attributes: [{name: mem, quantity: 1Gi}]\n")) == set()
    assert errors(named_slice("")) == {("DRA480", "")}
    assert errors(named_slice(instances + "  - name: gpu-0\n  - name: gpu-0\n  - name: Bad_0\n")) == {
        ("DRA481", "namedResources.instances[1].name"), ("DRA481", "namedResources.instances[2].name")}
    attrs = "  - name: gpu-0\n    attributes: [{name: a}, {name: b, int: 1, bool: true}, {name: c, version: v1},"\
            " {name: c, int: 2}, {name: Bad_Name, int: 3}]\n"
    base = "namedResources.instances[0].attributes"
    assert errors(named_slice(instances + attrs)) == {
        ("DRA482", f"{base}[0]"), ("DRA482", f"{base}[1]"), ("DRA482", f"{base}[2].version"),
        ("DRA482", f"{base}[3].name"), ("DRA482", f"{base}[4].name")}
    old = named_slice(instances + "  - name: gpu-0\n")
    assert errors(old.replace("nodeName: node-1", "nodeName: node-2"), old=old) == {("DRA425", "nodeName")}


def test_130_parameters():
    head = "apiVersion: resource.k8s.io/v1alpha2\nkind: {kind}\nmetadata:\n  name: p\n  namespace: default\n"
    claim_params = head.format(kind="ResourceClaimParameters")
    assert errors(claim_params + "generatedFrom: {kind: K}\ndriverRequests:\n- driverName: a.example.com\n"
                  "  requests: [{namedResources: {selector: 'true'}}, {}, {namedResources: {}}]\n"
                  "- driverName: a.example.com\n") == {
        ("DRA280", "generatedFrom.name"), ("DRA289", "driverRequests[0].requests[1]"),
        ("DRA289", "driverRequests[0].requests[2].namedResources.selector"),
        ("DRA289", "driverRequests[1].driverName"), ("DRA289", "driverRequests[1].requests")}
    class_params = head.format(kind="ResourceClassParameters")
    assert errors(class_params + "filters: [{driverName: a.example.com}]\n"
                  "vendorParameters: [{driverName: a.example.com}, {driverName: a.example.com}]\n") == {
        ("DRA381", "filters[0]"), ("DRA381", "vendorParameters[1].driverName")}


def test_newer_versions_are_left_to_the_other_modules():
    assert errors(claim("devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}",
                        version="v1"), kube="1.37") == set()
