"""The older generations of the DRA API: v1alpha1 (Kubernetes 1.26) and v1alpha2 (1.27–1.30).

"Classic" DRA: a ResourceClaim names a ResourceClass (``resourceClassName``) whose driver
allocates it, optionally with ``parametersRef`` objects; PodSchedulingContext (v1alpha1:
PodScheduling) negotiates nodes; 1.30 added structured parameters: ResourceSlice with
``namedResources``, ResourceClaimParameters and ResourceClassParameters. These objects are not
converted to v1 (the shapes are unrelated), so this module reads them as written. The rules are
those of the 1.30 validation code; list limits there are reported as Too long (the old helper),
not Too many. Claim status is only judged on a status write, as the server ignores it otherwise.

Rules: DRA280 legacy-parameters-ref-invalid, DRA281 legacy-claim-class-name-invalid, DRA282
legacy-allocation-mode-unsupported, DRA283 legacy-claim-spec-immutable, DRA284
legacy-allocation-invalid, DRA285 legacy-reserved-for-invalid, DRA286 legacy-deallocation-invalid,
DRA287 scheduling-context-nodes-invalid, DRA288 scheduling-context-claim-duplicate, DRA289
claim-parameters-requests-invalid, DRA380 class-parameters-ref-invalid, DRA381
class-parameters-filters-invalid, DRA480 named-resources-model-required, DRA481
named-resources-instance-invalid, DRA482 named-resources-attribute-invalid; driver names, node
names, node selectors and immutable slice fields via fields.py / nodeselector.py (DRA400,
DRA404, DRA405, DRA425).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from ..kube.shapes import LEGACY_VERSIONS
from ..paths import ROOT, FieldPath
from .base import CheckContext, p
from ..problems import Problem
from ..kube.validation import is_dns1123_label, is_dns1123_subdomain
from .formats import is_semver
from .fields import FIELD_IMMUTABLE, driver_problems, node_name_problems
from .nodeselector import node_selector_problems

KINDS: frozenset[str] = frozenset({
    "ResourceClass", "ResourceClaim", "ResourceClaimTemplate", "PodSchedulingContext", "PodScheduling",
    "ResourceSlice", "ResourceClaimParameters", "ResourceClassParameters",
})

CLAIM_PARAMETERS_REF_INVALID = "DRA280"
CLASS_NAME_INVALID = "DRA281"
ALLOCATION_MODE_UNSUPPORTED = "DRA282"
SPEC_IMMUTABLE = "DRA283"
ALLOCATION_INVALID = "DRA284"
RESERVED_FOR_INVALID = "DRA285"
DEALLOCATION_INVALID = "DRA286"
SCHEDULING_NODES_INVALID = "DRA287"
SCHEDULING_CLAIM_DUPLICATE = "DRA288"
CLAIM_PARAMETERS_INVALID = "DRA289"
CLASS_PARAMETERS_REF_INVALID = "DRA380"
CLASS_PARAMETERS_INVALID = "DRA381"
MODEL_REQUIRED = "DRA480"
INSTANCE_INVALID = "DRA481"
ATTRIBUTE_INVALID = "DRA482"

# The rules above, and the driver and node names, node selectors and immutable fields of fields.py and
# nodeselector.py.
RULES = ("DRA280", "DRA281", "DRA282", "DRA283", "DRA284", "DRA285", "DRA286", "DRA287", "DRA288", "DRA289", "DRA380",
         "DRA381", "DRA400", "DRA404", "DRA405", "DRA425", "DRA480", "DRA481", "DRA482")

_ALLOCATION_MODES = ("Immediate", "WaitForFirstConsumer")
_NAMED_ATTRIBUTE_VALUES = ("bool", "int", "intSlice", "quantity", "string", "stringSlice", "version")


def check(ctx: CheckContext) -> Iterable[Problem]:
    """Problems of one v1alpha1/v1alpha2 object; objects of newer versions are left to the other modules."""
    if ctx.obj.version not in LEGACY_VERSIONS:
        return ()
    kind = ctx.obj.kind
    if kind == "ResourceClaim":
        return _claim(ctx)
    if kind == "ResourceClaimTemplate":
        return _template(ctx)
    if kind == "ResourceClass":
        return _resource_class(ctx)
    if kind in ("PodSchedulingContext", "PodScheduling"):
        return _scheduling_context(ctx)
    if kind == "ResourceSlice":
        return _slice(ctx)
    if kind == "ResourceClaimParameters":
        return _claim_parameters(ctx)
    return _class_parameters(ctx)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _old(ctx: CheckContext, *path: str) -> Any:
    return ctx.old.get(*path) if ctx.is_update and ctx.old is not None else None


def _too_long(rule: str, items: list, limit: int, path: FieldPath, what: str) -> Problem | None:
    """The 1.30 list-size check: Too long at the list, the items are still validated."""
    if len(items) <= limit:
        return None
    return Problem(rule, path, f"{len(items)} {what}; at most {limit} are allowed (API server: Too long)",
                   details={"count": len(items), "limit": limit})


# --- ResourceClaim / ResourceClaimTemplate ------------------------------------------------------------

def _claim(ctx: CheckContext) -> Iterator[Problem]:
    if ctx.subresource == "status":
        yield from _claim_status(ctx)
        return
    if ctx.is_update and _old(ctx, "spec") != ctx.obj.get("spec"):
        yield _immutable_spec("ResourceClaim")
    yield from _claim_spec(ctx.obj.get("spec"), p("spec"))


def _template(ctx: CheckContext) -> Iterator[Problem]:
    if ctx.is_update and _old(ctx, "spec") != ctx.obj.get("spec"):
        yield _immutable_spec("ResourceClaimTemplate")
    yield from _claim_spec(ctx.obj.get("spec", "spec"), p("spec", "spec"))


def _immutable_spec(kind: str) -> Problem:
    return Problem(SPEC_IMMUTABLE, p("spec"),
                   f"the spec of a {kind} cannot change; delete and recreate it (pods using it must be recreated "
                   "too) (API server: Invalid value, \"field is immutable\")")


def _claim_spec(spec: Any, path: FieldPath) -> Iterator[Problem]:
    if not isinstance(spec, dict):
        return
    class_name = spec.get("resourceClassName", "")
    errors = is_dns1123_subdomain(class_name) if isinstance(class_name, str) else []
    if errors:
        what = "is required" if not class_name else f"{class_name!r} is not a valid ResourceClass name: {errors[-1]}"
        yield Problem(CLASS_NAME_INVALID, path.child("resourceClassName"),
                      f"resourceClassName {what}; name the ResourceClass whose driver allocates the claim "
                      "(API server: Invalid value)")
    ref = spec.get("parametersRef")
    if isinstance(ref, dict):
        yield from _parameters_ref(ref, path.child("parametersRef"), CLAIM_PARAMETERS_REF_INVALID)
    mode = spec.get("allocationMode")
    if mode not in (None, "") and mode not in _ALLOCATION_MODES:
        yield Problem(ALLOCATION_MODE_UNSUPPORTED, path.child("allocationMode"),
                      f"allocationMode {mode!r} is not supported; use {' or '.join(_ALLOCATION_MODES)} (the default) "
                      "(API server: Unsupported value)")


def _parameters_ref(ref: dict, path: FieldPath, rule: str, *, namespaced: bool = False) -> Iterator[Problem]:
    for name in ("kind", "name"):
        if not ref.get(name):
            yield Problem(rule, path.child(name),
                          f"a parameters reference needs `{name}` (API server: Required value)")
    namespace = ref.get("namespace")
    if namespaced and isinstance(namespace, str) and namespace:
        for msg in is_dns1123_label(namespace):
            yield Problem(rule, path.child("namespace"),
                          f"namespace {namespace!r} is not a valid namespace name: {msg} (API server: Invalid value)")


def _claim_status(ctx: CheckContext) -> Iterator[Problem]:
    status = _dict(ctx.obj.get("status"))
    old_status = _dict(_old(ctx, "status"))
    path = p("status")
    allocation = status.get("allocation")
    driver = status.get("driverName", "")
    if driver:
        if isinstance(driver, str):
            yield from driver_problems(driver, path.child("driverName"))
    elif allocation is not None:
        yield Problem(ALLOCATION_INVALID, path.child("driverName"),
                      "status.driverName must be set when `allocation` is set: the driver that allocated the claim "
                      "(API server: Required value)")
    if isinstance(allocation, dict):
        yield from _allocation(ctx, allocation, path.child("allocation"))
    yield from _reserved_for(ctx, status, old_status, path)
    old_allocation = old_status.get("allocation")
    if old_allocation is not None and allocation is not None and old_allocation != allocation:
        yield Problem(ALLOCATION_INVALID, path.child("allocation"),
                      "an allocation cannot change once set; deallocate (clear it) first (API server: Invalid value, "
                      "\"field is immutable\")")
    yield from _deallocation(status, old_status, path)


def _allocation(ctx: CheckContext, allocation: dict, path: FieldPath) -> Iterator[Problem]:
    limit = ctx.limits.alpha2_handle_data_bytes
    handle = allocation.get("resourceHandle")  # v1alpha1: one opaque string
    if isinstance(handle, str) and len(handle.encode()) > limit:
        yield Problem(ALLOCATION_INVALID, path.child("resourceHandle"),
                      f"the resource handle is {len(handle.encode())} bytes; at most {limit} are allowed (API server: "
                      "Too long)")
    handles = _list(allocation.get("resourceHandles"))
    problem = _too_long(ALLOCATION_INVALID, handles, ctx.limits.alpha2_resource_handles, path.child("resourceHandles"),
                        "resource handles")
    if problem is not None:
        yield problem
    for i, entry in enumerate(handles):
        if isinstance(entry, dict):
            yield from _resource_handle(entry, path.child("resourceHandles", i), limit)
    if allocation.get("availableOnNodes") is not None:
        yield from node_selector_problems(allocation["availableOnNodes"], path.child("availableOnNodes"), ctx.release)


def _resource_handle(entry: dict, path: FieldPath, limit: int) -> Iterator[Problem]:
    driver = entry.get("driverName", "")
    if isinstance(driver, str):
        yield from driver_problems(driver, path.child("driverName"))
    data = entry.get("data")
    if isinstance(data, str) and len(data.encode()) > limit:
        yield Problem(ALLOCATION_INVALID, path.child("data"),
                      f"the handle data is {len(data.encode())} bytes; at most {limit} are allowed (API server: Too long)")
    structured = entry.get("structuredData")
    if isinstance(structured, dict):
        node = structured.get("nodeName")
        if isinstance(node, str) and node:
            yield from node_name_problems(node, path.child("structuredData", "nodeName"))
        for k, result in enumerate(_list(structured.get("results"))):
            result_path = path.child("structuredData", "results", k)
            named = _dict(result).get("namedResources")
            if named is None:
                yield Problem(ALLOCATION_INVALID, result_path,
                              "exactly one structured model field must be set: `namedResources` (API server: "
                              "Required value)")
            elif isinstance(named, dict) and isinstance(named.get("name", ""), str):
                yield from _instance_name(named.get("name", ""), result_path.child("namedResources", "name"),
                                          ALLOCATION_INVALID)
    if data and structured is not None:
        yield Problem(ALLOCATION_INVALID, path,
                      "`data` and `structuredData` are mutually exclusive; keep one (API server: Invalid value)")


def _reserved_for(ctx: CheckContext, status: dict, old_status: dict, path: FieldPath) -> Iterator[Problem]:
    reserved = _list(status.get("reservedFor"))
    rpath = path.child("reservedFor")
    uids: set[Any] = set()
    for i, ref in enumerate(reserved):
        ref = _dict(ref)
        uid = ref.get("uid")
        if not isinstance(uid, (str, type(None))):
            continue  # a wrong type is the schema stage's
        if uid in uids:
            yield Problem(RESERVED_FOR_INVALID, rpath.child(i, "uid"),
                          f"consumer uid {ref.get('uid')!r} is listed twice (API server: Duplicate value)")
            continue
        uids.add(uid)
        for name in ("resource", "name", "uid"):
            if not ref.get(name):
                yield Problem(RESERVED_FOR_INVALID, rpath.child(i, name),
                              f"a reservedFor entry needs `{name}` (API server: Required value)")
    problem = _too_long(RESERVED_FOR_INVALID, reserved, ctx.limits.alpha2_reserved_for, rpath, "consumers in reservedFor")
    if problem is not None:
        yield problem
    if not reserved:
        return
    allocation = status.get("allocation")
    if allocation is None:
        yield Problem(RESERVED_FOR_INVALID, rpath,
                      "reservedFor may not be set while the claim is not allocated (API server: Forbidden)")
        return
    if len(reserved) > 1 and not _dict(allocation).get("shareable"):
        yield Problem(RESERVED_FOR_INVALID, rpath,
                      f"{len(reserved)} consumers reserve a claim whose allocation is not shareable; it may not be "
                      "reserved more than once (API server: Forbidden)")
    deleting = bool(ctx.obj.get("metadata", "deletionTimestamp")) or status.get("deallocationRequested") is True
    old_reserved = _list(old_status.get("reservedFor"))
    if deleting and any(ref not in old_reserved for ref in reserved):
        yield Problem(RESERVED_FOR_INVALID, rpath,
                      "new consumers may not be added while `deallocationRequested` or `deletionTimestamp` is set "
                      "(API server: Forbidden)")


def _deallocation(status: dict, old_status: dict, path: FieldPath) -> Iterator[Problem]:
    requested = status.get("deallocationRequested") is True
    was_requested = old_status.get("deallocationRequested") is True
    allocated = status.get("allocation") is not None
    if requested and not was_requested and _list(status.get("reservedFor")):
        yield Problem(DEALLOCATION_INVALID, path.child("deallocationRequested"),
                      "deallocation cannot be requested while `reservedFor` lists consumers (API server: Forbidden)")
    if requested and not allocated:
        yield Problem(DEALLOCATION_INVALID, path,
                      "`allocation` must be set when `deallocationRequested` is set (API server: Forbidden)")
    if was_requested and not requested and allocated:
        yield Problem(DEALLOCATION_INVALID, path.child("deallocationRequested"),
                      "a deallocation request may not be cleared while `allocation` is set; the driver clears both "
                      "together (API server: Forbidden)")


# --- ResourceClass / PodSchedulingContext ---------------------------------------------------------------

def _resource_class(ctx: CheckContext) -> Iterator[Problem]:
    driver = ctx.obj.get("driverName", default="")
    if isinstance(driver, str):
        yield from driver_problems(driver, p("driverName"))
    ref = ctx.obj.get("parametersRef")
    if isinstance(ref, dict):
        yield from _parameters_ref(ref, p("parametersRef"), CLASS_PARAMETERS_REF_INVALID, namespaced=True)
    if ctx.obj.get("suitableNodes") is not None:
        yield from node_selector_problems(ctx.obj.get("suitableNodes"), p("suitableNodes"), ctx.release)


def _scheduling_context(ctx: CheckContext) -> Iterator[Problem]:
    yield from _node_set(ctx, ctx.obj.get("spec", "potentialNodes"), p("spec", "potentialNodes"))
    status = ctx.obj.get("status")
    status_write = ctx.subresource == "status" or (ctx.is_update and _old(ctx, "status") != status)
    if not status_write or not isinstance(status, dict):
        return
    names: set[Any] = set()
    for i, claim in enumerate(_list(status.get("resourceClaims"))):
        claim = _dict(claim)
        path = p("status", "resourceClaims", i)
        yield from _node_set(ctx, claim.get("unsuitableNodes"), path.child("unsuitableNodes"))
        name = claim.get("name")
        if isinstance(name, str):
            if name in names:
                yield Problem(SCHEDULING_CLAIM_DUPLICATE, path,
                              f"claim {name!r} is reported twice; one entry per claim (API server: Duplicate value)")
            names.add(name)


def _node_set(ctx: CheckContext, nodes: Any, path: FieldPath) -> Iterator[Problem]:
    nodes = _list(nodes)
    seen: set[Any] = set()
    for i, node in enumerate(nodes):
        if not isinstance(node, str):
            continue  # a wrong type is the schema stage's
        if node in seen:
            yield Problem(SCHEDULING_NODES_INVALID, path.child(i),
                          f"node {node!r} is listed twice (API server: Duplicate value)")
            continue
        seen.add(node)
        for msg in is_dns1123_subdomain(node):
            yield Problem(SCHEDULING_NODES_INVALID, path.child(i),
                          f"{node!r} is not a valid node name: {msg} (API server: Invalid value)")
    problem = _too_long(SCHEDULING_NODES_INVALID, nodes, ctx.limits.alpha2_potential_nodes, path, "nodes")
    if problem is not None:
        yield problem


# --- 1.30 structured parameters ------------------------------------------------------------------------

def _slice(ctx: CheckContext) -> Iterator[Problem]:
    node = ctx.obj.get("nodeName", default="")
    if isinstance(node, str) and node:
        yield from node_name_problems(node, p("nodeName"))
    driver = ctx.obj.get("driverName", default="")
    if isinstance(driver, str):
        yield from driver_problems(driver, p("driverName"))
    named = ctx.obj.get("namedResources")
    if named is None:
        yield Problem(MODEL_REQUIRED, ROOT,
                      "exactly one structured model field must be set: add `namedResources: {instances: [...]}` "
                      "(API server: Required value)")
    elif isinstance(named, dict):
        yield from _instances(named.get("instances"), p("namedResources", "instances"))
    if ctx.is_update:
        for name in ("nodeName", "driverName"):
            before, after = _old(ctx, name) or "", ctx.obj.get(name) or ""
            if before != after:
                yield Problem(FIELD_IMMUTABLE, p(name),
                              f"the {name} of a ResourceSlice is immutable ({before!r} → {after!r}); delete the slice "
                              "and create a new one (API server: Invalid value, \"field is immutable\")")


def _instance_name(name: Any, path: FieldPath, rule: str) -> Iterator[Problem]:
    name = name if isinstance(name, str) else ""
    for msg in is_dns1123_subdomain(name):
        yield Problem(rule, path, f"instance name {name!r} is not a DNS subdomain: {msg} (API server: Invalid value)")


def _instances(instances: Any, path: FieldPath) -> Iterator[Problem]:
    seen: set[Any] = set()
    for i, instance in enumerate(_list(instances)):
        instance = _dict(instance)
        name_path = path.child(i, "name")
        yield from _instance_name(instance.get("name", ""), name_path, INSTANCE_INVALID)
        name = instance.get("name")
        if isinstance(name, str):
            if name in seen:
                yield Problem(INSTANCE_INVALID, name_path,
                              f"instance {name!r} is listed twice (API server: Duplicate value)")
            seen.add(name)
        yield from _named_attributes(instance.get("attributes"), path.child(i, "attributes"))


def _named_attributes(attributes: Any, path: FieldPath) -> Iterator[Problem]:
    seen: set[Any] = set()
    for j, attribute in enumerate(_list(attributes)):
        attribute = _dict(attribute)
        apath = path.child(j)
        name = attribute.get("name", "")
        if isinstance(name, str):
            for msg in is_dns1123_subdomain(name):
                yield Problem(ATTRIBUTE_INVALID, apath.child("name"),
                              f"attribute name {name!r} is not a DNS subdomain: {msg} (API server: Invalid value)")
            if name in seen:
                yield Problem(ATTRIBUTE_INVALID, apath.child("name"),
                              f"attribute {name!r} is listed twice (API server: Duplicate value)")
            seen.add(name)
        present = [k for k in _NAMED_ATTRIBUTE_VALUES if attribute.get(k) is not None]
        version = attribute.get("version")
        if isinstance(version, str) and not is_semver(version):
            yield Problem(ATTRIBUTE_INVALID, apath.child("version"),
                          f"version {version!r} must be a string compatible with semver.org spec 2.0.0 (API server: "
                          "Invalid value)")
        if not present:
            yield Problem(ATTRIBUTE_INVALID, apath,
                          f"exactly one value must be set: one of {', '.join(_NAMED_ATTRIBUTE_VALUES)} (API server: "
                          "Required value)")
        elif len(present) > 1:
            yield Problem(ATTRIBUTE_INVALID, apath,
                          f"exactly one value must be set, found {', '.join(present)} (API server: Invalid value)")


def _claim_parameters(ctx: CheckContext) -> Iterator[Problem]:
    ref = ctx.obj.get("generatedFrom")
    if isinstance(ref, dict):
        yield from _parameters_ref(ref, p("generatedFrom"), CLAIM_PARAMETERS_REF_INVALID)
    path = p("driverRequests")
    for i, entry, entry_path in _driver_entries(ctx.obj.get("driverRequests"), path):
        yield from _driver_entry(entry, entry_path, CLAIM_PARAMETERS_INVALID, i, ctx.obj.get("driverRequests"))
        requests = entry.get("requests")
        if not requests:
            yield Problem(CLAIM_PARAMETERS_INVALID, entry_path.child("requests"),
                          "empty entries with no requests are not allowed; add a request or remove the entry (API "
                          "server: Required value)")
        for j, request in enumerate(_list(requests)):
            yield from _model(_dict(request), entry_path.child("requests", j), CLAIM_PARAMETERS_INVALID)


def _class_parameters(ctx: CheckContext) -> Iterator[Problem]:
    ref = ctx.obj.get("generatedFrom")
    if isinstance(ref, dict):
        yield from _parameters_ref(ref, p("generatedFrom"), CLASS_PARAMETERS_REF_INVALID, namespaced=True)
    filters = ctx.obj.get("filters")
    for i, entry, entry_path in _driver_entries(filters, p("filters")):
        yield from _driver_entry(entry, entry_path, CLASS_PARAMETERS_INVALID, i, filters)
        yield from _model(entry, entry_path, CLASS_PARAMETERS_INVALID)
    vendor = ctx.obj.get("vendorParameters")
    for i, entry, entry_path in _driver_entries(vendor, p("vendorParameters")):
        yield from _driver_entry(entry, entry_path, CLASS_PARAMETERS_INVALID, i, vendor)


def _driver_entries(entries: Any, path: FieldPath) -> Iterator[tuple[int, dict, FieldPath]]:
    for i, entry in enumerate(_list(entries)):
        if isinstance(entry, dict):
            yield i, entry, path.child(i)


def _driver_entry(entry: dict, path: FieldPath, rule: str, index: int, entries: Any) -> Iterator[Problem]:
    driver = entry.get("driverName", "")
    if isinstance(driver, str):
        yield from driver_problems(driver, path.child("driverName"))
    earlier = [_dict(e).get("driverName", "") for e in _list(entries)[:index]]
    if driver in earlier:
        yield Problem(rule, path.child("driverName"),
                      f"driver {driver!r} has an earlier entry already; merge them (API server: Duplicate value)")


def _model(holder: dict, path: FieldPath, rule: str) -> Iterator[Problem]:
    named = holder.get("namedResources")
    if named is None:
        yield Problem(rule, path,
                      "exactly one structured model field must be set: `namedResources` (API server: Required value)")
    elif isinstance(named, dict) and not named.get("selector"):
        yield Problem(rule, path.child("namedResources", "selector"),
                      "a namedResources `selector` (a CEL expression over the instance's attributes) is required "
                      "(API server: Required value)")
