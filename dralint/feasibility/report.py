"""The records between ``judge`` and the engine: options in, problems, allocations and traces out."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..problems import Problem
from ..convert import Canonical


@dataclass(frozen=True)
class FeasibilityOptions:
    node: str | None = None               # --node: judge only this node
    trace: frozenset[str] = frozenset()   # --trace CLAIM: claims (ns/name or name) whose search trace to return
    show_allocation: bool = False
    max_steps: int = 1_000_000            # search budget per claim or pod; past it: "undecided after N steps"
    max_seconds: float | None = None      # wall-clock budget of the whole run; None: steps alone bound it
    together: bool = False                # --together: the run's claims and pods one beside the other
    processes: int = 1                    # judge many groups in up to this many processes (fork)


@dataclass
class FeasibilityReport:
    problems: list[tuple[Canonical, Problem]] = field(default_factory=list)
    allocations: list[dict[str, Any]] = field(default_factory=list)   # --show-allocation, JSON-ready
    traces: dict[str, list[str]] = field(default_factory=dict)        # claim -> search trace lines


def encode(one: FeasibilityReport | None) -> tuple | None:
    """A group's report as another process sends it: the objects it is about by id (the processes
    share them, forked from one)."""
    if one is None:
        return None
    return ([(id(obj), problem) for obj, problem in one.problems], one.allocations, one.traces)


def decode(value: tuple | None, by_id: dict[int, Canonical]) -> FeasibilityReport | None:
    """``encode`` undone; KeyError for an object this process does not know."""
    if value is None:
        return None
    problems, allocations, traces = value
    return FeasibilityReport([(by_id[key], problem) for key, problem in problems], allocations, traces)
