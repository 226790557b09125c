"""One judgement of many groups against one fleet view: decide, place the replicas, report.

Groups (a pod's claims, or a claim alone) are judged against the fleet view: the counts say on
which nodes the search can be skipped (precheck.py), the search runs on the others in node
order, and an explanation is worked out for what does not fit. A workload with replicas asks for
its pod once per replica, one beside the other; ``--together`` judges the whole run that way.
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from ..cancel import checkpoint
from ..problems import Problem
from ..convert import Canonical
from ..findings import Severity
from ..paths import FieldPath
from . import daemonset
from .explain import Explainer, Explanation, absent_note, explain_together
from .fatal import FatalError
from .groups import Group, Member, replicas_path
from .model import ClaimSpec, DeviceKey
from .nodes import NodeSet, NodeView, selector_key, selector_matches
from .outcome import Outcome, Placed, Searched, fits, fleet_state, shared_pins, taken
from .picks import Budget, BudgetExceeded, NodeFailure
from .precheck import can_fail, must_search
from .report import FeasibilityOptions, FeasibilityReport, decode, encode
from .search import Attempt
from .shards import judge_all
from .verdict import (PLACEMENT_FIELDS, allocations, location, placement_note, refusals, report_fatal,
                      request_details, summary)
from .world import World

RULE_INFEASIBLE = "DRA701"
RULE_POOL = "DRA708"
RULE_UNDECIDED = "DRA709"
QUICK_TRIES = 1   # nodes searched on the counts of each request alone, before all the counts are asked
# Below this many groups per process, forking costs more than it saves.
MIN_GROUPS_PER_PROCESS = 64
# A problem with where it is in its file worked out (the engine's ``emit.placed``).
Locate = Callable[[Canonical, Problem], Problem]


class Judge:
    """One judgement of many groups against one world."""

    def __init__(self, world: World, options: FeasibilityOptions, deadline: float, exhaustive: bool = False,
                 locate: Locate | None = None) -> None:
        self.world = world
        self.options = options
        self.deadline = deadline
        self.exhaustive = exhaustive
        self.locate = locate
        self.counts = world.counts
        self.explainer = Explainer(world, self.counts, deadline, exhaustive)
        self._outcomes: dict[Any, Outcome] = {}
        self._reported: set[tuple] = set()

    # ------------------------------------------------------------------ nodes

    def node_set(self, group: Group, pins: tuple = ()) -> NodeSet:
        """The nodes the group's pod may run on: its placement, and the nodes of claims it uses
        that are already allocated (``pins``: more (description, predicate) pairs)."""
        world = self.world
        nodes = world.node_list()
        selectors = [c.get("status", "allocation", "nodeSelector") for c in group.pinned]
        key = (group.placement if group.is_workload else None,
               tuple(selector_key(s) if isinstance(s, dict) else "" for s in selectors),
               tuple(p[0] for p in pins), len(world.node_log))
        have = world.node_sets.get(key)
        if have is not None:
            return have
        pod = group.is_workload  # a claim on its own has no pod yet: nothing about nodes is known
        if not (pod or selectors or pins):
            slots = world.order
            return world.node_sets.put(key, NodeSet(nodes, slots, world.unusable_slots()[slots], key, Counter()))
        kept: list[NodeView] = []
        refused: Counter[str] = Counter()
        for node in nodes:
            why = group.placement.refuses(node) if pod else ""
            if not why:
                for s in selectors:
                    if isinstance(s, dict) and not node.placeholder and not selector_matches(s, node):
                        why = "its allocated claims' node"
                        break
            if not why:
                for _, admits in pins:
                    if not admits(node):
                        why = "the node of its shared claims"
                        break
            if why:
                refused[why] += 1
            else:
                kept.append(node)
        slots = np.fromiter((world.slot_of(n) for n in kept), np.int64, len(kept))
        return world.node_sets.put(key, NodeSet(kept, slots, world.unusable_slots()[slots], key, refused))

    # ------------------------------------------------------------------ deciding

    def decide(self, claims: list[ClaimSpec], nodes: NodeSet, budget: Budget,
               trace: Callable[[str], None] | None, relaxed: bool = False) -> Outcome:
        """Try the claims together on each node until one takes them."""
        world = self.world
        out = Outcome(tried=len(nodes.nodes), refused=nodes.refused)
        # Node-independent input errors first, exactly as the allocator validates; each node's
        # search takes over what this finds rather than checking it again.
        checked = Attempt(world.run, NodeView("<validation>"), [], claims, budget)
        try:
            checked.validate()
        except FatalError as exc:
            out.fatal = _kept(exc)
            return out
        if not claims:
            out.node = nodes.nodes[0] if nodes.nodes else None
            return out
        searched: dict[str, str] = {}
        begun = budget.steps
        for i in self._to_search(claims, nodes, trace is not None or self.exhaustive):
            node = nodes.nodes[i]
            if time.monotonic() > budget.deadline:
                out.undecided = max(budget.steps, 1)
                return out
            attempt = Attempt(world.run, node, world.pools(node), claims, budget, trace, prune=not self.exhaustive)
            try:
                if attempt.run_search(checked):
                    out.node, out.picks = node, attempt.results
                    out.fatal = self._errors_elsewhere(claims, nodes, i + 1, budget, checked)
                    return out
                searched[node.name] = ""
            except NodeFailure as exc:
                searched[node.name] = str(exc)
            except FatalError as exc:
                out.fatal = _kept(exc)
                return out
            except BudgetExceeded:
                out.undecided = budget.steps
                return out
        out.failures = self._failures(nodes, searched)
        if trace is None and not self.exhaustive:
            out.searched = Searched.of(claims, nodes, world, budget.steps - begun)
        return out

    def _to_search(self, claims: list[ClaimSpec], nodes: NodeSet, every: bool) -> Iterator[int]:
        """The nodes to search, in order: every node (``every``), else the first few the counts of
        each request alone leave, then those that all the counts leave after them. A claim that
        fits is mostly placed on the first of those, before the costlier counts are worked out;
        the nodes searched in excess are certain plain failures, which searching finds too."""
        if every:
            yield from range(len(nodes.nodes))
            return
        quick = must_search(self.counts, claims, nodes.slots, nodes.unusable, quick=True).nonzero()[0]
        yield from (int(i) for i in quick[:QUICK_TRIES])
        if len(quick) <= QUICK_TRIES:
            return
        start = int(quick[QUICK_TRIES - 1]) + 1
        rest = must_search(self.counts, claims, nodes.slots[start:], nodes.unusable[start:])
        yield from (start + int(i) for i in rest.nonzero()[0])

    def _failures(self, nodes: NodeSet, searched: dict[str, str]) -> dict[str, str]:
        """The per-node messages of a failed search, in node order (skipped nodes fail plainly)."""
        failing = {name for name, msg in searched.items() if msg}
        failing |= {n.name for n in self.world.failing_nodes() if n.name not in searched}
        if not failing:
            return {}
        return {n.name: searched.get(n.name) or self.world.plain_failure(n) for n in nodes.nodes if n.name in failing}

    def _errors_elsewhere(self, claims: list[ClaimSpec], nodes: NodeSet, start: int, budget: Budget,
                          checked: Attempt) -> FatalError | None:
        """The scheduler filters every node: an error on a later node still aborts the pod. Only
        nodes where something could fail need a look. ``checked``: the claims' validation
        (``Attempt.validate``)."""
        # The nodes after ``start`` are listed only once some could fail (a copy of up to every node).
        if start >= len(nodes.nodes) or not (self.exhaustive or self.world.has_multi_term_selectors()
                                              or can_fail(self.counts, claims)):
            return None
        rest = nodes.nodes[start:]
        if self.exhaustive or self.world.has_multi_term_selectors():
            risky = np.ones(len(rest), bool)
        else:
            risky = must_search(self.counts, claims, nodes.slots[start:], nodes.unusable[start:], risky_only=True)
        for i in risky.nonzero()[0]:
            node = rest[int(i)]
            try:
                Attempt(self.world.run, node, self.world.pools(node), claims, budget).run_search(checked)
            except FatalError as exc:
                return _kept(exc)
            except (NodeFailure, BudgetExceeded):
                continue
        return None

    def decide_cached(self, claims: list[ClaimSpec], nodes: NodeSet, budget: Budget) -> Outcome:
        """``decide`` for a group judged without a trace; equal questions share the answer."""
        world = self.world
        key = (tuple(c.shape for c in claims), nodes.key, *fleet_state(world))
        have = self._outcomes.get(key)
        if have is not None:
            return have
        out = self.decide(claims, nodes, budget, None)
        if out.fatal is None and not out.undecided:
            self._outcomes[key] = out
        return out

    # ------------------------------------------------------------------ groups and replicas

    def judge_groups(self, groups: list[Group], linted: Callable[[Canonical], bool], report: FeasibilityReport,
                     objects: Callable[[], dict[int, Canonical]] = dict,
                     done: Mapping[int, FeasibilityReport | None] | None = None) -> None:
        """Every group on its own (in ``options.processes`` processes when there are many), or with
        ``--together`` one beside the other. ``objects``: the objects a finding may be about, by id
        (what other processes name). ``done``: the groups already judged (ahead.py), by position."""
        if self.options.together:
            alone: list[list[Placed]] = []
            for n, group in enumerate(groups):
                checkpoint()
                if time.monotonic() > self.deadline:
                    self._report_unjudged(groups[n:], linted, report)
                    return
                alone.append(self.place(group, report, keep=False))
            self.together(groups, alone, linted, report)
            return
        done = done or {}
        rest = [i for i in range(len(groups)) if i not in done]
        processes = self.options.processes if len(rest) >= 2 * MIN_GROUPS_PER_PROCESS else 1
        by_id = objects() if processes > 1 else {}
        judged = dict(zip(rest, judge_all(len(rest), lambda k: self.alone(groups[rest[k]], linted), processes,
                                          encode, lambda value: decode(value, by_id))))
        unjudged = []
        for i, group in enumerate(groups):
            one = done[i] if i in done else judged[i]
            if one is None:
                unjudged.append(group)
                continue
            report.problems.extend(one.problems)
            report.allocations.extend(one.allocations)
            report.traces.update(one.traces)
        if unjudged:
            self._report_unjudged(unjudged, linted, report)

    def alone(self, group: Group, linted: Callable[[Canonical], bool]) -> FeasibilityReport | None:
        """What is told about one group judged on its own; None once the time budget is used up. With
        ``locate``, its problems say where they are in their files: worked out in the process that
        judged the group, beside the others, not in the main process once every group is judged."""
        one = self._alone(group, linted)
        if one is not None and self.locate is not None:
            one.problems[:] = [(obj, _located(self.locate, obj, problem)) for obj, problem in one.problems]
        return one

    def _alone(self, group: Group, linted: Callable[[Canonical], bool]) -> FeasibilityReport | None:
        checkpoint()   # an editor's run whose text moved on stops between groups, not after the stage
        if time.monotonic() > self.deadline:
            return None
        one = FeasibilityReport()
        traced = any(is_traced(m.spec, self.options.trace) for m in group.members)
        if daemonset.per_node(group, self.world.nodes_known()) and not traced:
            run = daemonset.run_daemonset(self, group)
            if run.stopped is not None:
                self.report(group, [Placed(group.members, run.stopped)], linted, one)
                return one
            daemonset.report_daemonset(group, run, linted, one)
            if self.options.show_allocation:
                for members, outcome in run.placed:
                    one.allocations.extend(allocations(group, Placed(list(members), outcome), 0))
            return one
        self.report(group, self.place(group, one, keep=False), linted, one)
        return one

    def place(self, group: Group, report: FeasibilityReport | None, keep: bool) -> list[Placed]:
        """The group's pod once per replica, each beside the ones before it; stops at the first that
        does not fit. ``keep``: the devices stay taken afterwards (``--together``)."""
        outcomes: list[Placed] = []
        taken: list[tuple[set[DeviceKey], dict]] = []
        pins: tuple = ()
        for k in range(group.replicas):
            members = group.members if k == 0 else [m for m in group.members if not m.shared]
            outcome = self._decide_replica(group, members, pins, report if k == 0 else None)
            if outcome.node is not None or outcome.fatal is not None or outcome.undecided or (k == 0 and not keep):
                outcomes.append(Placed(members, outcome))
            else:
                outcomes.append(Placed(members, outcome, self._reasons(group, members, pins, outcome)))
            if outcome.node is None or outcome.fatal is not None or outcome.undecided:
                break
            if k + 1 < group.replicas or keep:
                taken.append(self._hold(outcome))
            if k == 0:
                pins = tuple(shared_pins(members, outcome))
        if not keep:
            for dedicated, shares in reversed(taken):
                self.world.release(dedicated, shares)
        return outcomes

    def _reasons(self, group: Group, members: list[Member], pins: tuple, outcome: Outcome) -> tuple[str, ...]:
        """Why a replica does not fit beside what is taken now."""
        nodes = self.node_set(group, pins)
        explain = self.explainer.claim
        return tuple(f"claim {m.display}: {explain(m.spec, nodes, outcome.failures, outcome.searched).message}"
                     for m in members)

    def _decide_replica(self, group: Group, members: list[Member], pins: tuple,
                        report: FeasibilityReport | None) -> Outcome:
        claims = [m.spec for m in members]
        nodes = self.node_set(group, pins)
        traced = [m.display for m in members if is_traced(m.spec, self.options.trace)] if report else []
        budget = Budget(self.options.max_steps, self.deadline)
        if not traced:
            return self.decide_cached(claims, nodes, budget)
        lines: list[str] = []
        outcome = self.decide(claims, nodes, budget, lines.append)
        assert report is not None
        for name in traced:
            report.traces[name] = lines + [summary(outcome)]
        return outcome

    def _hold(self, outcome: Outcome) -> tuple[set[DeviceKey], dict]:
        dedicated, shares = taken(outcome)
        self.world.hold(dedicated, shares)
        return dedicated, shares

    def together(self, groups: list[Group], alone: list[list[Placed]], linted: Callable[[Canonical], bool],
                 report: FeasibilityReport) -> None:
        """``--together``: every group in order, each keeping what it got; a group that fits on its
        own but not beside the ones before it is reported so."""
        holders: list[str] = []
        for group, placed_alone in zip(groups, alone):
            if not fits(group, placed_alone):
                self.report(group, placed_alone, linted, report)
                continue
            placed = self.place(group, None, keep=True)
            if fits(group, placed):
                holders.append(group.label)
                if self.options.show_allocation:
                    for k, p in enumerate(placed):
                        report.allocations.extend(allocations(group, p, k))
                continue
            self._report_beside(group, placed, placed_alone, holders, linted, report)

    # ------------------------------------------------------------------ reporting

    def report(self, group: Group, placed: list[Placed], linted: Callable[[Canonical], bool],
               report: FeasibilityReport) -> None:
        if not placed:
            return
        first = placed[0].outcome
        where = f" on node {self.options.node}" if self.options.node else ""
        if first.fatal is not None:
            report_fatal(group, first.fatal, linted, report)
            return
        if first.undecided:
            self._report_undecided(group, first, linted, report)
            return
        if first.node is None:
            self._report_infeasible(group, first, linted, report, where)
            return
        last = placed[-1]
        if not fits(group, placed):
            if last.outcome.fatal is not None:
                report_fatal(group, last.outcome.fatal, linted, report)
            elif last.outcome.undecided:
                self._report_undecided(group, last.outcome, linted, report)
            else:
                self._report_replica(group, len(placed), last, linted, report, where)
            return
        if self.options.show_allocation:
            for k, p in enumerate(placed):
                report.allocations.extend(allocations(group, p, k))

    def _add(self, report: FeasibilityReport, obj: Canonical, problem: Problem) -> None:
        """One finding per object, field and message (a template shared by many pods is told once)."""
        key = (id(obj), problem.rule, str(problem.path), problem.message)
        if key not in self._reported:
            self._reported.add(key)
            report.problems.append((obj, problem))

    def _report_undecided(self, group: Group, outcome: Outcome, linted: Callable[[Canonical], bool],
                          report: FeasibilityReport) -> None:
        seconds = self.options.max_seconds
        if outcome.undecided > self.options.max_steps or seconds is None:
            limit = "step budget (raise --max-steps to search further)"
        else:  # steps were left: the wall-clock limit (--max-seconds, the webhook's deadline) stopped it
            limit = f"time budget of {seconds:g} s (raise --max-seconds to search further)"
        msg = f"undecided after {outcome.undecided} steps: the allocator's search for {group.label} ran past its {limit}"
        target = group.owner if linted(group.owner) else next((m.obj for m in group.members if m.linted), None)
        if target is not None:
            self._add(report, target, Problem(RULE_UNDECIDED, FieldPath(), msg))

    def _report_infeasible(self, group: Group, outcome: Outcome, linted: Callable[[Canonical], bool],
                           report: FeasibilityReport, where: str) -> None:
        nodes = self.node_set(group)
        owner_linted = linted(group.owner)
        if not nodes.nodes:
            # No node to try: the pod's placement refuses every one, or the cluster has none (its node
            # list is known and empty); devices published for nodes that do not exist are said.
            absent = {} if nodes.refused else self.explainer.absent_of([m.spec for m in group.members], nodes)
            why = refusals(nodes.refused) + absent_note(absent)
            details: dict[str, Any] = {"nodes_refused": dict(nodes.refused)}
            if absent:
                details["absent_nodes"] = absent
            if group.is_workload and owner_linted:
                spec = group.spec_path or FieldPath()
                top = nodes.refused.most_common(1)[0][0] if nodes.refused else ""
                field = PLACEMENT_FIELDS.get(top.split(" ")[0], "")
                self._add(report, group.owner, Problem(
                    RULE_INFEASIBLE, spec.child(field) if field else spec,
                    f"{group.label} cannot run on any node{where}: {why}", details=details))
            elif not group.is_workload:
                for m in group.members:
                    if m.linted:
                        self._add(report, m.obj, Problem(
                            RULE_INFEASIBLE, m.spec.devices_path,
                            f"claim {m.display} cannot be allocated{where}: {why}", details=details))
            return
        alone: dict[str, Explanation] = {}
        for m in group.members:
            if len(group.members) == 1:
                alone[m.display] = self.explainer.claim(m.spec, nodes, outcome.failures, outcome.searched)
            else:
                single = self.decide_cached([m.spec], nodes, Budget(200_000, self.deadline))
                if single.node is None and single.fatal is None and not single.undecided:
                    alone[m.display] = self.explainer.claim(m.spec, nodes, single.failures, single.searched)
        placed = placement_note(nodes)
        # A claim that fits where the pod may not run fails because of this pod (its nodeName,
        # nodeSelector, affinity, tolerations, the nodes of its allocated claims): told on the pod,
        # not on a template or claim other pods may share. One that fits nowhere is told on the
        # claim or template, explained over every node.
        of_pod: set[str] = set()
        for m in group.members:
            explained = alone.get(m.display)
            if explained is None:
                continue
            told, note, wider = explained, placed, self._everywhere(m, nodes)
            if wider is not None:
                everywhere, single = wider
                if single.node is not None:
                    of_pod.add(m.display)
                    continue
                told, note = self.explainer.claim(m.spec, everywhere, single.failures, single.searched), ""
            if m.linted:
                path = m.spec.spec_path.child(*told.path_suffix) if told.path_suffix else m.spec.devices_path
                self._add(report, m.obj, Problem(
                    RULE_INFEASIBLE, path, f"claim {m.display} cannot be allocated{where}{note}: {told.message}",
                    details=request_details(told, wider[0] if wider is not None else nodes)))
        if not (group.is_workload and owner_linted):
            return
        if alone:
            for m in group.members:
                explained = alone.get(m.display)
                if explained is None:
                    continue
                if m.linted and m.display not in of_pod:
                    # Told where it is caused (the claim or template); the pod refers to it.
                    msg = (f"claim {m.display} cannot be allocated{where}{placed}: see the finding on "
                           f"{m.obj.manifest.display} ({location(m.obj)})")
                    details = {"see": m.obj.manifest.display}
                else:
                    msg = f"claim {m.display} cannot be allocated{where}{placed}: {explained.message}"
                    details = request_details(explained, nodes)
                self._add(report, group.owner, Problem(RULE_INFEASIBLE, m.ref_path or FieldPath(), msg, details=details))
        else:
            failures = sorted({v for v in outcome.failures.values() if v})
            extra = f" ({'; '.join(failures[:3])})" if failures else ""
            first = group.members[0].ref_path or FieldPath()
            why_text = explain_together(self.explainer, [m.spec for m in group.members], nodes)
            self._add(report, group.owner, Problem(
                RULE_INFEASIBLE, first.parent if first else first,
                f"{group.label} cannot get its devices{where}{placed}: {why_text}{extra}",
                details={"nodes_tried": len(nodes.nodes)}))

    def _everywhere(self, member: Member, nodes: NodeSet) -> tuple[NodeSet, Outcome] | None:
        """Every node, and how the claim alone fares on them, when the pod's placement keeps it from
        some; None when it does not, or when the wider search ends in an error or undecided."""
        if not nodes.refused:
            return None
        everywhere = self.node_set(Group(owner=member.obj, members=[member]))
        if len(everywhere.nodes) == len(nodes.nodes):
            return None
        single = self.decide_cached([member.spec], everywhere, Budget(200_000, self.deadline))
        return None if single.fatal is not None or single.undecided else (everywhere, single)

    def _report_replica(self, group: Group, count: int, last: Placed, linted: Callable[[Canonical], bool],
                        report: FeasibilityReport, where: str) -> None:
        """Replica ``count`` of the workload does not fit beside the ones before it."""
        if not linted(group.owner):
            return
        text = "; ".join(last.reasons) or "no node can run it beside the others"
        path = replicas_path(group.owner, group.spec_path) or group.spec_path or FieldPath()
        self._add(report, group.owner, Problem(
            RULE_INFEASIBLE, path,
            f"{group.label} asks for {group.replicas} pods, but only {count - 1} can get their devices at once{where} "
            f"(with the devices of the first {count - 1} taken, pod {count}: {text})",
            details={"replicas": group.replicas, "placed": count - 1}))

    def _report_beside(self, group: Group, placed: list[Placed], alone: list[Placed], holders: list[str],
                       linted: Callable[[Canonical], bool], report: FeasibilityReport) -> None:
        """``--together``: fits on its own, not beside the groups judged before it."""
        target = group.owner if linted(group.owner) else next((m.obj for m in group.members if m.linted), None)
        if target is None:
            return
        last = placed[-1]
        if last.outcome.fatal is not None:
            report_fatal(group, last.outcome.fatal, linted, report)
            return
        if last.outcome.undecided:
            self._report_undecided(group, last.outcome, linted, report)
            return
        reasons = last.reasons
        first = alone[0].outcome.node if alone else None
        fits_on = f"on {first.name}" if first is not None else "somewhere"
        shown = ", ".join(holders[:3]) + ("…" if len(holders) > 3 else "")
        if target is group.owner and group.is_workload:
            path = (group.spec_path or FieldPath()).child("resourceClaims")
        else:
            path = next(m.spec.devices_path for m in group.members if m.obj is target)
        self._add(report, target, Problem(
            RULE_INFEASIBLE, path,
            f"{group.label} does not fit beside the claims and pods judged before it (--together): on its own it "
            f"fits ({fits_on}), but with the devices of {shown} taken: {'; '.join(reasons)}",
            details={"together": True, "taken_by": holders[-20:]}))

    def _report_unjudged(self, groups: list[Group], linted: Callable[[Canonical], bool],
                         report: FeasibilityReport) -> None:
        """One warning, on the first claim or pod not judged, when the run's time budget is used up."""
        candidates = [g.owner if linted(g.owner) else next((m.obj for m in g.members if m.linted), None)
                      for g in groups]
        targets = [t for t in candidates if t is not None]
        if not targets:
            return
        total = len(targets)
        msg = (f"feasibility undecided: the time budget of {self.options.max_seconds:g} s (--max-seconds) was used up "
               f"before {total} claim(s) and pod(s) were judged, this one first; raise --max-seconds, or lint fewer "
               "claims against the cluster at once")
        report.problems.append((targets[0], Problem(RULE_UNDECIDED, FieldPath(), msg, details={"unjudged": total})))

    def pool_warnings(self, linted: Callable[[Canonical], bool], report: FeasibilityReport) -> None:
        """Warn once per linted slice of a pool that no node can allocate from (invalid or incomplete)."""
        warned: set[int] = set()
        for pool in self.world.unusable_pools():
            why = (f"resource pool {pool.label} is invalid: {pool.invalid}" if pool.invalid else
                   f"resource pool {pool.label} (generation {pool.generation}) is incomplete: its slices declare "
                   f"resourceSliceCount {pool.declared_count} but {len(pool.published)} are published")
            for s in pool.published:
                if id(s) not in warned and linted(s.obj):
                    warned.add(id(s))
                    report.problems.append((s.obj, Problem(
                        RULE_POOL, FieldPath(("spec", "pool")),
                        f"{why}; the scheduler allocates nothing from it", severity=Severity.WARNING)))


def _kept(exc: FatalError) -> FatalError:
    """The error without its traceback, to be kept in an outcome: the traceback holds the frames of
    the search and of ``decide``, whose outcome holds the error again, a cycle that only the
    collector frees (80,000 objects on the benchmark corpus, most of its young collections' work)."""
    return exc.with_traceback(None)


def is_traced(spec: ClaimSpec, names: frozenset[str]) -> bool:
    """Whether ``--trace`` names the claim (as ``namespace/name`` or ``name``)."""
    return spec.display in names or spec.display.split("/", 1)[1] in names


def _located(locate: Locate, obj: Canonical, problem: Problem) -> Problem:
    """``locate(obj, problem)``; ``problem`` as it is when that fails (the engine then works it out
    itself, and says what went wrong there: a finding is never lost for where it points)."""
    try:
        return locate(obj, problem)
    except Exception:  # noqa: BLE001 - see the docstring
        return problem
