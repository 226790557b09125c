"""Equal device entries of a file's ResourceSlices are shared as they are read, and read as written."""
from __future__ import annotations

from dralint.source import load_text

SLICES = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: a}
spec:
  driver: gpu.example.com
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  nodeName: n1
  devices:
  - name: d0
    attributes: {model: {string: a100}, ready: {bool: true}, index: {int: 1}}
    capacity: {memory: {value: 16Gi}}
  - name: d1
    attributes: {model: {string: a100}, ready: {bool: true}, index: {int: 1}, other: {int: 2}}
    capacity: {memory: {value: 16Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: b}
spec:
  driver: gpu.example.com
  pool: {name: q, generation: 1, resourceSliceCount: 1}
  nodeName: n2
  devices:
  - name: d0
    attributes: {model: {string: a100}, index: {bool: true}}
    capacity: {memory: {value: 16Gi}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {model: a100}
"""


def _devices(text: str) -> list[dict]:
    loaded = load_text(text, "slices.yaml")
    return [d for doc in loaded.documents if doc.value.get("kind") == "ResourceSlice"
            for d in doc.value["spec"]["devices"]]


def test_equal_entries_are_one_object_across_devices_and_slices() -> None:
    first, second, third = _devices(SLICES)
    assert first["attributes"]["model"] is second["attributes"]["model"] is third["attributes"]["model"]
    assert first["capacity"]["memory"] is third["capacity"]["memory"]
    assert first["attributes"]["ready"] is second["attributes"]["ready"]


def test_entries_that_differ_in_type_or_key_stay_apart() -> None:
    first, second, third = _devices(SLICES)
    # {"int": 1} and {"bool": true} are equal in Python (1 == True) but not to the API server.
    assert third["attributes"]["index"] == {"bool": True}
    assert first["attributes"]["index"] == {"int": 1}
    assert first["attributes"]["index"] is not third["attributes"]["index"]
    assert second["attributes"]["other"] == {"int": 2}


def test_values_read_as_written() -> None:
    first, second, third = _devices(SLICES)
    assert first == {"name": "d0", "attributes": {"model": {"string": "a100"}, "ready": {"bool": True},
                                                  "index": {"int": 1}},
                     "capacity": {"memory": {"value": "16Gi"}}}
    assert third["attributes"] == {"model": {"string": "a100"}, "index": {"bool": True}}
