"""Judge one admission request: the organisation rules, the engine's findings, the policy.

Two steps, so that the organisation's rules hold whatever happens to the rest: :func:`org_findings`
(cheap, bounded by the size of the request, needing no cluster state but a namespace's labels) is
judged first, then :func:`judge` adds the engine's findings to them. When the engine's part is not
judged (its deadline, the memory ceiling, an exception), :func:`aborted` still denies on the
organisation's errors that the policy enforces as deny. Pure: a request, a policy and the cluster
state in, a :class:`Verdict` out.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from dralint.catalog import load_catalog
from dralint.checks import org
from dralint.convert import to_canonical
from dralint.engine import review
from dralint.findings import Finding, Location
from dralint.index import Index
from dralint.manifest import Manifest
from dralint.org_policy import OrgPolicy
from dralint.paths import FieldPath

from .admission import AdmissionRequest, with_identity
from .cluster import ClusterState
from .enforcement import INTERNAL_ERROR_RULE
from .policy import Policy
from .verdict import ALLOWED, Verdict, from_findings

JUDGED_OPERATIONS = frozenset({"CREATE", "UPDATE"})
# Settled by the API server before any validating webhook is called: it refuses adminAccess in a
# namespace without the admin-access label itself, so "cannot see the namespace's labels" is noise here.
SETTLED_BY_SERVER = frozenset({"DRA217"})
# What the feasibility stage judges (a claim, a template, a Pod and its claims).
FEASIBILITY_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "Pod"})


def org_findings(request: AdmissionRequest, policy: Policy, cluster: Index | None) -> list[Finding]:
    """The organisation rules' findings on ``request`` (the policy's ignore and severities applied).

    They judge the CREATE of a claim or template; ``cluster`` (the last state the worker loaded, or
    None) lends the namespace's labels (see :func:`dralint.checks.org.namespace_labels`).
    """
    if request.operation != "CREATE" or request.sub_resource or request.obj is None:
        return []
    if request.namespace in policy.exempt_namespaces:
        return []
    labels = org.namespace_labels(request.namespace, cluster, policy.namespace_labels)
    return policy.org_filter.apply(judge_org(with_identity(request, request.obj), request.namespace, policy.org, labels))


def judge_org(obj: Mapping[str, Any], namespace: str, policy: OrgPolicy,
              namespace_labels: Mapping[str, str] | None) -> list[Finding]:
    """Findings of the organisation rules (checks/org.py) for one claim or template (any other kind: none).

    ``namespace_labels`` are the labels of the claim's namespace, or None when they are unknown.
    Judged apart from the engine's run, so that they hold when that run is not judged; their findings
    point at the user's fields and no line. Severities are the defaults; the caller applies the
    policy's ignore and severities.
    """
    kind = obj.get("kind")
    if kind not in org.KINDS or not policy.active:
        return []
    api_version = obj.get("apiVersion")
    canonical = to_canonical(Manifest(None, dict(obj), FieldPath(), api_version if isinstance(api_version, str) else "",
                                      str(kind)))
    catalog = load_catalog()
    display = _display(obj, namespace)
    out = []
    for problem in org.problems(canonical.kind, canonical.value, namespace, namespace_labels, policy):
        rule = catalog.get(problem.rule)
        out.append(Finding(rule=rule.id, name=rule.name, severity=rule.severity, category=rule.category,
                           message=problem.message, location=Location("<request>", path=canonical.to_user(problem.path)),
                           object=display))
    return out


def _display(obj: Mapping[str, Any], namespace: str) -> str:
    """``ResourceClaim ml/gpu``, with the request's namespace (the object may leave its own out)."""
    meta = obj.get("metadata")
    name = (meta.get("name") or meta.get("generateName")) if isinstance(meta, dict) else None
    name = name if isinstance(name, str) and name else "<unnamed>"
    return f"{obj.get('kind')} {namespace}/{name}" if namespace else f"{obj.get('kind')} {name}"


def judge(request: AdmissionRequest, policy: Policy, state: ClusterState | None,
          org: list[Finding] | None = None, *, max_seconds: float | None = None) -> Verdict:
    """The verdict on ``request`` under ``policy``, with the cluster ``state`` for references and feasibility.

    ``org`` are the organisation rules' findings when the caller judged them first (None: judged
    here); ``max_seconds`` caps the allocator's search below the policy's budget (the time left).
    """
    if request.operation not in JUDGED_OPERATIONS or request.obj is None:
        return ALLOWED
    if request.namespace in policy.exempt_namespaces:
        return ALLOWED
    cluster = state.index if state is not None else None
    if org is None:
        org = org_findings(request, policy, cluster)
    obj = with_identity(request, request.obj)
    old = with_identity(request, request.old_obj) if request.operation == "UPDATE" and request.old_obj else None
    use_cluster = cluster if policy.feasibility != "off" else None
    options = replace(policy.options, context=state.context) if use_cluster is not None and state else policy.options
    if max_seconds is not None and (options.max_seconds is None or max_seconds < options.max_seconds):
        options = replace(options, max_seconds=max(0.0, max_seconds))
    notes: tuple[str, ...] = ()
    view = state.fleet if state is not None and use_cluster is not None else None
    kept = view.fleet(options.release) if view is not None else None
    if view is not None and kept is None and str(obj.get("kind")) in FEASIBILITY_KINDS:
        # Judging feasibility without the kept view would build one for this review: seconds at fleet scale.
        options = replace(options, ignore=options.ignore + ("DRA7",))
        notes = ("dralint: feasibility not judged: the webhook is still building its view of the cluster's devices",)
    if view is not None and kept is not None and str(obj.get("kind")) in FEASIBILITY_KINDS:
        with view.lock:
            findings = review(obj, old, request.operation, request.sub_resource, options, cluster=use_cluster,
                              name=request.display, fleet=kept)
    else:
        findings = review(obj, old, request.operation, request.sub_resource, options, cluster=use_cluster,
                          name=request.display)
    findings = [f for f in findings if f.rule not in SETTLED_BY_SERVER]
    findings += org

    if policy.on_internal_error == "allow" and any(f.rule == INTERNAL_ERROR_RULE for f in findings):
        # A failing check must not block the cluster: judge on what the other checks found.
        findings = [f for f in findings if f.rule != INTERNAL_ERROR_RULE]
        notes += (f"dralint: a check failed on {request.display}; judged without it (the webhook's policy: "
                  "onInternalError allow)",)
        return replace(from_findings(findings, notes, enforcement=policy.enforcement), internal_error=True)
    verdict = from_findings(findings, notes, enforcement=policy.enforcement)
    return replace(verdict, internal_error=any(f.rule == INTERNAL_ERROR_RULE for f in findings))


def internal_error(request: AdmissionRequest, policy: Policy, org: list[Finding] | None = None) -> Verdict:
    """The answer when judging ``request`` failed: allow with a warning, or deny, as configured."""
    return aborted(request, policy, "internal error, logged by the webhook", org)


def aborted(request: AdmissionRequest, policy: Policy, reason: str, org: list[Finding] | None = None) -> Verdict:
    """The answer when ``request`` was not judged (an internal error, its deadline, the memory ceiling).

    ``org`` are the organisation rules' findings, judged before: their errors that the policy enforces
    as deny deny whatever it says about internal errors (they were judged); the rest is answered as
    their enforcement says, and their warnings are passed on.
    """
    what = f"dralint could not judge {request.display} ({reason})"
    verdict = replace(from_findings(org or [], enforcement=policy.enforcement), internal_error=True)
    if not verdict.allowed:
        return replace(verdict, notes=(f"{what}; denied on the organisation's rules, which were judged",))
    if policy.on_internal_error == "allow":
        return replace(verdict, notes=(f"{what}; allowed by the webhook's policy",))
    return replace(verdict, allowed=False, code=500, reason="InternalError",
                   message=f"{what}; refused by the webhook's policy")
