"""Which nodes a group of claims must be searched on, from the fleet's counts alone.

A node is left out only when the search there certainly ends in a plain "cannot allocate" with
nothing else to report:

* every request needs more usable devices than the node has for it (a request of the same kind
  twice needs them twice, unless devices can be shared), or an ``All`` request has none there, or
  one of its devices is taken or unusable;
* and nothing could turn the attempt into an error first: no selector fails on a device the node
  would evaluate, no ``All`` request of a claim with constraints has devices there, no pool the
  node sees is unusable while an ``All`` request is asked for, and the 32-device claim limit
  cannot be crossed.

Everything is numpy over the nodes at once; the answer is the same as searching every node (a
property test compares both).
"""
from __future__ import annotations

import numpy as np

from .counts import Counts, FilterCounts
from .constraints import applies
from .hall import distinct_devices
from .model import Alternative, ClaimSpec
from .search import MAX_DEVICES_PER_CLAIM


def must_search(counts: Counts, claims: list[ClaimSpec], slots: np.ndarray, unusable: np.ndarray,
                risky_only: bool = False, relaxed: bool = False, quick: bool = False) -> np.ndarray:
    """Per node (slot), whether searching there could find anything but a plain failure.

    ``unusable``: per node, whether it sees an incomplete or invalid pool. ``risky_only``: only
    the nodes where the attempt could end in an error (the others may still fit). ``relaxed``:
    for searches that leave taints and capacity out (explanations). ``quick``: only what the
    counts of each request alone tell (no per-value counts, no Hall's condition): more nodes,
    each of the others still certainly a plain failure, at a fraction of the cost.

    Requests are taken in search order: once a request certainly fails on a node by itself, the
    search there never reaches the ones after it, so nothing they could raise matters there.
    """
    # Called for every claim judged, on a few thousand nodes: each numpy operation costs a few
    # microseconds whatever its size, so the common case (no errors, no "all", no constraints)
    # skips those that cannot change the answer.
    n = len(slots)
    must = np.zeros(n, bool)
    # No earlier request certainly fails here (None: on every node). Kept as what fits, not as what is
    # blocked: one numpy step per request instead of two, on 6,000 quick prechecks of 30 us each.
    fits: np.ndarray | None = None
    cross: np.ndarray | None = None    # the constrained requests can share one value (None: everywhere)
    has_all = False
    need: dict[tuple, list[int]] = {}  # per filter: the counts of the requests asking only it
    alone: dict[tuple, FilterCounts] = {}
    f = counts.world.features
    nodes = _Nodes(counts, slots)
    at = nodes.at
    for claim in claims:
        fixed = 0                      # the fewest devices the claim takes: these requests' part ...
        varying: np.ndarray | None = None   # ... and, per node, the part of the "all" requests
        for r, req in enumerate(claim.requests):
            req_ok: np.ndarray | None = None
            least: np.ndarray | int | None = None
            for alt in req.alternatives:
                fc = counts.get(alt)
                if fc is None or alt.mode not in ("ExactCount", "All"):
                    return np.ones(n, bool)    # the allocator refuses the claim before any node
                usable = fc.free if relaxed else fc.usable
                size: np.ndarray | int
                if alt.mode == "All":
                    has_all = True
                    sel = at(fc.sel)
                    if fc.has_errors:
                        must |= at(fc.err_all) > 0                 # met while validating, on every node
                    if claim.constraints:
                        # A constraint broken inside "all" is an error.
                        breaks = (sel > 0) & ~_no_break(counts, claim, r, alt, fc, nodes, relaxed)
                        must |= breaks if fits is None else breaks & fits
                    if f.consumable_capacity or relaxed:
                        ok = sel > 0
                    else:
                        ok = (sel > 0) & (at(usable) == sel)
                    size = sel.astype(np.int64)
                else:
                    if fc.has_errors:
                        failing = at(fc.err_search) > 0
                        must |= failing if fits is None else failing & fits
                    ok = at(usable) >= alt.count
                    if claim.constraints and not (risky_only or quick):
                        for attribute in _matched(claim, alt):
                            most = counts.most_of_one_value(alt, attribute, relaxed)
                            if most is not None:
                                ok &= at(most) >= alt.count
                    size = alt.count
                    if len(req.alternatives) == 1 and not alt.admin:
                        need.setdefault(fc.key, []).append(alt.count)
                        alone[fc.key] = fc
                req_ok = ok if req_ok is None else req_ok | ok
                least = size if least is None else np.minimum(least, size)
            if isinstance(least, np.ndarray):
                varying = least if varying is None else varying + least
            elif least is not None:
                fixed += least
            if req_ok is not None:
                fits = req_ok if fits is None else fits & req_ok
            else:
                fits = np.zeros(n, bool)      # a request without alternatives fits nowhere
        if varying is not None:
            must |= fixed + varying > MAX_DEVICES_PER_CLAIM      # met while validating
        elif fixed > MAX_DEVICES_PER_CLAIM:
            must[:] = True
        if claim.constraints and not (risky_only or quick):
            one = _one_value(counts, claim, nodes, relaxed)
            cross = one if cross is None else cross & one
    if has_all:
        must |= unusable
    if risky_only:
        return must
    if fits is None:
        ok = np.ones(n, bool) if cross is None else cross
    else:
        ok = fits if cross is None else fits & cross
    if not f.consumable_capacity:
        # Requests asking the same compete for the same devices (one request alone was checked above).
        for key, wanted in need.items():
            if len(wanted) > 1:
                ok &= at(alone[key].free if relaxed else alone[key].usable) >= sum(wanted)
    if not quick and ok.any():
        # Requests of different kinds that draw on the same devices.
        ok[ok] = distinct_devices(counts, claims, slots[ok], relaxed)
    return must | ok


def can_fail(counts: Counts, claims: list[ClaimSpec]) -> bool:
    """Whether the search could end in an error on some node: a selector fails on some device, or
    an ``All`` request is asked (a broken constraint, an unusable pool). When not, ``must_search``
    with ``risky_only`` leaves every node out, and need not be asked."""
    for claim in claims:
        for req in claim.requests:
            for alt in req.alternatives:
                fc = counts.get(alt)
                if fc is None or fc.has_errors or alt.mode != "ExactCount":
                    return True
    return False


class _Nodes:
    """The nodes asked about (``slots``): how many, and what an array per node slot holds for them."""

    def __init__(self, counts: Counts, slots: np.ndarray) -> None:
        self.n = len(slots)
        self._slots = None if counts.everywhere(slots) else slots

    def at(self, per_slot: np.ndarray) -> np.ndarray:
        """``per_slot`` at the nodes, in their order: the array itself when they are every slot in
        order (so the answer is only read, never changed in place)."""
        return per_slot if self._slots is None else per_slot[self._slots]

    def columns(self, per_slot: np.ndarray) -> np.ndarray:
        """``at`` for a table with a column per node slot."""
        return per_slot if self._slots is None else per_slot[:, self._slots]


def _no_break(counts: Counts, claim: ClaimSpec, r: int, alt: Alternative, fc: FilterCounts, nodes: _Nodes,
              relaxed: bool) -> np.ndarray:
    """Per node of ``nodes``: no device of the ``All`` request ``alt`` (of request ``r``, counted
    by ``fc``) can break a constraint.

    True where every matchAttribute constraint over it sees one value only: its devices there and
    the devices the requests before it in the constraint may pick all have the same value, and
    none of its own devices lacks it. (Later requests are refused quietly by a device it took.)
    """
    n = nodes.n
    out = np.ones(n, bool)
    if counts.world.features.list_attributes:
        return np.zeros(n, bool)
    base, sub = alt.names
    slot, uid, _ = counts.flat()
    size = counts.world.slot_count
    for con in claim.constraints:
        if not applies(con.requests, base, sub):
            continue
        if not con.match_attribute:
            return np.zeros(n, bool)
        ids, _ = counts.value_ids(con.match_attribute)
        # Only the entries the requests select can hold a value: look at those alone.
        mine = counts.entries(fc)
        value = ids[uid[mine]]
        lacking = np.zeros(size, bool)
        lacking[slot[mine[value < 0]]] = True
        out &= ~nodes.at(lacking)
        seen = [mine[value >= 0]]
        for earlier in claim.requests[:r]:
            for other in earlier.alternatives:
                if not applies(con.requests, *other.names):
                    continue
                oc = counts.get(other)
                if oc is None:
                    return np.zeros(n, bool)
                picked = counts.entries(oc)
                if other.mode != "All":
                    if not relaxed and oc.usable_own is not None:
                        picked = picked[oc.usable_own[uid[picked]]]
                    if not other.admin:
                        picked = picked[~counts.world.held[uid[picked]]]
                seen.append(picked[ids[uid[picked]] >= 0])
        # One value at most per node: every entry has the value some entry of its node wrote (which
        # one does not matter), without sorting the (node, value) pairs.
        both = np.concatenate(seen)
        where, value = slot[both], ids[uid[both]]
        one = np.full(size, -1, value.dtype)
        one[where] = value
        mixed = np.zeros(size, bool)
        mixed[where[value != one[where]]] = True
        out &= ~nodes.at(mixed)
    return out


def _matched(claim: ClaimSpec, alt: Alternative) -> list[str]:
    """The matchAttribute constraints that apply to every device of ``alt``."""
    base, sub = alt.names
    return [c.match_attribute for c in claim.constraints if c.match_attribute and applies(c.requests, base, sub)]


def _one_value(counts: Counts, claim: ClaimSpec, nodes: _Nodes, relaxed: bool) -> np.ndarray:
    """Per node of ``nodes``: for every matchAttribute constraint, some value gives each request it covers enough
    devices (requests asking for all devices, or naming subrequests, are not looked at)."""
    out = np.ones(nodes.n, bool)
    for con in claim.constraints:
        if not con.match_attribute or any("/" in name for name in con.requests):
            continue
        rows: np.ndarray | None = None
        for req in claim.requests:
            if con.requests and req.name not in con.requests:
                continue
            if any(alt.mode != "ExactCount" for alt in req.alternatives):
                continue
            fits: np.ndarray | None = None
            for alt in req.alternatives:
                per_value = counts.by_value(alt, con.match_attribute, relaxed)
                if per_value is None:
                    return out
                here = nodes.columns(per_value) >= alt.count
                fits = here if fits is None else fits | here
            if fits is not None:
                rows = fits if rows is None else rows & fits
        if rows is not None:
            out &= rows.any(axis=0)
    return out
