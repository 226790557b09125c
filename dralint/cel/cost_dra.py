"""The DRA selector environment's cost estimate, as ``k8s.io/dynamic-resource-allocation/cel``
computes ``CompilationResult.MaxCost``: cel-go's coster with Kubernetes' library estimator, the
ext libraries' estimators, presence tests free (``PresenceTestHasCost(false)``), a size
estimator over the declared ``device`` type and a fixed bound for ``includes``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from . import ast as A
from .checker import CheckResult
from .cost import ONE, ZERO, AstNode, CallEstimate, FunctionEstimator, Range, estimate_cost, mul
from .cost_libs import KubernetesEstimator, overload_estimators
from .env import EnvModel

MAX_DOMAIN = 63             # DeviceMaxDomainLength
MAX_ID = 32                 # DeviceMaxIDLength
MAX_DRIVER = 63             # DriverNameMaxLength
MAX_ENTRIES = 32            # ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_ATTRIBUTE_VALUE = 64    # max(DeviceAttributeMaxValueLength 64, ResourceSliceMaxAttributeValuesPerDevice 48)
INCLUDES_BOUND = 48         # ResourceSliceMaxAttributeValuesPerDevice: includes() looks at no more


@dataclass(frozen=True, eq=False)
class _Decl:
    """A declared type with its maximum size (``DeclType.MaxElements``)."""

    max: int
    fields: dict[str, "_Decl"] = field(default_factory=dict)
    key: "_Decl | None" = None
    elem: "_Decl | None" = None


# Kubernetes sizes against the newest device type whatever the environment (compile.go: deviceType).
_ATTRIBUTE = _Decl(MAX_ATTRIBUTE_VALUE)
_DOMAIN, _ID = _Decl(MAX_DOMAIN), _Decl(MAX_ID)
_DEVICE = _Decl(0, fields={
    "driver": _Decl(MAX_DRIVER),
    "attributes": _Decl(MAX_ENTRIES, key=_DOMAIN, elem=_Decl(MAX_ENTRIES, key=_ID, elem=_ATTRIBUTE)),
    "capacity": _Decl(MAX_ENTRIES, key=_DOMAIN, elem=_Decl(MAX_ENTRIES, key=_ID, elem=_Decl(0))),
    "allowMultipleAllocations": _Decl(1),
})


class DeviceSizes:
    """DRA's ``sizeEstimator``: the maximum size of what a path below ``device`` reaches."""

    def estimate_size(self, node: AstNode) -> Range | None:
        path = node.path
        if not path or path[0] != "device":
            return None
        decl = _DEVICE
        for name in path[1:]:
            if name in ("@items", "@values"):
                if decl.elem is None:
                    return None
                decl = decl.elem
            elif name == "@keys":
                if decl.key is None:
                    return None
                decl = decl.key
            elif name in decl.fields:
                decl = decl.fields[name]
            elif decl.elem is _ATTRIBUTE:
                decl = _ATTRIBUTE  # any name in an attribute map is an attribute
            else:
                return None
        return (0, decl.max)

    def estimate_call_cost(self, function: str, overload_id: str, target: AstNode | None,
                           args: list[AstNode]) -> CallEstimate | None:
        return None


@dataclass(frozen=True)
class DraEstimator:
    """``draCostEstimator``: ``includes`` is linear in at most 48 values; the rest is Kubernetes'."""

    base: KubernetesEstimator

    def estimate_size(self, node: AstNode) -> Range | None:
        return self.base.estimate_size(node)

    def estimate_call_cost(self, function: str, overload_id: str, target: AstNode | None,
                           args: list[AstNode]) -> CallEstimate | None:
        # list_includes (the 1.37 lists library) is costed like DRA's own: not verified against Go.
        if function == "includes" and overload_id in ("dra_includes_dyn_dyn", "list_includes") and target is not None:
            return CallEstimate(mul((0, INCLUDES_BOUND), ONE))
        return self.base.estimate_call_cost(function, overload_id, target, args)


_ESTIMATOR = DraEstimator(KubernetesEstimator(DeviceSizes()))


def estimate(root: A.Expr, checked: CheckResult, model: EnvModel) -> Range:
    """The ``(min, max)`` cost estimate of a checked selector (``MaxCost`` is the max)."""
    return estimate_cost(root, checked, _ESTIMATOR, _overloads(model.libraries), presence_test_cost=ZERO)


@lru_cache(maxsize=64)
def _overloads(libraries: frozenset[str]) -> dict[str, FunctionEstimator]:
    return overload_estimators(libraries)
