"""Every object judged, nothing aborted: one object's surprise is one finding on that object.

First the boundaries themselves (a stage made to fail on one object of a file: that object gets
DRA000, every other object is judged, the exit code is the findings'), then the property that makes
them rarely needed: any value at any scalar field of any kind is judged without an internal error.
"""
from __future__ import annotations

import copy
import io
from typing import Any, Iterator

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint import engine
from dralint.engine import objects, run
from dralint.kube.releases import Release
from dralint.cli import EXIT_INTERNAL, main
from dralint import source
from dralint.engine import Options, RunResult, lint_files

OBJECTS: list[dict] = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
     "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
              "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"mode": "exclusive"}}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-1-gpu"},
     "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
              "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
              "sharedCounters": [{"name": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}}}],
              "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}, "index": {"int": 0},
                                                            "driverVersion": {"version": "1.2.3"}},
                           "capacity": {"memory": {"value": "80Gi"}},
                           "consumesCounters": [{"counterSet": "gpu-0-counters",
                                                 "counters": {"memory": {"value": "80Gi"}}}],
                           "taints": [{"key": "maintenance", "effect": "NoSchedule"}]}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "train", "namespace": "ml"},
     "spec": {"devices": {
         "requests": [{"name": "gpu", "exactly": {
             "deviceClassName": "gpu.example.com", "count": 1, "allocationMode": "ExactCount",
             "selectors": [{"cel": {"expression": 'device.capacity["gpu.example.com"].memory.compareTo('
                                                  'quantity("40Gi")) >= 0'}}],
             "tolerations": [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}]}},
             {"name": "nic", "firstAvailable": [{"name": "fast", "deviceClassName": "gpu.example.com", "count": 1}]}],
         "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": "gpu.example.com/model"}],
         "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}]}}},
    {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
     "metadata": {"name": "per-pod", "namespace": "ml"},
     "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com",
                                                  "count": 2, "adminAccess": False}]}}}},
    {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "DeviceTaintRule", "metadata": {"name": "drain"},
     "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": "node-1"},
              "taint": {"key": "broken", "value": "yes", "effect": "NoExecute"}}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
     "spec": {"containers": [{"name": "app", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
              "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "per-pod"}]}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ml"},
     "spec": {"template": {"spec": {"restartPolicy": "Never",
                                    "containers": [{"name": "app", "image": "busybox",
                                                    "resources": {"claims": [{"name": "gpu"}]}}],
                                    "resourceClaims": [{"name": "gpu", "resourceClaimName": "train"}]}}}},
]


def text_of(objects: list[dict]) -> str:
    return "---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objects)


def lint_text(text: str, options: Options = Options()) -> RunResult:
    return lint_files([source.load_text(text, "objects.yaml")], options)


def internal_errors(text: str, options: Options = Options()) -> list[str]:
    result = lint_text(text, options)
    assert not result.input_error
    return [f"{f.object}: {f.message}" for f in result.findings if f.rule == "DRA000"]


def test_the_objects_of_the_property_test_are_judged_without_an_internal_error():
    assert internal_errors(text_of(OBJECTS)) == []


# --- the boundaries -----------------------------------------------------------------------------------------

def display_of(arg: Any) -> str:
    """The display name of the object an engine function is called with (a manifest, a target...)."""
    for attribute in ("canonical", "manifest"):
        arg = getattr(arg, attribute, arg)
    return str(getattr(arg, "display", ""))


def failing_for(name: str, real: Any) -> Any:
    """``real``, except for the object named ``name``, where it raises as a bug would."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if any(display_of(a).endswith("/" + name) or display_of(a).endswith(" " + name) for a in args):
            raise ValueError("invalid literal for int() with base 10: ''")
        return real(*args, **kwargs)
    return wrapper


BAD_CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "bad", "namespace": "ml"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                                                           "count": -1}}]}}}


@pytest.mark.parametrize("stage, target", [
    ("schema validation", "_schema"),
    ("reading the object", "to_canonical"),
    ("preparing its checks", "_contexts"),
])
def test_a_stage_that_fails_on_one_object_costs_only_that_object(monkeypatch, stage, target):
    victim = copy.deepcopy(OBJECTS[2])
    victim["metadata"]["name"] = "victim"
    monkeypatch.setattr(objects, target, failing_for("victim", getattr(objects, target)))
    result = lint_text(text_of([victim, BAD_CLAIM]))
    errors = [f for f in result.findings if f.rule == "DRA000"]
    assert len(errors) == 1 and errors[0].object == "ResourceClaim ml/victim" and stage in errors[0].message
    assert "please report it" in errors[0].message
    assert any(f.rule == "DRA201" and f.object == "ResourceClaim ml/bad" for f in result.findings)
    assert not result.input_error and result.exit_code == 1


def test_a_document_whose_kind_cannot_be_read_costs_only_that_document(monkeypatch):
    real = objects.identify

    def identify(doc: Any, **kwargs: Any) -> Iterator[Any]:
        if isinstance(doc.value, dict) and doc.value.get("metadata", {}).get("name") == "victim":
            raise KeyError("kind")
        return real(doc, **kwargs)

    monkeypatch.setattr(objects, "identify", identify)
    victim = dict(OBJECTS[0], metadata={"name": "victim"})
    result = lint_text(text_of([victim, BAD_CLAIM]))
    assert [f.line for f in result.findings if f.rule == "DRA000"] == [1]
    assert any(f.rule == "DRA201" for f in result.findings)


def test_a_step_over_the_whole_run_that_fails_leaves_every_finding(monkeypatch):
    def duplicates(*args: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(run, "_duplicates", duplicates)
    result = lint_text(text_of([BAD_CLAIM]))
    assert {f.rule for f in result.findings} == {"DRA000", "DRA201"}


def test_the_command_line_reports_the_other_objects_and_exits_by_the_findings(monkeypatch, tmp_path):
    path = tmp_path / "objects.yaml"
    victim = copy.deepcopy(OBJECTS[1])
    victim["metadata"]["name"] = "victim"
    path.write_text(text_of([victim, BAD_CLAIM]))
    monkeypatch.setattr(objects, "_schema", failing_for("victim", objects._schema))
    out, err = io.StringIO(), io.StringIO()
    assert main([str(path), "--no-config", "-j", "1"], out, err) == 1
    assert "DRA201" in out.getvalue() and "DRA000" in out.getvalue() and "error:" not in err.getvalue()


def test_a_bug_past_every_boundary_is_an_internal_error_not_a_usage_error(monkeypatch, tmp_path):
    from dralint import parallel

    path = tmp_path / "objects.yaml"
    path.write_text(text_of([BAD_CLAIM]))
    monkeypatch.setattr(parallel, "lint_paths", lambda *a, **k: int(""))
    out, err = io.StringIO(), io.StringIO()
    assert main([str(path), "--no-config", "-j", "1"], out, err) == EXIT_INTERNAL
    assert "internal error: please report it" in err.getvalue() and "Traceback" in err.getvalue()


# --- any value at any scalar field ----------------------------------------------------------------------------

def leaves(value: Any, path: tuple = ()) -> Iterator[tuple]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, path + (i,))
    else:
        yield path


LEAVES = [(i, path) for i, obj in enumerate(OBJECTS) for path in leaves(obj)]
QUANTITYISH = st.text("0123456789.+-eEinumkKMGTP ", max_size=10)
VALUES = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
          | st.text(max_size=30) | QUANTITYISH | st.sampled_from(["", " ", "1E", "Ki", "-", ".", "0", "*", "a/b/c",
                                                                  "x" * 300, "true", "null"])
          | st.lists(st.integers(), max_size=3) | st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


@pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")   # the CEL parser raises it
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(LEAVES), VALUES), min_size=1, max_size=3))
def test_any_value_at_any_scalar_field_is_judged_without_an_internal_error(changes):
    objects = copy.deepcopy(OBJECTS)
    for (i, path), value in changes:
        target = objects[i]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    assert internal_errors(text_of(objects)) == []


# --- explicit nulls in pods and workloads -------------------------------------------------------------------------

def containers_of(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """Paths of every list and map below ``value`` (metadata's name and namespace maps excepted)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and path + (k,) != ("metadata",):
                yield path + (k,)
            yield from containers_of(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from containers_of(v, path + (i,))


WORKLOADS = [obj for obj in OBJECTS if obj["kind"] in ("Pod", "Job")]


@pytest.mark.parametrize("index, path", [(i, path) for i, obj in enumerate(WORKLOADS) for path in containers_of(obj)],
                         ids=lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_an_explicit_null_list_or_map_of_a_workload_is_absent_as_the_api_server_decodes_it(index, path):
    # Go's decoder reads `field: null` as the field left out: what the server would say of the object
    # without the field is all dralint may say (here: nothing it calls an error).
    obj = copy.deepcopy(WORKLOADS[index])
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = None
    without = copy.deepcopy(WORKLOADS[index])
    parent = without
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    errors = sorted((f.rule, f.field) for f in lint_text(text_of([obj])).findings if f.severity.value == "error")
    expected = sorted((f.rule, f.field) for f in lint_text(text_of([without])).findings if f.severity.value == "error")
    assert errors == expected


# --- gated fields: created or stored ------------------------------------------------------------------------------

SHARED_GPU = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        capacity: {requests: {memory: 10Gi}}
"""
GPU_CLUSTER = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    allowMultipleAllocations: true
    capacity: {memory: {value: 40Gi}}
"""


TWO_GPUS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices:
  - name: g0
  - name: g1
"""
HELD = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: held, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu, count: 2}
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.example.com, pool: p, device: g0}
      - {request: gpu, driver: gpu.example.com, pool: p, device: g1}
"""
NEW = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: new, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu, count: 1}
"""


def test_a_linted_claims_status_holds_no_devices():
    # a pasted `kubectl get -o yaml` claim: the API server clears its status on create (DRA265)
    findings = engine.lint_files([source.load_text(TWO_GPUS + "---\n" + HELD + "---\n" + NEW, "claims.yaml")],
                                 Options()).findings
    assert {f.rule for f in findings} == {"DRA265"}


def test_devices_held_by_claims_of_the_cluster_name_the_claim_and_its_file():
    findings = engine.lint_files([source.load_text(NEW, "new.yaml")], Options(),
                                 cluster_files=[source.load_text(TWO_GPUS, "cluster.yaml"),
                                                source.load_text(HELD, "held.yaml")]).findings
    (finding,) = [f for f in findings if f.rule == "DRA701"]
    assert "but other claims hold 2 (default/held in held.yaml), which leaves none" in finding.message


@pytest.mark.parametrize("as_stored, expected", [(False, {"DRA802"}), (True, {"DRA704", "DRA802"})])
def test_a_claim_with_a_gated_field_is_judged_as_created_unless_said_to_be_stored(as_stored, expected):
    findings = engine.lint_files([source.load_text(SHARED_GPU, "claim.yaml")],
                                 Options(release=Release(34), as_stored=as_stored),
                                 cluster_files=[source.load_text(GPU_CLUSTER, "cluster.yaml")]).findings
    assert {f.rule for f in findings} == expected
