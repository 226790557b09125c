"""Judging shared by processes (``-j``, parallel.py): which objects each process judges, and how
the main process takes the others' findings."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Sequence

from ..catalog import load_catalog
from ..findings import Finding
from ..options import Options
from ..rule_filter import RuleFilter
from ..source import SourceFile
from .emit import Emitter
from .objects import Target, Work, judge_one, read_targets, run_manifests

# Objects are dealt to the processes of a split in runs of this many neighbours: balanced, and
# each process's objects stay together in its memory.
_SHARE_RUN = 64


@dataclass(frozen=True)
class Split:
    """Judging shared by processes that each hold every parsed file (``-j``; see parallel.py).

    Process ``rank`` of ``size`` judges runs of objects dealt round, against the index of all
    of them; ``theirs()`` gives the findings of the other processes and the ranks that failed,
    whose objects are then judged here, so the result never depends on the others.
    """

    rank: int
    size: int
    theirs: Callable[[], tuple[list[Finding], frozenset[int]]]


def judge_share(files: Sequence[SourceFile], options: Options, rank: int, size: int, *,
                cluster_files: Sequence[SourceFile] = (), old_files: Sequence[SourceFile] = ()) -> list[Finding]:
    """The findings of process ``rank``'s objects: what :func:`lint_files` with a :class:`Split`
    of the same files leaves to that process."""
    catalog = load_catalog()
    rules = RuleFilter.build(catalog, options.select, options.ignore, options.severities)
    scratch = Emitter(catalog, rules)  # reading and serving problems are the main process's to report
    linted, cluster, olds = run_manifests(files, cluster_files, old_files, scratch, None)
    targets, work = read_targets(scratch, linted, olds, cluster, options, None, "")
    emitter = Emitter(catalog, rules)
    _judge_ranks(emitter, targets, work, {rank}, size)
    if options.fixes:  # the objects the fixers work on are here: the main process gets the fixes made
        from .. import fixers
        return fixers.attach(emitter.findings, emitter.subjects, files, options.release, catalog)
    return emitter.findings


def judge_split(emitter: Emitter, targets: list[Target], work: Work, split: Split) -> None:
    """Judge this process's share, take the others' findings, and judge the share of those that failed."""
    _judge_ranks(emitter, targets, work, {split.rank}, split.size)
    findings, failed = split.theirs()
    for finding in findings:
        emitter.add(finding)
    _judge_ranks(emitter, targets, work, failed, split.size)


def _judge_ranks(emitter: Emitter, targets: list[Target], work: Work, ranks: Collection[int], size: int) -> None:
    """Judge the objects that the processes ``ranks`` of ``size`` own: runs of neighbours, dealt round."""
    for position, target in enumerate(targets):
        if (position // _SHARE_RUN) % size in ranks:
            judge_one(emitter, target, work)
