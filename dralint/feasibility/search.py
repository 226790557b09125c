"""The structured allocator for one node: validation, then depth-first search (§3, §4).

This follows kube-scheduler's experimental allocator step by step, so that it reaches the same
verdict and, where several solutions exist, the same first solution: claims in order, requests
in order, device slots as combinations in (pool, slice, device) order, ``firstAvailable``
alternatives tried in order with full backtracking, and the 32-device limit pruning
alternatives.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterator, NoReturn

from .capacity import Allocating, Consumed, consumed_by, fits
from .columns import ERROR, FALSE, TRUE
from .constraints import MISSING, DistinctAttribute, MatchAttribute, applies, trackers
from .counters import CounterBook
from .fatal import FatalError
from .model import Alternative, ClaimSpec, Device, DeviceKey, Slice
from .nodes import NodeView, node_matches
from .picks import (DONE, FAIL, OVER, Budget, Candidate, NodeFailure, Pick, Picked, RequestData, RunContext,
                    invalid_pools_failure)
from .pools import Pool
from .pruning import Pruning
from .taints import blocking_taint

MAX_DEVICES_PER_CLAIM = 32  # AllocationResultsMaxSize
# Searches that end within this many steps never pay for the cuts and memos below (most do).
PRUNE_AFTER = 200


class _Hopeless(Exception):
    """The rest of the search cannot succeed whatever is picked before it (see ``hopeless_from``)."""


Tracer = Callable[[str], None]
# What ``allocate`` did that ``release`` undoes: shared (multiple allocations), the capacity
# consumed, whether counters were taken.
Kept = tuple[bool, "Consumed | None", bool]


class Attempt(Pruning):
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
        # Per claim, the devices picked so far; their ``Pick`` records are made once the search
        # has found them all (``results``), not at every try.
        self._picked: list[list[Picked]] = [[] for _ in claims]
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
        # The same, as the per-device checks ask it at every device tried.
        self._taints_on = self.f.taints and "taints" not in relax
        self._capacity_on = self.f.consumable_capacity and "capacity" not in relax
        self._counters_relaxed = "counters" in relax
        # Whether ``allocate`` must ask if a device is shared before it takes it whole (``shared``).
        self._exclusive = run.shares_block_exclusive and bool(run.allocated.shared or run.allocated.consumed)
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
        self._uids: list[int] | None = None      # the node's devices, for the selectors' answers
        self._exact: list[bool] = []             # per claim validated: its requests all ExactCount

    # ------------------------------------------------------------------ validation (§3)

    def validate(self, checked: Attempt | None = None) -> None:
        """Check every claim before searching; raises FatalError or NodeFailure. ``checked``: the
        same claims validated already on no node (``Judge.decide``), from which a claim that only
        counts its devices is taken over: nothing of its checks depends on the node. A claim with
        an ``allocationMode: All`` request, whose devices and limit are the node's, is checked here."""
        for c, claim in enumerate(self.claims):
            if checked is not None and checked._exact[c]:
                self._take_over(c, claim, checked)
            else:
                self._validate_claim(c, claim)

    def _validate_claim(self, c: int, claim: ClaimSpec) -> None:
        if claim.malformed:
            path, why = claim.malformed[0]
            raise FatalError("malformed", f"claim {claim.display}: {why}", claim.obj, path)
        minimum = most = 0
        exact = True
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
                    exact = exact and sub.mode == "ExactCount"
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
                exact = exact and req.exactly.mode == "ExactCount"
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
        self._exact.append(exact)

    def _take_over(self, c: int, claim: ClaimSpec, checked: Attempt) -> None:
        """What ``_validate_claim`` finds for claim ``c``, whose requests all count their devices,
        read off ``checked``, which validated it already (each request's data made anew: the
        search keeps per-attempt answers in it)."""
        data, theirs = self.data, checked.data
        for r, req in enumerate(claim.requests):
            for s in range(len(req.alternatives)):
                data[(c, r, s)] = theirs[(c, r, s)].renewed()
        self._over_possible.append(checked._over_possible[c])
        self.trackers.append(trackers(claim.constraints, self.f.list_attributes))
        self._exact.append(True)

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
        answers = self._answers(data) if self.pools else ()
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                self._unusable_pool(claim, alt, pool)
            for s in pool.slices:
                for device in s.devices:
                    # ``selectable`` asked only where the answer alone does not say (as ``_candidates``).
                    answer = answers[device.uid] if device.uid < data.known else ERROR
                    if answer == FALSE or ((answer == ERROR or s.per_device)
                                           and not self.selectable(claim, data, s, device)):
                        continue
                    if self.f.consumable_capacity and not fits(alt, device, None, None):
                        continue
                    data.all_devices.append(Candidate(device, s, pool))
        data.num = len(data.all_devices)
        return data

    def _unusable_pool(self, claim: ClaimSpec, alt: Alternative, pool: Pool) -> NoReturn:
        """An ``All`` request sees a pool it cannot count: a failure of this node from 1.38
        (kubernetes#141898), before it an error that stops the pod's scheduling attempt."""
        why = "is incomplete (not all of its ResourceSlices are published)" if pool.incomplete else \
            f"is invalid: {pool.invalid}"
        if self.run.all_pool_fails_node:
            raise NodeFailure(f"request `{alt.full_name}` asks for all devices, but resource pool {pool.label} {why}")
        raise FatalError("all-pool", f"claim {claim.display}, request {alt.full_name}: asks for all devices, but "
                         f"resource pool {pool.label} {why} (before Kubernetes 1.38 an error for the pod, not "
                         "only for this node)", claim.obj, alt.path.child("allocationMode"))

    # ------------------------------------------------------------------ search (§4)

    def run_search(self, checked: Attempt | None = None) -> bool:
        """True when every claim got its devices; raises FatalError, NodeFailure or BudgetExceeded.
        ``checked``: as for ``validate``."""
        self.validate(checked)
        if self._search_done():
            self.results = [[Pick(data.full_name, data.alt, Candidate(device, sl, pool), multi, consumed)
                             for data, device, sl, pool, multi, consumed in picked] for picked in self._picked]
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
        return self._ideal_search_done(self.claims)

    def _ideal_search_done(self, claims: list[ClaimSpec]) -> bool:
        """Whether the search without leaks, cutting from its first step, allocates ``claims`` here."""
        ideal = Attempt(self.run, self.node, self.pools, claims, self.budget, relax=self.relax, ideal=True,
                        eager=True)
        ideal.validate()
        return ideal._search_done()

    def _search_done(self) -> bool:
        try:
            return self.one(0, 0, 0, 0, False, 0) == DONE
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

    def shared(self, key: DeviceKey) -> bool:
        """``deviceCapacityInUse``: a claim holds a share of the device, or this attempt took one."""
        allocated = self.run.allocated
        return key in allocated.shared or key in allocated.consumed or key in self.capacity.by_device

    def _answers(self, data: RequestData) -> memoryview | dict[int, int]:
        """The request's selector answers per device uid of this node (and past ``data.known``,
        ERROR), looked up once per attempt."""
        if data.answers is None:
            data.answers, data.known = self.run.selection.answers_among(data.cls, data.alt, self._node_uids())
        return data.answers

    def _node_uids(self) -> Iterator[int]:
        """The node's device uids, listed once per attempt when first read: most requests' answers
        are cached over the fleet, which never reads them."""
        if self._uids is None:
            self._uids = [d.uid for pool in self.pools for sl in pool.slices for d in sl.devices]
        yield from self._uids

    def selectable(self, claim: ClaimSpec, data: RequestData, s: Slice, device: Device) -> bool:
        answers = self._answers(data)
        answer = answers[device.uid] if device.uid < data.known else ERROR
        if answer == FALSE or (answer == ERROR and not self.run.selection.matches(data.cls, data.alt, claim, device)):
            return False   # where a selector fails, ``matches`` raises the scheduler's error
        return not s.per_device or node_matches(self.node, device.node_name, device.all_nodes, device.node_selector)

    def one(self, c: int, r: int, s: int, d: int, in_sub: bool, start: int) -> int:
        """One step: the ``d``-th device of request alternative (c, r, s), tried from its ``start``-th
        candidate on (``_candidates``), then the rest of the search from there."""
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
                res = self.one(c, r, j, 0, True, 0)
                if res == OVER:
                    continue
                all_over = False
                if res == DONE:
                    self.selected[(c, r)] = j
                    return DONE
            return OVER if all_over else FAIL
        data = self.data[(c, r, s)]
        if data.alt.mode == "All" and not data.all_devices:
            if self.trace is not None:
                self._say(f"{claim.display} {data.alt.full_name}: allocationMode All, but no device matches")
            return FAIL
        return self._fill(c, r, s, d, in_sub, start, data)

    def _fill(self, c: int, r: int, s: int, d: int, in_sub: bool, start: int, data: RequestData) -> int:
        """The rest of step ``one`` once it is known to pick the ``d``-th device of request
        alternative (c, r, s), whose ``data`` is given. Its own next device is this again: such a
        step is counted (``Budget.tick``) by its caller, which has made ``one``'s checks before it."""
        claim = self.claims[c]
        alt = data.alt
        if d >= data.num:
            return self._enter(c, r + 1)
        if len(self._picked[c]) + data.num - d > MAX_DEVICES_PER_CLAIM:
            return OVER
        # The cuts wait until the search has run ``PRUNE_AFTER`` steps (``_pruning``): before that
        # the bound is not asked at all, which most steps of most searches are spared.
        budget = self.budget
        cut = budget.steps - self._begin >= PRUNE_AFTER
        if d == 0 and cut and not self.may_continue(c, r, s):
            if self.trace is not None:
                self._say(f"{claim.display} {alt.full_name}: the requests from here on cannot all get distinct "
                          "devices; step back")
            return FAIL
        if alt.mode == "All":
            cand = data.all_devices[d]
            kept = self.allocate(c, data, cand.device, cand.slice, cand.pool, must=True)
            if kept is None:
                return FAIL
            budget.tick()
            res = self._fill(c, r, s, d + 1, in_sub, 0, data)
            if res != DONE:
                self.release(c, data, cand.device, cand.pool, kept)
            return res
        candidates = data.candidates if data.candidates is not None else self._candidates(c, data)
        if d > 0 and cut and not self.may_continue(c, r, s, d, self._after(candidates[start - 1][0])):
            if self.trace is not None:
                self._say(f"{claim.display} {alt.full_name}: with the devices picked so far, the requests from here "
                          "on cannot all get distinct devices; step back")
            return FAIL
        # The loop below runs for every device of every step: what it looks at is bound once.
        # ``or ()``: looking for a key in an empty tuple does not hash it, in an empty set it does.
        admin, allocating, trace = data.admin, self.allocating, self.trace
        dedicated = self.run.allocated.dedicated or ()
        capacity, consumed, by_device = self._capacity_on, self.run.allocated.consumed, self.capacity.by_device
        gates = data.gates
        # Where ``allocate`` and ``release`` would only mark the device taken and note the pick (no
        # constraint, admin access, shared device or trace; the device is ``plain``: see
        # ``_candidates``), the loop does so itself.
        quick = not admin and trace is None and not self.trackers[c] and not self._exclusive and not by_device
        picked = self._picked[c]
        # The one constraint's state, which stays as it is while this loop runs (deeper steps undo
        # what they add before they return here).
        gate = gates[0] if len(gates) == 1 else None
        if gate is not None:
            scalars, counted, first = gate.scalars, gate.count > 0, gate.first
        for i in range(start, len(candidates)):
            device, sl, pool, check, sized, plain = candidates[i]
            key = device.key
            if admin:
                if c in allocating.get(key, ()):
                    continue
            elif key in dedicated or allocating.get(key):   # in use
                if trace is not None:
                    self._say(f"{claim.display} {alt.full_name}: {device.label} is in use")
                continue
            if check and not self.selectable(claim, data, sl, device):
                if trace is not None:
                    self._say(f"{claim.display} {alt.full_name}: {device.label} does not match the selectors")
                continue
            if capacity and (sized or key in by_device) and not fits(alt, device, consumed.get(key),
                                                                     by_device.get(key)):
                if trace is not None:
                    self._say(f"{claim.display} {alt.full_name}: {device.label} lacks capacity")
                continue
            if quick and plain:
                allocating[key].add(c)
                picked.append((data, device, sl, pool, False, None))
                budget.tick()
                res = self._fill(c, r, s, d + 1, in_sub, i + 1, data)
                if res == DONE:
                    return DONE
                allocating[key].discard(c)
                picked.pop()
                if res == OVER:
                    return OVER
                continue
            # A constraint that refuses a device which takes no counters leaves nothing behind:
            # ``allocate`` would say no at no cost but its own. One constraint (the common case) is
            # asked without a call once it knows the device's value (``MatchAttribute.refuses``).
            if gates and not device.consumes:
                if gate is None or (mine := scalars.get(device.uid, gate)) is gate:
                    if any(g.refuses(device) for g in gates):
                        continue
                elif mine is MISSING or (counted and (mine is None or mine != first)):
                    continue
            kept = self.allocate(c, data, device, sl, pool, must=False)
            if kept is None:
                continue
            budget.tick()
            res = self._fill(c, r, s, d + 1, in_sub, i + 1, data)
            if res == DONE:
                return DONE
            self.release(c, data, device, pool, kept)
            if res == OVER:
                return OVER
        return FAIL

    def _candidates(self, c: int, data: RequestData
                    ) -> list[tuple[Device, Slice, Pool, bool, bool, bool]]:
        """The devices of usable pools that ``data`` may take, in search order, each with whether its
        selectors must still be asked (not known to match, or a per-device node), whether its
        capacity must be checked even while this attempt shares none of it, and whether it is plain
        (``allocate`` asks nothing of it: no counters, no taint that counts, no multiple
        allocations). Devices that can never be taken here (the selectors say no, another claim
        holds it) are left out, with nothing else to report: only a trace, which reports each one,
        walks them all. Also the claim's
        constraints the loop asks about each device before ``allocate`` (scalar matchAttribute
        covering the request; none under a trace, which reports each refusal where ``allocate``
        meets it)."""
        answers = self._answers(data)
        known = data.known
        everything = self.trace is not None
        held = () if data.admin or everything else self.run.allocated.dedicated or ()
        alt = data.alt
        capacity, consumed = self._capacity_on, self.run.allocated.consumed
        requested = bool(alt.capacity) or alt.has_capacity
        taints, multi = self._taints_on, self.f.consumable_capacity
        out = []
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for sl in pool.slices:
                for device in sl.devices:
                    uid = device.uid
                    answer = answers[uid] if uid < known else ERROR
                    if (answer == FALSE and not everything) or device.key in held:
                        continue
                    out.append((device, sl, pool, answer != TRUE or sl.per_device,
                                capacity and (requested or device.has_policy or device.key in consumed),
                                not device.consumes and not (taints and device.taints)
                                and not (multi and device.allow_multiple)))
        data.candidates = out
        if self.trackers[c] and not everything:
            data.gates = tuple(t for t in self.trackers[c] if isinstance(t, MatchAttribute) and not t.lists
                               and applies(t.constraint.requests, data.base, data.sub))
        return out

    def allocate(self, c: int, data: RequestData, device: Device, sl: Slice, pool: Pool,
                 must: bool) -> Kept | None:
        """``allocateDevice``: the remaining per-device checks, then record the pick; None if refused,
        else what ``release`` needs to undo it."""
        alt, f, admin = data.alt, self.f, data.admin
        key, allocated = device.key, self.run.allocated
        multi = f.consumable_capacity and device.allow_multiple
        # The search's loop has made these checks before offering a device (only ``All`` does not).
        if must:
            if admin:
                if not multi and c in self.allocating.get(key, ()):
                    return None
            elif key in allocated.dedicated or self.allocating.get(key):   # in use
                return None
        # Nothing shared (the common case): no key looked up three times over.
        if not multi and not admin and self.run.shares_block_exclusive and (
                allocated.shared or allocated.consumed or self.capacity.by_device) and self.shared(key):
            if self.trace is not None:
                self._say(f"{self.claims[c].display} {alt.full_name}: {device.label} is shared by another claim and "
                          "no longer allows multiple allocations")
            return None
        took = False
        if device.consumes:
            if not f.partitionable:
                if self.trace is not None:
                    self._say(f"{self.claims[c].display} {alt.full_name}: {device.label} consumes counters "
                              "(DRAPartitionableDevices off)")
                return None
            took = not self._counters_relaxed and not (
                multi and (key in allocated.consumed or key in self.capacity.by_device))
            if took and not self.counters.take(pool, device):
                if self.trace is not None:
                    self._say(f"{self.claims[c].display} {alt.full_name}: {device.label}: not enough shared counters "
                              "left")
                return None
        # From here on a refusal keeps the counters just taken, as the scheduler does (not so in the
        # ideal search of ``hopeless_from``).
        base, sub = data.base, data.sub
        if self._taints_on and device.taints:
            taint = blocking_taint(device, alt)
            if taint is not None:
                if self.trace is not None:
                    self._say(f"{self.claims[c].display} {alt.full_name}: {device.label} has taint "
                              f"{taint.key}={taint.value}:{taint.effect}, not tolerated")
                if self.ideal and took:
                    self.counters.give_back(pool, device)
                return None
        trackers = self.trackers[c]
        added: list[MatchAttribute | DistinctAttribute] = []
        for tracker in trackers:
            if not tracker.add(base, sub, device):
                claim = self.claims[c]
                for t in reversed(added):
                    t.remove(base, sub, device)
                if self.ideal and took:
                    self.counters.give_back(pool, device)
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
            if must and self._capacity_on and not fits(alt, device, allocated.consumed.get(key),
                                                        self.capacity.by_device.get(key)):
                # Only for allocationMode All (the search checks capacity before it offers a
                # device): the scheduler then keeps the device counted in the constraints and
                # marked in use.
                if self.ideal:
                    for t in reversed(added):
                        t.remove(base, sub, device)
                    if not multi:
                        self.allocating[key].discard(c)
                    if took:
                        self.counters.give_back(pool, device)
                return None
            if multi:
                consumed = consumed_by(alt, device)
                self.capacity.insert(key, consumed)
        self._picked[c].append((data, device, sl, pool, multi, consumed))
        if self.trace is not None:
            self._say(f"{self.claims[c].display} {alt.full_name}: picked {device.label}")
        return multi, consumed, took

    def release(self, c: int, data: RequestData, device: Device, pool: Pool, kept: Kept) -> None:
        """Undo what ``allocate`` did for ``device`` (the last pick of claim ``c``)."""
        multi, consumed, took = kept
        base, sub, key = data.base, data.sub, device.key
        for t in self.trackers[c]:
            t.remove(base, sub, device)
        self.allocating[key].discard(c)
        if multi and consumed:
            self.capacity.remove(key, consumed)
        if took and (not multi or self.ideal):
            self.counters.give_back(pool, device)
        self._picked[c].pop()
        if self.trace is not None:
            self._say(f"{self.claims[c].display} {data.full_name}: backtrack, release {device.label}")

    def _say(self, line: str) -> None:
        if self.trace is not None:
            self.trace(f"{self.node.name}: {line}")
