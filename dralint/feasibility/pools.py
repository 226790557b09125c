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
    other_slices: list[Slice] = field(default_factory=list)    # device slices of the pool for other nodes
    counter_sets: dict[str, Mapping[str, Fraction]] = field(default_factory=dict)
    incomplete: bool = False
    invalid: str = ""                                          # why the pool is invalid, "" when valid
    has_binding: bool = False

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
        for s in self.all:
            (self.on_node[s.node_name] if s.node_name else self.shared).append(s)
            self.by_pool[s.pool_key].append(s)


def _relevant(s: Slice, node: NodeView) -> bool:
    if s.node_name or s.all_nodes or s.node_selector is not None:
        return node_matches(node, s.node_name, s.all_nodes, s.node_selector)
    if s.per_device:
        return any(node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in s.devices)
    return False  # no node selection at all: an unknown future mode


def gather_pools(index: SliceIndex, node: NodeView, features: Features) -> list[Pool]:
    """The pools visible from ``node``, in search order (binding-condition pools last)."""
    kept: dict[PoolKey, list[Slice]] = {}
    for s in index.on_node.get(node.name, []) + index.shared:
        if not features.partitionable and (s.per_device or s.counter_sets):
            continue
        if not _relevant(s, node):
            continue
        have = kept.get(s.pool_key)
        if have is None or s.generation > have[0].generation:
            kept[s.pool_key] = [s]
        elif s.generation == have[0].generation:
            have.append(s)
    pools = []
    for key, mine in kept.items():
        pool = _complete(index, key, mine, features)
        if pool is not None:
            pools.append(pool)
    pools.sort(key=lambda p: (p.has_binding, p.key))
    return pools


def _complete(index: SliceIndex, key: PoolKey, mine: list[Slice], features: Features) -> Pool | None:
    generation = mine[0].generation
    targeting = set(map(id, mine))
    members = mine
    incomplete = False
    if len(mine) != mine[0].count:
        everywhere = index.by_pool[key]
        if any(s.generation > generation for s in everywhere):
            return None  # a newer generation exists elsewhere: this view is obsolete
        members = [s for s in everywhere if s.generation == generation]
        incomplete = len(members) != mine[0].count
    pool = Pool(key=key, generation=generation, incomplete=incomplete)
    for s in sorted(members, key=lambda s: s.name):
        if s.devices:
            (pool.slices if id(s) in targeting else pool.other_slices).append(s)
        for name, counters in s.counter_sets:
            if name in pool.counter_sets and not pool.invalid:
                pool.invalid = f"counter set `{name}` is declared twice"
            pool.counter_sets.setdefault(name, counters)
    pool.has_binding = any(d.binding_conditions for s in pool.slices for d in s.devices)
    if not incomplete and not pool.invalid:
        pool.invalid = _invalid(pool, features)
    return pool


def _invalid(pool: Pool, features: Features) -> str:
    seen: set[str] = set()
    for s in pool.slices + pool.other_slices:
        for d in s.devices:
            if d.name in seen:
                return f"device `{d.name}` is published twice"
            seen.add(d.name)
            if not features.partitionable:
                continue
            for set_name, counters in d.consumes:
                declared = pool.counter_sets.get(set_name)
                if declared is None:
                    return f"device `{d.name}` consumes from counter set `{set_name}`, which the pool does not declare"
                for counter in counters:
                    if counter not in declared:
                        return (f"device `{d.name}` consumes counter `{counter}`, which counter set `{set_name}` "
                                "does not declare")
    return ""
