"""Each object on its own: read from its documents, served by the release, converted, gated, and
judged by the schema and by the checks of the object itself (those that resolve references run
once the index holds what the API server would accept)."""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .. import checks as check_registry
from .. import request_shape, schema
from ..cancel import checkpoint
from ..checks.base import CheckContext, ObjectCheck
from ..convert import Canonical, to_canonical
from ..gating import apply_gates
from ..index import Index
from ..kube.limits import limits_for
from ..kube.releases import Release
from ..manifest import Manifest, NotJudged, Unread, identify, mistaken_object, object_shaped, refusal
from ..options import Options
from ..org_policy import OrgPolicy
from ..problems import Problem
from ..source import SourceFile, document_from_value
from .emit import Emitter, internal_error, object_error, on_manifest, refused, stage_error
from .result import RunResult

# What pairs an object of an update with its old self: group, kind, namespace and name.
Identity = tuple[str, str, str, str]

_EXACTLY_OR_FIRST = "DRA206"
# The checks that resolve references to other objects: they run once the objects the API server
# would refuse are known, against the index of the others (acceptance.py).
_REFERENCE_CHECKS = (check_registry.pods, check_registry.references, check_registry.cel_hints)
# Kinds whose status a controller writes through /status: a pair of files may be either write.
_STATUS_WRITTEN = frozenset({"ResourceClaim", "ResourcePoolStatusRequest"})


@dataclass(frozen=True)
class Target:
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


@dataclass(frozen=True)
class Work:
    """What judging one object needs besides the object: the same for every object of a run."""

    release: Release
    index: Index
    strict: bool
    operation: str | None
    subresource: str
    org_policy: OrgPolicy | None = None


def single_file(obj: Mapping[str, Any] | None, name: str) -> SourceFile:
    """An admission object as a one-document source file (no positions: it came without a file)."""
    doc = document_from_value(dict(obj) if isinstance(obj, Mapping) else obj, name)
    return SourceFile(name, [doc], [])


def read_manifests(files: Iterable[SourceFile], emitter: Emitter, result: RunResult | None, *,
                   from_cluster: bool) -> Iterator[Manifest]:
    """The objects of ``files`` the later stages judge; the manifest stage's refusals reported, and
    the documents and kinds that are not judged counted in ``result``."""
    for f in files:
        manifests_file = any(object_shaped(d.value) for d in f.documents)
        for doc in f.documents:
            if result is not None:
                result.documents += 1
            if not object_shaped(doc.value) and not mistaken_object(doc.value, manifests_file):
                # YAML that is no Kubernetes object (a playbook, a settings file): not ours to judge.
                if result is not None:
                    result.foreign += 1
                continue
            try:
                items = list(identify(doc, from_cluster=from_cluster))
            except Exception as exc:  # one document's surprise must not cost the rest of the run
                stage_error(emitter, "reading the object's kind and apiVersion", exc, file=doc.file, line=doc.line,
                            column=1)
                continue
            for item in items:
                if isinstance(item, Unread | NotJudged):
                    if result is not None and not from_cluster:
                        label = f"{item.kind} ({item.api_version})" if item.api_version else item.kind
                        counts = result.unread if isinstance(item, Unread) else result.not_judged
                        counts[label] = counts.get(label, 0) + 1
                    continue
                found = refusal(item)
                if found is not None:
                    if isinstance(item, Manifest) or not from_cluster:  # of the cluster's, only DRA006 is told
                        refused(emitter, found)
                elif isinstance(item, Manifest):
                    yield item


def run_manifests(files: Sequence[SourceFile], cluster_files: Sequence[SourceFile], old_files: Sequence[SourceFile],
                  emitter: Emitter, result: RunResult | None) -> tuple[list[Manifest], list[Canonical], dict[Identity, Manifest]]:
    """The linted manifests, the cluster state (canonical) and the stored objects of ``--old`` by identity."""
    linted = list(read_manifests(files, emitter, result, from_cluster=False))
    cluster = [to_canonical(m) for m in read_manifests(cluster_files, emitter, None, from_cluster=True)]
    olds = {identity(m): m for m in read_manifests(old_files, emitter, None, from_cluster=False)}
    return linted, cluster, olds


def _old_for(manifest: Manifest, olds: Mapping[Identity, Manifest]) -> Manifest | None:
    """The stored object a new one updates: same kind, namespace and name; or, when the old file holds
    exactly one object of that kind, that one (an update that renames it is then judged, and refused,
    as the API server would: names are immutable)."""
    if not olds:  # a run without --old: no object of it is an update
        return None
    found = olds.get(identity(manifest))
    if found is not None:
        return found
    same_kind = [m for m in olds.values() if (m.group, m.kind) == (manifest.group, manifest.kind)]
    return same_kind[0] if len(same_kind) == 1 else None


def identity(manifest: Manifest) -> Identity:
    """What names an object in the cluster: group, kind, namespace and name."""
    return (manifest.group, manifest.kind, manifest.namespace, manifest.name)


def read_targets(emitter: Emitter, linted: list[Manifest], olds: Mapping[Identity, Manifest], cluster: list[Canonical],
                 options: Options, operation: str | None, subresource: str,
                 base: Index | None = None,
                 beside: Callable[[Canonical], Any] | None = None) -> tuple[list[Target], Work]:
    """The objects the release serves (DRA801 for the others), in canonical form, and the index."""
    release = options.release
    targets: list[Target] = []
    unserved: list[Manifest] = []
    for manifest in linted:
        try:
            served, problem = schema.serving(manifest, release)
            if problem is not None:
                on_manifest(emitter, manifest, problem)
            if not served:
                unserved.append(manifest)
                continue
            old_manifest = _old_for(manifest, olds)
            canonical, old = to_canonical(manifest), to_canonical(old_manifest) if old_manifest else None
            stored, dropped = apply_gates(canonical, old, release)
        except Exception as exc:  # this object is not judged; every other one is
            object_error(emitter, manifest, "reading the object (its version, conversion and feature gates)", exc)
            continue
        targets.append(Target(canonical, old, stored, tuple(dropped)))
    # References see each object as the server would store it (feasibility: see _as_allocated).
    as_stored = [t.stored or t.canonical for t in targets]
    index = base.overlay(as_stored, beside=beside) if base is not None else Index.build(as_stored + cluster)
    for manifest in unserved:  # refused too: what names them is told so, not that they are missing
        index.refused.setdefault((manifest.kind, manifest.namespace, manifest.name), manifest.document.file)
    return targets, Work(release, index, options.strict, operation, subresource, options.org_policy)


def judge_one(emitter: Emitter, target: Target, work: Work, *, cross: bool = False) -> None:
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
            object_error(emitter, manifest, "schema validation", exc)
    try:
        # Under strict decoding the schema's one finding (DRA101) says it all, when it is reported.
        reshape = _reshaped(target.shapes, work.strict and emitter.rules.selected(emitter.catalog.get("DRA101")))
        contexts = list(_contexts(target, work.release, work.index, operation=work.operation,
                                  subresource=work.subresource, strict=work.strict,
                                  org_policy=work.org_policy))
    except Exception as exc:
        object_error(emitter, manifest, "preparing its checks", exc)
        return
    for ctx in contexts:
        _run_checks(emitter, ctx, modules, dropped=not cross, reshape=reshape)


def _schema(emitter: Emitter, manifest: Manifest, release: Release, strict: bool,
            shapes: Sequence[request_shape.Misplaced] = ()) -> None:
    for problem in schema.check(manifest, release, strict, shapes):
        on_manifest(emitter, manifest, problem)


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


def _contexts(target: Target, release: Release, index: Index, *, operation: str | None = None,
              subresource: str = "", strict: bool = True,
              org_policy: OrgPolicy | None = None) -> Iterator[CheckContext]:
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
                           subresource=write, index=index, dropped=dropped, strict=strict,
                           org_policy=org_policy)


def _run_checks(emitter: Emitter, ctx: CheckContext, modules: Sequence[ObjectCheck], *, dropped: bool,
                reshape: Callable[[Canonical, Problem], Problem | None] | None = None) -> None:
    """The problems of ``modules`` (and those the feature gates dropped) on the object of ``ctx``."""
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
            internal_error(emitter, obj, f"{module.__name__.rsplit('.', 1)[-1]}: {exc!r}", exc)
