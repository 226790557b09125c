"""The one engine call behind the command line, the editor and the webhook: the run's order.

source → manifest → schema → convert → gating → checks → (feasibility) → findings. Each object is
judged on its own (objects.py, shared by processes in split.py), then against the others; the
stages report problems and emit.py turns them into findings. Nothing here knows about argv, HTTP
or terminals: the faces build ``Options``, call ``lint_paths`` / ``lint_text`` / ``review`` and
render the findings they get back.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from .. import acceptance, source, suppress
from ..catalog import load_catalog
from ..convert import Canonical, to_canonical
from ..findings import Finding, Severity
from ..index import Index
from ..kube.releases import Release
from ..manifest import Manifest
from ..options import Options
from ..paths import FieldPath
from ..rule_filter import RuleFilter
from ..source import SourceFile, SourceProblem
from .emit import Emitter, internal_error, placed, run_error, source_problem
from .objects import Identity, Target, Work, identity, judge_one, read_manifests, read_targets, run_manifests, single_file
from .result import RunResult
from .split import Split, judge_split, runs_left

if TYPE_CHECKING:  # the stage itself is imported only when it runs (heavy: CEL)
    from ..feasibility import Ahead, FeasibilityOptions, Fleet, Prepared

_NAME_PATH = FieldPath(("metadata", "name"))
# What the feasibility stage allocates for: claims, templates and the pods that use them.
_ALLOCATABLE = frozenset({"ResourceClaim", "ResourceClaimTemplate"})
_CLASS_MISSING = "DRA703"
# Kinds whose input errors mean "could not read the input at all": exit code 2.
_UNREADABLE = frozenset({"unreadable", "binary", "too-large"})


def lint_paths(paths: Sequence[str], options: Options) -> RunResult:
    """Lint files and folders (``-`` is stdin), with ``options.cluster`` and ``options.old`` as context."""
    found = source.plan(list(paths) or ["."], options.reading)
    cluster_files, old_files, context_problems = read_context(options)
    return lint_files(read_planned(found, options.reading), options, cluster_files=cluster_files,
                      old_files=old_files, discovery_problems=list(found.problems) + context_problems)


def read_planned(found: source.Plan, reading: source.Reading) -> list[SourceFile]:
    """Every file of a plan, read (the ones that are no manifests, only named)."""
    return [source.load_file(p, reading.max_bytes, found.skip.get(p, "")) for p in found.files]


def read_context(options: Options) -> tuple[list[SourceFile], list[SourceFile], list[SourceProblem]]:
    """The ``--cluster`` files, the ``--old`` files, and the problems of finding them."""
    cluster = source.plan(list(options.cluster), options.reading) if options.cluster else source.Plan([], [])
    old = source.plan([options.old], options.reading) if options.old else source.Plan([], [])
    return (read_planned(cluster, options.reading), read_planned(old, options.reading),
            list(cluster.problems) + list(old.problems))


def lint_text(text: str, options: Options, *, old_text: str | None = None, cluster_text: str | None = None,
              name: str = "manifest.yaml") -> list[Finding]:
    """Lint one YAML text (used by tests and the catalog examples)."""
    files = [source.load_text(text, name)]
    old = [source.load_text(old_text, "old.yaml")] if old_text is not None else []
    cluster = [source.load_text(cluster_text, "cluster.yaml")] if cluster_text is not None else []
    return lint_files(files, options, cluster_files=cluster, old_files=old).findings


def lint_files(files: Sequence[SourceFile], options: Options, *, cluster_files: Sequence[SourceFile] = (),
               old_files: Sequence[SourceFile] = (), discovery_problems: Sequence[SourceProblem] = (),
               split: Split | None = None, surroundings: Surroundings | None = None,
               fleet: Fleet | None = None) -> RunResult:
    """Lint loaded source files (what ``lint_paths`` and ``lint_text`` do after reading).

    With ``surroundings`` (from :func:`index_surroundings`), the objects of other files count for
    references and feasibility as if they were linted too, without being read or judged again.
    ``fleet``: the allocator's view of the surroundings' index, kept by the caller (as for ``review``).
    """
    catalog = load_catalog()
    emitter = Emitter(catalog, RuleFilter.build(catalog, options.select, options.ignore, options.severities),
                      options.context)
    result = RunResult(findings=emitter.findings, files=len(files), subjects=emitter.subjects)

    for problem in discovery_problems:
        source_problem(emitter, problem)
        result.input_error = result.input_error or problem.kind in _UNREADABLE
    for f in list(files) + list(cluster_files) + list(old_files):
        for problem in f.problems:
            source_problem(emitter, problem)
            result.input_error = result.input_error or problem.kind in _UNREADABLE
    for f in files:
        if f.skipped:
            result.skipped.setdefault(f.skipped, []).append(f.name)

    linted, cluster, olds = run_manifests(files, cluster_files, old_files, emitter, result)
    result.objects = len(linted)
    _judge(emitter, result, linted, olds, cluster, options, split=split,
           cluster_given=bool(cluster_files) or (surroundings is not None and surroundings.cluster_given),
           around=surroundings, fleet=fleet)
    try:
        _suppress(emitter, result, suppress.collect(files, linted), options)
    except Exception as exc:  # the findings stand, unsuppressed, and say why
        run_error(emitter, "applying the suppression comments and annotations", exc, files)
    if options.fixes:
        from .. import fixers  # the fixers and their YAML layout reader are only for runs that make fixes
        try:
            result.findings[:] = fixers.attach(result.findings, result.subjects, files, options.release, catalog)
        except Exception as exc:  # the findings stand, without fixes
            run_error(emitter, "working out the fixes", exc, files)
    return result


@dataclass(frozen=True)
class Surroundings:
    """The objects around the files a run lints (an editor's other files, the cluster state), indexed
    once: each run that lints one changed document lays its objects over this index."""

    index: Index
    cluster_given: bool
    linted: Sequence[Canonical] = ()
    """The objects of the surrounding files (not the cluster state's), in run order, refused or not."""
    order: Callable[[Canonical], Any] | None = None
    """The run's order of the objects (of their files): the linted objects join those of the same
    name in the index at their place, as in a run that read them all, instead of replacing them."""

    @functools.cached_property
    def firsts(self) -> dict[tuple[str, str, str, str], Canonical]:
        """The first of :attr:`linted` of each name (:func:`acceptance.duplicate_key`), which a linted
        object of that name duplicates (DRA605) when it comes later in the run."""
        firsts: dict[tuple[str, str, str, str], Canonical] = {}
        for obj in self.linted:
            key = acceptance.duplicate_key(obj)
            if key is not None:
                firsts.setdefault(key, obj)
        return firsts


def index_surroundings(files: Sequence[SourceFile], options: Options, *,
                       cluster_files: Sequence[SourceFile] = ()) -> Surroundings:
    """The index :func:`lint_files` would build from ``files`` (as linted objects) and ``cluster_files``
    (as cluster state), for ``lint_files(surroundings=...)``: each object judged on its own, so that
    those the API server would refuse are left out as a run leaves them out; no finding is reported."""
    catalog = load_catalog()
    scratch = Emitter(catalog, RuleFilter.build(catalog, options.select, options.ignore, options.severities))
    linted, cluster, olds = run_manifests(files, cluster_files, (), scratch, None)
    targets, work = read_targets(scratch, linted, olds, cluster, options, None, "")
    for target in targets:
        judge_one(scratch, target, work)
    index = _accepted(targets, cluster, work.index, scratch, None)
    return Surroundings(index, bool(cluster_files), tuple(t.canonical for t in targets))


def load_cluster(paths: Sequence[str], options: Options) -> tuple[Index, list[Finding]]:
    """Read cluster state once (the webhook keeps it between requests); input problems as findings."""
    found = source.plan(list(paths), options.reading)
    files, problems = read_planned(found, options.reading), found.problems
    catalog = load_catalog()
    emitter = Emitter(catalog, RuleFilter.build(catalog, options.select, options.ignore, options.severities))
    for problem in list(problems) + [p for f in files for p in f.problems]:
        source_problem(emitter, problem)
    objects = [to_canonical(m) for m in read_manifests(files, emitter, None, from_cluster=True)]
    return Index.build(objects), emitter.findings


def cluster_object(value: Mapping[str, Any], name: str) -> Canonical | None:
    """One object of a cluster's state (as the API server lists it) in canonical form, for an index the
    caller builds and keeps (the webhook's live state); None for what is not an object dralint reads."""
    catalog = load_catalog()
    scratch = Emitter(catalog, RuleFilter.build(catalog, (), (), {}))
    manifests = list(read_manifests([single_file(value, name)], scratch, None, from_cluster=True))
    return to_canonical(manifests[0]) if len(manifests) == 1 else None


def review(obj: Mapping[str, Any], old: Mapping[str, Any] | None, operation: str, subresource: str,
           options: Options, *, cluster: Index | None = None, name: str = "<request>",
           fleet: Fleet | None = None) -> list[Finding]:
    """Judge one object of an admission request (the webhook's call); ``old`` for UPDATE.

    With ``cluster`` (from ``load_cluster``) a claim or pod is also judged for feasibility, against
    ``fleet`` when given (the feasibility view of ``cluster``, kept current by the caller).
    """
    catalog = load_catalog()
    emitter = Emitter(catalog, RuleFilter.build(catalog, options.select, options.ignore, options.severities),
                       options.context)
    result = RunResult(findings=emitter.findings)
    manifests = list(read_manifests([single_file(obj, name)], emitter, result, from_cluster=False))
    olds: dict[Identity, Manifest] = {}
    if old is not None:
        olds = {identity(m): m for m in read_manifests([single_file(old, name + " (old)")], emitter, None, from_cluster=False)}
    # The cluster's index is built once (the webhook keeps it); a review lays its object over it.
    _judge(emitter, result, manifests, olds, [], options, operation=operation, subresource=subresource,
           cluster_given=cluster is not None, base=cluster, fleet=fleet)
    try:
        _suppress(emitter, result, suppress.collect([], manifests), options)
    except Exception as exc:  # the findings stand, unsuppressed, and say why
        run_error(emitter, "applying the suppression annotations", exc, [single_file(obj, name)])
    return result.findings


def _judge(emitter: Emitter, result: RunResult, linted: list[Manifest], olds: Mapping[Identity, Manifest],
           cluster: list[Canonical], options: Options, *, operation: str | None = None, subresource: str = "",
           cluster_given: bool = False, split: Split | None = None, base: Index | None = None,
           around: Surroundings | None = None, fleet: Fleet | None = None) -> None:
    """Schema, conversion, checks and feasibility for the linted objects; the shared core of every face.

    Each object is judged on its own first (schema and the checks of the object itself, in the
    processes of ``split``); then the linted objects the API server would refuse are left out of
    the index, and references and feasibility are judged against the objects that remain. The
    cluster state (``--cluster``, the webhook's) is what the cluster holds, and is taken as given.
    The linted objects are laid over ``base`` (an object under review takes the place of the
    cluster's), or over the objects ``around`` them (an editor's documents: beside the others).
    """
    base = around.index if around is not None else base
    beside = around.order if around is not None else None
    targets, work = read_targets(emitter, linted, olds, cluster, options, operation, subresource, base, beside)
    early = _Early()
    try:
        if split is not None:
            judge_split(emitter, targets, work, split,
                        _preparing(emitter, targets, work.index, options, early, runs_left(split, targets))
                        if fleet is None and base is None else None)
        else:
            for target in targets:
                judge_one(emitter, target, work)
        _judge_rest(emitter, result, targets, work, cluster, options, operation, subresource, cluster_given,
                    base, around, fleet, early)
    finally:
        if early.ahead is not None:
            early.ahead.cancel()


def _judge_rest(emitter: Emitter, result: RunResult, targets: list[Target], work: Work, cluster: list[Canonical],
                options: Options, operation: str | None, subresource: str, cluster_given: bool, base: Index | None,
                around: Surroundings | None, fleet: Fleet | None, early: _Early) -> None:
    """References and feasibility, once every object has been judged on its own."""
    beside = around.order if around is not None else None
    try:
        index = _accepted(targets, cluster, work.index, emitter, base, beside)
    except Exception as exc:  # references are judged against every object, refused ones included
        run_error(emitter, "leaving out the objects the API server would refuse", exc,
                   [t.canonical.manifest.document for t in targets])
        index = work.index
    result.index, result.linted = index, [t.canonical for t in targets]
    references = replace(work, index=index)
    for target in targets:
        judge_one(emitter, target, references, cross=True)
    try:
        _duplicates(emitter, [t.canonical for t in targets], around)
    except Exception as exc:
        run_error(emitter, "looking for objects defined twice", exc, [t.canonical.manifest.document for t in targets])
    # With --cluster an empty device list is an answer too ("no slices: nothing can be allocated").
    if _feasibility_wanted(emitter) and (index.slices or cluster_given) and any(_allocatable(t) for t in targets):
        # The scheduler never sees what the API server refused: objects with errors are not judged.
        # Errors in metadata alone (a name with capitals) leave the allocator's answer for the
        # corrected object unchanged, and the user wants both told.
        with_errors = {f.object for f in emitter.findings
                       if f.severity is Severity.ERROR and not _in_metadata(f.field)}
        judged_targets = [t for t in targets if t.canonical.manifest.display not in with_errors]
        creating = operation in (None, "CREATE") and not subresource
        judged = [_as_allocated(t, options.as_stored, creating) for t in judged_targets]
        # Against a kept cluster state (a review) the judged objects are all there is to look for.
        _feasibility(emitter, result, _judged_index(index, judged_targets, judged), options.release, options,
                     {id(obj) for obj in judged}, cluster_given, fleet, judged if base is not None else None, early)
    result.findings.sort(key=Finding.sort_key)


def _feasibility_wanted(emitter: Emitter) -> bool:
    return any(emitter.rules.selected(r) for r in emitter.catalog if r.id.startswith("DRA7"))


def _allocatable(target: Target) -> bool:
    """Whether the feasibility stage judges the object: a claim, a template, a pod or a workload."""
    return target.canonical.kind in _ALLOCATABLE or bool(target.canonical.manifest.pod_spec_paths)


@dataclass
class _Early:
    """What the main process of a split works out for the feasibility stage before it takes objects to
    judge (:func:`_preparing`)."""

    prepared: Prepared | None = None
    ahead: Ahead | None = None


def _preparing(emitter: Emitter, targets: list[Target], index: Index, options: Options, early: _Early,
               busy: Callable[[], bool]) -> Callable[[], None] | None:
    """What the main process of a split does before it takes objects to judge, when the run judges
    feasibility: build the stage's fleet view from ``index`` while the other processes judge
    objects, and start judging the claims on it as if no object had an error (into ``early``). The
    stage uses the view when its index is this one, as in a run where the API server would refuse
    no object (else it builds its own), and each judgement made ahead that still stands. ``busy()``:
    the other processes still have objects to judge (this one may do more before it joins them)."""
    if not (_feasibility_wanted(emitter) and index.slices and any(_allocatable(t) for t in targets)):
        return None

    def build() -> None:
        from .. import feasibility  # heavy (CEL); only runs when there are slices to allocate from

        try:
            early.prepared = feasibility.prepare(index, options.release, options.node)
        except Exception:  # noqa: BLE001 - the stage builds the view again, and reports what fails there
            return
        judged = [_as_allocated(t, options.as_stored, True) for t in targets]
        try:
            if _judged_index(index, targets, judged) is index:
                early.ahead = feasibility.judge_ahead(early.prepared.world, index, _feasibility_options(options),
                                                      {id(obj) for obj in judged}, busy, placed)
        except Exception:  # noqa: BLE001 - the stage judges every group itself, and reports what fails there
            early.ahead = None
    return build


def _as_allocated(target: Target, as_stored: bool, creating: bool) -> Canonical:
    """The object the allocator is asked about: as the API server would store it on create, where a
    field whose feature gate is off is gone (DRA802 says so) and cannot make allocation fail, and a
    claim's ``status`` too (DRA265): a pasted ``kubectl get -o yaml`` claim holds no devices and is
    judged as the new claim it is. With ``as_stored`` (``--as-stored``) the linted claims and
    templates are objects the cluster already stores, as they are written: a gated field a stored
    claim keeps makes the allocator refuse it (DRA704), as for the claims of ``--cluster`` and of
    the webhook's live state."""
    if as_stored and target.canonical.kind in _ALLOCATABLE:
        return target.canonical
    obj = target.stored or target.canonical
    if creating and target.old is None and obj.kind == "ResourceClaim" and "status" in obj.value:
        return replace(obj, value={k: v for k, v in obj.value.items() if k != "status"})
    return obj


def _judged_index(accepted: Index, targets: list[Target], judged: list[Canonical]) -> Index:
    """``accepted`` with the judged claims as the allocator is asked about them (``judged``: see
    _as_allocated): as stored on create, as written with ``--as-stored``, without the status the API
    server clears on create; and those refused for their metadata alone (a name with capitals),
    which feed no reference but are still judged themselves. The feasibility stage finds the claims
    it judges in this index by identity, so each must be the very object judged."""
    def key(obj: Canonical) -> tuple[str, str, str]:
        return obj.kind, obj.namespace, obj.name

    # Most runs have neither: then no look at the whole index (the webhook's holds the cluster).
    candidates = [(t, obj) for t, obj in zip(targets, judged) if t.canonical.kind in _ALLOCATABLE and (
        obj is not (t.stored or t.canonical) or key(t.canonical) in accepted.refused)]
    if not candidates:
        return accepted
    present = {id(obj) for obj in accepted.all_objects()}
    swap = [obj for t, obj in candidates if id(obj) not in present
            and (id(t.stored or t.canonical) in present or key(obj) in accepted.refused)]
    return accepted.overlay(swap) if swap else accepted


def _in_metadata(field: str) -> bool:
    """Whether a finding's field lies in an object's metadata (not one of a List's items)."""
    return field == "metadata" or field.startswith(("metadata.", "metadata["))


def _accepted(targets: list[Target], cluster: list[Canonical], index: Index, emitter: Emitter,
              base: Index | None, beside: Callable[[Canonical], Any] | None = None) -> Index:
    """The index without the linted objects the API server would refuse (``index`` itself when none is)."""
    refused = {id(obj) for obj in acceptance.refused([t.canonical for t in targets], emitter.findings,
                                                     acceptance.refusing_rules(emitter.catalog))}
    if not refused:
        return index
    stored = [(t.stored or t.canonical, id(t.canonical) in refused) for t in targets]
    kept = [obj for obj, out in stored if not out]
    left_out = [obj for obj, out in stored if out]
    if base is not None:  # the review's object is refused: the cluster keeps what it has
        accepted = base.overlay(kept, beside=beside)
        for obj in left_out:
            accepted.refused.setdefault((obj.kind, obj.namespace, obj.name), obj.manifest.document.file)
    else:
        accepted = Index.build(kept + cluster, left_out)
    for key, file in index.refused.items():  # the objects no release serves (DRA801)
        accepted.refused.setdefault(key, file)
    return accepted


def _duplicates(emitter: Emitter, objects: Sequence[Canonical], around: Surroundings | None) -> None:
    """DRA605 on every object whose kind, namespace and name an earlier object of the run has
    (among ``objects`` or the files ``around`` them)."""
    firsts, order = (around.firsts, around.order) if around is not None else ({}, None)
    for duplicate in acceptance.duplicates(objects, firsts, order):
        manifest, first = duplicate.obj.manifest, duplicate.first.manifest
        doc, first_doc = manifest.document, first.document
        first_pos = first_doc.locate(first.base.child("metadata", "name"))
        where = "earlier in this file" if first_doc.file == doc.file else f"in {first_doc.file}"
        emitter.place(acceptance.DUPLICATE_RULE,
                      f"{manifest.display} is defined twice: also {where} (line {first_pos.line}). The cluster "
                      "holds one object per kind, namespace and name, so applying both replaces one with the "
                      "other; references resolve to the one in the referrer's own file, then its folder",
                      manifest, _NAME_PATH)


def _suppress(emitter: Emitter, result: RunResult, suppressions: list[suppress.Suppression],
              options: Options) -> None:
    """Drop the findings the user suppressed; report stale suppressions when asked (DRA910)."""
    if not options.suppressions:
        return
    kept = [f for f in result.findings if f.rule in options.protected]
    outcome = suppress.apply([f for f in result.findings if f.rule not in options.protected], suppressions,
                             emitter.catalog, emitter.rules, report_unused=options.report_unused_ignores,
                             policy_rules=options.policy_rules)
    result.findings[:] = sorted(outcome.findings + kept, key=Finding.sort_key) if kept else outcome.findings
    result.suppressed = outcome.suppressed


def _feasibility_options(options: Options) -> FeasibilityOptions:
    from ..feasibility import FeasibilityOptions

    return FeasibilityOptions(node=options.node, trace=frozenset(options.trace), show_allocation=options.show_allocation,
                              max_steps=options.max_steps, max_seconds=options.max_seconds, together=options.together,
                              processes=options.jobs)


def _feasibility(emitter: Emitter, result: RunResult, index: Index, release: Release, options: Options,
                 linted_ids: set[int], cluster_given: bool, fleet: Fleet | None = None,
                 candidates: list[Canonical] | None = None, early: _Early | None = None) -> None:
    from .. import feasibility  # heavy (CEL); only runs when there are slices to allocate from

    try:
        report = feasibility.judge(index, release, _feasibility_options(options), lambda obj: id(obj) in linted_ids,
                                   fleet=fleet, candidates=candidates, prepared=early.prepared if early else None,
                                   ahead=early.ahead if early else None, locate=placed)
    except feasibility.UnknownNode:
        raise  # a usage error (exit 2), not a finding
    except Exception as exc:  # same promise as for checks: report, do not crash
        first = next(obj for obj in index.all_objects() if id(obj) in linted_ids)
        internal_error(emitter, first, f"feasibility: {exc!r}", exc)
        return
    for obj, problem in report.problems:
        # Without --cluster a class absent from the run may well exist in the cluster: the reference
        # warning (DRA600) says so; calling the claim unallocatable would be a guess.
        if problem.rule == _CLASS_MISSING and not cluster_given:
            continue
        emitter.problem(obj, problem)
    result.allocations = list(report.allocations)
    result.traces = dict(report.traces)
