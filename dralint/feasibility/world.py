"""The fleet as the allocator sees it: devices, pools per node, allocated state, selectors.

Built once per run from the index, or kept up to date object by object (the webhook's cluster
watch, ``--together``): a change marks the nodes it touches, and only those nodes' pools, devices
and counts (counts.py) are worked out again before the next question.

Per node the world knows the devices of its usable pools in the order the search walks them
("entries"), each with whether the node can be given it (a device of a per-device slice may
target another node; its selectors are still evaluated before that is checked).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ..convert import Canonical
from ..kube.limits import limits_for
from ..kube.releases import Release
from ..sizes import deep_size
from .counts import Counts
from .lru import Lru
from .model import AllocatedState, DeviceKey, Nanos, Slice, holdings, read_slice
from .node_state import NodeState
from .nodes import NodeView, candidate_nodes, node_matches
from .pools import Features, Pool, SliceIndex, gather_pools
from .picks import Candidate, RunContext, invalid_pools_failure
from .selection import DeviceClassInfo, Evaluator, Selection, cel_entry_problem, read_class
from .taints import rule_taints


NODE_SET_BYTES = 16 << 20   # node sets kept: per pod placement, its nodes and their slots


def _node_set_bytes(key: tuple, nodes: Any) -> int:
    """A node set's key (the pod's placement) and its lists and arrays; the nodes are the world's."""
    return deep_size(key) + 8 * len(nodes.nodes) + nodes.slots.nbytes + nodes.unusable.nbytes + \
        deep_size(nodes.refused)


def features_of(release: Release) -> Features:
    """The allocator features the target release's gates enable."""
    g = release.gate
    return Features(admin_access=g("DRAAdminAccess"), prioritized_list=g("DRAPrioritizedList"),
                    partitionable=g("DRAPartitionableDevices"), taints=g("DRADeviceTaints"),
                    consumable_capacity=g("DRAConsumableCapacity"),
                    binding_conditions=g("DRADeviceBindingConditions") and g("DRAResourceClaimDeviceStatus"),
                    list_attributes=g("DRAListTypeAttributes"))


class World:
    """Everything a judgement is made against, kept current by ``put_*``/``drop_*``."""

    def __init__(self, release: Release, evaluate: Evaluator, only_node: str | None = None,
                 driver_of: Callable[[str], str | None] | None = None, *, nodes_listed: bool = False) -> None:
        """``nodes_listed``: the Node objects given are the cluster's whole node list, even when there
        are none (the webhook's watch lists them); else the list is known once there is one Node."""
        self.features = features_of(release)
        self.nodes_listed = nodes_listed
        # The scheduler merges DeviceTaintRules into devices only with this gate on (besides DRADeviceTaints).
        self.taint_rules_on = self.features.taints and release.gate("DRADeviceTaintRules")
        limits = limits_for(release.minor)
        self.taint_rule_needs_selector, self.capacity_names = limits.taint_rule_needs_selector, limits.capacity_names_either_way
        self.only_node = only_node
        # driver_of comes with the real CEL semantics, and so does the conversion of devices.
        self.selection = Selection(evaluate, self.features.binding_conditions, driver_of,
                                   cel_entry_problem if driver_of is not None else None)
        self.classes: dict[str, DeviceClassInfo] = {}
        self.allocated = AllocatedState()
        self.run = RunContext(self.features, self.classes, self.allocated, self.selection,
                              all_pool_fails_node=limits.all_pool_fails_node,
                              shares_block_exclusive=limits.shares_block_exclusive)
        self._slices: dict[str, Slice] = {}            # by object identity key (see _slice_key)
        self._slice_objs: dict[str, Canonical] = {}
        self.slices = SliceIndex([])
        self._rules: list[Canonical] = []
        self._node_objects: dict[str, dict] = {}
        self._claims: dict[tuple[str, str], Canonical] = {}
        # How many claims hold each device, share it, and consume each capacity of it (count, sum): a
        # claim changed costs its own devices, not a new count over every claim.
        self._holders: dict[DeviceKey, int] = {}
        self._sharers: dict[DeviceKey, int] = {}
        self._consumers: dict[DeviceKey, dict[str, tuple[int, Nanos]]] = {}
        self._next_uid = 0
        self._states: dict[str, NodeState] = {}
        self._slot_count = 0                           # slots are stable: a node keeps its slot
        self._slot_names: dict[int, str] = {}
        self.nodes: list[NodeView] = []
        self.order = np.zeros(0, np.int64)             # the slots of ``nodes``, in node order
        self._dirty_nodes_list = True
        # Change logs read by counts.py: nodes whose entries changed, devices taken or given back.
        self.node_log: list[set[int]] = []
        self.hold_log: list[tuple[int, int, bool, int]] = []    # (uid, slot, here, +1 taken / -1 freed)
        self.class_log: list[str] = []
        self._uids_of: dict[DeviceKey, list[int]] = {}
        self._slots_of: dict[int, list[tuple[int, bool]]] = {}  # uid -> (slot, here) of its entries
        self.held = np.zeros(0, bool)                  # per uid: held by another claim (dedicated)
        self.held_token = 0                            # changes with what hold/release took (caches key on it)
        self._multi_term: tuple[int, bool] | None = None
        # The fleet's counts live as long as the world: every judgement shares and updates them.
        self.counts = Counts(self)
        # Which nodes a pod may run on, as judge.py works it out; keyed with len(node_log) and by the
        # pod's placement (what the caller wrote), so bounded by bytes.
        self.node_sets: Lru[tuple, Any] = Lru(NODE_SET_BYTES, _node_set_bytes)
        # What the questions over every node read (unusable pools, failures), kept per slot and
        # updated for the slots node_log names: one changed slice costs its nodes, not the fleet.
        self._facts: _NodeFacts | None = None
        # Each node's view with the Node object it was read from: an unchanged object is not read again.
        self._views: dict[str, tuple[Any, NodeView]] = {}
        # Devices published for nodes that have no Node object, per node-log position (see absent_devices).
        self._absent: tuple[int, np.ndarray, list[str]] | None = None

    # ------------------------------------------------------------------ building

    @classmethod
    def from_index(cls, index, release: Release, evaluate: Evaluator, only_node: str | None = None,
                   driver_of: Callable[[str], str | None] | None = None, *, by_name: bool = False,
                   nodes_listed: bool = False) -> "World":
        """The world of ``index``; ``by_name``: slices are known by name (a cluster kept current with
        ``put_slice``/``drop_slice``, the webhook's), else every object counts (a run's files);
        ``nodes_listed``: its Nodes are the cluster's whole node list (see ``__init__``)."""
        world = cls(release, evaluate, only_node, driver_of, nodes_listed=nodes_listed)
        world._rules = list(index.taint_rules)
        for obj in index.classes.values():
            world.classes[obj.name] = read_class(obj)
        world._node_objects = dict(index.nodes)
        world._add_slices(index.slices, by_name=by_name)
        world._claims = dict(index.claims)
        world._count_claims([], list(world._claims.values()))
        return world

    def _rule_taints(self, objs: Iterable[Canonical]) -> Mapping[DeviceKey, tuple]:
        return (rule_taints(self._rules, objs, needs_selector=self.taint_rule_needs_selector)
                if self.taint_rules_on and self._rules else {})

    def _add_slices(self, objs: Iterable[Canonical], by_name: bool) -> None:
        """Read slices; ``by_name``: a slice replaces the one of the same name (cluster watch),
        else every object counts, duplicates included (a run's files)."""
        objs = list(objs)
        taints = self._rule_taints(list(self._slice_objs.values()) + objs)
        fresh = []
        for obj in objs:
            s = read_slice(obj, self._next_uid, taints, self.capacity_names)
            self._next_uid += len(s.devices)
            key = obj.name if by_name else f"{obj.name}#{id(obj)}"
            old = self._slices.get(key)
            if old is not None:
                self._forget_slice(old)
            self._slices[key] = s
            self._slice_objs[key] = obj
            for d in s.devices:
                self._uids_of.setdefault(d.key, []).append(d.uid)
            fresh.append(s)
        self.selection.columns.add(d for s in fresh for d in s.devices)
        self.held = np.resize(self.held, self._next_uid)
        for s in fresh:
            for d in s.devices:
                self.held[d.uid] = d.key in self.allocated.dedicated
        self.slices = SliceIndex(self._slices.values())
        self._touch_slices(fresh)

    def _forget_slice(self, s: Slice) -> None:
        self.selection.columns.remove(d.uid for d in s.devices)
        for d in s.devices:
            uids = self._uids_of.get(d.key, [])
            if d.uid in uids:
                uids.remove(d.uid)
            self._slots_of.pop(d.uid, None)
        self._touch_slices([s])

    def _touch_slices(self, changed: list[Slice]) -> None:
        """Mark the nodes whose view a changed slice may alter."""
        names: set[str] = set()
        everyone = False
        pools = {s.pool_key for s in changed}
        for s in changed:
            # A pool with counter slices is seen by every node (an unusable one stops their All
            # requests), so a change of any of its slices can change every node's view.
            if s.node_name and not s.counter_sets and s.pool_key not in self.slices.counter_slices:
                names.add(s.node_name)
            else:
                everyone = True
        for name, state in self._states.items():
            if everyone or name in names or (state.pools is not None and any(p.key in pools for p in state.pools)):
                names.add(name)
        self._mark(names, nodes_changed=True)
        self.run.counter_cache.clear()

    def _mark(self, names: set[str], nodes_changed: bool = False) -> None:
        slots = set()
        for name in names:
            state = self._states.get(name)
            if state is not None:
                state.pools = None
                slots.add(state.slot)
        self.node_log.append(slots)
        if nodes_changed:
            self._dirty_nodes_list = True

    # ------------------------------------------------------------------ changes (webhook, --together)

    def put_slice(self, obj: Canonical) -> None:
        """A ResourceSlice added or changed."""
        self._add_slices([obj], by_name=True)

    def drop_slice(self, name: str) -> None:
        """A ResourceSlice removed."""
        old = self._slices.pop(name, None)
        self._slice_objs.pop(name, None)
        if old is not None:
            self.slices = SliceIndex(self._slices.values())
            self._forget_slice(old)

    def put_class(self, obj: Canonical) -> None:
        """A DeviceClass added or changed."""
        self.classes[obj.name] = read_class(obj)
        self.class_log.append(obj.name)

    def drop_class(self, name: str) -> None:
        """A DeviceClass removed."""
        self.classes.pop(name, None)
        self.class_log.append(name)

    def put_node(self, name: str, obj: dict | None) -> None:
        """A Node object added or changed (``obj``), or removed (None)."""
        if obj is None:
            self._node_objects.pop(name, None)
        else:
            self._node_objects[name] = obj
        self._mark({name}, nodes_changed=True)

    def put_claim(self, obj: Canonical | None, key: tuple[str, str]) -> None:
        """A ResourceClaim added, changed or removed (None): what it holds is no longer free, what it held
        is free again."""
        old = self._claims.pop(key, None)
        if obj is not None:
            self._claims[key] = obj
        self._count_claims([old] if old is not None else [], [obj] if obj is not None else [])

    def hold(self, dedicated: Iterable[DeviceKey], shares: Mapping[DeviceKey, Mapping] | None = None) -> None:
        """Mark devices as taken by a claim judged earlier (replicas, ``--together``)."""
        taken = set(dedicated) - self.allocated.dedicated
        self.allocated.dedicated |= taken
        for key, consumed in (shares or {}).items():
            self.allocated.shared.add(key)
            agg = self.allocated.consumed.setdefault(key, {})
            for name, q in consumed.items():
                agg[name] = agg.get(name, 0) + q
        self.held_token += sum(hash(k) for k in taken) + sum(hash((k, tuple(sorted(v.items()))))
                                                             for k, v in (shares or {}).items())
        self._changed(taken, set(), set(shares or ()))

    def release(self, dedicated: Iterable[DeviceKey], shares: Mapping[DeviceKey, Mapping] | None = None) -> None:
        """Undo ``hold`` with the same arguments."""
        freed = set(dedicated) & self.allocated.dedicated
        self.allocated.dedicated -= freed
        for key, consumed in (shares or {}).items():
            agg = self.allocated.consumed.get(key, {})
            for name, q in consumed.items():
                agg[name] = agg.get(name, 0) - q
            if all(v == 0 for v in agg.values()):
                self.allocated.consumed.pop(key, None)
                self.allocated.shared.discard(key)
        self.held_token -= sum(hash(k) for k in freed) + sum(hash((k, tuple(sorted(v.items()))))
                                                             for k, v in (shares or {}).items())
        self._changed(set(), freed, set(shares or ()))

    def holders_of(self, keys: set[DeviceKey], limit: int) -> list[Canonical]:
        """Up to ``limit`` claims of the cluster state whose allocation holds one of ``keys``, in
        their order: what an explanation names when other claims hold the devices. A scan of the
        claims, made only to explain a claim that cannot be allocated."""
        found: list[Canonical] = []
        for claim in self._claims.values():
            dedicated, _ = holdings(claim, self.features.consumable_capacity)
            if keys.intersection(dedicated):
                found.append(claim)
                if len(found) >= limit:
                    break
        return found

    def _count_claims(self, gone: list[Canonical], come: list[Canonical]) -> None:
        """Take claims ``gone`` out of the allocated state and put claims ``come`` in (as the scheduler's
        allocateddevices.go gathers them over every claim); log what changed for the counts of every node."""
        allocated = self.allocated
        held = [(holdings(claim, self.features.consumable_capacity), sign)
                for claims, sign in ((gone, -1), (come, 1)) for claim in claims]
        dedicated = {key for (keys, _), _ in held for key in keys}
        shared = {key for (_, shares), _ in held for key, _ in shares}
        before = {key for key in dedicated if key in allocated.dedicated}
        before_shares = {key: (key in allocated.shared, allocated.consumed.get(key)) for key in shared}
        for (keys, shares), sign in held:
            for key in keys:
                _count(self._holders, key, sign)
            for key, consumed in shares:
                _count(self._sharers, key, sign)
                per_name = self._consumers.setdefault(key, {})
                for name, q in consumed.items():
                    n, total = per_name.get(name, (0, 0))
                    if n + sign:
                        per_name[name] = (n + sign, total + sign * q)
                    else:
                        per_name.pop(name, None)
                if not per_name:
                    self._consumers.pop(key, None)
        for key in dedicated:
            (allocated.dedicated.add if key in self._holders else allocated.dedicated.discard)(key)
        for key in shared:
            if key in self._sharers:
                allocated.shared.add(key)
                allocated.consumed[key] = {name: total for name, (_, total) in self._consumers.get(key, {}).items()}
            else:
                allocated.shared.discard(key)
                allocated.consumed.pop(key, None)
        after = {key for key in dedicated if key in allocated.dedicated}
        reshared = {key for key, (was, consumed) in before_shares.items()
                    if (key in allocated.shared) != was or allocated.consumed.get(key) != consumed}
        self._changed(after - before, before - after, reshared)

    def _changed(self, taken: set[DeviceKey], freed: set[DeviceKey], reshared: set[DeviceKey]) -> None:
        if not (taken or freed or reshared):
            return
        self.run.counter_cache.clear()
        for keys, sign in ((taken, 1), (freed, -1)):
            for key in keys:
                for uid in self._uids_of.get(key, ()):
                    self.held[uid] = sign > 0
                    for slot, here in self._slots_of.get(uid, ()):
                        self.hold_log.append((uid, slot, here, sign))
        # Capacity held by shares changes what a device can still give: its nodes are counted again.
        names = {self._slot_names[slot] for key in reshared for uid in self._uids_of.get(key, ())
                 for slot, _ in self._slots_of.get(uid, ()) if slot in self._slot_names}
        if names:
            self._mark(names)

    # ------------------------------------------------------------------ queries

    def node_list(self) -> list[NodeView]:
        """The nodes to judge on, in the order they are tried (by name; placeholders last)."""
        if self._dirty_nodes_list:
            self.nodes = candidate_nodes(self._node_objects, self.slices.all, self.only_node, self._views,
                                         self.nodes_known())
            kept = {n.name for n in self.nodes}
            changed = set()
            for name in list(self._states):
                if name not in kept:
                    slot = self._states.pop(name).slot
                    self._slot_names.pop(slot, None)
                    changed.add(slot)
            for node in self.nodes:
                state = self._states.get(node.name)
                if state is None:
                    state = self._states[node.name] = NodeState(node, self._slot_count)
                    self._slot_names[self._slot_count] = node.name
                    self._slot_count += 1
                    changed.add(state.slot)
                elif state.view != node:
                    state.view, state.pools = node, None
                    changed.add(state.slot)
            self.order = np.array([self._states[n.name].slot for n in self.nodes], np.int64)
            self.node_log.append(changed)
            self._dirty_nodes_list = False
        return self.nodes

    def nodes_changed(self) -> bool:
        """Whether the node list must be worked out again before use."""
        return self._dirty_nodes_list

    @property
    def slot_count(self) -> int:
        """How long per-node arrays must be (slots of removed nodes stay unused)."""
        self.node_list()
        return self._slot_count

    def uids_of(self, key: DeviceKey) -> list[int]:
        """The uids a device has in the world (one per slice that lists it)."""
        return self._uids_of.get(key, [])

    def has_node_objects(self) -> bool:
        return bool(self._node_objects)

    def nodes_known(self) -> bool:
        """Whether the cluster's node list is known: listed as a whole (the webhook's watch), or given
        as Node objects (a cluster state with at least one). Then the nodes are the Node objects,
        and a name that only slices mention is no node."""
        return self.nodes_listed or bool(self._node_objects)

    def known_node_names(self) -> list[str]:
        """Names of the nodes of the cluster state: its Node objects when the node list is known, else
        the node names its slices mention."""
        if self.nodes_known():
            return sorted(self._node_objects)
        names = {s.node_name for s in self.slices.all if s.node_name}
        for s in self.slices.all:
            if s.per_device:
                names |= {d.node_name for d in s.devices if d.node_name}
        return sorted(names)

    def absent_devices(self) -> tuple[np.ndarray, list[str]]:
        """The devices published for nodes that have no Node object, while the node list is known
        (they count nowhere: the scheduler never filters a node it does not have): their uids, and
        per uid the node each names."""
        pos = len(self.node_log)
        if self._absent is None or self._absent[0] != pos:
            uids: list[int] = []
            names: list[str] = []
            if self.nodes_known():
                present = self._node_objects
                for name, slices in self.slices.on_node.items():
                    if name not in present:
                        for s in slices:
                            uids += [d.uid for d in s.devices]
                            names += [name] * len(s.devices)
                for s in self.slices.shared:
                    for d in s.devices if s.per_device else ():
                        if d.node_name and d.node_name not in present:
                            uids.append(d.uid)
                            names.append(d.node_name)
            self._absent = (pos, np.array(uids, np.int64), names)
        return self._absent[1], self._absent[2]

    def state(self, node: NodeView) -> NodeState:
        """The node's pools and entries, worked out again if something changed."""
        self.node_list()
        state = self._states.get(node.name)
        if state is None:  # a node outside the list (validation), never cached
            state = NodeState(node, -1)
        if state.pools is None:
            self._compute(state)
        return state

    def _compute(self, state: NodeState) -> None:
        node = state.view
        pools = gather_pools(self.slices, node, self.features)
        entries: list[tuple[Candidate, bool]] = []
        for pool in pools:
            if not pool.usable:
                continue
            for s in pool.slices:
                for d in s.devices:
                    here = not s.per_device or node_matches(node, d.node_name, d.all_nodes, d.node_selector)
                    entries.append((Candidate(d, s, pool), here))
        for c, here in state.entries:
            slots = self._slots_of.get(c.device.uid)
            if slots is not None:
                slots[:] = [x for x in slots if x[0] != state.slot]
        for c, here in entries:
            self._slots_of.setdefault(c.device.uid, []).append((state.slot, here))
        state.pools = pools
        state.entries = entries
        state.dev = np.fromiter((c.device.uid for c, _ in entries), np.int64, len(entries))
        state.here = np.fromiter((h for _, h in entries), bool, len(entries))
        state.failure = invalid_pools_failure(pools)
        state.unusable = any(not p.usable for p in pools)

    def pools(self, node: NodeView) -> list[Pool]:
        """Pools visible from ``node``, in search order."""
        pools = self.state(node).pools
        assert pools is not None
        return pools

    def plain_failure(self, node: NodeView) -> str:
        """The per-node message of a search that fails on ``node`` ("" for none)."""
        return self.state(node).failure

    def failing_nodes(self) -> list[NodeView]:
        """The nodes where a failed search reports something (an invalid pool), in node order."""
        facts = self._node_facts()
        if facts.failing_list is None:
            facts.failing_list = [self._states[self._slot_names[slot]].view for slot in self.order.tolist()
                                  if slot in facts.failing]
        return facts.failing_list

    def drop_caches(self) -> int:
        """Forget what is worked out again when asked (selector answers, counts, node sets, shared
        counters left): what a webhook worker gives back first near its memory ceiling. The
        bytes they held, as estimated. Only while nobody else uses the world."""
        freed = self.counts.drop_caches() + self.selection.drop_caches() + self.node_sets.clear()
        if self.run.counter_cache:
            freed += deep_size(self.run.counter_cache)
            self.run.counter_cache.clear()
        return freed

    def warm(self) -> None:
        """Work out now what the first question would otherwise pay for: every node's pools and
        entries, the fleet's arrays (the webhook calls this off the request path)."""
        self.counts.warm()
        self.unusable_pools()
        self.failing_nodes()

    def warm_selectors(self, expressions: Iterable[str]) -> None:
        """Work out now the answers of ``expressions`` over the fleet (as many as are kept)."""
        self.selection.columns.warm(expressions)

    def _node_facts(self) -> "_NodeFacts":
        self.node_list()
        facts, end = self._facts, len(self.node_log)
        if facts is not None and facts.pos == end:
            return facts
        if facts is None:
            facts = self._facts = _NodeFacts(0, np.zeros(0, bool), {}, set())
            slots = [self._states[n.name].slot for n in self.nodes]
        else:
            slots = sorted(set().union(*self.node_log[facts.pos:]))
        if len(facts.unusable) < self._slot_count:
            grown = np.zeros(self._slot_count, bool)
            grown[:len(facts.unusable)] = facts.unusable
            facts.unusable = grown
        for slot in slots:
            st = self.state_at(slot)
            facts.unusable[slot] = st is not None and st.unusable
            facts.pools.pop(slot, None)
            facts.failing.discard(slot)
            if st is None:
                continue
            if st.unusable:
                facts.pools[slot] = [p for p in st.pools or () if not p.usable]
            if st.failure:
                facts.failing.add(slot)
        facts.pos, facts.pools_list, facts.failing_list = end, None, None
        return facts

    def unusable_slots(self) -> np.ndarray:
        """Per slot: its node sees an incomplete or invalid pool."""
        return self._node_facts().unusable

    def unusable_pools(self) -> list[Pool]:
        """The pools some node sees that the allocator cannot take from, in node order."""
        facts = self._node_facts()
        if facts.pools_list is None:
            pools: dict[int, Pool] = {}
            for slot in self.order.tolist():
                pools.update((id(p), p) for p in facts.pools.get(slot, ()))
            facts.pools_list = list(pools.values())
        return facts.pools_list

    def slot_of(self, node: NodeView) -> int:
        """The slot of a node of ``node_list()``."""
        return self._states[node.name].slot

    def has_multi_term_selectors(self) -> bool:
        """Whether some slice or device has a node selector with several terms (an allocation from it
        fails when the scheduler builds the result's node selector)."""
        if self._multi_term is None or self._multi_term[0] != len(self.node_log):
            found = False
            for s in self.slices.all:
                for sel in [s.node_selector] + ([d.node_selector for d in s.devices] if s.per_device else []):
                    terms = sel.get("nodeSelectorTerms") if isinstance(sel, dict) else None
                    found = found or (isinstance(terms, list) and len(terms) > 1)
            self._multi_term = (len(self.node_log), found)
        return self._multi_term[1]

    def states(self) -> list[NodeState]:
        """Every node's state, in node order."""
        return [self.state(n) for n in self.node_list()]

    def state_at(self, slot: int) -> NodeState | None:
        """The node of a slot (None when its node is gone)."""
        self.node_list()
        name = self._slot_names.get(slot)
        return self.state(self._states[name].view) if name is not None else None


@dataclass
class _NodeFacts:
    """Per slot, what questions over every node read; valid up to ``node_log[pos]``."""

    pos: int
    unusable: np.ndarray                 # per slot: the node sees a pool the allocator cannot take from
    pools: dict[int, list[Pool]]         # per slot with such pools: those pools
    failing: set[int]                    # slots whose failed search reports something
    pools_list: list[Pool] | None = None           # unusable_pools(), until the next change
    failing_list: list[NodeView] | None = None     # failing_nodes(), until the next change


def _count(counts: dict[DeviceKey, int], key: DeviceKey, sign: int) -> None:
    """Add ``sign`` to ``counts[key]``; a count of zero is no entry."""
    n = counts.get(key, 0) + sign
    if n:
        counts[key] = n
    else:
        counts.pop(key, None)
