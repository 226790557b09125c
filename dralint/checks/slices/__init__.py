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

By subject: ``pool`` (the slice's own fields), ``devices``, ``attributes``, ``capacity``,
``counters`` and ``allocatable``; driver, pool, node and device names, taints and binding
conditions are the shared validators of ``..fields``, node selectors those of ``..nodeselector``.
"""
from __future__ import annotations

from typing import Iterable

from ...kube.shapes import FLAT_VERSIONS
from ...problems import Problem
from ..base import CheckContext, p, ratcheted
from . import attributes, counters, devices, pool

KINDS: frozenset[str] = frozenset({"ResourceSlice"})

RULES = ("DRA400", "DRA401", "DRA402", "DRA403", "DRA404", "DRA405", "DRA406", "DRA407", "DRA408", "DRA409",
         "DRA410", "DRA411", "DRA412", "DRA413", "DRA414", "DRA415", "DRA416", "DRA417", "DRA418", "DRA419",
         "DRA420", "DRA421", "DRA422", "DRA423", "DRA424", "DRA425", "DRA426", "DRA427", "DRA428")


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

    yield from pool.slice_driver_problems(spec)
    yield from pool.pool_problems(spec.get("pool"))
    if old_spec is not None:
        yield from pool.immutable_problems(spec, old_spec, flat)
    yield from pool.node_selection_problems(spec, ctx.release, flat)
    yield from counters.counters_or_devices(ctx, spec)
    # An update that leaves the atomic `spec.devices` as stored keeps what its devices hold already.
    unchanged = old_spec is not None and old_spec.get("devices") == spec.get("devices")
    yield from devices.device_list_problems(ratcheted(ctx) if unchanged else ctx, spec, old_spec)
    yield from counters.shared_counter_problems(ctx, spec.get("sharedCounters"))
    if not ctx.release.at_least(counters.COUNTERS_XOR_DEVICES_SINCE):
        yield from counters.counters_in_one_slice(ctx, spec)
    yield from pool.skip_node_operations_problems(spec.get("skipNodeOperations"), p("spec", "skipNodeOperations"))
    if spec.get("partitionTypeAttribute") is not None:
        kept = old_spec is not None and old_spec.get("partitionTypeAttribute") == spec["partitionTypeAttribute"]
        yield from attributes.partition_type_problems(ratcheted(ctx) if kept else ctx, spec)
