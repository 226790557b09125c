"""A ResourceSlice's devices: how many fit in one slice, unique DNS-label names, and per device its
attributes and capacities (within their joint limit), taints, counter consumption, node selection,
binding conditions and node-allocatable resources.

An existing device whose capacities or taints did not change is not re-validated on update, as the
API server does.
"""
from __future__ import annotations

from typing import Any, Iterator

from ...paths import FieldPath
from ...problems import Problem
from ..base import CheckContext, p, too_many
from ..fields import (NODE_NAME_INVALID, binding_condition_problems, device_name_problems, node_name_problems,
                      taint_problems)
from ...kube.validation import is_dns1123_label
from ..nodeselector import ONE_TERM, node_selector_problems
from .allocatable import node_allocatable_mapping_problems, node_allocatable_problems
from .attributes import (ATTRIBUTE_LISTS, attribute_problems, key_errors, plainly_valid, qualified_key_problems,
                         value_count)
from .capacity import capacity_problems
from .counters import consumption_problems
from .pool import FLAG_FALSE

TOO_MANY_DEVICES = "DRA409"
DEVICE_NAME_DUPLICATE = "DRA411"
ATTRIBUTE_LIMIT = "DRA412"
TOO_MANY_TAINTS = "DRA417"
DEVICE_NODE_SELECTION_INVALID = "DRA422"


def _has_list_attribute(device: Any) -> bool:
    attrs = device.get("attributes") if isinstance(device, dict) else None
    return isinstance(attrs, dict) and any(
        isinstance(a, dict) and any(a.get(k) is not None for k in ATTRIBUTE_LISTS) for a in attrs.values())


def device_list_problems(ctx: CheckContext, spec: dict, old_spec: dict | None) -> Iterator[Problem]:
    """``spec.devices``: the count, unique names, and each device (against its old self on update)."""
    devices = spec.get("devices")
    if not isinstance(devices, list):
        return
    limit, why = ctx.limits.devices_per_slice, ""
    advanced = ctx.limits.devices_per_slice_advanced
    if advanced is not None:
        uses = [what for what, used in (
            ("taints", any(isinstance(d, dict) and d.get("taints") for d in devices)),
            ("consumesCounters", any(isinstance(d, dict) and d.get("consumesCounters") for d in devices)),
            ("list-typed attributes", ctx.gate("DRAListTypeAttributes") and any(map(_has_list_attribute, devices))),
        ) if used]
        if uses:
            limit, why = advanced, f" when a device uses {' or '.join(uses)}"
    problem = too_many(TOO_MANY_DEVICES, devices, limit, p("spec", "devices"), f"devices in one ResourceSlice{why}",
                       "split the pool into several slices and set `pool.resourceSliceCount` to their number")
    if problem is not None:
        yield problem
        return
    old_list = (old_spec or {}).get("devices")
    old_devices = {d["name"]: d for d in (old_list if isinstance(old_list, list) else [])
                   if isinstance(d, dict) and isinstance(d.get("name"), str)}
    per_device = spec.get("perDeviceNodeSelection") is True
    seen: set[str] = set()
    # Every device of a slice repeats the same attribute names: each is judged once per slice.
    bad_names: dict[str, bool] = {}
    for i, device in enumerate(devices):
        if not isinstance(device, dict):
            continue
        path = p("spec", "devices", i)
        name = device.get("name")
        yield from _device(ctx, device, old_devices.get(name) if isinstance(name, str) else None, path, per_device,
                           bad_names)
        if isinstance(name, str):
            if name in seen:
                yield Problem(DEVICE_NAME_DUPLICATE, path,
                              f"device name {name!r} is used twice in this slice; device names must be unique "
                              "within a pool (API server: Duplicate value)")
            seen.add(name)


def _device(ctx: CheckContext, device: dict, old: dict | None, path: FieldPath, per_device: bool,
            bad_names: dict[str, bool]) -> Iterator[Problem]:
    # A slice has thousands of attributes and most devices are valid: each part is first looked at
    # cheaply, and paths are only built for what has something to report.
    name = device.get("name")
    if not isinstance(name, str) or not name or is_dns1123_label(name):
        yield from device_name_problems(name, path.child("name"))
    attributes = given if isinstance(given := device.get("attributes"), dict) else {}
    capacity = given if isinstance(given := device.get("capacity"), dict) else {}
    total = len(attributes) + len(capacity)
    if total > ctx.limits.attributes_and_capacities:
        yield Problem(ATTRIBUTE_LIMIT, path,
                      f"{len(attributes)} attributes and {len(capacity)} capacities ({total} in total); at most "
                      f"{ctx.limits.attributes_and_capacities} are allowed per device: drop attributes nobody "
                      "selects on (API server: Invalid value)", details={"count": total,
                                                                         "limit": ctx.limits.attributes_and_capacities})
    max_len = ctx.limits.attribute_value_length
    values = 0
    attribute_reports: list[Problem] = []
    for key, attribute in attributes.items():
        key = str(key)
        bad = bad_names.get(key)
        if bad is None:
            bad = bad_names[key] = bool(key_errors(ctx, key))
        if bad:
            attribute_reports.extend(qualified_key_problems(ctx, key, path.child("attributes"), "attribute"))
        if plainly_valid(attribute, max_len):
            values += 1
        else:
            values += value_count(attribute)
            attribute_reports.extend(attribute_problems(attribute, path.child("attributes").key(key), ctx))
    if ctx.limits.attribute_values is not None and values > ctx.limits.attribute_values:
        yield Problem(ATTRIBUTE_LIMIT, path,
                      f"the attributes hold {values} values (each item of a list counts); at most "
                      f"{ctx.limits.attribute_values} are allowed per device: shorten the lists (API server: "
                      "Invalid value)", details={"count": values, "limit": ctx.limits.attribute_values})
    yield from attribute_reports
    # An existing device whose capacities did not change is not re-validated (as the server does).
    if capacity and (old is None or old.get("capacity") != device.get("capacity")
                     or not ctx.limits.capacity_range_guards):
        yield from capacity_problems(ctx, capacity, device.get("allowMultipleAllocations") is True, path.child("capacity"))
    taints = device.get("taints")
    if taints is not None and (old is None or old.get("taints") != taints):
        yield from _taints(ctx, taints, path.child("taints"))
    if device.get("consumesCounters") is not None:
        yield from consumption_problems(ctx, device.get("consumesCounters"), path.child("consumesCounters"))
    yield from _device_node_selection(ctx, device, path, per_device)
    if "bindingConditions" in device or "bindingFailureConditions" in device:
        yield from binding_condition_problems(ctx, device, path)
    if device.get("nodeAllocatableResources") is not None:
        yield from node_allocatable_problems(device.get("nodeAllocatableResources"), capacity,
                                     path.child("nodeAllocatableResources"))
    if device.get("nodeAllocatableResourceMappings") is not None:
        yield from node_allocatable_mapping_problems(device.get("nodeAllocatableResourceMappings"), capacity,
                                              path.child("nodeAllocatableResourceMappings"))


def _taints(ctx: CheckContext, taints: Any, path: FieldPath) -> Iterator[Problem]:
    if not isinstance(taints, list):
        return
    problem = too_many(TOO_MANY_TAINTS, taints, ctx.limits.taints_per_device, path, "taints on one device",
                       "keep the taints that matter, or use a DeviceTaintRule for fleet-wide taints")
    if problem is not None:
        yield problem
        return
    for i, taint in enumerate(taints):
        yield from taint_problems(taint, path.child(i), ctx.release)


def _device_node_selection(ctx: CheckContext, device: dict, path: FieldPath, per_device: bool) -> Iterator[Problem]:
    node_name, selector, all_nodes = device.get("nodeName"), device.get("nodeSelector"), device.get("allNodes")
    if not per_device:
        if node_name is not None or selector is not None or all_nodes is not None:
            yield Problem(DEVICE_NODE_SELECTION_INVALID, path,
                          "`nodeName`, `nodeSelector` and `allNodes` can only be set on a device if "
                          "`perDeviceNodeSelection: true` is set in the ResourceSlice spec; set it (instead of the "
                          "slice-level node selection) or remove them from the device (API server: Invalid value)")
        return
    chosen: list[str] = []
    if node_name == "":
        yield Problem(NODE_NAME_INVALID, path.child("nodeName"),
                      "nodeName must not be empty: name the node, or remove the field (API server: Invalid value)")
    elif isinstance(node_name, str):
        chosen.append("nodeName")
        yield from node_name_problems(node_name, path.child("nodeName"))
    if selector is not None:
        chosen.append("nodeSelector")
        one_term = ONE_TERM if ctx.limits.device_node_selector_one_term else None
        yield from node_selector_problems(selector, path.child("nodeSelector"), ctx.release, one_term_rule=one_term)
    if all_nodes is True:
        chosen.append("allNodes")
    elif all_nodes is False:
        yield Problem(FLAG_FALSE, path.child("allNodes"),
                      "`allNodes: false` is not allowed; it must be either unset or set to true (API server: "
                      "Invalid value)")
    if len(chosen) != 1:
        found = f"{', '.join(chosen)} are all set" if chosen else "none is set"
        yield Problem(DEVICE_NODE_SELECTION_INVALID, path,
                      f"with `perDeviceNodeSelection: true` every device must set exactly one of `nodeName`, "
                      f"`nodeSelector` or `allNodes`; {found} (API server: "
                      f"{'Required value' if not chosen else 'Invalid value'})")
