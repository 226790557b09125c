"""Typed records of what the allocator reads, built once per run from the canonical (v1) objects.

Every reader here is defensive: the schema and semantic checks report malformed input, so a
field of the wrong type simply reads as absent and the allocator goes on with what it can use.
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import orjson

from ..bounded_cache import bounded_cache
from ..convert import Canonical
from ..paths import FieldPath
from ..kube.quantity import Quantity, QuantityError

DeviceKey = tuple[str, str, str]   # (driver, pool, device): the allocator's DeviceID
PoolKey = tuple[str, str]          # (driver, pool)


# Quantities (capacity, counters, requests) are kept in whole nano-units, the finest precision a
# Kubernetes quantity has (finer ones round up, as the API's do): sums and comparisons are then
# exact integer arithmetic, which the search does millions of times.
Nanos = int
NANO = 10**9


def nanos(value: Any) -> Nanos | None:
    """A Kubernetes quantity in nano-units; None when it does not parse."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    return _parsed_nanos(value)


# A fleet spells the same few quantities on thousands of devices ("80Gi"): parse each once.
NANOS_CACHE_BYTES = 2 << 20


@bounded_cache(NANOS_CACHE_BYTES, lambda value: sys.getsizeof(value) + 160, typed=True)
def _parsed_nanos(value: str | int | float) -> Nanos | None:
    try:
        return math.ceil(Quantity.parse(value).value * NANO)
    except QuantityError:
        return None


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class NodeTaint:
    """A Node's taint (core/v1), which a pod's tolerations answer as a device's."""

    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint | NodeTaint) -> bool:
        """``resourceclaim.ToleratesTaint`` for a device's taint, which is core/v1
        ``Toleration.ToleratesTaint`` for a node's too: empty effect and empty key with Exists match
        anything."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    default: Nanos | None
    valid_values: tuple[Nanos, ...]
    range_min: Nanos | None
    range_max: Nanos | None
    range_step: Nanos | None
    has_range: bool


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: Nanos
    policy: CapacityPolicy | None


@dataclass(eq=False, slots=True)
class Device:
    """One device of a slice; ``uid`` numbers devices within the run (cache keys)."""

    uid: int
    key: DeviceKey
    raw: dict
    attributes: Mapping[str, Any]
    capacity: Mapping[str, DeviceCapacity]
    consumes: tuple[tuple[str, Mapping[str, Nanos]], ...]
    taints: tuple[Taint, ...]
    binding_conditions: tuple[str, ...]
    binding_failure_conditions: tuple[str, ...]
    binds_to_node: bool
    allow_multiple: bool
    node_name: str
    all_nodes: bool
    node_selector: dict | None
    # Another spelling of a published capacity name (with or without the driver's domain) → the
    # published one; empty where the release matches capacity names exactly (before 1.38).
    capacity_aliases: Mapping[str, str] = field(default_factory=dict)
    # Worked out on first use into a field of its own (no ``functools.cached_property``, which needs a
    # dictionary of attributes per device; slots keep a fleet's devices at 18 references each).
    _has_policy: bool | None = field(default=None, repr=False)

    @property
    def has_policy(self) -> bool:
        """Some capacity has a request policy (the capacity check can then refuse without requests)."""
        has = self._has_policy
        if has is None:
            has = self._has_policy = any(c.policy is not None for c in self.capacity.values())
        return has

    @property
    def name(self) -> str:
        return self.key[2]

    @property
    def label(self) -> str:
        return "/".join(self.key)


@dataclass(eq=False)
class Slice:
    obj: Canonical
    name: str
    driver: str
    pool: str
    generation: int
    count: int
    node_name: str
    all_nodes: bool
    node_selector: dict | None
    per_device: bool
    counter_sets: tuple[tuple[str, Mapping[str, Nanos]], ...]
    devices: list[Device]

    @property
    def pool_key(self) -> PoolKey:
        return (self.driver, self.pool)


@dataclass(frozen=True)
class Alternative:
    """A request with ``exactly`` or one ``firstAvailable`` subrequest: what the allocator fills."""

    name: str
    parent: str                      # the parent request for subrequests, else ""
    class_name: str
    selectors: tuple[str | None, ...]  # None: a selector without ``cel``
    mode: str
    count: int
    admin_access: bool | None        # None: the field is unset
    tolerations: tuple[Toleration, ...]
    capacity: Mapping[str, Nanos] | None
    has_capacity: bool
    path: FieldPath

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name

    @property
    def names(self) -> tuple[str, str]:
        """(request, subrequest), as constraints name them (``applies``)."""
        return (self.parent, self.name) if self.parent else (self.name, "")

    @property
    def admin(self) -> bool:
        return bool(self.admin_access)


@dataclass(frozen=True)
class Request:
    name: str
    exactly: Alternative | None
    first_available: tuple[Alternative, ...]
    path: FieldPath

    @property
    def alternatives(self) -> tuple[Alternative, ...]:
        return self.first_available if self.first_available else ((self.exactly,) if self.exactly else ())


@dataclass(frozen=True)
class Constraint:
    index: int
    requests: frozenset[str]
    match_attribute: str | None
    distinct_attribute: str | None
    path: FieldPath


@dataclass(frozen=True)
class ClaimSpec:
    """The device part of a ResourceClaim, or of the claim a ResourceClaimTemplate stamps out."""

    obj: Canonical
    display: str                 # ns/name as the scheduler names it
    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...]
    spec_path: FieldPath         # ``spec`` (claims) or ``spec.spec`` (templates)
    malformed: tuple[tuple[FieldPath, str], ...] = ()   # requests that name neither exactly nor firstAvailable
    shape: Any = None            # the device claim as a hashable value: equal shapes are the same question

    @property
    def devices_path(self) -> FieldPath:
        return self.spec_path.child("devices")


@dataclass
class AllocatedState:
    """What other claims already hold: the scheduler's ``AllocatedState``."""

    dedicated: set[DeviceKey] = field(default_factory=set)
    shared: set[DeviceKey] = field(default_factory=set)
    consumed: dict[DeviceKey, dict[str, Nanos]] = field(default_factory=dict)

    def allocated(self, key: DeviceKey) -> bool:
        """Counted as allocated for shared-counter accounting."""
        return key in self.dedicated or key in self.shared or key in self.consumed


# ----------------------------------------------------------------------------- readers


def read_taint(raw: Any) -> Taint | None:
    t = _dict(raw)
    if not t:
        return None
    return Taint(_str(t.get("key")), _str(t.get("value")), _str(t.get("effect")))


def read_toleration(raw: Any) -> Toleration:
    t = _dict(raw)
    return Toleration(_str(t.get("key")), _str(t.get("operator")) or "Equal", _str(t.get("value")),
                      _str(t.get("effect")))


def _policy(raw: Any) -> CapacityPolicy | None:
    p = _dict(raw)
    if not p:
        return None
    rng = p.get("validRange")
    r = _dict(rng)
    values = tuple(v for v in (nanos(x) for x in _list(p.get("validValues"))) if v is not None)
    return CapacityPolicy(default=nanos(p.get("default")), valid_values=values,
                          range_min=nanos(r.get("min")), range_max=nanos(r.get("max")),
                          range_step=nanos(r.get("step")), has_range=isinstance(rng, dict))


def read_device(uid: int, driver: str, pool: str, raw: dict, extra_taints: tuple[Taint, ...],
                capacity_names_either_way: bool = False, alike: dict[Any, DeviceCapacity] | None = None) -> Device:
    """One device of a slice; ``alike``: capacities read before, which an equal one shares (a slice's
    devices mostly publish the same ones), also by the quantity they were read from (a string)."""
    alike = {} if alike is None else alike
    caps: dict[str, DeviceCapacity] = {}
    aliases: dict[str, str] = {}
    for name, cap in _dict(raw.get("capacity")).items():
        # The common case, a quantity without a request policy ({"value": "80Gi"}): read once per slice.
        quantity = cap.get("value") if type(cap) is dict and len(cap) == 1 else None
        read = alike.get(quantity) if type(quantity) is str else None
        if read is None:
            value = nanos(_dict(cap).get("value"))
            read = DeviceCapacity(value if value is not None else 0, _policy(_dict(cap).get("requestPolicy")))
            read = alike.setdefault(read, read)
            if type(quantity) is str:
                alike[quantity] = read
        caps[str(name)] = read
        if capacity_names_either_way:
            domain, sep, ident = str(name).partition("/")
            if not sep:
                aliases[f"{driver}/{name}"] = str(name)
            elif domain == driver:
                aliases[ident] = str(name)
    consumes = []
    for entry in _list(raw.get("consumesCounters")):
        e = _dict(entry)
        counters = {str(k): nanos(_dict(v).get("value")) or 0 for k, v in _dict(e.get("counters")).items()}
        consumes.append((_str(e.get("counterSet")), counters))
    taints = raw.get("taints")
    if taints:
        extra_taints = tuple(t for t in (read_taint(x) for x in _list(taints)) if t) + extra_taints
    selector = raw.get("nodeSelector")
    return Device(uid=uid, key=(driver, pool, _str(raw.get("name"))), raw=raw,
                  attributes=_dict(raw.get("attributes")), capacity=caps, consumes=tuple(consumes), taints=extra_taints,
                  binding_conditions=_strings(raw.get("bindingConditions")),
                  binding_failure_conditions=_strings(raw.get("bindingFailureConditions")),
                  binds_to_node=raw.get("bindsToNode") is True,
                  allow_multiple=raw.get("allowMultipleAllocations") is True,
                  node_name=_str(raw.get("nodeName")), all_nodes=raw.get("allNodes") is True,
                  node_selector=selector if isinstance(selector, dict) else None, capacity_aliases=aliases)


def _strings(value: Any) -> tuple[str, ...]:
    """A list's items as strings; () for anything else (most devices have no such list)."""
    return tuple(str(c) for c in value) if value and isinstance(value, list) else ()


_SCALARS = frozenset({bool, int, float, str, type(None)})


def _frozen(value: Any) -> Any:
    """``value`` as nested tuples (dicts sorted by key), to compare and hash."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if isinstance(value, dict):
        return tuple(sorted((str(k), v if type(v) in _SCALARS else _frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)


def shape_entry(driver: str, table: str, name: Any, value: Any) -> tuple[str, str, Any, str]:
    """What CEL can see of one attribute or capacity (``table``) of a device: (domain, id, value, kind).

    Selector results are shared between devices that agree on the entries an expression can read. The
    value is frozen as nested tuples; the kind is the value's keys for an attribute (``string``,
    ``version``), the table for a capacity.
    """
    if type(value) is dict and len(value) == 1 and type(next(iter(value.values()))) in _SCALARS:
        # The common case, one typed value ({"string": "a100"}): what _frozen makes of it, made directly.
        ((k, v),) = value.items()
        frozen, typed = ((str(k), v),), str(k)
    else:
        frozen = _frozen(value)
        typed = ",".join(map(str, value)) if isinstance(value, dict) else table
    if type(name) is str and "/" not in name:
        domain, ident = driver, name
    else:
        domain, sep, ident = str(name).partition("/")
        if not sep:
            domain, ident = driver, str(name)
    return (f"{table}:{domain}", ident, frozen, typed if table == "attributes" else table)


def read_slice(obj: Canonical, first_uid: int, rule_taints: Mapping[DeviceKey, tuple[Taint, ...]],
               capacity_names_either_way: bool = False) -> Slice:
    """A ResourceSlice; device uids start at ``first_uid``; ``capacity_names_either_way``: see
    :class:`Device` ``capacity_aliases``."""
    spec = _dict(obj.value.get("spec"))
    pool = _dict(spec.get("pool"))
    driver, pool_name = _str(spec.get("driver")), _str(pool.get("name"))
    devices: list[Device] = []
    alike: dict[Any, DeviceCapacity] = {}
    for raw in _list(spec.get("devices")):
        if isinstance(raw, dict):
            taints = rule_taints.get((driver, pool_name, _str(raw.get("name"))), ()) if rule_taints else ()
            devices.append(read_device(first_uid + len(devices), driver, pool_name, raw, taints,
                                       capacity_names_either_way, alike))
    counter_sets = []
    for cs in _list(spec.get("sharedCounters")):
        c = _dict(cs)
        counters = {str(k): nanos(_dict(v).get("value")) or 0 for k, v in _dict(c.get("counters")).items()}
        counter_sets.append((_str(c.get("name")), counters))
    generation = pool.get("generation")
    count = pool.get("resourceSliceCount")
    selector = spec.get("nodeSelector")
    return Slice(obj=obj, name=obj.name, driver=driver, pool=pool_name,
                 generation=generation if isinstance(generation, int) and not isinstance(generation, bool) else 0,
                 count=count if isinstance(count, int) and not isinstance(count, bool) else 0,
                 node_name=_str(spec.get("nodeName")), all_nodes=spec.get("allNodes") is True,
                 node_selector=selector if isinstance(selector, dict) else None,
                 per_device=spec.get("perDeviceNodeSelection") is True, counter_sets=tuple(counter_sets),
                 devices=devices)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _alternative(raw: dict, parent: str, name: str, path: FieldPath) -> Alternative:
    selectors = []
    for sel in _list(raw.get("selectors")):
        cel = sel.get("cel") if isinstance(sel, dict) else None
        expr = cel.get("expression") if isinstance(cel, dict) else None
        selectors.append(expr if isinstance(expr, str) else None)
    mode = raw.get("allocationMode")
    mode = mode if isinstance(mode, str) and mode else "ExactCount"
    count = _count(raw.get("count"))
    if mode == "ExactCount" and count == 0:
        count = 1  # defaulted by the API server
    admin = raw.get("adminAccess")
    cap_field = raw.get("capacity")
    capacity = None
    if isinstance(cap_field, dict):
        requests = _dict(cap_field.get("requests"))
        capacity = {str(k): q for k, q in ((k, nanos(v)) for k, v in requests.items()) if q is not None}
    # Most requests tolerate nothing: no generator for them.
    tolerations = raw.get("tolerations")
    return Alternative(name=name, parent=parent, class_name=_str(raw.get("deviceClassName")),
                       selectors=tuple(selectors), mode=mode, count=count,
                       admin_access=admin if isinstance(admin, bool) else None,
                       tolerations=tuple(read_toleration(t) for t in tolerations)
                       if isinstance(tolerations, list) and tolerations else (),
                       capacity=capacity, has_capacity=cap_field is not None, path=path)


def read_claim(obj: Canonical, display: str) -> ClaimSpec:
    """The device claim of a ResourceClaim or ResourceClaimTemplate."""
    spec_path = FieldPath(("spec", "spec")) if obj.kind == "ResourceClaimTemplate" else FieldPath(("spec",))
    spec: Any = obj.value
    for seg in spec_path:
        spec = _dict(spec).get(seg)
    devices = _dict(_dict(spec).get("devices"))
    shape = _claim_shape(devices)
    read = _read_alike(shape, spec_path) if isinstance(shape, (bytes, str)) else _read_devices(devices, spec_path)
    requests, constraints, malformed = read
    return ClaimSpec(obj=obj, display=display, requests=requests, constraints=constraints,
                     spec_path=spec_path, malformed=malformed, shape=shape)


def claim_selectors(obj: Canonical) -> Iterator[str]:
    """The CEL selectors a ResourceClaim's or ResourceClaimTemplate's requests write, as
    :func:`read_claim` would find them, without reading the rest."""
    spec: Any = obj.value
    for seg in ("spec", "spec") if obj.kind == "ResourceClaimTemplate" else ("spec",):
        spec = _dict(spec).get(seg)
    for raw in _list(_dict(_dict(spec).get("devices")).get("requests")):
        r = _dict(raw)
        for alt in [r.get("exactly"), *_list(r.get("firstAvailable"))]:
            for sel in _list(_dict(alt).get("selectors")):
                expr = _dict(_dict(sel).get("cel")).get("expression")
                if isinstance(expr, str):
                    yield expr


# Claims stamped from one template (or written from one example) ask the same: their devices part
# is read once. Keyed by its canonical JSON; what is read is immutable, so claims share it. An
# entry keeps the key and the strings read from it (about as many bytes again); the devices part
# of a valid claim may be hundreds of KB of selectors, so bytes bound it.
SHAPE_CACHE_BYTES = 32 << 20


@bounded_cache(SHAPE_CACHE_BYTES, lambda shape, spec_path: 2 * sys.getsizeof(shape) + 2048)
def _read_alike(shape: bytes | str, spec_path: FieldPath) -> tuple[tuple[Request, ...], tuple[Constraint, ...], tuple]:
    return _read_devices(orjson.loads(shape) if isinstance(shape, bytes) else json.loads(shape), spec_path)


def _read_devices(devices: dict, spec_path: FieldPath) -> tuple[tuple[Request, ...], tuple[Constraint, ...], tuple]:
    """Requests, constraints and malformed requests of a claim's ``devices``."""
    requests, malformed = [], []
    for i, raw in enumerate(_list(devices.get("requests"))):
        r = _dict(raw)
        name = _str(r.get("name"))
        path = spec_path.child("devices", "requests", i)
        exactly = r.get("exactly")
        subs = []
        for j, sub in enumerate(_list(r.get("firstAvailable"))):
            s = _dict(sub)
            subs.append(_alternative(s, name, _str(s.get("name")), path.child("firstAvailable", j)))
        if not isinstance(exactly, dict) and not subs:
            malformed.append((path, f"request `{name}` has neither `exactly` nor `firstAvailable`"))
            continue
        alt = _alternative(exactly, "", name, path.child("exactly")) if isinstance(exactly, dict) and not subs else None
        requests.append(Request(name=name, exactly=alt, first_available=tuple(subs), path=path))
    constraints = []
    for i, raw in enumerate(_list(devices.get("constraints"))):
        c = _dict(raw)
        match, distinct = c.get("matchAttribute"), c.get("distinctAttribute")
        constraints.append(Constraint(index=i, requests=frozenset(str(x) for x in _list(c.get("requests"))),
                                      match_attribute=match if isinstance(match, str) and match else None,
                                      distinct_attribute=distinct if isinstance(distinct, str) and distinct else None,
                                      path=spec_path.child("devices", "constraints", i)))
    return tuple(requests), tuple(constraints), tuple(malformed)


def _claim_shape(devices: dict) -> Any:
    """What makes two claims ask the same (the cache key of their judgement): the devices part as
    canonical JSON (it also tells 1 from 1.0 and true), or as nested tuples when it is not plain
    JSON. Without ``config``: the allocator never reads it, and its opaque parameters (up to 32 of
    10 KB in a valid claim) would make every key, and every cache keyed by it, that large."""
    asked = {k: v for k, v in devices.items() if k != "config"} if "config" in devices else devices
    try:
        # orjson writes a claim four times as fast as ``json``, but writes NaN and infinities as
        # null: a text with a null goes the slower way, which keeps them apart. A value orjson
        # refuses (a key that is no string, an integer past 64 bits) goes that way too. The two
        # ways give bytes and str, never equal, so a claim's key does not depend on which it took.
        shape = orjson.dumps(asked, option=orjson.OPT_SORT_KEYS)
        if b"null" not in shape:
            # A copy: orjson's bytes keep the buffer they were written in, about ten times their size.
            return bytes(memoryview(shape))
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        return json.dumps(asked, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return _frozen(asked)


def holdings(obj: Canonical, consumable_capacity: bool) -> tuple[list[DeviceKey], list[tuple[DeviceKey, dict[str, Nanos]]]]:
    """What one allocated claim holds: devices for itself, and shares of devices with the capacity each
    consumes (``shareID``, with consumable capacity on). Admin access never blocks anyone."""
    dedicated: list[DeviceKey] = []
    shares: list[tuple[DeviceKey, dict[str, Nanos]]] = []
    for res in _list(obj.get("status", "allocation", "devices", "results", default=[])):
        r = _dict(res)
        if r.get("adminAccess") is True:
            continue
        key = (_str(r.get("driver")), _str(r.get("pool")), _str(r.get("device")))
        if consumable_capacity and r.get("shareID"):
            consumed: dict[str, Nanos] = {}
            for name, q in _dict(r.get("consumedCapacity")).items():
                consumed[str(name)] = consumed.get(str(name), 0) + (nanos(q) or 0)
            shares.append((key, consumed))
        else:
            dedicated.append(key)
    return dedicated, shares
