"""Resource pools as one node sees them (docs/allocator.md §2): relevance, generations,
completeness, validity, shared counters, and the order the search walks them in."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable, Mapping

from .model import PoolKey, Slice
from .nodes import NodeView, node_matches


@dataclass(frozen=True)
class Features:
    """The allocator features the release's gates switch on."""

    admin_access: bool = False
    prioritized_list: bool = False
    partitionable: bool = False
    taints: bool = False
    consumable_capacity: bool = False
    binding_conditions: bool = False
    list_attributes: bool = False


@dataclass(eq=False)
class Pool:
    key: PoolKey
    generation: int
    slices: list[Slice] = field(default_factory=list)          # device slices targeting the node, by name
    other_slices: list[Slice] = field(default_factory=list)    # slices of the pool not targeting the node
    counter_sets: dict[str, Mapping[str, Fraction]] = field(default_factory=dict)
    incomplete: bool = False
    invalid: str = ""                                          # why the pool is invalid, "" when valid
    has_binding: bool = False
    published: list[Slice] = field(default_factory=list)       # every slice of the kept generation (warnings)
    declared_count: int = 0                                    # resourceSliceCount of the kept generation

    @property
    def label(self) -> str:
        return "/".join(self.key)

    @property
    def usable(self) -> bool:
        return not self.incomplete and not self.invalid


class SliceIndex:
    """All slices of the run, split once the way the allocator splits them."""

    def __init__(self, slices: Iterable[Slice]) -> None:
        self.all = list(slices)
        self.on_node: dict[str, list[Slice]] = defaultdict(list)
        self.shared: list[Slice] = []
        self.by_pool: dict[PoolKey, list[Slice]] = defaultdict(list)
        self.counter_slices: dict[PoolKey, list[Slice]] = defaultdict(list)
        self._detached: dict[Features, list[Pool]] = {}
        for s in self.all:
            self.by_pool[s.pool_key].append(s)
            if s.counter_sets:
                self.counter_slices[s.pool_key].append(s)
            else:
                (self.on_node[s.node_name] if s.node_name else self.shared).append(s)

    def detached_pools(self, features: Features) -> list[Pool]:
        """Pools as a node sees them that has none of their devices: only their counter slices.

        Counter slices are relevant for every node, so every node sees such a pool; it gives no
        device, but an unusable one still stops an ``All`` request. The view is the same from
        every node, so it is worked out once.
        """
        have = self._detached.get(features)
        if have is None:
            have = []
            if features.partitionable:
                for key, counters in self.counter_slices.items():
                    pool = _complete(self, key, _newest(counters), features)
                    if pool is not None:
                        have.append(pool)
            self._detached[features] = have
        return have


def _relevant(s: Slice, node: NodeView) -> bool:
    if s.node_name or s.all_nodes or s.node_selector is not None:
        return node_matches(node, s.node_name, s.all_nodes, s.node_selector)
    if s.per_device:
        return any(node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in s.devices)
    return False  # no node selection at all: an unknown future mode


def _newest(slices: list[Slice]) -> list[Slice]:
    top = max(s.generation for s in slices)
    return [s for s in slices if s.generation == top]


def gather_pools(index: SliceIndex, node: NodeView, features: Features) -> list[Pool]:
    """The pools visible from ``node``, in search order (binding-condition pools last).

    As ``GatherPools``: the device slices relevant for the node and every counter slice (counter
    sets are needed whatever their node selection), the newest generation per pool; a pool not
    complete on its own is completed from every slice of the cluster (or found obsolete, or
    incomplete). Pools of which the node sees only counter slices give no device; of those only
    the unusable ones are listed (they stop ``All`` requests).
    """
    relevant: dict[PoolKey, list[Slice]] = defaultdict(list)
    for s in index.on_node.get(node.name, []) + index.shared:
        if not features.partitionable and s.per_device:
            continue
        if _relevant(s, node):
            relevant[s.pool_key].append(s)
    pools = []
    for key, mine in relevant.items():
        if features.partitionable:
            mine = mine + index.counter_slices.get(key, [])
        pool = _complete(index, key, _newest(mine), features)
        if pool is not None:
            pools.append(pool)
    pools += [p for p in index.detached_pools(features) if not p.usable and p.key not in relevant]
    pools.sort(key=lambda p: (p.has_binding, p.key))
    return pools


def _complete(index: SliceIndex, key: PoolKey, mine: list[Slice], features: Features) -> Pool | None:
    generation, count = mine[0].generation, mine[0].count
    if len(mine) == count:
        return _build(key, generation, mine, None, features)
    everywhere = index.by_pool[key]
    if any(s.generation > generation for s in everywhere):
        return None  # a newer generation exists elsewhere: this view is obsolete
    members = [s for s in everywhere if s.generation == generation]
    if len(members) != count:
        return Pool(key=key, generation=generation, incomplete=True, published=members, declared_count=count)
    return _build(key, generation, mine, members, features)


def _build(key: PoolKey, generation: int, mine: list[Slice], members: list[Slice] | None,
           features: Features) -> Pool:
    """``buildPool``: device and counter slices apart, then the pool's validity.

    Device names are checked only among the slices that target the node; counter consumption also
    on the pool's other slices, whose allocated devices use up shared counters.
    """
    mine = sorted(mine, key=lambda s: s.name)
    pool = Pool(key=key, generation=generation, published=members if members is not None else mine,
                declared_count=mine[0].count)
    counter_slices = [s for s in mine if s.counter_sets] if features.partitionable else []
    pool.slices = [s for s in mine if not (features.partitionable and s.counter_sets)]
    pool.has_binding = any(d.binding_conditions for s in pool.slices for d in s.devices)
    pool.invalid = _duplicate_device(pool.slices)
    if pool.invalid or not features.partitionable:
        return pool
    for s in counter_slices:
        for name, counters in s.counter_sets:
            if name in pool.counter_sets:
                pool.invalid = f"counter set `{name}` is declared twice"
                return pool
            pool.counter_sets[name] = counters
    pool.invalid = _unknown_counter(pool, mine)
    if pool.invalid or members is None or len(members) == len(mine):
        return pool
    names = {s.name for s in mine}
    pool.other_slices = [s for s in members if s.name not in names]
    pool.invalid = _unknown_counter(pool, pool.other_slices)
    return pool


def _duplicate_device(slices: list[Slice]) -> str:
    seen: set[str] = set()
    for s in slices:
        for d in s.devices:
            if d.name in seen:
                return f"device `{d.name}` is published twice"
            seen.add(d.name)
    return ""


def _unknown_counter(pool: Pool, slices: list[Slice]) -> str:
    for s in slices:
        for d in s.devices:
            for set_name, counters in d.consumes:
                declared = pool.counter_sets.get(set_name)
                if declared is None:
                    return f"device `{d.name}` consumes from counter set `{set_name}`, which the pool does not declare"
                for counter in counters:
                    if counter not in declared:
                        return (f"device `{d.name}` consumes counter `{counter}`, which counter set `{set_name}` "
                                "does not declare")
    return ""
