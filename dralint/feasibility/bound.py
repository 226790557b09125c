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

from itertools import product
from typing import Hashable, Sequence

Slots = tuple[frozenset[Hashable], int]   # the devices one request may take, and how many it needs
MAX_CHOICES = 64   # combinations of firstAvailable subrequests matched one by one (more: merged)


def can_match_some(requests: Sequence[Sequence[Slots]], in_use: frozenset[Hashable] | set[Hashable]) -> bool:
    """``can_match`` for requests with alternatives (firstAvailable): True when some choice of one
    alternative per request can be matched. Alternatives that cannot be filled even alone are
    dropped first; past ``MAX_CHOICES`` combinations each request's alternatives are merged (any
    of their devices, the smallest need), which is weaker but still only cuts hopeless branches."""
    options: list[list[Slots]] = []
    for alternatives in requests:
        kept = [(devices, need) for devices, need in alternatives
                if need <= 0 or sum(1 for d in devices if d not in in_use) >= need]
        if not kept:
            return False
        options.append(kept)
    combinations = 1
    for kept in options:
        combinations *= len(kept)
    if combinations > MAX_CHOICES:
        merged = [(frozenset().union(*(d for d, _ in kept)), min(n for _, n in kept)) for kept in options]
        return can_match(merged, in_use)
    return any(can_match(choice, in_use) for choice in product(*options))


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
