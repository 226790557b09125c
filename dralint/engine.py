"""The one engine call behind the command line and the webhook.

source → manifest → schema → convert → gating → checks → (feasibility) → findings. Nothing here
knows about argv, HTTP or terminals: the faces build ``Options``, call ``lint_paths`` /
``lint_text`` / ``review`` and render the findings they get back.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterable, Iterator, Mapping, Sequence

from . import checks as check_registry
from . import schema, source, suppress
from .catalog import Catalog, load_catalog
from .checks.base import CheckContext, Problem
from .convert import Canonical, to_canonical
from .findings import Finding, Severity
from .gating import apply_gates
from .index import Index
from .limits import limits_for
from .manifest import Manifest, NotAnObject, WrongGroup, identify
from .paths import FieldPath
from .releases import DEFAULT_MINOR, Release, parse_version
from .rule_filter import RuleFilter

# Input problems of the source stage → rule ids (rules/DRA00x-*.yaml).
_SOURCE_RULES = {"syntax": "DRA001", "duplicate-key": "DRA002", "unreadable": "DRA004", "binary": "DRA004",
                 "too-large": "DRA005", "too-deep": "DRA005", "alias-limit": "DRA005"}
# What the feasibility stage allocates for: claims, templates and the pods that use them.
_ALLOCATABLE = frozenset({"ResourceClaim", "ResourceClaimTemplate"})
_CLASS_MISSING = "DRA703"
# Kinds whose input errors mean "could not read the input at all": exit code 2.
_UNREADABLE = frozenset({"unreadable", "binary"})


@dataclass(frozen=True)
class Options:
    """What the user asked for; every face builds one of these."""

    kube_version: str = f"1.{DEFAULT_MINOR}"
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    strict: bool = True
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severities: Mapping[str, str] = field(default_factory=dict)
    cluster: tuple[str, ...] = ()
    old: str | None = None
    node: str | None = None
    trace: tuple[str, ...] = ()
    show_allocation: bool = False
    max_steps: int = 1_000_000
    max_seconds: float = 10.0
    report_unused_ignores: bool = False  # report suppressions that hid nothing (DRA910)
    # Where the objects judged against come from, as messages name it: the CLI's files are "this run";
    # the webhook's are the cluster it watches.
    context: str = "this run"
    # Suppressions (comments, the dralint.io/ignore annotation): read at all, and rules they cannot hide
    # (the webhook's policy outranks an object's own annotation).
    suppressions: bool = True
    protected: frozenset[str] = frozenset()
    fixes: bool = False  # attach a Fix to each finding that has one (dralint.fixers; --fix, the language server)

    @property
    def release(self) -> Release:
        return Release(parse_version(self.kube_version), dict(self.feature_gates))


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


class _Emitter:
    """Turns problems into findings: rule metadata, user paths, positions, the user's selection."""

    def __init__(self, catalog: Catalog, rules: RuleFilter, context: str = "this run") -> None:
        self.catalog = catalog
        self.rules = rules
        self.context = context
        self.findings: list[Finding] = []
        self._seen: set[tuple] = set()

    def emit(self, rule_id: str, message: str, *, file: str, line: int, column: int, obj: str = "",
             field_path: str = "", severity: Severity | None = None, details: Mapping[str, Any] | None = None) -> None:
        rule = self.catalog.rules.get(rule_id)
        if rule is None:  # a check reporting a rule the catalog lacks is our bug; say so instead of crashing
            rule, message = self.catalog.get("DRA000"), f"internal error: rule {rule_id} is not in the catalog ({message})"
        if not self.rules.selected(rule):
            return
        sev = self.rules.severity(rule, severity)
        if self.context != "this run":
            message = message.replace("this run", self.context)
        key = (rule_id, file, line, column, field_path, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(rule=rule.id, name=rule.name, severity=sev, category=rule.category,
                                     message=message, file=file, line=line, column=column, object=obj,
                                     field=field_path, details=details))

    def add(self, finding: Finding) -> None:
        """A finding another process made with the same catalog and selection."""
        key = (finding.rule, finding.file, finding.line, finding.column, finding.field, finding.message)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(finding)

    def problem(self, target: Canonical, problem: Problem) -> None:
        user = problem.user_path if problem.user_path is not None else target.to_user(problem.path)
        manifest = target.manifest
        doc = manifest.document
        full = FieldPath(tuple(manifest.base) + tuple(user))
        pos = doc.locate_in_scalar(full, problem.scalar_offset) if problem.scalar_offset is not None else doc.locate(full)
        self.emit(problem.rule, problem.message, file=doc.file, line=pos.line, column=pos.column,
                  obj=manifest.display, field_path=user.render(), severity=problem.severity, details=problem.details)


def lint_paths(paths: Sequence[str], options: Options) -> RunResult:
    """Lint files and folders (``-`` is stdin), with ``options.cluster`` and ``options.old`` as context."""
    found, problems = source.discover(list(paths) or ["."])
    cluster_files, old_files, context_problems = read_context(options)
    return lint_files([source.load_file(p) for p in found], options, cluster_files=cluster_files,
                      old_files=old_files, discovery_problems=list(problems) + context_problems)


def read_context(options: Options) -> tuple[list[Any], list[Any], list[Any]]:
    """The ``--cluster`` files, the ``--old`` files, and the problems of finding them."""
    cluster_found, cluster_problems = source.discover(list(options.cluster)) if options.cluster else ([], [])
    old_found, old_problems = source.discover([options.old]) if options.old else ([], [])
    return ([source.load_file(p) for p in cluster_found], [source.load_file(p) for p in old_found],
            list(cluster_problems) + list(old_problems))


def lint_text(text: str, options: Options, *, old_text: str | None = None, cluster_text: str | None = None,
              name: str = "manifest.yaml") -> list[Finding]:
    """Lint one YAML text (used by tests and the catalog examples)."""
    files = [source.load_text(text, name)]
    old = [source.load_text(old_text, "old.yaml")] if old_text is not None else []
    cluster = [source.load_text(cluster_text, "cluster.yaml")] if cluster_text is not None else []
    return lint_files(files, options, cluster_files=cluster, old_files=old).findings


def lint_files(files: Sequence[Any], options: Options, *, cluster_files: Sequence[Any] = (),
               old_files: Sequence[Any] = (), discovery_problems: Sequence[Any] = (),
               split: Split | None = None) -> RunResult:
    """Lint loaded source files (what ``lint_paths`` and ``lint_text`` do after reading)."""
    catalog = load_catalog()
    emitter = _Emitter(catalog, RuleFilter.build(catalog, options.select, options.ignore, options.severities))
    result = RunResult(findings=emitter.findings, files=len(files))

    for problem in discovery_problems:
        _source_problem(emitter, problem)
        result.input_error = result.input_error or problem.kind in _UNREADABLE
    for f in list(files) + list(cluster_files) + list(old_files):
        for problem in f.problems:
            _source_problem(emitter, problem)
            result.input_error = result.input_error or problem.kind in _UNREADABLE

    linted, cluster, olds = _run_manifests(files, cluster_files, old_files, emitter, result)
    result.objects = len(linted)
    _judge(emitter, result, linted, olds, cluster, options, cluster_given=bool(cluster_files), split=split)
    _suppress(emitter, result, suppress.collect(files, linted), options)
    if options.fixes:
        from . import fixers

        result.findings[:] = fixers.attach(result.findings, files, options.release, catalog)
    return result


def load_cluster(paths: Sequence[str], options: Options) -> tuple[Index, list[Finding]]:
    """Read cluster state once (the webhook keeps it between requests); input problems as findings."""
    found, problems = source.discover(list(paths))
    files = [source.load_file(p) for p in found]
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
           options: Options, *, cluster: Index | None = None, name: str = "<request>") -> list[Finding]:
    """Judge one object of an admission request (the webhook's call); ``old`` for UPDATE.

    With ``cluster`` (from ``load_cluster``) a claim or pod is also judged for feasibility.
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
           cluster_given=cluster is not None, base=cluster)
    _suppress(emitter, result, suppress.collect([], manifests), options)
    return result.findings


def _judge(emitter: _Emitter, result: RunResult, linted: list[Manifest], olds: Mapping[tuple, Manifest],
           cluster: list[Canonical], options: Options, *, operation: str | None = None, subresource: str = "",
           cluster_given: bool = False, split: Split | None = None, base: Index | None = None) -> None:
    """Schema, conversion, checks and feasibility for the linted objects; the shared core of every face."""
    release = options.release
    targets, work = _targets(emitter, linted, olds, cluster, options, operation, subresource, base)
    index = work.index
    if split is not None:
        _judge_split(emitter, targets, work, split)
    else:
        for target in targets:
            _judge_one(emitter, target, work)
    feasibility_wanted = any(emitter.rules.selected(r) for r in emitter.catalog if r.id.startswith("DRA7"))
    # With --cluster an empty device list is an answer too ("no slices: nothing can be allocated").
    if feasibility_wanted and (index.slices or cluster_given) and any(
            t.canonical.kind in _ALLOCATABLE or t.canonical.manifest.pod_spec_paths for t in targets):
        # The scheduler never sees what the API server refused: objects with errors are not judged.
        refused = {f.object for f in emitter.findings if f.severity is Severity.ERROR}
        judged = {id(t.stored or t.canonical) for t in targets if t.canonical.manifest.display not in refused}
        _feasibility(emitter, result, index, release, options, judged, cluster_given)
    result.findings.sort(key=Finding.sort_key)


def _targets(emitter: _Emitter, linted: list[Manifest], olds: Mapping[tuple, Manifest], cluster: list[Canonical],
             options: Options, operation: str | None, subresource: str,
             base: Index | None = None) -> tuple[list["_Target"], "_Work"]:
    """The objects the release serves (DRA801 for the others), in canonical form, and the index."""
    release = options.release
    targets: list[_Target] = []
    for manifest in linted:
        if not _served(emitter, manifest, release):
            continue
        old_manifest = _old_for(manifest, olds)
        canonical, old = to_canonical(manifest), to_canonical(old_manifest) if old_manifest else None
        targets.append(_Target(canonical, old, apply_gates(canonical, old, release)[0]))
    # References and feasibility see each object as the server would store it.
    stored = [t.stored or t.canonical for t in targets]
    index = base.overlay(stored) if base is not None else Index.build(stored + cluster)
    return targets, _Work(release, index, options.strict, operation, subresource)


@dataclass(frozen=True)
class _Work:
    """What judging one object needs besides the object: the same for every object of a run."""

    release: Release
    index: Index
    strict: bool
    operation: str | None
    subresource: str


def _judge_one(emitter: _Emitter, target: _Target, work: _Work) -> None:
    """Schema and object checks of one object (independent of every other object's judgement)."""
    manifest = target.canonical.manifest
    if manifest.is_dra:
        _schema(emitter, manifest, work.release, work.strict)
    for ctx in _contexts(target, work.release, work.index, operation=work.operation, subresource=work.subresource,
                         strict=work.strict):
        _run_checks(emitter, ctx)


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
                             emitter.catalog, emitter.rules, report_unused=options.report_unused_ignores)
    result.findings[:] = sorted(outcome.findings + kept, key=Finding.sort_key) if kept else outcome.findings
    result.suppressed = outcome.suppressed


def _single(obj: Mapping[str, Any] | None, name: str) -> source.SourceFile:
    """An admission object as a one-document source file (no positions: it came without a file)."""
    doc = source.document_from_value(dict(obj) if isinstance(obj, Mapping) else obj, name)
    return source.SourceFile(name, [doc], [])


def _manifests(files: Iterable[Any], emitter: _Emitter, result: RunResult | None, *,
               from_cluster: bool) -> Iterator[Manifest]:
    for f in files:
        for doc in f.documents:
            if result is not None:
                result.documents += 1
            for item in identify(doc, from_cluster=from_cluster):
                if isinstance(item, WrongGroup):
                    if not from_cluster:
                        pos = doc.locate(item.base.child("apiVersion"))
                        emitter.emit("DRA007", f"{item.kind} does not exist in {item.api_version}; it is in "
                                               f"{item.expected} (the API server answers \"no matches for kind\")",
                                     file=doc.file, line=pos.line, column=pos.column, field_path="apiVersion",
                                     obj=f"{item.kind} {_name_of(item)}")
                    continue
                if isinstance(item, NotAnObject):
                    if not from_cluster:
                        emitter.emit("DRA003", f"the document is {item.found}, not a Kubernetes object (a mapping)",
                                     file=doc.file, line=doc.line, column=1)
                    continue
                if not item.api_version:
                    pos = doc.locate(item.base)
                    hint = " (keys are case-sensitive: found `apiversion`)" if "apiversion" in item.value else ""
                    emitter.emit("DRA006", f"{item.kind} has no apiVersion{hint}; the API server refuses an object "
                                           "without apiVersion and kind", file=doc.file, line=pos.line,
                                 column=pos.column, obj=item.display, field_path="apiVersion")
                    continue
                yield item


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
    field_path = problem.path.render() if getattr(problem, "path", None) else ""
    emitter.emit(rule, problem.message, file=problem.file, line=problem.line, column=problem.column,
                 field_path=field_path)


def _served(emitter: _Emitter, manifest: Manifest, release: Release) -> bool:
    """DRA objects must be served by the target release (DRA801); others always pass."""
    served = schema.serves(release.version, manifest.api_version, manifest.kind)
    gate = release.serving_gate(manifest.kind) if served else None
    if not manifest.is_dra or (served and (gate is None or release.gate(gate))):
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
    pos = manifest.document.locate(manifest.base.child("apiVersion"))
    emitter.emit("DRA801", f"{manifest.api_version} {manifest.kind} is not served by Kubernetes {release.version}; {why}"
                           f" ({advice})",
                 file=manifest.document.file, line=pos.line, column=pos.column, obj=manifest.display,
                 field_path="apiVersion")
    return False


def _schema(emitter: _Emitter, manifest: Manifest, release: Release, strict: bool) -> None:
    doc = manifest.document
    for name in schema.missing_top_level(manifest.value, release.version, manifest.api_version, manifest.kind):
        pos = doc.locate(manifest.base)
        emitter.emit("DRA103", f"{manifest.kind} has no `{name}`, which its schema requires: schema-based tools and "
                               f"kubectl's client-side validation refuse it; the API server accepts it and stores an empty "
                               f"{name}", file=doc.file, line=pos.line, column=pos.column, obj=manifest.display,
                     field_path=name)
    for problem in schema.validate(manifest.value, release.version, manifest.api_version, manifest.kind, strict=strict):
        rule = "DRA101" if problem.kind == "unknown-field" else "DRA102"
        pos = doc.locate(FieldPath(tuple(manifest.base) + tuple(problem.path)))
        emitter.emit(rule, problem.message, file=doc.file, line=pos.line, column=pos.column, obj=manifest.display,
                     field_path=problem.path.render())


def _contexts(target: _Target, release: Release, index: Index, *, operation: str | None = None,
              subresource: str = "", strict: bool = True) -> Iterator[CheckContext]:
    """The check contexts for one object: a create, an update, and/or a status write."""
    limits = limits_for(release.minor)
    old = target.old
    if operation is None:
        operation = "UPDATE" if old is not None else "CREATE"
    writes = [subresource]
    if operation == "UPDATE" and old is not None and not subresource and target.canonical.kind == "ResourceClaim":
        # A pair of files cannot say which endpoint it was written to: judge what changed.
        spec_changed = old.value.get("spec") != target.canonical.value.get("spec")
        status_changed = old.value.get("status") != target.canonical.value.get("status")
        writes = ([""] if spec_changed or not status_changed else []) + (["status"] if status_changed else [])
    for write in writes:
        gated, dropped = apply_gates(target.canonical, old, release)
        yield CheckContext(release=release, limits=limits, obj=gated, old=old, operation=operation,
                           subresource=write, index=index, dropped=tuple(dropped), strict=strict)


def _run_checks(emitter: _Emitter, ctx: CheckContext) -> None:
    obj = ctx.obj
    for problem in ctx.dropped:
        emitter.problem(obj, problem)
    for module in check_registry.checks_for(obj.kind):
        try:
            for problem in module.check(ctx):
                emitter.problem(obj, problem)
        except Exception as exc:  # a bug in one check must not cost the user the rest of the run
            _internal_error(emitter, obj, f"{module.__name__.rsplit('.', 1)[-1]}: {exc!r}", exc)


def _internal_error(emitter: _Emitter, obj: Canonical, what: str, exc: BaseException) -> None:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" if frame else ""
    doc = obj.manifest.document
    pos = doc.locate(obj.manifest.base)
    emitter.emit("DRA000", f"internal error in check {what}{where}; please report it. The other checks ran.",
                 file=doc.file, line=pos.line, column=pos.column, obj=obj.manifest.display)


def _feasibility(emitter: _Emitter, result: RunResult, index: Index, release: Release, options: Options,
                 linted_ids: set[int], cluster_given: bool) -> None:
    from . import feasibility  # heavy (CEL); only runs when there are slices to allocate from

    opts = feasibility.FeasibilityOptions(node=options.node, trace=frozenset(options.trace),
                                          show_allocation=options.show_allocation, max_steps=options.max_steps,
                                          max_seconds=options.max_seconds)
    try:
        report = feasibility.judge(index, release, opts, lambda obj: id(obj) in linted_ids)
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
