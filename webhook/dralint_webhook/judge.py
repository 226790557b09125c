"""Judge one admission request: the engine's findings, the organisation rules, the policy.

Pure: a request, a policy and the cluster state in, a :class:`Verdict` out. Exceptions escape to
the caller, which answers them with :func:`internal_error` as the policy says.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from dralint.engine import review
from dralint.findings import Category, Finding, Severity
from dralint.index import Index

from . import org_rules
from .admission import AdmissionRequest, with_identity
from .cluster import ClusterState
from .policy import Policy
from .verdict import ALLOWED, Verdict, from_findings

JUDGED_OPERATIONS = frozenset({"CREATE", "UPDATE"})
INTERNAL_ERROR_RULE = "DRA000"
# Settled by the API server before any validating webhook is called: it refuses adminAccess in a
# namespace without the admin-access label itself, so "cannot see the namespace's labels" is noise here.
SETTLED_BY_SERVER = frozenset({"DRA217"})
# What the feasibility stage judges (a claim, a template, a Pod and its claims).
FEASIBILITY_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "Pod"})


def judge(request: AdmissionRequest, policy: Policy, state: ClusterState | None) -> Verdict:
    """The verdict on ``request`` under ``policy``, with the cluster ``state`` for references and feasibility."""
    if request.operation not in JUDGED_OPERATIONS or request.obj is None:
        return ALLOWED
    if request.namespace in policy.exempt_namespaces:
        return ALLOWED
    obj = with_identity(request, request.obj)
    old = with_identity(request, request.old_obj) if request.operation == "UPDATE" and request.old_obj else None
    cluster = state.index if state is not None else None
    use_cluster = cluster if policy.feasibility != "off" else None
    options = replace(policy.options, context=state.context) if use_cluster is not None and state else policy.options
    notes: tuple[str, ...] = ()
    fleet = state.fleet if state is not None and use_cluster is not None else None
    world = fleet.world(options.release) if fleet is not None else None
    if fleet is not None and world is None and str(obj.get("kind")) in FEASIBILITY_KINDS:
        # Judging feasibility without the kept view would build one for this review: seconds at fleet scale.
        options = replace(options, ignore=options.ignore + ("DRA7",))
        notes = ("dralint: feasibility not judged: the webhook is still building its view of the cluster's devices",)
    if world is not None and str(obj.get("kind")) in FEASIBILITY_KINDS:
        with fleet.lock:
            findings = review(obj, old, request.operation, request.sub_resource, options, cluster=use_cluster,
                              name=request.display, world=world)
    else:
        findings = review(obj, old, request.operation, request.sub_resource, options, cluster=use_cluster,
                          name=request.display)
    findings = [f for f in findings if f.rule not in SETTLED_BY_SERVER]
    if policy.feasibility == "warn":
        findings = [_as_warning(f) if f.category is Category.FEASIBILITY else f for f in findings]
    if request.operation == "CREATE" and not request.sub_resource:
        labels = namespace_labels(request.namespace, policy, cluster)
        findings += policy.org_filter.apply(org_rules.judge(obj, request.namespace, policy.org, labels))

    if policy.on_internal_error == "allow" and any(f.rule == INTERNAL_ERROR_RULE for f in findings):
        # A failing check must not block the cluster: judge on what the other checks found.
        findings = [f for f in findings if f.rule != INTERNAL_ERROR_RULE]
        notes += (f"dralint: a check failed on {request.display}; judged without it (allowed by the webhook's policy)",)
        return replace(from_findings(findings, notes), internal_error=True)
    verdict = from_findings(findings, notes)
    return replace(verdict, internal_error=any(f.rule == INTERNAL_ERROR_RULE for f in findings))


def internal_error(request: AdmissionRequest, policy: Policy) -> Verdict:
    """The answer when judging ``request`` failed: allow with a warning, or deny, as configured."""
    return aborted(request, policy, "internal error, logged by the webhook")


def aborted(request: AdmissionRequest, policy: Policy, reason: str) -> Verdict:
    """The answer when ``request`` was not judged (an internal error, its deadline, the memory ceiling)."""
    what = f"dralint could not judge {request.display} ({reason})"
    if policy.on_internal_error == "allow":
        return Verdict(allowed=True, notes=(f"{what}; allowed by the webhook's policy",), internal_error=True)
    return Verdict(allowed=False, code=500, reason="InternalError", message=f"{what}; refused by the webhook's policy",
                   internal_error=True)


def namespace_labels(namespace: str, policy: Policy, cluster: Index | None) -> Mapping[str, str] | None:
    """Labels of ``namespace``: the policy's ``namespaceLabels``, else a Namespace in the cluster state."""
    if namespace in policy.namespace_labels:
        return policy.namespace_labels[namespace]
    if cluster is not None:
        labels: Any = cluster.namespace_labels(namespace)
        if labels is not None:
            return {str(k): str(v) for k, v in labels.items()}
    return None


def _as_warning(f: Finding) -> Finding:
    return replace(f, severity=Severity.WARNING) if f.severity is Severity.ERROR else f
