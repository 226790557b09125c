"""Claims judged ahead: a ``-j`` run's feasibility processes start on the fleet view as soon as it is
built, while the main process still checks objects.

What the stage judges depends on those checks: an object with an error is not judged, and what is
linted decides how the groups are formed and whom a finding is about. So the groups are judged
ahead as if no object had an error; each judgement notes every "is this object linted?" it
asked, with the answer it got. When the stage runs, a group formed exactly as ahead (the same
owner, members and flags) takes the judgement made ahead if every answer noted is still the
answer; any other group is judged then. The findings are the same as judging everything after the
checks: only when they are ready changes.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Collection

from ..convert import Canonical
from ..index import Index
from .counts import FilterKey
from .groups import Group, build_groups
from .model import Alternative
from . import judgement
from .judgement import Judge, Locate
from .report import FeasibilityOptions, FeasibilityReport, decode, encode
from .shards import Shards
from .world import World

_Judged = tuple[FeasibilityReport | None, dict[int, bool]]   # a group's report, the "linted?" answers it asked


@dataclass
class Ahead:
    """The groups of one index being judged ahead, against one fleet view, with one set of options."""

    world: World
    index: Index
    options: FeasibilityOptions
    run: Judge
    groups: list[Group]
    linted_ids: Collection[int]          # the objects taken as linted ahead, by id
    shards: Shards[_Judged] | None = field(default=None, repr=False)

    def serves(self, world: World, index: Index, options: FeasibilityOptions) -> bool:
        """Whether judgements made ahead may stand in a stage judging ``index`` with ``options``."""
        return self.shards is not None and world is self.world and index is self.index and options == self.options

    def take(self, groups: list[Group], linted: Callable[[Canonical], bool],
             by_id: dict[int, Canonical]) -> dict[int, FeasibilityReport | None]:
        """The judgements made ahead that stand for ``groups`` (the stage's, formed with ``linted``),
        by position in ``groups``. This process joins in judging the groups still wanted; the
        children skip those no longer wanted, and are done when this returns."""
        if self.shards is None:
            return {}
        ahead = {_key(g): i for i, g in enumerate(self.groups)}
        positions: dict[int, int] = {}
        for pos, group in enumerate(groups):
            i = ahead.get(_key(group))
            if i is not None:
                positions.setdefault(i, pos)
        shards, self.shards = self.shards, None
        judged = shards.finish(positions, lambda value: (decode(value[0], by_id), value[1]))
        return {positions[i]: one for i, (one, asked) in judged.items()
                if all(key in by_id and linted(by_id[key]) == answer for key, answer in asked.items())}

    def cancel(self) -> None:
        """Stop judging ahead (the stage does not run, or cannot use it)."""
        if self.shards is not None:
            self.shards.cancel()
            self.shards = None

    def _judge(self, i: int) -> _Judged:
        asked: dict[int, bool] = {}

        def linted(obj: Canonical) -> bool:
            answer = id(obj) in self.linted_ids
            asked[id(obj)] = answer
            return answer

        return self.run.alone(self.groups[i], linted), asked


def judge_ahead(world: World, index: Index, options: FeasibilityOptions, linted_ids: Collection[int],
                busy: Callable[[], bool] = lambda: False, locate: Locate | None = None) -> Ahead | None:
    """Start judging ``index``'s groups in ``options.processes - 1`` forked processes, taking the objects
    of ``linted_ids`` as linted; None when the stage would judge in one process, or when a verdict
    could depend on when it is made (``--max-seconds``) or on the other groups (``--together``).

    While ``busy()`` (the other processes of the run still have objects to check), this process first
    does the work every judging process would do for itself: see :func:`share_first`. ``locate``: as
    for ``judge``."""
    if options.processes <= 1 or options.together or options.max_seconds is not None:
        return None
    ids = frozenset(linted_ids)
    groups = build_groups(index, lambda obj: id(obj) in ids)
    if len(groups) < 2 * judgement.MIN_GROUPS_PER_PROCESS:   # the stage's own rule for forking
        return None
    share_first(world, groups, busy)
    ahead = Ahead(world, index, options, Judge(world, options, math.inf, locate=locate), groups, ids)
    ahead.shards = Shards.start(len(groups), ahead._judge, options.processes - 1, _encode)
    return ahead


# Groups read between two looks at whether the other processes still check objects (a look takes a lock).
_READ_BETWEEN_LOOKS = 64


def share_first(world: World, groups: list[Group], busy: Callable[[], bool]) -> None:
    """Before forking, while ``busy()``: read the groups' claims, then count the filters that more
    than one group asks, the most asked first, so that the processes forked next share them.

    Each forked process counts the filters of the groups it judges; a filter asked by groups that
    different processes judge was counted in each (on the benchmark corpus 1,478 of 3,247, a tenth of
    the stage's work). Done here, they are counted once. Only while the run's other processes still
    have objects to check: the processes forked next start later, but the machine is busy with those
    checks meanwhile, and no core waits for this one.
    """
    for start in range(0, len(groups), _READ_BETWEEN_LOOKS):
        if not busy():
            return
        for group in groups[start:start + _READ_BETWEEN_LOOKS]:
            for member in group.members:
                member.spec    # noqa: B018 - read now (cached on the member), once for every process
    asked: Counter[FilterKey] = Counter()
    first: dict[FilterKey, Alternative] = {}
    for group in groups:
        keys: dict[FilterKey, Alternative] = {}
        for member in group.members:
            for request in member.spec.requests:
                for alt in request.alternatives:
                    key = world.counts.key(alt)
                    if key is not None:
                        keys.setdefault(key, alt)
        asked.update(keys.keys())
        for key, alt in keys.items():
            first.setdefault(key, alt)
    for key, uses in asked.most_common():
        if uses < 2 or not busy():
            return
        world.counts.get(first[key])


def _encode(judged: _Judged) -> tuple[Any, dict[int, bool]]:
    return encode(judged[0]), judged[1]


def _key(group: Group) -> tuple:
    """What makes two groups of one index the same question: their owner and its pod spec, their
    members as formed (claim, name, reference, linted, shared), their allocated claims, their replicas."""
    return (id(group.owner), group.spec_path, group.replicas, tuple(id(p) for p in group.pinned),
            tuple((id(m.obj), m.display, m.ref_path, m.linted, m.shared) for m in group.members))
