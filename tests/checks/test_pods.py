"""Pod spec claim fields (dralint/checks/pods.py) and cross-object references (references.py)."""
from __future__ import annotations

import textwrap

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release, parse_version


def pod(claims: str, container_claims: str, *, kind: str = "Pod", extra: str = "", namespace: str = "default") -> str:
    spec = ("resourceClaims:\n" + textwrap.indent(textwrap.dedent(claims).strip("\n"), "") + "\n" + extra +
            "containers:\n- name: main\n  image: busybox\n  resources:\n    claims:\n" +
            textwrap.indent(textwrap.dedent(container_claims).strip("\n"), "    ") + "\n")
    if kind == "Pod":
        return f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: {namespace}\nspec:\n" + \
            textwrap.indent(spec, "  ")
    return (f"apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: j\n  namespace: {namespace}\nspec:\n"
            "  schedule: '* * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n"
            + textwrap.indent(spec, "          "))


def lint(text: str, version: str = "1.37") -> list[tuple[str, str]]:
    return sorted((f.rule, f.field) for f in lint_text(text, Options(release=Release(parse_version(version)))))


TEMPLATE = """apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu-template, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
      - name: nic
        exactly: {deviceClassName: nic.example.com}
---
"""


def test_valid_pod():
    assert lint(pod("- {name: gpu, resourceClaimTemplateName: gpu-template}", "- {name: gpu}")) == []


def test_pod_claim_entries():
    claims = """
    - {name: gpu, resourceClaimTemplateName: gpu-template}
    - {name: gpu, resourceClaimName: other}
    - {name: Bad_Name, resourceClaimName: x}
    - {name: "", resourceClaimName: why}
    - {name: neither}
    - {name: both, resourceClaimName: a, resourceClaimTemplateName: b}
    - {name: badref, resourceClaimName: "not_valid"}
    """
    base = "spec.resourceClaims"
    assert lint(pod(claims, "- {name: gpu}")) == [
        ("DRA240", f"{base}[2].name"), ("DRA240", f"{base}[3].name"), ("DRA241", f"{base}[1].name"),
        ("DRA242", f"{base}[4]"), ("DRA242", f"{base}[5]"), ("DRA243", f"{base}[6].resourceClaimName"),
    ]


def test_source_shape_depends_on_release():
    old_shape = pod("- name: gpu\n  source: {resourceClaimTemplateName: gpu-template}", "- {name: gpu}")
    # Strict decoding refuses the old field; the entry then has no source at all.
    assert lint(old_shape, "1.37") == [("DRA101", "spec.resourceClaims[0].source"), ("DRA242", "spec.resourceClaims[0]")]
    got = [f for f in lint_text(old_shape, Options(release=Release(30))) if f.severity.value == "error"]
    assert got == []
    new_shape = pod("- {name: gpu, resourceClaimTemplateName: gpu-template}", "- {name: gpu}")
    errs = [f for f in lint_text(new_shape, Options(release=Release(30, {"DynamicResourceAllocation": True})))]
    assert sorted((f.rule, f.field) for f in errs) == [("DRA101", "spec.resourceClaims[0].resourceClaimTemplateName"),
                                                       ("DRA242", "spec.resourceClaims[0]")]
    assert "under `source:`" in next(f.message for f in errs if f.rule == "DRA242")


def test_container_claims():
    containers = """
    - {name: gpu}
    - {name: gpu, request: gpu}
    - {name: other, request: nic}
    - {name: other, request: nic}
    - {request: x}
    - {name: gpus}
    - {name: other, request: Bad_Request}
    """
    claims = "- {name: gpu, resourceClaimName: a}\n- {name: other, resourceClaimName: b}"
    base = "spec.containers[0].resources.claims"
    findings = lint_text(pod(claims, containers), Options())
    assert sorted((f.rule, f.field) for f in findings) == [
        ("DRA244", f"{base}[5]"), ("DRA245", f"{base}[4]"), ("DRA246", f"{base}[1]"), ("DRA246", f"{base}[3]"),
        ("DRA247", f"{base}[6].request"),
    ]
    assert "did you mean 'gpu'?" in next(f.message for f in findings if f.rule == "DRA244")


def test_pod_level_claims_forbidden_and_workload_paths():
    text = pod("- {name: gpu, resourceClaimName: a}", "- {name: gpu}", kind="CronJob",
               extra="resources:\n  claims:\n  - {name: gpu}\n")
    assert lint(text) == [("DRA248", "spec.jobTemplate.spec.template.spec.resources.claims")]


def test_request_must_exist_in_a_claim_of_the_run():
    text = TEMPLATE + pod("- {name: gpu, resourceClaimTemplateName: gpu-template}", "- {name: gpu, request: gpus}")
    findings = lint_text(text, Options())
    assert [(f.rule, f.severity.value, f.field) for f in findings] == [
        ("DRA604", "error", "spec.containers[0].resources.claims[0].request")]
    assert "did you mean 'gpu'?" in findings[0].message
    ok = TEMPLATE + pod("- {name: gpu, resourceClaimTemplateName: gpu-template}", "- {name: gpu, request: nic}")
    assert lint(ok) == []


def test_references_warn_only_when_the_run_has_such_objects():
    lone = pod("- {name: gpu, resourceClaimName: missing}", "- {name: gpu}")
    assert lint(lone) == []
    text = TEMPLATE + pod("- {name: gpu, resourceClaimName: gpu-template}\n- {name: t, resourceClaimTemplateName: gpu-templat}",
                          "- {name: gpu}\n- {name: t}")
    findings = lint_text(text, Options())
    assert sorted((f.rule, f.severity.value, f.field) for f in findings) == [
        ("DRA601", "warning", "spec.resourceClaims[0].resourceClaimName"),
        ("DRA602", "warning", "spec.resourceClaims[1].resourceClaimTemplateName"),
    ]
    messages = " ".join(f.message for f in findings)
    assert "use `resourceClaimTemplateName`" in messages and "did you mean 'gpu-template'?" in messages


def test_other_namespace_does_not_count():
    text = TEMPLATE + pod("- {name: gpu, resourceClaimTemplateName: gpu-template}", "- {name: gpu}", namespace="ml")
    assert lint(text) == [("DRA602", "spec.resourceClaims[0].resourceClaimTemplateName")]


CLASS = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
"""
SLICE = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.example.com
  nodeName: worker-1
  pool: {name: worker-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
---
"""


def test_device_class_references():
    claim = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\n"
             "spec:\n  devices:\n    requests:\n    - name: gpu\n      exactly: {deviceClassName: gpu.exmaple.com}\n")
    assert lint(claim) == []
    findings = lint_text(CLASS + claim, Options())
    assert [(f.rule, f.field) for f in findings] == [("DRA600", "spec.devices.requests[0].exactly.deviceClassName")]
    assert "did you mean 'gpu.example.com'?" in findings[0].message


def test_selector_driver_must_be_published_when_slices_are_given():
    typo = CLASS.replace('"gpu.example.com"', '"gpu.exmple.com"')
    assert lint(typo) == []
    findings = [f for f in lint_text(SLICE + typo, Options()) if f.rule == "DRA603"]
    assert [(f.field, f.severity.value) for f in findings] == [("spec.selectors[0].cel.expression", "warning")]
    assert [f for f in lint_text(SLICE + CLASS, Options()) if f.rule == "DRA603"] == []


CLAIM_DATA = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: data, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
"""
ALLOCATION = """status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.example.com, pool: node-1, device: gpu-0}
    nodeSelector:
      nodeSelectorTerms:
      - matchFields:
        - {key: metadata.name, operator: In, values: [node-1]}
"""


def bypass(text: str, version: str = "1.37", gates: dict | None = None, cluster: str | None = None) -> list[str]:
    """The DRA249 findings: field and message."""
    options = Options(release=Release(parse_version(version), dict(gates or {})))
    return [f"{f.field}: {f.message}" for f in lint_text(text, options, cluster_text=cluster) if f.rule == "DRA249"]


def test_a_pod_naming_its_node_with_a_template_claim_bypasses_the_scheduler():
    text = TEMPLATE + pod("- {name: gpu, resourceClaimTemplateName: gpu-template}", "- {name: gpu}",
                          extra="nodeName: node-1\n")
    (msg,) = bypass(text)
    assert msg == ("spec.nodeName: spec.nodeName 'node-1' bypasses the scheduler, and only the scheduler allocates "
                   "claims: pod claim 'gpu' (from template 'gpu-template') is never allocated and the pod never "
                   "starts; to run on that node, remove nodeName and set a nodeSelector on the node's "
                   "`kubernetes.io/hostname` label")
    workload = pod("- {name: gpu, resourceClaimTemplateName: gpu-template}", "- {name: gpu}", kind="CronJob",
                   extra="nodeName: node-1\n")
    assert [m.split(":")[0] for m in bypass(workload)] == ["spec.jobTemplate.spec.template.spec.nodeName"]
    assert bypass(TEMPLATE + pod("- {name: gpu, resourceClaimTemplateName: gpu-template}", "- {name: gpu}",
                                 extra="nodeSelector: {kubernetes.io/hostname: node-1}\n")) == []


def test_a_pod_naming_its_node_may_use_a_named_claim_only_once_it_is_allocated():
    text = pod("- {name: gpu, resourceClaimName: data}", "- {name: gpu}", extra="nodeName: node-1\n")
    (msg,) = bypass(CLAIM_DATA + "---\n" + text)
    assert "pod claim 'gpu' (ResourceClaim 'data', not allocated) is never allocated" in msg
    assert bypass(text, cluster=CLAIM_DATA + ALLOCATION) == []
    assert bypass(text) == []  # the claim is not known: it may be allocated already


def test_a_pod_naming_its_node_is_fine_where_classic_dra_could_allocate_without_the_scheduler():
    text = TEMPLATE + pod("- {name: gpu, resourceClaimTemplateName: gpu-template}", "- {name: gpu}",
                          extra="nodeName: node-1\n")
    dra = {"DynamicResourceAllocation": True}  # alpha in 1.31
    assert bypass(text.replace("resource.k8s.io/v1", "resource.k8s.io/v1alpha3"), version="1.31", gates=dra)
    assert bypass(text.replace("resource.k8s.io/v1", "resource.k8s.io/v1alpha3"), version="1.31",
                  gates={**dra, "DRAControlPlaneController": True}) == []
    assert bypass(text.replace("resource.k8s.io/v1", "resource.k8s.io/v1alpha2"), version="1.30") == []
