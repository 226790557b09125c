"""Judging shared by processes (``-j``, parallel.py): which objects each process judges, and how
the main process takes the others' findings."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..catalog import load_catalog
from ..findings import Finding
from ..options import Options
from ..rule_filter import RuleFilter
from ..shared_counter import Counter, taken
from ..source import SourceFile
from .emit import Emitter
from .objects import Target, Work, judge_one, read_targets, run_manifests

# Objects are taken by the processes of a split in runs of this many neighbours: balanced, and
# each process's objects stay together in its memory.
_SHARE_RUN = 64


@dataclass(frozen=True)
class Split:
    """Judging shared by processes that each hold every parsed file (``-j``; see parallel.py).

    The objects are judged in runs of neighbours, against the index of all of them; each process
    takes the next run from the shared ``counter`` until none is left, so that a process with
    other work (the main process building the feasibility stage's fleet view) or less of the
    machine takes fewer. ``theirs()`` gives the findings of the other processes and the runs they
    judged; the runs that none delivered are judged here, so the result never depends on the others.
    """

    counter: Counter
    theirs: Callable[[], tuple[list[Finding], frozenset[int]]]


def judge_share(files: Sequence[SourceFile], options: Options, counter: Counter, *,
                cluster_files: Sequence[SourceFile] = (),
                old_files: Sequence[SourceFile] = ()) -> tuple[list[Finding], list[int]]:
    """The findings of the runs of objects this process takes from ``counter`` (what :func:`lint_files`
    with a :class:`Split` of the same files leaves to other processes), and those runs."""
    catalog = load_catalog()
    rules = RuleFilter.build(catalog, options.select, options.ignore, options.severities)
    scratch = Emitter(catalog, rules)  # reading and serving problems are the main process's to report
    linted, cluster, olds = run_manifests(files, cluster_files, old_files, scratch, None)
    targets, work = read_targets(scratch, linted, olds, cluster, options, None, "")
    emitter = Emitter(catalog, rules)
    runs = _judge_taken(emitter, targets, work, counter)
    if options.fixes:  # the objects the fixers work on are here: the main process gets the fixes made
        from .. import fixers
        return fixers.attach(emitter.findings, emitter.subjects, files, options.release, catalog), runs
    return emitter.findings, runs


def judge_split(emitter: Emitter, targets: list[Target], work: Work, split: Split,
                meanwhile: Callable[[], None] | None = None) -> None:
    """Run ``meanwhile`` (work of this process alone), judge the runs this process takes, take the
    others' findings, and judge the runs none of them delivered."""
    if meanwhile is not None:
        meanwhile()
    mine = _judge_taken(emitter, targets, work, split.counter)
    findings, delivered = split.theirs()
    for finding in findings:
        emitter.add(finding)
    done = set(mine) | delivered
    for run in range(_runs(targets)):
        if run not in done:
            _judge_run(emitter, targets, work, run)


def runs_left(split: Split, targets: list[Target]) -> Callable[[], bool]:
    """Whether some run of ``targets`` is still to be taken by the processes of ``split`` (then they
    all have objects to judge for a while yet)."""
    runs = _runs(targets)
    return lambda: split.counter.value < runs


def _runs(targets: list[Target]) -> int:
    return -(-len(targets) // _SHARE_RUN)


def _judge_taken(emitter: Emitter, targets: list[Target], work: Work, counter: Counter) -> list[int]:
    """Judge the next run of objects not yet taken, until none is left; the runs judged."""
    judged: list[int] = []
    for run in taken(counter, _runs(targets)):
        _judge_run(emitter, targets, work, run)
        judged.append(run)
    return judged


def _judge_run(emitter: Emitter, targets: list[Target], work: Work, run: int) -> None:
    for target in targets[run * _SHARE_RUN:(run + 1) * _SHARE_RUN]:
        judge_one(emitter, target, work)
