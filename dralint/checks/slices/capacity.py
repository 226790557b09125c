"""Device capacities of a ResourceSlice: their names, and consumable capacity's request policies
(``validValues`` or ``validRange``) with exact Quantity arithmetic, as each release's
``validateRequestPolicy`` judges them."""
from __future__ import annotations

from typing import Any, Generator, Iterator

from ...kube.quantity import Quantity, QuantityError
from ...paths import FieldPath
from ...problems import Problem
from ..base import CheckContext, too_many
from .attributes import key_errors, qualified_key_problems

REQUEST_POLICY_FORBIDDEN = "DRA415"
REQUEST_POLICY_INVALID = "DRA416"


def capacity_problems(ctx: CheckContext, capacity: dict, shared: bool, path: FieldPath) -> Iterator[Problem]:
    """A device's ``capacity`` map: key names, and request policies (only on shared devices)."""
    for key, cap in capacity.items():
        key = str(key)
        if key_errors(ctx, key):
            yield from qualified_key_problems(ctx, key, path, "capacity")
        policy = cap.get("requestPolicy") if isinstance(cap, dict) else None
        if policy is None:
            continue
        policy_path = path.key(key).child("requestPolicy")
        if not shared:
            yield Problem(REQUEST_POLICY_FORBIDDEN, policy_path,
                          "a `requestPolicy` only applies to devices that can be allocated several times: set "
                          "`allowMultipleAllocations: true` on the device, or remove the policy (API server: "
                          "Forbidden, \"allowMultipleAllocations must be true\")")
        elif isinstance(policy, dict):
            yield from _request_policy(ctx, cap.get("value"), policy, policy_path)


def quantity_of(value: Any) -> Quantity | None:
    """The Quantity of a YAML value, or None when it is not one (the schema stage reports that)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return Quantity.parse(value)
    except (QuantityError, TypeError):
        return None


# --- consumable capacity: requestPolicy (validateRequestPolicy and friends) -----------------------------

_MAX_INT64 = 2**63 - 1


def _request_policy(ctx: CheckContext, raw_value: Any, policy: dict, path: FieldPath) -> Iterator[Problem]:
    capacity = quantity_of(raw_value)
    if capacity is None:
        return
    values: Any = policy.get("validValues")        # as written: checked below
    valid_range: Any = policy.get("validRange")
    has_values = isinstance(values, list) and len(values) > 0
    if has_values and valid_range is not None:
        yield Problem(REQUEST_POLICY_INVALID, path,
                      "a request policy has either `validValues` or `validRange`, not both: keep one (API server: "
                      "Forbidden, \"exactly one policy can be specified\")")
        return
    if not has_values and not isinstance(valid_range, dict):
        return
    default = quantity_of(policy.get("default"))
    if policy.get("default") is None:
        what = "validValues" if has_values else "validRange"
        yield Problem(REQUEST_POLICY_INVALID, path.child("default"),
                      f"`default` is required when {what} is defined: the amount a request gets when it asks for "
                      "none (API server: Required value)")
        return
    if default is None:
        return
    fractional = ctx.gate("DRAFractionalCapacityRange")
    if has_values:
        yield from _valid_values(ctx, default, capacity, values, path.child("validValues"), fractional)
    elif ctx.limits.capacity_range_guards:
        yield from _valid_range(default, capacity, valid_range, path.child("validRange"), fractional)
    else:
        yield from _unguarded_range(default, capacity, valid_range, path.child("validRange"))


def _valid_values(ctx: CheckContext, default: Quantity, capacity: Quantity, raw: list, path: FieldPath,
                  fractional: bool) -> Iterator[Problem]:
    options = [quantity_of(v) for v in raw]
    if any(o is None for o in options):
        return
    qs: list[Quantity] = [o for o in options if o is not None]
    for i in range(len(qs) - 1):
        if qs[i] > qs[i + 1]:
            yield Problem(REQUEST_POLICY_INVALID, path.child(i + 1),
                          f"{qs[i + 1]} comes after {qs[i]}; validValues must be sorted in ascending order "
                          "(API server: Invalid value)")
    problem = too_many(REQUEST_POLICY_INVALID, qs, ctx.limits.valid_values, path, "valid values",
                       "offer fewer options, or use a validRange with a step")
    if problem is not None:
        yield problem
        return
    seen: set[Any] = set()
    for j, q in enumerate(qs):
        if q > capacity:
            yield Problem(REQUEST_POLICY_INVALID, path.child(j),
                          f"option {q} is larger than the capacity value {capacity}; no device could ever provide "
                          "it (API server: Invalid value)")
        # Without fractional support the server compares options as integers, rounded up.
        key = q.value if fractional else _ceil(q.value)
        if key in seen:
            yield Problem(REQUEST_POLICY_INVALID, path.child(j),
                          f"option {q} repeats an earlier value{'' if fractional else ' (compared as whole numbers)'}"
                          " (API server: Duplicate value)")
        seen.add(key)
    if default not in qs:
        yield Problem(REQUEST_POLICY_INVALID, path,
                      f"the default {default} is not one of the validValues; add it or change the default (API "
                      "server: Invalid value, \"default value is not valid according to the requestPolicy\")")


def _range_bounds(default: Quantity, capacity: Quantity, rng: dict, path: FieldPath,
                  at_bound: bool) -> Generator[Problem, None, tuple[Quantity, Quantity | None, Quantity | None] | None]:
    """The checks of min and max every release makes; returns (min, max, step), or None when they
    cannot be read. The default's errors are at `default`, or with ``at_bound`` (1.34-1.36) at the
    bound it breaks."""
    low = quantity_of(rng.get("min"))
    if rng.get("min") is None:
        yield Problem(REQUEST_POLICY_INVALID, path.child("min"),
                      "`min` is required when validRange is defined (API server: Required value)")
        return None
    high, step = quantity_of(rng.get("max")), quantity_of(rng.get("step"))
    if low is None or (rng.get("max") is not None and high is None) or (rng.get("step") is not None and step is None):
        return None
    if low > capacity:
        yield _range_problem(path.child("min"), f"min {low} is larger than the capacity value {capacity}")
    if default < low:
        yield _range_problem(path.child("min" if at_bound else "default"),
                             f"the default {default} is less than min {low}")
    if high is not None:
        if low > high:
            yield _range_problem(path.child("max"), f"min {low} is larger than max {high}")
        if high > capacity:
            yield _range_problem(path.child("max"), f"max {high} is larger than the capacity value {capacity}")
        if default > high:
            yield _range_problem(path.child("max" if at_bound else "default"),
                                 f"the default {default} is more than max {high}")
    return low, high, step


def _valid_range(default: Quantity, capacity: Quantity, rng: dict, path: FieldPath,
                 fractional: bool) -> Iterator[Problem]:
    bounds = yield from _range_bounds(default, capacity, rng, path, at_bound=False)
    if bounds is None:
        return
    low, high, step = bounds
    named = [("default", default), ("min", low), ("max", high), ("step", step)]
    use_milli = fractional and any(q is not None and not q.is_integer() for _, q in named)
    if use_milli:
        unsafe = [(n, q) for n, q in named if q is not None and not _milli_safe(q)]
        for name, inexact in unsafe:
            yield _range_problem(path.child(name), f"{name} {inexact} cannot be represented as a milli value (at most "
                                                   "three decimal places)")
        if unsafe:
            return
    if step is None:
        return
    if step.value <= 0:
        yield _range_problem(path.child("step"), f"step {step} must be greater than zero")
        return
    if low.value + step.value > capacity.value:
        yield _range_problem(path.child("step"), f"one step from min ({low} + {step}) is larger than the capacity "
                                                 f"value {capacity}")
    if not use_milli:
        unsafe_int = False
        for name, q in named:
            if q is None:
                continue
            if q.value < 0:
                unsafe_int = True
                yield _range_problem(path.child(name), f"{name} {q} must be greater than or equal to 0")
            elif q.value > _MAX_INT64:
                unsafe_int = True
                yield _range_problem(path.child(name), f"{name} {q} must not be larger than {_MAX_INT64}")
        if unsafe_int:
            return
    scale = 1000 if use_milli else 1
    for value in (default, high):
        if value is not None and (_ceil(value.value * scale) - _ceil(low.value * scale)) % _ceil(step.value * scale):
            yield _range_problem(path.child("step"), f"{value} is not min {low} plus a multiple of step {step}")


def _unguarded_range(default: Quantity, capacity: Quantity, rng: dict, path: FieldPath) -> Iterator[Problem]:
    """validateRequestPolicyRange of 1.34-1.36 (validation.go of 1.35): no sign or int64 checks, the
    default's errors at `min` and `max`, whole numbers only (Quantity.Value, rounded up)."""
    bounds = yield from _range_bounds(default, capacity, rng, path, at_bound=True)
    if bounds is None:
        return
    low, high, step = bounds
    if step is None:
        return
    if low.value + step.value > capacity.value:
        yield _range_problem(path.child("step"), f"one step from min ({low} + {step}) is larger than the capacity "
                                                 f"value {capacity}")
    divisor = _ceil(step.value)
    if divisor == 0:
        yield _range_problem(path.child("step"), f"step {step} is zero: this release's API server divides by it and "
                                                 "fails the request (fixed in 1.37, which wants a step greater than "
                                                 "zero)")
        return
    for value in (default, high):
        # Go's remainder keeps the dividend's sign; only whether it is zero matters here.
        if value is not None and (_ceil(value.value) - _ceil(low.value)) % abs(divisor):
            yield _range_problem(path.child("step"), f"{value} is not min {low} plus a multiple of step {step}")


def _range_problem(path: FieldPath, what: str) -> Problem:
    return Problem(REQUEST_POLICY_INVALID, path, f"{what}; requests could never be satisfied as the policy describes "
                                                 "(API server: Invalid value)")


def _ceil(value: Any) -> int:
    """Quantity.Value(): rounded up, away from zero."""
    magnitude = -(-abs(value.numerator) // value.denominator)
    return magnitude if value >= 0 else -magnitude


def _milli_safe(q: Quantity) -> bool:
    return q.milli_exact() and abs(q.value * 1000) <= _MAX_INT64
