"""``why-pending``'s answers as text (the first lines name the Pod, the claim, the request and the
cause) and as JSON (the shape docs/why-pending.md documents; ``version`` changes when it does)."""
from __future__ import annotations

import json
from typing import Any, Sequence, TextIO

from .diagnose import (ALLOCATABLE, ALLOCATED, MISSING, NOT_CREATED, UNALLOCATABLE, UNDECIDED, Cause, ClaimVerdict,
                       Diagnosis)

JSON_VERSION = 1

# What else holds a Pod whose claims are fine: the scheduler's other filters and the kubelet.
_ELSEWHERE = ("its CPU, memory or other resource requests, node taints it does not tolerate, volumes, "
              "ports, pod (anti-)affinity or topology spread; or, once bound, the kubelet (pulling images, "
              "preparing the devices): the events say which")


def text(diagnoses: Sequence[Diagnosis], out: TextIO) -> None:
    """Each Pod's answer, a blank line between Pods."""
    for n, diagnosis in enumerate(diagnoses):
        if n:
            out.write("\n")
        out.write("".join(line + "\n" for line in _text_lines(diagnosis)))


def _text_lines(d: Diagnosis) -> list[str]:
    case = d.case
    pod = f"Pod {case.namespace}/{case.name} ({case.phase})"
    blocking = [c for c in d.claims if c.blocking]
    if not case.claims:
        lines = [f"{pod}: it uses no ResourceClaims; what holds it is not Dynamic Resource Allocation: {_ELSEWHERE}"]
    elif blocking:
        lines = [f"{pod}: {len(blocking)} of {len(d.claims)} claim(s) cannot be allocated"]
    elif any(c.severity == "error" for c in d.pod_causes):
        lines = [f"{pod}: its claims cannot be allocated, because of the Pod itself"]
    elif any(c.state == UNDECIDED for c in d.claims):
        lines = [f"{pod}: undecided: the allocator's search ran past its budget; give --max-seconds more"]
    elif all(c.state == ALLOCATED for c in d.claims):
        lines = [f"{pod}: every claim is allocated; what holds it is not its claims but {_ELSEWHERE}"]
    else:
        lines = [f"{pod}: the allocator finds devices for every claim now; the scheduler may not have tried "
                 f"again since they were freed, or the Pod waits for {_ELSEWHERE}"]
    pod_blocked = any(c.severity == "error" for c in d.pod_causes)
    for claim in sorted(d.claims, key=lambda c: not c.blocking):
        lines += _claim_lines(claim, pod_blocked)
    for cause in d.pod_causes:
        lines.append(f"  the Pod [{cause.rule}]: {cause.message}")
        lines += _held_lines(cause, "    ")
    gates = case.pod.get("spec", {}).get("schedulingGates") if isinstance(case.pod.get("spec"), dict) else None
    if gates:
        names = ", ".join(str(g.get("name")) for g in gates if isinstance(g, dict))
        lines.append(f"  the Pod has scheduling gates ({names}): the scheduler does not look at it until they are removed")
    if case.events:
        lines.append("  recent events (newest first):")
        for e in case.events:
            times = f", {e.count}x" if e.count > 1 else ""
            lines.append(f"    {e.last or '-'} {e.type} {e.reason} ({e.source or 'unknown'}{times}): {e.message}")
    elif case.events_problem:
        lines.append(f"  events not read: {case.events_problem}")
    else:
        lines.append("  no recent events about the Pod")
    return lines


def _claim_lines(c: ClaimVerdict, pod_blocked: bool) -> list[str]:
    name = f"claim {c.claim}" if c.claim else f"the claim of template {c.template} (not made yet)"
    entry = f" (the Pod's `{c.entry}`" + (f", from template {c.template})" if c.template and c.claim else ")")
    if c.state == ALLOCATED:
        held = f"; reserved for {', '.join(c.reserved_for)}" if c.reserved_for else "; not reserved for any Pod yet"
        devices = ", ".join(c.devices) or "no devices"
        return [f"  {name}{entry}: allocated ({devices}){held}"]
    if c.state == MISSING:
        what = f"claim {c.claim}" if c.claim else f"template {c.template}"
        return [f"  {what}{entry}: does not exist; the scheduler waits for it"]
    head = {UNALLOCATABLE: "cannot be allocated", ALLOCATABLE: "not allocated yet; the allocator finds devices for it",
            NOT_CREATED: "the resourceclaim controller has not made it yet; the allocator would find devices for it",
            UNDECIDED: "not allocated; the allocator could not decide within its budget (--max-seconds)"}
    said = head[c.state]
    if pod_blocked and c.state in (ALLOCATABLE, NOT_CREATED):
        said = "not allocated; devices for it exist, but the Pod keeps it from being allocated (below)"
    lines = [f"  {name}{entry}: {said}"]
    for cause in c.causes:
        request = f"request `{cause.request}` " if cause.request else ""
        lines.append(f"    {request}[{cause.rule}]: {cause.message}")
        lines += _held_lines(cause, "      ")
    return lines


def _held_lines(cause: Cause, indent: str) -> list[str]:
    return [f"{indent}{claim} is allocated, reserved for {', '.join(users) or 'no Pod (yet)'}"
            for claim, users in cause.held_by]


def as_json(diagnoses: Sequence[Diagnosis], server: str, release: str, out: TextIO) -> None:
    """The documented JSON shape: ``{"version", "server", "release", "pods": [...]}``."""
    body = {"version": JSON_VERSION, "server": server, "release": release, "pods": [_pod(d) for d in diagnoses]}
    out.write(json.dumps(body, indent=2) + "\n")


def _pod(d: Diagnosis) -> dict[str, Any]:
    case = d.case
    return {
        "namespace": case.namespace, "name": case.name, "phase": case.phase, "nodeName": case.node_name,
        "blocked": d.blocked,
        "claims": [{"entry": c.entry, "claim": c.claim, "template": c.template, "state": c.state,
                    "reservedFor": c.reserved_for, "devices": c.devices,
                    "causes": [_cause(x) for x in c.causes]} for c in d.claims],
        "podCauses": [_cause(x) for x in d.pod_causes],
        "events": [{"type": e.type, "reason": e.reason, "source": e.source, "count": e.count, "last": e.last,
                    "message": e.message} for e in case.events],
        "eventsProblem": case.events_problem,
    }


def _cause(cause: Cause) -> dict[str, Any]:
    return {"rule": cause.rule, "request": cause.request, "severity": cause.severity, "message": cause.message,
            "heldBy": [{"claim": claim, "reservedFor": users} for claim, users in cause.held_by]}
