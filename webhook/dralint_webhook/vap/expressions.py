"""The organisation rules (DRA950-DRA952) written as CEL over an admission request.

Each rule is one policy variable holding the rule's findings as the webhook words them, one
``field: message (DRAnnn name)`` per finding joined by ``; `` (the webhook's own separator), or ``''``
when there are none; its validation is ``variables.<rule> == ''`` and its ``messageExpression`` the
variable itself (cut to what the API server will say). The walk over requests follows ``dralint/checks/org.py`` step by step: a request's
``firstAvailable`` alternatives when it has some, else its ``exactly`` (v1, v1beta2) or the request
itself (v1beta1, v1alpha3: flat, and only when one of its ``exactly`` fields is set, as the API
server's conversion decides); a missing or non-positive count is 1; ``allocationMode: All`` is
unbounded. Field paths are the user's own, as the webhook reports them.

The walk is done once, into ``variables.alts``: every alternative judged, in the webhook's order,
as ``[field path, body]``. Indices come from literal lists cut to the list's size: the index-aware
macros are newer than Kubernetes 1.30, and the API server allows no more requests per claim and
alternatives per request than the literals hold. The rules' findings are lists of strings held in
variables too, and are built by ``map`` over ``variables.alts`` before any ``filter``, so that the
cost estimate knows every size (limits.py).

The policy's values are written into the expressions as literals: no params object to create,
keep in step or lose (see webhook/docs/vap.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from dralint.catalog import load_catalog
from dralint.kube.limits import limits_for
from dralint.kube.shapes import FLAT_REQUEST_FIELDS
from dralint.org_policy import OrgPolicy

from .glob import regex_of

TEMPLATE = "ResourceClaimTemplate"
SPEC_KINDS = ("ResourceClaim", TEMPLATE)
# DRA953 (the namespace's labels unknown) cannot arise: the API server always has the Namespace.
RULES = ("DRA950", "DRA951", "DRA952")
# Claims and templates without a request have nothing to judge: the policy is not evaluated for them.
HAS_REQUESTS = ("size(object.?spec.?devices.?requests.orValue([])) + "
                "size(object.?spec.?spec.?devices.?requests.orValue([])) > 0")
SEPARATOR = "; "      # the webhook's, between the errors of one denial
# A messageExpression's result may have 5 KiB (MaxEvaluatedMessageExpressionSizeBytes) or the API server
# says the static message instead; characters are counted, so leave room for multi-byte ones.
MESSAGE_MAX = 4000
# The zero values (as CEL) that the API server's conversion reads as "not set" in a flat request
# (dralint/convert.py); any other field of FLAT_REQUEST_FIELDS is set whenever present.
_FLAT_ZERO = {"deviceClassName": "''", "allocationMode": "''", "count": "0"}
_FLAT_FIELDS = tuple((name, _FLAT_ZERO.get(name)) for name in FLAT_REQUEST_FIELDS)


@dataclass(frozen=True)
class Variable:
    """One ``spec.variables`` entry; ``uses`` are the earlier variables it reads."""

    name: str
    expression: str
    uses: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleCheck:
    """One rule as a validation: the variable with its findings, and the variables that one needs."""

    rule: str
    variable: str
    message: str      # the static fallback when the messageExpression fails
    findings: str | None = None    # the variable with the list of findings, when there may be several

    @property
    def message_expression(self) -> str:
        """The findings, or the first and how many more when they are too long for the API server to say."""
        joined = f"string(variables.{self.variable})"
        if self.findings is None:
            return joined
        return (f"size(variables.{self.variable}) <= {MESSAGE_MAX} ? {joined} : "
                f"string(variables.{self.findings}[0]) + '; and ' + string(size(variables.{self.findings}) - 1) + "
                f"' more'")


def literal(text: str) -> str:
    """A CEL string literal of ``text``."""
    out = []
    for ch in text:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
    return "'" + "".join(out) + "'"


def _indices(n: int) -> str:
    return "[" + ", ".join(str(i) for i in range(n)) + "]"


def _flat_set(r: str) -> str:
    """Whether the flat request ``r`` has an ``exactly`` after conversion (one of its fields set)."""
    return "(" + " || ".join(f"(has({r}.{name}) && {r}.{name} != {zero})" if zero is not None else f"has({r}.{name})"
                             for name, zero in _FLAT_FIELDS) + ")"


def _has_alternatives(r: str) -> str:
    return f"(has({r}.firstAvailable) && size({r}.firstAvailable) > 0)"


def _suffix(rule: str) -> str:
    return f" ({rule} {load_catalog().get(rule).name})"


def _joined(name: str, findings: str, uses: tuple[str, ...]) -> list[Variable]:
    """The rule's findings as a list variable, and joined as the webhook joins them."""
    return [Variable(name + "List", findings, uses),
            Variable(name, f"variables.{name}List.join({literal(SEPARATOR)})", (name + "List",))]


def common_variables(flat_versions: tuple[str, ...], minor: int) -> list[Variable]:
    """The variables every rule reads: the requests, where they are, their shape, the namespace."""
    limits = limits_for(minor)
    template = literal(TEMPLATE)
    flat = " || ".join(f"object.apiVersion == {literal('resource.k8s.io/' + v)}" for v in flat_versions) or "false"
    # [request, -1]: the request's exactly (or its flat body); [request, j]: its alternative j.
    pairs = "[" + ", ".join(f"[{i}, {j}]" for i in range(limits.requests_per_claim)
                            for j in range(-1, limits.subrequests)) + "]"
    r = "variables.reqs[p[0]]"
    judged = (f"p[0] < size(variables.reqs) && (p[1] < 0 ? !{_has_alternatives(r)} && "
              f"(variables.flat ? {_flat_set(r)} : has({r}.exactly)) : "
              f"{_has_alternatives(r)} && p[1] < size({r}.firstAvailable))")
    path = ("variables.base + '[' + string(p[0]) + ']' + (p[1] < 0 ? (variables.flat ? '' : '.exactly') : "
            "'.firstAvailable[' + string(p[1]) + ']')")
    body = f"(p[1] < 0 ? (variables.flat ? {r} : {r}.exactly) : {r}.firstAvailable[p[1]])"
    return [
        Variable("reqs", f"object.kind == {template} ? object.?spec.?spec.?devices.?requests.orValue([]) "
                         f": object.?spec.?devices.?requests.orValue([])"),
        Variable("base", f"object.kind == {template} ? 'spec.spec.devices.requests' : 'spec.devices.requests'"),
        Variable("flat", flat),
        Variable("ns", "request.namespace != '' ? request.namespace : '<none>'"),
        Variable("alts", f"{pairs}.filter(p, {judged}).map(p, [dyn({path}), dyn({body})])", ("reqs", "base", "flat")),
    ]


def _class_entries(policy: OrgPolicy) -> Mapping[str, list[str]]:
    """Namespace (or "*") → [the RE2 of its patterns ('' when none), the patterns as the message lists them]."""
    return {ns: [regex_of(p) if p else "", ", ".join(p) if p else "none"] for ns, p in policy.allowed_classes.items()}


def longest_class_literal(policy: OrgPolicy) -> int:
    """The longest string ``variables.classes`` may hold for ``policy`` (the cost estimate's size)."""
    return max((len(text) for entry in _class_entries(policy).values() for text in entry), default=0)


def class_rule(policy: OrgPolicy, minor: int) -> tuple[list[Variable], RuleCheck]:
    """DRA950: every class (of every alternative) against the namespace's patterns."""
    entries = _class_entries(policy)
    listed = "{" + ", ".join(f"{literal(ns)}: [{', '.join(literal(v) for v in entry)}]"
                             for ns, entry in entries.items() if ns != "*") + "}"
    default = entries.get("*")
    fallback = "[" + ", ".join(literal(v) for v in default) + "]" if default is not None else "[]"
    classes = Variable("classes", f"request.namespace in {listed} ? {listed}[request.namespace] : {fallback}")
    # '' stands for "no class allowed"; any other regex allows what it matches.
    bad = ("has(a[1].deviceClassName) && !(variables.classes[0] != '' && "
           "a[1].deviceClassName.matches(variables.classes[0]))")
    say = (f"a[0] + {literal('.deviceClassName: DeviceClass ' + chr(39))} + a[1].deviceClassName + "
           f"{literal(chr(39) + ' is not allowed in namespace ')} + variables.ns + "
           f"{literal(' by the cluster' + chr(39) + 's policy (allowed: ')} + variables.classes[1] + "
           f"{literal(')' + _suffix('DRA950'))}")
    found = _joined("dra950", f"size(variables.classes) == 0 ? [] : "
                              f"variables.alts.map(a, {bad} ? {say} : '').filter(s, s != '')",
                    ("alts", "ns", "classes"))
    return [classes, *found], RuleCheck("DRA950", "dra950", "a request names a DeviceClass that the cluster's "
                                                            "policy does not allow in this namespace (DRA950)",
                                        "dra950List")


def count_rule(policy: OrgPolicy, minor: int) -> tuple[list[Variable], RuleCheck]:
    """DRA951: the devices a claim may get, a request's largest alternative counted, All unbounded (-1)."""
    assert policy.max_devices is not None
    maximum = policy.max_devices
    requests = limits_for(minor).requests_per_claim

    def devices(b: str) -> str:
        return f"(has({b}.allocationMode) && {b}.allocationMode == 'All' ? -1 : " \
               f"(has({b}.count) && {b}.count > 0 ? {b}.count : 1))"

    r = "variables.reqs[i]"
    alternatives = (f"({r}.firstAvailable.exists(a, has(a.allocationMode) && a.allocationMode == 'All') ? -1 : "
                    f"{r}.firstAvailable.map(a, {devices('a')}).max())")
    single = (f"(variables.flat ? ({_flat_set(r)} ? {devices(r)} : 0) : "
              f"(has({r}.exactly) ? {devices(r + '.exactly')} : 0))")
    per_request = Variable("devices", f"{_indices(requests)}.filter(i, i < size(variables.reqs))"
                                      f".map(i, {_has_alternatives(r)} ? {alternatives} : {single})",
                           ("reqs", "flat"))
    suffix = literal(_suffix("DRA951"))
    unbounded = literal(f": allocationMode All may allocate any number of devices; the cluster's policy allows at most "
                        f"{maximum} per claim")
    allows = literal(f" devices; the cluster's policy allows at most {maximum} per claim")
    found = Variable("dra951", f"variables.devices.exists(d, d < 0) ? variables.base + {unbounded} + {suffix} : "
                               f"(variables.devices.sum() > {maximum} ? variables.base + ': the claim may get ' + "
                               f"string(int(variables.devices.sum())) + {allows} + {suffix} : '')",
                     ("base", "devices"))
    return [per_request, found], RuleCheck("DRA951", "dra951", f"a claim may get more devices than the cluster's "
                                                               f"policy allows ({maximum}) (DRA951)")


def admin_rule(policy: OrgPolicy, minor: int) -> tuple[list[Variable], RuleCheck]:
    """DRA952: adminAccess where the namespace's own labels lack one the policy asks for."""
    assert policy.admin_labels is not None
    labels = "namespaceObject.metadata.labels"
    wanted = ", ".join(f"{k}={v}" for k, v in sorted(policy.admin_labels.items()))
    granted = Variable("adminOk", f"has({labels}) && " + " && ".join(
        f"{literal(k)} in {labels} && {labels}[{literal(k)}] == {literal(v)}" for k, v in sorted(policy.admin_labels.items())))
    opening = literal(f".adminAccess: adminAccess is only allowed in namespaces labelled {wanted}; namespace ")
    closing = literal(" is not" + _suffix("DRA952"))
    found = _joined("dra952", f"variables.adminOk ? [] : variables.alts.map(a, has(a[1].adminAccess) && "
                              f"a[1].adminAccess == true ? a[0] + {opening} + variables.ns + {closing} : '')"
                              f".filter(s, s != '')",
                    ("alts", "ns", "adminOk"))
    return [granted, *found], RuleCheck("DRA952", "dra952", f"adminAccess needs a namespace labelled {wanted} (DRA952)",
                                        "dra952List")
