"""Field validators that several checks share: the names and shapes one kind's rule also governs in another.

A driver, pool, node or device name, a device taint or a binding condition is validated the same
way in a ResourceSlice, a DeviceTaintRule, a claim's allocation and the 1.26-1.30 kinds, and a
request reference the same way in a claim's spec and its status; each check module imports these
from here rather than from another check, so no check depends on another. The rule ids they
report belong to the subject (a driver name is DRA400 wherever it is written), except where a
caller passes its own ``rule``.
"""
from __future__ import annotations

import difflib
from typing import Any, Iterator, Mapping

from ..kube.releases import Release
from ..paths import FieldPath
from ..problems import Problem
from ..workloads import WORKLOAD_KINDS
from .base import CheckContext, too_many
from ..kube.validation import is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value
from .formats import driver_name_errors, pool_name_errors

ADMIN_FORBIDDEN = "DRA216"
ADMIN_UNVERIFIED = "DRA217"
DRIVER_INVALID = "DRA400"
POOL_NAME_INVALID = "DRA401"
NODE_NAME_INVALID = "DRA404"
DEVICE_NAME_INVALID = "DRA410"
TAINT_INVALID = "DRA418"
TAINT_EFFECT_INVALID = "DRA419"
BINDING_CONDITIONS_INVALID = "DRA423"
FIELD_IMMUTABLE = "DRA425"

RULES = (ADMIN_FORBIDDEN, ADMIN_UNVERIFIED, DRIVER_INVALID, POOL_NAME_INVALID, NODE_NAME_INVALID, DEVICE_NAME_INVALID,
         TAINT_INVALID, TAINT_EFFECT_INVALID, BINDING_CONDITIONS_INVALID, FIELD_IMMUTABLE)

# The kinds whose pod specs carry resourceClaims (Pods, their templates, the built-in workloads and
# the known custom ones): pods.py checks them, references.py resolves their claims.
POD_KINDS: frozenset[str] = frozenset({"Pod", "PodTemplate", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet",
                                       "ReplicationController", "Job", "CronJob"}) | WORKLOAD_KINDS

# apimachinery's field.ErrorType words, as the API server prints them.
ERROR_WORDS = {"Required": "Required value", "TooLong": "Too long", "Invalid": "Invalid value"}

_EFFECT_NONE_SINCE = 35                 # taint effect "None"

# request name → names of its subrequests (None for a request without firstAvailable)
RequestNames = Mapping[str, frozenset[str] | None]


# --- names of drivers, pools, nodes and devices; taints; binding conditions ------------------------

def driver_problems(driver: str, path: FieldPath) -> Iterator[Problem]:
    """A driver name: required, at most 63 characters, a DNS subdomain (upper case tolerated)."""
    for kind, msg in driver_name_errors(driver):
        if kind == "Required":
            yield Problem(DRIVER_INVALID, path,
                          "a driver name is required: the DNS subdomain the driver registers, e.g. gpu.example.com "
                          "(API server: Required value)")
        else:
            yield Problem(DRIVER_INVALID, path,
                          f"driver {driver!r} is not a valid driver name: {msg}; use the DNS subdomain the driver "
                          f"registers, e.g. gpu.example.com (API server: {ERROR_WORDS[kind]})")


def pool_name_problems(pool: str, path: FieldPath) -> Iterator[Problem]:
    """A pool name: required, at most 253 characters, DNS subdomains separated by '/'."""
    for kind, msg in pool_name_errors(pool):
        if kind == "Required":
            yield Problem(POOL_NAME_INVALID, path,
                          "a pool name is required (drivers usually use the node name for node-local devices) "
                          "(API server: Required value)")
        else:
            yield Problem(POOL_NAME_INVALID, path,
                          f"pool name {pool!r} is not valid: {msg}; a pool name is one or more DNS subdomains "
                          f"separated by '/' (API server: {ERROR_WORDS[kind]})")


def node_name_problems(name: str, path: FieldPath) -> Iterator[Problem]:
    """A node name must be a DNS subdomain."""
    for msg in is_dns1123_subdomain(name):
        yield Problem(NODE_NAME_INVALID, path,
                      f"{name!r} is not a valid node name: {msg} (API server: Invalid value)")


def device_name_problems(name: Any, path: FieldPath) -> Iterator[Problem]:
    """A device name must be a DNS label (an empty or missing name is Invalid, not Required)."""
    name = name if isinstance(name, str) else ""
    if not name:
        yield Problem(DEVICE_NAME_INVALID, path,
                      "a device name is required: a DNS label unique within the pool, e.g. gpu-0 (API server: "
                      "Invalid value)")
        return
    for msg in is_dns1123_label(name):
        yield Problem(DEVICE_NAME_INVALID, path,
                      f"device name {name!r} is not a DNS label: {msg}; use lower-case letters, digits and '-' "
                      "(at most 63 characters), e.g. gpu-0 (API server: Invalid value)")


def taint_problems(taint: Any, path: FieldPath, release: Release, *, check_effect: bool = True) -> Iterator[Problem]:
    """One device taint (slices and DeviceTaintRules): label key, label value, a known effect.

    ``check_effect`` is False on an update that leaves the effect as it was (DeviceTaintRule).
    """
    if not isinstance(taint, dict):
        return
    key = taint.get("key", "")
    if key == "" or key is None:
        yield Problem(TAINT_INVALID, path.child("key"),
                      "a taint needs a key: a label key such as gpu.example.com/unhealthy (API server: Invalid value)")
    elif isinstance(key, str):
        for msg in is_qualified_name(key):
            yield Problem(TAINT_INVALID, path.child("key"),
                          f"taint key {key!r} is not a valid label key: {msg}; use e.g. gpu.example.com/unhealthy "
                          "(API server: Invalid value)")
    value = taint.get("value", "")
    if isinstance(value, str) and value:
        for msg in is_valid_label_value(value):
            yield Problem(TAINT_INVALID, path.child("value"),
                          f"taint value {value!r} is not a valid label value: {msg} (API server: Invalid value)")
    if not check_effect:
        return
    effects = ["NoExecute", "NoSchedule"] + (["None"] if release.at_least(_EFFECT_NONE_SINCE) else [])
    effect = taint.get("effect")
    if effect in (None, ""):
        yield Problem(TAINT_EFFECT_INVALID, path.child("effect"),
                      f"a taint needs an effect: one of {', '.join(effects)} (API server: Required value)")
    elif effect not in effects:
        hint = " (`None` exists from Kubernetes 1.35)" if effect == "None" else ""
        yield Problem(TAINT_EFFECT_INVALID, path.child("effect"),
                      f"taint effect {effect!r} is not supported in Kubernetes {release.version}; use one of "
                      f"{', '.join(effects)}{hint} (API server: Unsupported value)")


def binding_condition_problems(ctx: CheckContext, holder: dict, path: FieldPath,
                               rule: str = BINDING_CONDITIONS_INVALID) -> Iterator[Problem]:
    """``bindingConditions`` / ``bindingFailureConditions`` of a device or an allocation result."""
    conditions = holder.get("bindingConditions")
    failures = holder.get("bindingFailureConditions")
    conditions = conditions if isinstance(conditions, list) else []
    failures = failures if isinstance(failures, list) else []
    limit = ctx.limits.binding_conditions
    for name, items in (("bindingConditions", conditions), ("bindingFailureConditions", failures)):
        problem = too_many(rule, items, limit, path.child(name), f"{name}",
                           "keep the conditions the scheduler really has to wait for")
        if problem is not None:
            yield problem
            continue
        for j, cond in enumerate(items):
            if isinstance(cond, str):
                for msg in is_qualified_name(cond):
                    yield Problem(rule, path.child(name, j),
                                  f"condition type {cond!r} is not a qualified name: {msg} (API server: Invalid value)")
    for name, items in (("bindingConditions", conditions), ("bindingFailureConditions", failures)):
        seen: set[str] = set()
        for j, cond in enumerate(items):
            if not isinstance(cond, str):
                continue
            if cond in seen:
                yield Problem(rule, path.child(name, j),
                              f"condition {cond!r} is listed twice in `{name}` (API server: Duplicate value)")
            seen.add(cond)
            if name == "bindingFailureConditions" and cond in conditions:
                yield Problem(rule, path.child(name, j),
                              f"condition {cond!r} is both a binding condition and a binding failure condition; "
                              "a condition signals either success or failure (API server: Invalid value)")
    if conditions and not failures:
        yield Problem(rule, path.child("bindingFailureConditions"),
                      "`bindingConditions` need `bindingFailureConditions` too, so that a failed attachment can be "
                      "reported and the pod rescheduled (API server: Invalid value)")
    if failures and not conditions:
        yield Problem(rule, path.child("bindingConditions"),
                      "`bindingFailureConditions` are only meaningful with `bindingConditions` (API server: Invalid "
                      "value)")



# --- claims: where the spec lives, request names and references, admin access ------------------

def spec_path(kind: str) -> FieldPath:
    """Canonical path of the claim spec: ``spec`` of a claim, ``spec.spec`` of a template."""
    return FieldPath(("spec", "spec")) if kind == "ResourceClaimTemplate" else FieldPath(("spec",))


def request_names(requests: Any) -> RequestNames:
    """Request names of a claim and, for prioritized-list requests, their subrequest names."""
    names: dict[str, frozenset[str] | None] = {}
    for request in requests if isinstance(requests, list) else ():
        if not isinstance(request, dict) or not isinstance(request.get("name", ""), str):
            continue
        subs = request.get("firstAvailable")
        if isinstance(subs, list) and subs:
            names[request.get("name", "")] = frozenset(s["name"] for s in subs
                                                       if isinstance(s, dict) and isinstance(s.get("name"), str))
        else:
            names[request.get("name", "")] = None
    return names


def request_ref_problem(ref: str, path: FieldPath, names: RequestNames, rule: str) -> Problem | None:
    """The problem of one ``<request>`` or ``<request>/<subrequest>`` reference, if any."""
    segments = ref.split("/")
    suffix = " (API server: Invalid value, \"must be the name of a request in the claim or the name of a request " \
             "and a subrequest separated by '/'\")"
    if len(segments) > 2:
        return Problem(rule, path, f"{ref!r} has more than one '/'; refer to a request as `<request>` or "
                                   f"`<request>/<subrequest>`{suffix}")
    req = segments[0]
    if req not in names:
        close = difflib.get_close_matches(req, [n for n in names if n], n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else \
            (f"; the claim's requests are {', '.join(sorted(names))}" if names else "; the claim has no requests")
        return Problem(rule, path, f"{ref!r} does not name a request of this claim{hint}{suffix}")
    subs = names[req]
    if len(segments) == 2:
        if subs is None:
            return Problem(rule, path, f"{ref!r} names subrequest {segments[1]!r}, but request {req!r} has no "
                                       f"`firstAvailable` subrequests; refer to it as {req!r}{suffix}")
        if segments[1] not in subs:
            close = difflib.get_close_matches(segments[1], sorted(subs), n=1, cutoff=0.6)
            hint = f" (did you mean '{req}/{close[0]}'?)" if close else f"; its subrequests are {', '.join(sorted(subs))}"
            return Problem(rule, path, f"request {req!r} has no subrequest {segments[1]!r}{hint}{suffix}")
    for segment in segments:
        errs = is_dns1123_label(segment)
        if errs:
            where = f" in {ref!r}" if segment != ref else ""  # "'GPU' in 'GPU'" would quote one word twice
            return Problem(rule, path, f"{segment!r}{where} is not a valid request name: {errs[0]}{suffix}")
    return None


def admin_access_problem(ctx: CheckContext, path: FieldPath) -> Problem | None:
    """Admin access needs the namespace label: DRA216 when the namespace is known without it, DRA217 when
    its labels are not known (judged as unlabelled, as the API server judges most namespaces)."""
    key = ctx.limits.admin_access_label
    if key is None:
        return None
    namespace = ctx.obj.namespace
    labels = ctx.index.namespace_labels(namespace) if ctx.index is not None and namespace else None
    label = f"`{key}: \"true\"`"
    if labels is None:
        where = f"namespace {namespace!r}" if namespace else "the namespace it is created in"
        return Problem(ADMIN_UNVERIFIED, path,
                       f"admin access is only granted when {where} carries the label {label}, which few "
                       "namespaces do; the Namespace is not part of this run, so dralint cannot see its labels: give "
                       "it in the files or with --cluster if it has the label (API server, without the label: "
                       "Forbidden)")
    if labels.get(key) != "true":
        return Problem(ADMIN_FORBIDDEN, path,
                       f"admin access to devices requires the label {label} on namespace {namespace!r}, which does "
                       "not have it; ask a cluster admin to label the namespace, or drop `adminAccess` "
                       "(API server: Forbidden)")
    return None
