"""Why a claim cannot be allocated, in the narrowest terms we can prove.

The search only says "no". To explain, each request is looked at on its own, stage by stage —
devices the class matches, then those the request's selectors leave, then those not held by
other claims, then those no taint, counter or capacity rules out — and the first stage at which
no node has enough is the reason (counted over the whole fleet at once, see counts.py). When
every request fits on its own, the search is run again with one check left out at a time —
taints, shared counters, capacity, then each constraint — and the first that makes the claim fit
is named as the cause, with the amounts involved.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..quantity import format_value
from .capacity import consumption, fits
from .columns import TRUE
from .counters import CounterBook
from .fatal import FatalError
from .model import Alternative, ClaimSpec, Request
from .search import Attempt, Budget, BudgetExceeded, NodeFailure, Pick
from .taints import blocking_taint

if TYPE_CHECKING:
    from .judge import Judge, NodeSet

_MAX_NAMED = 3       # devices named in a message
_MAX_NODES = 20      # nodes listed in details


@dataclass
class Stages:
    """Per node counts after each filter, for one request alternative."""

    alt: Alternative
    need: int | None                                   # None: allocationMode All
    counts: list[tuple[str, Counter]] = field(default_factory=list)
    survivors: list[str] = field(default_factory=list)  # the first devices the selectors leave
    blocked: Counter = field(default_factory=Counter)   # why free matching devices are unusable
    per_selector: Counter = field(default_factory=Counter)  # selector index -> devices passing it and all before
    counters_note: str = ""                             # amounts, when shared counters block devices

    def fits_somewhere(self) -> bool:
        usable = self.counts[-1][1]
        if self.need is None:  # allocationMode All: every matching device of a node, at least one
            selected = self.counts[1][1]
            return any(n and usable.get(node, 0) == n for node, n in selected.items())
        return any(n >= self.need for n in usable.values())


@dataclass(frozen=True)
class Explanation:
    message: str
    details: dict[str, Any]
    path_suffix: tuple = ()        # where in the claim the reason points (a request, a constraint)


_STAGE_NAMES = ("class", "selectors", "free", "usable")


def _per_node(slot: np.ndarray, mask: np.ndarray, names: dict[int, str]) -> Counter:
    hits = np.bincount(slot[mask]) if mask.any() else np.zeros(0, np.int64)
    return Counter({names[i]: int(n) for i, n in enumerate(hits) if n and i in names})


def _stages(judge: "Judge", alt: Alternative, nodes: "NodeSet") -> Stages:
    world, counts = judge.world, judge.counts
    st = Stages(alt, alt.count if alt.mode == "ExactCount" else None)
    if world.classes.get(alt.class_name) is None or any(e is None for e in alt.selectors):
        st.counts = [(n, Counter()) for n in _STAGE_NAMES]
        return st
    slot, uid, here = counts.flat()
    wanted = np.zeros(world.slot_count, bool)
    wanted[nodes.slots] = True
    inside = wanted[slot] & here
    names = {int(s): n.name for s, n in zip(nodes.slots, nodes.nodes)}
    cls_ok = (counts.selected(alt, ())[uid] == TRUE) & inside
    passed = cls_ok
    for i in range(len(alt.selectors)):
        passed = (counts.selected(alt, alt.selectors[:i + 1])[uid] == TRUE) & inside
        st.per_selector[i] = int(np.count_nonzero(passed))
    free = passed if alt.admin else passed & ~world.held[uid]
    node_of = {int(s): n for s, n in zip(nodes.slots, nodes.nodes)}
    for i in np.nonzero(passed)[0][:_MAX_NAMED + 1]:
        node = node_of[int(slot[i])]
        d = world.selection.columns.devices[int(uid[i])]
        assert d is not None
        st.survivors.append(f"{node.name}/{d.name}" if not node.placeholder else d.label)
    usable = free.copy()
    fc = counts.get(alt)
    consumes = counts.consumers()
    suspects = free & ((~fc.dev_usable[uid]) | consumes[uid]) if fc is not None else free
    seen: set[int] = set()
    pools: dict[int, Any] = {}
    for i in np.nonzero(suspects)[0]:
        d = world.selection.columns.devices[int(uid[i])]
        assert d is not None
        why = _blocked_reason(judge, alt, d, node_of[int(slot[i])], st, pools)
        if why:
            usable[i] = False
            if d.uid not in seen:
                st.blocked[why] += 1
                seen.add(d.uid)
    st.counts = [("class", _per_node(slot, cls_ok, names)), ("selectors", _per_node(slot, passed, names)),
                 ("free", _per_node(slot, free, names)), ("usable", _per_node(slot, usable, names))]
    return st


def _blocked_reason(judge: "Judge", alt: Alternative, d, node, st: Stages, pools: dict[int, Any]) -> str:
    """Why a free matching device cannot be given to the request ("" when it can)."""
    world = judge.world
    f = world.features
    if d.consumes and not f.partitionable:
        return "consume shared counters (DRAPartitionableDevices is off)"
    if f.taints and (taint := blocking_taint(d, alt)) is not None:
        return f"have taint `{taint.key}={taint.value}:{taint.effect}` that the request does not tolerate"
    if f.consumable_capacity and not fits(alt, d, world.allocated.consumed.get(d.key), None):
        return "lack the requested capacity"
    if d.consumes and f.partitionable:
        if d.uid not in pools:
            pools.update({c.device.uid: c.pool for c, _ in world.state(node).entries})
        pool = pools.get(d.uid)
        if pool is not None and not CounterBook(world.allocated, world.run.counter_cache).take(pool, d):
            if not st.counters_note:
                st.counters_note = _counter_shortfall(world, pool, [d])
            return "need more shared counters than their pool has left"
    return ""


def _counter_shortfall(world, pool, devices) -> str:
    """Which counters of ``pool`` the devices together need more of than is left, with amounts."""
    available = CounterBook(world.allocated, world.run.counter_cache).available(pool)
    need: dict[tuple[str, str], Any] = {}
    for d in devices:
        for set_name, counters in d.consumes:
            for name, value in counters.items():
                need[(set_name, name)] = need.get((set_name, name), 0) + value
    parts = []
    for (set_name, name), value in sorted(need.items()):
        left = available.get(set_name, {}).get(name)
        declared = pool.counter_sets.get(set_name, {}).get(name)
        if left is None or value <= left:
            continue
        held = f", {format_value(declared - left)} used by allocated devices" if declared is not None and \
            declared != left else ""
        parts.append(f"counter `{name}` of set `{set_name}` in pool {pool.label}: {format_value(value)} needed, "
                     f"{format_value(max(left, 0))} left (of {format_value(declared) if declared is not None else '?'}"
                     f"{held})")
    return "; ".join(parts)


def _spread(counter: Counter) -> str:
    total = sum(counter.values())
    nodes = sum(1 for v in counter.values() if v)
    return f"{total} device{'s' if total != 1 else ''} on {nodes} node{'s' if nodes != 1 else ''}"


def _describe(alt: Alternative) -> str:
    what = f"{alt.count} device{'s' if alt.count != 1 else ''}" if alt.mode == "ExactCount" else "all devices"
    sel = f" with `{' && '.join(e for e in alt.selectors if e)}`" if len(alt.selectors) == 1 else ""
    admin = " (admin access)" if alt.admin else ""
    return f"request `{alt.full_name}` needs {what} of class `{alt.class_name}`{sel}{admin}"


def _blocked(st: Stages) -> str:
    singular = {"have": "has", "lack": "lacks", "need": "needs", "consume": "consumes"}
    parts = []
    for why, n in st.blocked.most_common():
        verb, _, rest = why.partition(" ")
        text = f"{n} {singular.get(verb, verb) if n == 1 else verb} {rest}"
        if why.startswith("need more shared counters") and st.counters_note:
            text += f" ({st.counters_note})"
        parts.append(text)
    return "; ".join(parts)


def _stage_reason(st: Stages, pool_note: str) -> str:
    """The first filter after which no node has enough devices."""
    need = st.need or 1
    (_, cls), (_, sel), (_, free), (_, usable) = st.counts
    head = _describe(st.alt)
    if not any(cls.values()):
        return f"{head}: the class matches no device in a usable pool{pool_note}"
    named = ", ".join(st.survivors[:_MAX_NAMED]) + ("…" if len(st.survivors) > _MAX_NAMED else "")
    if st.need is None and any(sel.values()):
        held = sum(sel.values()) - sum(free.values())
        blocked = _blocked(st)
        held_text = f"{held} {'is' if held == 1 else 'are'} held by other claims"
        parts = ([held_text] if held else []) + ([blocked] if blocked else [])
        return (f"{head}: allocationMode All takes every device the selectors match ({_spread(sel)}), and on "
                f"every node some cannot be taken: {'; '.join(parts) or 'they are in use'}")
    if max(sel.values(), default=0) < need and not any(st.alt.selectors):
        return f"{head}: the class matches {_spread(cls)}; no node has {need}"
    if max(sel.values(), default=0) < need:
        left = f"the selector leaves {_spread(sel)}" if any(sel.values()) else "the selector leaves none"
        if any(sel.values()) and sum(sel.values()) <= _MAX_NAMED and named:
            left = f"the selector leaves {sum(sel.values())} ({named})"
        if len(st.alt.selectors) > 1:
            steps = [f"`{expr}` leaves {st.per_selector[i] or 'none'}" for i, expr in enumerate(st.alt.selectors)
                     if i == 0 or st.per_selector[i - 1]]
            left = ", ".join(steps)
        return f"{head}: the class matches {_spread(cls)}, {left}; no node has {need}"
    if max(free.values(), default=0) < need:
        verb = "matches" if sum(sel.values()) == 1 else "match"
        held = sum(sel.values()) - sum(free.values())
        left = f"{_spread(free)}, at most {max(free.values())} on one node" if any(free.values()) else "none"
        return (f"{head}: {_spread(sel)} {verb}, but other claims hold {held}, which leaves {left}; "
                f"no node has {need} free")
    reasons = _blocked(st)
    verb = "matches and is" if sum(free.values()) == 1 else "match and are"
    return f"{head}: {_spread(free)} {verb} free, but {reasons}; no node has {need} usable"


def _details(stages: list[Stages]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for st in stages:
        per_node: dict[str, dict[str, int]] = {}
        for stage, counter in st.counts:
            for node, n in counter.items():
                per_node.setdefault(node, {})[stage] = n
        top = sorted(per_node.items(), key=lambda kv: (-kv[1].get("usable", 0), kv[0]))[:_MAX_NODES]
        out[st.alt.full_name] = {
            "needed": st.need if st.need is not None else "all",
            "totals": {stage: sum(c.values()) for stage, c in st.counts},
            "nodes_with_any": {stage: sum(1 for v in c.values() if v) for stage, c in st.counts},
            "per_node": dict(top),
            "blocked": dict(st.blocked),
        }
    return out


class Explainer:
    """Explanations of one judgement; stage counts are shared by requests that filter alike."""

    def __init__(self, judge: "Judge", deadline: float) -> None:
        self.judge = judge
        self.deadline = deadline      # the run's time budget also bounds explaining
        self._stages: dict[tuple, Stages] = {}
        self._notes: dict[Any, str] = {}
        self._claims: dict[tuple, Explanation] = {}

    def stages(self, alt: Alternative, nodes: "NodeSet") -> Stages:
        world = self.judge.world
        capacity = tuple(sorted(alt.capacity.items())) if alt.capacity else None
        key = (alt.class_name, alt.selectors, alt.admin, alt.tolerations, capacity, nodes.key,
               len(world.node_log), world.held_token, len(world.class_log))
        st = self._stages.get(key)
        if st is None:
            st = self._stages[key] = _stages(self.judge, alt, nodes)
        return replace(st, alt=alt, need=alt.count if alt.mode == "ExactCount" else None)

    def pool_note(self, nodes: "NodeSet") -> str:
        """Pools the nodes see but cannot allocate from, as a parenthesis for messages."""
        have = self._notes.get(nodes.key)
        if have is not None:
            return have
        reasons = {}
        world = self.judge.world
        for node, unusable in zip(nodes.nodes, nodes.unusable):
            if not unusable:
                continue
            for pool in world.pools(node):
                if not pool.usable:
                    reasons[pool.label] = pool.invalid and f"is invalid: {pool.invalid}" or "is incomplete"
        shown = "; ".join(f"resource pool {label} {why}" for label, why in sorted(reasons.items())[:_MAX_NAMED])
        have = self._notes[nodes.key] = f" ({shown})" if shown else ""
        return have

    def claim(self, claim: ClaimSpec, nodes: "NodeSet", node_failures: dict[str, str]) -> Explanation:
        """The narrowest reason why ``claim`` alone cannot be allocated on any of ``nodes``."""
        world = self.judge.world
        key = (claim.shape, nodes.key, tuple(node_failures.items()), len(world.node_log), world.held_token,
               len(world.class_log))
        have = self._claims.get(key)
        if have is None:
            have = self._claims[key] = explain_claim(self, claim, nodes, node_failures)
        return have

    def search(self, claims: list[ClaimSpec], nodes: "NodeSet", relax: frozenset[str] = frozenset()
               ) -> list[list[Pick]] | None | bool:
        """Feasible on some node? The picks if so, False if not, None when undecided within a small
        budget (explanations stay cheap). ``relax``: checks left out."""
        judge = self.judge
        world = judge.world
        budget = Budget(max_steps=20_000, deadline=self.deadline)
        if relax or judge.exhaustive:
            must = np.ones(len(nodes.nodes), bool)
        else:
            from .precheck import must_search
            must = must_search(judge.counts, claims, nodes.slots, nodes.unusable)
        for i in np.nonzero(must)[0]:
            node = nodes.nodes[int(i)]
            attempt = Attempt(world.run, node, world.pools(node), claims, budget, relax=relax)
            try:
                if attempt.run_search():
                    return attempt.results
            except (NodeFailure, FatalError):
                continue
            except BudgetExceeded:
                return None
        return False


def _request_reason(ex: Explainer, req: Request, nodes: "NodeSet") -> tuple[str, list[Stages]] | None:
    """A reason when this request cannot be satisfied on any node even on its own."""
    stages = [ex.stages(alt, nodes) for alt in req.alternatives]
    if any(st.fits_somewhere() for st in stages):
        return None
    note = ex.pool_note(nodes)
    if len(stages) == 1:
        return _stage_reason(stages[0], note), stages
    parts = "; ".join(_stage_reason(st, note) for st in stages)
    return f"no alternative of request `{req.name}` fits: {parts}", stages


def explain_claim(ex: Explainer, claim: ClaimSpec, nodes: "NodeSet", node_failures: dict[str, str]) -> Explanation:
    """The narrowest reason why ``claim`` alone cannot be allocated on any of ``nodes``."""
    all_stages: list[Stages] = []
    for i, req in enumerate(claim.requests):
        found = _request_reason(ex, req, nodes)
        if found is not None:
            message, stages = found
            return Explanation(message, _details(stages), ("devices", "requests", i))
    for req in claim.requests:
        all_stages += [ex.stages(alt, nodes) for alt in req.alternatives]
    failures = sorted({m for m in node_failures.values() if m})
    if failures:
        shown = dict(list(node_failures.items())[:_MAX_NODES])
        return Explanation("; ".join(failures[:3]), _details(all_stages) | {"node_failures": shown})
    cause = blocking_cause(ex, [claim], nodes)
    if cause:
        return Explanation(cause, _details(all_stages))
    if claim.constraints and ex.search([replace(claim, constraints=())], nodes):
        for con in claim.constraints:
            if ex.search([replace(claim, constraints=(con,))], nodes) is False:
                kind, attr = (("matchAttribute", con.match_attribute) if con.match_attribute
                              else ("distinctAttribute", con.distinct_attribute))
                scope = " and ".join(f"`{r}`" for r in sorted(con.requests)) or "all requests"
                what = "with one value" if con.match_attribute else "with pairwise different values"
                return Explanation(f"constraint {kind} `{attr}` across {scope}: no node has devices for all of them "
                                   f"{what}", _details(all_stages), ("devices", "constraints", con.index))
        return Explanation("the constraints together rule out every combination of devices on every node",
                           _details(all_stages), ("devices", "constraints"))
    names = ", ".join(f"`{r.name}`" for r in claim.requests)
    return Explanation(f"each request fits on some node on its own, but no node can give requests {names} their "
                       "devices at the same time", _details(all_stages))


def blocking_cause(ex: Explainer, claims: list[ClaimSpec], nodes: "NodeSet") -> str:
    """When leaving out taints, shared counters or capacity makes the claims fit, that is what
    blocks them: said with the devices and amounts of the solution found without it."""
    f = ex.judge.world.features
    checks = [("taints", f.taints), ("counters", f.partitionable), ("capacity", f.consumable_capacity)]
    for check, on in checks:
        if not on:
            continue
        picks = ex.search(claims, nodes, frozenset({check}))
        if not picks or picks is True:
            continue
        flat = [p for claim_picks in picks for p in claim_picks]
        text = {"taints": _taint_cause, "counters": _counter_cause, "capacity": _capacity_cause}[check](ex, flat)
        if text:
            return text
    return ""


def _taint_cause(ex: Explainer, picks: list[Pick]) -> str:
    tainted = [(p, blocking_taint(p.device, p.alt)) for p in picks]
    tainted = [(p, t) for p, t in tainted if t is not None]
    if not tainted:
        return ""
    shown = ", ".join(f"{p.device.label} has `{t.key}={t.value}:{t.effect}` (request `{p.request}`)"
                      for p, t in tainted[:_MAX_NAMED])
    return (f"taints: the only devices that would fit carry taints their requests do not tolerate: {shown}"
            f"{'…' if len(tainted) > _MAX_NAMED else ''}; add a toleration or pick other devices")


def _counter_cause(ex: Explainer, picks: list[Pick]) -> str:
    world = ex.judge.world
    by_pool: dict[Any, list] = {}
    for p in picks:
        if p.device.consumes:
            by_pool.setdefault(id(p.candidate.pool), [p.candidate.pool, []])[1].append(p.device)
    parts = [text for pool, devices in by_pool.values() if (text := _counter_shortfall(world, pool, devices))]
    if not parts:
        return ""
    return f"shared counters: the devices that would fit need more than their pools have left: {'; '.join(parts)}"


def _capacity_cause(ex: Explainer, picks: list[Pick]) -> str:
    world = ex.judge.world
    parts = []
    taken: dict[Any, dict] = {}
    for p in picks:
        d = p.device
        requested = p.alt.capacity or {}
        held = world.allocated.consumed.get(d.key, {})
        mine = taken.setdefault(d.key, {})
        for name, cap in d.capacity.items():
            value, _ = consumption(requested.get(name), cap)
            before = held.get(name, 0) + mine.get(name, 0)
            mine[name] = mine.get(name, 0) + value
            if before + value > cap.value:
                parts.append(f"{d.label} `{name}`: request `{p.request}` needs {format_value(value)}, "
                             f"{format_value(max(cap.value - before, 0))} of {format_value(cap.value)} left")
    if not parts:
        return ""
    return f"capacity: the devices that would fit have too little left: {'; '.join(parts[:_MAX_NAMED])}"


def explain_together(ex: Explainer, members: list[ClaimSpec], nodes: "NodeSet") -> str:
    """For a pod whose claims each fit alone."""
    cause = blocking_cause(ex, members, nodes)
    if cause:
        return cause
    names = ", ".join(f"`{m.display}`" for m in members)
    return f"claims {names} each fit on some node, but no node can take all of them at once"
