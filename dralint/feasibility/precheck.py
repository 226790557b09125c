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

from collections import defaultdict

import numpy as np

from .columns import TRUE
from .counts import Counts, filter_key
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
    n = len(slots)
    everywhere = np.ones(n, bool)
    must = np.zeros(n, bool)
    blocked = np.zeros(n, bool)        # an earlier request certainly fails here
    cross = np.ones(n, bool)           # the constrained requests can share one value
    has_all = False
    need: dict[tuple, int] = defaultdict(int)
    alone = {}
    f = counts.world.features
    for claim in claims:
        least_total = np.zeros(n, np.int64)
        for r, req in enumerate(claim.requests):
            req_ok = np.zeros(n, bool)
            least: np.ndarray | None = None
            for alt in req.alternatives:
                fc = counts.get(alt)
                if fc is None or alt.mode not in ("ExactCount", "All"):
                    return everywhere          # the allocator refuses the claim before any node
                usable = fc.free if relaxed else fc.usable
                if alt.mode == "All":
                    has_all = True
                    sel = fc.sel[slots]
                    must |= fc.err_all[slots] > 0                 # met while validating, on every node
                    if claim.constraints:
                        # A constraint broken inside "all" is an error.
                        must |= (sel > 0) & ~blocked & ~_no_break(counts, claim, r, alt, slots, relaxed)
                    if f.consumable_capacity or relaxed:
                        req_ok |= sel > 0
                    else:
                        req_ok |= (sel > 0) & (usable[slots] == sel)
                    size = sel.astype(np.int64)
                else:
                    must |= (fc.err_search[slots] > 0) & ~blocked
                    enough = usable[slots] >= alt.count
                    for attribute in () if risky_only or quick else _matched(claim, alt):
                        per_value = counts.by_value(alt, attribute, relaxed)
                        if per_value is not None:
                            enough &= per_value[slots].max(axis=1) >= alt.count
                    req_ok |= enough
                    size = np.full(n, alt.count, np.int64)
                least = size if least is None else np.minimum(least, size)
            if least is not None:
                least_total += least
            blocked |= ~req_ok
            if len(req.alternatives) == 1 and req.alternatives[0].mode == "ExactCount" \
                    and not req.alternatives[0].admin:
                key = filter_key(req.alternatives[0], counts.world.classes[req.alternatives[0].class_name].selectors)
                need[key] += req.alternatives[0].count
                alone[key] = req.alternatives[0]
        must |= least_total > MAX_DEVICES_PER_CLAIM                # met while validating
        if not (risky_only or quick):
            cross &= _one_value(counts, claim, slots, relaxed)
    if has_all:
        must |= unusable
    if risky_only:
        return must
    ok = ~blocked & cross
    if not f.consumable_capacity:
        # Requests asking the same compete for the same devices.
        for key, total in need.items():
            fc = counts.get(alone[key])
            if fc is not None:
                ok &= (fc.free if relaxed else fc.usable)[slots] >= total
    if ok.any() and not quick:
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


def _no_break(counts: Counts, claim: ClaimSpec, r: int, alt: Alternative, slots: np.ndarray,
              relaxed: bool) -> np.ndarray:
    """Per node: no device of the ``All`` request ``alt`` (of request ``r``) can break a constraint.

    True where every matchAttribute constraint over it sees one value only: its devices there and
    the devices the requests before it in the constraint may pick all have the same value, and
    none of its own devices lacks it. (Later requests are refused quietly by a device it took.)
    """
    n = len(slots)
    out = np.ones(n, bool)
    if counts.world.features.list_attributes:
        return np.zeros(n, bool)
    base, sub = alt.names
    slot, uid, here = counts.flat()
    held = counts.world.held[uid]
    for con in claim.constraints:
        if not applies(con.requests, base, sub):
            continue
        if not con.match_attribute:
            return np.zeros(n, bool)
        fc = counts.get(alt)
        if fc is None:
            return np.zeros(n, bool)
        ids, nvals = counts.value_ids(con.match_attribute)
        value = ids[uid]
        mine = (fc.dev_sel[uid] == TRUE) & here
        if (mine & (value < 0)).any():
            lacking = np.bincount(slot[mine & (value < 0)], minlength=counts.world.slot_count)[slots] > 0
            out &= ~lacking
        seen = mine & (value >= 0)
        for earlier in claim.requests[:r]:
            for other in earlier.alternatives:
                if not applies(con.requests, *other.names):
                    continue
                oc = counts.get(other)
                if oc is None:
                    return np.zeros(n, bool)
                if other.mode == "All":
                    picked = oc.dev_sel[uid] == TRUE
                else:
                    picked = ((oc.dev_sel == TRUE) if relaxed else oc.dev_usable)[uid]
                    if not other.admin:
                        picked &= ~held
                seen |= picked & here & (value >= 0)
        # One value at most per node: count the (node, value) pairs present.
        size, width = counts.world.slot_count, max(nvals, 1)
        present = np.bincount(slot[seen] * width + value[seen], minlength=size * width).reshape(size, width) > 0
        out &= present[slots].sum(axis=1) <= 1
    return out


def _matched(claim: ClaimSpec, alt: Alternative) -> list[str]:
    """The matchAttribute constraints that apply to every device of ``alt``."""
    base, sub = alt.names
    return [c.match_attribute for c in claim.constraints if c.match_attribute and applies(c.requests, base, sub)]


def _one_value(counts: Counts, claim: ClaimSpec, slots: np.ndarray, relaxed: bool) -> np.ndarray:
    """Per node: for every matchAttribute constraint, some value gives each request it covers enough
    devices (requests asking for all devices, or naming subrequests, are not looked at)."""
    n = len(slots)
    out = np.ones(n, bool)
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
                here = per_value[slots] >= alt.count
                fits = here if fits is None else fits | here
            if fits is not None:
                rows = fits if rows is None else rows & fits
        if rows is not None:
            out &= rows.any(axis=1)
    return out
