"""How many devices each node has left after each filter of one request alternative.

The explanation of an unallocatable claim reads these counts: devices the class matches, then
those the request's selectors leave, then those not held by other claims, then those no taint,
counter or capacity rules out. Thousands of requests are explained in a run, each with its own
selectors but most with a class another one has: what depends on the class alone (its entries on
the nodes, their counts) is worked out once per class, and the later stages on those entries only.
"""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from ..kube.quantity import format_readable
from ..sizes import deep_size
from .capacity import fits
from .columns import TRUE
from .counts import Counts, filter_key, key_bytes
from .counters import CounterBook
from .lru import Lru
from .model import NANO, Alternative
from .nodes import NodeSet
from .outcome import fleet_state
from .selection import expressions_bytes
from .taints import blocking_taint

if TYPE_CHECKING:
    from .world import World

MAX_NAMED = 3        # devices (and claims holding them) named in a message
# Stage counts kept for reuse (four arrays per node each): reused by a claim's next requests and alike
# claims, not later; on the 17 MiB benchmark file 4 MB keeps all but 2 % of the reuses 16 MB kept.
STAGES_BYTES = 4 << 20
# What each class matches on the nodes asked: a few hundred classes on the corpus, each a few
# arrays over its own entries (a small part of the fleet), reused by every request of the class.
# Every class's match together weighs 5.0 MB on the 17 MiB benchmark file (250 classes), 4.1 MB on
# the benchmark corpus (243): 8 MB keeps them all there.
CLASS_BYTES = 8 << 20

STAGE_NAMES = ("class", "selectors", "free", "usable")


@dataclass
class Stages:
    """Per node counts after each filter, for one request alternative. Each stage keeps a part of
    the devices of the one before, so no node has more at a stage than at the one before."""

    alt: Alternative
    need: int | None                                   # None: allocationMode All
    # Per stage, per node of ``nodes`` (in their order), how many devices are left.
    counts: list[tuple[str, np.ndarray]] = field(default_factory=list)
    # Per stage, how many distinct devices are left: a device of an allNodes or nodeSelector slice is
    # one device on every node it reaches, counted once here and once per node in ``counts``.
    distinct: dict[str, int] = field(default_factory=dict)
    nodes: list = field(default_factory=list)          # the NodeViews the counts are for
    survivors: list[str] = field(default_factory=list)  # the first devices the selectors leave
    blocked: Counter = field(default_factory=Counter)   # why free matching devices are unusable
    per_selector: Counter = field(default_factory=Counter)  # selector index -> devices passing it and all before
    counters_note: str = ""                             # amounts, when shared counters block devices
    absent: dict[str, int] = field(default_factory=dict)  # node without a Node object -> devices the selectors leave
    holders: list[str] = field(default_factory=list)    # the first claims holding matching devices, and their files
    # Per node, its place among ``nodes`` sorted by name (equal names in node order), for the details.
    name_ranks: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # What the explanation's details say of these counts, worked out once for all the alternatives
    # that share them (each gets a copy of the kept counts); read only.
    told: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def fits_somewhere(self) -> bool:
        usable = self.counts[-1][1]
        if self.need is None:  # allocationMode All: every matching device of a node, at least one
            selected = self.counts[1][1]
            return bool(((selected > 0) & (usable == selected)).any())
        return bool((usable >= self.need).any())

@dataclass(frozen=True)
class _ClassMatch:
    """The entries of the fleet one class matches on the nodes asked, and per node how many."""

    flat: tuple                # the fleet's entries (``Counts.flat``) these are positions in
    entries: np.ndarray        # positions in ``flat``, as int32: kept by bytes, and read again cheaply
    per_node: np.ndarray       # per node, how many entries
    distinct: int              # how many distinct devices the entries are
    # What the details say of the stage counts of a request whose every stage keeps all the class
    # matches (see Stages.told): the same for every such request of the class, worked out once.
    told: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def _per_node(position: np.ndarray, mask: np.ndarray | None, size: int) -> np.ndarray:
    """How many entries of ``mask`` (None: all) each node has (``position``: per entry, its node's
    place), as int32: the counts are kept by bytes, and no node has two billion devices."""
    return np.bincount(position if mask is None else position[mask], minlength=size).astype(np.int32)


def _distinct(uid: np.ndarray, mask: np.ndarray | None, unique: bool) -> int:
    """How many distinct devices the entries of ``mask`` (None: all) are (``unique``: no device has
    two entries)."""
    if unique:
        return len(uid) if mask is None else int(np.count_nonzero(mask))
    seen = np.zeros(int(uid.max(initial=-1)) + 1, bool)
    seen[uid if mask is None else uid[mask]] = True
    return int(np.count_nonzero(seen))


# What the details of one kept entry may say (``told``, filled after it is weighed): the 20 nodes
# shown, each with its name and counts (about 1.9 KB by ``deep_size`` on the benchmark corpus).
_TOLD_BYTES = 4096


def _asked_bytes(asked: tuple) -> int:
    """Bytes of what a stage key says is asked: a filter key (``filter_key``), or a missing class's name."""
    return deep_size(asked) if len(asked) == 1 else key_bytes(asked)


class _NodesKeySizes:
    """What ``deep_size`` finds in a node set's key (a pod's placement, pins): the same for every
    request judged with these nodes, so the last one asked is kept."""

    def __init__(self) -> None:
        self._last: tuple[Any, int] | None = None

    def __call__(self, nodes_key: Any) -> int:
        have = self._last
        if have is None or have[0] is not nodes_key:
            have = self._last = (nodes_key, deep_size(nodes_key))
        return have[1]


def _stages_bytes(sizes: _NodesKeySizes, key: tuple, st: Stages) -> int:
    """What one kept entry of the stage counts weighs: its arrays (a stage that leaves as many as the
    one before shares its array), its details, its key (the claim's selectors, the nodes')."""
    asked, nodes_key, *counters = key
    arrays = sum({id(counts): counts.nbytes for _, counts in st.counts}.values())
    return arrays + _TOLD_BYTES + sys.getsizeof(key) + _asked_bytes(asked) + sizes(nodes_key) + \
        sum(sys.getsizeof(n) for n in counters)


def _class_bytes(sizes: _NodesKeySizes, key: tuple, match: _ClassMatch) -> int:
    """What one kept class match weighs: its arrays, its details, its key (the class's selectors)."""
    selectors, nodes_key, *counters = key
    return match.entries.nbytes + match.per_node.nbytes + _TOLD_BYTES + sys.getsizeof(key) + \
        expressions_bytes(selectors) + sizes(nodes_key) + sum(sys.getsizeof(n) for n in counters)


class StageCounter:
    """The stage counts of a judgement's requests; shared by requests that filter alike, and the
    class's part by requests of classes that select alike."""

    def __init__(self, world: World, counts: Counts) -> None:
        """``counts``: the world's counts as the judgement took them."""
        self.world = world
        self.counts = counts
        # The weights close over a memo of their own, not over this counter: a bound method kept in its
        # own caches would make every counter a reference cycle, freed only by a full walk of the
        # collector (the webhook replaces its fleet view, and the judgements on it, for days).
        sizes = _NodesKeySizes()
        self._stages: Lru[tuple, Stages] = Lru(STAGES_BYTES, functools.partial(_stages_bytes, sizes))
        self._classes: Lru[tuple, _ClassMatch] = Lru(CLASS_BYTES, functools.partial(_class_bytes, sizes))
        # See placed(): for which nodes and holds, from which entries, what.
        self._placed: tuple[tuple, tuple, tuple[np.ndarray, np.ndarray, np.ndarray | None]] | None = None
        # See uids_unique(): for which entries, the answer.
        self._unique: tuple[tuple, bool] | None = None
        # See name_ranks(): for which nodes, the answer.
        self._ranks: tuple[list, np.ndarray] | None = None
        # See consumers(): for which flags, the answer.
        self._consumers: tuple[np.ndarray, np.ndarray | None] | None = None

    def stages(self, alt: Alternative, nodes: NodeSet) -> Stages:
        """The counts of ``alt`` on ``nodes``, with ``alt``'s own name, class and count."""
        world = self.world
        # Keyed by what the class selects, not its name: classes that select alike (one per team,
        # each with the same expression) give the same counts; the name is only in the message.
        # A missing class matches nothing, whatever is asked.
        cls = world.classes.get(alt.class_name)
        asked = filter_key(alt, cls.selectors) if cls is not None else (alt.class_name,)
        key = (asked, nodes.key, *fleet_state(world))
        st = self._stages.get(key)
        if st is None:
            st = self._stages.put(key, _stages(self, alt, nodes))
        # A shallow copy of its fields (``copy.copy`` costs five times more, dataclasses.replace more
        # still, thousands of times a run).
        mine = object.__new__(Stages)
        mine.__dict__.update(st.__dict__)
        mine.alt, mine.need = alt, alt.count if alt.mode == "ExactCount" else None
        return mine

    def class_match(self, alt: Alternative, nodes: NodeSet) -> _ClassMatch:
        """What the class of ``alt`` (which exists) matches on ``nodes``: the same for every request
        of a class that selects alike, whatever else it asks (holds play no part)."""
        world = self.world
        flat = self.counts.flat()
        key = (world.classes[alt.class_name].selectors, nodes.key, len(world.node_log), len(world.class_log))
        match = self._classes.get(key)
        if match is None or match.flat is not flat:
            uid = flat[1]
            position, inside, _ = self.placed(nodes)
            entries = np.flatnonzero((self.counts.selected(alt, ())[uid] == TRUE) & inside)
            match = self._classes.put(key, _ClassMatch(
                flat, entries.astype(np.int32), _per_node(position[entries], None, len(nodes.nodes)),
                _distinct(uid[entries], None, self.uids_unique())))
        return match

    def placed(self, nodes: NodeSet) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Per entry of the fleet: its node's place in ``nodes`` (-1: not among them), whether it
        counts there, and whether its device is held (None: none is); the same for every request
        judged with these nodes (the last asked is kept)."""
        world = self.world
        flat = self.counts.flat()
        held = (world.held_token, len(world.hold_log))
        have = self._placed
        if have is None or have[0] != (nodes.key, held) or have[1] is not flat:
            slot, uid, here = flat
            place = np.full(world.slot_count, -1, np.int64)       # per slot, the node's place in ``nodes``
            place[nodes.slots] = np.arange(len(nodes.nodes))
            position = place[slot]
            held_entries = world.held[uid]
            have = self._placed = ((nodes.key, held), flat, (position, (position >= 0) & here,
                                                            held_entries if held_entries.any() else None))
        return have[2]

    def consumers(self) -> np.ndarray | None:
        """Per uid: the device consumes shared counters (None: no device does, as in most fleets)."""
        flags = self.counts.consumers()
        if self._consumers is None or self._consumers[0] is not flags:
            self._consumers = (flags, flags if flags.any() else None)
        return self._consumers[1]

    def name_ranks(self, nodes: list) -> np.ndarray:
        """Per node of ``nodes``, its place when they are sorted by name (equal names in their
        order); the same for every request judged with these nodes (the last asked is kept)."""
        have = self._ranks
        if have is None or have[0] is not nodes:
            have = self._ranks = (nodes, name_ranks(nodes))
        return have[1]

    def uids_unique(self) -> bool:
        """No device has two entries in the fleet's entries (no slice reaches several nodes): the
        entries a mask keeps are then as many as the distinct devices."""
        flat = self.counts.flat()
        if self._unique is None or self._unique[0] is not flat:
            uid = flat[1]
            self._unique = (flat, len(np.unique(uid)) == len(uid))
        return self._unique[1]


def name_ranks(nodes: list) -> np.ndarray:
    """Per node of ``nodes``, its place when they are sorted by name (equal names in their order)."""
    ranks = np.empty(len(nodes), np.int64)
    ranks[sorted(range(len(nodes)), key=lambda i: nodes[i].name)] = np.arange(len(nodes))
    return ranks


def _stages(sc: StageCounter, alt: Alternative, nodes: NodeSet) -> Stages:
    world, counts = sc.world, sc.counts
    st = Stages(alt, alt.count if alt.mode == "ExactCount" else None)
    st.nodes = nodes.nodes
    st.name_ranks = sc.name_ranks(nodes.nodes)
    size = len(nodes.nodes)
    if world.classes.get(alt.class_name) is None or any(e is None for e in alt.selectors):
        st.counts = [(n, np.zeros(size, np.int32)) for n in STAGE_NAMES]
        st.distinct = dict.fromkeys(STAGE_NAMES, 0)
        return st
    # Every later stage keeps a part of what the class matches (the selectors are asked after the
    # class's), and after the selectors a part of what they leave: each is worked out on the entries
    # the one before kept, usually a small part of the fleet.
    match = sc.class_match(alt, nodes)
    flat_uid = counts.flat()[1]
    uid = flat_uid[match.entries]
    passed: np.ndarray | None = None      # None: the selectors leave every entry the class matches
    columns = world.selection.columns
    for i, expr in enumerate(alt.selectors):
        # What the class matches passed every check before the request's selectors (Selection.combined):
        # on those entries, each selector's own answers make up the combined ones.
        assert expr is not None
        ok = columns.column(expr)[uid] == TRUE
        passed = ok if passed is None else passed & ok
        st.per_selector[i] = int(np.count_nonzero(passed))
    everything = passed is None or len(uid) == st.per_selector[len(alt.selectors) - 1]
    kept = match.entries if everything else match.entries[passed]
    uid = uid if everything else uid[passed]
    position, _, held = sc.placed(nodes)
    position = position[kept]
    devices = world.selection.columns.devices
    # Masks over ``kept``; None keeps every entry (nothing held, nothing blocked: the common case).
    taken = None if alt.admin or held is None else held[kept]
    if taken is not None and not taken.any():
        taken = None
    free = None if taken is None else ~taken
    if taken is not None:
        keys = set()
        for u in np.unique(uid[taken])[:64]:
            taken_device = devices[int(u)]
            assert taken_device is not None
            keys.add(taken_device.key)
        st.holders = [_holder(c) for c in world.holders_of(keys, MAX_NAMED)]
    for place, u in zip(position[:MAX_NAMED + 1].tolist(), uid[:MAX_NAMED + 1].tolist()):
        node = nodes.nodes[place]
        d = devices[u]
        assert d is not None
        st.survivors.append(f"{node.name}/{d.name}" if not node.placeholder else d.label)
    fc = counts.get(alt)
    consumes = sc.consumers()
    if fc is None:
        suspects = np.ones(len(kept), bool) if free is None else free
    elif fc.usable_own is None:     # nothing static refuses a device the selectors leave
        suspects = None if consumes is None else consumes[uid]
    else:
        suspects = ~fc.usable_own[uid] if consumes is None else ~fc.usable_own[uid] | consumes[uid]
    if suspects is not None and free is not None and fc is not None:
        suspects &= free
    refused: list[int] = []
    seen: set[int] = set()
    pools: dict[int, Any] = {}
    for k in () if suspects is None else np.flatnonzero(suspects):
        d = devices[int(uid[k])]
        assert d is not None
        why = _blocked_reason(world, alt, d, nodes.nodes[int(position[k])], st, pools)
        if why:
            refused.append(int(k))
            if d.uid not in seen:
                st.blocked[why] += 1
                seen.add(d.uid)
    usable = free
    if refused:
        usable = np.ones(len(kept), bool) if free is None else free.copy()
        usable[refused] = False
    # A stage that leaves every entry of the one before has its counts: worked out once, kept once.
    unique = sc.uids_unique()
    per_node, distinct = match.per_node, match.distinct
    st.counts, st.distinct = [("class", per_node)], {"class": distinct}
    if everything and free is None and not st.blocked:
        # Every stage is the class's: so is what the details say of them (same nodes, same ranks).
        st.told = match.told
    for name, mask, same in (("selectors", None, everything), ("free", free, free is None),
                             ("usable", usable, not st.blocked)):
        if not same:
            per_node, distinct = _per_node(position, mask, size), _distinct(uid, mask, unique)
        st.counts.append((name, per_node))
        st.distinct[name] = distinct
    absent_uids, absent_nodes = world.absent_devices()
    if len(absent_uids):
        matched = counts.selected(alt, alt.selectors)[absent_uids] == TRUE
        st.absent = dict(Counter(absent_nodes[int(i)] for i in np.nonzero(matched)[0]))
    return st


def _blocked_reason(world: World, alt: Alternative, d, node, st: Stages, pools: dict[int, Any]) -> str:
    """Why a free matching device cannot be given to the request ("" when it can)."""
    f = world.features
    if d.consumes and not f.partitionable:
        return "consume shared counters (DRAPartitionableDevices is off)"
    if f.taints and (taint := blocking_taint(d, alt)) is not None:
        return f"have taint `{taint.key}={taint.value}:{taint.effect}` that the request does not tolerate"
    if f.consumable_capacity and not fits(alt, d, world.allocated.consumed.get(d.key), None):
        return "lack the requested capacity"
    if d.consumes and f.partitionable:
        if d.uid not in pools:
            pools.update({c.device.uid: c.pool for c, _ in world.state(node).entries})
        pool = pools.get(d.uid)
        if pool is not None and not CounterBook(world.allocated, world.run.counter_cache).take(pool, d):
            if not st.counters_note:
                st.counters_note = counter_shortfall(world, pool, [d])
            return "need more shared counters than their pool has left"
    return ""


def counter_shortfall(world, pool, devices) -> str:
    """Which counters of ``pool`` the devices together need more of than is left, with amounts."""
    available = CounterBook(world.allocated, world.run.counter_cache).available(pool)
    need: dict[tuple[str, str], Any] = {}
    for d in devices:
        for set_name, counters in d.consumes:
            for name, value in counters.items():
                need[(set_name, name)] = need.get((set_name, name), 0) + value
    parts = []
    for (set_name, name), value in sorted(need.items()):
        left = available.get(set_name, {}).get(name)
        declared = pool.counter_sets.get(set_name, {}).get(name)
        if left is None or value <= left:
            continue
        held = f", {amount(declared - left)} used by allocated devices" if declared is not None and \
            declared != left else ""
        parts.append(f"counter `{name}` of set `{set_name}` in pool {pool.label}: {amount(value)} needed, "
                     f"{amount(max(left, 0))} left (of {amount(declared) if declared is not None else '?'}"
                     f"{held})")
    return "; ".join(parts)


def amount(n: int) -> str:
    """A quantity kept in nano-units, spelt as people write it (``90Gi``, not ``96636764160``)."""
    return format_readable(Fraction(n, NANO))


def _holder(claim: Any) -> str:
    """A holding claim and the file it was read from; the webhook's live objects have no file
    (their name, ``cluster:<resource>/<key>``, would only repeat the claim's)."""
    file = claim.manifest.document.file
    where = "" if file.startswith("cluster:") else f" in {file}"
    return f"{claim.namespace or 'default'}/{claim.name}{where}"
