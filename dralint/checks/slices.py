"""ResourceSlice (v1alpha3 of 1.31 onwards, canonical v1 shape): what drivers publish.

The API server checks the slice as a whole (driver, pool, exactly one way of selecting nodes,
counter sets in their own slice from 1.35, at most 128 devices — 64 once a device uses taints,
counters or list attributes), then every device: a DNS-label name unique in the slice, at most
32 attributes plus capacities (48 attribute values from 1.36), qualified attribute names, one
value per attribute, semver versions, string lengths, consumable-capacity request policies with
exact Quantity arithmetic, taints, counter consumption, per-device node selection, binding
conditions and node-allocatable resources. On update the driver, pool name and node name are
immutable, and unchanged capacities and taints of an existing device are not re-validated.

Paths are canonical v1 (``spec.devices[i].attributes``); the engine maps them back to a v1beta1
user's ``spec.devices[i].basic.attributes``.

Rules: DRA400 driver-name-invalid, DRA401 pool-name-invalid, DRA402 pool-counts-invalid,
DRA403 slice-node-selection-exclusive, DRA404 node-name-invalid, DRA407 node-selection-flag-false,
DRA408 slice-counters-devices-exclusive, DRA409 slice-too-many-devices, DRA410 device-name-invalid,
DRA411 device-name-duplicate, DRA412 device-attribute-capacity-limit, DRA413
device-attribute-name-invalid, DRA414 device-attribute-value-invalid, DRA415
capacity-request-policy-forbidden, DRA416 capacity-request-policy-invalid, DRA417
device-too-many-taints, DRA418 taint-invalid, DRA419 taint-effect-invalid, DRA420
device-counter-consumption-invalid, DRA421 shared-counters-invalid, DRA422
device-node-selection-invalid, DRA423 device-binding-conditions-invalid, DRA424
node-allocatable-resources-invalid, DRA425 slice-field-immutable, DRA426 driver-name-uppercase, DRA427
skip-node-operations-invalid;
node selectors via nodeselector.py (DRA405, DRA406).
"""
from __future__ import annotations

import re
from typing import Any, Generator, Iterable, Iterator

from ..paths import FieldPath
from ..kube.quantity import Quantity, QuantityError
from ..kube.releases import Release
from ..kube.shapes import FLAT_VERSIONS
from .base import CheckContext, map_key, p, too_many, too_many_problem
from ..problems import Problem
from ..kube.validation import is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value
from .formats import driver_name_errors, is_semver, pool_name_errors, qualified_attribute_errors
from .nodeselector import ONE_TERM, node_selector_problems

KINDS: frozenset[str] = frozenset({"ResourceSlice"})

DRIVER_INVALID = "DRA400"
POOL_NAME_INVALID = "DRA401"
POOL_COUNTS_INVALID = "DRA402"
NODE_SELECTION_EXCLUSIVE = "DRA403"
NODE_NAME_INVALID = "DRA404"
FLAG_FALSE = "DRA407"
COUNTERS_DEVICES_EXCLUSIVE = "DRA408"
TOO_MANY_DEVICES = "DRA409"
DEVICE_NAME_INVALID = "DRA410"
DEVICE_NAME_DUPLICATE = "DRA411"
ATTRIBUTE_LIMIT = "DRA412"
ATTRIBUTE_NAME_INVALID = "DRA413"
ATTRIBUTE_VALUE_INVALID = "DRA414"
REQUEST_POLICY_FORBIDDEN = "DRA415"
REQUEST_POLICY_INVALID = "DRA416"
TOO_MANY_TAINTS = "DRA417"
TAINT_INVALID = "DRA418"
TAINT_EFFECT_INVALID = "DRA419"
COUNTER_CONSUMPTION_INVALID = "DRA420"
SHARED_COUNTERS_INVALID = "DRA421"
DEVICE_NODE_SELECTION_INVALID = "DRA422"
BINDING_CONDITIONS_INVALID = "DRA423"
NODE_ALLOCATABLE_INVALID = "DRA424"
FIELD_IMMUTABLE = "DRA425"
DRIVER_UPPERCASE = "DRA426"
SKIP_NODE_OPERATIONS_INVALID = "DRA427"
PARTITION_TYPE_INVALID = "DRA428"

# Release facts that are not limits (kubernetes/api types history, docs/dra-api.md §10, §15).
_PER_DEVICE_NODE_SELECTION_SINCE = 33   # perDeviceNodeSelection joins the exactly-one-of set
_EFFECT_NONE_SINCE = 35                 # taint effect "None"
_COUNTERS_XOR_DEVICES_SINCE = 35        # sharedCounters and devices in separate slices
_ERROR_WORDS = {"Required": "Required value", "TooLong": "Too long", "Invalid": "Invalid value"}
_ATTRIBUTE_SCALARS = ("bool", "int", "string", "version")
_ATTRIBUTE_LISTS = ("bools", "ints", "strings", "versions")
_NODE_ALLOCATABLE = frozenset({"cpu", "memory"})
_SKIP_PREPARE, _SKIP_UNPREPARE, _SKIP_ALL = "NodePrepareResources", "NodeUnprepareResources", "*"


def check(ctx: CheckContext) -> Iterable[Problem]:
    """Problems of one ResourceSlice (create, or update against ``ctx.old``)."""
    if ctx.obj.version in ("v1alpha1", "v1alpha2"):
        return  # the 1.30 shape (namedResources) is legacy.py's
    spec = ctx.obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    old_spec = ctx.old.get("spec") if ctx.is_update and ctx.old is not None else None
    old_spec = old_spec if isinstance(old_spec, dict) else None
    flat = ctx.obj.version in FLAT_VERSIONS

    driver = spec.get("driver", "")
    if isinstance(driver, str):
        yield from driver_problems(driver, p("spec", "driver"))
        if driver != driver.lower() and not driver_name_errors(driver):
            yield Problem(DRIVER_UPPERCASE, p("spec", "driver"),
                          f"driver {driver!r} has upper-case letters; driver names should be lowercase (the API "
                          "server accepts them but warns, and other components compare names exactly): use "
                          f"{driver.lower()!r}")
    yield from _pool(spec.get("pool"))
    if old_spec is not None:
        yield from _immutable(spec, old_spec, flat)
    yield from _node_selection(spec, ctx.release, flat)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None \
            and ctx.release.at_least(_COUNTERS_XOR_DEVICES_SINCE):
        yield Problem(COUNTERS_DEVICES_EXCLUSIVE, p("spec"),
                      "only one of `sharedCounters` or `devices` is allowed in a ResourceSlice since Kubernetes "
                      "1.35: publish the counter sets in their own slice of the same pool (raise "
                      "`pool.resourceSliceCount` accordingly) (API server: Invalid value)")
    yield from _devices(ctx, spec, old_spec)
    yield from _shared_counters(ctx, spec.get("sharedCounters"))
    if not ctx.release.at_least(_COUNTERS_XOR_DEVICES_SINCE):
        yield from _counters_in_one_slice(ctx, spec)
    yield from skip_node_operations_problems(spec.get("skipNodeOperations"), p("spec", "skipNodeOperations"))
    if spec.get("partitionTypeAttribute") is not None:
        yield from _partition_type_attribute(ctx, spec)


def skip_node_operations_problems(operations: Any, path: FieldPath) -> Iterator[Problem]:
    """``skipNodeOperations`` (DRAOptionalNodeOperations): a set of known operations; Prepare needs Unprepare."""
    if not isinstance(operations, list):
        return
    known = (_SKIP_PREPARE, _SKIP_UNPREPARE, _SKIP_ALL)
    seen: set[Any] = set()
    for i, op in enumerate(operations):
        if not isinstance(op, str) or op not in known:
            yield Problem(SKIP_NODE_OPERATIONS_INVALID, path.child(i),
                          f"{op!r} is not an operation that can be skipped; use {', '.join(map(repr, known))} "
                          "(API server: Unsupported value)")
        elif op in seen:
            yield Problem(SKIP_NODE_OPERATIONS_INVALID, path.child(i),
                          f"{op!r} is listed twice (API server: Duplicate value)")
        seen.add(op)
    if _SKIP_PREPARE in seen and _SKIP_UNPREPARE not in seen and _SKIP_ALL not in seen:
        yield Problem(SKIP_NODE_OPERATIONS_INVALID, path,
                      "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped: the "
                      "kubelet would unprepare devices it never prepared; add NodeUnprepareResources (or use '*') "
                      "(API server: Invalid value)")


def driver_problems(driver: str, path: FieldPath) -> Iterator[Problem]:
    """A driver name: required, at most 63 characters, a DNS subdomain (upper case tolerated)."""
    for kind, msg in driver_name_errors(driver):
        if kind == "Required":
            yield Problem(DRIVER_INVALID, path,
                          "a driver name is required: the DNS subdomain the driver registers, e.g. gpu.example.com "
                          "(API server: Required value)")
        else:
            yield Problem(DRIVER_INVALID, path,
                          f"driver {driver!r} is not a valid driver name: {msg}; use the DNS subdomain the driver "
                          f"registers, e.g. gpu.example.com (API server: {_ERROR_WORDS[kind]})")


def pool_name_problems(pool: str, path: FieldPath) -> Iterator[Problem]:
    """A pool name: required, at most 253 characters, DNS subdomains separated by '/'."""
    for kind, msg in pool_name_errors(pool):
        if kind == "Required":
            yield Problem(POOL_NAME_INVALID, path,
                          "a pool name is required (drivers usually use the node name for node-local devices) "
                          "(API server: Required value)")
        else:
            yield Problem(POOL_NAME_INVALID, path,
                          f"pool name {pool!r} is not valid: {msg}; a pool name is one or more DNS subdomains "
                          f"separated by '/' (API server: {_ERROR_WORDS[kind]})")


def node_name_problems(name: str, path: FieldPath) -> Iterator[Problem]:
    """A node name must be a DNS subdomain."""
    for msg in is_dns1123_subdomain(name):
        yield Problem(NODE_NAME_INVALID, path,
                      f"{name!r} is not a valid node name: {msg} (API server: Invalid value)")


def device_name_problems(name: Any, path: FieldPath) -> Iterator[Problem]:
    """A device name must be a DNS label (an empty or missing name is Invalid, not Required)."""
    name = name if isinstance(name, str) else ""
    if not name:
        yield Problem(DEVICE_NAME_INVALID, path,
                      "a device name is required: a DNS label unique within the pool, e.g. gpu-0 (API server: "
                      "Invalid value)")
        return
    for msg in is_dns1123_label(name):
        yield Problem(DEVICE_NAME_INVALID, path,
                      f"device name {name!r} is not a DNS label: {msg}; use lower-case letters, digits and '-' "
                      "(at most 63 characters), e.g. gpu-0 (API server: Invalid value)")


def taint_problems(taint: Any, path: FieldPath, release: Release, *, check_effect: bool = True) -> Iterator[Problem]:
    """One device taint (slices and DeviceTaintRules): label key, label value, a known effect.

    ``check_effect`` is False on an update that leaves the effect as it was (DeviceTaintRule).
    """
    if not isinstance(taint, dict):
        return
    key = taint.get("key", "")
    if key == "" or key is None:
        yield Problem(TAINT_INVALID, path.child("key"),
                      "a taint needs a key: a label key such as gpu.example.com/unhealthy (API server: Invalid value)")
    elif isinstance(key, str):
        for msg in is_qualified_name(key):
            yield Problem(TAINT_INVALID, path.child("key"),
                          f"taint key {key!r} is not a valid label key: {msg}; use e.g. gpu.example.com/unhealthy "
                          "(API server: Invalid value)")
    value = taint.get("value", "")
    if isinstance(value, str) and value:
        for msg in is_valid_label_value(value):
            yield Problem(TAINT_INVALID, path.child("value"),
                          f"taint value {value!r} is not a valid label value: {msg} (API server: Invalid value)")
    if not check_effect:
        return
    effects = ["NoExecute", "NoSchedule"] + (["None"] if release.at_least(_EFFECT_NONE_SINCE) else [])
    effect = taint.get("effect")
    if effect in (None, ""):
        yield Problem(TAINT_EFFECT_INVALID, path.child("effect"),
                      f"a taint needs an effect: one of {', '.join(effects)} (API server: Required value)")
    elif effect not in effects:
        hint = " (`None` exists from Kubernetes 1.35)" if effect == "None" else ""
        yield Problem(TAINT_EFFECT_INVALID, path.child("effect"),
                      f"taint effect {effect!r} is not supported in Kubernetes {release.version}; use one of "
                      f"{', '.join(effects)}{hint} (API server: Unsupported value)")


def _pool(pool: Any) -> Iterator[Problem]:
    pool = pool if isinstance(pool, dict) else {}
    name = pool.get("name", "")
    if isinstance(name, str):
        yield from pool_name_problems(name, p("spec", "pool", "name"))
    count = pool.get("resourceSliceCount", 0)
    if isinstance(count, int) and not isinstance(count, bool) and count <= 0:
        yield Problem(POOL_COUNTS_INVALID, p("spec", "pool", "resourceSliceCount"),
                      f"resourceSliceCount is {count}; it must be greater than zero: the number of slices the "
                      "pool consists of (usually 1) (API server: Invalid value)")
    generation = pool.get("generation", 0)
    if isinstance(generation, int) and not isinstance(generation, bool) and generation < 0:
        yield Problem(POOL_COUNTS_INVALID, p("spec", "pool", "generation"),
                      f"pool generation is {generation}; it must be greater than or equal to zero (API server: "
                      "Invalid value)")


def _immutable(spec: dict, old: dict, flat: bool) -> Iterator[Problem]:
    def node_name(s: dict) -> Any:
        value = s.get("nodeName")
        return None if flat and value == "" else value

    pairs = (
        (p("spec", "driver"), spec.get("driver"), old.get("driver"), "driver"),
        (p("spec", "pool", "name"), _get(spec, "pool", "name"), _get(old, "pool", "name"), "pool name"),
        (p("spec", "nodeName"), node_name(spec), node_name(old), "node name"),
    )
    for path, new, before, what in pairs:
        if new != before:
            yield Problem(FIELD_IMMUTABLE, path,
                          f"the {what} of a ResourceSlice is immutable ({before!r} → {new!r}); delete the slice and "
                          "create a new one instead (API server: Invalid value, \"field is immutable\")")


def _get(d: dict, *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _node_selection(spec: dict, release: Release, flat: bool) -> Iterator[Problem]:
    chosen: list[str] = []
    node_name = spec.get("nodeName")
    if node_name is not None and not (flat and node_name == ""):
        if node_name == "":
            yield Problem(NODE_NAME_INVALID, p("spec", "nodeName"),
                          "nodeName is an empty string; it must be either unset or the name of a node (API server: "
                          "Invalid value, \"must be either unset or set to a non-empty string\")")
        elif isinstance(node_name, str):
            chosen.append("nodeName")
            yield from node_name_problems(node_name, p("spec", "nodeName"))
    selector = spec.get("nodeSelector")
    if selector is not None:
        chosen.append("nodeSelector")
        yield from node_selector_problems(selector, p("spec", "nodeSelector"), release, one_term_rule=ONE_TERM)
    for flag in ("allNodes", "perDeviceNodeSelection"):
        value = spec.get(flag)
        if value is True:
            chosen.append(flag)
        elif value is False and not (flat and flag == "allNodes"):
            yield Problem(FLAG_FALSE, p("spec", flag),
                          f"`{flag}: false` is not allowed; it must be either unset or set to true (remove it) "
                          "(API server: Invalid value)")
    fields = ["nodeName", "nodeSelector", "allNodes"]
    if release.at_least(_PER_DEVICE_NODE_SELECTION_SINCE):
        fields.append("perDeviceNodeSelection")
    listed = ", ".join(f"`{f}`" for f in fields)
    if not chosen:
        yield Problem(NODE_SELECTION_EXCLUSIVE, p("spec"),
                      f"a ResourceSlice must say which nodes can use its devices: set exactly one of {listed} "
                      "(`allNodes: true` for network-attached devices) (API server: Required value)")
    elif len(chosen) > 1:
        yield Problem(NODE_SELECTION_EXCLUSIVE, p("spec"),
                      f"{', '.join(chosen)} are all set; exactly one of {listed} is allowed: keep the one that "
                      "describes where the devices are reachable (API server: Invalid value)",
                      details={"set": chosen})


def _has_list_attribute(device: Any) -> bool:
    attrs = device.get("attributes") if isinstance(device, dict) else None
    return isinstance(attrs, dict) and any(
        isinstance(a, dict) and any(a.get(k) is not None for k in _ATTRIBUTE_LISTS) for a in attrs.values())


def _devices(ctx: CheckContext, spec: dict, old_spec: dict | None) -> Iterator[Problem]:
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
    for i, device in enumerate(devices):
        if not isinstance(device, dict):
            continue
        path = p("spec", "devices", i)
        name = device.get("name")
        yield from _device(ctx, device, old_devices.get(name) if isinstance(name, str) else None, path, per_device)
        if isinstance(name, str):
            if name in seen:
                yield Problem(DEVICE_NAME_DUPLICATE, path,
                              f"device name {name!r} is used twice in this slice; device names must be unique "
                              "within a pool (API server: Duplicate value)")
            seen.add(name)


def _device(ctx: CheckContext, device: dict, old: dict | None, path: FieldPath, per_device: bool) -> Iterator[Problem]:
    # A slice has thousands of attributes and most devices are valid: each part is first looked at
    # cheaply, and paths are only built for what has something to report.
    name = device.get("name")
    if not isinstance(name, str) or not name or is_dns1123_label(name):
        yield from device_name_problems(name, path.child("name"))
    attributes = device.get("attributes") if isinstance(device.get("attributes"), dict) else {}
    capacity = device.get("capacity") if isinstance(device.get("capacity"), dict) else {}
    total = len(attributes) + len(capacity)
    if total > ctx.limits.attributes_and_capacities:
        yield Problem(ATTRIBUTE_LIMIT, path,
                      f"{len(attributes)} attributes and {len(capacity)} capacities ({total} in total); at most "
                      f"{ctx.limits.attributes_and_capacities} are allowed per device: drop attributes nobody "
                      "selects on (API server: Invalid value)", details={"count": total,
                                                                         "limit": ctx.limits.attributes_and_capacities})
    max_len = ctx.limits.attribute_value_length
    values = 0
    attribute_problems: list[Problem] = []
    for key, attribute in attributes.items():
        key = str(key)
        if _key_errors(ctx, key):
            attribute_problems.extend(_qualified_key(ctx, key, path.child("attributes"), "attribute"))
        if _plainly_valid(attribute, max_len):
            values += 1
        else:
            values += _value_count(attribute)
            attribute_problems.extend(_attribute(attribute, path.child("attributes").key(key), ctx))
    if ctx.limits.attribute_values is not None and values > ctx.limits.attribute_values:
        yield Problem(ATTRIBUTE_LIMIT, path,
                      f"the attributes hold {values} values (each item of a list counts); at most "
                      f"{ctx.limits.attribute_values} are allowed per device: shorten the lists (API server: "
                      "Invalid value)", details={"count": values, "limit": ctx.limits.attribute_values})
    yield from attribute_problems
    # An existing device whose capacities did not change is not re-validated (as the server does).
    if capacity and (old is None or old.get("capacity") != device.get("capacity")
                     or not ctx.limits.capacity_range_guards):
        yield from _capacities(ctx, capacity, device.get("allowMultipleAllocations") is True, path.child("capacity"))
    taints = device.get("taints")
    if taints is not None and (old is None or old.get("taints") != taints):
        yield from _taints(ctx, taints, path.child("taints"))
    if device.get("consumesCounters") is not None:
        yield from _consumes_counters(ctx, device.get("consumesCounters"), path.child("consumesCounters"))
    yield from _device_node_selection(ctx, device, path, per_device)
    if "bindingConditions" in device or "bindingFailureConditions" in device:
        yield from binding_condition_problems(ctx, device, path)
    if device.get("nodeAllocatableResources") is not None:
        yield from _node_allocatable(device.get("nodeAllocatableResources"), capacity,
                                     path.child("nodeAllocatableResources"))
    if device.get("nodeAllocatableResourceMappings") is not None:
        yield from _node_allocatable_mappings(device.get("nodeAllocatableResourceMappings"), capacity,
                                              path.child("nodeAllocatableResourceMappings"))


def _capacities(ctx: CheckContext, capacity: dict, shared: bool, path: FieldPath) -> Iterator[Problem]:
    for key, cap in capacity.items():
        key = str(key)
        if _key_errors(ctx, key):
            yield from _qualified_key(ctx, key, path, "capacity")
        policy = cap.get("requestPolicy") if isinstance(cap, dict) else None
        if policy is None:
            continue
        policy_path = path.key(key).child("requestPolicy")
        if not shared:
            yield Problem(REQUEST_POLICY_FORBIDDEN, policy_path,
                          "a `requestPolicy` only applies to devices that can be allocated several times: set "
                          "`allowMultipleAllocations: true` on the device, or remove the policy (API server: "
                          "Forbidden, \"allowMultipleAllocations must be true\")")
        elif isinstance(policy, dict):
            yield from _request_policy(ctx, cap.get("value"), policy, policy_path)


def _plainly_valid(attribute: Any, max_len: int) -> bool:
    """True for an attribute with exactly one valid int, bool, short string or version (the common case)."""
    if type(attribute) is not dict or len(attribute) != 1:
        return False
    for kind, value in attribute.items():
        if kind == "string":  # a character takes at most 4 bytes in UTF-8: encode only near the limit
            return isinstance(value, str) and (len(value) * 4 <= max_len or len(value.encode()) <= max_len)
        if kind == "int" or kind == "bool":
            return value is not None
        if kind == "version":
            return isinstance(value, str) and len(value) * 4 <= max_len and is_semver(value)
    return False


def _value_count(attribute: Any) -> int:
    if not isinstance(attribute, dict):
        return 1
    lists = sum(len(attribute[k]) for k in _ATTRIBUTE_LISTS if isinstance(attribute.get(k), list))
    return lists or 1


# validateMap's key length for attributes and capacities: domain (63) + '/' + identifier (32).
_MAX_KEY_LENGTH = 63 + 1 + 32


def _key_errors(ctx: CheckContext, key: str) -> list[tuple[str, str]]:
    """An attribute or capacity key's errors; the map's own length check also catches the names with
    several slashes that 1.33-1.36 otherwise accept unchecked."""
    errors = qualified_attribute_errors(key, multi_slash_ok=ctx.limits.multi_slash_names)
    if not errors and len(key) > _MAX_KEY_LENGTH:
        errors = [("TooLong", f"may not be more than {_MAX_KEY_LENGTH} bytes")]
    return errors


def _qualified_key(ctx: CheckContext, key: str, map_path: FieldPath, what: str) -> Iterator[Problem]:
    # The server reports the map (the finding's field); the position is the bad key itself.
    key_path = map_key(ctx.limits, map_path, key, _MAX_KEY_LENGTH)
    for kind, msg in _key_errors(ctx, key):
        yield Problem(ATTRIBUTE_NAME_INVALID, key_path,
                      f"{what} name {key!r} is not valid: {msg}; use a C identifier of at most 32 characters, "
                      f"optionally prefixed by a domain ({_name_hint(key)}) (API server: {_ERROR_WORDS[kind]})",
                      at=map_path.child(key))


def _name_hint(key: str) -> str:
    """A valid spelling of ``key`` (``gpu.example.com/pcie-root`` → ``gpu.example.com/pcieRoot``), and
    for a PCIe root the standard attribute every driver can publish."""
    domain, _, name = key.rpartition("/")
    words = [w for w in re.split(r"[^A-Za-z0-9_]+", name) if w]
    fixed = (words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:])) if words else "model"
    hint = f"e.g. {domain + '/' if domain else ''}{fixed}"
    if fixed.lower() == "pcieroot":
        hint += "; for the PCIe root, use the standard attribute `resource.kubernetes.io/pcieRoot`"
    return hint


def _attribute(attribute: Any, path: FieldPath, ctx: CheckContext) -> Iterator[Problem]:
    if not isinstance(attribute, dict):
        return
    max_len = ctx.limits.attribute_value_length
    present = [k for k in _ATTRIBUTE_SCALARS + _ATTRIBUTE_LISTS if attribute.get(k) is not None]
    string = attribute.get("string")
    if isinstance(string, str) and len(string.encode()) > max_len:
        yield _too_long_value(path.child("string"), len(string.encode()), max_len)
    version = attribute.get("version")
    if isinstance(version, str):
        yield from _version(version, path.child("version"), max_len)
    for name in _ATTRIBUTE_LISTS:
        items = attribute.get(name)
        if items is None or not isinstance(items, list):
            continue
        if not items:
            yield Problem(ATTRIBUTE_VALUE_INVALID, path.child(name),
                          f"`{name}` is an empty list; a list attribute must have at least one value, or be left out "
                          "(API server: Invalid value, \"must not be empty if specified\")")
        for j, item in enumerate(items):
            if name == "strings" and isinstance(item, str) and len(item.encode()) > max_len:
                yield _too_long_value(path.child(name, j), len(item.encode()), max_len)
            elif name == "versions" and isinstance(item, str):
                yield from _version(item, path.child(name, j), max_len)
    if len(present) != 1:
        kinds = ", ".join(_ATTRIBUTE_SCALARS + (_ATTRIBUTE_LISTS if ctx.gate("DRAListTypeAttributes") else ()))
        found = f"found {', '.join(present)}" if present else "found none"
        yield Problem(ATTRIBUTE_VALUE_INVALID, path,
                      f"an attribute holds exactly one value ({found}); set exactly one of {kinds} (API server: "
                      "Invalid value, \"exactly one value must be specified\")")


def _too_long_value(path: FieldPath, size: int, limit: int) -> Problem:
    return Problem(ATTRIBUTE_VALUE_INVALID, path,
                   f"the value is {size} bytes long; at most {limit} bytes are allowed for attribute strings and "
                   "versions: shorten it (API server: Too long)", details={"size": size, "limit": limit})


def _version(value: str, path: FieldPath, limit: int) -> Iterator[Problem]:
    if not is_semver(value):
        hint = f" (drop the leading 'v': {value[1:]!r})" if value[:1] in "vV" and is_semver(value[1:]) else ""
        yield Problem(ATTRIBUTE_VALUE_INVALID, path,
                      f"version {value!r} is not a semantic version (semver.org 2.0.0: MAJOR.MINOR.PATCH with "
                      f"optional -prerelease and +build){hint}; for free text use `string` (API server: Invalid value)")
    if len(value.encode()) > limit:
        yield _too_long_value(path, len(value.encode()), limit)


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


def _counter_map(ctx: CheckContext, rule: str, counters: Any, limit: int | None, path: FieldPath,
                 owner: str) -> Iterator[Problem]:
    if counters is None or counters == {}:
        yield Problem(rule, path, f"`counters` is required and must not be empty in {owner} (API server: Required "
                                  "value)")
        return
    if not isinstance(counters, dict):
        return
    problem = too_many(rule, counters, limit, path, f"counters in {owner}",
                       "model fewer counters, or split them into several counter sets")
    if problem is not None:
        yield problem
        return
    for key in counters:
        for msg in is_dns1123_label(str(key)):
            yield Problem(rule, map_key(ctx.limits, path, str(key), 63),
                          f"counter name {str(key)!r} is not a DNS label: {msg} (API server: Invalid value)")


def _consumes_counters(ctx: CheckContext, entries: Any, path: FieldPath) -> Iterator[Problem]:
    if not isinstance(entries, list):
        return
    problem = too_many(COUNTER_CONSUMPTION_INVALID, entries, ctx.limits.consumptions_per_device, path,
                       "counter sets consumed by one device", "model the device with fewer counter sets")
    if problem is not None:
        yield problem
        return
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        entry_path = path.child(i)
        counter_set = entry.get("counterSet", "")
        if not counter_set:
            yield Problem(COUNTER_CONSUMPTION_INVALID, entry_path.child("counterSet"),
                          "`counterSet` is required: the name of a counter set in the pool's `sharedCounters` "
                          "(API server: Required value)")
        elif isinstance(counter_set, str):
            for msg in is_dns1123_label(counter_set):
                yield Problem(COUNTER_CONSUMPTION_INVALID, entry_path.child("counterSet"),
                              f"counter set name {counter_set!r} is not a DNS label: {msg} (API server: Invalid value)")
        yield from _counter_map(ctx, COUNTER_CONSUMPTION_INVALID, entry.get("counters"), ctx.limits.counters_per_consumption,
                                entry_path.child("counters"), "a counter consumption")
        if isinstance(entry.get("compatibilityGroups"), list):
            yield from _compatibility_groups(entry["compatibilityGroups"], entry_path.child("compatibilityGroups"))
        if isinstance(counter_set, str):
            if counter_set in seen:
                yield Problem(COUNTER_CONSUMPTION_INVALID, entry_path,
                              f"counter set {counter_set!r} is consumed twice by this device; merge the entries "
                              "(API server: Duplicate value)")
            seen.add(counter_set)


def _count_counters(entries: Any) -> int:
    """Counters in a list of counter sets or consumptions (each with a ``counters`` map)."""
    return sum(len(e["counters"]) for e in entries if isinstance(e, dict) and isinstance(e.get("counters"), dict)) \
        if isinstance(entries, list) else 0


def _counters_in_one_slice(ctx: CheckContext, spec: dict) -> Iterator[Problem]:
    """1.33-1.34: devices consume counters of their own slice, within totals per device and per slice."""
    sets = spec.get("sharedCounters")
    defined = {s["name"]: set(map(str, s["counters"])) if isinstance(s.get("counters"), dict) else set()
               for s in (sets if isinstance(sets, list) else ()) if isinstance(s, dict) and isinstance(s.get("name"), str)}
    limits = ctx.limits
    total_shared = _count_counters(sets)
    if limits.shared_counters_per_slice is not None and total_shared > limits.shared_counters_per_slice:
        yield Problem(SHARED_COUNTERS_INVALID, p("spec", "sharedCounters"),
                      f"the counter sets hold {total_shared} counters; at most {limits.shared_counters_per_slice} are "
                      f"allowed in one ResourceSlice in Kubernetes {ctx.release.version} (API server: Invalid value)",
                      details={"count": total_shared, "limit": limits.shared_counters_per_slice})
    devices = spec.get("devices")
    total_consumed = 0
    for i, device in enumerate(devices if isinstance(devices, list) else ()):
        entries = device.get("consumesCounters") if isinstance(device, dict) else None
        if not isinstance(entries, list):
            continue
        consumed = _count_counters(entries)
        total_consumed += consumed
        if limits.counters_per_device is not None and consumed > limits.counters_per_device:
            yield Problem(COUNTER_CONSUMPTION_INVALID, p("spec", "devices", i),
                          f"the device consumes {consumed} counters; at most {limits.counters_per_device} are allowed "
                          f"per device in Kubernetes {ctx.release.version} (API server: Invalid value)")
        for j, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("counterSet"), str) or not entry["counterSet"]:
                continue
            name = entry["counterSet"]
            where = p("spec", "devices", i, "consumesCounters", j)
            if name not in defined:
                yield Problem(COUNTER_CONSUMPTION_INVALID, where.child("counterSet"),
                              f"counter set {name!r} is not defined in this slice's `sharedCounters`; in Kubernetes "
                              f"{ctx.release.version} a device can only consume counters of its own slice (API "
                              "server: Invalid value)")
                continue
            counters = entry.get("counters")
            for counter in (counters if isinstance(counters, dict) else ()):
                if str(counter) not in defined[name]:
                    yield Problem(COUNTER_CONSUMPTION_INVALID, where.child("counters"),
                                  f"counter {str(counter)!r} is not defined in counter set {name!r} of this slice "
                                  "(API server: Invalid value)")
    if limits.device_counters_per_slice is not None and total_consumed > limits.device_counters_per_slice:
        yield Problem(COUNTER_CONSUMPTION_INVALID, p("spec", "devices"),
                      f"the devices consume {total_consumed} counters in total; at most "
                      f"{limits.device_counters_per_slice} are allowed in one ResourceSlice in Kubernetes "
                      f"{ctx.release.version} (API server: Invalid value)")


def _partition_type_attribute(ctx: CheckContext, spec: dict) -> Iterator[Problem]:
    """``spec.partitionTypeAttribute`` (1.37, DRAPartitionableDevicesType): the string attribute that
    names each partition's type, so ResourcePoolStatusRequests can summarise partitions by type.

    Validation read at kubernetes/kubernetes pkg/apis/resource/validation/validation.go
    @ 009801d930e2e3c8b3671a3ec28e31a2f64865ac; the type's declarative tags forbid the field while
    the gate is off (it is not dropped).
    """
    name, path = spec["partitionTypeAttribute"], p("spec", "partitionTypeAttribute")
    if not ctx.gate("DRAPartitionableDevicesType"):
        yield Problem(PARTITION_TYPE_INVALID, path,
                      f"`partitionTypeAttribute` needs feature gate DRAPartitionableDevicesType, which is off in "
                      f"Kubernetes {ctx.release.version} (alpha); enable it (and pass --feature-gates "
                      "DRAPartitionableDevicesType=true) or remove the field (API server: Forbidden)")
        return
    if not isinstance(name, str):
        return
    errors = qualified_attribute_errors(name, fully_qualified=True, multi_slash_ok=ctx.limits.multi_slash_names)
    for _, msg in errors[:1]:
        yield Problem(PARTITION_TYPE_INVALID, path, f"{name!r} is not a fully qualified attribute name: {msg} (API "
                                                    "server: Invalid value)")
    if errors:
        return
    devices = spec.get("devices")
    consuming = [(i, d) for i, d in enumerate(devices if isinstance(devices, list) else ())
                 if isinstance(d, dict) and d.get("consumesCounters")]
    if not consuming:
        yield Problem(PARTITION_TYPE_INVALID, path,
                      "`partitionTypeAttribute` is only allowed in a slice whose devices consume counters "
                      "(partitions); remove it (API server: Invalid value)")
        return
    domain, _, short = name.partition("/")
    driver = spec.get("driver")
    for i, device in consuming:
        attributes = device.get("attributes") if isinstance(device.get("attributes"), dict) else {}
        # A bare name stands for the driver's own domain.
        key = name if name in attributes else short if domain == driver and short in attributes else None
        where = p("spec", "devices", i, "attributes").key(name)
        if key is None:
            yield Problem(PARTITION_TYPE_INVALID, where,
                          f"this device consumes counters, so it must carry the partition type attribute {name!r} "
                          "(API server: Required value)")
        elif not (isinstance(attributes[key], dict) and isinstance(attributes[key].get("string"), str)):
            yield Problem(PARTITION_TYPE_INVALID, p("spec", "devices", i, "attributes").key(key),
                          f"the partition type attribute {name!r} must be a string attribute (API server: Invalid "
                          "value)")


MAX_COMPATIBILITY_GROUPS = 2


def _compatibility_groups(groups: list, path: FieldPath) -> Iterator[Problem]:
    """``compatibilityGroups`` of a counter consumption (1.37, DRADeviceCompatibilityGroups): at most
    two unique DNS labels."""
    if len(groups) > MAX_COMPATIBILITY_GROUPS:
        yield too_many_problem(COUNTER_CONSUMPTION_INVALID, path, len(groups), MAX_COMPATIBILITY_GROUPS,
                               "compatibility groups")
        return
    seen: set[str] = set()
    for k, group in enumerate(groups):
        if not isinstance(group, str):
            continue
        for msg in is_dns1123_label(group):
            yield Problem(COUNTER_CONSUMPTION_INVALID, path.child(k),
                          f"compatibility group {group!r} is not a DNS label: {msg} (API server: Invalid value)")
        if group in seen:
            yield Problem(COUNTER_CONSUMPTION_INVALID, path.child(k),
                          f"compatibility group {group!r} is listed twice (API server: Duplicate value)")
        seen.add(group)


def _shared_counters(ctx: CheckContext, sets: Any) -> Iterator[Problem]:
    if not isinstance(sets, list):
        return
    path = p("spec", "sharedCounters")
    problem = too_many(SHARED_COUNTERS_INVALID, sets, ctx.limits.counter_sets_per_slice, path,
                       "counter sets in one ResourceSlice", "spread the counter sets over several slices of the pool")
    if problem is not None:
        yield problem
        return
    seen: set[str] = set()
    for i, counter_set in enumerate(sets):
        if not isinstance(counter_set, dict):
            continue
        set_path = path.child(i)
        name = counter_set.get("name", "")
        if not name:
            yield Problem(SHARED_COUNTERS_INVALID, set_path.child("name"),
                          "a counter set needs a `name` (a DNS label devices refer to in `consumesCounters`) "
                          "(API server: Required value)")
        elif isinstance(name, str):
            for msg in is_dns1123_label(name):
                yield Problem(SHARED_COUNTERS_INVALID, set_path.child("name"),
                              f"counter set name {name!r} is not a DNS label: {msg} (API server: Invalid value)")
        yield from _counter_map(ctx, SHARED_COUNTERS_INVALID, counter_set.get("counters"), ctx.limits.counters_per_set,
                                set_path.child("counters"), "a counter set")
        if isinstance(name, str):
            if name in seen:
                yield Problem(SHARED_COUNTERS_INVALID, set_path,
                              f"counter set name {name!r} is used twice in this slice (API server: Duplicate value)")
            seen.add(name)


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
        yield from node_selector_problems(selector, path.child("nodeSelector"), ctx.release)
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


def binding_condition_problems(ctx: CheckContext, holder: dict, path: FieldPath,
                               rule: str = BINDING_CONDITIONS_INVALID) -> Iterator[Problem]:
    """``bindingConditions`` / ``bindingFailureConditions`` of a device or an allocation result."""
    conditions = holder.get("bindingConditions")
    failures = holder.get("bindingFailureConditions")
    conditions = conditions if isinstance(conditions, list) else []
    failures = failures if isinstance(failures, list) else []
    limit = ctx.limits.binding_conditions
    for name, items in (("bindingConditions", conditions), ("bindingFailureConditions", failures)):
        problem = too_many(rule, items, limit, path.child(name), f"{name}",
                           "keep the conditions the scheduler really has to wait for")
        if problem is not None:
            yield problem
            continue
        for j, cond in enumerate(items):
            if isinstance(cond, str):
                for msg in is_qualified_name(cond):
                    yield Problem(rule, path.child(name, j),
                                  f"condition type {cond!r} is not a qualified name: {msg} (API server: Invalid value)")
    for name, items in (("bindingConditions", conditions), ("bindingFailureConditions", failures)):
        seen: set[str] = set()
        for j, cond in enumerate(items):
            if not isinstance(cond, str):
                continue
            if cond in seen:
                yield Problem(rule, path.child(name, j),
                              f"condition {cond!r} is listed twice in `{name}` (API server: Duplicate value)")
            seen.add(cond)
            if name == "bindingFailureConditions" and cond in conditions:
                yield Problem(rule, path.child(name, j),
                              f"condition {cond!r} is both a binding condition and a binding failure condition; "
                              "a condition signals either success or failure (API server: Invalid value)")
    if conditions and not failures:
        yield Problem(rule, path.child("bindingFailureConditions"),
                      "`bindingConditions` need `bindingFailureConditions` too, so that a failed attachment can be "
                      "reported and the pod rescheduled (API server: Invalid value)")
    if failures and not conditions:
        yield Problem(rule, path.child("bindingConditions"),
                      "`bindingFailureConditions` are only meaningful with `bindingConditions` (API server: Invalid "
                      "value)")


def _node_allocatable(resources: Any, capacity: dict, path: FieldPath) -> Iterator[Problem]:
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


def _node_allocatable_mappings(mappings: Any, capacity: dict, path: FieldPath) -> Iterator[Problem]:
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
        multiplier = _quantity(entry.get("allocationMultiplier"))
        if multiplier is not None and multiplier.value <= 0:
            yield Problem(NODE_ALLOCATABLE_INVALID, key_path.child("allocationMultiplier"),
                          f"allocationMultiplier is {multiplier}; it must be positive (API server: Invalid value)")


def _quantity(value: Any) -> Quantity | None:
    """The Quantity of a YAML value, or None when it is not one (the schema stage reports that)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return Quantity.parse(value)
    except (QuantityError, TypeError):
        return None


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
        q = _quantity(mapping.get(name))
        if q is not None and q.value <= 0 and (name == "deviceMultiplier" or key is not None):
            yield Problem(NODE_ALLOCATABLE_INVALID, path.child(name),
                          f"{name} is {q}; it must be positive (API server: Invalid value)")


def _allocatable_overhead(overhead: dict, path: FieldPath) -> Iterator[Problem]:
    if overhead.get("perPod") is None and overhead.get("perContainer") is None:
        yield Problem(NODE_ALLOCATABLE_INVALID, path,
                      "at least one of `perPod` or `perContainer` must be set (API server: Invalid value)")
        return
    for name in ("perPod", "perContainer"):
        q = _quantity(overhead.get(name))
        if q is not None and q.value < 0:
            yield Problem(NODE_ALLOCATABLE_INVALID, path.child(name),
                          f"{name} is {q}; an overhead must be non-negative (API server: Invalid value)")


# --- consumable capacity: requestPolicy (validateRequestPolicy and friends) -----------------------------

_MAX_INT64 = 2**63 - 1


def _request_policy(ctx: CheckContext, raw_value: Any, policy: dict, path: FieldPath) -> Iterator[Problem]:
    capacity = _quantity(raw_value)
    if capacity is None:
        return
    values, valid_range = policy.get("validValues"), policy.get("validRange")
    has_values = isinstance(values, list) and len(values) > 0
    if has_values and valid_range is not None:
        yield Problem(REQUEST_POLICY_INVALID, path,
                      "a request policy has either `validValues` or `validRange`, not both: keep one (API server: "
                      "Forbidden, \"exactly one policy can be specified\")")
        return
    if not has_values and not isinstance(valid_range, dict):
        return
    default = _quantity(policy.get("default"))
    if policy.get("default") is None:
        what = "validValues" if has_values else "validRange"
        yield Problem(REQUEST_POLICY_INVALID, path.child("default"),
                      f"`default` is required when {what} is defined: the amount a request gets when it asks for "
                      "none (API server: Required value)")
        return
    if default is None:
        return
    fractional = ctx.gate("DRAFractionalCapacityRange")
    if has_values:
        yield from _valid_values(ctx, default, capacity, values, path.child("validValues"), fractional)
    elif ctx.limits.capacity_range_guards:
        yield from _valid_range(default, capacity, valid_range, path.child("validRange"), fractional)
    else:
        yield from _unguarded_range(default, capacity, valid_range, path.child("validRange"))


def _valid_values(ctx: CheckContext, default: Quantity, capacity: Quantity, raw: list, path: FieldPath,
                  fractional: bool) -> Iterator[Problem]:
    options = [_quantity(v) for v in raw]
    if any(o is None for o in options):
        return
    qs: list[Quantity] = [o for o in options if o is not None]
    for i in range(len(qs) - 1):
        if qs[i] > qs[i + 1]:
            yield Problem(REQUEST_POLICY_INVALID, path.child(i + 1),
                          f"{qs[i + 1]} comes after {qs[i]}; validValues must be sorted in ascending order "
                          "(API server: Invalid value)")
    problem = too_many(REQUEST_POLICY_INVALID, qs, ctx.limits.valid_values, path, "valid values",
                       "offer fewer options, or use a validRange with a step")
    if problem is not None:
        yield problem
        return
    seen: set[Any] = set()
    for j, q in enumerate(qs):
        if q > capacity:
            yield Problem(REQUEST_POLICY_INVALID, path.child(j),
                          f"option {q} is larger than the capacity value {capacity}; no device could ever provide "
                          "it (API server: Invalid value)")
        # Without fractional support the server compares options as integers, rounded up.
        key = q.value if fractional else _ceil(q.value)
        if key in seen:
            yield Problem(REQUEST_POLICY_INVALID, path.child(j),
                          f"option {q} repeats an earlier value{'' if fractional else ' (compared as whole numbers)'}"
                          " (API server: Duplicate value)")
        seen.add(key)
    if default not in qs:
        yield Problem(REQUEST_POLICY_INVALID, path,
                      f"the default {default} is not one of the validValues; add it or change the default (API "
                      "server: Invalid value, \"default value is not valid according to the requestPolicy\")")


def _range_bounds(default: Quantity, capacity: Quantity, rng: dict, path: FieldPath,
                  at_bound: bool) -> Generator[Problem, None, tuple[Quantity, Quantity | None, Quantity | None] | None]:
    """The checks of min and max every release makes; returns (min, max, step), or None when they
    cannot be read. The default's errors are at `default`, or with ``at_bound`` (1.34-1.36) at the
    bound it breaks."""
    low = _quantity(rng.get("min"))
    if rng.get("min") is None:
        yield Problem(REQUEST_POLICY_INVALID, path.child("min"),
                      "`min` is required when validRange is defined (API server: Required value)")
        return None
    high, step = _quantity(rng.get("max")), _quantity(rng.get("step"))
    if low is None or (rng.get("max") is not None and high is None) or (rng.get("step") is not None and step is None):
        return None
    if low > capacity:
        yield _range_problem(path.child("min"), f"min {low} is larger than the capacity value {capacity}")
    if default < low:
        yield _range_problem(path.child("min" if at_bound else "default"),
                             f"the default {default} is less than min {low}")
    if high is not None:
        if low > high:
            yield _range_problem(path.child("max"), f"min {low} is larger than max {high}")
        if high > capacity:
            yield _range_problem(path.child("max"), f"max {high} is larger than the capacity value {capacity}")
        if default > high:
            yield _range_problem(path.child("max" if at_bound else "default"),
                                 f"the default {default} is more than max {high}")
    return low, high, step


def _valid_range(default: Quantity, capacity: Quantity, rng: dict, path: FieldPath,
                 fractional: bool) -> Iterator[Problem]:
    bounds = yield from _range_bounds(default, capacity, rng, path, at_bound=False)
    if bounds is None:
        return
    low, high, step = bounds
    named = [("default", default), ("min", low), ("max", high), ("step", step)]
    use_milli = fractional and any(q is not None and not q.is_integer() for _, q in named)
    if use_milli:
        unsafe = [(n, q) for n, q in named if q is not None and not _milli_safe(q)]
        for name, q in unsafe:
            yield _range_problem(path.child(name), f"{name} {q} cannot be represented as a milli value (at most "
                                                   "three decimal places)")
        if unsafe:
            return
    if step is None:
        return
    if step.value <= 0:
        yield _range_problem(path.child("step"), f"step {step} must be greater than zero")
        return
    if low.value + step.value > capacity.value:
        yield _range_problem(path.child("step"), f"one step from min ({low} + {step}) is larger than the capacity "
                                                 f"value {capacity}")
    if not use_milli:
        unsafe_int = False
        for name, q in named:
            if q is None:
                continue
            if q.value < 0:
                unsafe_int = True
                yield _range_problem(path.child(name), f"{name} {q} must be greater than or equal to 0")
            elif q.value > _MAX_INT64:
                unsafe_int = True
                yield _range_problem(path.child(name), f"{name} {q} must not be larger than {_MAX_INT64}")
        if unsafe_int:
            return
    scale = 1000 if use_milli else 1
    for value in (default, high):
        if value is not None and (_ceil(value.value * scale) - _ceil(low.value * scale)) % _ceil(step.value * scale):
            yield _range_problem(path.child("step"), f"{value} is not min {low} plus a multiple of step {step}")


def _unguarded_range(default: Quantity, capacity: Quantity, rng: dict, path: FieldPath) -> Iterator[Problem]:
    """validateRequestPolicyRange of 1.34-1.36 (validation.go of 1.35): no sign or int64 checks, the
    default's errors at `min` and `max`, whole numbers only (Quantity.Value, rounded up)."""
    bounds = yield from _range_bounds(default, capacity, rng, path, at_bound=True)
    if bounds is None:
        return
    low, high, step = bounds
    if step is None:
        return
    if low.value + step.value > capacity.value:
        yield _range_problem(path.child("step"), f"one step from min ({low} + {step}) is larger than the capacity "
                                                 f"value {capacity}")
    divisor = _ceil(step.value)
    if divisor == 0:
        yield _range_problem(path.child("step"), f"step {step} is zero: this release's API server divides by it and "
                                                 "fails the request (fixed in 1.37, which wants a step greater than "
                                                 "zero)")
        return
    for value in (default, high):
        # Go's remainder keeps the dividend's sign; only whether it is zero matters here.
        if value is not None and (_ceil(value.value) - _ceil(low.value)) % abs(divisor):
            yield _range_problem(path.child("step"), f"{value} is not min {low} plus a multiple of step {step}")


def _range_problem(path: FieldPath, what: str) -> Problem:
    return Problem(REQUEST_POLICY_INVALID, path, f"{what}; requests could never be satisfied as the policy describes "
                                                 "(API server: Invalid value)")


def _ceil(value: Any) -> int:
    """Quantity.Value(): rounded up, away from zero."""
    magnitude = -(-abs(value.numerator) // value.denominator)
    return magnitude if value >= 0 else -magnitude


def _milli_safe(q: Quantity) -> bool:
    return q.milli_exact() and abs(q.value * 1000) <= _MAX_INT64
