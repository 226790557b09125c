"""matchAttribute and distinctAttribute, checked incrementally as devices are picked (§6).

Each tracker has ``add`` (may the device join?) and ``remove`` (undo exactly one successful add),
mirroring the allocator's monotonic constraint interface.
"""
from __future__ import annotations

from typing import Any, Mapping

from .model import Constraint, Device

_SCALARS = ("int", "bool", "string", "version")
MISSING = object()   # the device lacks the attribute
_LISTS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}


def lookup_attribute(device: Device, name: str) -> Mapping[str, Any] | None:
    """Exact fully-qualified key first; else the short name when the domain is the device's driver."""
    attrs = device.attributes
    value = attrs.get(name)
    if isinstance(value, dict):
        return value
    domain, sep, short = name.partition("/")
    if not sep or domain != device.key[0]:
        return None
    value = attrs.get(short)
    return value if isinstance(value, dict) else None


def _as_set(attr: Mapping[str, Any]) -> tuple[str, frozenset] | None:
    """List and scalar values as (type, set); lists win over scalars, as in the allocator."""
    for field, kind in _LISTS.items():
        values = attr.get(field)
        if isinstance(values, list) and values:
            return kind, frozenset(_hashable(v) for v in values)
    for kind in _SCALARS:
        if attr.get(kind) is not None:
            return kind, frozenset((_hashable(attr[kind]),))
    return None


def _hashable(v: Any) -> Any:
    # bool is an int in Python: keep True and 1 apart.
    return (type(v).__name__, v) if isinstance(v, (bool, int, float, str)) else ("other", repr(v))


def scalar_value(attr: Mapping[str, Any]) -> tuple[str, Any] | None:
    """The typed scalar value of an attribute, as matchAttribute compares it (None: no scalar)."""
    for kind in _SCALARS:
        if attr.get(kind) is not None:
            return kind, _hashable(attr[kind])
    return None


def _frozen_attr(attr: Mapping[str, Any] | None) -> tuple:
    return tuple(sorted((k, _hashable(v) if not isinstance(v, list) else tuple(_hashable(x) for x in v))
                        for k, v in (attr or {}).items()))


def applies(names: frozenset[str], request: str, subrequest: str) -> bool:
    """An empty list means every request; a parent name covers all its subrequests."""
    if not names:
        return True
    return request in names or (bool(subrequest) and f"{request}/{subrequest}" in names)


class MatchAttribute:
    """All devices in scope share one value (lists: the running intersection stays non-empty)."""

    def __init__(self, constraint: Constraint, list_attributes: bool) -> None:
        self.constraint = constraint
        self.attribute = constraint.match_attribute or ""
        self.lists = list_attributes
        self.first: tuple[str, Any] | None = None       # scalar mode: type and value of the first device
        self.stack: list[tuple[str, frozenset]] = []   # list mode: intersections
        self.count = 0
        # Scalar mode: per device uid, its scalar value (``MISSING``: it lacks the attribute); the
        # search tries the same devices again and again as it steps back.
        self.scalars: dict[int, Any] = {}

    def add(self, request: str, subrequest: str, device: Device) -> bool:
        if not applies(self.constraint.requests, request, subrequest):
            return True
        if not self.lists:
            mine = self._scalar(device)
            if mine is MISSING:
                return False
            if self.count == 0:
                self.first = mine
            elif mine is None or self.first is None or mine != self.first:
                return False
            self.count += 1
            return True
        attr = lookup_attribute(device, self.attribute)
        values = None if attr is None else _as_set(attr)
        if values is None:
            return False
        if self.count:
            kind, current = self.stack[-1]
            if kind != values[0] or not current & values[1]:
                return False
            values = (kind, current & values[1])
        self.stack.append(values)
        self.count += 1
        return True

    def refuses(self, device: Device) -> bool:
        """Whether ``add`` says no to ``device`` now, for a request the constraint covers (scalar
        mode only: list values are not remembered per device)."""
        mine = self._scalar(device)
        # A first value of None refuses every later one: ``mine != None`` says so for a value.
        return mine is MISSING or (self.count > 0 and (mine is None or mine != self.first))

    def _scalar(self, device: Device) -> Any:
        """The device's scalar value of the attribute (``MISSING``: it lacks it), looked up once."""
        mine = self.scalars.get(device.uid, self)
        if mine is self:
            found = lookup_attribute(device, self.attribute)
            mine = self.scalars[device.uid] = MISSING if found is None else scalar_value(found)
        return mine

    def remove(self, request: str, subrequest: str, device: Device) -> None:
        if not applies(self.constraint.requests, request, subrequest):
            return
        self.count -= 1
        if self.lists:
            self.stack.pop()

    def state(self) -> tuple:
        """What decides the next ``add`` (comparable)."""
        if self.lists:
            return (self.count, self.stack[-1] if self.stack else None)
        return (self.count, self.first if self.count else None)


class DistinctAttribute:
    """Every device in scope has a value no other one has (lists: pairwise disjoint).

    Values are remembered per request name, so for a request with several devices only the last
    one's value is compared against (an upstream quirk, kept on purpose).
    """

    def __init__(self, constraint: Constraint, list_attributes: bool) -> None:
        self.constraint = constraint
        self.attribute = constraint.distinct_attribute or ""
        self.lists = list_attributes
        self.values: dict[str, Mapping[str, Any]] = {}
        self.count = 0

    def add(self, request: str, subrequest: str, device: Device) -> bool:
        if not applies(self.constraint.requests, request, subrequest):
            return True
        attr = lookup_attribute(device, self.attribute)
        if attr is None:
            return False
        if self.count and not all(self._distinct(attr, other) for other in self.values.values()):
            return False
        self.values[request] = attr
        self.count += 1
        return True

    def _distinct(self, attr: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
        if self.lists:
            mine, theirs = _as_set(attr), _as_set(other)
            if mine is None:
                return False
            return theirs is None or mine[0] != theirs[0] or not mine[1] & theirs[1]
        mine_s = scalar_value(attr)
        if mine_s is None:
            return False  # a list value is of no known scalar type
        return scalar_value(other) != mine_s

    def remove(self, request: str, subrequest: str, device: Device) -> None:
        if not applies(self.constraint.requests, request, subrequest):
            return
        self.values.pop(request, None)
        self.count -= 1

    def state(self) -> tuple:
        """What decides the next ``add`` (comparable)."""
        return (self.count, tuple(sorted((k, _frozen_attr(v)) for k, v in self.values.items())))


def trackers(constraints: tuple[Constraint, ...], list_attributes: bool) -> list[MatchAttribute | DistinctAttribute]:
    """Fresh trackers for one claim (constraints without either attribute are rejected earlier)."""
    out: list[MatchAttribute | DistinctAttribute] = []
    for c in constraints:
        out.append(MatchAttribute(c, list_attributes) if c.match_attribute else DistinctAttribute(c, list_attributes))
    return out
