"""The organisation rules (DRA950-DRA953): the policy of a cluster's admins on claims and templates.

The API server has no such rules; they judge only when a policy is given (``Options.org_policy``,
which the webhook's policy file fills; the command line gives none). They judge the CREATE of a
claim or template: claim and template specs are immutable, so judging updates would only refuse
metadata edits of objects created before the policy changed.

:func:`problems` is a pure function of the canonical object, its namespace's labels and the
policy, so that the webhook can judge these rules before (and apart from) the engine's run, and
the same logic can be written out as admission policies.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from ..kube.shapes import REQUESTS
from ..org_policy import OrgPolicy
from ..paths import FieldPath, value_at
from ..problems import Problem
from .base import CheckContext

if TYPE_CHECKING:
    from ..index import Index

KINDS = frozenset(REQUESTS)
RULES = ("DRA950", "DRA951", "DRA952", "DRA953")


@dataclass(frozen=True)
class _Request:
    """One device request of a claim spec (or one alternative of ``firstAvailable``), canonical."""

    fields: FieldPath           # where its deviceClassName, count and adminAccess are
    device_class: str | None
    mode: str
    count: int
    admin_access: bool

    @property
    def devices(self) -> int | None:
        """Devices this request may get; None for allocationMode All (as many as the pool has)."""
        return None if self.mode == "All" else self.count


def check(ctx: CheckContext) -> Iterable[Problem]:
    policy = ctx.org_policy
    if policy is None or ctx.operation != "CREATE" or ctx.subresource:
        return ()
    namespace = ctx.obj.namespace
    return problems(ctx.obj.kind, ctx.obj.value, namespace,
                    namespace_labels(namespace, ctx.index, policy.namespace_labels), policy)


def namespace_labels(namespace: str, index: "Index | None",
                     granted: Mapping[str, Mapping[str, str]]) -> Mapping[str, str] | None:
    """Labels of ``namespace``: its Namespace object's in ``index``, else those
    ``granted`` to it, else None (unknown).

    A real Namespace wins: a static entry must not grant what the namespace's own labels do not
    (adminAccess in a namespace whose admin-access label was removed, or never set)."""
    if index is not None:
        labels = index.namespace_labels(namespace)
        if labels is not None:
            return {str(k): str(v) for k, v in labels.items()}
    return granted.get(namespace)


def problems(kind: str, value: Mapping[str, Any], namespace: str, labels: Mapping[str, str] | None,
             policy: OrgPolicy) -> list[Problem]:
    """The organisation rules' problems of one canonical claim or template (any other kind: none).

    ``labels`` are those of the object's ``namespace``, or None when they are unknown.
    """
    path = REQUESTS.get(kind)
    if path is None or not policy.active:
        return []
    requests = value_at(value, path)
    if not isinstance(requests, list):
        return []
    base = FieldPath(path)
    out: list[Problem] = []
    totals: list[int | None] = []
    for i, raw in enumerate(requests):
        if not isinstance(raw, dict):
            continue
        alternatives = list(_requests(raw, base.child(i)))
        out.extend(_class_problems(alternatives, namespace, policy))
        out.extend(_admin_problems(alternatives, namespace, policy, labels))
        counts = [r.devices for r in alternatives]
        # A request with alternatives gets one of them: its worst case is the largest.
        totals.append(None if None in counts else max((c for c in counts if c is not None), default=0))
    if policy.max_devices is not None:
        out.extend(_count_problems(totals, policy.max_devices, base))
    return out


def _requests(raw: Mapping[str, Any], path: FieldPath) -> Iterator[_Request]:
    alternatives = raw.get("firstAvailable")
    if isinstance(alternatives, list) and alternatives:
        for j, sub in enumerate(alternatives):
            if isinstance(sub, dict):
                yield _request(sub, path.child("firstAvailable", j))
        return
    exactly = raw.get("exactly")
    if isinstance(exactly, dict):
        yield _request(exactly, path.child("exactly"))


def _request(body: Mapping[str, Any], fields: FieldPath) -> _Request:
    cls = body.get("deviceClassName")
    mode = body.get("allocationMode")
    count = body.get("count")
    return _Request(fields=fields, device_class=cls if isinstance(cls, str) else None,
                    mode=mode if isinstance(mode, str) and mode else "ExactCount",
                    # The API server defaults a missing or zero count to 1.
                    count=count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1,
                    admin_access=body.get("adminAccess") is True)


def _class_problems(requests: list[_Request], namespace: str, policy: OrgPolicy) -> Iterator[Problem]:
    patterns = policy.allowed_patterns(namespace)
    if patterns is None:
        return
    for r in requests:
        if r.device_class is not None and not any(fnmatch.fnmatchcase(r.device_class, p) for p in patterns):
            allowed = ", ".join(patterns) if patterns else "none"
            yield Problem("DRA950", r.fields.child("deviceClassName"),
                          f"DeviceClass {r.device_class!r} is not allowed in namespace {namespace or '<none>'} by "
                          f"the cluster's policy (allowed: {allowed})")


def _admin_problems(requests: list[_Request], namespace: str, policy: OrgPolicy,
                    labels: Mapping[str, str] | None) -> Iterator[Problem]:
    needed = policy.admin_labels
    if needed is None:
        return
    wanted = ", ".join(f"{k}={v}" for k, v in sorted(needed.items()))
    for r in requests:
        if not r.admin_access:
            continue
        field = r.fields.child("adminAccess")
        if labels is None:
            yield Problem("DRA953", field, f"adminAccess is only allowed in namespaces labelled {wanted}, and the "
                                           f"webhook does not know the labels of namespace {namespace or '<none>'} "
                                           "(add them to the policy's namespaceLabels)")
        elif any(labels.get(k) != v for k, v in needed.items()):
            yield Problem("DRA952", field, f"adminAccess is only allowed in namespaces labelled {wanted}; namespace "
                                           f"{namespace or '<none>'} is not")


def _count_problems(totals: list[int | None], maximum: int, requests: FieldPath) -> Iterator[Problem]:
    if None in totals:
        yield Problem("DRA951", requests, f"allocationMode All may allocate any number of devices; the cluster's "
                                          f"policy allows at most {maximum} per claim")
    elif sum(t for t in totals if t is not None) > maximum:
        total = sum(t for t in totals if t is not None)
        yield Problem("DRA951", requests, f"the claim may get {total} devices; the cluster's policy allows at most "
                                          f"{maximum} per claim")

