"""The CEL selector check through the engine: where selectors are found, updates, positions."""
from __future__ import annotations

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release

CLAIM = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: c
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - name: big
        deviceClassName: gpu.example.com
        selectors:
        - cel:
            expression: 'device.capacity["gpu.example.com"].memory > "40Gi"'
"""
CLASS = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: 'gpu.model == "a100"'
"""
TAINT_RULE = """apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata:
  name: t
spec:
  deviceSelector:
    selectors:
    - cel:
        expression: 'device.nosuch'
  taint:
    key: example.com/maintenance
    effect: NoSchedule
"""


def cel_findings(text: str, **kw: object) -> list:
    return [f for f in lint_text(text, Options(**kw)) if f.category.value == "cel"]


def test_subrequest_selector_error_points_into_the_expression() -> None:
    found = cel_findings(CLAIM)
    assert [f.rule for f in found] == ["DRA501"]
    f = found[0]
    assert "firstAvailable[0].selectors[0].cel.expression" in f.field
    assert "found no matching overload for '_>_'" in f.message
    assert f.line == 15 and f.column > 20


def test_unchanged_class_selectors_are_not_judged_again() -> None:
    assert [f.rule for f in cel_findings(CLASS)] == ["DRA501"]
    found = [f for f in lint_text(CLASS, Options(), old_text=CLASS) if f.category.value == "cel"]
    assert found == []


def test_taint_rule_selectors_only_in_1_33_and_1_34() -> None:
    gates = {"DRADeviceTaints": True}
    assert [f.rule for f in cel_findings(TAINT_RULE, release=Release(34, gates))] == ["DRA501"]


SLICE = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      type: {string: gpu}
      productName: {string: A100}
  - name: nic-0
    attributes:
      type: {string: nic}
"""


def _doc(kind: str, name: str, body: str) -> str:
    return f"apiVersion: resource.k8s.io/v1\nkind: {kind}\nmetadata:\n  name: {name}\n{body}"


def _class(name: str, *exprs: str) -> str:
    items = "".join(f"  - cel:\n      expression: '{e}'\n" for e in exprs)
    return _doc("DeviceClass", name, f"spec:\n  selectors:\n{items}")


def _claim(class_name: str, expr: str) -> str:
    return _doc("ResourceClaim", "c", f"""  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: {class_name}
        selectors:
        - cel:
            expression: '{expr}'
""")


G = 'device.attributes["gpu.example.com"]'
READ = f'{G}.productName == "A100"'
GPUS_ONLY = f'{G}.type == "gpu"'


def _rules(text: str, cluster: str | None = SLICE) -> list[str]:
    return [f.rule for f in lint_text(text, Options(), cluster_text=cluster) if f.category.value == "cel"]


def test_unguarded_read_warns_when_some_devices_lack_the_attribute() -> None:
    assert _rules(_class("any", READ)) == ["DRA506"]
    assert _rules(_claim("any", READ) + "---\n" + _class("any", "true")) == ["DRA506"]


def test_class_selector_evaluated_first_guards_the_request() -> None:
    # the class keeps only devices of type gpu, and every one of them has productName
    assert _rules(_claim("gpus", READ) + "---\n" + _class("gpus", GPUS_ONLY)) == []
    # the same class given as cluster state
    assert _rules(_claim("gpus", READ), SLICE + "---\n" + _class("gpus", GPUS_ONLY)) == []


def test_earlier_selector_of_a_class_guards_a_later_one() -> None:
    assert _rules(_class("gpus", GPUS_ONLY, READ)) == []
    assert _rules(_class("gpus", READ, GPUS_ONLY)) == ["DRA506"]


def _messages(text: str, cluster: str | None = None) -> list[str]:
    return [f.message for f in lint_text(text, Options(), cluster_text=cluster) if f.rule == "DRA501"]


def test_attribute_name_in_the_domain_position_teaches_the_domain() -> None:
    [message] = _messages(_class("c", 'device.driver == "gpu.nvidia.com" && device.attributes["productName"] == "A100"'))
    assert message.startswith('attributes are keyed by domain: write device.attributes["gpu.nvidia.com"].productName, '
                              'not device.attributes["productName"]: compilation failed: ERROR: <input>:1:')
    assert "found no matching overload for '_==_' applied to '(map(string, any), string)'" in message


def test_domain_hint_comes_from_the_request_class() -> None:
    text = _claim("gpu.example.com", 'device.attributes["productName"] == "A100"') + "---\n" + _class(
        "gpu.example.com", 'device.driver == "gpu.example.com"')
    [message] = _messages(text)
    assert 'device.attributes["gpu.example.com"].productName' in message


def test_domain_hint_comes_from_the_slices_that_publish_the_name() -> None:
    [message] = _messages(_class("c", 'device.attributes["productName"].startsWith("A")'), SLICE)
    assert message.startswith('attributes are keyed by domain: write device.attributes["gpu.example.com"].productName')


def test_single_equals_teaches_double_equals() -> None:
    [message] = _messages(_class("c", 'device.driver = "gpu.example.com"'))
    assert message.startswith("CEL compares with '==' ('=' is no CEL operator): compilation failed: "
                              "ERROR: <input>:1:15: Syntax error: token recognition error at: '= '")


def test_cost_error_shows_cel_gos_estimate() -> None:
    # a list literal's join() has no element size in cel-go: unbounded (issue 13's join item)
    [f] = [f for f in lint_text(_class("c", '["a", "b"].join("-") == "a-b"'), Options()) if f.rule == "DRA502"]
    assert "the worst-case estimate is 1,844,674,407,370,955,275 against a limit of 1,000,000" in f.message
    assert f.details == {"cost": 1844674407370955275}


def test_hints_ignore_the_slices_the_api_server_would_refuse() -> None:
    nics = (SLICE.replace("name: node-1\n", "name: node-1-nics\n", 1).replace("driver: gpu.example.com", "driver: nic.example.com")
            .replace("pool: {name: node-1,", "pool: {name: node-1-nics,"))
    reading = _class("gpus", GPUS_ONLY, READ)
    # both slices linted in the same run and accepted: the gpu slice publishes what the class reads
    assert _rules(reading + "---\n" + SLICE + "---\n" + nics, cluster=None) == []
    # refused (a device name that is no DNS label), the gpu slice publishes nothing the scheduler sees
    refused = SLICE.replace("name: gpu-0", "name: GPU_0")
    found = [(f.rule, f.message) for f in lint_text(reading + "---\n" + refused + "---\n" + nics, Options())
             if f.rule in ("DRA505", "DRA506")]
    assert [r for r, _ in found] == ["DRA505", "DRA505"]
    assert "gpu.example.com" in found[0][1]
    # the gpu slice may well publish the name: the warning says only the accepted slices lack it
    assert all(m.startswith("no accepted ResourceSlice publishes") for _, m in found)
    assert "(ResourceSlice node-1, refused at Kubernetes 1.37, is not counted)" in found[0][1]


def test_a_slice_the_release_does_not_serve_counts_as_refused_for_the_hints() -> None:
    nics = (SLICE.replace("name: node-1\n", "name: node-1-nics\n", 1)
            .replace("driver: gpu.example.com", "driver: nic.example.com")
            .replace("pool: {name: node-1,", "pool: {name: node-1-nics,").replace("resource.k8s.io/v1", "resource.k8s.io/v1beta2"))
    reading = _class("gpus", GPUS_ONLY, READ).replace("resource.k8s.io/v1", "resource.k8s.io/v1beta2")
    # v1 is served from 1.34: at 1.33 the gpu slice is refused (DRA801) and publishes nothing
    found = [f.message for f in lint_text(reading + "---\n" + SLICE + "---\n" + nics, Options(release=Release(33)))
             if f.rule == "DRA505"]
    assert found and all(m.startswith("no accepted ResourceSlice publishes") for m in found)
    assert "(ResourceSlice node-1, refused at Kubernetes 1.33, is not counted)" in found[0]


def test_an_unguarded_read_is_judged_against_the_accepted_devices_only() -> None:
    gpus = SLICE.split("  - name: nic-0\n")[0]
    lacking = (SLICE.replace("name: node-1\n", "name: node-2\n", 1).replace("nodeName: node-1", "nodeName: node-2")
               .replace("pool: {name: node-1,", "pool: {name: node-2,").split("  - name: gpu-0\n")[0]
               + "  - name: nic-0\n    attributes:\n      type: {string: nic}\n")
    text = _class("any", READ) + "---\n" + gpus + "---\n" + lacking
    assert [f.rule for f in lint_text(text, Options()) if f.rule == "DRA506"] == ["DRA506"]
    refused = lacking.replace("name: nic-0", "name: NIC_0")
    text = _class("any", READ) + "---\n" + gpus + "---\n" + refused
    assert [f.rule for f in lint_text(text, Options()) if f.rule == "DRA506"] == []
