"""A DaemonSet is one pod per eligible node, judged node by node.

The DaemonSet controller creates a pod for every node its template may run on, pinned there by a
required ``metadata.name`` node affinity term; the scheduler then allocates that pod's claims on
that node or leaves the pod Pending. Judged as one pod that may land anywhere, a GPU monitor
without a nodeSelector passes though its pod on every GPU-less node never starts.

Eligibility is the controller's (``NodeShouldRunDaemonPod``): the template's nodeName,
nodeSelector and required node affinity, and its tolerations with the controller's defaults
(``AddOrUpdateDaemonPodTolerations``) against the node's NoSchedule/NoExecute taints. The defaults
tolerate ``node.kubernetes.io/unschedulable``, so a cordoned node still runs its DaemonSet pod.

This needs the cluster's node list (Node objects given, or the webhook's watch); without it the
DaemonSet is judged as one pod, as any other workload (the nodes slices name say nothing about
labels or taints, so which of them the DaemonSet reaches is unknown).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Protocol

import numpy as np

from ..problems import Problem
from ..convert import Canonical
from ..paths import FieldPath
from .explain import Explainer, explain_together
from .groups import Group, Member
from .model import ClaimSpec, DeviceKey, Toleration
from .nodes import NodeSet, NodeView, selector_matches
from .outcome import Outcome, node_local, on_node, taken
from .placement import Placement
from .report import FeasibilityOptions, FeasibilityReport
from .picks import Budget

if TYPE_CHECKING:
    from .world import World

RULE = "DRA710"
SHOWN = 3          # failing nodes named (and explained) in the message; the rest are counted
LISTED = 20        # failing node names in the finding's details

_NO_SCHEDULE = ("disk-pressure", "memory-pressure", "pid-pressure", "unschedulable")
DEFAULT_TOLERATIONS = (
    Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
    Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute"),
    *(Toleration(f"node.kubernetes.io/{key}", "Exists", "", "NoSchedule") for key in _NO_SCHEDULE),
)
# Added only to pods on the host network (the controller's own condition).
HOST_NETWORK_TOLERATION = Toleration("node.kubernetes.io/network-unavailable", "Exists", "", "NoSchedule")


class Judgement(Protocol):
    """What the per-node run asks of the judgement it is part of (``judgement.Judge``)."""

    world: World
    options: FeasibilityOptions
    deadline: float
    explainer: Explainer

    def decide_cached(self, claims: list[ClaimSpec], nodes: NodeSet, budget: Budget) -> Outcome: ...


@dataclass
class DaemonRun:
    """How the DaemonSet's pods fared: on how many nodes it runs a pod, the nodes where the pod
    cannot get its devices (the first ``SHOWN`` with the reason), and the outcome that stopped the
    judgement (an error or an exhausted budget), if any."""

    eligible: int = 0
    failing: list[NodeView] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    stopped: Outcome | None = None
    placed: list[tuple[tuple[Member, ...], Outcome]] = field(default_factory=list)   # the pods that run

    def fail(self, node: NodeView, reason: Callable[[], str]) -> None:
        """``node``'s pod cannot run; ``reason`` is worked out only for the nodes the message names."""
        self.failing.append(node)
        if len(self.reasons) < SHOWN:
            self.reasons.append(reason())


def per_node(group: Group, nodes_known: bool) -> bool:
    """Whether ``group`` is a DaemonSet's pod to judge node by node (the node list is known)."""
    return nodes_known and group.is_workload and group.owner.manifest.kind == "DaemonSet"


def daemon_placement(group: Group) -> Placement:
    """The template's placement with the tolerations the DaemonSet controller adds to its pods."""
    spec = group.owner.get(*(group.spec_path or ()), default={})
    host_network = isinstance(spec, dict) and spec.get("hostNetwork") is True
    extra = DEFAULT_TOLERATIONS + ((HOST_NETWORK_TOLERATION,) if host_network else ())
    return replace(group.placement, tolerations=group.placement.tolerations + extra)


def eligible_nodes(group: Group, nodes: list[NodeView]) -> list[NodeView]:
    """The nodes the DaemonSet controller gives a pod of ``group`` (nodes without a Node object are
    not nodes of the cluster)."""
    placement = daemon_placement(group)
    return [n for n in nodes if n.known and not placement.refuses(n)]


def run_daemonset(judge: Judgement, group: Group) -> DaemonRun:
    """Each eligible node's pod in node order, beside the pods before it: devices they took that
    other nodes reach stay taken (network-attached devices), and claims the pods share
    (``resourceClaimName``) stay where the first pod got them."""
    world = judge.world
    eligible = eligible_nodes(group, world.node_list())
    out = DaemonRun(eligible=len(eligible))
    held: list[tuple[set[DeviceKey], dict]] = []
    pins: list[tuple[str, Callable[[NodeView], bool]]] = []
    allocated = [c.get("status", "allocation", "nodeSelector") for c in group.pinned]
    first = True
    try:
        for node in eligible:
            members = tuple(group.members if first else [m for m in group.members if not m.shared])
            if any(isinstance(s, dict) and not selector_matches(s, node) for s in allocated):
                out.fail(node, lambda: "its allocated claims' devices are on other nodes")
                continue
            pinned = next((why for why, admits in pins if not admits(node)), "")
            if pinned:
                out.fail(node, lambda: pinned)
                continue
            nodes = one_node(judge, node)
            outcome = judge.decide_cached([m.spec for m in members], nodes,
                                          Budget(judge.options.max_steps, judge.deadline))
            if outcome.fatal is not None or outcome.undecided:
                out.stopped = outcome
                return out
            if outcome.node is None:
                # Explained now, while the devices the pods before it took are still taken.
                out.fail(node, lambda: node_reason(judge, nodes, outcome, members))
                continue
            out.placed.append((members, outcome))
            if first:
                pins = _shared_pins(members, outcome)
                first = False
            holding = taken(outcome, leave_out=node_local)  # what a pod on another node could take too
            if holding[0] or holding[1]:
                world.hold(*holding)
                held.append(holding)
    finally:
        for dedicated, shares in reversed(held):
            world.release(dedicated, shares)
    return out


def one_node(judge: Judgement, node: NodeView) -> NodeSet:
    """The node set of a pod pinned to ``node``."""
    world = judge.world
    slots = np.array([world.slot_of(node)], np.int64)
    return NodeSet([node], slots, world.unusable_slots()[slots], ("daemonset", node.name, len(world.node_log)),
                   Counter())


def _shared_pins(members: tuple[Member, ...], outcome: Outcome) -> list[tuple[str, Callable[[NodeView], bool]]]:
    """A shared claim the first pod got with node-local devices keeps every other pod off other nodes."""
    assert outcome.node is not None
    where = outcome.node.name
    pins: list[tuple[str, Callable[[NodeView], bool]]] = []
    for m, picks in zip(members, outcome.picks):
        if m.shared and any(node_local(p) for p in picks):
            pins.append((f"its shared claim {m.display} was allocated on {where}", on_node(where)))
    return pins


def node_reason(judge: Judgement, nodes: NodeSet, outcome: Outcome, members: tuple[Member, ...]) -> str:
    """Why the pod cannot get its devices on ``nodes`` (its one node): the narrowest reason per claim."""
    parts = []
    for m in members:
        single = outcome if len(members) == 1 else judge.decide_cached([m.spec], nodes, Budget(200_000, judge.deadline))
        if single.node is None and single.fatal is None and not single.undecided:
            parts.append(f"claim {m.display}: {judge.explainer.claim(m.spec, nodes, single.failures).message}")
    return "; ".join(parts) or explain_together(judge.explainer, [m.spec for m in members], nodes)


def report_daemonset(group: Group, run: DaemonRun, linted: Callable[[Canonical], bool],
                     report: FeasibilityReport) -> None:
    """One error on the DaemonSet naming the eligible nodes where its pod cannot run, with the
    reason on the first few."""
    if not run.failing or not linted(group.owner):
        return
    shown = run.failing[:SHOWN]
    by_reason: dict[str, list[str]] = defaultdict(list)
    for node, why in zip(shown, run.reasons):
        by_reason[why].append(node.name)
    names = ", ".join(n.name for n in shown)
    more = len(run.failing) - len(shown)
    if more:
        names += f" and {more} more"
    reasons = "; ".join(f"on {_and(nodes)}: {why}" for why, nodes in by_reason.items())
    plural = "s" if run.eligible != 1 else ""
    which = "it" if run.eligible == 1 else "all of them" if run.eligible == len(run.failing) else \
        f"{len(run.failing)} of them"
    msg = (f"{group.label} runs a pod on {run.eligible} node{plural}, and on {which} the pod cannot get its devices "
           f"and stays Pending: {names} ({reasons})")
    first = group.members[0].ref_path if group.members else None
    path = first.parent if first else (group.spec_path or FieldPath())
    report.problems.append((group.owner, Problem(RULE, path, msg, details={
        "eligible_nodes": run.eligible, "failing_nodes": len(run.failing),
        "nodes": [n.name for n in run.failing[:LISTED]]})))


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
