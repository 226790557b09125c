"""The structured allocator for one node: validation, then depth-first search (§3, §4).

This follows kube-scheduler's experimental allocator step by step, so that it reaches the same
verdict and, where several solutions exist, the same first solution: claims in order, requests
in order, device slots as combinations in (pool, slice, device) order, ``firstAvailable``
alternatives tried in order with full backtracking, and the 32-device limit pruning
alternatives.
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .bound import can_match_some
from .capacity import Allocating, consumed_by, fits
from .columns import ERROR, FALSE, TRUE
from .constraints import DistinctAttribute, MatchAttribute, applies, lookup_attribute, scalar_value, trackers
from .counters import CounterBook, CounterSets
from .fatal import FatalError
from .model import AllocatedState, Alternative, ClaimSpec, Device, DeviceKey, Slice
from .nodes import NodeView, node_matches
from .pools import Features, Pool
from .selection import DeviceClassInfo, Selection
from .taints import blocking_taint

MAX_DEVICES_PER_CLAIM = 32  # AllocationResultsMaxSize
# Searches that end within this many steps never pay for the cuts and memos below (most do).
PRUNE_AFTER = 200
MAX_VARIANTS = 16   # values of not yet matched attributes the bound tries one by one
_NO_VALUE = object()   # a device without the attribute: it joins no matchAttribute constraint on it

DONE, FAIL, OVER = 1, 0, 2


class NodeFailure(Exception):
    """This node cannot take the claims, with a reason the scheduler reports (not fatal)."""


def invalid_pools_failure(pools: list[Pool]) -> str:
    """What the allocator reports for a node where the search failed and some pool was invalid."""
    invalid = [p.label for p in pools if p.invalid]
    return "invalid resource pools were encountered: " + ", ".join(invalid) if invalid else ""


class _Hopeless(Exception):
    """The rest of the search cannot succeed whatever is picked before it (see ``hopeless_from``)."""


class BudgetExceeded(Exception):
    """The search ran past its step or time budget."""


@dataclass(frozen=True)
class Candidate:
    device: Device
    slice: Slice
    pool: Pool


@dataclass(frozen=True)
class Pick:
    """One device in an allocation result."""

    request: str             # ``req`` or ``req/sub``
    alt: Alternative
    candidate: Candidate
    shared: bool
    consumed: Mapping | None

    @property
    def device(self) -> Device:
        return self.candidate.device


@dataclass
class RequestData:
    alt: Alternative
    cls: DeviceClassInfo
    num: int
    all_devices: list[Candidate] = field(default_factory=list)
    answers: memoryview | None = None   # per device uid, the selectors' answer (looked up once per attempt)


@dataclass
class Budget:
    """Steps and seconds shared by every node of one judgement."""

    max_steps: int
    deadline: float
    steps: int = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps or (self.steps & 1023 == 0 and time.monotonic() > self.deadline):
            raise BudgetExceeded()


@dataclass
class RunContext:
    """What every attempt of a run shares."""

    features: Features
    classes: Mapping[str, DeviceClassInfo]
    allocated: AllocatedState
    selection: Selection
    counter_cache: dict[tuple, CounterSets] = field(default_factory=dict)


Tracer = Callable[[str], None]


class Attempt:
    """``Allocate(node, claims)``: one node, the pod's claims together."""

    def __init__(self, run: RunContext, node: NodeView, pools: list[Pool], claims: list[ClaimSpec], budget: Budget,
                 trace: Tracer | None = None, *, prune: bool = True, relax: frozenset[str] = frozenset(),
                 ideal: bool = False, eager: bool = False) -> None:
        self.run = run
        self.f = run.features
        self.node = node
        self.pools = pools
        self.claims = claims
        self.budget = budget
        self.trace = trace
        self.data: dict[tuple[int, int, int], RequestData] = {}
        self.selected: dict[tuple[int, int], int] = {}
        self.results: list[list[Pick]] = [[] for _ in claims]
        self.allocating: dict[DeviceKey, set[int]] = defaultdict(set)
        self.counters = CounterBook(run.allocated, run.counter_cache)
        self.capacity = Allocating()
        self.trackers: list[list[MatchAttribute | DistinctAttribute]] = []
        self._slots: dict[tuple[int, int, int], frozenset[DeviceKey]] | None = None  # None: not yet worked out
        self._prune = prune                      # False: the plain exhaustive search (tests compare both)
        self._begin = -PRUNE_AFTER if eager else budget.steps
        self._ideal_checked = False
        # Checks left out to find what blocks a claim (explanations): "taints", "counters", "capacity".
        self.relax = relax
        # The search without the scheduler's leaks (counters taken by a refused device stay taken):
        # its answer only depends on what is free, which ``hopeless_from`` needs.
        self.ideal = ideal
        self._selectable: dict[tuple[int, int, int], set[DeviceKey]] = {}
        # Per request alternative, the devices that may take counters and then be refused.
        self._leaky: dict[tuple[int, int, int], list[Candidate]] = {}
        self._bounded = False                    # whether the matching bound may cut the search
        self._barriers: set[tuple[int, int]] = set()   # (claim, request): All requests of constrained claims
        self._bound_memo: dict[tuple, bool] = {}
        self._hopeless: dict[int, bool] = {}    # claim index -> claims from there on fail on their own
        # The search from a request on failed in this state: it is a function of what is free, taken
        # and matched so far (and it left the counters as they were), so it fails again.
        self._failed_from: dict[tuple, int] = {}
        self._relevant: dict[tuple[int, int], frozenset[DeviceKey]] = {}
        self._over_possible: list[bool] = []     # per claim: its picks could pass the claim limit
        self._positions: dict[DeviceKey, tuple[int, int, int]] | None = None
        self._values: dict[str, dict[DeviceKey, Any]] = {}

    # ------------------------------------------------------------------ validation (§3)

    def validate(self) -> None:
        """Check every claim before searching; raises FatalError or NodeFailure."""
        for c, claim in enumerate(self.claims):
            if claim.malformed:
                path, why = claim.malformed[0]
                raise FatalError("malformed", f"claim {claim.display}: {why}", claim.obj, path)
            minimum = most = 0
            for r, req in enumerate(claim.requests):
                if req.first_available:
                    if not self.f.prioritized_list:
                        raise FatalError("gate", f"claim {claim.display}, request {req.name}: has subrequests, but the "
                                         "DRAPrioritizedList feature is disabled", claim.obj,
                                         req.path.child("firstAvailable"))
                    if not self.f.consumable_capacity:
                        for sub in req.first_available:
                            if sub.has_capacity:
                                raise FatalError("gate", f"claim {claim.display}, subrequest {sub.name}: has capacity "
                                                 "requests, but the DRAConsumableCapacity feature is disabled",
                                                 claim.obj, sub.path.child("capacity"))
                    least, most_here = None, 0
                    for s, sub in enumerate(req.first_available):
                        data = self._request_data(claim, sub)
                        self.data[(c, r, s)] = data
                        least = data.num if least is None else min(least, data.num)
                        most_here = max(most_here, data.num)
                    minimum += least or 0
                    most += most_here
                elif req.exactly is not None:
                    if not self.f.consumable_capacity and req.exactly.has_capacity:
                        raise FatalError("gate", f"claim {claim.display}, request {req.name}: has capacity requests, "
                                         "but the DRAConsumableCapacity feature is disabled", claim.obj,
                                         req.exactly.path.child("capacity"))
                    data = self._request_data(claim, req.exactly)
                    self.data[(c, r, 0)] = data
                    minimum += data.num
                    most += data.num
            self._over_possible.append(most > MAX_DEVICES_PER_CLAIM)
            if minimum > MAX_DEVICES_PER_CLAIM:
                raise FatalError("limit", f"claim {claim.display}: number of requested devices {minimum} exceeds the "
                                 f"claim limit of {MAX_DEVICES_PER_CLAIM}", claim.obj,
                                 claim.devices_path.child("requests"))
            for con in claim.constraints:
                if not con.match_attribute and not con.distinct_attribute:
                    raise FatalError("malformed", f"claim {claim.display}, constraint #{con.index}: empty constraint "
                                     "(neither matchAttribute nor distinctAttribute)", claim.obj, con.path)
            self.trackers.append(trackers(claim.constraints, self.f.list_attributes))

    def _request_data(self, claim: ClaimSpec, alt: Alternative) -> RequestData:
        for i, expr in enumerate(alt.selectors):
            if expr is None:
                raise FatalError("malformed", f"claim {claim.display}, request {alt.name}, selector #{i}: CEL "
                                 "expression empty (unsupported selector type?)", claim.obj,
                                 alt.path.child("selectors", i))
        if not self.f.admin_access and alt.admin_access is not None:
            raise FatalError("gate", f"claim {claim.display}, request {alt.name}: admin access is requested, but the "
                             "DRAAdminAccess feature is disabled", claim.obj, alt.path.child("adminAccess"))
        if not alt.class_name:
            raise FatalError("malformed", f"claim {claim.display}, request {alt.name}: missing device class name",
                             claim.obj, alt.path.child("deviceClassName"))
        cls = self.run.classes.get(alt.class_name)
        if cls is None:
            raise FatalError("class-missing", f"claim {claim.display}, request {alt.name}: device class "
                             f"{alt.class_name} does not exist", claim.obj, alt.path.child("deviceClassName"))
        if alt.mode == "ExactCount":
            return RequestData(alt, cls, alt.count)
        if alt.mode != "All":
            raise FatalError("malformed", f"claim {claim.display}, request {alt.name}: unsupported count mode "
                             f"{alt.mode}", claim.obj, alt.path.child("allocationMode"))
        data = RequestData(alt, cls, 0)
        for pool in self.pools:
            if pool.incomplete:
                raise NodeFailure(f"request `{alt.full_name}` asks for all devices, but resource pool {pool.label} "
                                  "is incomplete (not all of its ResourceSlices are published)")
            if pool.invalid:
                raise NodeFailure(f"request `{alt.full_name}` asks for all devices, but resource pool {pool.label} "
                                  f"is invalid: {pool.invalid}")
            for s in pool.slices:
                for device in s.devices:
                    if not self.selectable(claim, data, s, device):
                        continue
                    if self.f.consumable_capacity and not fits(alt, device, None, None):
                        continue
                    data.all_devices.append(Candidate(device, s, pool))
        data.num = len(data.all_devices)
        return data

    # ------------------------------------------------------------------ search (§4)

    def run_search(self) -> bool:
        """True when every claim got its devices; raises FatalError, NodeFailure or BudgetExceeded."""
        self.validate()
        if self._search_done():
            self.check_node_selectors()
            return True
        failure = invalid_pools_failure(self.pools)
        if failure:
            raise NodeFailure(failure)
        return False

    def _pruning(self) -> bool:
        """Whether this search has run long enough to be worth cutting (never in the plain one)."""
        if self.budget.steps - self._begin < PRUNE_AFTER:
            return False
        if self._slots is None:
            self._slots = self._request_slots()
        if self._bounded and not self._ideal_checked and not self._barriers:
            self._ideal_checked = True
            if not self.ideal and self._leaky and not self._ideal_done():
                raise _Hopeless()
        return self._bounded

    def _ideal_done(self) -> bool:
        """The search without leaks, where branches that may leak cannot be cut. A solution the
        scheduler finds also passes it (leaked counters only refuse more), so when it fails the
        scheduler's search fails too, and far faster shown this way."""
        ideal = Attempt(self.run, self.node, self.pools, self.claims, self.budget, relax=self.relax, ideal=True,
                        eager=True)
        ideal.validate()
        return ideal._search_done()

    def _search_done(self) -> bool:
        try:
            return self.one(0, 0, 0, 0, False, (0, 0, 0)) == DONE
        except _Hopeless:
            return False

    def check_node_selectors(self) -> None:
        """``createNodeSelector`` per claim: a picked network-attached device whose node selector has
        several terms cannot be expressed in the result, and the allocator errors out."""
        for claim, picks in zip(self.claims, self.results):
            for p in picks:
                s, d = p.candidate.slice, p.device
                node_name, selector = (d.node_name, d.node_selector) if s.per_device else (s.node_name, s.node_selector)
                if node_name or d.binds_to_node:
                    break  # the result is pinned to this node; later selectors are not looked at
                terms = selector.get("nodeSelectorTerms") if selector is not None else None
                if isinstance(terms, list) and len(terms) > 1:
                    raise FatalError("malformed", f"create NodeSelector for claim {claim.display}: unsupported "
                                     f"ResourceSlice.NodeSelector with {len(terms)} terms (slice {s.name})",
                                     claim.obj, claim.devices_path)

    def in_use(self, key: DeviceKey) -> bool:
        return key in self.run.allocated.dedicated or bool(self.allocating.get(key))

    def _answers(self, data: RequestData) -> memoryview:
        """The request's selector answers per device uid, looked up once per attempt."""
        if data.answers is None:
            data.answers = self.run.selection.answers(data.cls, data.alt)
        return data.answers

    def selectable(self, claim: ClaimSpec, data: RequestData, s: Slice, device: Device) -> bool:
        answers = self._answers(data)
        answer = answers[device.uid] if device.uid < len(answers) else ERROR
        if answer == FALSE or (answer == ERROR and not self.run.selection.matches(data.cls, data.alt, claim, device)):
            return False   # where a selector fails, ``matches`` raises the scheduler's error
        return not s.per_device or node_matches(self.node, device.node_name, device.all_nodes, device.node_selector)

    def one(self, c: int, r: int, s: int, d: int, in_sub: bool, start: tuple[int, int, int]) -> int:
        self.budget.tick()
        if c >= len(self.claims):
            return DONE
        claim = self.claims[c]
        if r >= len(claim.requests):
            if c + 1 == len(self.claims):
                return DONE
            if self._pruning() and self.hopeless_from(c + 1):
                if self.trace is not None:
                    self._say(f"claims from {self.claims[c + 1].display} on cannot be allocated even on their own; "
                              "no choice for the earlier claims helps")
                raise _Hopeless()
            res = self._enter(c + 1, 0)
            return FAIL if res == OVER else res
        req = claim.requests[r]
        if not in_sub and req.first_available:
            all_over = True
            for j in range(len(req.first_available)):
                res = self.one(c, r, j, 0, True, (0, 0, 0))
                if res == OVER:
                    continue
                all_over = False
                if res == DONE:
                    self.selected[(c, r)] = j
                    return DONE
            return OVER if all_over else FAIL
        data = self.data[(c, r, s)]
        alt = data.alt
        if alt.mode == "All" and not data.all_devices:
            if self.trace is not None:
                self._say(f"{claim.display} {alt.full_name}: allocationMode All, but no device matches")
            return FAIL
        if d >= data.num:
            return self._enter(c, r + 1)
        if len(self.results[c]) + data.num - d > MAX_DEVICES_PER_CLAIM:
            return OVER
        if d == 0 and not self.may_continue(c, r, s):
            if self.trace is not None:
                self._say(f"{claim.display} {alt.full_name}: the requests from here on cannot all get distinct "
                          "devices; step back")
            return FAIL
        if alt.mode == "All":
            cand = data.all_devices[d]
            undo = self.allocate(c, data, cand, must=True)
            if undo is None:
                return FAIL
            res = self.one(c, r, s, d + 1, in_sub, (0, 0, 0))
            if res != DONE:
                undo()
            return res
        if d > 0 and not self.may_continue(c, r, s, d, start):
            if self.trace is not None:
                self._say(f"{claim.display} {alt.full_name}: with the devices picked so far, the requests from here "
                          "on cannot all get distinct devices; step back")
            return FAIL
        p0, s0, d0 = start
        # The loop below runs for every device of every step: what it looks at is bound once.
        admin, allocating, dedicated = alt.admin, self.allocating, self.run.allocated.dedicated
        answers = self._answers(data)
        known = len(answers)
        for pi in range(p0, len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            for si in range(s0 if pi == p0 else 0, len(pool.slices)):
                sl = pool.slices[si]
                devices = sl.devices
                for di in range(d0 if pi == p0 and si == s0 else 0, len(devices)):
                    device = devices[di]
                    key = device.key
                    if admin:
                        if c in allocating.get(key, ()):
                            continue
                    elif key in dedicated or allocating.get(key):   # in use
                        if self.trace is not None:
                            self._say(f"{claim.display} {alt.full_name}: {device.label} is in use")
                        continue
                    uid = device.uid
                    if uid < known and answers[uid] == TRUE and not sl.per_device:
                        pass   # selectable: the common case, without a call
                    elif not self.selectable(claim, data, sl, device):
                        if self.trace is not None:
                            self._say(f"{claim.display} {alt.full_name}: {device.label} does not match the selectors")
                        continue
                    if self.f.consumable_capacity and "capacity" not in self.relax and not fits(
                            alt, device, self.run.allocated.consumed.get(device.key),
                            self.capacity.by_device.get(device.key)):
                        if self.trace is not None:
                            self._say(f"{claim.display} {alt.full_name}: {device.label} lacks capacity")
                        continue
                    undo = self.allocate(c, data, Candidate(device, sl, pool), must=False)
                    if undo is None:
                        continue
                    res = self.one(c, r, s, d + 1, in_sub, (pi, si, di + 1))
                    if res == DONE:
                        return DONE
                    undo()
                    if res == OVER:
                        return OVER
        return FAIL

    # ------------------------------------------------------------------ bound (see bound.py)

    def may_continue(self, c: int, r: int, s: int, d: int = 0, start: tuple[int, int, int] = (0, 0, 0)) -> bool:
        """False when the requests from (c, r, s) on cannot all get distinct free devices, each
        matchAttribute constraint taking its devices of one value.

        ``d`` devices of request (c, r, s) are picked already, the others to come from the devices
        at ``start`` or after it (the search picks in order): without this in the middle of a
        request, a request that takes devices a later one needs tries every combination of them
        first (8 of 24 NICs: 735,471) before stepping back.

        Only used where cutting a branch cannot hide anything the scheduler would report: no
        selector fails on a device of the node, no ``All`` request of a claim with constraints
        (whose constraint violation is an error) is left to be reached, and, in the middle of a
        request, the claim's picks cannot pass the claim limit (the search there stops trying,
        "over", which a cut branch would not tell).
        """
        if (d and self._over_possible[c]) or not self._pruning():
            return True
        assert self._slots is not None
        if d and self._slots.get((c, r, s)) is None:
            return True
        in_use = frozenset(k for k, claims in self.allocating.items() if claims)
        matched = tuple(t.state() for t in self.trackers[c]) if d or r else ()
        key = (c, r, s, d, start, in_use, matched)
        have = self._bound_memo.get(key)
        if have is None:
            if len(self._bound_memo) > 100_000:
                self._bound_memo.clear()
            have = self._bound_memo[key] = self._bound_holds(c, r, s, d, start, in_use)
        return have

    def _bound_holds(self, c: int, r: int, s: int, d: int, start: tuple[int, int, int],
                     in_use: frozenset[DeviceKey]) -> bool:
        remaining = self._remaining(c, r, s)
        if remaining is None:
            return True
        if d:
            if not remaining or remaining[0][0][2] != (c, r, s):
                return True   # the request is one of a barrier's alternatives: nothing is known past it
            assert self._slots is not None
            position = self._device_positions()
            later = frozenset(k for k in self._slots[(c, r, s)] if position[k] >= start)
            remaining[0] = [(later, self.data[(c, r, s)].num - d, (c, r, s))]
        return any(can_match_some([[(devices, need) for devices, need, _ in alts] for alts in variant], in_use)
                   for variant in self._matched_variants(c, remaining))

    def _matched_variants(self, c: int, remaining: list[list[tuple[frozenset[DeviceKey], int, tuple[int, int, int]]]]
                          ) -> list[list[list[tuple[frozenset[DeviceKey], int, tuple[int, int, int]]]]]:
        """``remaining`` with the requests each matchAttribute constraint covers restricted to one
        value: the value of the devices picked so far, or, before the first, each value in turn
        (one variant per value; at most ``MAX_VARIANTS``, past which a constraint is left out).
        A device whose attribute is no scalar may still be the only one picked: it stays in every
        variant, which only weakens the bound."""
        variants = [remaining]
        if self.f.list_attributes:
            return variants
        for ci in range(c, len(self.claims)):
            for tracker in self.trackers[ci]:
                if not isinstance(tracker, MatchAttribute):
                    continue
                values = self._attribute_values(tracker.attribute)
                if ci == c and tracker.count:
                    # Picked already: later devices must have its scalar value (none: no device can join).
                    fixed = scalar_value(tracker.first_attr or {})
                    keeps = [lambda dev, fixed=fixed: fixed is not None and values.get(dev) == fixed]
                else:
                    choices = sorted({v for v in values.values() if v is not None and v is not _NO_VALUE}, key=repr)
                    if not choices or len(variants) * len(choices) > MAX_VARIANTS:
                        continue
                    keeps = [lambda dev, v=v: values.get(dev) in (v, None) for v in choices]
                covered = {k for alts in remaining for _, _, k in alts if k[0] == ci and applies(
                    tracker.constraint.requests, *self.data[k].alt.names)}
                if not covered:
                    continue
                variants = [[[(frozenset(filter(keep, devices)), need, k) if k in covered else (devices, need, k)
                              for devices, need, k in alts] for alts in variant]
                            for variant in variants for keep in keeps]
        return variants

    def _attribute_values(self, attribute: str) -> dict[DeviceKey, Any]:
        """Per device of the node: the scalar value of ``attribute``, None when it has the attribute
        but no scalar value, ``_NO_VALUE`` when it lacks it (it can join no constraint on it)."""
        have = self._values.get(attribute)
        if have is None:
            have = self._values[attribute] = {}
            for pool in self.pools:
                for sl in pool.slices:
                    for dev in sl.devices:
                        attr = lookup_attribute(dev, attribute)
                        have[dev.key] = _NO_VALUE if attr is None else scalar_value(attr)
        return have

    def _device_positions(self) -> dict[DeviceKey, tuple[int, int, int]]:
        """Each device's place in the search order: (pool, slice, device) indexes."""
        if self._positions is None:
            self._positions = {dev.key: (pi, si, di) for pi, pool in enumerate(self.pools)
                               for si, sl in enumerate(pool.slices) for di, dev in enumerate(sl.devices)}
        return self._positions

    def hopeless_from(self, c: int) -> bool:
        """True when claims ``c``.. cannot be allocated on this node even with nothing else taken.

        Devices taken by earlier claims only take options away (one exception: a shareable device
        that consumes counters skips the counter check once its capacity is in use, so then this is
        not used), so the whole search then fails, whatever the earlier claims pick.
        """
        have = self._hopeless.get(c)
        if have is None:
            have = False
            if self._slots is None:
                self._slots = self._request_slots()
            relaxing = self.f.consumable_capacity and any(
                d.allow_multiple and d.consumes for p in self.pools for sl in p.slices for d in sl.devices)
            if self._bounded and not relaxing and not self._barriers:
                rest = Attempt(self.run, self.node, self.pools, self.claims[c:], self.budget, relax=self.relax,
                               ideal=True, eager=True)
                rest.validate()
                have = not rest._search_done()
            self._hopeless[c] = have
        return have

    def _may_leak(self, c: int, alt: Alternative, d: Device) -> bool:
        """Whether trying ``d`` for ``alt`` may take its counters and then refuse it (they stay taken)."""
        f = self.f
        if not d.consumes or not f.partitionable or "counters" in self.relax:
            return False
        base, sub = alt.names
        return ((f.taints and "taints" not in self.relax and blocking_taint(d, alt) is not None)
                or any(applies(con.requests, base, sub) for con in self.claims[c].constraints)
                or (f.consumable_capacity and (d.allow_multiple or alt.mode == "All")))

    def _enter(self, c: int, r: int) -> int:
        """Start request ``r`` of claim ``c`` (the claim's end when past its requests)."""
        key = self._boundary_key(c, r) if self._pruning() else None
        if key is not None:
            have = self._failed_from.get(key)
            if have is not None:
                if self.trace is not None:
                    self._say(f"{self.claims[c].display}: the search from request #{r} on failed before with the "
                              "same devices free")
                return have
            before = self.counters.snapshot()
        res = self.one(c, r, 0, 0, False, (0, 0, 0))
        if key is not None and res != DONE and self.counters.snapshot() == before:
            if len(self._failed_from) > 200_000:
                self._failed_from.clear()
            self._failed_from[key] = res
        return res

    def _boundary_key(self, c: int, r: int) -> tuple | None:
        """What the search from request ``r`` of claim ``c`` on depends on: the devices it could take
        that are in use (and by which claim), the counters and capacity taken so far, the constraints
        of claim ``c`` so far and its device count. None where that is not all (selectors may fail)."""
        if self._slots is None:
            self._slots = self._request_slots()
        if not self._bounded or any(t.count for trackers in self.trackers[c + 1:] for t in trackers):
            return None
        relevant = self._relevant.get((c, r))
        if relevant is None:
            relevant = self._relevant[(c, r)] = frozenset(
                k for (ci, ri, _), keys in self._selectable.items() if (ci, ri) >= (c, r) for k in keys)
        in_use = tuple(sorted((k, tuple(sorted(v))) for k, v in self.allocating.items() if v and k in relevant))
        capacity = tuple(sorted((k, tuple(sorted(v.items()))) for k, v in self.capacity.by_device.items()
                                if k in relevant))
        matched = tuple(t.state() for t in self.trackers[c]) if c < len(self.trackers) else ()
        count = len(self.results[c]) if c < len(self.results) else 0
        return (c, r, in_use, self.counters.snapshot(), capacity, matched, count)

    def _may_leak_now(self, devices: Iterable[Candidate]) -> bool:
        """Whether one of these devices could still take counters (once a pool's counters are used
        up by what leaked, nothing more leaks there and branches can be cut again)."""
        return any(not self.in_use(c.device.key) and self.counters.would_take(c.pool, c.device) for c in devices)

    def _remaining(self, c: int, r: int, s: int
                   ) -> list[list[tuple[frozenset[DeviceKey], int, tuple[int, int, int]]]] | None:
        """What the requests from (c, r, s) on need, per request its alternatives (devices, need,
        (claim, request, subrequest)); None when trying them may leave counters taken (the
        scheduler's leak), which a cut branch would not do."""
        assert self._slots is not None
        out = []
        for ci in range(c, len(self.claims)):
            for ri in range(r if ci == c else 0, len(self.claims[ci].requests)):
                if (ci, ri) in self._barriers:
                    return out
                subs = [s] if ci == c and ri == r else range(len(self.claims[ci].requests[ri].first_available) or 1)
                if not self.ideal and any(self._may_leak_now(self._leaky.get((ci, ri, si), ())) for si in subs):
                    return None
                sets = [self._slots.get((ci, ri, si)) for si in subs]
                if any(x is None for x in sets):
                    continue  # not bounded: admin access or shareable devices
                out.append([(x, self.data[(ci, ri, si)].num, (ci, ri, si)) for x, si in zip(sets, subs)])  # type: ignore[misc]
        return out

    def _request_slots(self) -> dict[tuple[int, int, int], frozenset[DeviceKey]]:
        """Per request alternative, the free devices of the node it could ever take."""
        f = self.f
        slots: dict[tuple[int, int, int], frozenset[DeviceKey]] = {}
        # A constraint broken inside an ``All`` request is an error, met where the search reaches
        # it: the bound looks only at the requests before it (if they cannot be matched, the search
        # never gets there), and the cuts that look further (``hopeless_from``, the ideal search)
        # are off.
        self._barriers = {(c, r) for (c, r, _), data in self.data.items()
                          if data.alt.mode == "All" and self.claims[c].constraints}
        devices = [(pool, sl, d) for pool in self.pools if pool.usable for sl in pool.slices for d in sl.devices]
        multi = {d.key for _, _, d in devices if d.allow_multiple} if f.consumable_capacity else set()
        probe = self.run.selection.probe
        for (c, r, s), data in self.data.items():
            alt = data.alt
            keys = []
            for pool, sl, d in devices:
                held = d.key in self.run.allocated.dedicated and not alt.admin
                if held and alt.mode != "All":
                    continue  # the search skips a device in use before evaluating anything on it
                ok = True
                for expr in data.cls.selectors + alt.selectors:
                    if expr is None:
                        continue
                    verdict = probe(expr, d)
                    if verdict is None:
                        return slots          # a selector fails here: the search must meet it where it does
                    if not verdict:
                        ok = False
                        break
                if not ok or (not f.binding_conditions and d.binding_conditions):
                    continue
                if sl.per_device and not node_matches(self.node, d.node_name, d.all_nodes, d.node_selector):
                    continue
                self._selectable.setdefault((c, r, s), set()).add(d.key)
                if not held and self._may_leak(c, alt, d):
                    self._leaky.setdefault((c, r, s), []).append(Candidate(d, sl, pool))
                if alt.mode == "All" or held or (d.consumes and not f.partitionable):
                    continue
                if f.taints and "taints" not in self.relax and blocking_taint(d, alt) is not None:
                    continue
                if f.consumable_capacity and "capacity" not in self.relax and not fits(
                        alt, d, self.run.allocated.consumed.get(d.key), None):
                    continue
                keys.append(d.key)
            if alt.mode == "All":
                keys = [cand.device.key for cand in data.all_devices]
            if not alt.admin and multi.isdisjoint(keys):
                slots[(c, r, s)] = frozenset(keys)
        self._bounded = self._prune
        return slots

    def allocate(self, c: int, data: RequestData, cand: Candidate, must: bool) -> Callable[[], None] | None:
        """``allocateDevice``: the remaining per-device checks, then record the pick; None if refused."""
        alt, device, f = data.alt, cand.device, self.f
        claim = self.claims[c]
        key = device.key
        multi = f.consumable_capacity and device.allow_multiple
        if not multi and alt.admin and c in self.allocating.get(key, ()):
            return None
        if not alt.admin and self.in_use(key):
            return None
        if not f.partitionable and device.consumes:
            if self.trace is not None:
                self._say(f"{claim.display} {alt.full_name}: {device.label} consumes counters "
                          "(DRAPartitionableDevices off)")
            return None
        skip_counters = "counters" in self.relax or (
            multi and (key in self.run.allocated.consumed or key in self.capacity.by_device))
        took = not skip_counters and bool(device.consumes)
        if took and not self.counters.take(cand.pool, device):
            if self.trace is not None:
                self._say(f"{claim.display} {alt.full_name}: {device.label}: not enough shared counters left")
            return None
        # From here on a refusal keeps the counters just taken, as the scheduler does (not so in the
        # ideal search of ``hopeless_from``).
        base, sub = alt.names
        if f.taints and "taints" not in self.relax:
            taint = blocking_taint(device, alt)
            if taint is not None:
                if self.trace is not None:
                    self._say(f"{claim.display} {alt.full_name}: {device.label} has taint {taint.key}={taint.value}:"
                              f"{taint.effect}, not tolerated")
                if self.ideal and took:
                    self.counters.give_back(cand.pool, device)
                return None
        added: list[MatchAttribute | DistinctAttribute] = []
        for tracker in self.trackers[c]:
            if not tracker.add(base, sub, device):
                for t in reversed(added):
                    t.remove(base, sub, device)
                if self.ideal and took:
                    self.counters.give_back(cand.pool, device)
                if must:
                    raise FatalError("all-constraint", f"claim {claim.display}, request {alt.full_name}: cannot add "
                                     f"device {device.label} because a claim constraint would not be satisfied "
                                     "(allocationMode All takes every matching device)", claim.obj,
                                     tracker.constraint.path)
                if self.trace is not None:
                    self._say(f"{claim.display} {alt.full_name}: {device.label} breaks constraint "
                              f"#{tracker.constraint.index}")
                return None
            added.append(tracker)
        if not multi:
            self.allocating[key].add(c)
        consumed = None
        if f.consumable_capacity:
            if "capacity" not in self.relax and not fits(alt, device, self.run.allocated.consumed.get(key),
                                                          self.capacity.by_device.get(key)):
                # Only reachable for allocationMode All (the search checks capacity before): the
                # scheduler then keeps the device counted in the constraints and marked in use.
                if self.ideal:
                    for t in reversed(added):
                        t.remove(base, sub, device)
                    if not multi:
                        self.allocating[key].discard(c)
                    if took:
                        self.counters.give_back(cand.pool, device)
                return None
            if multi:
                consumed = consumed_by(alt, device)
                self.capacity.insert(key, consumed)
        self.results[c].append(Pick(alt.full_name, alt, cand, multi, consumed))
        if self.trace is not None:
            self._say(f"{claim.display} {alt.full_name}: picked {device.label}")

        def undo() -> None:
            for t in self.trackers[c]:
                t.remove(base, sub, device)
            self.allocating[key].discard(c)
            if multi and consumed:
                self.capacity.remove(key, consumed)
            if took and (not multi or self.ideal):
                self.counters.give_back(cand.pool, device)
            self.results[c].pop()
            if self.trace is not None:
                self._say(f"{claim.display} {alt.full_name}: backtrack, release {device.label}")

        return undo

    def _say(self, line: str) -> None:
        if self.trace is not None:
            self.trace(f"{self.node.name}: {line}")
