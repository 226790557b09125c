"""ResourcePoolStatusRequest (resource.k8s.io/v1alpha3, 1.36+, gate DRAResourcePoolStatus).

A one-time question to the control plane: "what is the state of the pools of this driver?".
The spec names a ``driver`` (required; declarative format ``k8s-long-name``: a lowercase DNS
subdomain of at most 253 characters, not the 63-character, case-blind rule of a slice's driver), optionally a ``poolName`` (when given, even empty, one or more DNS
subdomains separated by '/', at most 253 characters) and a ``limit`` from 1 to 1000 (default
100). From 1.37 a ``defaultPartitionTypeAttribute`` may name a fully qualified
attribute (gate DRAPartitionableDevicesType, forbidden while it is off). The spec is immutable; status is only written through ``/status`` by the controller:
once written it is immutable (the request is complete); pools need a driver, a pool name, a valid
node name when given, and counts that are not negative when given (``resourceSliceCount`` ≥ 1);
``poolCount`` is ≥ 0. The fields are those of the released API (1.36's OpenAPI: ``poolCount``,
``resourceSliceCount``, ``validationError``), which renamed those of its pre-release code.

Read at kubernetes/kubernetes ``staging/src/k8s.io/api/resource/v1alpha3/types.go`` (the
declarative tags: ``+k8s:format=k8s-long-name``, ``k8s-resource-pool-name``,
``+k8s:minimum=1``) and ``pkg/apis/resource/validation/validation_resourcepoolstatusrequest.go``
at 277346a59d867394e96c25f2a36a5919c73427ca.

Rules: DRA460 pool-status-request-invalid, DRA461 pool-status-request-update-invalid.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from ..paths import FieldPath
from .base import CheckContext, p
from ..problems import Problem
from .conditions import condition_problems
from ..kube.validation import is_dns1123_subdomain
from .formats import pool_name_errors, qualified_attribute_errors

KINDS: frozenset[str] = frozenset({"ResourcePoolStatusRequest"})

SPEC_INVALID = "DRA460"
UPDATE_INVALID = "DRA461"

RULES = ("DRA460", "DRA461")

LIMIT_MIN, LIMIT_MAX = 1, 1000
_WORDS = {"Required": "Required value", "TooLong": "Too long", "Invalid": "Invalid value"}
_COUNTS = ("totalDevices", "allocatedDevices", "availableDevices", "unavailableDevices", "generation")


def check(ctx: CheckContext) -> Iterable[Problem]:
    """Problems of one ResourcePoolStatusRequest: its spec, and on update what may change."""
    spec = ctx.obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    if not ctx.is_update or ctx.old is None:
        # On update only immutability is checked (an unchanged spec is not judged again).
        yield from _spec(spec, SPEC_INVALID)
        if spec.get("defaultPartitionTypeAttribute") is not None:
            yield from _default_partition_type(ctx, spec["defaultPartitionTypeAttribute"])
        return  # status is dropped on create
    if ctx.subresource != "status":
        old_spec = ctx.old.get("spec")
        if (old_spec if isinstance(old_spec, dict) else {}) != spec:
            yield Problem(UPDATE_INVALID, p("spec"),
                          "the spec of a ResourcePoolStatusRequest is immutable: delete the request and create a "
                          "new one to ask again (API server: Invalid value, \"field is immutable\")")
        return
    status, old_status = ctx.obj.get("status"), ctx.old.get("status")
    status = status if isinstance(status, dict) else {}
    if old_status is not None:
        if status != (old_status if isinstance(old_status, dict) else {}):
            yield Problem(UPDATE_INVALID, p("status"),
                          "the status is complete (it was written once) and can no longer change: create a new "
                          "request for fresh figures (API server: Invalid value, \"field is immutable\")")
        return
    yield from _status(status)


def long_name_errors(value: str) -> list[tuple[str, str]]:
    """(error type, message) pairs of the declarative format ``k8s-long-name`` (required): a lowercase
    DNS subdomain of at most 253 characters. It is what a ResourcePoolStatusRequest's driver and node
    names must be; the handwritten driver-name rule of ResourceSlices (63 characters, any case) is
    marked covered by it and does not apply (the API server of 1.36 takes a 200-character driver here)."""
    if not value:
        return [("Required", "a name is required")]
    return [("TooLong" if "no more than" in msg else "Invalid", msg) for msg in is_dns1123_subdomain(value)]


def _spec(spec: dict, rule: str) -> Iterator[Problem]:
    driver = spec.get("driver", "")
    if isinstance(driver, str):
        for kind, msg in long_name_errors(driver):
            text = "a driver is required: the DRA driver whose pools to report, e.g. gpu.example.com" \
                if kind == "Required" else f"driver {driver!r} is not a valid driver name: {msg}"
            yield Problem(rule, p("spec", "driver"), f"{text} (API server: {_WORDS[kind]})")
    pool = spec.get("poolName")
    if isinstance(pool, str):
        # A pointer in the Go type: an empty string is set, and is not a pool name.
        for kind, msg in pool_name_errors(pool):
            text = "poolName is empty; leave it out to ask about every pool of the driver" if kind == "Required" \
                else f"pool name {pool!r} is not valid: {msg}; a pool name is DNS subdomains separated by '/'"
            yield Problem(rule, p("spec", "poolName"), f"{text} (API server: {_WORDS.get(kind, 'Invalid value')})")
    limit = spec.get("limit")
    if isinstance(limit, int) and not isinstance(limit, bool) and not LIMIT_MIN <= limit <= LIMIT_MAX:
        bound = f"greater than or equal to {LIMIT_MIN}" if limit < LIMIT_MIN else f"less than or equal to {LIMIT_MAX}"
        yield Problem(rule, p("spec", "limit"),
                      f"limit is {limit}; it must be {bound} (leave it out for the default of 100) (API server: "
                      "Invalid value)", details={"limit": limit})


def _default_partition_type(ctx: CheckContext, name: Any) -> Iterator[Problem]:
    """1.37's ``defaultPartitionTypeAttribute``: a fully qualified attribute name, behind the gate
    DRAPartitionableDevicesType like the slices' ``partitionTypeAttribute`` (forbidden while off)."""
    path = p("spec", "defaultPartitionTypeAttribute")
    if not ctx.gate("DRAPartitionableDevicesType"):
        yield Problem(SPEC_INVALID, path,
                      "`defaultPartitionTypeAttribute` needs feature gate DRAPartitionableDevicesType, which is off "
                      f"in Kubernetes {ctx.release.version}; enable it or remove the field (API server: Forbidden)")
        return
    if isinstance(name, str):
        errors = qualified_attribute_errors(name, fully_qualified=True, multi_slash_ok=ctx.limits.multi_slash_names)
        for _, msg in errors[:1]:
            yield Problem(SPEC_INVALID, path, f"{name!r} is not a fully qualified attribute name: {msg} (API server: "
                                              "Invalid value)")


def _status(status: dict) -> Iterator[Problem]:
    pools = status.get("pools")
    for i, pool in enumerate(pools if isinstance(pools, list) else ()):
        if isinstance(pool, dict):
            yield from _pool(pool, p("status", "pools", i))
    conditions = status.get("conditions")
    yield from condition_problems(conditions if isinstance(conditions, list) else [], p("status", "conditions"),
                                  UPDATE_INVALID)
    count = status.get("poolCount")
    if isinstance(count, int) and not isinstance(count, bool) and count < 0:
        yield Problem(UPDATE_INVALID, p("status", "poolCount"),
                      f"poolCount is {count}; it must be non-negative (API server: Invalid value)")


def _pool(pool: dict, path: FieldPath) -> Iterator[Problem]:
    for name, errors in (("driver", long_name_errors), ("poolName", pool_name_errors)):
        value = pool.get(name, "")
        if isinstance(value, str):
            for kind, msg in errors(value):
                yield Problem(UPDATE_INVALID, path.child(name), f"{name} {value!r}: {msg} (API server: {_WORDS[kind]})")
    node = pool.get("nodeName")
    if isinstance(node, str) and node:
        for kind, msg in long_name_errors(node):
            yield Problem(UPDATE_INVALID, path.child("nodeName"),
                          f"nodeName {node!r} is not a valid node name: {msg} (API server: {_WORDS[kind]})")
    # The counts may be left out (a pool whose validationError is set); given, they are not negative.
    for name in _COUNTS + ("resourceSliceCount",):
        value = pool.get(name, 0)
        least = 1 if name == "resourceSliceCount" else 0
        if isinstance(value, int) and not isinstance(value, bool) and value < least:
            yield Problem(UPDATE_INVALID, path.child(name),
                          f"{name} is {value}; it must be at least {least} (API server: Invalid value)")
