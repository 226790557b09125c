"""DeviceTaintRule (v1alpha3 1.33+, v1beta2 1.36+, v1): taint many devices at once.

``spec.deviceSelector`` is optional: without it a rule taints every device up to 1.37 and no device
from 1.38 (kubernetes#141648); an empty one (``{}``) taints every device, which kubectl warns about
from 1.38 (#141831): DRA452 warns about both. Its ``driver``, ``pool`` and
``device`` are checked as a driver name, pool name and device name. In 1.33–1.34 the selector
also had ``deviceClassName`` (a DNS subdomain) and CEL ``selectors`` (at most 32, each with
``cel``). ``spec.taint`` needs a label key, an optional label value and an effect (``None``
from 1.35); on update the effect is only re-checked when it changed. ``status.conditions``
(1.35+) are metav1 Conditions, at most 8; the server only looks at them on a status write.

Rules: DRA450 taint-rule-selector-invalid, DRA451 taint-rule-status-invalid, DRA452
taint-rule-selector-unscoped; driver, pool and
device names, taint key/value/effect via fields.py (DRA400, DRA401, DRA410, DRA418, DRA419).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from .base import CheckContext, p, too_many
from ..findings import Severity
from ..problems import Problem
from .conditions import condition_problems
from .fields import device_name_problems, driver_problems, pool_name_problems, taint_problems
from ..kube.validation import is_dns1123_subdomain

KINDS: frozenset[str] = frozenset({"DeviceTaintRule"})

SELECTOR_INVALID = "DRA450"
STATUS_INVALID = "DRA451"
SELECTOR_UNSCOPED = "DRA452"

RULES = ("DRA400", "DRA401", "DRA410", "DRA418", "DRA419", "DRA450", "DRA451", "DRA452")
# What a selector may narrow by (deviceClassName and selectors: 1.33-1.34 only).
_SELECTOR_FIELDS = ("driver", "pool", "device", "deviceClassName", "selectors")


def check(ctx: CheckContext) -> Iterable[Problem]:
    """Problems of one DeviceTaintRule (spec on create and update, status on a status write)."""
    spec = ctx.obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    old_spec = ctx.old.get("spec") if ctx.is_update and ctx.old is not None else None
    old_spec = old_spec if isinstance(old_spec, dict) else {}
    selector = spec.get("deviceSelector")
    if isinstance(selector, dict):
        yield from _selector(ctx, selector)
    yield from _unscoped(ctx, selector)
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


def _unscoped(ctx: CheckContext, selector: Any) -> Iterator[Problem]:
    """A missing selector (whose meaning 1.38 turned around) or one that narrows by nothing."""
    if selector is None:
        meaning = ("taints no device in Kubernetes 1.38 and later, where a rule without `deviceSelector` "
                   "matches nothing (kubernetes#141648); up to 1.37 it tainted every device"
                   if ctx.limits.taint_rule_needs_selector else
                   f"taints every device of every driver in Kubernetes {ctx.release.version}, and no device "
                   "once the cluster runs 1.38 (kubernetes#141648 made a missing selector match nothing)")
        yield Problem(SELECTOR_UNSCOPED, p("spec"),
                      f"this DeviceTaintRule has no `deviceSelector`: it {meaning}; name the `driver`, `pool` or "
                      "`device` to taint, or write `deviceSelector: {}` to taint every device on every release",
                      severity=Severity.WARNING)
    elif isinstance(selector, dict) and all(selector.get(k) in (None, []) for k in _SELECTOR_FIELDS):
        yield Problem(SELECTOR_UNSCOPED, p("spec", "deviceSelector"),
                      "an empty `deviceSelector` matches every device from every driver in the cluster (kubectl "
                      "warns about it from 1.38, kubernetes#141831); name the `driver`, `pool` or `device` to "
                      "taint, unless every device is meant", severity=Severity.WARNING)


def _status(ctx: CheckContext, conditions: Any) -> Iterator[Problem]:
    if not isinstance(conditions, list):
        return
    path = p("status", "conditions")
    yield from condition_problems(conditions, path, STATUS_INVALID)
    problem = too_many(STATUS_INVALID, conditions, ctx.limits.taint_rule_conditions, path, "status conditions",
                       "keep one condition per type")
    if problem is not None:
        yield problem

