"""What one node's search works with and ends with: candidate devices and the picks made of them,
the requests' data, the run's shared context and budget, and the ways a node's search fails.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping, NamedTuple

from .constraints import MatchAttribute
from .counters import CounterSets
from .model import AllocatedState, Alternative, Device, Slice
from .pools import Features, Pool
from .selection import DeviceClassInfo, Selection

DONE, FAIL, OVER = 1, 0, 2   # what a step of the search gives: a solution, none, past the claim's device limit


class NodeFailure(Exception):
    """This node cannot take the claims, with a reason the scheduler reports (not fatal)."""


def invalid_pools_failure(pools: list[Pool]) -> str:
    """What the allocator reports for a node where the search failed and some pool was invalid."""
    invalid = [p.label for p in pools if p.invalid]
    return "invalid resource pools were encountered: " + ", ".join(invalid) if invalid else ""


class BudgetExceeded(Exception):
    """The search ran past its step or time budget."""


# Records made per device picked and per device of a node's view: named tuples, which are
# made several times faster than frozen dataclasses and are as immutable.
class Candidate(NamedTuple):
    """A device with the slice and pool it is offered from."""

    device: Device
    slice: Slice
    pool: Pool


class Pick(NamedTuple):
    """One device in an allocation result."""

    request: str             # ``req`` or ``req/sub``
    alt: Alternative
    candidate: Candidate
    shared: bool
    consumed: Mapping | None

    @property
    def device(self) -> Device:
        return self.candidate.device


@dataclass
class RequestData:
    alt: Alternative
    cls: DeviceClassInfo
    num: int
    all_devices: list[Candidate] = field(default_factory=list)
    # Per device uid (of the node at least), the selectors' answer, looked up once per attempt; past
    # ``known``, ERROR (``Selection.answers_among``).
    answers: memoryview | dict[int, int] | None = None
    known: int = 0
    # What the search offers it, worked out on first use (``Attempt._candidates``).
    candidates: list[tuple[Device, Slice, Pool, bool, bool, bool]] | None = None
    # The claim's matchAttribute constraints on it, asked before a device is offered (``_candidates``).
    gates: tuple[MatchAttribute, ...] = ()
    # What the search reads of ``alt`` at every device it tries, worked out once per attempt.
    admin: bool = field(init=False)
    base: str = field(init=False)       # the request and subrequest names, as constraints name them
    sub: str = field(init=False)
    full_name: str = field(init=False)

    def __post_init__(self) -> None:
        alt = self.alt
        self.admin = alt.admin
        self.base, self.sub = alt.names
        self.full_name = alt.full_name

    def renewed(self) -> RequestData:
        """The same request for another attempt, with none of this one's answers: what
        ``RequestData(alt, cls, num)`` makes, without working out again what it reads of ``alt``
        (every node's attempt takes its claims' data over from their validation)."""
        new = object.__new__(RequestData)
        new.alt, new.cls, new.num, new.all_devices = self.alt, self.cls, self.num, []
        new.answers, new.known, new.candidates, new.gates = None, 0, None, ()
        new.admin, new.base, new.sub, new.full_name = self.admin, self.base, self.sub, self.full_name
        return new


# A device picked in the search, as its ``Pick`` is made of it once the search has found them all:
# (request, device, slice, pool, shared, consumed capacity).
Picked = tuple[RequestData, Device, Slice, Pool, bool, "Mapping | None"]


@dataclass
class Budget:
    """Steps and seconds shared by every node of one judgement."""

    max_steps: int
    deadline: float
    steps: int = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps or (self.steps & 1023 == 0 and time.monotonic() > self.deadline):
            raise BudgetExceeded()


@dataclass
class RunContext:
    """What every attempt of a run shares."""

    features: Features
    classes: Mapping[str, DeviceClassInfo]
    allocated: AllocatedState
    selection: Selection
    counter_cache: dict[tuple, CounterSets] = field(default_factory=dict)
    # Behaviour of the target release's allocator (Limits.all_pool_fails_node, shares_block_exclusive).
    all_pool_fails_node: bool = True
    shares_block_exclusive: bool = True
