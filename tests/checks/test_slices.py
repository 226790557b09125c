"""ResourceSlice rules (dralint/checks/slices/), modelled on the API server's own test table."""
from __future__ import annotations

import textwrap

import pytest

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release, parse_version

GOOD_DEVICE = """\
- name: device-{i}
  attributes:
    int: {{int: 42}}
    string: {{string: hello world}}
    version: {{version: 1.2.3}}
    bool: {{bool: true}}
  capacity:
    memory: {{value: 1Gi}}
"""


def devices(n: int, extra: str = "") -> str:
    """``n`` devices like the Go table's testResourceSlice; ``extra`` is added to every device."""
    extra = textwrap.indent(textwrap.dedent(extra).strip("\n"), "  ") + "\n" if extra else ""
    return "".join(GOOD_DEVICE.format(i=i) + extra for i in range(n))


def slice_(devs: str | None = None, spec: str = "nodeName: worker\n", version: str = "v1", name: str = "foo") -> str:
    devs = devices(1) if devs is None else devs
    body = textwrap.indent(textwrap.dedent(spec).strip("\n"), "  ") + "\n" if spec.strip() else ""
    if devs:
        body += "  devices:\n" + textwrap.indent(textwrap.dedent(devs).strip("\n"), "  ") + "\n"
    return (f"apiVersion: resource.k8s.io/{version}\nkind: ResourceSlice\nmetadata:\n  name: {name}\n"
            f"spec:\n  driver: test.example.com\n  pool:\n    name: worker\n    resourceSliceCount: 1\n{body}")


def errors(text: str, kube: str = "1.37", old: str | None = None, **gates: bool) -> set[tuple[str, str]]:
    findings = lint_text(text, Options(release=Release(parse_version(kube), dict(gates))), old_text=old)
    return {(f.rule, f.field) for f in findings if f.severity.value == "error"}


def test_a_good_slice_with_128_devices_is_accepted():
    assert errors(slice_(devices(128))) == set()


@pytest.mark.parametrize("count, extra, limit_hit", [
    (129, "", True),
    (65, "taints: [{key: example.com/taint, effect: NoExecute}]", True),
    (64, "taints: [{key: example.com/taint, effect: NoExecute}]", False),
    (65, "consumesCounters: [{counterSet: counterset-0, counters: {memory: {value: 1Gi}}}]", True),
    (64, "consumesCounters: [{counterSet: counterset-0, counters: {memory: {value: 1Gi}}}]", False),
])
def test_device_limits(count, extra, limit_hit):
    expected = {("DRA409", "spec.devices")} if limit_hit else set()
    assert errors(slice_(devices(count, extra))) == expected


def test_the_advanced_limit_counts_list_attributes_only_with_their_gate():
    devs = devices(65).replace("    int: {int: 42}", "    int: {int: 42}\n    ints: {ints: [1, 2, 3]}", 1)
    assert errors(slice_(devs), DRAListTypeAttributes=True) == {("DRA409", "spec.devices")}


def test_the_64_device_cap_did_not_exist_before_135():
    devs = devices(65, "taints: [{key: example.com/taint, effect: NoExecute}]")
    assert errors(slice_(devs), kube="1.34", DRADeviceTaints=True) == set()


def test_too_many_devices_skips_the_devices_themselves():
    devs = devices(129).replace("name: device-3\n", "name: Device_3\n")
    assert errors(slice_(devs)) == {("DRA409", "spec.devices")}


def test_metadata_and_pool_rows():
    assert errors(slice_(name="'!@#$%^'")) == {("DRA121", "metadata.name")}
    bad_pool = slice_().replace("name: worker\n    resourceSliceCount: 1",
                                "name: " + "x/" * 126 + "xy\n    resourceSliceCount: 0\n    generation: -1")
    assert errors(bad_pool) == {("DRA401", "spec.pool.name"), ("DRA402", "spec.pool.resourceSliceCount"),
                                ("DRA402", "spec.pool.generation")}
    assert errors(slice_().replace("name: worker\n    resource", "name: ''\n    resource")) == {
        ("DRA401", "spec.pool.name")}
    assert errors(slice_(spec="nodeName: '!@#$%^'")) == {("DRA404", "spec.nodeName")}
    assert errors(slice_().replace("driver: test.example.com", "driver: '!@#$%^'")) == {("DRA400", "spec.driver")}


def test_a_253_character_pool_name_is_fine():
    assert errors(slice_().replace("name: worker\n    resource", f"name: {'x' * 253}\n    resource")) == set()


@pytest.mark.parametrize("spec, expected", [
    ("", {("DRA403", "spec")}),
    ("nodeName: worker\nallNodes: true", {("DRA403", "spec")}),
    ("nodeName: worker\nnodeSelector:\n  nodeSelectorTerms:\n  - matchFields:\n    - {key: metadata.name, operator: In, values: [worker]}",
     {("DRA403", "spec")}),
    ("nodeName: worker\nallNodes: false", {("DRA407", "spec.allNodes")}),
    ("nodeName: worker\nperDeviceNodeSelection: false", {("DRA407", "spec.perDeviceNodeSelection")}),
    ("nodeName: ''\nallNodes: true", {("DRA404", "spec.nodeName")}),
    ("nodeSelector: {}", {("DRA405", "spec.nodeSelector.nodeSelectorTerms")}),
    ("nodeSelector:\n  nodeSelectorTerms:\n  - matchExpressions: [{key: foo, operator: In, values: ['-1']}]",
     {("DRA405", "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]")}),
    ("allNodes: true", set()),
])
def test_node_selection(spec, expected):
    assert errors(slice_(spec=spec)) == expected


def test_node_selector_label_values_were_not_checked_before_132():
    spec = "nodeSelector:\n  nodeSelectorTerms:\n  - matchExpressions: [{key: foo, operator: In, values: ['-1']}]"
    assert errors(slice_("- name: gpu-0\n  basic: {}\n", spec=spec, version="v1alpha3"), kube="1.31") == set()


def test_flat_versions_spell_unset_as_empty_and_false():
    devs = "- name: gpu-0\n  basic: {}\n"
    assert errors(slice_(devs, spec="nodeName: ''\nallNodes: true", version="v1beta1")) == set()
    assert errors(slice_(devs, spec="nodeName: worker\nallNodes: false", version="v1beta1")) == set()


def test_per_device_node_selection_rows():
    spec = "perDeviceNodeSelection: true"
    assert errors(slice_(spec="nodeName: worker\nperDeviceNodeSelection: true")) == {
        ("DRA403", "spec"), ("DRA422", "spec.devices[0]")}
    assert errors(slice_(devices(1, "nodeName: ''\nallNodes: false"), spec=spec)) == {
        ("DRA404", "spec.devices[0].nodeName"), ("DRA407", "spec.devices[0].allNodes"), ("DRA422", "spec.devices[0]")}
    assert errors(slice_(devices(1, "nodeName: worker\nallNodes: true"), spec=spec)) == {("DRA422", "spec.devices[0]")}
    assert errors(slice_(devices(1, "nodeName: worker"))) == {("DRA422", "spec.devices[0]")}
    assert errors(slice_(devices(2, "nodeSelector: {nodeSelectorTerms: [{}, {}]}"), spec=spec)) == set()


def test_shared_counters_and_devices_are_exclusive_from_135():
    spec = "nodeName: worker\nsharedCounters: [{name: counterset, counters: {memory: {value: 1Gi}}}]"
    assert errors(slice_(spec=spec)) == {("DRA408", "spec")}
    assert errors(slice_(spec=spec, version="v1beta2"), kube="1.34", DRAPartitionableDevices=True) == set()


@pytest.mark.parametrize("counters, expected", [
    ("[{counters: {memory: {value: 1Gi}}}]", {("DRA421", "spec.sharedCounters[0].name")}),
    ("[{name: '!@#$%^', counters: {memory: {value: 1Gi}}}]", {("DRA421", "spec.sharedCounters[0].name")}),
    ("[{name: foo}]", {("DRA421", "spec.sharedCounters[0].counters")}),
    ("[{name: foo, counters: {'!@#$%^': {value: 1Gi}}}]", {("DRA421", "spec.sharedCounters[0].counters")}),
    ("[{name: foo, counters: {a: {value: 1}}}, {name: foo, counters: {a: {value: 1}}}]",
     {("DRA421", "spec.sharedCounters[1]")}),
    ("[" + ", ".join(f"{{name: s{i}, counters: {{a: {{value: 1}}}}}}" for i in range(9)) + "]",
     {("DRA421", "spec.sharedCounters")}),
    ("[" + ", ".join(f"{{name: s{i}, counters: {{a: {{value: 1}}}}}}" for i in range(8)) + "]", set()),
    ("[{name: foo, counters: {" + ", ".join(f"c{i}: {{value: 1}}" for i in range(33)) + "}}]",
     {("DRA421", "spec.sharedCounters[0].counters")}),
])
def test_shared_counters(counters, expected):
    assert errors(slice_("", spec=f"nodeName: worker\nsharedCounters: {counters}")) == expected


@pytest.mark.parametrize("consumption, expected", [
    ("[{counters: {memory: {value: 1Gi}}}]", {("DRA420", "spec.devices[0].consumesCounters[0].counterSet")}),
    ("[{counterSet: '!@#$%^', counters: {memory: {value: 1Gi}}}]",
     {("DRA420", "spec.devices[0].consumesCounters[0].counterSet")}),
    ("[{counterSet: a, counters: {m: {value: 1}}}, {counterSet: a, counters: {m: {value: 1}}}]",
     {("DRA420", "spec.devices[0].consumesCounters[1]")}),
    ("[{counterSet: a}]", {("DRA420", "spec.devices[0].consumesCounters[0].counters")}),
    ("[{counterSet: a, counters: {m: {value: 1}}}, {counterSet: b, counters: {m: {value: 1}}},"
     " {counterSet: c, counters: {m: {value: 1}}}]", {("DRA420", "spec.devices[0].consumesCounters")}),
    ("[{counterSet: a, counters: {" + ", ".join(f"c{i}: {{value: 1}}" for i in range(32)) + "}}]", set()),
    ("[{counterSet: a, counters: {" + ", ".join(f"c{i}: {{value: 1}}" for i in range(33)) + "}}]",
     {("DRA420", "spec.devices[0].consumesCounters[0].counters")}),
])
def test_counter_consumption(consumption, expected):
    assert errors(slice_(f"- name: gpu-0\n  consumesCounters: {consumption}\n")) == expected


def test_bad_attribute_rows():
    devs = ("- name: d0\n- name: d1\n  attributes: {'!@#$%^': {}}\n- name: d2\n  attributes: {foo: {string: x, version: 1.2.3}}\n"
            f"- name: d3\n  attributes: {{foo: {{version: {'x' * 65}}}}}\n- name: d4\n  attributes: {{foo: {{string: {'x' * 65}}}}}\n")
    assert errors(slice_(devs)) == {
        ("DRA413", "spec.devices[1].attributes"), ("DRA414", "spec.devices[1].attributes[!@#$%^]"),
        ("DRA414", "spec.devices[2].attributes[foo]"), ("DRA414", "spec.devices[3].attributes[foo].version"),
        ("DRA414", "spec.devices[4].attributes[foo].string")}


@pytest.mark.parametrize("key, ok", [
    ("x" * 32, True), ("x" * 63 + "/" + "y" * 32, True), ("." * 33, False), ("_" * 64 + "/y", False),
    ("x" * 64 + "/" + "y" * 33, False), ("/", False), ("a/b/c", False), ("gpu.example.com/memory-size", False),
])
def test_attribute_names(key, ok):
    expected = set() if ok else {("DRA413", "spec.devices[0].attributes")}
    assert errors(slice_(f"- name: gpu-0\n  attributes: {{'{key}': {{string: z}}}}\n"), "1.38") == expected


MULTI_SLASH = "- name: gpu-0\n  attributes: {'a.example.com/b/c': {string: z}}\n  capacity: {'a.example.com/m/n': {value: 1}}\n"


def test_names_with_several_slashes_are_refused_from_1_38_only():
    assert errors(slice_(MULTI_SLASH), "1.37") == set()
    assert errors(slice_(MULTI_SLASH), "1.38") == {("DRA413", "spec.devices[0].attributes"),
                                                    ("DRA413", "spec.devices[0].capacity")}


def test_names_with_several_slashes_are_kept_while_the_devices_are_unchanged():
    stored = slice_(MULTI_SLASH)
    assert errors(stored.replace("resourceSliceCount: 1", "resourceSliceCount: 1\n    generation: 2"), "1.38",
                  old=stored) == set()
    # Adding a device revalidates the others' attributes; their unchanged capacities stay unchecked.
    changed = slice_(MULTI_SLASH + "- name: gpu-1\n")
    assert errors(changed, "1.38", old=stored) == {("DRA413", "spec.devices[0].attributes")}


def test_list_attributes():
    good = ("- name: d0\n  attributes: {foo: {bools: [true]}}\n- name: d1\n  attributes: {foo: {ints: [1]}}\n"
            "- name: d2\n  attributes: {foo: {strings: [x]}}\n- name: d3\n  attributes: {foo: {versions: [1.2.3]}}\n")
    assert errors(slice_(good), DRAListTypeAttributes=True) == set()
    bad = ("- name: d0\n  attributes: {foo: {ints: [1], bools: [true]}}\n"
           f"- name: d1\n  attributes: {{foo: {{strings: [{'x' * 65}]}}}}\n"
           "- name: d2\n  attributes: {foo: {versions: [v1]}}\n- name: d3\n  attributes: {foo: {bools: []}}\n")
    assert errors(slice_(bad), DRAListTypeAttributes=True) == {
        ("DRA414", "spec.devices[0].attributes[foo]"), ("DRA414", "spec.devices[1].attributes[foo].strings[0]"),
        ("DRA414", "spec.devices[2].attributes[foo].versions[0]"), ("DRA414", "spec.devices[3].attributes[foo].bools")}


def test_attributes_and_capacities_together_at_most_32():
    attrs = ", ".join(f"attr_{i}: {{string: x}}" for i in range(32))
    assert errors(slice_(f"- name: d0\n  attributes: {{{attrs}}}\n")) == set()
    assert errors(slice_(f"- name: d0\n  attributes: {{{attrs}}}\n  capacity: {{cap: {{value: 1Gi}}}}\n")) == {
        ("DRA412", "spec.devices[0]")}


def test_attribute_values_at_most_48_from_136():
    attrs = "list_attr_0: {strings: [" + ", ".join(["x"] * 18) + "]}, " + ", ".join(
        f"list_attr_{i}: {{strings: [x]}}" for i in range(1, 31))
    assert errors(slice_(f"- name: d0\n  attributes: {{{attrs}}}\n"), DRAListTypeAttributes=True) == set()
    more = attrs + ", extra_attr: {int: 1}"
    assert errors(slice_(f"- name: d0\n  attributes: {{{more}}}\n"), DRAListTypeAttributes=True) == {
        ("DRA412", "spec.devices[0]")}


def test_device_names():
    assert errors(slice_("- name: gpu-0\n- name: '!@#$%^'\n")) == {("DRA410", "spec.devices[1].name")}
    assert errors(slice_("- name: gpu-0\n- name: gpu-0\n")) == {("DRA411", "spec.devices[1]")}


def test_taint_rows():
    taints = ("[{key: example.com/taint, effect: NoExecute}, {key: taint, value: tainted, effect: NoSchedule,"
              " timeAdded: '2025-06-01T10:00:00Z'}, {}, {key: '!@#$%^', value: '!@#$%^', effect: some-other-effect}]")
    assert errors(slice_(f"- name: gpu-0\n  taints: {taints}\n")) == {
        ("DRA418", "spec.devices[0].taints[2].key"), ("DRA419", "spec.devices[0].taints[2].effect"),
        ("DRA418", "spec.devices[0].taints[3].key"), ("DRA418", "spec.devices[0].taints[3].value"),
        ("DRA419", "spec.devices[0].taints[3].effect")}


def test_taint_limits_and_effects_per_release():
    def taints(n: int, effect: str = "NoExecute") -> str:
        return "- name: gpu-0\n  taints: [" + ", ".join(f"{{key: example.com/t{i}, effect: {effect}}}"
                                                         for i in range(n)) + "]\n"
    assert errors(slice_(taints(17))) == {("DRA417", "spec.devices[0].taints")}
    assert errors(slice_(taints(16))) == set()
    assert errors(slice_(taints(5), version="v1beta2"), kube="1.34", DRADeviceTaints=True) == {
        ("DRA417", "spec.devices[0].taints")}
    assert errors(slice_(taints(1, "None"))) == set()
    assert errors(slice_(taints(1, "None"), version="v1beta2"), kube="1.34", DRADeviceTaints=True) == {
        ("DRA419", "spec.devices[0].taints[0].effect")}


def test_binding_condition_rows():
    def device(conditions: str, failures: str) -> str:
        return slice_(f"- name: gpu-0\n  bindsToNode: true\n  bindingConditions: {conditions}\n"
                      f"  bindingFailureConditions: {failures}\n")
    path = "spec.devices[0]."
    assert errors(device("[example.com/condition1, condition2]", "[example.com/condition3, condition4]")) == set()
    assert errors(device("[c1, c2, c3, c4, c5]", "[c6, c7]")) == {("DRA423", path + "bindingConditions")}
    assert errors(device("[c1, c2]", "[c3, c4, c5, c6, c7]")) == {("DRA423", path + "bindingFailureConditions")}
    assert errors(device("[c1, c2!]", "[c3]")) == {("DRA423", path + "bindingConditions[1]")}
    assert errors(device("[]", "[c1]")) == {("DRA423", path + "bindingConditions")}
    assert errors(device("[c1]", "[]")) == {("DRA423", path + "bindingFailureConditions")}
    assert errors(device("[c1, c1]", "[c2]")) == {("DRA423", path + "bindingConditions[1]")}
    assert errors(device("[c1, c2]", "[c1, c3]")) == {("DRA423", path + "bindingFailureConditions[0]")}


def policy_device(policy: str, value: str = "100", shared: bool = True) -> str:
    share = "  allowMultipleAllocations: true\n" if shared else ""
    return slice_(f"- name: gpu-0\n{share}  capacity:\n    a:\n      value: '{value}'\n      requestPolicy: {policy}\n")


@pytest.mark.parametrize("policy, value, fractional, expected", [
    ("{default: '10', validValues: ['5', '10', '100']}", "100", False, set()),
    ("{default: '10', validValues: ['5', '10', '100']}", "-1", False,
     {"validValues[0]", "validValues[1]", "validValues[2]"}),
    ("{default: '-1', validValues: ['5', '10', '100']}", "100", False, {"validValues"}),
    ("{default: '10'}", "100", False, set()),
    ("{default: '10', validValues: ['5', '10', '100'], validRange: {min: '10'}}", "100", False, {""}),
    ("{default: '10', validRange: {min: '1'}}", "100", False, set()),
    ("{default: 10.1, validValues: [5.1, 10.1, '100']}", "100", False, set()),
    ("{default: 1.05, validRange: {min: 1.1}}", "100", False, {"validRange.default"}),
    ("{default: '10', validValues: [9.9, '10', '100']}", "100", False, {"validValues[1]"}),
    ("{default: '10', validValues: [9.9, '10', '100']}", "100", True, set()),
    ("{default: '9223372036854775807', validRange: {min: '0', step: '1', max: '9223372036854775807'}}",
     "9223372036854775807", False, set()),
    ("{default: '9223372036854775807', validRange: {min: 0m, step: 1m, max: '9223372036854775807'}}",
     "9223372036854775807", False, set()),
    ("{default: '9223372036854775807', validRange: {min: 0m, step: 1m, max: '9223372036854775807'}}",
     "9223372036854775807", True, {"validRange.default", "validRange.max"}),
    ("{default: 10Mi, validRange: {min: 1Mi, max: 100Mi, step: '0'}}", "1Gi", False, {"validRange.step"}),
    ("{default: 10Mi, validRange: {min: 1Mi, max: 100Mi, step: -1Mi}}", "1Gi", False, {"validRange.step"}),
    ("{default: 10Mi, validRange: {min: 1Mi, max: 100Mi, step: 1Mi}}", "1Gi", False, set()),
    ("{default: 10Mi, validRange: {max: 100Mi}}", "1Gi", False, {"validRange.min"}),
    ("{validValues: ['1']}", "1Gi", False, {"default"}),
    ("{default: '5', validValues: ['10', '5']}", "100", False, {"validValues[1]"}),
    ("{default: '1', validValues: ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11']}", "100", False,
     {"validValues"}),
])
def test_request_policy_arithmetic(policy, value, fractional, expected):
    gates = {"DRAFractionalCapacityRange": True} if fractional else {}
    base = "spec.devices[0].capacity[a].requestPolicy"
    want = {("DRA416", f"{base}.{e}" if e else base) for e in expected}
    assert errors(policy_device(policy, value), **gates) == want


def test_request_policy_needs_allow_multiple_allocations():
    assert errors(policy_device("{default: 1Mi, validRange: {min: 1Mi}}", "1Gi", shared=False)) == {
        ("DRA415", "spec.devices[0].capacity[a].requestPolicy")}


NODE_ALLOCATABLE = "capacity: {dra.example.com/cpu: {value: '100'}, dra.example.com/memory: {value: 100Gi}}"


@pytest.mark.parametrize("resources, expected", [
    ("{cpu: {mapping: {capacityKey: dra.example.com/cpu, capacityMultiplier: '1'}}}", set()),
    ("{cpu: {mapping: {capacityKey: '', capacityMultiplier: '1'}}}", {"[cpu].mapping.capacityKey"}),
    ("{cpu: {mapping: {capacityKey: nonexistent, capacityMultiplier: '1'}}}", {"[cpu].mapping.capacityKey"}),
    ("{cpu: {mapping: {deviceMultiplier: '-1'}}}", {"[cpu].mapping.deviceMultiplier"}),
    ("{cpu: {mapping: {deviceMultiplier: '0'}}}", {"[cpu].mapping.deviceMultiplier"}),
    ("{cpu: {mapping: {capacityKey: dra.example.com/cpu, capacityMultiplier: '0'}}}",
     {"[cpu].mapping.capacityMultiplier"}),
    ("{cpu: {mapping: {capacityKey: dra.example.com/cpu}}}", {"[cpu].mapping.capacityMultiplier"}),
    ("{cpu: {mapping: {capacityMultiplier: '1'}}}", {"[cpu].mapping.capacityKey"}),
    ("{dra.example.com/gpu: {overhead: {perPod: '1'}}}", {"[dra.example.com/gpu]"}),
    ("{ephemeral-storage: {overhead: {perPod: 2Gi}}}", {"[ephemeral-storage]"}),
    ("{hugepages-2Mi: {overhead: {perPod: 2Mi}}}", set()),
    ("{memory: {overhead: {}}}", {"[memory].overhead"}),
    ("{memory: {overhead: {perPod: -1Gi}}}", {"[memory].overhead.perPod"}),
    ("{memory: {overhead: {perPod: 1Gi, perContainer: 500Mi}}}", set()),
    ("{cpu: {}}", {"[cpu]"}),
])
def test_node_allocatable_resources(resources, expected):
    text = slice_(f"- name: gpu-0\n  {NODE_ALLOCATABLE}\n  nodeAllocatableResources: {resources}\n")
    base = "spec.devices[0].nodeAllocatableResources"
    assert errors(text, DRANodeAllocatableResources=True) == {("DRA424", base + e) for e in expected}


def test_update_rules():
    old = slice_(devices(1))
    assert errors(slice_(devices(1), spec="nodeName: worker-updated"), old=old) == {("DRA425", "spec.nodeName")}
    assert errors(old.replace("test.example.com", "test2.example.com"), old=old) == {("DRA425", "spec.driver")}
    tainted = devices(1, "taints: [{key: unhealthy-power, effect: NoExecute}, {key: unhealthy-mem, effect: bad}]")
    assert errors(slice_(tainted), old=old) == {("DRA419", "spec.devices[0].taints[1].effect")}
    # Unchanged taints of an existing device are not re-validated; a new device's are.
    stored = slice_(tainted)
    changed = slice_(tainted.replace("bool: {bool: true}", "bool: {bool: true}\n    foo: {string: bar}"))
    assert errors(changed, old=stored) == set()
    added = slice_(tainted + tainted.replace("device-0", "device-0-other"))
    assert errors(added, old=stored) == {("DRA419", "spec.devices[1].taints[1].effect")}


def test_v1beta1_paths_are_the_users_own():
    text = slice_("- name: gpu-0\n  basic:\n    attributes: {model: {string: x, version: 1.2.3}}\n", version="v1beta1")
    assert errors(text) == {("DRA414", "spec.devices[0].basic.attributes[model]")}


def test_uppercase_driver_is_a_warning_only():
    findings = lint_text(slice_().replace("test.example.com", "Test.Example.com"), Options())
    assert [(f.rule, f.severity.value) for f in findings] == [("DRA426", "warning")]


def test_messages_name_the_limit_and_the_value_found():
    findings = lint_text(slice_(devices(130)), Options())
    assert "130 devices" in findings[0].message and "at most 128" in findings[0].message


@pytest.mark.parametrize("operations, expected", [
    ("['*', NodePrepareResources]", set()),
    ("[NodePrepareResources, NodeUnprepareResources]", set()),
    ("[NodeUnprepareResources]", set()),
    ("[NodePrepareResources]", {"spec.skipNodeOperations"}),
    ("[NodeUnprepareResources, Reboot]", {"spec.skipNodeOperations[1]"}),
    ("[NodeUnprepareResources, NodeUnprepareResources]", {"spec.skipNodeOperations[1]"}),
])
def test_skip_node_operations(operations, expected):
    text = slice_(spec=f"nodeName: worker\nskipNodeOperations: {operations}")
    assert errors(text, DRAOptionalNodeOperations=True) == {("DRA427", e) for e in expected}


TWO_TERMS = ("- name: gpu-0\n  nodeSelector:\n    nodeSelectorTerms:\n"
             "    - matchExpressions: [{key: rack, operator: In, values: [r1]}]\n"
             "    - matchExpressions: [{key: rack, operator: In, values: [r2]}]\n")


def test_a_device_node_selector_with_two_terms_is_refused_from_1_38_unless_the_devices_are_unchanged():
    stored = slice_(TWO_TERMS, "perDeviceNodeSelection: true\n")
    where = ("DRA406", "spec.devices[0].nodeSelector.nodeSelectorTerms")
    assert errors(stored, "1.37") == set()
    assert errors(stored, "1.38") == {where}
    relabelled = stored.replace("resourceSliceCount: 1", "resourceSliceCount: 1\n    generation: 2")
    assert errors(relabelled, "1.38", old=stored) == set()
    assert errors(slice_(TWO_TERMS + "- name: gpu-1\n  allNodes: true\n", "perDeviceNodeSelection: true\n"), "1.38",
                  old=stored) == {where}
