"""Organisation rules: policy the API server does not have, judged by the webhook only.

They live here and not in the engine's catalog because they only exist with a policy file: the
CLI could never raise them, so catalog examples could not run. Their ids (DRA950-DRA969, the
best-practice group reserved for policy) and names never clash with the catalog's, and the
policy's ``ignore``, ``severities`` and ``enforcement`` apply to them as to every other rule; an
object's ``dralint.io/ignore`` annotation never does (the engine is told their names, to say so).

They are judged on CREATE of ResourceClaims and ResourceClaimTemplates (every version that has
``spec.devices.requests``): claim and template specs are immutable, so judging updates would only
refuse metadata edits of objects created before the policy changed.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from dralint.findings import Category, Finding, Location, Severity
from dralint.kube.shapes import SPEC_PATHS
from dralint.paths import FieldPath

# v1beta1 / v1alpha3 requests carry these flat; v1 / v1beta2 put them under ``exactly``.
_FLAT_FIELDS = ("deviceClassName", "allocationMode", "count", "adminAccess")


@dataclass(frozen=True)
class OrgRule:
    id: str
    name: str
    severity: Severity
    summary: str


RULES: dict[str, OrgRule] = {r.id: r for r in (
    OrgRule("DRA950", "device-class-not-allowed", Severity.ERROR,
            "A request names a DeviceClass that the policy does not allow in the claim's namespace."),
    OrgRule("DRA951", "too-many-devices", Severity.ERROR,
            "A claim may get more devices than the policy's maximum per claim."),
    OrgRule("DRA952", "admin-access-namespace", Severity.ERROR,
            "A request asks for adminAccess in a namespace without the policy's admin-access labels."),
    OrgRule("DRA953", "namespace-labels-unknown", Severity.WARNING,
            "adminAccess could not be judged: the webhook does not know the namespace's labels."),
)}


@dataclass(frozen=True)
class OrgPolicy:
    """The organisation section of the policy file."""

    allowed_classes: Mapping[str, tuple[str, ...]]   # namespace (or "*") → DeviceClass name patterns
    max_devices: int | None = None
    admin_labels: Mapping[str, str] | None = None      # labels a namespace needs for adminAccess

    @property
    def active(self) -> bool:
        return bool(self.allowed_classes) or self.max_devices is not None or self.admin_labels is not None


@dataclass(frozen=True)
class Request:
    """One device request of a claim spec, read from any served shape, with the user's path."""

    path: str                   # spec.devices.requests[0] (or ...firstAvailable[1])
    class_path: str             # where deviceClassName is in the user's document
    device_class: str | None
    mode: str
    count: int | None
    admin_access: bool


def judge(obj: Mapping[str, Any], namespace: str, policy: OrgPolicy,
          namespace_labels: Mapping[str, str] | None) -> list[Finding]:
    """Findings of the organisation rules for one claim or template (any other kind: none).

    ``namespace_labels`` are the labels of the claim's namespace, or None when they are unknown.
    Severities are the defaults; the caller applies the policy's ignore and severities.
    """
    spec_path = SPEC_PATHS.get(str(obj.get("kind")))
    if spec_path is None or not policy.active:
        return []
    spec = _get(obj, spec_path)
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    if not isinstance(requests, list):
        return []
    prefix = ".".join(spec_path) + ".devices.requests"
    display = _display(obj, namespace)
    out: list[Finding] = []
    totals: list[int | None] = []
    for i, raw in enumerate(requests):
        if not isinstance(raw, dict):
            continue
        alternatives = list(_requests(raw, f"{prefix}[{i}]"))
        out.extend(_class_findings(alternatives, namespace, policy, display))
        out.extend(_admin_findings(alternatives, namespace, policy, namespace_labels, display))
        counts = [_devices(r) for r in alternatives]
        # A request with alternatives gets one of them: its worst case is the largest.
        totals.append(None if None in counts else max(counts, default=0))
    if policy.max_devices is not None:
        out.extend(_count_findings(totals, policy.max_devices, prefix, display))
    return out


def _requests(raw: Mapping[str, Any], path: str) -> Iterator[Request]:
    alternatives = raw.get("firstAvailable")
    if isinstance(alternatives, list) and alternatives:
        for j, sub in enumerate(alternatives):
            if isinstance(sub, dict):
                yield _request(sub, f"{path}.firstAvailable[{j}]", f"{path}.firstAvailable[{j}]")
        return
    exactly = raw.get("exactly")
    if isinstance(exactly, dict):
        yield _request(exactly, path, f"{path}.exactly")
    elif any(f in raw for f in _FLAT_FIELDS):
        yield _request(raw, path, path)


def _request(body: Mapping[str, Any], path: str, fields: str) -> Request:
    cls = body.get("deviceClassName")
    mode = body.get("allocationMode")
    count = body.get("count")
    return Request(path=path, class_path=f"{fields}.deviceClassName",
                   device_class=cls if isinstance(cls, str) else None,
                   mode=mode if isinstance(mode, str) and mode else "ExactCount",
                   # The API server defaults a missing or zero count to 1.
                   count=count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1,
                   admin_access=body.get("adminAccess") is True)


def _devices(request: Request) -> int | None:
    """Devices this request may get; None for allocationMode All (as many as the pool has)."""
    return None if request.mode == "All" else request.count


def allowed_patterns(policy: OrgPolicy, namespace: str) -> tuple[str, ...] | None:
    """The DeviceClass patterns for ``namespace``; None when the namespace is not restricted."""
    if namespace in policy.allowed_classes:
        return policy.allowed_classes[namespace]
    return policy.allowed_classes.get("*")


def _class_findings(requests: list[Request], namespace: str, policy: OrgPolicy, display: str) -> Iterator[Finding]:
    patterns = allowed_patterns(policy, namespace)
    if patterns is None:
        return
    for r in requests:
        if r.device_class is not None and not any(fnmatch.fnmatchcase(r.device_class, p) for p in patterns):
            allowed = ", ".join(patterns) if patterns else "none"
            yield _finding("DRA950", f"DeviceClass {r.device_class!r} is not allowed in namespace "
                                     f"{namespace or '<none>'} by the cluster's policy (allowed: {allowed})",
                           r.class_path, display)


def _admin_findings(requests: list[Request], namespace: str, policy: OrgPolicy,
                    labels: Mapping[str, str] | None, display: str) -> Iterator[Finding]:
    needed = policy.admin_labels
    if needed is None:
        return
    wanted = ", ".join(f"{k}={v}" for k, v in sorted(needed.items()))
    for r in requests:
        if not r.admin_access:
            continue
        field = r.class_path.rsplit(".", 1)[0] + ".adminAccess"
        if labels is None:
            yield _finding("DRA953", f"adminAccess is only allowed in namespaces labelled {wanted}, and the webhook "
                                     f"does not know the labels of namespace {namespace or '<none>'} (add them to the "
                                     "policy's namespaceLabels)", field, display)
        elif any(labels.get(k) != v for k, v in needed.items()):
            yield _finding("DRA952", f"adminAccess is only allowed in namespaces labelled {wanted}; namespace "
                                     f"{namespace or '<none>'} is not", field, display)


def _count_findings(totals: list[int | None], maximum: int, prefix: str, display: str) -> Iterator[Finding]:
    if None in totals:
        yield _finding("DRA951", f"allocationMode All may allocate any number of devices; the cluster's policy "
                                 f"allows at most {maximum} per claim", prefix, display)
    elif sum(t for t in totals if t is not None) > maximum:
        total = sum(t for t in totals if t is not None)
        yield _finding("DRA951", f"the claim may get {total} devices; the cluster's policy allows at most "
                                 f"{maximum} per claim", prefix, display)


def _finding(rule_id: str, message: str, field: str, display: str) -> Finding:
    rule = RULES[rule_id]
    # These rules walk the request as text paths (``f"{path}.exactly"``); each parses back whole.
    return Finding(rule=rule.id, name=rule.name, severity=rule.severity, category=Category.BEST_PRACTICE,
                   message=message, location=Location("<request>", path=FieldPath.parse(field)), object=display)


def _display(obj: Mapping[str, Any], namespace: str) -> str:
    meta = obj.get("metadata")
    name = (meta.get("name") or meta.get("generateName")) if isinstance(meta, dict) else None
    name = name if isinstance(name, str) and name else "<unnamed>"
    return f"{obj.get('kind')} {namespace}/{name}" if namespace else f"{obj.get('kind')} {name}"


def _get(value: Any, path: tuple[str, ...]) -> Any:
    for seg in path:
        if not isinstance(value, dict):
            return None
        value = value.get(seg)
    return value
