"""How a pod (or lone claim) fared in the search, and what its replicas share.

The records the judgement passes between deciding, explaining and reporting, kept apart from the
judgement itself so that the explainer and the DaemonSet's per-node run read them without it.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .fatal import FatalError
from .groups import Group, Member
from .nodes import NodeSet, NodeView, node_matches, selector_key
from .model import ClaimSpec, DeviceKey
from .picks import Pick

if TYPE_CHECKING:
    from .world import World


@dataclass(frozen=True)
class Searched:
    """A search that found no node for its claims, as an explanation may ask it again: the claims (as
    their shapes), the nodes (their key), the fleet's state then, and the steps it took on every node
    it searched."""

    shapes: tuple
    nodes: Any
    state: tuple
    steps: int

    @classmethod
    def of(cls, claims: list[ClaimSpec], nodes: NodeSet, world: World, steps: int) -> Searched:
        """The record of a search of ``claims`` on ``nodes`` that took ``steps`` and found no node."""
        return cls(tuple(c.shape for c in claims), nodes.key, fleet_state(world), steps)

    def asks(self, claims: list[ClaimSpec], nodes: NodeSet, world: World) -> bool:
        """Whether searching ``claims`` on ``nodes`` now is this search's question again."""
        return (len(claims) == len(self.shapes) and all(c.shape is not None and c.shape == s
                                                        for c, s in zip(claims, self.shapes))
                and nodes.key == self.nodes and fleet_state(world) == self.state)


def fleet_state(world: World) -> tuple:
    """What changes the fleet's answers between judgements: nodes and classes changed, devices held."""
    return len(world.node_log), world.held_token, len(world.class_log)


@dataclass
class Outcome:
    """How one pod (or lone claim) fared: on which node it fits, why not, or what stopped the search."""

    node: NodeView | None = None
    picks: list[list[Pick]] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)   # node -> per-node failure, non-empty ones, node order
    tried: int = 0                                           # nodes the pod may run on
    refused: Counter = field(default_factory=Counter)        # why the other nodes cannot run it
    fatal: FatalError | None = None
    undecided: int = 0                                       # steps taken when the budget ran out
    # When no node took the claims and the search was the plain one (no trace, not --exhaustive):
    # what it asked and how long it took, for an explanation that would ask it again.
    searched: Searched | None = None


@dataclass(frozen=True)
class Placed:
    """One replica of a group: the claims it was judged with, and how it fared (with the reasons,
    worked out while the replicas before it held their devices, when it does not fit beside them)."""

    members: list[Member]
    outcome: Outcome
    reasons: tuple[str, ...] = ()


def fits(group: Group, placed: list[Placed]) -> bool:
    """Every replica got its devices."""
    return len(placed) == group.replicas and all(
        p.outcome.node is not None and p.outcome.fatal is None and not p.outcome.undecided for p in placed)


def shared_pins(members: list[Member], outcome: Outcome) -> list[tuple[str, Callable[[NodeView], bool]]]:
    """Later replicas use the claims named directly as the first one allocated them: on its node
    when a device is node-local, else where the devices' node selectors reach."""
    pins: list[tuple[str, Callable[[NodeView], bool]]] = []
    for m, picks in zip(members, outcome.picks):
        if not m.shared or not picks or outcome.node is None:
            continue
        node = outcome.node.name
        local = False
        selectors = []
        for p in picks:
            if node_local(p):
                local = True
                continue
            s, d = p.candidate.slice, p.device
            selector = d.node_selector if s.per_device else s.node_selector
            if selector is not None:
                selectors.append(selector)
        if local:
            pins.append((f"{m.display}@{node}", on_node(node)))
        elif selectors:
            key = "|".join(sorted(selector_key(s) for s in selectors))
            pins.append((f"{m.display}@{key}", _within(tuple(selectors))))
    return pins


def node_local(pick: Pick) -> bool:
    """Whether the picked device is on one node only (its slice's or its own node name, or bound to a node)."""
    s, d = pick.candidate.slice, pick.device
    return bool((d.node_name if s.per_device else s.node_name) or d.binds_to_node)


def taken(outcome: Outcome, leave_out: Callable[[Pick], bool] | None = None) -> tuple[set[DeviceKey], dict]:
    """What the outcome's picks hold: devices taken whole, and shared ones with the capacity each
    share consumes, summed. Admin access holds nothing; ``leave_out`` drops further picks."""
    dedicated: set[DeviceKey] = set()
    shares: dict = {}
    for picks in outcome.picks:
        for p in picks:
            if p.alt.admin or (leave_out is not None and leave_out(p)):
                continue
            if p.shared:
                agg = shares.setdefault(p.device.key, {})
                for name, q in (p.consumed or {}).items():
                    agg[name] = agg.get(name, 0) + q
            else:
                dedicated.add(p.device.key)
    return dedicated, shares


def on_node(name: str) -> Callable[[NodeView], bool]:
    """A pin admitting the node named ``name`` only."""
    return lambda n: n.name == name


def _within(selectors: tuple[dict, ...]) -> Callable[[NodeView], bool]:
    """A pin admitting the nodes every one of ``selectors`` (devices' node selectors) matches."""
    return lambda n: all(node_matches(n, "", False, s) for s in selectors)
