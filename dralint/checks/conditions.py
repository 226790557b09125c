"""metav1 Conditions (apimachinery ``ValidateConditions``), shared by claim device status and
DeviceTaintRule status: unique qualified types, a known status, reason and time set, sizes."""
from __future__ import annotations

import re
from typing import Iterator

from ..paths import FieldPath
from ..problems import Problem
from ..kube.validation import is_qualified_name

STATUSES = ("False", "True", "Unknown")
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_REASON_MAX = 1024
_MESSAGE_MAX = 32768


def condition_problems(conditions: list, path: FieldPath, rule: str) -> Iterator[Problem]:
    """Problems of every condition in ``conditions`` (at ``path``), reported under ``rule``."""
    seen: set[str] = set()
    for i, cond in enumerate(conditions):
        if not isinstance(cond, dict):
            continue
        cpath = path.child(i)
        ctype = cond.get("type", "")
        if isinstance(ctype, str):
            if ctype in seen:
                yield Problem(rule, cpath.child("type"),
                              f"condition type {ctype!r} appears twice; keep one condition per type (API server: "
                              "Duplicate value)")
            seen.add(ctype)
            for msg in is_qualified_name(ctype) if ctype else ["a condition type is required"]:
                yield Problem(rule, cpath.child("type"),
                              f"condition type {ctype!r} is not a qualified name: {msg} (API server: Invalid value)")
        if cond.get("status") not in STATUSES:
            yield Problem(rule, cpath.child("status"),
                          f"condition status {cond.get('status')!r} is not one of {', '.join(STATUSES)} "
                          "(API server: Unsupported value)")
        generation = cond.get("observedGeneration", 0)
        if isinstance(generation, int) and generation < 0:
            yield Problem(rule, cpath.child("observedGeneration"),
                          f"observedGeneration is {generation}; it must be greater than or equal to zero (API "
                          "server: Invalid value)")
        if not cond.get("lastTransitionTime"):
            yield Problem(rule, cpath.child("lastTransitionTime"),
                          "lastTransitionTime must be set (API server: Required value)")
        reason = cond.get("reason", "")
        if not reason:
            yield Problem(rule, cpath.child("reason"),
                          "reason must be set: a CamelCase word such as `Ready` (API server: Required value)")
        elif isinstance(reason, str):
            if len(reason) > _REASON_MAX:
                yield Problem(rule, cpath.child("reason"),
                              f"reason is {len(reason)} characters long; at most {_REASON_MAX} are allowed (API "
                              "server: Too long)")
            elif not _REASON.match(reason):
                yield Problem(rule, cpath.child("reason"),
                              f"reason {reason!r} must start with a letter and consist of letters, digits, '_', ',' "
                              "and ':' (API server: Invalid value)")
        message = cond.get("message", "")
        if isinstance(message, str) and len(message) > _MESSAGE_MAX:
            yield Problem(rule, cpath.child("message"),
                          f"message is {len(message)} characters long; at most {_MESSAGE_MAX} are allowed (API "
                          "server: Too long)")
