"""A necessary condition for the rest of a search: can the requests still to be filled get their
devices at all, each device used once?

The allocator's search is exhaustive and, on claims that cannot be allocated, exponential: every
combination of devices for the early requests is tried before the last one fails. Dropping
everything that couples requests except "one device, one request" (constraints, shared counters,
capacity, the order of combinations) leaves a bipartite matching problem whose answer bounds the
search: when the remaining requests cannot be matched to distinct free devices, no way of
continuing succeeds, and the search can step back at once. This only removes branches that end
in "cannot allocate", so the verdict and the first solution stay the scheduler's.
"""
from __future__ import annotations

from typing import Hashable, Sequence

Slots = tuple[frozenset[Hashable], int]   # the devices one request may take, and how many it needs


def can_match(requests: Sequence[Slots], in_use: frozenset[Hashable] | set[Hashable]) -> bool:
    """True when every request can get ``need`` distinct devices of its own, none of them in use."""
    free: list[tuple[list[Hashable], int]] = []
    for devices, need in requests:
        if need <= 0:
            continue
        usable = [d for d in devices if d not in in_use]
        if len(usable) < need:
            return False
        free.append((usable, need))
    if len(free) < 2:
        return True
    owner: dict[Hashable, int] = {}          # device -> request holding it
    for i, (_, need) in enumerate(free):
        for _ in range(need):
            if not _augment(i, free, owner, set()):
                return False
    return True


def _augment(i: int, free: list[tuple[list[Hashable], int]], owner: dict[Hashable, int], seen: set[Hashable]) -> bool:
    """Kuhn's augmenting path: give request ``i`` one more device, moving others if needed."""
    for device in free[i][0]:
        if device in seen:
            continue
        seen.add(device)
        holder = owner.get(device)
        if holder == i:
            continue  # moving a device between slots of one request gains nothing
        if holder is None or _augment(holder, free, owner, seen):
            owner[device] = i
            return True
    return False
