"""The search's cuts: branches the rest of a node's search cannot succeed from (see bound.py).

A mixin of ``search.Attempt``: the bound on what the requests still to be filled can get, the
memo of hopeless claims, and the slots each request may take, kept apart from the search steps
they cut. Every cut only removes branches that end in "cannot allocate", so the verdict and the
first solution stay the scheduler's.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from .bound import can_match_some
from .capacity import Allocating, fits
from .constraints import DistinctAttribute, MatchAttribute, applies, lookup_attribute, scalar_value
from .counters import CounterBook
from .model import Alternative, ClaimSpec, Device, DeviceKey
from .nodes import NodeView, node_matches
from .picks import DONE, Budget, Candidate, Picked, RequestData, RunContext
from .pools import Features, Pool
from .taints import blocking_taint

MAX_VARIANTS = 16   # values of not yet matched attributes the bound tries one by one
_NO_VALUE = object()   # a device without the attribute: it joins no matchAttribute constraint on it


class Pruning:
    """The bound and its memos, asked by ``Attempt`` as it steps (its attributes are the attempt's)."""

    # What the cuts read of the attempt they are mixed into, declared here (set in
    # ``Attempt.__init__``) so that both are checked against one description; annotations only, so
    # every lookup in the search stays a plain instance attribute or method.
    run: RunContext
    f: Features
    node: NodeView
    pools: list[Pool]
    claims: list[ClaimSpec]
    budget: Budget
    trace: Callable[[str], None] | None
    data: dict[tuple[int, int, int], RequestData]
    _picked: list[list[Picked]]
    allocating: dict[DeviceKey, set[int]]
    counters: CounterBook
    capacity: Allocating
    trackers: list[list[MatchAttribute | DistinctAttribute]]
    relax: frozenset[str]
    ideal: bool
    _prune: bool
    _pruning: Callable[[], bool]
    _say: Callable[[str], None]
    in_use: Callable[[DeviceKey], bool]
    one: Callable[[int, int, int, int, bool, int], int]
    _ideal_search_done: Callable[[list[ClaimSpec]], bool]

    # The cuts' own memos (also set in ``Attempt.__init__``, which says what each holds).
    _slots: dict[tuple[int, int, int], frozenset[DeviceKey]] | None
    _selectable: dict[tuple[int, int, int], set[DeviceKey]]
    _leaky: dict[tuple[int, int, int], list[Candidate]]
    _bounded: bool
    _barriers: set[tuple[int, int]]
    _bound_memo: dict[tuple, bool]
    _hopeless: dict[int, bool]
    _failed_from: dict[tuple, int]
    _relevant: dict[tuple[int, int], frozenset[DeviceKey]]
    _over_possible: list[bool]
    _positions: dict[DeviceKey, tuple[int, int, int]] | None
    _values: dict[str, dict[DeviceKey, Any]]

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
                    fixed = tracker.first
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

    def _after(self, device: Device) -> tuple[int, int, int]:
        """The place right after a device of a usable pool in the search order (where the search goes
        on once it is picked); worked out only for the cuts, which few searches reach. A usable
        pool's device names are unique (pools.py), so its key names its place."""
        pi, si, di = self._device_positions()[device.key]
        return pi, si, di + 1

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
                have = not self._ideal_search_done(self.claims[c:])
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
        res = self.one(c, r, 0, 0, False, 0)
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
        count = len(self._picked[c]) if c < len(self._picked) else 0
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
        out: list[list[tuple[frozenset[DeviceKey], int, tuple[int, int, int]]]] = []
        for ci in range(c, len(self.claims)):
            for ri in range(r if ci == c else 0, len(self.claims[ci].requests)):
                if (ci, ri) in self._barriers:
                    return out
                subs = [s] if ci == c and ri == r else range(len(self.claims[ci].requests[ri].first_available) or 1)
                if not self.ideal and any(self._may_leak_now(self._leaky.get((ci, ri, si), ())) for si in subs):
                    return None
                alts = []
                for si in subs:
                    x = self._slots.get((ci, ri, si))
                    if x is None:
                        break  # not bounded: admin access or shareable devices
                    alts.append((x, self.data[(ci, ri, si)].num, (ci, ri, si)))
                else:
                    out.append(alts)
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
