"""The feasibility stage: can the linted claims and pods be allocated on the cluster's devices?"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..checks.base import Problem
from ..convert import Canonical
from ..findings import Severity
from ..index import Index
from ..paths import FieldPath
from ..releases import Release
from .explain import Explainer, Explanation, explain_together
from .fatal import FatalError
from .groups import Group, build_groups
from .model import ClaimSpec
from .nodes import NodeView, selector_matches
from .report import FeasibilityOptions, FeasibilityReport
from .search import Attempt, Budget, BudgetExceeded, NodeFailure, Pick
from .selection import Evaluator, cel_evaluator, cel_required_driver
from .world import World

RULE_INFEASIBLE = "DRA701"
RULE_POOL = "DRA708"
RULE_UNDECIDED = "DRA709"


@dataclass
class Outcome:
    """How one group fared: on which node it fits, why not, or what stopped the search."""

    node: NodeView | None = None
    picks: list[list[Pick]] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)   # node -> per-node failure ("" plain, "-" skipped)
    fatal: FatalError | None = None
    undecided: int = 0                                       # steps taken when the budget ran out


def judge(index: Index, release: Release, options: FeasibilityOptions, linted: Callable[[Canonical], bool],
          evaluate: Evaluator | None = None) -> FeasibilityReport:
    """Judge every linted claim and pod against the run's ResourceSlices.

    There is something to judge against when the run has a ResourceSlice or any cluster state
    (an object not from the linted files): a cluster without slices has no devices to give.

    ``evaluate`` replaces dralint's CEL (tests); by default selectors run in the scheduler's
    StoredExpressions environment of ``release``.
    """
    report = FeasibilityReport()
    if not index.slices and not _cluster_state(index, linted):
        return report
    world = World(index, release, evaluate or cel_evaluator(release), options.node,
                  None if evaluate else cel_required_driver(release))
    deadline = time.monotonic() + options.max_seconds
    _pool_warnings(world, linted, report)
    explainer = Explainer(world, deadline)
    groups = build_groups(index, linted)
    for n, group in enumerate(groups):
        if time.monotonic() > deadline:
            _report_unjudged(groups[n:], options, linted, report)
            break
        traced = [m.spec.display for m in group.members if _traced(m.spec, options.trace)]
        lines: list[str] | None = [] if traced else None
        budget = Budget(options.max_steps, deadline)
        outcome = decide(world, group, budget, lines.append if lines is not None else None)
        for name in traced:
            report.traces[name] = list(lines or []) + [_summary(outcome)]
        _report(explainer, group, outcome, options, linted, report)
    return report


def _report_unjudged(groups: list[Group], options: FeasibilityOptions, linted: Callable[[Canonical], bool],
                     report: FeasibilityReport) -> None:
    """One warning, on the first claim or pod not judged, when the run's time budget is used up."""
    targets = [g.owner if linted(g.owner) else next((m.spec.obj for m in g.members if m.linted), None) for g in groups]
    targets = [t for t in targets if t is not None]
    if not targets:
        return
    total = len(targets)
    msg = (f"feasibility undecided: the time budget of {options.max_seconds:g} s (--max-seconds) was used up before "
           f"{total} claim(s) and pod(s) were judged, this one first; raise --max-seconds, or lint fewer claims "
           "against the cluster at once")
    report.problems.append((targets[0], Problem(RULE_UNDECIDED, FieldPath(), msg, details={"unjudged": total})))


def _cluster_state(index: Index, linted: Callable[[Canonical], bool]) -> bool:
    objects = [*index.classes.values(), *index.claims.values(), *index.templates.values(), *index.workloads,
               *index.taint_rules]
    return bool(index.nodes) or any(not linted(o) for o in objects)


def _traced(spec: ClaimSpec, names: frozenset[str]) -> bool:
    return spec.display in names or spec.display.split("/", 1)[1] in names


def _nodes_for(world: World, group: Group) -> list[NodeView]:
    """Nodes the group may use: already-allocated claims of the pod pin it to their nodes."""
    nodes = world.nodes
    for claim in group.pinned:
        selector = claim.get("status", "allocation", "nodeSelector")
        if isinstance(selector, dict):
            nodes = [n for n in nodes if n.placeholder or selector_matches(selector, n)]
    return nodes


def decide(world: World, group: Group, budget: Budget, trace: Callable[[str], None] | None) -> Outcome:
    """Try the group's claims together on each node until one takes them."""
    claims = [m.spec for m in group.members]
    out = Outcome()
    try:
        # Node-independent input errors first, exactly as the allocator validates.
        Attempt(world.run, NodeView("<validation>"), [], claims, budget).validate()
    except FatalError as exc:
        out.fatal = exc
        return out
    nodes = _nodes_for(world, group)
    for i, node in enumerate(nodes):
        if time.monotonic() > budget.deadline:
            out.undecided = max(budget.steps, 1)
            return out
        if trace is None and not world.may_fit(claims, node):
            out.failures[node.name] = world.plain_failure(node)
            continue
        attempt = Attempt(world.run, node, world.pools(node), claims, budget, trace)
        try:
            if attempt.run_search():
                out.node, out.picks = node, attempt.results
                out.fatal = _errors_elsewhere(world, claims, nodes[i + 1:], budget)
                return out
            out.failures[node.name] = ""
        except NodeFailure as exc:
            out.failures[node.name] = str(exc)
        except FatalError as exc:
            out.fatal = exc
            return out
        except BudgetExceeded:
            out.undecided = budget.steps
            return out
    return out


def _errors_elsewhere(world: World, claims: list[ClaimSpec], rest: list[NodeView], budget: Budget) -> FatalError | None:
    """The scheduler filters every node: a selector failing on a device of a later node still
    aborts the pod. Only nodes where some selector fails on a visible device need a look."""
    suspects: set[str] = set()
    for claim in claims:
        for req in claim.requests:
            for alt in req.alternatives:
                reach = world.reach(claim, alt)
                if reach is not None:
                    suspects |= reach.error_nodes
    for node in rest:
        if node.name not in suspects:
            continue
        try:
            Attempt(world.run, node, world.pools(node), claims, budget).run_search()
        except FatalError as exc:
            return exc
        except (NodeFailure, BudgetExceeded):
            continue
    return None


def _summary(outcome: Outcome) -> str:
    if outcome.fatal is not None:
        return f"result: error: {outcome.fatal.message}"
    if outcome.undecided:
        return f"result: undecided after {outcome.undecided} steps"
    if outcome.node is not None:
        return f"result: allocated on {outcome.node.name}"
    return f"result: cannot be allocated on any of {len(outcome.failures)} nodes"


def _where(options: FeasibilityOptions) -> str:
    return f" on node {options.node}" if options.node else ""


def _report(explainer: Explainer, group: Group, outcome: Outcome, options: FeasibilityOptions,
            linted: Callable[[Canonical], bool], report: FeasibilityReport) -> None:
    world = explainer.world
    owner_linted = linted(group.owner)
    if outcome.fatal is not None:
        _report_fatal(group, outcome.fatal, linted, report)
        return
    if outcome.undecided:
        msg = (f"undecided after {outcome.undecided} steps: the allocator's search for {group.label} ran past its "
               "budget (raise --max-steps to search further)")
        target = group.owner if owner_linted else next((m.spec.obj for m in group.members if m.linted), None)
        if target is not None:
            report.problems.append((target, Problem(RULE_UNDECIDED, FieldPath(), msg)))
        return
    if outcome.node is not None:
        if options.show_allocation:
            report.allocations.extend(_allocations(group, outcome))
        return
    nodes = _nodes_for(world, group)
    alone = {}
    for m in group.members:
        if len(group.members) == 1:
            alone[m.spec.display] = explainer.claim(m.spec, nodes, outcome.failures)
        else:
            single = decide(world, Group(group.owner, [m], group.pinned), Budget(200_000, explainer.deadline), None)
            if single.node is None and single.fatal is None and not single.undecided:
                alone[m.spec.display] = explainer.claim(m.spec, nodes, single.failures)
    where = _where(options)
    for m in group.members:
        why = alone.get(m.spec.display)
        if why is not None and m.linted:
            path = m.spec.spec_path.child(*why.path_suffix) if why.path_suffix else m.spec.devices_path
            report.problems.append((m.spec.obj, Problem(
                RULE_INFEASIBLE, path, f"claim {m.spec.display} cannot be allocated{where}: {why.message}",
                details=_details(why, nodes))))
    if group.is_workload and owner_linted:
        if alone:
            for m in group.members:
                why = alone.get(m.spec.display)
                if why is not None:
                    report.problems.append((group.owner, Problem(
                        RULE_INFEASIBLE, m.ref_path or FieldPath(),
                        f"claim {m.spec.display} cannot be allocated{where}: {why.message}",
                        details=_details(why, nodes))))
        else:
            failures = sorted({v for v in outcome.failures.values() if v})
            extra = f" ({'; '.join(failures[:3])})" if failures else ""
            first = group.members[0].ref_path or FieldPath()
            why = explain_together([m.spec for m in group.members])
            report.problems.append((group.owner, Problem(
                RULE_INFEASIBLE, first.parent if first else first,
                f"{group.label} cannot get its devices{where}: {why}{extra}", details={"nodes_tried": len(nodes)})))


def _details(why: Explanation, nodes: list[NodeView]) -> dict[str, Any]:
    return {"nodes_tried": len(nodes), "requests": why.details}


def _report_fatal(group: Group, exc: FatalError, linted: Callable[[Canonical], bool],
                  report: FeasibilityReport) -> None:
    if exc.obj is not None and linted(exc.obj):
        if exc.compile_error:
            return  # the CEL check reports compile errors of linted objects
        report.problems.append((exc.obj, Problem(exc.rule, exc.path, exc.message)))
        return
    if exc.fallback is not None and linted(exc.fallback[0]):
        report.problems.append((exc.fallback[0], Problem(exc.rule, exc.fallback[1], exc.message)))
        return
    if linted(group.owner):
        member = next((m for m in group.members if exc.obj is m.spec.obj), None)
        path = member.ref_path if member is not None and member.ref_path is not None else FieldPath()
        report.problems.append((group.owner, Problem(exc.rule, path, exc.message)))


def _allocations(group: Group, outcome: Outcome) -> list[dict[str, Any]]:
    out = []
    assert outcome.node is not None
    for m, picks in zip(group.members, outcome.picks):
        devices: dict[str, list[str]] = {}
        for p in picks:
            devices.setdefault(p.request, []).append(p.device.label)
        entry: dict[str, Any] = {"claim": m.spec.display, "node": outcome.node.name, "devices": devices}
        if group.is_workload:
            entry["pod"] = group.label
        out.append(entry)
    return out


def _pool_warnings(world: World, linted: Callable[[Canonical], bool], report: FeasibilityReport) -> None:
    """Warn once per linted slice of a pool that no node can allocate from (invalid or incomplete)."""
    warned: set[int] = set()
    for node in world.nodes:
        for pool in world.pools(node):
            if pool.usable:
                continue
            why = (f"resource pool {pool.label} is invalid: {pool.invalid}" if pool.invalid else
                   f"resource pool {pool.label} (generation {pool.generation}) is incomplete: its slices declare "
                   f"resourceSliceCount {pool.declared_count} but {len(pool.published)} are published")
            for s in pool.published:
                if id(s) not in warned and linted(s.obj):
                    warned.add(id(s))
                    report.problems.append((s.obj, Problem(
                        RULE_POOL, FieldPath(("spec", "pool")),
                        f"{why}; the scheduler allocates nothing from it", severity=Severity.WARNING)))
