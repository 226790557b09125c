"""The one engine call behind the command line and the webhook.

source → manifest → schema → convert → gating → checks → (feasibility) → findings. Nothing here
knows about argv, HTTP or terminals: the faces build ``Options``, call ``lint_paths`` /
``lint_text`` / ``review`` and render the findings they get back.
"""
from __future__ import annotations

import difflib
import functools
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Collection, Iterable, Iterator, Mapping, Sequence

from . import checks as check_registry
from . import acceptance, fixers, request_shape, schema, source, suppress
from .cancel import checkpoint
from .catalog import Catalog, load_catalog
from .checks.base import CheckContext
from .problems import Problem
from .convert import Canonical, to_canonical
from .findings import Finding, Location, Position, Severity
from .fixers.target import Subject
from .gating import apply_gates
from .index import Index
from .kube.limits import limits_for
from .manifest import Manifest, NotAnObject, NotJudged, Unread, WrongGroup, identify
from .options import Options
from .paths import ROOT, FieldPath
from .kube.releases import Release
from .rule_filter import RuleFilter
from .source.pitfalls import quote_hint

# Input problems of the source stage → rule ids (rules/DRA00x-*.yaml).
_SOURCE_RULES = {"syntax": "DRA001", "duplicate-key": "DRA002", "unreadable": "DRA004", "binary": "DRA004",
                 "too-large": "DRA005", "too-deep": "DRA005", "alias-limit": "DRA005"}
# What the feasibility stage allocates for: claims, templates and the pods that use them.
_ALLOCATABLE = frozenset({"ResourceClaim", "ResourceClaimTemplate"})
_CLASS_MISSING = "DRA703"
_EXACTLY_OR_FIRST = "DRA206"
# The checks that resolve references to other objects: they run once the objects the API server
# would refuse are known, against the index of the others (acceptance.py).
_REFERENCE_CHECKS = (check_registry.pods, check_registry.references, check_registry.cel_hints)
# Kinds whose status a controller writes through /status: a pair of files may be either write.
_STATUS_WRITTEN = frozenset({"ResourceClaim", "ResourcePoolStatusRequest"})
# Kinds whose input errors mean "could not read the input at all": exit code 2.
_UNREADABLE = frozenset({"unreadable", "binary", "too-large"})
_API_VERSION_PATH = FieldPath(("apiVersion",))
_NAME_PATH = FieldPath(("metadata", "name"))


@dataclass
class RunResult:
    """Findings of a run plus the counts and extras the reporters show."""

    findings: list[Finding]
    files: int = 0
    documents: int = 0
    objects: int = 0
    input_error: bool = False
    allocations: list[Any] = field(default_factory=list)
    traces: dict[str, list[str]] = field(default_factory=dict)
    suppressed: int = 0  # findings hidden by `dralint: ignore` comments and annotations
    skipped: dict[str, list[str]] = field(default_factory=dict)  # why → files that are no manifests
    foreign: int = 0  # documents that are YAML but no Kubernetes object (playbooks, settings...)
    # Objects of kinds dralint does not read whose pods ask for devices: "Kind (apiVersion)" → how many.
    unread: dict[str, int] = field(default_factory=dict)
    not_judged: dict[str, int] = field(default_factory=dict)  # objects of kinds dralint does not read, by kind
    # What the editor keeps of a large document's run as the other documents' context: the index
    # references were judged against (without the objects the API server would refuse), and the
    # linted objects in canonical form, in run order.
    index: Index | None = field(default=None, repr=False)
    linted: list[Canonical] = field(default_factory=list, repr=False)
    # What each fixable finding is about (fixers.attach: the editor makes fixes on request, later).
    subjects: dict[Finding, Subject] = field(default_factory=dict, repr=False)

    @property
    def errors(self) -> int:
        return sum(f.severity is Severity.ERROR for f in self.findings)

    @property
    def exit_code(self) -> int:
        if self.input_error:
            return 2
        return 1 if self.errors else 0


@dataclass(frozen=True)
class _Target:
    """One object to judge, with its position in the user's file and the update it belongs to."""

    canonical: Canonical
    old: Canonical | None = None
    stored: Canonical | None = None  # as the server stores it: gated fields dropped (what others see)
    dropped: tuple[Problem, ...] = ()  # DRA802 for each field dropped from ``stored``

    @functools.cached_property
    def shapes(self) -> list[request_shape.Misplaced]:
        """Requests written in the other version's shape (both passes of the checks need them)."""
        manifest = self.canonical.manifest
        return request_shape.misplaced(manifest.value, manifest.api_version, manifest.kind)


class _Emitter:
    """Turns problems into findings: rule metadata, user paths, positions, the user's selection."""

    def __init__(self, catalog: Catalog, rules: RuleFilter, context: str = "this run") -> None:
        self.catalog = catalog
        self.rules = rules
        self.context = context
        self.findings: list[Finding] = []
        # What each fixable finding is about, for the fixers: they work on the object, not its text.
        self.subjects: dict[Finding, Subject] = {}
        self._seen: set[tuple] = set()

    def emit(self, rule_id: str, message: str, *, file: str, line: int, column: int, obj: str = "",
             field_path: FieldPath = ROOT, end: Position = Position(), severity: Severity | None = None,
             details: Mapping[str, Any] | None = None) -> Finding | None:
        """The finding made (None when the selection leaves the rule out or it was made already)."""
        rule = self.catalog.rules.get(rule_id)
        if rule is None:  # a check reporting a rule the catalog lacks is our bug; say so instead of crashing
            rule, message = self.catalog.get("DRA000"), f"internal error: rule {rule_id} is not in the catalog ({message})"
        if not self.rules.selected(rule):
            return None
        sev = self.rules.severity(rule, severity)
        if self.context != "this run":
            message = message.replace("this run", self.context)
        key = (rule_id, file, line, column, field_path.render(), message)
        if key in self._seen:
            return None
        self._seen.add(key)
        finding = Finding(rule=rule.id, name=rule.name, severity=sev, category=rule.category, message=message,
                          location=Location(file, Position(line, column), end, field_path), object=obj,
                          details=details)
        self.findings.append(finding)
        return finding

    def add(self, finding: Finding) -> None:
        """A finding another process made with the same catalog and selection."""
        key = (finding.rule, finding.file, finding.line, finding.column, finding.field, finding.message)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(finding)

    def place(self, rule_id: str, message: str, manifest: Manifest, user: FieldPath, *, at: FieldPath | None = None,
              scalar_offset: int | None = None, severity: Severity | None = None,
              details: Mapping[str, Any] | None = None) -> None:
        """A finding on ``manifest`` at the user's path ``user``, placed at user path ``at`` when
        given (at character ``scalar_offset`` of the string there when given)."""
        doc = manifest.document
        full = FieldPath(tuple(manifest.base) + tuple(user if at is None else at))
        pos = doc.locate_in_scalar(full, scalar_offset) if scalar_offset is not None else doc.locate(full)
        finding = self.emit(rule_id, message, file=doc.file, line=pos.line, column=pos.column, obj=manifest.display,
                            field_path=user, end=doc.end_of(pos), severity=severity, details=details)
        if finding is not None and rule_id in fixers.FIXERS:
            self.subjects[finding] = Subject(manifest, user)

    def problem(self, target: Canonical, problem: Problem) -> None:
        user = problem.user_path if problem.user_path is not None else target.to_user(problem.path)
        self.place(problem.rule, problem.message, target.manifest, user,
                   at=None if problem.at is None else target.to_user(problem.at),
                   scalar_offset=problem.scalar_offset, severity=problem.severity, details=problem.details)


def lint_paths(paths: Sequence[str], options: Options) -> RunResult:
    """Lint files and folders (``-`` is stdin), with ``options.cluster`` and ``options.old`` as context."""
    found = source.plan(list(paths) or ["."], options.reading)
    cluster_files, old_files, context_problems = read_context(options)
    return lint_files(read_planned(found, options.reading), options, cluster_files=cluster_files,
                      old_files=old_files, discovery_problems=list(found.problems) + context_problems)


def read_planned(found: source.Plan, reading: source.Reading) -> list[source.SourceFile]:
    """Every file of a plan, read (the ones that are no manifests, only named)."""
    return [source.load_file(p, reading.max_bytes, found.skip.get(p, "")) for p in found.files]


def read_context(options: Options) -> tuple[list[Any], list[Any], list[Any]]:
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


def lint_files(files: Sequence[Any], options: Options, *, cluster_files: Sequence[Any] = (),
               old_files: Sequence[Any] = (), discovery_problems: Sequence[Any] = (),
               split: Split | None = None, surroundings: Surroundings | None = None) -> RunResult:
    """Lint loaded source files (what ``lint_paths`` and ``lint_text`` do after reading).

    With ``surroundings`` (from :func:`index_surroundings`), the objects of other files count for
    references and feasibility as if they were linted too, without being read or judged again.
    """
    catalog = load_catalog()
    emitter = _Emitter(catalog, RuleFilter.build(catalog, options.select, options.ignore, options.severities))
    result = RunResult(findings=emitter.findings, files=len(files), subjects=emitter.subjects)

    for problem in discovery_problems:
        _source_problem(emitter, problem)
        result.input_error = result.input_error or problem.kind in _UNREADABLE
    for f in list(files) + list(cluster_files) + list(old_files):
        for problem in f.problems:
            _source_problem(emitter, problem)
            result.input_error = result.input_error or problem.kind in _UNREADABLE
    for f in files:
        if f.skipped:
            result.skipped.setdefault(f.skipped, []).append(f.name)

    linted, cluster, olds = _run_manifests(files, cluster_files, old_files, emitter, result)
    result.objects = len(linted)
    _judge(emitter, result, linted, olds, cluster, options, split=split,
           cluster_given=bool(cluster_files) or (surroundings is not None and surroundings.cluster_given),
           around=surroundings)
    try:
        _suppress(emitter, result, suppress.collect(files, linted), options)
    except Exception as exc:  # the findings stand, unsuppressed, and say why
        _run_error(emitter, "applying the suppression comments and annotations", exc, files)
    if options.fixes:
        try:
            result.findings[:] = fixers.attach(result.findings, result.subjects, files, options.release, catalog)
        except Exception as exc:  # the findings stand, without fixes
            _run_error(emitter, "working out the fixes", exc, files)
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
    def firsts(self) -> dict[tuple, Canonical]:
        """The first of :attr:`linted` of each name (:func:`acceptance.duplicate_key`), which a linted
        object of that name duplicates (DRA605) when it comes later in the run."""
        firsts: dict[tuple, Canonical] = {}
        for obj in self.linted:
            key = acceptance.duplicate_key(obj)
            if key is not None:
                firsts.setdefault(key, obj)
        return firsts


def index_surroundings(files: Sequence[Any], options: Options, *, cluster_files: Sequence[Any] = ()) -> Surroundings:
    """The index :func:`lint_files` would build from ``files`` (as linted objects) and ``cluster_files``
    (as cluster state), for ``lint_files(surroundings=...)``: each object judged on its own, so that
    those the API server would refuse are left out as a run leaves them out; no finding is reported."""
    catalog = load_catalog()
    scratch = _Emitter(catalog, RuleFilter.build(catalog, options.select, options.ignore, options.severities))
    linted, cluster, olds = _run_manifests(files, cluster_files, (), scratch, None)
    targets, work = _targets(scratch, linted, olds, cluster, options, None, "")
    for target in targets:
        _judge_one(scratch, target, work)
    index = _accepted(targets, cluster, work.index, scratch, None)
    return Surroundings(index, bool(cluster_files), tuple(t.canonical for t in targets))


def load_cluster(paths: Sequence[str], options: Options) -> tuple[Index, list[Finding]]:
    """Read cluster state once (the webhook keeps it between requests); input problems as findings."""
    found = source.plan(list(paths), options.reading)
    files, problems = read_planned(found, options.reading), found.problems
    catalog = load_catalog()
    emitter = _Emitter(catalog, RuleFilter.build(catalog, options.select, options.ignore, options.severities))
    for problem in list(problems) + [p for f in files for p in f.problems]:
        _source_problem(emitter, problem)
    objects = [to_canonical(m) for m in _manifests(files, emitter, None, from_cluster=True)]
    return Index.build(objects), emitter.findings


def cluster_object(value: Mapping[str, Any], name: str) -> Canonical | None:
    """One object of a cluster's state (as the API server lists it) in canonical form, for an index the
    caller builds and keeps (the webhook's live state); None for what is not an object dralint reads."""
    catalog = load_catalog()
    scratch = _Emitter(catalog, RuleFilter.build(catalog, (), (), {}))
    manifests = list(_manifests([_single(value, name)], scratch, None, from_cluster=True))
    return to_canonical(manifests[0]) if len(manifests) == 1 else None


def review(obj: Mapping[str, Any], old: Mapping[str, Any] | None, operation: str, subresource: str,
           options: Options, *, cluster: Index | None = None, name: str = "<request>",
           world: Any = None) -> list[Finding]:
    """Judge one object of an admission request (the webhook's call); ``old`` for UPDATE.

    With ``cluster`` (from ``load_cluster``) a claim or pod is also judged for feasibility, against
    ``world`` when given (the feasibility fleet view of ``cluster``, kept current by the caller).
    """
    catalog = load_catalog()
    emitter = _Emitter(catalog, RuleFilter.build(catalog, options.select, options.ignore, options.severities),
                       options.context)
    result = RunResult(findings=emitter.findings)
    manifests = list(_manifests([_single(obj, name)], emitter, result, from_cluster=False))
    olds: dict[tuple, Manifest] = {}
    if old is not None:
        olds = {_identity(m): m for m in _manifests([_single(old, name + " (old)")], emitter, None, from_cluster=False)}
    # The cluster's index is built once (the webhook keeps it); a review lays its object over it.
    _judge(emitter, result, manifests, olds, [], options, operation=operation, subresource=subresource,
           cluster_given=cluster is not None, base=cluster, world=world)
    try:
        _suppress(emitter, result, suppress.collect([], manifests), options)
    except Exception as exc:  # the findings stand, unsuppressed, and say why
        _run_error(emitter, "applying the suppression annotations", exc, [_single(obj, name)])
    return result.findings


def _judge(emitter: _Emitter, result: RunResult, linted: list[Manifest], olds: Mapping[tuple, Manifest],
           cluster: list[Canonical], options: Options, *, operation: str | None = None, subresource: str = "",
           cluster_given: bool = False, split: Split | None = None, base: Index | None = None,
           around: Surroundings | None = None, world: Any = None) -> None:
    """Schema, conversion, checks and feasibility for the linted objects; the shared core of every face.

    Each object is judged on its own first (schema and the checks of the object itself, in the
    processes of ``split``); then the linted objects the API server would refuse are left out of
    the index, and references and feasibility are judged against the objects that remain. The
    cluster state (``--cluster``, the webhook's) is what the cluster holds, and is taken as given.
    The linted objects are laid over ``base`` (an object under review takes the place of the
    cluster's), or over the objects ``around`` them (an editor's documents: beside the others).
    """
    release = options.release
    base = around.index if around is not None else base
    beside = around.order if around is not None else None
    targets, work = _targets(emitter, linted, olds, cluster, options, operation, subresource, base, beside)
    if split is not None:
        _judge_split(emitter, targets, work, split)
    else:
        for target in targets:
            _judge_one(emitter, target, work)
    try:
        index = _accepted(targets, cluster, work.index, emitter, base, beside)
    except Exception as exc:  # references are judged against every object, refused ones included
        _run_error(emitter, "leaving out the objects the API server would refuse", exc,
                   [t.canonical.manifest.document for t in targets])
        index = work.index
    result.index, result.linted = index, [t.canonical for t in targets]
    references = replace(work, index=index)
    for target in targets:
        _judge_one(emitter, target, references, cross=True)
    try:
        _duplicates(emitter, [t.canonical for t in targets], around)
    except Exception as exc:
        _run_error(emitter, "looking for objects defined twice", exc, [t.canonical.manifest.document for t in targets])
    feasibility_wanted = any(emitter.rules.selected(r) for r in emitter.catalog if r.id.startswith("DRA7"))
    # With --cluster an empty device list is an answer too ("no slices: nothing can be allocated").
    if feasibility_wanted and (index.slices or cluster_given) and any(
            t.canonical.kind in _ALLOCATABLE or t.canonical.manifest.pod_spec_paths for t in targets):
        # The scheduler never sees what the API server refused: objects with errors are not judged.
        # Errors in metadata alone (a name with capitals) leave the allocator's answer for the
        # corrected object unchanged, and the user wants both told.
        with_errors = {f.object for f in emitter.findings
                       if f.severity is Severity.ERROR and not _in_metadata(f.field)}
        judged_targets = [t for t in targets if t.canonical.manifest.display not in with_errors]
        creating = operation in (None, "CREATE") and not subresource
        judged = [_as_allocated(t, options.as_stored, creating) for t in judged_targets]
        # Against a kept cluster state (a review) the judged objects are all there is to look for.
        _feasibility(emitter, result, _judged_index(index, judged_targets, judged), release, options,
                     {id(obj) for obj in judged}, cluster_given, world, judged if base is not None else None)
    result.findings.sort(key=Finding.sort_key)


def _as_allocated(target: _Target, as_stored: bool, creating: bool) -> Canonical:
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


def _judged_index(accepted: Index, targets: list[_Target], judged: list[Canonical]) -> Index:
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


def _accepted(targets: list[_Target], cluster: list[Canonical], index: Index, emitter: _Emitter,
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


def _duplicates(emitter: _Emitter, objects: Sequence[Canonical], around: Surroundings | None) -> None:
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


def _targets(emitter: _Emitter, linted: list[Manifest], olds: Mapping[tuple, Manifest], cluster: list[Canonical],
             options: Options, operation: str | None, subresource: str,
             base: Index | None = None,
             beside: Callable[[Canonical], Any] | None = None) -> tuple[list["_Target"], "_Work"]:
    """The objects the release serves (DRA801 for the others), in canonical form, and the index."""
    release = options.release
    targets: list[_Target] = []
    unserved: list[Manifest] = []
    for manifest in linted:
        try:
            if not _served(emitter, manifest, release):
                unserved.append(manifest)
                continue
            old_manifest = _old_for(manifest, olds)
            canonical, old = to_canonical(manifest), to_canonical(old_manifest) if old_manifest else None
            stored, dropped = apply_gates(canonical, old, release)
        except Exception as exc:  # this object is not judged; every other one is
            _object_error(emitter, manifest, "reading the object (its version, conversion and feature gates)", exc)
            continue
        targets.append(_Target(canonical, old, stored, tuple(dropped)))
    # References see each object as the server would store it (feasibility: see _as_allocated).
    stored = [t.stored or t.canonical for t in targets]
    index = base.overlay(stored, beside=beside) if base is not None else Index.build(stored + cluster)
    for manifest in unserved:  # refused too: what names them is told so, not that they are missing
        index.refused.setdefault((manifest.kind, manifest.namespace, manifest.name), manifest.document.file)
    return targets, _Work(release, index, options.strict, operation, subresource)


@dataclass(frozen=True)
class _Work:
    """What judging one object needs besides the object: the same for every object of a run."""

    release: Release
    index: Index
    strict: bool
    operation: str | None
    subresource: str


def _judge_one(emitter: _Emitter, target: _Target, work: _Work, *, cross: bool = False) -> None:
    """Schema and the checks of one object itself (independent of every other object's judgement);
    with ``cross``, the checks that resolve its references instead."""
    checkpoint()  # a run nobody wants any more (the editor's text moved on) stops here
    manifest = target.canonical.manifest
    modules = [m for m in check_registry.checks_for(target.canonical.kind) if (m in _REFERENCE_CHECKS) == cross]
    if cross and not modules:
        return
    if manifest.is_dra and not cross:
        try:
            _schema(emitter, manifest, work.release, work.strict, target.shapes)
        except Exception as exc:  # the checks below still judge the object
            _object_error(emitter, manifest, "schema validation", exc)
    try:
        # Under strict decoding the schema's one finding (DRA101) says it all, when it is reported.
        reshape = _reshaped(target.shapes, work.strict and emitter.rules.selected(emitter.catalog.get("DRA101")))
        contexts = list(_contexts(target, work.release, work.index, operation=work.operation,
                                  subresource=work.subresource, strict=work.strict))
    except Exception as exc:
        _object_error(emitter, manifest, "preparing its checks", exc)
        return
    for ctx in contexts:
        _run_checks(emitter, ctx, modules, dropped=not cross, reshape=reshape)


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


def judge_share(files: Sequence[Any], options: Options, rank: int, size: int, *, cluster_files: Sequence[Any] = (),
                old_files: Sequence[Any] = ()) -> list[Finding]:
    """The findings of process ``rank``'s objects: what :func:`lint_files` with a :class:`Split`
    of the same files leaves to that process."""
    catalog = load_catalog()
    rules = RuleFilter.build(catalog, options.select, options.ignore, options.severities)
    scratch = _Emitter(catalog, rules)  # reading and serving problems are the main process's to report
    linted, cluster, olds = _run_manifests(files, cluster_files, old_files, scratch, None)
    targets, work = _targets(scratch, linted, olds, cluster, options, None, "")
    emitter = _Emitter(catalog, rules)
    _judge_ranks(emitter, targets, work, {rank}, size)
    if options.fixes:  # the objects the fixers work on are here: the main process gets the fixes made
        return fixers.attach(emitter.findings, emitter.subjects, files, options.release, catalog)
    return emitter.findings


def _judge_split(emitter: _Emitter, targets: list[_Target], work: _Work, split: Split) -> None:
    _judge_ranks(emitter, targets, work, {split.rank}, split.size)
    findings, failed = split.theirs()
    for finding in findings:
        emitter.add(finding)
    _judge_ranks(emitter, targets, work, failed, split.size)


def _judge_ranks(emitter: _Emitter, targets: list[_Target], work: _Work, ranks: Collection[int], size: int) -> None:
    """Judge the objects that the processes ``ranks`` of ``size`` own: runs of neighbours, dealt round."""
    for position, target in enumerate(targets):
        if (position // _SHARE_RUN) % size in ranks:
            _judge_one(emitter, target, work)


def _suppress(emitter: _Emitter, result: RunResult, suppressions: list[suppress.Suppression],
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


def _single(obj: Mapping[str, Any] | None, name: str) -> source.SourceFile:
    """An admission object as a one-document source file (no positions: it came without a file)."""
    doc = source.document_from_value(dict(obj) if isinstance(obj, Mapping) else obj, name)
    return source.SourceFile(name, [doc], [])


def _manifests(files: Iterable[Any], emitter: _Emitter, result: RunResult | None, *,
               from_cluster: bool) -> Iterator[Manifest]:
    for f in files:
        manifests_file = any(_object_shaped(d.value) for d in f.documents)
        for doc in f.documents:
            if result is not None:
                result.documents += 1
            if not _object_shaped(doc.value) and not _mistaken_object(doc.value, manifests_file):
                # YAML that is no Kubernetes object (a playbook, a settings file): not ours to judge.
                if result is not None:
                    result.foreign += 1
                continue
            try:
                items = list(identify(doc, from_cluster=from_cluster))
            except Exception as exc:  # one document's surprise must not cost the rest of the run
                _stage_error(emitter, "reading the object's kind and apiVersion", exc, file=doc.file, line=doc.line,
                             column=1)
                continue
            for item in items:
                if isinstance(item, Unread | NotJudged):
                    if result is not None and not from_cluster:
                        label = f"{item.kind} ({item.api_version})" if item.api_version else item.kind
                        counts = result.unread if isinstance(item, Unread) else result.not_judged
                        counts[label] = counts.get(label, 0) + 1
                    continue
                if isinstance(item, WrongGroup):
                    if not from_cluster:
                        pos = doc.locate(item.base.child("apiVersion"))
                        emitter.emit("DRA007", f"{item.kind} does not exist in {item.api_version}; it is in "
                                               f"{item.expected} (the API server answers \"no matches for kind\")",
                                     file=doc.file, line=pos.line, column=pos.column, field_path=_API_VERSION_PATH,
                                     end=doc.end_of(pos),
                                     obj=f"{item.kind} {_name_of(item)}")
                    continue
                if isinstance(item, NotAnObject):
                    if not from_cluster:
                        why = ("; write each object as its own document (after `---`) or as the `items` of a "
                               "`kind: List`" if _list_of_objects(doc.value)
                               else " (the other documents of this file are objects)")
                        emitter.emit("DRA003", f"the document is {item.found}, not a Kubernetes object (a "
                                               f"mapping){why}", file=doc.file, line=doc.line, column=1,
                                     end=doc.end_of(Position(doc.line, 1)))
                    continue
                if not item.api_version:
                    pos = doc.locate(item.base)
                    hint = " (keys are case-sensitive: found `apiversion`)" if "apiversion" in item.value else ""
                    emitter.emit("DRA006", f"{item.kind} has no apiVersion{hint}; the API server refuses an object "
                                           "without apiVersion and kind", file=doc.file, line=pos.line,
                                 column=pos.column, obj=item.display, field_path=_API_VERSION_PATH, end=doc.end_of(pos))
                    continue
                yield item


def _object_shaped(value: Any) -> bool:
    """A mapping with a ``kind``: a Kubernetes object, or one meant to be."""
    return isinstance(value, dict) and isinstance(value.get("kind"), str) and bool(value["kind"])


def _mistaken_object(value: Any, manifests_file: bool) -> bool:
    """A list or scalar where an object was meant: a list of objects, or a stray document in a
    file of objects (DRA003). A mapping without ``kind`` is no object of anyone's."""
    return not isinstance(value, dict) and (_list_of_objects(value) or manifests_file)


def _list_of_objects(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and _object_shaped(value[0])


def _run_manifests(files: Sequence[Any], cluster_files: Sequence[Any], old_files: Sequence[Any], emitter: _Emitter,
                   result: RunResult | None) -> tuple[list[Manifest], list[Canonical], dict[tuple, Manifest]]:
    """The linted manifests, the cluster state (canonical) and the stored objects of ``--old`` by identity."""
    linted = list(_manifests(files, emitter, result, from_cluster=False))
    cluster = [to_canonical(m) for m in _manifests(cluster_files, emitter, None, from_cluster=True)]
    olds = {_identity(m): m for m in _manifests(old_files, emitter, None, from_cluster=False)}
    return linted, cluster, olds


def _name_of(item: WrongGroup) -> str:
    meta = item.document.value.get("metadata") if isinstance(item.document.value, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else "<unnamed>"


def _old_for(manifest: Manifest, olds: Mapping[tuple, Manifest]) -> Manifest | None:
    """The stored object a new one updates: same kind, namespace and name; or, when the old file holds
    exactly one object of that kind, that one (an update that renames it is then judged, and refused,
    as the API server would: names are immutable)."""
    found = olds.get(_identity(manifest))
    if found is not None:
        return found
    same_kind = [m for m in olds.values() if (m.group, m.kind) == (manifest.group, manifest.kind)]
    return same_kind[0] if len(same_kind) == 1 else None


def _identity(manifest: Manifest) -> tuple[str, str, str, str]:
    return (manifest.group, manifest.kind, manifest.namespace, manifest.name)


def _source_problem(emitter: _Emitter, problem: Any) -> None:
    rule = _SOURCE_RULES.get(problem.kind, "DRA001")
    emitter.emit(rule, problem.message, file=problem.file, line=problem.line, column=problem.column,
                 field_path=getattr(problem, "path", None) or ROOT)


def _served(emitter: _Emitter, manifest: Manifest, release: Release) -> bool:
    """DRA objects must be served by the target release (DRA801); others always pass."""
    served = schema.serves(release.version, manifest.api_version, manifest.kind)
    gate = release.serving_gate(manifest.kind) if served else None
    if not manifest.is_dra or (served and (gate is None or release.gate(gate))):
        if served and manifest.is_dra:
            _deprecated(emitter, manifest, release)
        return True
    releases = schema.served_releases(manifest.api_version, manifest.kind)
    advice = "choose the release with --kube-version, or move to an apiVersion this release serves"
    if served:
        why = f"the API server only serves it while feature gate {gate} is on"
        advice = f"enable the gate on the cluster and pass --feature-gates {gate}=true"
    elif releases:
        span = releases[0] if len(releases) == 1 else f"{releases[0]}–{releases[-1]}"
        why = f"it is served by Kubernetes {span}"
    else:
        why = "no Kubernetes release serves it"
        close = difflib.get_close_matches(manifest.kind, sorted(schema.group_kinds(manifest.group)), n=1)
        if close:  # a misspelt kind (`ResourceClaimTemplte`): no release or apiVersion would help
            why += f": did you mean `kind: {close[0]}`?"
            advice = f"correct the kind; {close[0]} is a kind of {manifest.group}"
    emitter.place("DRA801", f"{manifest.api_version} {manifest.kind} is not served by Kubernetes {release.version}; "
                            f"{why} ({advice})", manifest, _API_VERSION_PATH)
    return False


def _deprecated(emitter: _Emitter, manifest: Manifest, release: Release) -> None:
    """DRA803: the API server's own warning for a served version that is deprecated at ``release``."""
    span = schema.deprecation(manifest.api_version, manifest.kind)
    if span is None or release.minor < span[0]:
        return
    group = manifest.api_version.rpartition("/")[0]
    emitter.place("DRA803", f"{manifest.api_version} {manifest.kind} is deprecated in v1.{span[0]}+, unavailable in "
                            f"v1.{span[1]}+ (the API server's warning); move it to {group}/v1 with "
                            "`dralint migrate --to v1`", manifest, _API_VERSION_PATH)


def _reshaped(shapes: Sequence[request_shape.Misplaced],
              covered: bool) -> Callable[[Canonical, Problem], Problem | None] | None:
    """For a request in the other version's shape, its "neither `exactly` nor `firstAvailable`" error:
    left out when the schema's finding ``covered`` it, else given the hint."""
    flat = {shape.request: shape for shape in shapes if shape.nested}
    if not flat:
        return None

    def reshape(obj: Canonical, problem: Problem) -> Problem | None:
        shape = flat.get(problem.user_path or obj.to_user(problem.path)) if problem.rule == _EXACTLY_OR_FIRST else None
        if shape is None:
            return problem
        return None if covered else replace(problem, message=f"{problem.message}; {shape.hint()}")
    return reshape


def _schema(emitter: _Emitter, manifest: Manifest, release: Release, strict: bool,
            shapes: Sequence[request_shape.Misplaced] = ()) -> None:
    doc = manifest.document
    for name in schema.missing_top_level(manifest.value, release.version, manifest.api_version, manifest.kind):
        emitter.place("DRA103", f"{manifest.kind} has no `{name}`, which its schema requires: schema-based tools and "
                                f"kubectl's client-side validation refuse it; the API server accepts it and stores an "
                                f"empty {name}", manifest, FieldPath((name,)), at=ROOT)
    # Fields written in the other version's shape: one finding per request, at its first field.
    reshaped = {path: shape for shape in shapes for path in shape.paths()}
    reported: set[int] = set()
    for problem in schema.validate(manifest.value, release.version, manifest.api_version, manifest.kind, strict=strict):
        rule = "DRA101" if problem.kind == "unknown-field" else "DRA102"
        message = problem.message
        shape = reshaped.get(problem.path) if rule == "DRA101" else None
        if shape is not None:
            if id(shape) in reported:
                continue
            reported.add(id(shape))
            message = shape.hint()
        full = FieldPath(tuple(manifest.base) + tuple(problem.path))
        if rule == "DRA102" and "string" in message.split(", found", 1)[0]:  # "expected string, found …"
            message += quote_hint(doc, full, _value_at(manifest.value, problem.path))
        emitter.place(rule, message, manifest, problem.path)


def _value_at(value: Any, path: FieldPath) -> Any:
    for segment in path:
        try:
            value = value[segment]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _contexts(target: _Target, release: Release, index: Index, *, operation: str | None = None,
              subresource: str = "", strict: bool = True) -> Iterator[CheckContext]:
    """The check contexts for one object: a create, an update, and/or a status write."""
    limits = limits_for(release.minor)
    old = target.old
    if operation is None:
        operation = "UPDATE" if old is not None else "CREATE"
    writes = [subresource]
    if operation == "UPDATE" and old is not None and not subresource and target.canonical.kind in _STATUS_WRITTEN:
        # A pair of files cannot say which endpoint it was written to: judge what changed.
        spec_changed = old.value.get("spec") != target.canonical.value.get("spec")
        status_changed = old.value.get("status") != target.canonical.value.get("status")
        writes = ([""] if spec_changed or not status_changed else []) + (["status"] if status_changed else [])
    if target.stored is not None:
        gated, dropped = target.stored, target.dropped
    else:
        found = apply_gates(target.canonical, old, release)
        gated, dropped = found[0], tuple(found[1])
    for write in writes:
        yield CheckContext(release=release, limits=limits, obj=gated, old=old, operation=operation,
                           subresource=write, index=index, dropped=dropped, strict=strict)


def _run_checks(emitter: _Emitter, ctx: CheckContext, modules: Sequence[Any], *, dropped: bool,
                reshape: Callable[[Canonical, Problem], Problem | None] | None = None) -> None:
    obj = ctx.obj
    for problem in ctx.dropped if dropped else ():
        emitter.problem(obj, problem)
    for module in modules:
        try:
            for problem in module.check(ctx):
                kept = reshape(obj, problem) if reshape is not None else problem
                if kept is not None:
                    emitter.problem(obj, kept)
        except Exception as exc:  # a bug in one check must not cost the user the rest of the run
            _internal_error(emitter, obj, f"{module.__name__.rsplit('.', 1)[-1]}: {exc!r}", exc)


def _internal_error(emitter: _Emitter, obj: Canonical, what: str, exc: BaseException) -> None:
    """DRA000 on ``obj``: check ``what`` failed (the other checks ran)."""
    emitter.place("DRA000", f"internal error in check {what}{_where(exc)}; please report it. The other checks ran.",
                  obj.manifest, ROOT)


def _object_error(emitter: _Emitter, manifest: Manifest, stage: str, exc: BaseException) -> None:
    """DRA000 on one object whose ``stage`` failed: the run goes on with every other object."""
    pos = manifest.document.locate(manifest.base)
    _stage_error(emitter, stage, exc, file=manifest.document.file, line=pos.line, column=pos.column,
                 obj=manifest.display)


def _stage_error(emitter: _Emitter, stage: str, exc: BaseException, *, file: str, line: int, column: int,
                 obj: str = "") -> None:
    emitter.emit("DRA000", f"internal error in {stage}: {type(exc).__name__}: {str(exc)[:300]}{_where(exc)}; "
                           "please report it. The other objects and files were judged.",
                 file=file, line=line, column=column, obj=obj)


def _run_error(emitter: _Emitter, stage: str, exc: BaseException, files: Sequence[Any]) -> None:
    """DRA000 for a step over the whole run (on its first file): the findings of every object stand."""
    first = next((getattr(f, "file", None) or getattr(f, "name", "") for f in files), "")
    _stage_error(emitter, stage, exc, file=first, line=1, column=1)


def _where(exc: BaseException) -> str:
    """`` at module.py:123``: where in dralint an exception was raised, for the report it asks for."""
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    return f" at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" if frame else ""


def _feasibility(emitter: _Emitter, result: RunResult, index: Index, release: Release, options: Options,
                 linted_ids: set[int], cluster_given: bool, world: Any = None,
                 candidates: list[Canonical] | None = None) -> None:
    from . import feasibility  # heavy (CEL); only runs when there are slices to allocate from

    opts = feasibility.FeasibilityOptions(node=options.node, trace=frozenset(options.trace),
                                          show_allocation=options.show_allocation, max_steps=options.max_steps,
                                          max_seconds=options.max_seconds, together=options.together,
                                          processes=options.jobs)
    try:
        report = feasibility.judge(index, release, opts, lambda obj: id(obj) in linted_ids, world=world,
                                   candidates=candidates)
    except feasibility.UnknownNode:
        raise  # a usage error (exit 2), not a finding
    except Exception as exc:  # same promise as for checks: report, do not crash
        first = next(obj for obj in index.all_objects() if id(obj) in linted_ids)
        _internal_error(emitter, first, f"feasibility: {exc!r}", exc)
        return
    for obj, problem in report.problems:
        # Without --cluster a class absent from the run may well exist in the cluster: the reference
        # warning (DRA600) says so; calling the claim unallocatable would be a guess.
        if problem.rule == _CLASS_MISSING and not cluster_given:
            continue
        emitter.problem(obj, problem)
    result.allocations = list(report.allocations)
    result.traces = dict(report.traces)
