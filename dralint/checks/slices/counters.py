"""Counters of a ResourceSlice: the counter sets it shares (``sharedCounters``) and what each device
consumes of them (``consumesCounters``, with compatibility groups); counter sets and devices live in
separate slices from 1.35, while 1.33-1.34 resolve each consumption within its own slice and cap the
totals per device and per slice."""
from __future__ import annotations

from typing import Any, Iterator

from ...paths import FieldPath
from ...problems import Problem
from ..base import CheckContext, map_key, p, too_many, too_many_problem
from ...kube.validation import is_dns1123_label

COUNTERS_DEVICES_EXCLUSIVE = "DRA408"
COUNTER_CONSUMPTION_INVALID = "DRA420"
SHARED_COUNTERS_INVALID = "DRA421"

COUNTERS_XOR_DEVICES_SINCE = 35        # sharedCounters and devices in separate slices


def counters_or_devices(ctx: CheckContext, spec: dict) -> Iterator[Problem]:
    """From 1.35 a slice publishes either counter sets or devices, not both."""
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None \
            and ctx.release.at_least(COUNTERS_XOR_DEVICES_SINCE):
        yield Problem(COUNTERS_DEVICES_EXCLUSIVE, p("spec"),
                      "only one of `sharedCounters` or `devices` is allowed in a ResourceSlice since Kubernetes "
                      "1.35: publish the counter sets in their own slice of the same pool (raise "
                      "`pool.resourceSliceCount` accordingly) (API server: Invalid value)")


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


def consumption_problems(ctx: CheckContext, entries: Any, path: FieldPath) -> Iterator[Problem]:
    """A device's ``consumesCounters``: named counter sets, each once, with their counters."""
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


def counters_in_one_slice(ctx: CheckContext, spec: dict) -> Iterator[Problem]:
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


def shared_counter_problems(ctx: CheckContext, sets: Any) -> Iterator[Problem]:
    """``spec.sharedCounters``: uniquely named counter sets, each with its counters."""
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
