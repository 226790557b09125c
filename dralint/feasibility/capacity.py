"""Consumable capacity (§9): what a request consumes of a device, under its request policy."""
from __future__ import annotations

from typing import Mapping

from .model import Alternative, CapacityPolicy, Device, DeviceCapacity, DeviceKey, Nanos

Consumed = dict[str, Nanos]


def _round_up(requested: Nanos, policy: CapacityPolicy) -> Nanos:
    lo = policy.range_min or 0
    if requested < lo:
        return lo
    step = policy.range_step
    if not step or step <= 0:
        return requested
    return lo - ((lo - requested) // step) * step


def consumption(requested: Nanos | None, cap: DeviceCapacity) -> tuple[Nanos, bool]:
    """What one allocation takes of a capacity, and whether that is the policy default."""
    policy = cap.policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default, True
        return cap.value, False
    if policy is None:
        return requested, False
    if policy.has_range and policy.range_min is not None:
        return _round_up(requested, policy), False
    if policy.valid_values:
        return next((v for v in policy.valid_values if requested <= v), requested), False
    return requested, False


def violates(value: Nanos, policy: CapacityPolicy | None, is_default: bool) -> bool:
    """A consumption the policy does not allow (the default itself always passes)."""
    if policy is None or is_default:
        return False
    if policy.has_range:
        if policy.range_max is not None and value > policy.range_max:
            return True
        step = policy.range_step
        if step:
            return (value - (policy.range_min or 0)) % step != 0
        return False
    if policy.valid_values:
        return value not in policy.valid_values
    return False


def published(device: Device, amounts: Mapping[str, Nanos] | None) -> Mapping[str, Nanos]:
    """``amounts`` by the device's own capacity names: from 1.38 a name with or without the driver's
    domain is the same capacity (kubernetes#142202), for requests and for what allocations hold."""
    if not amounts or not device.capacity_aliases:
        return amounts or {}
    out: dict[str, Nanos] = {}
    for name, value in amounts.items():
        key = name if name in device.capacity else device.capacity_aliases.get(name, name)
        out[key] = out.get(key, 0) + value
    return out


def fits(alt: Alternative, device: Device, held: Mapping[str, Nanos] | None,
         allocating: Mapping[str, Nanos] | None) -> bool | None:
    """``CmpRequestOverCapacity``: True/False, or None when the request names a capacity the device lacks."""
    if not alt.capacity and not alt.has_capacity and not held and not allocating and not device.has_policy:
        return True  # no request, no policy, nothing taken: every capacity is wholly there
    requested, held = published(device, alt.capacity), published(device, held)
    if any(name not in device.capacity for name in requested):
        return None
    for name, cap in device.capacity.items():
        value, is_default = consumption(requested.get(name), cap)
        if violates(value, cap.policy, is_default):
            return False
        total = value + (held or {}).get(name, 0) + (allocating or {}).get(name, 0)
        if total > cap.value:
            return False
    return True


def consumed_by(alt: Alternative, device: Device) -> Consumed:
    """The consumed capacity recorded in a shared allocation result."""
    requested = published(device, alt.capacity)
    return {name: consumption(requested.get(name), cap)[0] for name, cap in device.capacity.items()}


class Allocating:
    """Capacity taken by shares picked in the current attempt, per device."""

    def __init__(self) -> None:
        self.by_device: dict[DeviceKey, Consumed] = {}

    def insert(self, key: DeviceKey, consumed: Consumed) -> None:
        entry = self.by_device.setdefault(key, {})
        for name, value in consumed.items():
            entry[name] = entry.get(name, 0) + value

    def remove(self, key: DeviceKey, consumed: Consumed) -> None:
        entry = self.by_device.get(key)
        if entry is None:
            return
        for name, value in consumed.items():
            entry[name] = entry.get(name, 0) - value
        if all(v == 0 for v in entry.values()):
            del self.by_device[key]
