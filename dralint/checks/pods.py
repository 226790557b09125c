"""The DRA fields of pod specs: ``spec.resourceClaims`` and the containers' ``resources.claims``.

Core validation (``ValidatePodSpec``) checks that every pod claim entry has a unique DNS-label
name and exactly one of ``resourceClaimName`` / ``resourceClaimTemplateName`` (1.26–1.30: under
``source``), that each container claim names one of those entries, at most once, with an
optional ``request`` that is a DNS label, and that pod-level ``resources`` carry no claims. The
server does not look into the referenced claim; when it is part of the run, dralint does: a
``request`` the claim does not have would silently give the container no device. A pod that names
its node (``spec.nodeName``) skips the scheduler, which alone allocates claims: its template
claims, and named claims not yet allocated, never get devices.

Workloads (Deployment, Job, …) carry pod specs in templates; each one is checked the same way.
"""
from __future__ import annotations

import difflib
from typing import Any, Iterator

from ..kube.shapes import CONTAINER_LISTS, FLAT_SOURCE_SINCE, LEGACY_VERSIONS
from ..paths import FieldPath
from ..schema import UNKNOWN_FIELD, core
from .base import CheckContext
from ..problems import Problem
from .fields import POD_KINDS, spec_path
from ..kube.validation import is_dns1123_label, is_dns1123_subdomain

KINDS: frozenset[str] = POD_KINDS

R_NAME = "DRA240"
R_NAME_DUPLICATE = "DRA241"
R_SOURCE = "DRA242"
R_TARGET_NAME = "DRA243"
R_CONTAINER_NOT_FOUND = "DRA244"
R_CONTAINER_NAME_REQUIRED = "DRA245"
R_CONTAINER_DUPLICATE = "DRA246"
R_CONTAINER_REQUEST = "DRA247"
R_POD_LEVEL = "DRA248"
R_BYPASSES_SCHEDULER = "DRA249"
R_REQUEST_UNKNOWN = "DRA604"
R_UNKNOWN_FIELD = "DRA101"
R_WRONG_TYPE = "DRA102"

RULES = ("DRA101", "DRA102", "DRA240", "DRA241", "DRA242", "DRA243", "DRA244", "DRA245", "DRA246", "DRA247", "DRA248",
         "DRA249", "DRA604")

SOURCES = ("resourceClaimName", "resourceClaimTemplateName")
# Before 1.31, and with DRAControlPlaneController on in 1.31, classic DRA let a driver's controller
# allocate claims without the scheduler.
_STRUCTURED_ONLY_SINCE = 31


def check(ctx: CheckContext) -> Iterator[Problem]:
    """Problems of every pod spec in a Pod or workload."""
    obj = ctx.obj
    for base in obj.manifest.pod_spec_paths:
        spec = obj.get(*base)
        if isinstance(spec, dict):
            yield from _decoding(ctx, spec, FieldPath(base))
            yield from _pod_spec(ctx, spec, FieldPath(base))


def _decoding(ctx: CheckContext, spec: dict, path: FieldPath) -> Iterator[Problem]:
    """What strict decoding refuses in the claim lists: unknown fields (DRA101), wrong types (DRA102)."""
    for problem in core.validate_claims(spec, ctx.release.minor, strict=ctx.strict):
        rule = R_UNKNOWN_FIELD if problem.kind == UNKNOWN_FIELD else R_WRONG_TYPE
        yield Problem(rule, FieldPath(tuple(path) + tuple(problem.path)), problem.message)


def _pod_spec(ctx: CheckContext, spec: dict, path: FieldPath) -> Iterator[Problem]:
    entries = spec.get("resourceClaims")
    entries = entries if isinstance(entries, list) else []
    names: dict[str, dict] = {}
    for i, entry in enumerate(entries):
        if isinstance(entry, dict):
            yield from _pod_claim(ctx, entry, path.child("resourceClaims", i), names)
    yield from _bypassed_scheduler(ctx, spec, entries, path)
    resources = spec.get("resources")
    if isinstance(resources, dict) and resources.get("claims"):
        yield Problem(R_POD_LEVEL, path.child("resources", "claims"),
                      "claims cannot be set for resources at pod level; list the claim in `resources.claims` of "
                      "each container that uses it (API server: Forbidden)")
    for lst in CONTAINER_LISTS:
        containers = spec.get(lst)
        for c, container in enumerate(containers if isinstance(containers, list) else ()):
            claims = container.get("resources", {}).get("claims") if isinstance(container, dict) and \
                isinstance(container.get("resources"), dict) else None
            if isinstance(claims, list):
                yield from _container_claims(ctx, claims, path.child(lst, c, "resources", "claims"), names)


def _pod_claim(ctx: CheckContext, entry: dict, path: FieldPath, names: dict[str, dict]) -> Iterator[Problem]:
    name = entry.get("name", "")
    if not isinstance(name, str):
        return
    if not name:
        yield Problem(R_NAME, path.child("name"),
                      "a pod claim entry needs a `name`: containers refer to the claim by it in "
                      "`resources.claims` (API server: Required value)")
    elif name in names:
        yield Problem(R_NAME_DUPLICATE, path.child("name"),
                      f"pod claim name {name!r} is used twice; names in `spec.resourceClaims` must be unique "
                      "(API server: Duplicate value)")
    else:
        for msg in is_dns1123_label(name):
            yield Problem(R_NAME, path.child("name"),
                          f"pod claim name {name!r} is not a DNS label: {msg} (API server: Invalid value)")
    names.setdefault(name, entry)
    source, source_path = _source(ctx, entry, path)
    present = [f for f in SOURCES if source.get(f)]
    if not present:
        yield Problem(R_SOURCE, path, _missing_source_message(ctx, entry, name))
    elif len(present) > 1:
        yield Problem(R_SOURCE, path,
                      f"pod claim {name!r} sets both `resourceClaimName` and `resourceClaimTemplateName`; at most "
                      "one of them may be specified: an existing claim to share, or a template to get a claim per "
                      "pod (API server: Invalid value)")
    for fld in present:
        value = source[fld]
        # ``${VAR}``: a placeholder envsubst fills in before the file is applied (real-world MPIJob
        # templates name their claim templates so); its final spelling is not known here.
        if isinstance(value, str) and "${" not in value:
            for msg in is_dns1123_subdomain(value):
                yield Problem(R_TARGET_NAME, source_path.child(fld),
                              f"{fld} {value!r} is not a valid object name: {msg} (API server: Invalid value)")


def _bypassed_scheduler(ctx: CheckContext, spec: dict, entries: list, path: FieldPath) -> Iterator[Problem]:
    """A pod that names its node is never seen by the scheduler, and only the scheduler allocates
    structured-parameter claims: a claim from a template, or a named one not allocated yet, stays
    unallocated and the kubelet never starts the pod (DRA docs, "Pre-scheduled Pods")."""
    node = spec.get("nodeName")
    if not (isinstance(node, str) and node) or not ctx.release.at_least(_STRUCTURED_ONLY_SINCE) \
            or ctx.gate("DRAControlPlaneController"):
        return
    stuck = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        source = given if isinstance(given := entry.get("source"), dict) else entry
        if isinstance(source.get("resourceClaimTemplateName"), str) and source["resourceClaimTemplateName"]:
            stuck.append(f"{entry['name']!r} (from template {source['resourceClaimTemplateName']!r})")
        elif isinstance(source.get("resourceClaimName"), str) and source["resourceClaimName"]:
            # A named claim may be allocated already (cluster state): then the kubelet can use it.
            target = _target(ctx, entry)
            if target is not None and target.version not in LEGACY_VERSIONS and \
                    not isinstance(target.get("status", "allocation"), dict):
                stuck.append(f"{entry['name']!r} (ResourceClaim {target.name!r}, not allocated)")
    if stuck:
        yield Problem(R_BYPASSES_SCHEDULER, path.child("nodeName"),
                      f"spec.nodeName {node!r} bypasses the scheduler, and only the scheduler allocates claims: "
                      f"pod claim{'s' if len(stuck) > 1 else ''} {', '.join(stuck)} "
                      f"{'are' if len(stuck) > 1 else 'is'} never allocated and the pod never starts; to run on that "
                      "node, remove nodeName and set a nodeSelector on the node's `kubernetes.io/hostname` label",
                      details={"node": node})


def _source(ctx: CheckContext, entry: dict, path: FieldPath) -> tuple[dict, FieldPath]:
    """Where the claim's source fields are in this release: on the entry, or (≤ 1.30) under ``source``."""
    if ctx.release.at_least(FLAT_SOURCE_SINCE):
        return entry, path
    source = entry.get("source")
    return (source if isinstance(source, dict) else {}), path.child("source")


def _missing_source_message(ctx: CheckContext, entry: dict, name: str) -> str:
    hint = ""
    if ctx.release.at_least(FLAT_SOURCE_SINCE) and isinstance(entry.get("source"), dict):
        hint = "; `source` was removed in Kubernetes 1.31, put its fields directly on the entry"
    elif not ctx.release.at_least(FLAT_SOURCE_SINCE) and any(entry.get(f) for f in SOURCES):
        hint = f"; Kubernetes {ctx.release.version} expects them under `source:` (they moved up in 1.31)"
    return (f"pod claim {name!r} must specify one of `resourceClaimName` (an existing ResourceClaim) or "
            f"`resourceClaimTemplateName` (a ResourceClaimTemplate to create one claim per pod){hint} "
            "(API server: Invalid value)")


def _container_claims(ctx: CheckContext, claims: list, path: FieldPath, entries: dict[str, dict]) -> Iterator[Problem]:
    whole: set[str] = set()
    with_requests: set[str] = set()
    keys: set[str] = set()
    for j, claim in enumerate(claims):
        if not isinstance(claim, dict):
            continue
        cpath = path.child(j)
        name, request = claim.get("name", ""), claim.get("request", "")
        if not isinstance(name, str) or not isinstance(request, str):
            continue
        if not name:
            yield Problem(R_CONTAINER_NAME_REQUIRED, cpath,
                          "a container claim needs `name`: the name of an entry in the pod's `spec.resourceClaims` "
                          "(API server: Required value)")
            continue
        if request:
            for msg in is_dns1123_label(request):
                yield Problem(R_CONTAINER_REQUEST, cpath.child("request"),
                              f"request {request!r} is not a DNS label: {msg} (API server: Invalid value)")
            key = f"{name}/{request}"
            if name in whole or key in keys:
                yield _duplicate(cpath, name, key if key in keys else name)
            keys.add(key)
            with_requests.add(name)
        else:
            if name in whole or name in with_requests:
                yield _duplicate(cpath, name, name)
            whole.add(name)
        if name not in entries:
            close = difflib.get_close_matches(name, list(entries), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            listed = ", ".join(sorted(entries)) if entries else "none (the pod's `spec.resourceClaims` is empty)"
            yield Problem(R_CONTAINER_NOT_FOUND, cpath,
                          f"claim {name!r} is not one of the pod's claims (spec.resourceClaims: {listed}){hint} "
                          "(API server: Not found)")
        elif request:
            problem = _request_in_claim(ctx, entries[name], name, request, cpath.child("request"))
            if problem:
                yield problem


def _duplicate(path: FieldPath, name: str, value: str) -> Problem:
    return Problem(R_CONTAINER_DUPLICATE, path,
                   f"claim {value!r} is already referenced by this container"
                   + (f" (as the whole claim {name!r}, which includes all of its requests)" if value != name else "")
                   + "; reference each claim or request once (API server: Duplicate value)")


def _request_in_claim(ctx: CheckContext, entry: dict, name: str, request: str, path: FieldPath) -> Problem | None:
    """A container's ``request`` must be a request of the claim or template, when that is part of the run."""
    target = _target(ctx, entry)
    if target is None or target.version in LEGACY_VERSIONS:
        return None
    requests = target.get(*spec_path(target.kind), "devices", "requests")
    known = [r.get("name") for r in requests if isinstance(r, dict)] if isinstance(requests, list) else []
    if request in known:
        return None
    close = difflib.get_close_matches(request, [k for k in known if isinstance(k, str)], n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else \
        f"; its requests are {', '.join(str(k) for k in known)}" if known else "; it has no requests"
    where = target.manifest.document.file
    elsewhere = f" (the one in {where})" if where != ctx.obj.manifest.document.file else ""
    return Problem(R_REQUEST_UNKNOWN, path,
                   f"{target.kind} {target.name!r}{elsewhere} (pod claim {name!r}) has no request {request!r}{hint}. "
                   "This is dralint's own cross-object check: the API server does not look into the claim and "
                   "accepts the pod, but the container silently gets no device",
                   details={"requests": [k for k in known if isinstance(k, str)]})


def _target(ctx: CheckContext, entry: dict) -> Any:
    index = ctx.index
    if index is None:
        return None
    source = given if isinstance(given := entry.get("source"), dict) else entry
    for field, kind in (("resourceClaimName", "ResourceClaim"), ("resourceClaimTemplateName", "ResourceClaimTemplate")):
        target_name = source.get(field)
        if isinstance(target_name, str):
            return index.find(kind, ctx.obj.namespace, target_name, near=ctx.obj)
    return None
