"""The explicit list of object checks. Each module has ``KINDS`` and ``check(ctx)``; see base.py."""
from __future__ import annotations

from . import (cel_selectors, claim_status, claims, classes, legacy, metadata, org, pods, pool_status,
               references, slices, taint_rules)
from .base import CheckContext, ObjectCheck

MODULES: tuple[ObjectCheck, ...] = (
    metadata,        # object metadata of every DRA kind: names, namespaces, labels, annotations
    claims,          # ResourceClaim / ResourceClaimTemplate spec
    claim_status,    # claim status, and the update rules of claims and templates
    org,             # claims and templates under the organisation's policy, when one is given (the webhook's)
    classes,         # DeviceClass
    slices,          # ResourceSlice
    taint_rules,     # DeviceTaintRule
    pool_status,     # ResourcePoolStatusRequest
    legacy,          # v1alpha1 / v1alpha2 kinds (1.26-1.30)
    cel_selectors,   # CEL: compile, type-check, cost, teaching warnings
    pods,            # pod specs of Pods and workloads: resourceClaims and containers' claims
    references,      # across objects: classes, claims, templates, drivers
    cel_selectors.HINTS,  # across objects: selectors against the names the accepted slices publish
)
cel_hints = cel_selectors.HINTS


def checks_for(kind: str) -> list[ObjectCheck]:
    """The modules that look at canonical kind ``kind``, in registry order."""
    return [m for m in MODULES if kind in m.KINDS]


__all__ = ["CheckContext", "MODULES", "checks_for"]
