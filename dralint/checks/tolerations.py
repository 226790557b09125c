"""Device tolerations (``tolerations[k]`` of requests, subrequests and allocation results).

The API server validates a device toleration with ``validateDeviceToleration``: the key, when
set, is a label key; the operator (defaulted to ``Equal``) is ``Equal`` or ``Exists``; ``Exists``
takes no value and ``Equal`` a label value; the effect, when set, is a taint effect the release
knows. Unlike pod tolerations, an empty key with ``Equal`` is accepted and ``tolerationSeconds``
is not tied to an effect. The documented limit of 16 tolerations is not enforced by the server, so
exceeding it is only a warning.

Rules: DRA214 toleration-invalid, DRA215 tolerations-too-many.
"""
from __future__ import annotations

from typing import Any, Iterator

from ..kube.limits import Limits
from ..paths import FieldPath
from ..kube.releases import Release
from ..problems import Problem
from ..kube.validation import is_qualified_name, is_valid_label_value

INVALID = "DRA214"
TOO_MANY = "DRA215"

RULES = ("DRA214", "DRA215")

OPERATORS = ("Equal", "Exists")
# The release each taint effect first appears in (device taints arrived in 1.33; None in 1.35).
_EFFECT_SINCE: dict[str, int] = {"NoSchedule": 33, "NoExecute": 33, "None": 35}


def taint_effects(release: Release) -> tuple[str, ...]:
    """The device taint effects the API server of ``release`` accepts, sorted as it lists them."""
    return tuple(sorted(e for e, since in _EFFECT_SINCE.items() if release.at_least(since)))


def check_tolerations(tolerations: Any, path: FieldPath, release: Release, limits: Limits) -> Iterator[Problem]:
    """Problems of a ``tolerations`` list at canonical ``path`` (non-lists are left to the schema stage)."""
    if not isinstance(tolerations, list):
        return
    if len(tolerations) > limits.tolerations_documented:
        yield Problem(TOO_MANY, path,
                      f"{len(tolerations)} tolerations; the API documents at most {limits.tolerations_documented}. "
                      "The API server does not enforce it today, but a later release may; merge tolerations "
                      "(an empty key with `operator: Exists` tolerates every taint)",
                      details={"count": len(tolerations), "limit": limits.tolerations_documented})
    for k, toleration in enumerate(tolerations):
        if isinstance(toleration, dict):
            yield from check_toleration(toleration, path.child(k), release)


def check_toleration(toleration: dict, path: FieldPath, release: Release) -> Iterator[Problem]:
    """Problems of one device toleration at canonical ``path``."""
    key = toleration.get("key")
    if isinstance(key, str) and key:
        for msg in is_qualified_name(key):
            yield Problem(INVALID, path.child("key"),
                          f"toleration key {key!r} is not a valid label key: {msg} (API server: Invalid value)")
    operator = toleration.get("operator") or "Equal"  # the OpenAPI default fills in an empty operator
    value = toleration.get("value", "")
    value = value if isinstance(value, str) else ""
    if operator == "Exists":
        if value:
            yield Problem(INVALID, path.child("value"),
                          f"value {value!r} must be empty for operator `Exists` (it matches any value); remove "
                          "`value`, or use `operator: Equal` (API server: Invalid value)")
    elif operator == "Equal":
        for msg in is_valid_label_value(value):
            yield Problem(INVALID, path.child("value"),
                          f"toleration value {value!r} is not a valid label value: {msg} (API server: Invalid value)")
    elif isinstance(operator, str):
        yield Problem(INVALID, path.child("operator"),
                      f"operator {operator!r} is not supported; use one of {', '.join(OPERATORS)} "
                      "(API server: Unsupported value)")
    effect = toleration.get("effect")
    effects = taint_effects(release)
    if isinstance(effect, str) and effect and effect not in effects:
        hint = (f" (`{effect}` exists from a later Kubernetes release than {release.version})"
                if effect in _EFFECT_SINCE else "")
        yield Problem(INVALID, path.child("effect"),
                      f"effect {effect!r} is not supported{hint}; use one of {', '.join(effects)}, or leave it empty "
                      "to tolerate every effect (API server: Unsupported value)")
