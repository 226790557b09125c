"""Updates of claims and templates: spec immutability, and the claim ``status`` subresource.

On a plain UPDATE the API server keeps the stored status and only checks that ``spec`` did not
change (claims and templates alike; the spec is compared after defaulting, with nil and empty
lists equal). A write to ``/status`` resets the spec and most metadata to the stored ones and then
validates the status (``validateResourceClaimStatusUpdate``): ``reservedFor``, ``devices`` (device
status reported by drivers) and ``allocation``, which may be set once and never changed. On
CREATE the server wipes the status, so it is not validated then (an info says it is ignored).

Status is validated the way the server does it for *new* data: a stored allocation is not
re-validated, which is why a status write that keeps the allocation raises nothing about it.
"""
from __future__ import annotations

import ipaddress
import json
from typing import Any, Iterator

from ..kube.shapes import LEGACY_VERSIONS
from ..paths import FieldPath
from ..kube.quantity import Quantity, QuantityError
from .base import CheckContext, p, too_many, too_many_problem
from ..problems import Problem
from .conditions import condition_problems
from .fields import (ERROR_WORDS, RequestNames, admin_access_problem, binding_condition_problems, request_names,
                     request_ref_problem, spec_path)
from ..kube.validation import is_dns1123_label
from .formats import driver_name_errors, is_uuid, pool_name_errors
from .nodeselector import node_selector_problems
from .opaque import check_opaque_config, json_size
from .tolerations import check_tolerations

KINDS: frozenset[str] = frozenset({"ResourceClaim", "ResourceClaimTemplate"})

R_RESERVED_TOO_MANY = "DRA250"
R_RESERVED_DUPLICATE = "DRA251"
R_RESERVED_INCOMPLETE = "DRA252"
R_RESERVED_UNALLOCATED = "DRA253"
R_RESERVED_WHILE_DELETING = "DRA254"
R_SPEC_IMMUTABLE = "DRA255"
R_ALLOCATION_IMMUTABLE = "DRA256"
R_ALLOCATION_TOO_MANY = "DRA257"
R_RESULT_UNKNOWN_REQUEST = "DRA258"
R_RESULT_INVALID = "DRA259"
R_ALLOCATION_CONFIG = "DRA260"
R_DEVICE_STATUS_DUPLICATE = "DRA262"
R_DEVICE_STATUS_UNALLOCATED = "DRA263"
R_DEVICE_STATUS_INVALID = "DRA264"
R_STATUS_IGNORED = "DRA265"

# The rules above and those of the shared validators it calls (tolerations, admin access, opaque config,
# node selectors).
RULES = ("DRA214", "DRA215", "DRA216", "DRA217", "DRA228", "DRA229", "DRA230", "DRA231", "DRA250", "DRA251", "DRA252",
         "DRA253", "DRA254", "DRA255", "DRA256", "DRA257", "DRA258", "DRA259", "DRA260", "DRA262", "DRA263", "DRA264",
         "DRA265", "DRA405")

CONFIG_SOURCES = ("FromClaim", "FromClass")
SKIP_NODE_OPERATIONS = ("NodePrepareResources", "NodeUnprepareResources", "*")
# metav1 condition limits (apimachinery ValidateCondition).


def check(ctx: CheckContext) -> Iterator[Problem]:
    """Update rules of claims and templates; the status of a claim written to ``/status``."""
    obj = ctx.obj
    if obj.version in LEGACY_VERSIONS:
        return
    if not ctx.is_update:
        if obj.kind == "ResourceClaim" and not ctx.subresource and obj.get("status"):
            yield Problem(R_STATUS_IGNORED, p("status"),
                          "`status` is ignored when a claim is created: the API server clears it, and the "
                          "scheduler and drivers fill it in later; remove it from the manifest")
        return
    if ctx.subresource == "status":
        if obj.kind == "ResourceClaim":
            yield from _status_write(ctx)
        return
    yield from _spec_immutable(ctx)


# --- spec immutability ----------------------------------------------------------------------------

def _spec_immutable(ctx: CheckContext) -> Iterator[Problem]:
    assert ctx.old is not None
    inner = spec_path(ctx.obj.kind)[1:]  # the claim spec inside ``spec`` (templates: ``spec.spec``)
    new, old = (_normalized(_defaulted(o.get("spec"), inner)) for o in (ctx.obj, ctx.old))
    if new == old:
        return
    where = _first_difference(new, old, p("spec"))
    what = "claim" if ctx.obj.kind == "ResourceClaim" else "claim template"
    yield Problem(R_SPEC_IMMUTABLE, p("spec"),
                  f"the spec of a {what} cannot be changed after creation (first difference at {where}); "
                  f"delete and re-create the {ctx.obj.kind} instead (API server: Invalid value, \"field is "
                  "immutable\")", details={"first_difference": str(where)})


def _defaulted(spec: Any, inner: tuple) -> Any:
    """A copy of ``spec`` with the server's defaults filled into requests, subrequests and tolerations."""
    if not isinstance(spec, dict):
        return spec
    spec = json.loads(json.dumps(spec, default=str))
    claim_spec = spec
    for seg in inner:
        claim_spec = claim_spec.get(seg) if isinstance(claim_spec, dict) else None
    devices = claim_spec.get("devices") if isinstance(claim_spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for request in requests if isinstance(requests, list) else ():
        if not isinstance(request, dict):
            continue
        subs = request.get("firstAvailable")
        bodies = [request.get("exactly")] + (subs if isinstance(subs, list) else [])
        for body in bodies:
            if isinstance(body, dict):
                _default_body(body)
    return spec


def _default_body(body: dict) -> None:
    if not body.get("allocationMode"):
        body["allocationMode"] = "ExactCount"
    if body["allocationMode"] == "ExactCount" and not body.get("count"):
        body["count"] = 1
    tolerations = body.get("tolerations")
    for toleration in tolerations if isinstance(tolerations, list) else ():
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"
    capacity = body.get("capacity")
    if isinstance(capacity, dict) and isinstance(capacity.get("requests"), dict):
        capacity["requests"] = {k: _quantity(v) for k, v in capacity["requests"].items()}


def _normalized(value: Any) -> Any:
    """A value as the server's semantic comparison sees it: nil equal to empty lists and maps."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            v = _normalized(v)
            if v is None or v == [] or (v == {} and k in _EMPTY_IS_UNSET):
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


# Maps, and struct fields that are not pointers, whose empty value is the same as leaving them out.
_EMPTY_IS_UNSET = frozenset({"metadata", "devices", "spec", "requests", "labels", "annotations", "attributes",
                             "consumedCapacity"})


def _quantity(value: Any) -> Any:
    try:
        return Quantity.parse(value).value
    except (QuantityError, TypeError):
        return value


def _first_difference(new: Any, old: Any, path: FieldPath) -> FieldPath:
    if isinstance(new, dict) and isinstance(old, dict):
        for key in list(new) + [k for k in old if k not in new]:
            if new.get(key) != old.get(key):
                return _first_difference(new.get(key), old.get(key), path.child(key))
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        for i, (a, b) in enumerate(zip(new, old)):
            if a != b:
                return _first_difference(a, b, path.child(i))
    return path


# --- status writes ------------------------------------------------------------------------------

def _status_write(ctx: CheckContext) -> Iterator[Problem]:
    assert ctx.old is not None
    status = ctx.obj.get("status")
    status = status if isinstance(status, dict) else {}
    old_status = ctx.old.get("status")
    old_status = old_status if isinstance(old_status, dict) else {}
    # The server resets the spec to the stored one before validating the status.
    names = request_names(ctx.old.get("spec", "devices", "requests"))
    allocation = status.get("allocation")
    old_allocation = old_status.get("allocation")
    yield from _reserved_for(ctx, status, old_status)
    yield from _device_statuses(ctx, status, old_allocation)
    if allocation is not None and old_allocation is not None:
        if _normalized(allocation) != _normalized(old_allocation):
            yield Problem(R_ALLOCATION_IMMUTABLE, p("status", "allocation"),
                          "`status.allocation` cannot be changed once it is set; to allocate differently, "
                          "clear the allocation first (deallocate) and set a new one (API server: Invalid value, "
                          "\"field is immutable\")")
    elif isinstance(allocation, dict):
        yield from _allocation(ctx, allocation, p("status", "allocation"), names)
        yield from _admin_access(ctx, allocation, old_allocation)


def _reserved_for(ctx: CheckContext, status: dict, old_status: dict) -> Iterator[Problem]:
    reserved = status.get("reservedFor")
    if not isinstance(reserved, list) or not reserved:
        return
    path = p("status", "reservedFor")
    limit = ctx.limits.reserved_for
    if len(reserved) > limit:
        yield Problem(R_RESERVED_TOO_MANY, path,
                      f"{len(reserved)} consumers in `reservedFor`; at most {limit} are allowed in Kubernetes "
                      f"{ctx.release.version}: share the devices through fewer pods (or several claims) "
                      "(API server: Too many)", details={"count": len(reserved), "limit": limit})
    else:
        uids: set[str] = set()
        for i, ref in enumerate(reserved):
            if not isinstance(ref, dict):
                continue
            for fld in ("resource", "name", "uid"):
                if not ref.get(fld):
                    yield Problem(R_RESERVED_INCOMPLETE, path.child(i, fld),
                                  f"a `reservedFor` entry needs `{fld}` (resource, name and uid identify the "
                                  "consumer, usually a pod) (API server: Required value)")
            uid = ref.get("uid")
            if isinstance(uid, str):
                if uid in uids:
                    yield Problem(R_RESERVED_DUPLICATE, path.child(i),
                                  f"consumer uid {uid!r} is listed twice in `reservedFor`; each consumer is "
                                  "reserved once (API server: Duplicate value)")
                uids.add(uid)
    if status.get("allocation") is None:
        yield Problem(R_RESERVED_UNALLOCATED, path,
                      "`reservedFor` may not be set while the claim is not allocated (`status.allocation` is "
                      "unset): reserve the claim for its consumers after allocating it (API server: Forbidden)")
    elif ctx.old is not None and (ctx.old.get("metadata", "deletionTimestamp") or
                                  ctx.obj.get("metadata", "deletionTimestamp")):
        old_reserved = old_status.get("reservedFor")
        old_items = [_normalized(r) for r in old_reserved] if isinstance(old_reserved, list) else []
        added = [r for r in reserved if _normalized(r) not in old_items]
        if added:
            yield Problem(R_RESERVED_WHILE_DELETING, path,
                          f"{len(added)} new consumer(s) added to `reservedFor` while the claim is being deleted; "
                          "entries may only be removed now (API server: Forbidden, \"new entries may not be added "
                          "while `deallocationRequested` or `deletionTimestamp` are set\")")


def _allocation(ctx: CheckContext, allocation: dict, path: FieldPath, names: RequestNames) -> Iterator[Problem]:
    devices = allocation.get("devices")
    if isinstance(devices, dict):
        dpath = path.child("devices")
        results = devices.get("results")
        if isinstance(results, list):
            yield from _results(ctx, results, dpath.child("results"), names)
        configs = devices.get("config")
        if isinstance(configs, list):
            yield from _allocation_configs(ctx, configs, dpath.child("config"), names)
    if allocation.get("nodeSelector") is not None:
        yield from node_selector_problems(allocation["nodeSelector"], path.child("nodeSelector"), ctx.release)


def _results(ctx: CheckContext, results: list, path: FieldPath, names: RequestNames) -> Iterator[Problem]:
    limit = ctx.limits.allocation_results
    if len(results) > limit:
        yield too_many_problem(R_ALLOCATION_TOO_MANY, path, len(results), limit, "allocation results")
        return
    for i, result in enumerate(results):
        if not isinstance(result, dict):
            continue
        rpath = path.child(i)
        ref = result.get("request", "")
        if isinstance(ref, str):
            problem = request_ref_problem(ref, rpath.child("request"), names, R_RESULT_UNKNOWN_REQUEST)
            if problem:
                yield problem
        yield from _device_id(result, rpath, R_RESULT_INVALID)
        yield from binding_condition_problems(ctx, result, rpath, R_RESULT_INVALID)
        if ctx.limits.result_tolerations_checked:
            yield from check_tolerations(result.get("tolerations"), rpath.child("tolerations"), ctx.release,
                                         ctx.limits)
        share = result.get("shareID")
        if isinstance(share, str):
            yield from _uuid(share, rpath.child("shareID"), R_RESULT_INVALID)
        if ctx.release.stage("DRAOptionalNodeOperations") is not None:
            yield from _skip_node_operations(result.get("skipNodeOperations"), rpath.child("skipNodeOperations"))


def _device_id(entry: dict, path: FieldPath, rule: str) -> Iterator[Problem]:
    """``driver``, ``pool`` and ``device`` of an allocation result or a device status."""
    driver, pool, device = entry.get("driver", ""), entry.get("pool", ""), entry.get("device", "")
    if isinstance(driver, str):
        for kind, msg in driver_name_errors(driver):
            yield Problem(rule, path.child("driver"), f"driver {driver!r}: {msg} (API server: {ERROR_WORDS[kind]})")
    if isinstance(pool, str):
        for kind, msg in pool_name_errors(pool):
            yield Problem(rule, path.child("pool"), f"pool {pool!r}: {msg} (API server: {ERROR_WORDS[kind]})")
    if isinstance(device, str):
        for msg in is_dns1123_label(device):
            yield Problem(rule, path.child("device"),
                          f"device name {device!r} is not a DNS label: {msg} (API server: Invalid value)")


def _uuid(value: str, path: FieldPath, rule: str) -> Iterator[Problem]:
    if not is_uuid(value):
        yield Problem(rule, path, f"{value!r} is not a UUID in RFC 4122 normalized form "
                                  "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, lower-case hex) (API server: Invalid value)")


def _skip_node_operations(value: Any, path: FieldPath) -> Iterator[Problem]:
    if not isinstance(value, list):
        return
    for j, op in enumerate(value):
        if isinstance(op, str) and op not in SKIP_NODE_OPERATIONS:
            yield Problem(R_RESULT_INVALID, path.child(j),
                          f"{op!r} is not a node operation; use one of {', '.join(SKIP_NODE_OPERATIONS)} "
                          "(API server: Unsupported value)")
    ops = {op for op in value if isinstance(op, str)}
    if "NodePrepareResources" in ops and not ops & {"NodeUnprepareResources", "*"}:
        yield Problem(R_RESULT_INVALID, path,
                      "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped "
                      "(API server: Invalid value)")


def _allocation_configs(ctx: CheckContext, configs: list, path: FieldPath, names: RequestNames) -> Iterator[Problem]:
    limit = ctx.limits.allocation_configs
    if len(configs) > limit:
        yield too_many_problem(R_ALLOCATION_TOO_MANY, path, len(configs), limit, "allocation config entries")
        return
    for k, config in enumerate(configs):
        if not isinstance(config, dict):
            continue
        kpath = path.child(k)
        source = config.get("source", "")
        if not source:
            yield Problem(R_ALLOCATION_CONFIG, kpath.child("source"),
                          "`source` is required: `FromClaim` or `FromClass` (API server: Required value)")
        elif isinstance(source, str) and source not in CONFIG_SOURCES:
            yield Problem(R_ALLOCATION_CONFIG, kpath.child("source"),
                          f"source {source!r} is not supported; use `FromClaim` or `FromClass` "
                          "(API server: Unsupported value)")
        refs = config.get("requests")
        if isinstance(refs, list):
            problem = too_many(R_ALLOCATION_TOO_MANY, refs, ctx.limits.requests_per_reference_list,
                               kpath.child("requests"), "request references")
            if problem is not None:
                yield problem
            else:
                yield from _refs(refs, kpath.child("requests"), names)
        yield from check_opaque_config(config.get("opaque"), kpath.child("opaque"), ctx.limits)


def _refs(refs: list, path: FieldPath, names: RequestNames) -> Iterator[Problem]:
    seen: set[str] = set()
    for r, ref in enumerate(refs):
        if not isinstance(ref, str):
            continue
        problem = request_ref_problem(ref, path.child(r), names, R_RESULT_UNKNOWN_REQUEST)
        if problem:
            yield problem
        if ref in seen:
            yield Problem(R_RESULT_UNKNOWN_REQUEST, path.child(r),
                          f"request {ref!r} is listed twice (API server: Duplicate value)")
        seen.add(ref)


def _admin_access(ctx: CheckContext, allocation: dict, old_allocation: Any) -> Iterator[Problem]:
    """A new allocation granting admin access needs the namespace label, unless it was granted before."""
    if _admin_result(old_allocation) is not None:
        return
    i = _admin_result(allocation)
    if i is not None:
        problem = admin_access_problem(ctx, p("status", "allocation", "devices", "results", i, "adminAccess"))
        if problem:
            yield problem


def _admin_result(allocation: Any) -> int | None:
    results = allocation.get("devices", {}).get("results") if isinstance(allocation, dict) and \
        isinstance(allocation.get("devices"), dict) else None
    for i, result in enumerate(results if isinstance(results, list) else ()):
        if isinstance(result, dict) and result.get("adminAccess") is True:
            return i
    return None


# --- status.devices -------------------------------------------------------------------------------

def _device_statuses(ctx: CheckContext, status: dict, old_allocation: Any) -> Iterator[Problem]:
    entries = status.get("devices")
    if not isinstance(entries, list):
        return
    allocation = status.get("allocation")
    allocated = _allocated(allocation)
    # The server silently drops entries of devices that this write de-allocates.
    gone = {k[:3] for k in _allocated(old_allocation)} - {k[:3] for k in allocated}
    path = p("status", "devices")
    seen: set[tuple] = set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        key = _device_key(entry)
        if key[:3] in gone:
            continue
        epath = path.child(i)
        yield from _device_id(entry, epath, R_DEVICE_STATUS_INVALID)
        share = entry.get("shareID")
        if isinstance(share, str):
            yield from _uuid(share, epath.child("shareID"), R_DEVICE_STATUS_INVALID)
        if key not in allocated:
            yield Problem(R_DEVICE_STATUS_UNALLOCATED, epath,
                          f"device {'/'.join(str(k) for k in key if k)} is not among the claim's allocated devices "
                          "(`status.allocation.devices.results`); drivers may only report the status of devices "
                          "allocated to this claim (API server: Invalid value, \"must be an allocated device in the "
                          "claim\")")
        yield from _conditions(ctx, entry.get("conditions"), epath.child("conditions"))
        yield from _data(ctx, entry, epath.child("data"))
        yield from _network_data(ctx, entry.get("networkData"), epath.child("networkData"))
        if key in seen:
            yield Problem(R_DEVICE_STATUS_DUPLICATE, epath,
                          f"device {'/'.join(str(k) for k in key if k)} has two status entries; report each "
                          "allocated device once (API server: Duplicate value)")
        seen.add(key)


def _device_key(entry: dict) -> tuple:
    """(driver, pool, device, shareID); values of a wrong type (the schema stage's finding) as their repr."""
    return tuple(v if v is None or isinstance(v, str) else repr(v)
                 for v in (entry.get("driver"), entry.get("pool"), entry.get("device"), entry.get("shareID")))


def _allocated(allocation: Any) -> set[tuple]:
    results = allocation.get("devices", {}).get("results") if isinstance(allocation, dict) and \
        isinstance(allocation.get("devices"), dict) else None
    return {_device_key(r) for r in (results if isinstance(results, list) else ()) if isinstance(r, dict)}


def _conditions(ctx: CheckContext, conditions: Any, path: FieldPath) -> Iterator[Problem]:
    if not isinstance(conditions, list):
        return
    limit = ctx.limits.device_status_conditions
    if len(conditions) > limit:
        yield Problem(R_DEVICE_STATUS_INVALID, path,
                      f"{len(conditions)} conditions; at most {limit} are allowed (API server: Too many)",
                      details={"count": len(conditions), "limit": limit})
    yield from condition_problems(conditions, path, R_DEVICE_STATUS_INVALID)


def _data(ctx: CheckContext, entry: dict, path: FieldPath) -> Iterator[Problem]:
    data = entry.get("data")
    if data is None:  # optional: JSON null decodes to an empty raw value, which is not checked
        return
    limit = ctx.limits.device_status_data_bytes
    size = json_size(data)
    if size > limit:
        yield Problem(R_DEVICE_STATUS_INVALID, path, f"`data` is {size} bytes as JSON; at most {limit} are allowed "
                                                     "(API server: Too long)", details={"size": size, "limit": limit})
    elif not isinstance(data, dict):
        yield Problem(R_DEVICE_STATUS_INVALID, path, "`data` must be a JSON object (API server: Invalid value)")


def _network_data(ctx: CheckContext, network: Any, path: FieldPath) -> Iterator[Problem]:
    if not isinstance(network, dict):
        return
    for fld, limit in (("interfaceName", ctx.limits.interface_name_bytes),
                       ("hardwareAddress", ctx.limits.hardware_address_bytes)):
        value = network.get(fld)
        if isinstance(value, str) and len(value.encode()) > limit:
            yield Problem(R_DEVICE_STATUS_INVALID, path.child(fld),
                          f"`{fld}` is {len(value.encode())} bytes; at most {limit} are allowed (API server: Too long)")
    ips = network.get("ips")
    if not isinstance(ips, list):
        return
    if len(ips) > ctx.limits.ips:
        yield Problem(R_DEVICE_STATUS_INVALID, path.child("ips"),
                      f"{len(ips)} IP addresses; at most {ctx.limits.ips} are allowed (API server: Too many)")
        return
    seen: set[str] = set()
    for j, ip in enumerate(ips):
        if not isinstance(ip, str):
            continue
        error = _interface_address_error(ip)
        if error:
            yield Problem(R_DEVICE_STATUS_INVALID, path.child("ips", j), f"{ip!r} {error} (API server: Invalid value)")
        if ip in seen:
            yield Problem(R_DEVICE_STATUS_INVALID, path.child("ips", j),
                          f"{ip!r} is listed twice (API server: Duplicate value)")
        seen.add(ip)


def _interface_address_error(value: str) -> str | None:
    """apimachinery ``IsValidInterfaceAddress``: an address in CIDR form, written canonically."""
    bad = "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"
    addr, sep, prefix = value.partition("/")
    if not sep or not prefix.isdigit():
        return bad
    if ":" in addr:
        try:
            ip6 = ipaddress.IPv6Address(addr)
        except ValueError:
            return bad
        if int(prefix) > 128 or ip6.scope_id:
            return bad
        text = str(ip6.ipv4_mapped) if ip6.ipv4_mapped else ip6.compressed
    else:
        parts = addr.split(".")
        # Go's sloppy parser accepts leading zeros ("010.1.1.1" is 10.1.1.1), so the address parses
        # but is not canonical.
        if len(parts) != 4 or not all(x.isdigit() and int(x) <= 255 for x in parts) or int(prefix) > 32:
            return bad
        text = ".".join(str(int(x)) for x in parts)
    canonical = f"{text}/{int(prefix)}"
    return None if canonical == value else f"must be in canonical form ({json.dumps(canonical)})"
