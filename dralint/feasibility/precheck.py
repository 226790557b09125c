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

from .counts import Counts, filter_key
from .model import ClaimSpec
from .search import MAX_DEVICES_PER_CLAIM


def must_search(counts: Counts, claims: list[ClaimSpec], slots: np.ndarray, unusable: np.ndarray,
                risky_only: bool = False) -> np.ndarray:
    """Per node (slot), whether searching there could find anything but a plain failure.

    ``unusable``: per node, whether it sees an incomplete or invalid pool. ``risky_only``: only
    the nodes where the attempt could end in an error (the others may still fit).
    """
    n = len(slots)
    everywhere = np.ones(n, bool)
    must = np.zeros(n, bool)
    ok = np.ones(n, bool)
    has_all = False
    need: dict[tuple, int] = defaultdict(int)
    alone = {}
    f = counts.world.features
    for claim in claims:
        least_total = np.zeros(n, np.int64)
        for req in claim.requests:
            req_ok = np.zeros(n, bool)
            least: np.ndarray | None = None
            for alt in req.alternatives:
                fc = counts.get(alt)
                if fc is None or alt.mode not in ("ExactCount", "All"):
                    return everywhere          # the allocator refuses the claim before any node
                if alt.mode == "All":
                    has_all = True
                    sel = fc.sel[slots]
                    must |= fc.err_all[slots] > 0
                    if claim.constraints:
                        must |= sel > 0        # a constraint broken inside "all" is an error
                    if f.consumable_capacity:
                        req_ok |= sel > 0
                    else:
                        req_ok |= (sel > 0) & (fc.usable[slots] == sel)
                    size = sel.astype(np.int64)
                else:
                    must |= fc.err_search[slots] > 0
                    req_ok |= fc.usable[slots] >= alt.count
                    size = np.full(n, alt.count, np.int64)
                least = size if least is None else np.minimum(least, size)
            if least is not None:
                least_total += least
            ok &= req_ok
            if len(req.alternatives) == 1 and req.alternatives[0].mode == "ExactCount" \
                    and not req.alternatives[0].admin:
                key = filter_key(req.alternatives[0])
                need[key] += req.alternatives[0].count
                alone[key] = req.alternatives[0]
        must |= least_total > MAX_DEVICES_PER_CLAIM
    if has_all:
        must |= unusable
    if risky_only:
        return must
    if not f.consumable_capacity:
        # Requests asking the same compete for the same devices.
        for key, total in need.items():
            fc = counts.get(alone[key])
            if fc is not None:
                ok &= fc.usable[slots] >= total
    return must | ok
