"""The feasibility stage: can the linted claims and pods be allocated on the cluster's devices?

The stage's door: the fleet view is taken from the caller or built for the run, ``--node`` is
checked against it, and the groups are judged (judgement.py); a ``--trace`` name that matches no
claim is said too.
"""
from __future__ import annotations

import gc
import math
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator


from ..convert import Canonical
from ..fuzzy import closest
from ..index import Index
from ..kube.releases import Release
from ..rule_filter import UsageError
from .ahead import Ahead
from .fleet import Fleet
from .groups import Group, build_groups
from .judgement import Judge, Locate, is_traced
from .model import claim_selectors
from .report import FeasibilityOptions, FeasibilityReport
from .selection import Evaluator, cel_evaluator, cel_required_driver
from .world import World


@dataclass(frozen=True)
class Prepared:
    """A run's fleet view built before the stage (:func:`prepare`), for :func:`judge` of that very index."""

    index: Index
    release: Release
    node: str | None
    world: World


def prepare(index: Index, release: Release, node: str | None) -> Prepared:
    """The fleet view :func:`judge` would build for ``index``, built now and warmed: the nodes' entries
    and the answers of every selector its classes and claims write. A run with ``-j`` builds it
    while its other processes still judge objects on their own, instead of after them with those
    processes done; and the processes the stage forks share what is worked out here, where each
    would otherwise work it out again."""
    with _Collection():
        world = World.from_index(index, release, cel_evaluator(release), node, cel_required_driver(release))
        world.warm()
        world.warm_selectors(_selectors(index, world))
    return Prepared(index, release, node, world)


def _selectors(index: Index, world: World) -> Iterator[str]:
    """The selector expressions of the index's classes, then of its claims' and templates' requests."""
    for info in world.classes.values():
        yield from (e for e in info.selectors if e is not None)
    for obj in index.every("ResourceClaim") + index.every("ResourceClaimTemplate"):
        yield from claim_selectors(obj)


def judge(index: Index, release: Release, options: FeasibilityOptions, linted: Callable[[Canonical], bool],
          evaluate: Evaluator | None = None, *, fleet: Fleet | None = None,
          exhaustive: bool = False, candidates: Iterable[Canonical] | None = None,
          prepared: Prepared | None = None, ahead: Ahead | None = None,
          locate: Locate | None = None) -> FeasibilityReport:
    """Judge every linted claim and pod against the run's ResourceSlices.

    There is something to judge against when the run has a ResourceSlice or any cluster state
    (an object not from the linted files): a cluster without slices has no devices to give.

    ``evaluate`` replaces dralint's CEL (tests); by default selectors run in the scheduler's
    StoredExpressions environment of ``release``. ``fleet``: a view of the cluster kept elsewhere
    (the webhook's); else one is built from ``index``. ``exhaustive`` searches every node without
    the fleet's shortcuts (the property tests compare both). ``candidates``: the only objects that
    may be linted, when the caller knows them (a review against a kept cluster state).
    ``prepared``: the view :func:`prepare` built, used when it was built for this very index, release
    and ``--node`` with dralint's CEL. ``ahead``: the judgements started on that view (ahead.py), used
    where they stand; the caller stops what is left of them. ``locate``: gives a problem its place in
    its file, in the process that judged it (see ``Judge.alone``).
    """
    report = FeasibilityReport()
    if fleet is not None:
        _judge_with(fleet.world, index, options, linted, exhaustive, report, candidates, None, locate)
        return report
    if not index.slices and not _cluster_state(index, linted):
        return report
    with _Collection():
        if (prepared is not None and evaluate is None and prepared.index is index and prepared.release is release
                and prepared.node == options.node):
            world = prepared.world
        else:
            world = World.from_index(index, release, evaluate or cel_evaluator(release), options.node,
                                     None if evaluate else cel_required_driver(release))
        _check_node(world, options.node)
        _judge_with(world, index, options, linted, exhaustive, report, candidates, ahead, locate)
    return report


def _judge_with(world: World, index: Index, options: FeasibilityOptions, linted: Callable[[Canonical], bool],
                exhaustive: bool, report: FeasibilityReport, candidates: Iterable[Canonical] | None,
                ahead: Ahead | None, locate: Locate | None) -> None:
    if ahead is not None and not exhaustive and candidates is None and ahead.serves(world, index, options):
        run = ahead.run
    else:
        ahead = None
        deadline = math.inf if options.max_seconds is None else time.monotonic() + options.max_seconds
        run = Judge(world, options, deadline, exhaustive, locate)
    run.pool_warnings(linted, report)
    groups = build_groups(index, linted, candidates)
    if ahead is None:
        run.judge_groups(groups, linted, report, lambda: _objects(index, groups))
    else:
        by_id = _objects(index, groups)
        run.judge_groups(groups, linted, report, lambda: by_id, done=ahead.take(groups, linted, by_id))
    _missing_traces(groups, options.trace, report)


def _objects(index: Index, groups: list[Group]) -> dict[int, Canonical]:
    """Every object a finding of the groups may be about, by id."""
    out = {id(obj): obj for obj in index.all_objects()}
    for group in groups:
        out[id(group.owner)] = group.owner
        out.update((id(m.obj), m.obj) for m in group.members)
    return out


class _Collection:
    """The collector during the stage, left as the caller had it (the language server and the
    webhook judge in long-lived processes).

    Building the fleet view makes about a million small containers that live as long as the view,
    and no garbage: the collector's young passes over them found nothing and took 0.15-0.25 s on the
    benchmark corpus. Judging makes next to no garbage either (317 objects in cycles on the
    benchmark corpus and on the 17 MiB file), while its young passes over what it keeps (the claims
    read, the caches) took 0.08 s. So the collector is off during the stage; at its end everything
    made is set aside (``gc.freeze``) into the old generation, where no young collection goes over
    it again. A caller that keeps objects frozen itself (the webhook's workers) keeps them so: the
    stage does not freeze, since thawing its own objects at the end would thaw the caller's too."""

    def __enter__(self) -> "_Collection":
        self._enabled = gc.isenabled()
        self._freezing = gc.get_freeze_count() == 0
        gc.disable()
        return self

    def __exit__(self, *_: object) -> None:
        if self._freezing:
            # What was made with the collector off joins the old generation, not the young one,
            # where the next young collection would go over all of it at once.
            gc.freeze()
            gc.unfreeze()
        if self._enabled:
            gc.enable()


class UnknownNode(UsageError):
    """``--node`` names a node the cluster state does not have."""


def _check_node(world: World, node: str | None) -> None:
    """When the cluster state lists its nodes (Node objects), ``--node`` must be one of them."""
    if not node or not world.has_node_objects():
        return
    known = world.known_node_names()
    if node in known:
        return
    close = closest(node, known)
    hint = f"; did you mean {close}?" if close is not None else ""
    if node in world.absent_devices()[1]:
        hint = f" (slices name it, but it has no Node object: the scheduler never places a pod there){hint}"
    shown = ", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
    raise UnknownNode(f"--node: the cluster state has no node {node!r}{hint} (its nodes: {shown})")


def _missing_traces(groups: list[Group], names: frozenset[str], report: FeasibilityReport) -> None:
    """A ``--trace`` name that matches no claim of the run gets a trace saying so."""
    for name in sorted(names):
        if any(name in report.traces or is_traced(m.spec, frozenset({name})) for g in groups for m in g.members):
            continue
        judged = sorted({m.display for g in groups for m in g.members})
        shown = ", ".join(judged[:10]) + ("…" if len(judged) > 10 else "")
        report.traces[name] = [f"no claim {name!r} is judged in this run" +
                               (f" (claims judged: {shown})" if judged else " (it judges no claims)")]


def _cluster_state(index: Index, linted: Callable[[Canonical], bool]) -> bool:
    objects = [*index.classes.values(), *index.claims.values(), *index.templates.values(), *index.workloads,
               *index.taint_rules]
    return bool(index.nodes) or any(not linted(o) for o in objects)
