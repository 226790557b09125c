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

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .capacity import consumption
from .columns import TRUE
from .counts import Counts
from .fatal import FatalError
from .model import Alternative, ClaimSpec, Request
from .nodes import NodeSet
from .outcome import Searched, fleet_state
from .picks import Budget, BudgetExceeded, NodeFailure, Pick
from .precheck import must_search
from .search import Attempt
from .stages import MAX_NAMED, StageCounter, Stages, amount, counter_shortfall
from .taints import blocking_taint

if TYPE_CHECKING:
    from .world import World

_MAX_NODES = 20      # nodes listed in details
_SEARCH_STEPS = 20_000   # an explanation's search: undecided (None) past these steps
# Fewer steps than this never read the clock either (``Budget.tick`` reads it every 1,024 steps).
_UNTIMED_STEPS = 1024


@dataclass(frozen=True)
class Explanation:
    message: str
    details: dict[str, Any]
    path_suffix: tuple = ()        # where in the claim the reason points (a request, a constraint)


def _spread(per_node: np.ndarray, devices: int) -> str:
    """``devices`` (distinct) and the nodes they are on; a device several nodes reach is one device."""
    nodes = int(np.count_nonzero(per_node))
    where = "reachable from" if devices < int(per_node.sum()) else "on"
    return f"{devices} device{'s' if devices != 1 else ''} {where} {nodes} node{'s' if nodes != 1 else ''}"


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


def absent_note(absent: dict[str, int]) -> str:
    """What devices published for nodes without a Node object would have given, as a clause; "" for none."""
    if not absent:
        return ""
    total = sum(absent.values())
    names = sorted(absent, key=lambda n: (-absent[n], n))
    if len(names) == 1:
        where = f"node {names[0]}, which has"
    else:
        shown = ", ".join(f"{n} ({absent[n]})" for n in names[:MAX_NAMED])
        where = f"nodes {shown}{f' and {len(names) - MAX_NAMED} more' if len(names) > MAX_NAMED else ''}, which have"
    return (f"; {total} matching device{'s are' if total != 1 else ' is'} published for {where} no Node object "
            "(deleted, or never registered): the scheduler never places a pod there, so they count for nothing")


def _stage_reason(st: Stages, pool_note: str) -> str:
    """The first filter after which no node has enough devices (and what nodes that do not exist publish)."""
    return _stage_text(st, pool_note) + absent_note(st.absent)


def _stage_text(st: Stages, pool_note: str) -> str:
    need = st.need or 1
    (_, cls), (_, sel), (_, free), (_, usable) = st.counts
    n_cls, n_sel, n_free = st.distinct["class"], st.distinct["selectors"], st.distinct["free"]
    head = _describe(st.alt)
    if not cls.any():
        return f"{head}: the class matches no device in a usable pool{pool_note}"
    named = ", ".join(st.survivors[:MAX_NAMED]) + ("…" if len(st.survivors) > MAX_NAMED else "")
    if st.need is None and sel.any():
        held = n_sel - n_free
        blocked = _blocked(st)
        held_text = f"{held} {'is' if held == 1 else 'are'} held by other claims{_holders(st)}"
        parts = ([held_text] if held else []) + ([blocked] if blocked else [])
        return (f"{head}: allocationMode All takes every device the selectors match ({_spread(sel, n_sel)}), and on "
                f"every node some cannot be taken: {'; '.join(parts) or 'they are in use'}")
    if sel.max(initial=0) < need and not any(st.alt.selectors):
        return f"{head}: the class matches {_spread(cls, n_cls)}; no node has {need}"
    if sel.max(initial=0) < need:
        left = f"the selector leaves {_spread(sel, n_sel)}" if sel.any() else "the selector leaves none"
        if sel.any() and int(sel.sum()) <= MAX_NAMED and named:
            left = f"the selector leaves {n_sel} ({named})"
        if len(st.alt.selectors) > 1:
            steps = [f"`{expr}` leaves {st.per_selector[i] or 'none'}" for i, expr in enumerate(st.alt.selectors)
                     if i == 0 or st.per_selector[i - 1]]
            left = ", ".join(steps)
        return f"{head}: the class matches {_spread(cls, n_cls)}, {left}; no node has {need}"
    if free.max(initial=0) < need:
        verb = "matches" if n_sel == 1 else "match"
        held = n_sel - n_free
        left = f"{_spread(free, n_free)}, at most {int(free.max())} on one node" if free.any() else "none"
        return (f"{head}: {_spread(sel, n_sel)} {verb}, but other claims hold {held}{_holders(st)}, which leaves {left}; "
                f"no node has {need} free")
    reasons = _blocked(st)
    verb = "matches and is" if n_free == 1 else "match and are"
    return f"{head}: {_spread(free, n_free)} {verb} free, but {reasons}; no node has {need} usable"


def _holders(st: Stages) -> str:
    """Which claims hold the devices (claims of --cluster or the live state), as a parenthesis."""
    if not st.holders:
        return ""
    more = ", …" if len(st.holders) >= MAX_NAMED else ""
    return f" ({', '.join(st.holders)}{more})"


def _details(stages: list[Stages]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for st in stages:
        told = st.told
        if not told:
            told["nodes_with_any"] = {stage: int(np.count_nonzero(c)) for stage, c in st.counts}
            told["per_node"] = _top_nodes(st)
        out[st.alt.full_name] = {
            "needed": st.need if st.need is not None else "all",
            "totals": dict(st.distinct),
            "nodes_with_any": told["nodes_with_any"],
            "per_node": told["per_node"],
            "blocked": dict(st.blocked),
        }
        if st.absent:
            out[st.alt.full_name]["absent_nodes"] = dict(sorted(st.absent.items())[:_MAX_NODES])
    return out


def _top_nodes(st: Stages) -> dict[str, dict[str, int]]:
    """The nodes with the most usable devices (then by name), at most ``_MAX_NODES``, each with
    its non-zero stage counts; nodes with none at any stage are left out."""
    if not st.counts:
        return {}
    usable = st.counts[-1][1]
    # Each stage keeps a part of the one before: a node with a device at some stage has one at the first.
    shown = np.flatnonzero(st.counts[0][1])
    ranks = st.name_ranks
    # Most usable first, then by name, as one integer per node: numpy picks and sorts the few shown.
    order = (int(usable.max(initial=0)) - usable[shown]).astype(np.int64) * len(ranks) + ranks[shown]
    if len(shown) > _MAX_NODES:
        top = np.argpartition(order, _MAX_NODES - 1)[:_MAX_NODES]
        shown, order = shown[top], order[top]
    picked = shown[np.argsort(order)]
    nodes = st.nodes
    names = [nodes[i].name for i in picked.tolist()]
    stages = [stage for stage, _ in st.counts]
    rows = zip(*[counts[picked].tolist() for _, counts in st.counts])
    return {name: {stage: n for stage, n in zip(stages, row) if n} for name, row in zip(names, rows)}


class Explainer:
    """Explanations of one judgement; stage counts are shared by requests that filter alike."""

    def __init__(self, world: World, counts: Counts, deadline: float, exhaustive: bool = False) -> None:
        """``counts``: the world's counts as the judgement took them; ``exhaustive``: search every node."""
        self.world = world
        self.counts = counts
        self.deadline = deadline      # the run's time budget also bounds explaining
        self.exhaustive = exhaustive
        self._counter = StageCounter(world, counts)
        self._notes: dict[Any, str] = {}
        self._claims: dict[tuple, Explanation] = {}

    def stages(self, alt: Alternative, nodes: NodeSet) -> Stages:
        """The stage counts of ``alt`` on ``nodes`` (see stages.py)."""
        return self._counter.stages(alt, nodes)

    def absent_of(self, claims: list[ClaimSpec], nodes: NodeSet) -> dict[str, int]:
        """Per node without a Node object, the devices it publishes for the first request of ``claims``
        whose selectors match some there (empty when none does)."""
        for claim in claims:
            for req in claim.requests:
                for alt in req.alternatives:
                    st = self.stages(alt, nodes)
                    if st.absent:
                        return st.absent
        return {}

    def pool_note(self, nodes: NodeSet) -> str:
        """Pools the nodes see but cannot allocate from, as a parenthesis for messages."""
        have = self._notes.get(nodes.key)
        if have is not None:
            return have
        reasons = {}
        world = self.world
        for i in np.nonzero(nodes.unusable)[0]:
            for pool in world.pools(nodes.nodes[int(i)]):
                if not pool.usable:
                    reasons[pool.label] = pool.invalid and f"is invalid: {pool.invalid}" or "is incomplete"
        shown = "; ".join(f"resource pool {label} {why}" for label, why in sorted(reasons.items())[:MAX_NAMED])
        have = self._notes[nodes.key] = f" ({shown})" if shown else ""
        return have

    def claim(self, claim: ClaimSpec, nodes: NodeSet, node_failures: dict[str, str],
              searched: Searched | None = None) -> Explanation:
        """The narrowest reason why ``claim`` alone cannot be allocated on any of ``nodes``.
        ``searched``: the judge's search that found no node (``Outcome.searched``), if any."""
        world = self.world
        key = (claim.shape, nodes.key, tuple(node_failures.items()), *fleet_state(world))
        have = self._claims.get(key)
        if have is None:
            have = self._claims[key] = explain_claim(self, claim, nodes, node_failures, searched)
        return have

    def search(self, claims: list[ClaimSpec], nodes: NodeSet, relax: frozenset[str] = frozenset(),
               known: Searched | None = None) -> list[list[Pick]] | None | bool:
        """Feasible on some node? The picks if so, False if not, None when undecided within a small
        budget (explanations stay cheap). ``relax``: checks left out. ``known``: a search that found
        no node, whose answer is taken when it asked the same."""
        world = self.world
        if known is not None and self._answered(known, claims, nodes, relax):
            return False
        budget = Budget(max_steps=_SEARCH_STEPS, deadline=self.deadline)
        if self.exhaustive:
            must = np.ones(len(nodes.nodes), bool)
        else:
            must = must_search(self.counts, claims, nodes.slots, nodes.unusable, relaxed=bool(relax))
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

    def _answered(self, known: Searched, claims: list[ClaimSpec], nodes: NodeSet, relax: frozenset[str]) -> bool:
        """Whether this search would say what ``known`` found, no node, without searching. It asks the
        same (nothing relaxed, same claims, nodes and fleet state) on no more nodes: those the full
        precheck leaves, all of which the judge searched (the first node the quick precheck leaves,
        which leaves every node the full one does, then each later one the full precheck leaves). A
        node's search takes the same steps in both, so this one would take at most ``known.steps``:
        fewer than ``_UNTIMED_STEPS`` neither pass its budget nor read its clock, so its answer is
        "no node" whatever the time. A longer search is run again."""
        return (not relax and not self.exhaustive and known.steps < _UNTIMED_STEPS
                and known.asks(claims, nodes, self.world))


def _request_reason(ex: Explainer, req: Request, nodes: NodeSet) -> tuple[str | None, list[Stages]]:
    """A reason when this request cannot be satisfied on any node even on its own (None when it
    can), and the stage counts of its alternatives."""
    stages = [ex.stages(alt, nodes) for alt in req.alternatives]
    if any(st.fits_somewhere() for st in stages):
        return None, stages
    note = ex.pool_note(nodes)
    if len(stages) == 1:
        return _stage_reason(stages[0], note), stages
    parts = "; ".join(_stage_reason(st, note) for st in stages)
    return f"no alternative of request `{req.name}` fits: {parts}", stages


def explain_claim(ex: Explainer, claim: ClaimSpec, nodes: NodeSet, node_failures: dict[str, str],
                  searched: Searched | None = None) -> Explanation:
    """The narrowest reason why ``claim`` alone cannot be allocated on any of ``nodes``. ``searched``:
    the judge's search of it that found no node, if any."""
    all_stages: list[Stages] = []
    for i, req in enumerate(claim.requests):
        message, stages = _request_reason(ex, req, nodes)
        if message is not None:
            return Explanation(message, _details(stages), ("devices", "requests", i))
        all_stages += stages
    failures = sorted({m for m in node_failures.values() if m})
    if failures:
        shown = dict(list(node_failures.items())[:_MAX_NODES])
        return Explanation("; ".join(failures[:3]), _details(all_stages) | {"node_failures": shown})
    cause = blocking_cause(ex, [claim], nodes)
    if cause:
        return Explanation(cause, _details(all_stages))
    if claim.constraints and ex.search([replace(claim, constraints=())], nodes):
        for con in claim.constraints:
            # With its one constraint, the claim is itself: the judge's question.
            alone = claim if claim.constraints == (con,) else replace(claim, constraints=(con,))
            if ex.search([alone], nodes, known=searched if alone is claim else None) is False:
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


def blocking_cause(ex: Explainer, claims: list[ClaimSpec], nodes: NodeSet) -> str:
    """When leaving out taints, shared counters or capacity makes the claims fit, that is what
    blocks them: said with the devices and amounts of the solution found without it."""
    relevant = _relaxable(ex, claims)
    for check in ("taints", "counters", "capacity"):
        if check not in relevant:
            continue
        picks = ex.search(claims, nodes, frozenset({check}))
        if not picks or picks is True:
            continue
        flat = [p for claim_picks in picks for p in claim_picks]
        text = {"taints": _taint_cause, "counters": _counter_cause, "capacity": _capacity_cause}[check](ex, flat)
        if text:
            return text
    return ""


def _relaxable(ex: Explainer, claims: list[ClaimSpec]) -> set[str]:
    """The checks that could refuse some device the claims' requests select (leaving the others out
    would change nothing)."""
    counts = ex.counts
    f = ex.world.features
    # Only devices with taints, counters or capacity can be refused by those checks: most fleets have
    # none of some kind, and then no request's devices are looked at for it.
    flags = [(check, devices) for check, on, which in (("taints", f.taints, counts.tainted),
                                                        ("counters", f.partitionable, counts.consumers),
                                                        ("capacity", f.consumable_capacity, counts.capacity_flags))
             if on and (devices := which()).any()]
    out: set[str] = set()
    for claim in claims:
        for req in claim.requests:
            for alt in req.alternatives:
                fc = counts.get(alt)
                if fc is None:
                    continue
                if f.consumable_capacity and (alt.capacity or alt.has_capacity):
                    out.add("capacity")
                if flags:
                    selected = fc.dev_sel == TRUE
                    out.update(check for check, devices in flags if (selected & devices).any())
    return out


def _taint_cause(ex: Explainer, picks: list[Pick]) -> str:
    found = [(p, blocking_taint(p.device, p.alt)) for p in picks]
    tainted = [(p, t) for p, t in found if t is not None]
    if not tainted:
        return ""
    shown = ", ".join(f"{p.device.label} has `{t.key}={t.value}:{t.effect}` (request `{p.request}`)"
                      for p, t in tainted[:MAX_NAMED])
    return (f"taints: the only devices that would fit carry taints their requests do not tolerate: {shown}"
            f"{'…' if len(tainted) > MAX_NAMED else ''}; add a toleration or pick other devices")


def _counter_cause(ex: Explainer, picks: list[Pick]) -> str:
    world = ex.world
    by_pool: dict[Any, list] = {}
    for p in picks:
        if p.device.consumes:
            by_pool.setdefault(id(p.candidate.pool), [p.candidate.pool, []])[1].append(p.device)
    parts = [text for pool, devices in by_pool.values() if (text := counter_shortfall(world, pool, devices))]
    if not parts:
        return ""
    return f"shared counters: the devices that would fit need more than their pools have left: {'; '.join(parts)}"


def _capacity_cause(ex: Explainer, picks: list[Pick]) -> str:
    world = ex.world
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
                parts.append(f"{d.label} `{name}`: request `{p.request}` needs {amount(value)}, "
                             f"{amount(max(cap.value - before, 0))} of {amount(cap.value)} left")
    if not parts:
        return ""
    return f"capacity: the devices that would fit have too little left: {'; '.join(parts[:MAX_NAMED])}"


def explain_together(ex: Explainer, members: list[ClaimSpec], nodes: NodeSet) -> str:
    """For a pod whose claims each fit alone."""
    cause = blocking_cause(ex, members, nodes)
    if cause:
        return cause
    names = ", ".join(f"`{m.display}`" for m in members)
    return f"claims {names} each fit on some node, but no node can take all of them at once"
