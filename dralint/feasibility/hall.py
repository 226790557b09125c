"""Can a node give the requests of a pod distinct devices at all? Hall's condition, for all nodes at once.

The per-request counts (precheck.py) see each request alone, and requests of the same kind
together; requests of different classes that draw on the same devices (two FPGA classes, a
class that takes any NIC beside one that takes fast NICs) pass them one by one and then fail in
the search, on every node, after trying every combination. Picking ``count_i`` distinct devices
for each request i from the devices it may take is possible only if every set S of requests has
at least ``sum(count_i, i in S)`` devices that some request in S may take (Hall's condition,
which is also sufficient when nothing else constrains the choice). With a ``matchAttribute``
constraint the requests it covers must take devices of one value: the condition must then hold
for some value, with the covered requests restricted to the devices of that value.

Everything else the search checks (counters, capacity, taints met during the search,
distinctAttribute) only refuses more, and requests that could be satisfied in ways this does not
model (``All``, admin access, more alternatives than are worth enumerating) are left out, which
only weakens the condition: a node refused here is refused by the search too.
"""
from __future__ import annotations

from itertools import product
from typing import TYPE_CHECKING

import numpy as np

from .columns import TRUE
from .constraints import applies
from .model import Alternative, ClaimSpec

if TYPE_CHECKING:
    from .counts import Counts, FilterCounts

MAX_REQUESTS = 6        # 2**6 subsets of requests per node and value
MAX_CHOICES = 64        # combinations of firstAvailable alternatives tried
MAX_VALUES = 32         # values of a matched attribute told apart (more: the constraint is left out)


def distinct_devices(counts: "Counts", claims: list[ClaimSpec], slots: np.ndarray, relaxed: bool) -> np.ndarray:
    """Per node (slot): whether some choice of alternatives meets Hall's condition there.

    False only where the search certainly finds no devices for the claims together; the caller
    keeps the nodes it must search for other reasons (errors) apart from this.
    """
    n = len(slots)
    options: list[list[tuple[int, Alternative] | None]] = []
    for c, claim in enumerate(claims):
        for req in claim.requests:
            opts: list[tuple[int, Alternative] | None] = []
            for alt in req.alternatives:
                # Admin access takes devices in ways the condition does not count: such a request
                # is left out (as if it asked for nothing).
                counted = (alt.mode == "ExactCount" and alt.count > 0) or alt.mode == "All"
                opts.append((c, alt) if counted and not alt.admin else None)
            if opts:
                options.append([o for i, o in enumerate(opts) if o not in opts[:i]])
    if len(options) < 2 or len(options) > MAX_REQUESTS:
        return np.ones(n, bool)
    choices = 1
    for opts in options:
        choices *= len(opts)
    if choices > MAX_CHOICES:
        return np.ones(n, bool)
    out = np.zeros(n, bool)
    # The nodes' entries, and which devices are free or shared, are the same for every choice. Each
    # entry is counted at its node's place in ``slots``, not at its slot: the tables then have a row
    # per node asked (nine of 2,000 at the median on the benchmark corpus), not per node of the fleet.
    slot, uid, present = counts.entries_of(slots)
    place = np.full(counts.world.slot_count, -1, np.int64)
    place[slots] = np.arange(n)
    slot = place[slot]
    if n < len(place):      # entries_of gives every node's entries when asked for many
        asked = slot >= 0
        slot, uid, present = slot[asked], uid[asked], present[asked]
    multi = counts.multi()[uid]
    free = present & ~counts.world.held[uid]
    for choice in product(*options):
        picked = [o for o in choice if o is not None]
        if len(picked) < 2:
            return np.ones(n, bool)
        here = _one_choice(counts, claims, picked, slots, (slot, uid, present, multi, free), relaxed)
        if here is None:
            return np.ones(n, bool)
        out |= here
        if out.all():
            break
    return out


def _one_choice(counts: "Counts", claims: list[ClaimSpec], picked: list[tuple[int, Alternative]], slots: np.ndarray,
                entries_at: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                relaxed: bool) -> np.ndarray | None:
    """Hall's condition for one alternative per request, with each matchAttribute constraint in turn.
    ``entries_at``: the nodes' entries (the node's place in ``slots``, uid, here), and per entry
    whether its device may be allocated many times and whether it is free."""
    world = counts.world
    slot, uid, here, multi, free = entries_at
    exact: list[tuple[int, Alternative]] = []
    may = []
    takes_all = False
    for c, alt in picked:
        fc = counts.get(alt)
        if fc is None:
            return None
        if alt.mode == "All":
            # When it succeeds, an ``All`` request holds every device it selects on the node that
            # fits its capacity (``dev_usable`` is a part of those): nobody else gets them.
            free = free & ~(_usable_at(fc, uid, False) & here & ~multi)   # not in place: shared by the choices
            takes_all = True
            continue
        exact.append((c, alt))
        may.append(_usable_at(fc, uid, relaxed))
    picked = exact
    if not picked or (len(picked) < 2 and not takes_all):
        return np.ones(len(slots), bool)   # one request alone: the counts have settled it
    may = [m & free for m in may]
    k = len(picked)
    need = _subset_needs([alt.count for _, alt in picked])
    # A device that may be allocated many times (consumable capacity) can serve every request at
    # once: it counts as enough for any set of requests it serves.
    weight = np.where(multi, float(need[-1]), 1.0)
    hits = _hits_matrix(k)
    passes: list[tuple[str, list[bool]]] = []
    if not world.features.list_attributes:
        for c, claim in enumerate(claims):
            for con in claim.constraints:
                if not con.match_attribute:
                    continue
                covered = [i == c and applies(con.requests, *alt.names) for i, alt in picked]
                # One device alone meets the constraint whatever its value (the allocator compares
                # later devices with the first): only two or more are held to one value.
                if sum(alt.count for (_, alt), cov in zip(picked, covered) if cov) >= 2:
                    passes.append((con.match_attribute, covered))
    size, width = len(slots), 1 << k
    entries = len(uid)
    result: np.ndarray | None = None
    for attribute, covered in passes:
        ids, nvals = counts.value_ids(attribute)
        if nvals == 0:
            return np.zeros(len(slots), bool)   # no device has a value: the covered requests get nothing
        if nvals > MAX_VALUES:
            continue
        value = ids[uid]
        free = _bits(entries, [(i, m) for i, (m, cov) in enumerate(zip(may, covered)) if not cov])
        full = free | _bits(entries, [(i, m & (value >= 0)) for i, (m, cov) in enumerate(zip(may, covered)) if cov])
        # A device counts for every value through the requests it serves unconstrained, and for its
        # own value through all the requests it serves.
        keep = free > 0
        base = np.bincount(slot[keep] * width + free[keep], weight[keep],
                           minlength=size * width).reshape(size, 1, width)
        mine = (full > 0) & (value >= 0)
        pos = (slot[mine] * nvals + value[mine]) * width
        cells = size * nvals * width
        own_full = np.bincount(pos + full[mine], weight[mine], minlength=cells).reshape(size, nvals, width)
        own_free = np.bincount(pos + free[mine], weight[mine], minlength=cells).reshape(size, nvals, width)
        unions = (base + own_full - own_free) @ hits
        fits = (unions >= need).all(axis=2).any(axis=1)
        result = fits if result is None else result & fits
    if result is not None:
        return result
    bits = _bits(entries, list(enumerate(may)))
    keep = bits > 0
    hist = np.bincount(slot[keep] * width + bits[keep], weight[keep], minlength=size * width).reshape(size, width)
    return (hist @ hits >= need).all(axis=1)


def _usable_at(fc: "FilterCounts", uid: np.ndarray, relaxed: bool) -> np.ndarray:
    """Per entry (device ``uid``), whether ``fc`` may take its device (``relaxed``: its selectors
    alone): read at the entries, not worked out over the fleet first."""
    if relaxed or fc.usable_own is None:
        return fc.dev_sel[uid] == TRUE
    return fc.usable_own[uid]


def _bits(entries: int, masks: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """Per entry, the set of requests (bit i: request i) that may take the device."""
    out = np.zeros(entries, np.int64)
    for i, m in masks:
        out |= m.astype(np.int64) << i
    return out


def _subset_needs(counts: list[int]) -> np.ndarray:
    """Per subset S of the requests (as a bit set), the devices S needs: the sum of its counts."""
    need = np.zeros(1 << len(counts), np.int64)
    for s in range(1, 1 << len(counts)):
        low = s & -s
        need[s] = need[s ^ low] + counts[low.bit_length() - 1]
    return need


def _hits_matrix(k: int) -> np.ndarray:
    """hits[m, S]: a device serving the requests in m counts for the union of subset S."""
    masks = np.arange(1 << k)
    return ((masks[:, None] & masks[None, :]) != 0).astype(np.int64)
