"""Why a claim cannot be allocated, in the narrowest terms we can prove.

The search only says "no". To explain, each request is looked at on its own, stage by stage —
devices the class matches, then those the request's selectors leave, then those not held by
other claims, then those no taint, counter or capacity rules out — and the first stage at which
no node has enough is the reason. When every request fits on its own, constraints are tried one
at a time, and finally the requests together.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from .capacity import fits
from .counters import CounterBook
from .model import Alternative, ClaimSpec, Request
from .nodes import NodeView
from .search import Attempt, Budget, BudgetExceeded, Candidate, NodeFailure
from .fatal import FatalError
from .taints import blocking_taint
from .world import World

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

    def best(self, stage: int) -> int:
        c = self.counts[stage][1]
        return max(c.values(), default=0)

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


def _stages(world: World, alt: Alternative, nodes: list[NodeView]) -> Stages:
    st = Stages(alt, alt.count if alt.mode == "ExactCount" else None)
    cls = world.classes.get(alt.class_name)
    names = ("class", "selectors", "free", "usable")
    counts = {n: Counter() for n in names}
    visible = world.visible()
    f = world.features
    seen: set[int] = set()
    for node in nodes:
        for cand, here in visible.get(node.name, []):
            if not here:
                continue
            d = cand.device
            if cls is None or not all(world.selection.probe(e, d) for e in cls.selectors if e is not None):
                continue
            if not f.binding_conditions and d.binding_conditions:
                continue
            counts["class"][node.name] += 1
            passed = 0
            for expr in alt.selectors:
                if expr is not None and not world.selection.probe(expr, d):
                    break
                passed += 1
            for i in range(passed):
                st.per_selector[i] += 1
            if passed < len(alt.selectors):
                continue
            counts["selectors"][node.name] += 1
            if len(st.survivors) <= _MAX_NAMED:
                st.survivors.append(f"{node.name}/{d.name}" if not node.placeholder else d.label)
            if not alt.admin and d.key in world.allocated.dedicated:
                continue
            counts["free"][node.name] += 1
            why = ""
            if d.consumes and not f.partitionable:
                why = "consume shared counters (DRAPartitionableDevices is off)"
            elif f.taints and (taint := blocking_taint(d, alt)) is not None:
                why = f"have taint `{taint.key}={taint.value}:{taint.effect}` that the request does not tolerate"
            elif f.consumable_capacity and not fits(alt, d, world.allocated.consumed.get(d.key), None):
                why = "lack the requested capacity"
            elif d.consumes and f.partitionable and not _counters_alone(world, cand):
                why = "need more shared counters than their pool has left"
            if why:
                if d.uid not in seen:
                    st.blocked[why] += 1
                    seen.add(d.uid)
                continue
            counts["usable"][node.name] += 1
    st.counts = [(n, counts[n]) for n in names]
    return st


def _counters_alone(world: World, cand: Candidate) -> bool:
    return CounterBook(world.allocated, world.run.counter_cache).take(cand.pool, cand.device)


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
        parts.append(f"{n} {singular.get(verb, verb) if n == 1 else verb} {rest}")
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
    """Explanations of one run; stage counts are shared by requests that filter alike."""

    def __init__(self, world: World, deadline: float) -> None:
        self.world = world
        self.deadline = deadline      # the run's time budget also bounds explaining
        self._stages: dict[tuple, Stages] = {}

    def stages(self, alt: Alternative, nodes: list[NodeView]) -> Stages:
        capacity = tuple(sorted(alt.capacity.items())) if alt.capacity else None
        key = (alt.class_name, alt.selectors, alt.admin, alt.tolerations, capacity, tuple(n.name for n in nodes))
        st = self._stages.get(key)
        if st is None:
            st = self._stages[key] = _stages(self.world, alt, nodes)
        return replace(st, alt=alt, need=alt.count if alt.mode == "ExactCount" else None)

    def pool_note(self, nodes: list[NodeView]) -> str:
        """Pools the nodes see but cannot allocate from, as a parenthesis for messages."""
        reasons = {}
        for node in nodes:
            for pool in self.world.pools(node):
                if not pool.usable:
                    reasons[pool.label] = pool.invalid and f"is invalid: {pool.invalid}" or "is incomplete"
        if not reasons:
            return ""
        shown = "; ".join(f"resource pool {label} {why}" for label, why in sorted(reasons.items())[:_MAX_NAMED])
        return f" ({shown})"

    def claim(self, claim: ClaimSpec, nodes: list[NodeView], node_failures: dict[str, str]) -> Explanation:
        """The narrowest reason why ``claim`` alone cannot be allocated on any of ``nodes``."""
        return explain_claim(self, claim, nodes, node_failures)


def _request_reason(ex: Explainer, req: Request, nodes: list[NodeView]) -> tuple[str, list[Stages]] | None:
    """A reason when this request cannot be satisfied on any node even on its own."""
    stages = [ex.stages(alt, nodes) for alt in req.alternatives]
    if any(st.fits_somewhere() for st in stages):
        return None
    note = ex.pool_note(nodes)
    if len(stages) == 1:
        return _stage_reason(stages[0], note), stages
    parts = "; ".join(_stage_reason(st, note) for st in stages)
    return f"no alternative of request `{req.name}` fits: {parts}", stages


def _search(ex: Explainer, claims: list[ClaimSpec], nodes: list[NodeView]) -> bool | None:
    """Feasible on some node? None when undecided within a small budget (explanations stay cheap)."""
    world = ex.world
    budget = Budget(max_steps=20_000, deadline=ex.deadline)
    for node in nodes:
        try:
            if Attempt(world.run, node, world.pools(node), claims, budget).run_search():
                return True
        except (NodeFailure, FatalError):
            continue
        except BudgetExceeded:
            return None
    return False


def explain_claim(ex: Explainer, claim: ClaimSpec, nodes: list[NodeView], node_failures: dict[str, str]) -> Explanation:
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
    if claim.constraints and _search(ex, [replace(claim, constraints=())], nodes):
        for con in claim.constraints:
            if _search(ex, [replace(claim, constraints=(con,))], nodes) is False:
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


def explain_together(members: list[ClaimSpec]) -> str:
    """For a pod whose claims each fit alone."""
    names = ", ".join(f"`{m.display}`" for m in members)
    return f"claims {names} each fit on some node, but no node can take all of them at once"
