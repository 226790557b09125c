"""DeviceTaintRule (v1alpha3 1.33+, v1beta2 1.36+, v1): taint many devices at once.

``spec.deviceSelector`` is optional (no selector: every device); its ``driver``, ``pool`` and
``device`` are checked as a driver name, pool name and device name. In 1.33–1.34 the selector
also had ``deviceClassName`` (a DNS subdomain) and CEL ``selectors`` (at most 32, each with
``cel``). ``spec.taint`` needs a label key, an optional label value and an effect (``None``
from 1.35); on update the effect is only re-checked when it changed. ``status.conditions``
(1.35+) are metav1 Conditions, at most 8; the server only looks at them on a status write.

Rules: DRA450 taint-rule-selector-invalid, DRA451 taint-rule-status-invalid; driver, pool and
device names, taint key/value/effect via fields.py (DRA400, DRA401, DRA410, DRA418, DRA419).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from .base import CheckContext, p, too_many
from ..problems import Problem
from .conditions import condition_problems
from .fields import device_name_problems, driver_problems, pool_name_problems, taint_problems
from ..kube.validation import is_dns1123_subdomain

KINDS: frozenset[str] = frozenset({"DeviceTaintRule"})

SELECTOR_INVALID = "DRA450"
STATUS_INVALID = "DRA451"

RULES = ("DRA400", "DRA401", "DRA410", "DRA418", "DRA419", "DRA450", "DRA451")


def check(ctx: CheckContext) -> Iterable[Problem]:
    """Problems of one DeviceTaintRule (spec on create and update, status on a status write)."""
    spec = ctx.obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    old_spec = ctx.old.get("spec") if ctx.is_update and ctx.old is not None else None
    old_spec = old_spec if isinstance(old_spec, dict) else {}
    selector = spec.get("deviceSelector")
    if isinstance(selector, dict):
        yield from _selector(ctx, selector)
    taint = spec.get("taint")
    taint = taint if isinstance(taint, dict) else {}
    old_taint = old_spec.get("taint") if isinstance(old_spec.get("taint"), dict) else None
    effect_unchanged = old_taint is not None and old_taint.get("effect") == taint.get("effect")
    yield from taint_problems(taint, p("spec", "taint"), ctx.release, check_effect=not effect_unchanged)
    status = ctx.obj.get("status")
    status_write = ctx.subresource == "status" or (
        ctx.is_update and ctx.old is not None and ctx.old.get("status") != status)
    if status_write and isinstance(status, dict):
        yield from _status(ctx, status.get("conditions"))


def _selector(ctx: CheckContext, selector: dict) -> Iterator[Problem]:
    base = p("spec", "deviceSelector")
    for name, validate in (("driver", driver_problems), ("pool", pool_name_problems)):
        value = selector.get(name)
        if isinstance(value, str):
            yield from validate(value, base.child(name))
    if selector.get("device") is not None:
        yield from device_name_problems(selector.get("device"), base.child("device"))
    class_name = selector.get("deviceClassName")
    if isinstance(class_name, str):
        for msg in is_dns1123_subdomain(class_name):
            yield Problem(SELECTOR_INVALID, base.child("deviceClassName"),
                          f"{class_name!r} is not a valid DeviceClass name: {msg} (API server: Invalid value)")
    selectors = selector.get("selectors")
    if isinstance(selectors, list):
        problem = too_many(SELECTOR_INVALID, selectors, ctx.limits.selectors, base.child("selectors"),
                           "CEL selectors", "combine conditions with && in fewer expressions")
        if problem is not None:
            yield problem
            return
        for i, entry in enumerate(selectors):
            if isinstance(entry, dict) and entry.get("cel") is None:
                yield Problem(SELECTOR_INVALID, base.child("selectors", i, "cel"),
                              "a selector needs `cel: {expression: ...}` (API server: Required value)")


def _status(ctx: CheckContext, conditions: Any) -> Iterator[Problem]:
    if not isinstance(conditions, list):
        return
    path = p("status", "conditions")
    yield from condition_problems(conditions, path, STATUS_INVALID)
    problem = too_many(STATUS_INVALID, conditions, ctx.limits.taint_rule_conditions, path, "status conditions",
                       "keep one condition per type")
    if problem is not None:
        yield problem

