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

import sys
import weakref
from dataclasses import dataclass, field
from typing import Mapping, Protocol, cast

import numpy as np

from ..sizes import deep_size
from .capacity import fits
from .columns import ERROR, TRUE
from .constraints import lookup_attribute, scalar_value
from .lru import Lru
from .model import AllocatedState, Alternative, Device, DeviceKey
from .taints import blocking_taint

from .node_state import NodeState
from .pools import Features
from .selection import DeviceClassInfo, Selection, expressions_bytes


class CountedWorld(Protocol):
    """What the counts read of their world (world.World): its change logs, its devices and classes.

    A view, not the world's class: the world owns its counts, and the counts know it only by this.
    """

    features: Features
    selection: Selection
    allocated: AllocatedState
    node_log: list[set[int]]
    hold_log: list[tuple[int, int, bool, int]]
    held: np.ndarray
    held_token: int

    @property
    def classes(self) -> Mapping[str, DeviceClassInfo]: ...   # read only: the world's dict is one

    @property
    def slot_count(self) -> int: ...

    def nodes_changed(self) -> bool: ...

    def states(self) -> list[NodeState]: ...

    def state_at(self, slot: int) -> NodeState | None: ...

    def uids_of(self, key: DeviceKey) -> list[int]: ...

FilterKey = tuple  # (class selectors, selectors, admin, tolerations, capacity requests)
_MAX_VALUES = 64   # per-value counts only for attributes with few values (pcieRoot, numa, model ...)
# Bounds of what the counts remember (they live as long as the world: the webhook's, for days).
# By bytes: a run asks thousands of distinct filters (the benchmark corpus: 3,247), and counting
# one again costs a pass over the fleet; what one weighs grows with the fleet, and its key holds
# what the claim wrote (up to 32 selectors of 10 KB).
MAX_FILTER_BYTES = 128 << 20     # each: up to five arrays per node (shared when equal), rarely one per device
# Per (filter, attribute): nodes x values. Asked again soon or never: on the 17 MiB benchmark file
# 99 % of the reuses come within 15 MB of more recent counts of 8 bytes each (64 MB kept 39 MB to no
# use); counts of 2 bytes (see ``count_type``) reach as far back in a quarter of that.
MAX_VALUE_COUNT_BYTES = 4 << 20
MAX_VALUE_ID_BYTES = 16 << 20    # per attribute a claim's constraint names: one value id per device
_PER_NODE = ("sel", "free", "usable", "err_search", "err_all")
_NARROW_MOST = int(np.iinfo(np.int16).max)   # the most entries a node may have for counts of 2 bytes


# What a request alternative holds beside the selectors, tolerations and capacity of its key: its
# names and field path (``deep_size`` finds about 1.5 KB).
_ALT_BYTES = 2048


# What ``deep_size`` finds in a key without tolerations and capacity requests (nearly every key).
_BARE_REST = deep_size(((), None))


def key_bytes(key: FilterKey) -> int:
    """Estimated bytes of a filter key: the selectors' text (up to 32 of 10 KB each) and the rest.
    Summed, not walked by ``deep_size``: asked for every filter counted, thousands per run."""
    class_selectors, selectors, _, tolerations, capacity, _ = key
    rest = deep_size((tolerations, capacity)) if tolerations or capacity else _BARE_REST
    return sys.getsizeof(key) + expressions_bytes(class_selectors) + expressions_bytes(selectors) + rest


def filter_key(alt: Alternative, class_selectors: tuple) -> FilterKey:
    """What a device is asked by ``alt`` of a class with ``class_selectors``: classes that select
    alike (one per team, each with the same expression) share their counts, and a changed class
    simply asks under another key."""
    capacity = tuple(sorted(alt.capacity.items())) if alt.capacity else None
    return (class_selectors, alt.selectors, alt.admin, alt.tolerations, capacity, alt.has_capacity)


@dataclass
class FilterCounts:
    """One filter: per device uid its answer, per node slot its counts.

    Most filters meet no taint, counter or capacity and no device that is held or fails: their
    per-node arrays are then one array, shared, and ``dev_usable`` is worked out from ``dev_sel``
    when asked. Whoever changes an array in place calls ``own`` first.

    The selector answers are not kept here: the selection's cache of combined answers holds (and
    weighs) them, read-only, and works them out again from its columns when it has let them go
    (they were the half of these counts' bytes, 62 MB on the 17 MiB benchmark file, held twice).
    """

    key: FilterKey
    alt: Alternative
    selection: Selection         # whose combined answers of ``expressions`` are ``dev_sel``
    expressions: tuple[str | None, ...]   # the class selectors, then the request's
    usable_own: np.ndarray | None  # bool per uid: selectable and nothing static rules it out (None: = selectable)
    sel: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))        # selectable, for the node
    free: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))       # ... and not held
    usable: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))     # ... and usable
    err_search: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # failing where the search looks
    err_all: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))    # failing on any device
    node_pos: int = 0
    hold_pos: int = 0
    size: int = 0                # uids covered
    has_errors: bool = False     # a device where a selector fails (then the err arrays count them)
    key_bytes: int = 0           # what the key and the request alternative hold (estimated once)

    @property
    def dev_sel(self) -> np.ndarray:
        """int8 per uid, read-only: FALSE, TRUE (class and request selectors), ERROR."""
        return self.selection.combined(self.expressions)

    @property
    def dev_usable(self) -> np.ndarray:
        """Per uid: selectable and nothing static rules it out."""
        return self.usable_own if self.usable_own is not None else self.dev_sel == TRUE

    def own(self) -> None:
        """Give every array its own memory, before one is changed in place."""
        if self.usable_own is None:
            self.usable_own = self.dev_sel == TRUE
        seen: set[int] = set()
        for name in _PER_NODE:
            array = getattr(self, name)
            if id(array) in seen or not array.flags.writeable:
                setattr(self, name, array.copy())
            seen.add(id(getattr(self, name)))

    def nbytes(self) -> int:
        """Bytes of its arrays (each counted once; the counts' shared zeros and the selection's
        answers not at all), key and request alternative."""
        per_node = [a for a in (getattr(self, n) for n in _PER_NODE) if a.flags.writeable]
        arrays = {id(a): a for a in (self.usable_own, *per_node) if a is not None}
        return sum(a.nbytes for a in arrays.values()) + self.key_bytes


@dataclass
class _DeviceFlags:
    """Per uid, what a device is whatever is asked of it; extended as devices are added."""

    counters: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))    # consumes counters, gate off
    tainted: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))     # a taint that blocks
    consumers: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))   # consumes shared counters
    policy: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))      # a capacity request policy
    multi: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))       # may be allocated many times
    some_counters: bool = False     # counters.any(), tainted.any(): most fleets have neither
    some_tainted: bool = False


class Counts:
    """Filter counts of one world, kept in step with its changes.

    The world owns one for its life; every judgement against it shares what was counted, and a
    change (a slice, a node, a claim) is applied to the counts it touches, not counted again.
    """

    def __init__(self, world: CountedWorld) -> None:
        # Weak: the world owns its counts, and a back-reference would make every world a reference cycle,
        # freed only by a full walk of the collector (the webhook replaces worlds of a million objects).
        self._world = weakref.ref(world)
        self._filters: Lru[FilterKey, FilterCounts] = Lru(MAX_FILTER_BYTES, lambda _, fc: fc.nbytes())
        self._flat: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._flat_pos = -1
        self._home: _Homes | None = None
        self._everywhere: np.ndarray | None = None   # the last ``slots`` found to be every slot in order
        self._count_type: type = np.int16
        self._flags = _DeviceFlags()
        self._capacity: tuple[tuple, np.ndarray, bool] | None = None
        self._values: Lru[str, tuple[np.ndarray, int]] = Lru(
            MAX_VALUE_ID_BYTES, lambda attribute, value: sys.getsizeof(attribute) + value[0].nbytes)
        # Per (filter, attribute): the counts per node and value, and per node the most of one value.
        self._by_value: Lru[tuple, tuple[np.ndarray, np.ndarray]] = Lru(
            MAX_VALUE_COUNT_BYTES,
            lambda key, have: key_bytes(key[0]) + sys.getsizeof(key[1]) + 200 + have[0].nbytes + have[1].nbytes)
        # Most filters fail on no device: their error counts are these zeros, shared and read-only
        # (``own`` copies them before a change), not two arrays per node of their own (27 MB of the
        # 17 MiB benchmark file's 3,000 filters).
        self._zeros = np.zeros(0, np.int32)

    @property
    def world(self) -> CountedWorld:
        """The world these counts belong to (alive for as long as they are used)."""
        return cast(CountedWorld, self._world())

    def drop_caches(self) -> int:
        """Forget every filter's counts and the per-value counts (counted again when asked); the
        bytes they held, as estimated. The fleet's entries and the devices' flags stay."""
        return self._filters.clear() + self._values.clear() + self._by_value.clear()

    def _no_errors(self, size: int, kind: type) -> np.ndarray:
        """Read-only zero counts of type ``kind`` for ``size`` node slots, shared by the filters that
        fail nowhere."""
        if len(self._zeros) != size or self._zeros.dtype != kind:
            self._zeros = np.zeros(size, kind)
            self._zeros.flags.writeable = False
        return self._zeros

    # ------------------------------------------------------------------ the fleet's entries

    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every node's entries as (slot, uid, here) arrays, in node order."""
        world = self.world
        if self._flat is None or self._flat_pos != len(world.node_log) or world.nodes_changed():
            states = world.states()
            sizes = np.fromiter((len(st.dev) for st in states), np.int64, len(states))
            most = int(sizes.max()) if len(sizes) else 0
            self._count_type = np.int16 if most <= _NARROW_MOST else np.int32
            self._flat = (np.repeat(np.fromiter((st.slot for st in states), np.int64, len(states)), sizes),
                          np.concatenate([st.dev for st in states]) if states else np.zeros(0, np.int64),
                          np.concatenate([st.here for st in states]) if states else np.zeros(0, bool))
            self._flat_pos = len(world.node_log)
            self._home = _Homes.of(*self._flat)
        return self._flat

    def count_type(self) -> type:
        """The integer type of counts per node: the narrowest that holds the most entries a node has
        (int16 for any real node). The filters' counts are the largest part of the stage's memory, and
        they are only compared, never summed."""
        self.flat()
        return self._count_type

    def everywhere(self, slots: np.ndarray) -> bool:
        """Whether ``slots`` are every node slot, in order: then what is per slot needs no gather (5 µs
        each for 2,000 nodes, asked a few times per claim). A pod without node selection asks with the
        same array each time (its node set is kept), so that is recognised without a look at it."""
        size = self.world.slot_count
        if len(slots) != size:
            return False
        if slots is self._everywhere:
            return True
        if not np.array_equal(slots, np.arange(size)):
            return False
        self._everywhere = slots
        return True

    def entries(self, fc: FilterCounts) -> np.ndarray:
        """Positions in ``flat`` of the devices ``fc`` selects, on their node, in no particular order.
        A filter selects a small part of the fleet: what is asked about its devices is cheaper on these
        than on every entry. (Not kept: one pass over the devices, against the weight of one more array
        per filter; a cache of the last 512 KB of them, a quarter of the asks hit, cost more than it saved.)"""
        return self._entries_of(self.world.selection.taken(fc.expressions))

    def _entries_of(self, uids: np.ndarray) -> np.ndarray:
        """Positions in ``flat``, in no particular order, of the entries on their node of the devices
        ``uids`` (ascending). Where every device is an entry once at most (a device on one node), read
        off the devices' homes: the cost follows the devices, not the fleet's entries."""
        _, uid, here = self.flat()
        home = self._home
        if home is None:
            chosen = np.zeros(len(self.world.selection.columns.devices), bool)
            chosen[uids] = True
            return np.flatnonzero(chosen[uid] & here)
        if len(uids) and uids[-1] >= len(home.entry):       # devices on no node yet
            uids = uids[:np.searchsorted(uids, len(home.entry))]
        at = home.entry[uids]
        if home.gaps:
            at = at[at >= 0]
        if not home.all_here:
            at = at[here[at]]
        return at

    def entries_of(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The entries of the nodes at ``slots`` (``flat`` itself when they are a good part of the
        fleet): what is counted for a few nodes costs as much as the few nodes."""
        slot, uid, here = self.flat()
        if 4 * len(slots) >= self.world.slot_count:
            return slot, uid, here
        wanted = np.zeros(self.world.slot_count, bool)
        wanted[slots] = True
        keep = wanted[slot]
        return slot[keep], uid[keep], here[keep]

    def warm(self) -> None:
        """Work out the fleet's entries and the devices' flags before the first filter asks."""
        self.flat()
        self._device_flags()

    def _device_flags(self) -> _DeviceFlags:
        """The static flags, extended to devices added since last asked (uids only grow)."""
        devices = self.world.selection.columns.devices
        flags = self._flags
        start = len(flags.counters)
        if start < len(devices):
            f = self.world.features
            new = devices[start:]
            consumers = np.fromiter((d is not None and bool(d.consumes) for d in new), bool, len(new))
            tainted = np.fromiter((f.taints and d is not None and _blocking_effect(d) for d in new), bool, len(new))
            policy = np.fromiter((d is not None and d.has_policy for d in new), bool, len(new))
            flags.consumers = np.concatenate([flags.consumers, consumers])
            flags.counters = np.concatenate([flags.counters, consumers & (not f.partitionable)])
            flags.tainted = np.concatenate([flags.tainted, tainted])
            flags.policy = np.concatenate([flags.policy, policy])
            multi = np.fromiter((f.consumable_capacity and d is not None and d.allow_multiple for d in new), bool,
                                len(new))
            flags.multi = np.concatenate([flags.multi, multi])
            flags.some_counters, flags.some_tainted = bool(flags.counters.any()), bool(flags.tainted.any())
        return flags

    def tainted(self) -> np.ndarray:
        """Per uid: the device has a taint that blocks (with DRADeviceTaints on)."""
        return self._device_flags().tainted

    def multi(self) -> np.ndarray:
        """Per uid: the device may be allocated many times (DRAConsumableCapacity on)."""
        return self._device_flags().multi

    def consumers(self) -> np.ndarray:
        """Per uid: the device consumes shared counters."""
        return self._device_flags().consumers

    # ------------------------------------------------------------------ filters

    def key(self, alt: Alternative) -> FilterKey | None:
        """The filter ``alt`` asks (``get``'s key); None when its class is missing or a selector has no CEL."""
        cls = self.world.classes.get(alt.class_name)
        if cls is None or None in alt.selectors:
            return None
        return filter_key(alt, cls.selectors)

    def get(self, alt: Alternative) -> FilterCounts | None:
        """Counts for what ``alt`` asks; None when its class is missing or a selector has no CEL."""
        # Asked several times per request judged: a hit in step with the world returns at once.
        world = self.world
        key = self.key(alt)
        if key is None:
            return None
        fc = self._filters.get(key)
        if fc is None or fc.size != len(world.selection.columns.devices):
            return self._filters.put(key, self._build(key, alt))
        if fc.node_pos != len(world.node_log) or fc.hold_pos != len(world.hold_log) or len(fc.sel) < world.slot_count:
            if not self._sync(fc):
                return self._filters.put(key, self._build(key, alt))
        return fc

    def by_value(self, alt: Alternative, attribute: str, relaxed: bool = False) -> np.ndarray | None:
        """Per value of ``attribute`` (rows) and node slot (columns), how many devices ``alt`` could
        take that have it (``relaxed``: ignoring taints and capacity). None when values cannot be told
        apart this way (list-type attributes, too many values). Values first: what is asked of every
        node at once (the most of one value, some value enough) runs along whole rows, ten times as
        fast as along rows of a few values."""
        have = self._by_value_and_most(alt, attribute, relaxed)
        return None if have is None else have[0]

    def most_of_one_value(self, alt: Alternative, attribute: str, relaxed: bool = False) -> np.ndarray | None:
        """Per node slot, the most devices ``alt`` could take that share one value of ``attribute``
        (the largest of ``by_value``'s row, kept beside it: asked for every claim with a constraint)."""
        have = self._by_value_and_most(alt, attribute, relaxed)
        return None if have is None else have[1]

    def _by_value_and_most(self, alt: Alternative, attribute: str, relaxed: bool) -> tuple[np.ndarray, np.ndarray] | None:
        world = self.world
        if world.features.list_attributes:
            return None
        fc = self.get(alt)
        if fc is None:
            return None
        ids, nvals = self.value_ids(attribute)
        if nvals > _MAX_VALUES:
            return None
        key = (fc.key, attribute, relaxed, len(world.node_log), world.held_token, fc.size)
        have = self._by_value.get(key)
        if have is None:
            slot, uid, _ = self.flat()
            taken = self.entries(fc)
            if not relaxed and fc.usable_own is not None:
                taken = taken[fc.usable_own[uid[taken]]]
            value = ids[uid[taken]]
            keep = value >= 0
            if not alt.admin:
                keep &= ~world.held[uid[taken]]
            size, width = world.slot_count, max(nvals, 1)
            cells = np.bincount(value[keep] * size + slot[taken[keep]], minlength=size * width)
            counted: np.ndarray = cells.astype(self.count_type()).reshape(width, size)
            have = self._by_value.put(key, (counted, counted.max(axis=0)))
        return have

    def value_ids(self, attribute: str) -> tuple[np.ndarray, int]:
        """Per uid, which value of ``attribute`` the device has (-1: none), and how many values there are."""
        devices = self.world.selection.columns.devices
        have = self._values.get(attribute)
        if have is None or len(have[0]) != len(devices):
            seen: dict = {}
            ids = np.full(len(devices), -1, np.int32)
            for d in devices:
                if d is None:
                    continue
                attr = lookup_attribute(d, attribute)
                value = scalar_value(attr) if attr is not None else None
                if value is not None:
                    ids[d.uid] = seen.setdefault(value, len(seen))
            have = self._values.put(attribute, (ids, len(seen)))
        return have

    def selected(self, alt: Alternative, selectors: tuple) -> np.ndarray:
        """Per uid, the answer of the class selectors then ``selectors`` (ERROR where one fails)."""
        return self.world.selection.combined(self.world.classes[alt.class_name].selectors + selectors)

    def _build(self, key: FilterKey, alt: Alternative) -> FilterCounts:
        # Once per filter (thousands per run), over every device and entry of the fleet: the passes
        # that cannot change the counts (nothing held, nothing refused beyond the selectors) are skipped.
        world = self.world
        expressions = key[0] + alt.selectors
        dev_sel, taken, failing = world.selection.selected(expressions)
        selectable = dev_sel == TRUE
        usable = self._usable(alt, selectable)
        fc = FilterCounts(key, alt, world.selection, expressions,
                          None if usable is selectable or np.array_equal(usable, selectable) else usable)
        fc.size = len(dev_sel)
        fc.key_bytes = key_bytes(key) + _ALT_BYTES + (deep_size(alt.capacity) if alt.capacity else 0)
        slot, uid, _ = self.flat()
        size, kind = world.slot_count, self.count_type()
        held = not alt.admin and bool(world.held.any())
        # The entries of the selected devices on their node, then those of them not held, then
        # usable: each a part of the one before.
        mine = self._entries_of(taken)
        fc.sel = np.bincount(slot[mine], minlength=size).astype(kind)
        if held:
            mine = mine[~world.held[uid[mine]]]
            fc.free = np.bincount(slot[mine], minlength=size).astype(kind)
        else:
            fc.free = fc.sel
        if fc.usable_own is None:
            fc.usable = fc.free
        else:
            fc.usable = np.bincount(slot[mine[usable[uid[mine]]]], minlength=size).astype(kind)
        fc.has_errors = len(failing) > 0
        if fc.has_errors:
            failed = dev_sel[uid] == ERROR
            fc.err_search = np.bincount(slot[failed & ~world.held[uid] if held else failed],
                                        minlength=size).astype(kind)
            fc.err_all = np.bincount(slot[failed], minlength=size).astype(kind)
        else:
            fc.err_search = fc.err_all = self._no_errors(size, kind)
        fc.node_pos = len(world.node_log)
        fc.hold_pos = len(world.hold_log)
        return fc

    def _usable(self, alt: Alternative, selectable: np.ndarray) -> np.ndarray:
        """Selectable and not ruled out for this request by something that does not depend on the
        search: consuming counters without the gate, an untolerated taint, too little capacity.
        ``selectable`` itself when nothing can rule a device out."""
        world = self.world
        f = world.features
        flags = self._device_flags()
        n = len(selectable)
        usable = selectable & ~flags.counters[:n] if flags.some_counters else selectable
        devices = world.selection.columns.devices
        check_taints = flags.tainted[:n] & usable if flags.some_tainted else None
        if check_taints is not None and check_taints.any():
            if alt.tolerations:
                usable = usable.copy() if usable is selectable else usable
                for uid in np.nonzero(check_taints)[0]:
                    d = devices[uid]
                    usable[uid] = d is not None and blocking_taint(d, alt) is None
            else:
                usable = usable & ~check_taints
        check: np.ndarray | None = None
        if f.consumable_capacity:
            if alt.capacity or alt.has_capacity:
                check = usable
            else:
                refusing, some = self._capacity_flags()
                check = usable & refusing[:n] if some else None
        if check is not None:
            uids = np.nonzero(check)[0]
            if len(uids):
                usable = usable.copy() if usable is selectable else usable
            for uid in uids:
                d = devices[uid]
                if d is not None:
                    usable[uid] = bool(fits(alt, d, world.allocated.consumed.get(d.key), None))
        return usable

    def capacity_flags(self) -> np.ndarray:
        """Per uid: the capacity check can refuse even without requests (policies, shares held)."""
        return self._capacity_flags()[0]

    def _capacity_flags(self) -> tuple[np.ndarray, bool]:
        """``capacity_flags``, and whether any is set (when none is, a request without capacity
        requests leaves the capacity check out)."""
        world = self.world
        policy = self._device_flags().policy
        key = (len(policy), world.held_token, len(world.hold_log), len(world.node_log))
        if self._capacity is None or self._capacity[0] != key:
            flags = policy.copy()
            for device_key in world.allocated.consumed:
                flags[world.uids_of(device_key)] = True
            self._capacity = (key, flags, bool(flags.any()))
        return self._capacity[1], self._capacity[2]

    def _sync(self, fc: FilterCounts) -> bool:
        """Apply the world's changes since ``fc`` was last in step; False when it must be counted
        again instead (a node has come to hold more entries than its counts' type holds)."""
        world = self.world
        size = world.slot_count
        holds = fc.hold_pos < len(world.hold_log) and not fc.alt.admin
        if fc.node_pos == len(world.node_log) and not holds and len(fc.sel) >= size:
            fc.hold_pos = len(world.hold_log)
            return True
        if fc.sel.dtype != self.count_type():
            return False
        fc.own()
        if len(fc.sel) < size:
            for name in _PER_NODE:
                counted = getattr(fc, name)
                setattr(fc, name, np.concatenate([counted, np.zeros(size - len(counted), counted.dtype)]))
        dirty: set[int] = set()
        for slots in world.node_log[fc.node_pos:]:
            dirty |= slots
        dev_sel, dev_usable = fc.dev_sel, fc.dev_usable
        if holds:
            for uid, slot, here, sign in world.hold_log[fc.hold_pos:]:
                if slot in dirty:
                    continue
                if dev_sel[uid] == TRUE and here:
                    fc.free[slot] -= sign
                if dev_usable[uid] and here:
                    fc.usable[slot] -= sign
                if dev_sel[uid] == ERROR:
                    fc.err_search[slot] -= sign
        fc.hold_pos = len(world.hold_log)
        fc.node_pos = len(world.node_log)
        self._filters.reweigh(fc.key)
        if not dirty:
            return True
        changed_uids = {int(u) for slot in dirty if (st := world.state_at(slot)) is not None for u in st.dev}
        if changed_uids and world.features.consumable_capacity:
            fresh = self._usable(fc.alt, dev_sel == TRUE)
            assert fc.usable_own is not None   # own() gave it one
            for u in changed_uids:
                fc.usable_own[u] = fresh[u]
        for slot in dirty:
            st = world.state_at(slot)
            uids = st.dev if st is not None else np.zeros(0, np.int64)
            on_node = st.here if st is not None else np.zeros(0, bool)
            held = world.held[uids] if not fc.alt.admin else np.zeros(len(uids), bool)
            sel = dev_sel[uids]
            fc.sel[slot] = np.count_nonzero((sel == TRUE) & on_node)
            fc.free[slot] = np.count_nonzero((sel == TRUE) & on_node & ~held)
            fc.usable[slot] = np.count_nonzero(fc.dev_usable[uids] & on_node & ~held)
            fc.err_search[slot] = np.count_nonzero((sel == ERROR) & ~held)
            fc.err_all[slot] = np.count_nonzero(sel == ERROR)
        return True


@dataclass(frozen=True)
class _Homes:
    """Where each device is an entry of ``flat``, when every device is an entry once at most (each
    device on one node: any fleet without devices shared by nodes)."""

    entry: np.ndarray      # per uid, the position of its entry (-1: none)
    gaps: bool             # some uid has no entry
    all_here: bool         # every entry is on its device's node

    @staticmethod
    def of(slot: np.ndarray, uid: np.ndarray, here: np.ndarray) -> _Homes | None:
        """The homes of the entries (slot, uid, here); None when a device is an entry more than once."""
        size = int(uid.max()) + 1 if len(uid) else 0
        if len(uid) and np.bincount(uid, minlength=size).max() > 1:
            return None
        entry = np.full(size, -1, np.int32)
        entry[uid] = np.arange(len(uid))
        return _Homes(entry, len(uid) < size, bool(here.all()))


def _blocking_effect(device: Device) -> bool:
    """The device has a taint the scheduler honours (NoSchedule, NoExecute) unless tolerated."""
    return any(t.effect in ("NoSchedule", "NoExecute") for t in device.taints)
