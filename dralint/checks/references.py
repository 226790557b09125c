"""References across objects: claims → DeviceClasses, pods → claims and templates, classes → drivers.

The API server checks none of these at admission (they are resolved when a pod is scheduled), so
an absent target is only a **warning**: it may well live in the cluster. And only when the run
describes that kind of object at all — linting a lone claim says nothing about the classes of a
cluster, but linting it together with the cluster's DeviceClasses (files or ``--cluster``) does.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..convert import Canonical
from ..fuzzy import closest
from ..index import namespaces_of
from ..kube.shapes import LEGACY_VERSIONS
from ..paths import FieldPath
from .base import CheckContext
from ..problems import Problem
from .fields import POD_KINDS, spec_path

KINDS: frozenset[str] = frozenset({"ResourceClaim", "ResourceClaimTemplate", "DeviceClass"}) | POD_KINDS

R_CLASS_NOT_FOUND = "DRA600"
R_CLAIM_NOT_FOUND = "DRA601"
R_TEMPLATE_NOT_FOUND = "DRA602"
R_DRIVER_NOT_PUBLISHED = "DRA603"

RULES = ("DRA600", "DRA601", "DRA602", "DRA603")

# `device.driver == "x"` (either quote, either order) in a CEL selector.
_DRIVER_EQ = re.compile(r"""device\.driver\s*==\s*(["'])([^"']+)\1|(["'])([^"']+)\3\s*==\s*device\.driver""")


def check(ctx: CheckContext) -> Iterator[Problem]:
    """Warnings for references whose target the run should contain but does not."""
    obj, index = ctx.obj, ctx.index
    # Only DRA objects have legacy versions (a JobSet's v1alpha2 is its own, current one).
    if index is None or (obj.manifest.is_dra and obj.version in LEGACY_VERSIONS):
        return
    if obj.manifest.pod_spec_paths:
        yield from _pod_references(ctx)
        return
    if obj.kind in ("ResourceClaim", "ResourceClaimTemplate"):
        if ctx.operation == "CREATE" and not ctx.subresource:
            yield from _class_references(ctx)
            yield from _selector_drivers(ctx, _claim_selectors(obj))
    elif obj.kind == "DeviceClass":
        selectors = obj.get("spec", "selectors")
        yield from _selector_drivers(ctx, [(lambda: FieldPath(("spec", "selectors")), selectors)])


# --- claims → classes -----------------------------------------------------------------------------

def _request_bodies(obj: Canonical) -> Iterator[tuple[tuple, dict]]:
    """(segments below the spec's requests, body) of every ``exactly`` and subrequest of a claim or
    template; ``_body_path`` makes the path, only for bodies with something to report."""
    requests = obj.get(*_requests_path(obj.kind))
    for i, request in enumerate(requests if isinstance(requests, list) else ()):
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            yield (i, "exactly"), request["exactly"]
        subs = request.get("firstAvailable")
        for j, sub in enumerate(subs if isinstance(subs, list) else ()):
            if isinstance(sub, dict):
                yield (i, "firstAvailable", j), sub


def _requests_path(kind: str) -> FieldPath:
    return spec_path(kind).child("devices", "requests")


def _body_path(obj: Canonical, where: tuple) -> FieldPath:
    return _requests_path(obj.kind).child(*where)


def _class_references(ctx: CheckContext) -> Iterator[Problem]:
    assert ctx.index is not None
    classes = ctx.index.classes
    if not classes and not ctx.index.refused:
        return
    for where, body in _request_bodies(ctx.obj):
        name = body.get("deviceClassName")
        if isinstance(name, str) and name and name not in classes and (classes or _refused(ctx, "DeviceClass", name)):
            yield Problem(R_CLASS_NOT_FOUND, _body_path(ctx.obj, where).child("deviceClassName"),
                          f"DeviceClass {name!r} is not among the {len(classes)} DeviceClass(es) of this run"
                          f"{_refused(ctx, 'DeviceClass', name) or _class_suggestion(ctx.index, name)}; unless it "
                          "exists in the cluster, the claim can never be allocated (the API server does not check this)")


# --- pods → claims and templates ------------------------------------------------------------------

def _pod_references(ctx: CheckContext) -> Iterator[Problem]:
    assert ctx.index is not None
    index, obj = ctx.index, ctx.obj
    if not index.claims and not index.templates and not index.refused:
        return
    spaces = namespaces_of(obj.namespace)

    # Whether a name exists is asked of the tables (the webhook's holds every claim of the cluster, and a
    # fact over all of them would be worked out again after every change of a claim). Every name of the
    # namespace is gathered only to suggest one for a name that does not exist, in facts keyed by what
    # the cluster holds, never by what the object names (the webhook keeps an index's facts for as long
    # as the cluster state lasts, and the names come from callers).
    def exists(table: Any, name: str) -> bool:
        return any((space, name) in table for space in spaces)

    def names(kind: str, table: str) -> frozenset[str]:
        by_space = index.derived(f"{kind}-names-by-namespace", lambda idx: _names_by_namespace(getattr(idx, table)))
        return frozenset().union(*(by_space.get(ns, ()) for ns in spaces))

    where = f"namespace {obj.namespace!r}" if obj.namespace else "the default namespace"
    for base in obj.manifest.pod_spec_paths:
        entries = obj.get(*base, "resourceClaims")
        for i, entry in enumerate(entries if isinstance(entries, list) else ()):
            if not isinstance(entry, dict):
                continue
            source, spath = (entry["source"], base.child("resourceClaims", i, "source")) \
                if isinstance(entry.get("source"), dict) else (entry, base.child("resourceClaims", i))
            claim, template = source.get("resourceClaimName"), source.get("resourceClaimTemplateName")
            # Silent when the run has no claims or templates at all, unless the one named was refused.
            described = bool(index.claims or index.templates)
            if isinstance(claim, str) and claim and not exists(index.claims, claim) and (
                    described or _refused(ctx, "ResourceClaim", claim)):
                other = " (a ResourceClaimTemplate of that name exists: use `resourceClaimTemplateName`)" \
                    if exists(index.templates, claim) else _refused(ctx, "ResourceClaim", claim) \
                    or _did_you_mean(claim, names("claim", "claims"))
                yield Problem(R_CLAIM_NOT_FOUND, spath.child("resourceClaimName"),
                              f"ResourceClaim {claim!r} is not in {where} in this run{other}; unless it exists in "
                              "the cluster, the pod stays pending")
            if isinstance(template, str) and template and not exists(index.templates, template) and (
                    described or _refused(ctx, "ResourceClaimTemplate", template)):
                other = " (a ResourceClaim of that name exists: use `resourceClaimName`)" \
                    if exists(index.claims, template) else _refused(ctx, "ResourceClaimTemplate", template) \
                    or _did_you_mean(template, names("template", "templates"))
                yield Problem(R_TEMPLATE_NOT_FOUND, spath.child("resourceClaimTemplateName"),
                              f"ResourceClaimTemplate {template!r} is not in {where} in this run{other}; unless it "
                              "exists in the cluster, the pod cannot be started (its claim cannot be created)")


# --- selectors → drivers --------------------------------------------------------------------------

def _published_drivers(index: Any) -> frozenset[str]:
    """The drivers the run's slices publish, once per run (not once per selector)."""
    return frozenset(d for d in (s.get("spec", "driver") for s in index.slices) if isinstance(d, str))


def _claim_selectors(obj: Canonical) -> list[tuple[Callable[[], FieldPath], Any]]:
    return [(functools.partial(_selectors_path, obj, where), body["selectors"])
            for where, body in _request_bodies(obj) if isinstance(body.get("selectors"), list)]


def _selectors_path(obj: Canonical, where: tuple) -> FieldPath:
    return _body_path(obj, where).child("selectors")


def _selector_drivers(ctx: CheckContext,
                      selector_lists: Iterable[tuple[Callable[[], FieldPath], Any]]) -> Iterator[Problem]:
    """Selectors that require a driver no ResourceSlice of the run publishes (only with slices given).

    ``selector_lists`` pairs each list with a function making its path, called only to report.
    """
    assert ctx.index is not None
    slices = ctx.index.slices
    if not slices:
        return
    drivers = ctx.index.derived("published-drivers", _published_drivers)
    # The same expressions recur across a run's claims: their driver tests are found once.
    required = ctx.index.derived("selector-drivers", lambda _: {})
    for path_of, selectors in selector_lists:
        for j, selector in enumerate(selectors if isinstance(selectors, list) else ()):
            expression = selector.get("cel", {}).get("expression") if isinstance(selector, dict) and \
                isinstance(selector.get("cel"), dict) else None
            if not isinstance(expression, str):
                continue
            if expression not in required:
                required[expression] = tuple((m.group(2) or m.group(4), m.start())
                                             for m in _DRIVER_EQ.finditer(expression))
            for driver, offset in required[expression]:
                if driver not in drivers:
                    known = sorted(drivers)
                    yield Problem(R_DRIVER_NOT_PUBLISHED, path_of().child(j, "cel", "expression"),
                                  f"the selector requires driver {driver!r}, but none of the {len(slices)} "
                                  f"ResourceSlice(s) of this run is published by it (drivers: {', '.join(known)})"
                                  f"{_did_you_mean(driver, known)}; no device can match",
                                  scalar_offset=offset)


def _names_by_namespace(objects: Mapping[tuple[str, str], Any]) -> dict[str, frozenset[str]]:
    by_space: dict[str, set[str]] = {}
    for ns, name in objects:
        by_space.setdefault(ns, set()).add(name)
    return {ns: frozenset(names) for ns, names in by_space.items()}


def _class_suggestion(index: Any, name: str) -> str:
    """"did you mean" among the run's classes, once per missing name: with a thousand classes the
    fuzzy match costs milliseconds, and the same missing name recurs in every claim that uses it.
    Kept per index (a run's, or one review's overlay), not handed to the webhook's cluster state:
    the names come from callers."""
    suggestions = index.derived("class-suggestions", lambda _: {})
    if name not in suggestions:
        suggestions[name] = _did_you_mean(name, index.classes)
    return suggestions[name]


def _refused(ctx: CheckContext, kind: str, name: str) -> str:
    """Why an object of that name does not count: the one in the run would be refused by the API server."""
    assert ctx.index is not None
    file = ctx.index.refused_file(kind, ctx.obj.namespace, name)
    return f" (the one in {file} would be refused by the API server: see its errors)" if file else ""


def _did_you_mean(name: str, candidates: Iterable[str]) -> str:
    close = closest(name, [c for c in candidates if isinstance(c, str)], cutoff=0.6)
    return f" (did you mean {close!r}?)" if close is not None else ""
