"""Node-allocatable resources of a ResourceSlice's devices: ``nodeAllocatableResources`` (a capacity
mapping or an overhead per node resource) and ``nodeAllocatableResourceMappings``, which replaces it."""
from __future__ import annotations

from typing import Any, Iterator

from ...paths import FieldPath
from ...problems import Problem
from .capacity import quantity_of

NODE_ALLOCATABLE_INVALID = "DRA424"

_NODE_ALLOCATABLE = frozenset({"cpu", "memory"})


def node_allocatable_problems(resources: Any, capacity: dict, path: FieldPath) -> Iterator[Problem]:
    """``nodeAllocatableResources``: known node resources, each with a mapping or an overhead."""
    if not isinstance(resources, dict):
        return
    for name, entry in resources.items():
        name = str(name)
        key_path = path.key(name)
        if name not in _NODE_ALLOCATABLE and not name.startswith("hugepages-"):
            yield Problem(NODE_ALLOCATABLE_INVALID, key_path,
                          f"{name!r} is not a node-allocatable resource name; use cpu, memory or hugepages-<size> "
                          "(API server: Invalid value)")
        entry = entry if isinstance(entry, dict) else {}
        mapping, overhead = entry.get("mapping"), entry.get("overhead")
        if mapping is None and overhead is None:
            yield Problem(NODE_ALLOCATABLE_INVALID, key_path,
                          "at least one of `mapping` or `overhead` must be set (API server: Required value)")
        if isinstance(mapping, dict):
            yield from _allocatable_mapping(mapping, capacity, key_path.child("mapping"))
        if isinstance(overhead, dict):
            yield from _allocatable_overhead(overhead, key_path.child("overhead"))


def node_allocatable_mapping_problems(mappings: Any, capacity: dict, path: FieldPath) -> Iterator[Problem]:
    """1.36's ``nodeAllocatableResourceMappings`` (renamed and reshaped in 1.37): per node resource an
    optional ``capacityKey`` naming a capacity of the device and a positive ``allocationMultiplier``.
    Node resources are core names (cpu, memory, pods, hugepages-…); extended resources are refused."""
    if not isinstance(mappings, dict):
        return
    for name, entry in mappings.items():
        name = str(name)
        key_path = path.key(name)
        if not name or ("/" in name and not name.split("/", 1)[0].endswith("kubernetes.io")):
            yield Problem(NODE_ALLOCATABLE_INVALID, key_path,
                          f"{name!r} is not a node-allocatable resource name; extended resources cannot be mapped: "
                          "use cpu, memory or hugepages-<size> (API server: Invalid value)")
        entry = entry if isinstance(entry, dict) else {}
        key = entry.get("capacityKey")
        if isinstance(key, str) and key not in capacity:
            yield Problem(NODE_ALLOCATABLE_INVALID, key_path.child("capacityKey"),
                          f"capacityKey {key!r} names no capacity of this device; use one of "
                          f"{', '.join(map(str, capacity)) or '(none defined)'} (API server: Not found)")
        multiplier = quantity_of(entry.get("allocationMultiplier"))
        if multiplier is not None and multiplier.value <= 0:
            yield Problem(NODE_ALLOCATABLE_INVALID, key_path.child("allocationMultiplier"),
                          f"allocationMultiplier is {multiplier}; it must be positive (API server: Invalid value)")


def _allocatable_mapping(mapping: dict, capacity: dict, path: FieldPath) -> Iterator[Problem]:
    key, multiplier = mapping.get("capacityKey"), mapping.get("capacityMultiplier")
    if key is not None:
        if key == "":
            yield Problem(NODE_ALLOCATABLE_INVALID, path.child("capacityKey"),
                          "capacityKey must not be an empty string (API server: Invalid value)")
        elif key not in capacity:
            yield Problem(NODE_ALLOCATABLE_INVALID, path.child("capacityKey"),
                          f"capacityKey {key!r} names no capacity of this device; use one of "
                          f"{', '.join(map(str, capacity)) or '(none defined)'} (API server: Not found)")
        if multiplier is None:
            yield Problem(NODE_ALLOCATABLE_INVALID, path.child("capacityMultiplier"),
                          "capacityMultiplier is required when capacityKey is set (API server: Required value)")
    elif multiplier is not None:
        yield Problem(NODE_ALLOCATABLE_INVALID, path.child("capacityKey"),
                      "capacityKey is required when capacityMultiplier is set: name the capacity the multiplier "
                      "applies to (API server: Required value)")
    for name in ("capacityMultiplier", "deviceMultiplier"):
        q = quantity_of(mapping.get(name))
        if q is not None and q.value <= 0 and (name == "deviceMultiplier" or key is not None):
            yield Problem(NODE_ALLOCATABLE_INVALID, path.child(name),
                          f"{name} is {q}; it must be positive (API server: Invalid value)")


def _allocatable_overhead(overhead: dict, path: FieldPath) -> Iterator[Problem]:
    if overhead.get("perPod") is None and overhead.get("perContainer") is None:
        yield Problem(NODE_ALLOCATABLE_INVALID, path,
                      "at least one of `perPod` or `perContainer` must be set (API server: Invalid value)")
        return
    for name in ("perPod", "perContainer"):
        q = quantity_of(overhead.get(name))
        if q is not None and q.value < 0:
            yield Problem(NODE_ALLOCATABLE_INVALID, path.child(name),
                          f"{name} is {q}; an overhead must be non-negative (API server: Invalid value)")
