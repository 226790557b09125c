"""Everything one run judges against, built once: devices, pools per node, allocated state, CEL.

Also the fast pre-check that lets the search skip nodes: per request, how many free devices
that pass the selectors each node can see. A node that cannot see enough for some request is
skipped without searching; a node where a selector fails on a visible device is always searched,
so CEL errors surface exactly where the scheduler would meet them.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable

from ..index import Index
from ..releases import Release
from .model import AllocatedState, Alternative, ClaimSpec, Device, Slice, read_allocated, read_slice
from .nodes import NodeView, candidate_nodes, node_matches
from .pools import Features, Pool, SliceIndex, gather_pools
from .search import Candidate, RunContext, invalid_pools_failure
from .selection import DeviceClassInfo, Evaluator, Selection, class_lookup
from .taints import rule_taints


def features_of(release: Release) -> Features:
    """The allocator features the target release's gates enable."""
    g = release.gate
    return Features(admin_access=g("DRAAdminAccess"), prioritized_list=g("DRAPrioritizedList"),
                    partitionable=g("DRAPartitionableDevices"), taints=g("DRADeviceTaints"),
                    consumable_capacity=g("DRAConsumableCapacity"),
                    binding_conditions=g("DRADeviceBindingConditions") and g("DRAResourceClaimDeviceStatus"),
                    list_attributes=g("DRAListTypeAttributes"))


@dataclass(frozen=True)
class Reach:
    """Per node: how many devices a request could take there (an upper bound), and where CEL failed."""

    counts: Counter
    error_nodes: frozenset[str]


class World:
    def __init__(self, index: Index, release: Release, evaluate: Evaluator, node: str | None,
                 driver_of: Callable[[str], str | None] | None = None) -> None:
        self.features = features_of(release)
        taints = rule_taints(index.taint_rules, index.slices) if self.features.taints else {}
        slices: list[Slice] = []
        uid = 0
        for obj in index.slices:
            s = read_slice(obj, uid, taints)
            uid += len(s.devices)
            slices.append(s)
        self.slices = SliceIndex(slices)
        self.classes: dict[str, DeviceClassInfo] = class_lookup(index.classes)
        self.allocated: AllocatedState = read_allocated(list(index.claims.values()), self.features.consumable_capacity)
        self.selection = Selection(evaluate, self.features.binding_conditions, driver_of)
        self.run = RunContext(self.features, self.classes, self.allocated, self.selection)
        self.nodes: list[NodeView] = candidate_nodes(index.nodes, slices, node)
        self._pools: dict[str, list[Pool]] = {}
        self._visible: dict[str, list[Candidate]] | None = None
        self._visible_by_driver: dict[str, dict[str, list[Candidate]]] | None = None
        self._reach: dict[tuple, Reach] = {}
        self._driver_of = driver_of

    def pools(self, node: NodeView) -> list[Pool]:
        """Pools visible from ``node`` (one entry per node of the run)."""
        pools = self._pools.get(node.name)
        if pools is None:
            pools = self._pools[node.name] = gather_pools(self.slices, node, self.features)
        return pools

    def plain_failure(self, node: NodeView) -> str:
        """The per-node message of a search that fails on ``node`` ("" for none)."""
        return invalid_pools_failure(self.pools(node))

    def visible(self) -> dict[str, list[tuple[Candidate, bool]]]:
        """Per node, the devices of its usable pools the search walks, in search order, each with
        whether the node can be given it (a device of a per-device slice may target another node;
        its selectors are still evaluated before that is checked)."""
        if self._visible is None:
            self._visible = {}
            for node in self.nodes:
                out = []
                for pool in self.pools(node):
                    if pool.incomplete or pool.invalid:
                        continue
                    for s in pool.slices:
                        for d in s.devices:
                            here = not s.per_device or node_matches(node, d.node_name, d.all_nodes, d.node_selector)
                            out.append((Candidate(d, s, pool), here))
                self._visible[node.name] = out
        return self._visible

    def visible_of_driver(self, driver: str) -> dict[str, list[tuple[Candidate, bool]]]:
        """``visible()`` restricted to the devices of one driver."""
        if self._visible_by_driver is None:
            self._visible_by_driver = {}
            for node_name, cands in self.visible().items():
                for entry in cands:
                    per_node = self._visible_by_driver.setdefault(entry[0].device.key[0], {})
                    per_node.setdefault(node_name, []).append(entry)
        return self._visible_by_driver.get(driver, {})

    def _required_driver(self, expressions: tuple[str | None, ...]) -> str | None:
        """A driver some selector requires: devices of other drivers fail it, without a CEL error."""
        if self._driver_of is None:
            return None
        for expr in expressions:
            if expr is not None:
                driver = self._driver_of(expr)
                if driver is not None:
                    return driver
        return None

    def reach(self, claim: ClaimSpec, alt: Alternative) -> Reach | None:
        """Per node, the free devices passing class and request selectors; None without the class."""
        cls = self.classes.get(alt.class_name)
        if cls is None or any(e is None for e in alt.selectors):
            return None
        key = (cls.name, alt.selectors, alt.admin)
        have = self._reach.get(key)
        if have is not None:
            return have
        counts: Counter = Counter()
        errors: set[str] = set()
        verdict: dict[int, bool | None] = {}
        driver = self._required_driver(cls.selectors + alt.selectors)
        visible = self.visible() if driver is None else self.visible_of_driver(driver)
        for node_name, cands in visible.items():
            for cand, here in cands:
                d = cand.device
                if not alt.admin and d.key in self.allocated.dedicated:
                    continue
                ok = verdict.get(d.uid, False) if d.uid in verdict else self._passes(cls, alt, d)
                verdict[d.uid] = ok
                if ok is None:
                    errors.add(node_name)
                elif ok and here:
                    counts[node_name] += 1
        have = self._reach[key] = Reach(counts, frozenset(errors))
        return have

    def _passes(self, cls: DeviceClassInfo, alt: Alternative, d: Device) -> bool | None:
        if not self.features.binding_conditions and d.binding_conditions:
            return False
        for expr in cls.selectors + alt.selectors:
            if expr is None:
                continue
            ok = self.selection.probe(expr, d)
            if ok is None:
                return None
            if not ok:
                return False
        return True

    def may_fit(self, claims: list[ClaimSpec], node: NodeView) -> bool:
        """False only when the search on ``node`` certainly ends in a plain "cannot allocate".

        Requests with allocationMode All are settled while validating, before the search, from
        every device of the node: nodes are never skipped for them. A selector that fails on a
        device of the node may surface anywhere in the search: such a node is always searched.
        """
        reaches = []
        for claim in claims:
            for req in claim.requests:
                per_alt = []
                for alt in req.alternatives:
                    if alt.mode != "ExactCount":
                        return True
                    reach = self.reach(claim, alt)
                    if reach is None or node.name in reach.error_nodes:
                        return True
                    per_alt.append((alt, reach))
                reaches.append(per_alt)
        need: defaultdict = defaultdict(int)
        for per_alt in reaches:
            if not any(reach.counts[node.name] >= alt.count for alt, reach in per_alt):
                return False
            if len(per_alt) == 1 and not per_alt[0][0].admin:
                alt = per_alt[0][0]
                need[(alt.class_name, alt.selectors)] += alt.count
        # Identical requests compete for the same devices (unless devices can be shared).
        if self.features.consumable_capacity:
            return True
        for (cls, selectors), total in need.items():
            reach = self._reach.get((cls, selectors, False))
            if reach is not None and reach.counts[node.name] < total:
                return False
        return True
