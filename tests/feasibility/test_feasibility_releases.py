"""Allocator behaviour that changed in 1.38, judged per release: a device shared by a live claim
cannot be taken exclusively once its slice stops allowing multiple allocations (kubernetes#140798),
and ``allocationMode: All`` seeing an unusable pool fails only that node (kubernetes#141898)."""
from __future__ import annotations

import pytest

from dralint.engine.run import lint_text
from dralint.kube.releases import Release, parse_version
from dralint.options import Options

CLASS = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: device.driver == "gpu.example.com"}
"""


def _slice(node: str, count: int, *devices: str, allow_multiple: bool = False) -> str:
    listed = "".join(f"  - name: {d}\n" + ("    allowMultipleAllocations: true\n" if allow_multiple else "")
                     for d in devices)
    return (f"---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: {node}-gpus}}\n"
            f"spec:\n  driver: gpu.example.com\n  nodeName: {node}\n"
            f"  pool: {{name: {node}, generation: 1, resourceSliceCount: {count}}}\n  devices:\n{listed}")


SHARER = """---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: sharer, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
status:
  allocation:
    devices:
      results:
      - request: gpu
        driver: gpu.example.com
        pool: node-a
        device: gpu-0
        shareID: 4f3b2a10-6c1d-4e8f-9a7b-2d5c8e1f0a3b
"""


def _claim(mode: str) -> str:
    exactly = "{deviceClassName: gpu.example.com, allocationMode: All}" if mode == "All" else \
        "{deviceClassName: gpu.example.com}"
    return ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: wants, namespace: default}\n"
            f"spec:\n  devices:\n    requests:\n    - name: gpu\n      exactly: {exactly}\n")


def _rules(minor: int, manifest: str, cluster: str) -> set[str]:
    options = Options(release=Release(parse_version(f"1.{minor}"), {}))
    return {f.rule for f in lint_text(manifest, options, cluster_text=cluster)}


@pytest.mark.parametrize(("minor", "expected"), [(37, set()), (38, {"DRA701"})])
def test_a_live_share_blocks_exclusive_use_from_1_38(minor, expected):
    # The slice no longer allows multiple allocations, while `sharer` still holds a share of gpu-0.
    assert _rules(minor, _claim("ExactCount"), CLASS + _slice("node-a", 1, "gpu-0") + SHARER) == expected


def test_a_device_still_allowing_multiple_allocations_is_shared_on_every_release():
    cluster = CLASS + _slice("node-a", 1, "gpu-0", allow_multiple=True) + SHARER
    for minor in (37, 38):
        assert _rules(minor, _claim("ExactCount"), cluster) == set()


def test_a_free_device_beside_the_shared_one_is_taken_on_every_release():
    cluster = CLASS + _slice("node-a", 1, "gpu-0", "gpu-1") + SHARER
    for minor in (37, 38):
        assert _rules(minor, _claim("ExactCount"), cluster) == set()


INCOMPLETE_THEN_COMPLETE = CLASS + _slice("node-a", 2, "gpu-0") + _slice("node-b", 1, "gpu-0")


@pytest.mark.parametrize(("minor", "expected"), [(35, {"DRA711"}), (37, {"DRA711"}), (38, set())])
def test_all_seeing_an_incomplete_pool_stops_the_pod_before_1_38_and_only_that_node_from_it(minor, expected):
    assert _rules(minor, _claim("All"), INCOMPLETE_THEN_COMPLETE) == expected


def test_all_with_only_an_incomplete_pool_cannot_be_allocated_from_1_38():
    assert _rules(38, _claim("All"), CLASS + _slice("node-a", 2, "gpu-0")) == {"DRA701"}


def test_exact_count_never_minds_an_incomplete_pool_elsewhere():
    for minor in (37, 38):
        assert _rules(minor, _claim("ExactCount"), INCOMPLETE_THEN_COMPLETE) == set()
