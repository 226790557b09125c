"""The ValidatingAdmissionPolicies and their bindings for a webhook policy file.

One policy per distinct action (``validationActions`` belong to a binding, and a binding binds a
whole policy): the rules the webhook denies in ``dralint-organization-deny`` bound with ``[Deny]``,
those it answers as warnings in ``-warn`` with ``[Warn]``, those it only records in ``-audit`` with
``[Audit]``. A rule's action is the webhook's: its enforcement for an error, a warning for a
warning, a record for info; a rule the policy ignores is left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from dralint.catalog import load_catalog
from dralint.findings import Severity
from dralint.kube.shapes import FLAT_VERSIONS
from dralint.org_policy import OrgPolicy
from dralint.schema.served import serves

from ..enforcement import Action
from ..manifests import CLAIM_RESOURCES, EXCLUDED_NAMESPACES
from ..policy import Policy
from . import expressions as X
from .limits import PolicyCosts, check_policy, sizes_for

API_VERSION = "admissionregistration.k8s.io/v1"
NAME = "dralint-organization"
# admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy: GA, served by default, from 1.30.
OLDEST_MINOR = 30
# Newest first: the order the rules list them in.
VERSIONS = ("v1", "v1beta2", "v1beta1", "v1alpha3")
_ACTIONS = {Action.DENY: "Deny", Action.WARN: "Warn", Action.DRYRUN: "Audit"}
_ANSWERED = {Severity.WARNING: "Warn", Severity.INFO: "Audit"}
LABELS = {"app.kubernetes.io/name": "dralint-webhook", "app.kubernetes.io/component": "organization-policy"}


class VapError(ValueError):
    """The policies cannot be generated for this policy file and release; the message says why."""


@dataclass(frozen=True)
class Generated:
    """The objects to apply, in order, and each policy's costs."""

    objects: tuple[dict[str, Any], ...]
    costs: tuple[PolicyCosts, ...]
    versions: tuple[str, ...]


def served_versions(minor: int) -> tuple[str, ...]:
    """The resource.k8s.io versions of Kubernetes ``1.<minor>`` serving claims and templates with device requests."""
    return tuple(v for v in VERSIONS
                 if all(serves(f"1.{minor}", f"resource.k8s.io/{v}", kind) for kind in X.SPEC_KINDS))


def rule_actions(policy: Policy) -> dict[str, str]:
    """Each organisation rule the policy judges (DRA950-DRA952) → its validation action."""
    out = {}
    for rule in X.RULES:
        if rule in policy.org_filter.ignored:
            continue
        severity = policy.org_filter.severities.get(rule, load_catalog().get(rule).severity)
        out[rule] = _ACTIONS[policy.enforcement.action(rule)] if severity is Severity.ERROR else _ANSWERED[severity]
    return out


def generate(policy: Policy, minor: int) -> Generated:
    """The policies and bindings enforcing ``policy``'s organisation rules in Kubernetes ``1.<minor>``."""
    if minor < OLDEST_MINOR:
        raise VapError(f"Kubernetes 1.{minor} has no ValidatingAdmissionPolicy in admissionregistration.k8s.io/v1 "
                       f"(GA in 1.{OLDEST_MINOR}); use the webhook there, or target 1.{OLDEST_MINOR} or newer")
    versions = served_versions(minor)
    if not versions:
        raise VapError(f"Kubernetes 1.{minor} serves ResourceClaims only in classic DRA's v1alpha2, which has no "
                       "device requests for the organisation rules to judge: nothing to enforce")
    org = policy.org
    builders: dict[str, Callable[[OrgPolicy, int], tuple[list[X.Variable], X.RuleCheck]] | None] = {
        "DRA950": X.class_rule if org.allowed_classes else None,
        "DRA951": X.count_rule if org.max_devices is not None else None,
        "DRA952": X.admin_rule if org.admin_labels is not None else None}
    actions = rule_actions(policy)
    groups: dict[str, list[str]] = {}
    for rule, action in actions.items():
        if builders[rule] is not None:
            groups.setdefault(action, []).append(rule)
    if not groups:
        raise VapError("the policy's organization section sets no rule the admission policy could enforce "
                       "(allowedDeviceClasses, maxDevicesPerClaim, adminAccessNamespaceLabels), or `ignore` drops them")
    common = X.common_variables(tuple(v for v in versions if v in FLAT_VERSIONS), minor)
    objects: list[dict[str, Any]] = []
    costs: list[PolicyCosts] = []
    for action in ("Deny", "Warn", "Audit"):
        if action not in groups:
            continue
        variables: list[X.Variable] = list(common)
        checks = []
        for rule in groups[action]:
            build = builders[rule]
            assert build is not None  # grouped only when it has a builder
            own, check = build(org, minor)
            variables += own
            checks.append(check)
        name = f"{NAME}-{action.lower()}"
        vap = _policy(name, versions, _needed(variables, checks), checks, policy, action)
        costs.append(check_policy(vap, minor, sizes_for(minor, X.longest_class_literal(org))))
        objects += [vap, _binding(name, action)]
    return Generated(tuple(objects), tuple(costs), versions)


def _needed(variables: list[X.Variable], checks: list[X.RuleCheck]) -> list[X.Variable]:
    """The variables the checks read, directly or through others, in declaration order."""
    by_name = {v.name: v for v in variables}
    wanted: set[str] = set()
    todo = [c.variable for c in checks]
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo += by_name[name].uses
    return [v for v in variables if v.name in wanted]


def _policy(name: str, versions: tuple[str, ...], variables: list[X.Variable], checks: list[X.RuleCheck],
            policy: Policy, action: str) -> dict[str, Any]:
    excluded = sorted(set(EXCLUDED_NAMESPACES) | policy.exempt_namespaces)
    validations = []
    for check in checks:
        validation = {"expression": f"variables.{check.variable} == ''",
                      "messageExpression": check.message_expression,
                      "message": check.message}
        if action == "Deny":
            validation["reason"] = "Invalid"  # the webhook's 422
        validations.append(validation)
    return {
        "apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": dict(LABELS)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [{"apiGroups": ["resource.k8s.io"], "apiVersions": list(versions),
                                   "operations": ["CREATE"], "resources": list(CLAIM_RESOURCES),
                                   "scope": "Namespaced"}],
                "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                                            "operator": "NotIn", "values": excluded}]},
                "objectSelector": {},
                "matchPolicy": "Equivalent",
            },
            "matchConditions": [{"name": "has-device-requests", "expression": X.HAS_REQUESTS}],
            "variables": [{"name": v.name, "expression": v.expression} for v in variables],
            "validations": validations,
        },
    }


def _binding(name: str, action: str) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": dict(LABELS)},
            "spec": {"policyName": name, "validationActions": [action]}}
