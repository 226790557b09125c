"""Per node, how many devices each kind of request could take: the fleet's counts.

A *filter* is what a request alternative asks of a device: its class, its selectors, admin
access, its tolerations and capacity requests. For every filter met in a run the counts are
taken once, for all nodes at once (numpy over the fleet's entries), and shared by every claim
that asks the same. They are upper bounds of what the search can pick on a node, so a node whose
counts fall short is certainly no place for the claim (see precheck.py).

Counts follow the world's change logs: devices taken or freed adjust the counts of their nodes;
nodes whose devices changed are counted again; a changed class drops its filters.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from .capacity import fits
from .columns import ERROR, TRUE
from .model import Alternative, Device
from .taints import blocking_taint
from .world import World

FilterKey = tuple  # (class name, selectors, admin, tolerations, capacity requests)


def filter_key(alt: Alternative) -> FilterKey:
    capacity = tuple(sorted(alt.capacity.items())) if alt.capacity else None
    return (alt.class_name, alt.selectors, alt.admin, alt.tolerations, capacity, alt.has_capacity)


@dataclass
class FilterCounts:
    """One filter: per device uid its answer, per node slot its counts."""

    key: FilterKey
    alt: Alternative
    dev_sel: np.ndarray          # int8 per uid: FALSE, TRUE (class and request selectors), ERROR
    dev_usable: np.ndarray       # bool per uid: selectable and nothing static rules it out
    sel: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))        # selectable, for the node
    free: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))       # ... and not held
    usable: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))     # ... and usable
    err_search: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # failing where the search looks
    err_all: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))    # failing on any device
    node_pos: int = 0
    hold_pos: int = 0
    size: int = 0                # uids covered


class Counts:
    """Filter counts of one world, kept in step with its changes."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._filters: dict[FilterKey, FilterCounts] = {}
        self._flat: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._flat_pos = -1
        self._class_pos = 0
        self._static: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._consumers: np.ndarray | None = None

    # ------------------------------------------------------------------ the fleet's entries

    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every node's entries as (slot, uid, here) arrays, in node order."""
        world = self.world
        states = world.states()
        if self._flat is None or self._flat_pos != len(world.node_log):
            slots = [np.full(len(st.dev), st.slot, np.int64) for st in states]
            self._flat = (np.concatenate(slots) if slots else np.zeros(0, np.int64),
                          np.concatenate([st.dev for st in states]) if states else np.zeros(0, np.int64),
                          np.concatenate([st.here for st in states]) if states else np.zeros(0, bool))
            self._flat_pos = len(world.node_log)
        return self._flat

    def _device_flags(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per uid: binding conditions (hidden without the gate), counters without the gate, blocking taints."""
        devices = self.world.selection.columns.devices
        if self._static is None or self._static[0] != len(devices):
            f = self.world.features
            binding = np.zeros(len(devices), bool)
            counters = np.zeros(len(devices), bool)
            tainted = np.zeros(len(devices), bool)
            for d in devices:
                if d is None:
                    continue
                binding[d.uid] = bool(d.binding_conditions) and not f.binding_conditions
                counters[d.uid] = bool(d.consumes) and not f.partitionable
                tainted[d.uid] = f.taints and any(t.effect in ("NoSchedule", "NoExecute") for t in d.taints)
            self._static = (len(devices), binding, counters, tainted)
        return self._static[1], self._static[2], self._static[3]

    def consumers(self) -> np.ndarray:
        """Per uid: the device consumes shared counters."""
        devices = self.world.selection.columns.devices
        if self._consumers is None or len(self._consumers) != len(devices):
            self._consumers = np.array([d is not None and bool(d.consumes) for d in devices], bool)
        return self._consumers

    # ------------------------------------------------------------------ filters

    def get(self, alt: Alternative) -> FilterCounts | None:
        """Counts for what ``alt`` asks; None when its class is missing or a selector has no CEL."""
        self._drop_changed_classes()
        cls = self.world.classes.get(alt.class_name)
        if cls is None or any(e is None for e in alt.selectors):
            return None
        key = filter_key(alt)
        fc = self._filters.get(key)
        if fc is None or fc.size != len(self.world.selection.columns.devices):
            fc = self._filters[key] = self._build(key, alt)
        else:
            self._sync(fc)
        return fc

    def _drop_changed_classes(self) -> None:
        log = self.world.class_log
        if self._class_pos < len(log):
            changed = set(log[self._class_pos:])
            self._filters = {k: v for k, v in self._filters.items() if k[0] not in changed}
            self._class_pos = len(log)

    def selected(self, alt: Alternative, selectors: tuple) -> np.ndarray:
        """Per uid, the answer of the class selectors then ``selectors`` (ERROR where one fails)."""
        world = self.world
        cls = world.classes[alt.class_name]
        columns = world.selection.columns
        n = len(columns.devices)
        binding, _, _ = self._device_flags()
        state = ~binding[:n]
        err = np.zeros(n, bool)
        for expr in cls.selectors + selectors:
            if expr is None:
                continue
            col = columns.column(expr)
            err |= state & (col == ERROR)
            state &= col == TRUE
        return np.where(err, ERROR, np.where(state, TRUE, 0)).astype(np.int8)

    def _build(self, key: FilterKey, alt: Alternative) -> FilterCounts:
        world = self.world
        dev_sel = self.selected(alt, alt.selectors)
        fc = FilterCounts(key, alt, dev_sel, self._usable(alt, dev_sel, range(len(dev_sel))))
        fc.size = len(dev_sel)
        slot, uid, here = self.flat()
        size = world.slot_count
        held = world.held[uid] if not alt.admin else np.zeros(len(uid), bool)
        sel = dev_sel[uid]
        fc.sel = np.bincount(slot[(sel == TRUE) & here], minlength=size).astype(np.int32)
        fc.free = np.bincount(slot[(sel == TRUE) & here & ~held], minlength=size).astype(np.int32)
        fc.usable = np.bincount(slot[fc.dev_usable[uid] & here & ~held], minlength=size).astype(np.int32)
        fc.err_search = np.bincount(slot[(sel == ERROR) & ~held], minlength=size).astype(np.int32)
        fc.err_all = np.bincount(slot[sel == ERROR], minlength=size).astype(np.int32)
        fc.node_pos = len(world.node_log)
        fc.hold_pos = len(world.hold_log)
        return fc

    def _usable(self, alt: Alternative, dev_sel: np.ndarray, uids: Iterable[int]) -> np.ndarray:
        """Selectable and not ruled out for this request by something that does not depend on the
        search: consuming counters without the gate, an untolerated taint, too little capacity."""
        world = self.world
        f = world.features
        _, counters, tainted = self._device_flags()
        usable = (dev_sel == TRUE) & ~counters[:len(dev_sel)]
        devices = world.selection.columns.devices
        check_taints = tainted[:len(dev_sel)] & usable
        if alt.tolerations:
            for uid in np.nonzero(check_taints)[0]:
                d = devices[uid]
                usable[uid] = d is not None and blocking_taint(d, alt) is None
        else:
            usable &= ~check_taints
        if f.consumable_capacity:
            for uid in np.nonzero(usable)[0]:
                d = devices[uid]
                if d is not None and _capacity_matters(alt, d, world):
                    usable[uid] = bool(fits(alt, d, world.allocated.consumed.get(d.key), None))
        return usable

    def _sync(self, fc: FilterCounts) -> None:
        """Apply the world's changes since ``fc`` was last in step."""
        world = self.world
        size = world.slot_count
        if len(fc.sel) < size:
            for name in ("sel", "free", "usable", "err_search", "err_all"):
                setattr(fc, name, np.concatenate([getattr(fc, name), np.zeros(size - len(getattr(fc, name)), np.int32)]))
        dirty: set[int] = set()
        for slots in world.node_log[fc.node_pos:]:
            dirty |= slots
        if fc.hold_pos < len(world.hold_log) and not fc.alt.admin:
            for uid, slot, here, sign in world.hold_log[fc.hold_pos:]:
                if slot in dirty:
                    continue
                if fc.dev_sel[uid] == TRUE and here:
                    fc.free[slot] -= sign
                if fc.dev_usable[uid] and here:
                    fc.usable[slot] -= sign
                if fc.dev_sel[uid] == ERROR:
                    fc.err_search[slot] -= sign
        fc.hold_pos = len(world.hold_log)
        fc.node_pos = len(world.node_log)
        if not dirty:
            return
        changed_uids = {int(u) for slot in dirty if (st := world.state_at(slot)) is not None for u in st.dev}
        if changed_uids and world.features.consumable_capacity:
            fresh = self._usable(fc.alt, fc.dev_sel, changed_uids)
            for u in changed_uids:
                fc.dev_usable[u] = fresh[u]
        for slot in dirty:
            st = world.state_at(slot)
            uid = st.dev if st is not None else np.zeros(0, np.int64)
            here = st.here if st is not None else np.zeros(0, bool)
            held = world.held[uid] if not fc.alt.admin else np.zeros(len(uid), bool)
            sel = fc.dev_sel[uid]
            fc.sel[slot] = np.count_nonzero((sel == TRUE) & here)
            fc.free[slot] = np.count_nonzero((sel == TRUE) & here & ~held)
            fc.usable[slot] = np.count_nonzero(fc.dev_usable[uid] & here & ~held)
            fc.err_search[slot] = np.count_nonzero((sel == ERROR) & ~held)
            fc.err_all[slot] = np.count_nonzero(sel == ERROR)


def _capacity_matters(alt: Alternative, d: Device, world: World) -> bool:
    """Whether the static capacity check can say no (requests, policies or shares in play)."""
    return bool(alt.capacity) or alt.has_capacity or d.key in world.allocated.consumed or any(
        c.policy is not None for c in d.capacity.values())
