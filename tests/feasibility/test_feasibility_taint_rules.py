"""DeviceTaintRules merged into devices per release: a rule without ``deviceSelector`` taints every
device up to 1.37 and none from 1.38 (kubernetes#141648); an empty selector taints every device."""
from __future__ import annotations

from dralint import source
from dralint.convert import to_canonical
from dralint.feasibility.taints import rule_taints
from dralint.manifest import NotAnObject, identify

SLICE = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-a-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
"""


def _objects(text: str) -> list:
    return [to_canonical(item) for doc in source.load_text(text, "x.yaml").documents
            for item in identify(doc, from_cluster=True) if not isinstance(item, NotAnObject)]


def _rule(selector: str) -> str:
    return ("apiVersion: resource.k8s.io/v1\nkind: DeviceTaintRule\nmetadata: {name: r}\nspec:\n"
            f"{selector}  taint: {{key: example.com/x, effect: NoSchedule}}\n")


def _tainted(selector: str, needs_selector: bool) -> list[str]:
    taints = rule_taints(_objects(_rule(selector)), _objects(SLICE), needs_selector=needs_selector)
    return sorted(name for (_, _, name), found in taints.items() if found)


def test_a_rule_without_selector_taints_every_device_before_1_38_and_none_from_it():
    assert _tainted("", needs_selector=False) == ["gpu-0", "gpu-1"]
    assert _tainted("", needs_selector=True) == []


def test_an_empty_selector_taints_every_device_on_every_release():
    for needs in (False, True):
        assert _tainted("  deviceSelector: {}\n", needs_selector=needs) == ["gpu-0", "gpu-1"]


def test_a_selector_naming_a_device_taints_only_it():
    assert _tainted("  deviceSelector: {device: gpu-1}\n", needs_selector=True) == ["gpu-1"]
