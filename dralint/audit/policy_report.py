"""The audit as ``PolicyReport`` / ``ClusterPolicyReport`` objects (wgpolicyk8s.io/v1alpha2), the format
Kyverno writes and the policy-reporter UI reads.

One ``PolicyReport`` per namespace holding audited objects, plus one ``ClusterPolicyReport`` for the
cluster-scoped ones (DeviceClasses, ResourceSlices, DeviceTaintRules). Each finding is one result
(policy ``dralint``, rule ``DRA600 device-class-not-found``); an object without findings is one
``pass`` result, one in an exempt namespace one ``skip``. The object a result is about is its
``resources`` entry, an ObjectReference (apiVersion, kind, namespace, name, uid).
"""
from __future__ import annotations

from typing import Any, TextIO

import yaml

from ..findings import Finding, Severity
from .judge import Verdict

API_VERSION = "wgpolicyk8s.io/v1alpha2"
POLICY = "dralint"
SOURCE = "dralint"
# The report objects' name: one per namespace (and one cluster-wide), replaced by each audit applied.
REPORT_NAME = "dralint-audit"
INTERNAL_ERROR_RULE = "DRA000"
# A finding's severity as the format spells it (critical, high, medium, low, info), and its result.
_SEVERITY = {Severity.ERROR: "high", Severity.WARNING: "medium", Severity.INFO: "info"}
_RESULT = {Severity.ERROR: "fail", Severity.WARNING: "warn", Severity.INFO: "warn"}
RESULTS = ("pass", "fail", "warn", "error", "skip")


def reports(verdicts: list[Verdict], seconds: int) -> list[dict[str, Any]]:
    """The report objects of ``verdicts``: a ClusterPolicyReport first (when a cluster-scoped object
    was audited), then a PolicyReport per namespace in name order. ``seconds``: the audit's time."""
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for verdict in verdicts:
        by_namespace.setdefault(verdict.obj.namespace, []).extend(results(verdict, seconds))
    out = []
    for namespace in sorted(by_namespace):
        entries = by_namespace[namespace]
        meta: dict[str, Any] = {"name": REPORT_NAME, "labels": {"app.kubernetes.io/managed-by": "dralint"}}
        if namespace:
            meta["namespace"] = namespace
        out.append({"apiVersion": API_VERSION, "kind": "PolicyReport" if namespace else "ClusterPolicyReport",
                    "metadata": meta, "summary": summary(entries), "results": entries})
    return out


def results(verdict: Verdict, seconds: int) -> list[dict[str, Any]]:
    """The results of one audited object."""
    ref = reference(verdict)
    if verdict.exempt:
        return [_result("dralint", "skip", "info", "in a namespace the webhook's policy exempts: not judged", ref,
                        seconds, "")]
    if not verdict.findings:
        return [_result("dralint", "pass", "info", "no problem found", ref, seconds, "")]
    return [_finding_result(f, ref, seconds) for f in verdict.findings]


def reference(verdict: Verdict) -> dict[str, str]:
    """The object as an ObjectReference."""
    obj = verdict.obj
    ref = {"apiVersion": obj.api_version, "kind": obj.kind, "name": obj.name}
    if obj.namespace:
        ref["namespace"] = obj.namespace
    if obj.uid:
        ref["uid"] = obj.uid
    return ref


def _finding_result(finding: Finding, ref: dict[str, str], seconds: int) -> dict[str, Any]:
    outcome = "error" if finding.rule == INTERNAL_ERROR_RULE else _RESULT[finding.severity]
    entry = _result(f"{finding.rule} {finding.name}", outcome, _SEVERITY[finding.severity], finding.message, ref,
                    seconds, finding.category.value)
    if finding.field:
        entry["properties"] = {"field": finding.field}
    return entry


def _result(rule: str, outcome: str, severity: str, message: str, ref: dict[str, str], seconds: int,
            category: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"policy": POLICY, "rule": rule, "result": outcome, "severity": severity,
                             "message": message, "source": SOURCE, "scored": True,
                             "timestamp": {"seconds": seconds, "nanos": 0},
                             "resources": [dict(ref)]}   # a copy each: YAML would write a shared one as an anchor
    if category:
        entry["category"] = category
    return entry


def summary(entries: list[dict[str, Any]]) -> dict[str, int]:
    """How many results of each outcome."""
    return {outcome: sum(1 for e in entries if e["result"] == outcome) for outcome in RESULTS}


def write(documents: list[dict[str, Any]], stream: TextIO) -> None:
    """The reports as one YAML stream, for ``kubectl apply -f``."""
    yaml.safe_dump_all(documents, stream, sort_keys=False, allow_unicode=True, width=1_000_000)
