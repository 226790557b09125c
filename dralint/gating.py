"""Fields the API server silently drops when their feature gate is off.

Before validating, the server's REST strategies remove gated fields (``dropDisabledFields``): on
create always, on update unless the stored object already used the feature ("in use" keeps them,
so turning a gate off never breaks stored objects). Dropping is not an error, but what remains may
be invalid (a request that only had ``firstAvailable`` has neither ``exactly`` nor
``firstAvailable`` any more), and that is what the user then sees. So this stage reports every
dropped field as a warning (DRA802 field-dropped-gate-off) and hands the checks the object as the
server would validate it.

The drop lists follow the strategies of kubernetes/kubernetes (``pkg/api/resourceclaimspec``, the
resourceclaim, resourceslice, deviceclass and pod strategies); see docs/dra-api.md §7.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any, Iterator, Sequence

from .checks.base import Problem
from .convert import Canonical
from .paths import FieldPath, Key
from .releases import NEWEST_MINOR, OLDEST_MINOR, Release

RULE = "DRA802"

# A pattern is a path whose "*" segments stand for every list index or map key.
Pattern = tuple[str, ...]


@dataclass(frozen=True)
class Feature:
    """Gated fields of one kind that are dropped together; all ``gates`` must be on to keep them."""

    gates: tuple[str, ...]
    kinds: frozenset[str]
    fields: tuple[Pattern, ...]
    status: bool = False  # status fields: only written through /status, never judged on create


_CLAIM = ("spec", "devices")
_TEMPLATE = ("spec", "spec", "devices")


def _claim_spec(gate: str, *fields: Pattern) -> list[Feature]:
    """The same spec fields of claims (``spec``) and templates (``spec.spec``)."""
    return [Feature((gate,), frozenset({"ResourceClaim"}), tuple(_CLAIM + f for f in fields)),
            Feature((gate,), frozenset({"ResourceClaimTemplate"}), tuple(_TEMPLATE + f for f in fields))]


_SLICE = frozenset({"ResourceSlice"})
_DEVICE = ("spec", "devices", "*")
_RESULTS = ("status", "allocation", "devices", "results", "*")
_CLAIM_KIND = frozenset({"ResourceClaim"})

# In dropping order: prioritized lists go first, so the tolerations of dropped subrequests are not
# reported twice (the servers' order too).
FEATURES: tuple[Feature, ...] = (
    *_claim_spec("DRAPrioritizedList", ("requests", "*", "firstAvailable")),
    *_claim_spec("DRADeviceTaints", ("requests", "*", "exactly", "tolerations"),
                 ("requests", "*", "firstAvailable", "*", "tolerations")),
    *_claim_spec("DRAAdminAccess", ("requests", "*", "exactly", "adminAccess")),
    *_claim_spec("DRAConsumableCapacity", ("constraints", "*", "distinctAttribute"),
                 ("requests", "*", "exactly", "capacity"), ("requests", "*", "firstAvailable", "*", "capacity")),
    *_claim_spec("DRADerivedAttributes", ("requests", "*", "exactly", "derivedAttributes"),
                 ("requests", "*", "firstAvailable", "*", "derivedAttributes")),
    Feature(("DRAAdminAccess",), _CLAIM_KIND, (_RESULTS + ("adminAccess",),), status=True),
    Feature(("DRAResourceClaimDeviceStatus",), _CLAIM_KIND, (("status", "devices"),), status=True),
    Feature(("DRAConsumableCapacity",), _CLAIM_KIND,
            (_RESULTS + ("shareID",), _RESULTS + ("consumedCapacity",), ("status", "devices", "*", "shareID")),
            status=True),
    Feature(("DRADeviceTaints",), _SLICE, (_DEVICE + ("taints",),)),
    Feature(("DRAPartitionableDevices",), _SLICE,
            (("spec", "sharedCounters"), ("spec", "perDeviceNodeSelection"), _DEVICE + ("consumesCounters",),
             _DEVICE + ("nodeName",), _DEVICE + ("nodeSelector",), _DEVICE + ("allNodes",))),
    Feature(("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"), _SLICE,
            (_DEVICE + ("bindingConditions",), _DEVICE + ("bindingFailureConditions",), _DEVICE + ("bindsToNode",))),
    Feature(("DRAConsumableCapacity",), _SLICE,
            (_DEVICE + ("allowMultipleAllocations",), _DEVICE + ("capacity", "*", "requestPolicy"))),
    Feature(("DRANodeAllocatableResources",), _SLICE,
            (_DEVICE + ("nodeAllocatableResourceMappings",), _DEVICE + ("nodeAllocatableResources",))),
    Feature(("DRAListTypeAttributes",), _SLICE,
            tuple(_DEVICE + ("attributes", "*", t) for t in ("bools", "ints", "strings", "versions"))),
    Feature(("DRAOptionalNodeOperations",), _SLICE, (("spec", "skipNodeOperations"),)),
    Feature(("DRAExtendedResource",), frozenset({"DeviceClass"}), (("spec", "extendedResourceName"),)),
)

# Pod specs lose their claim fields while DynamicResourceAllocation is off (1.26-1.33 by default).
_POD_FEATURE_GATE = "DynamicResourceAllocation"
_POD_FIELDS: tuple[Pattern, ...] = (
    ("resourceClaims",),
    ("containers", "*", "resources", "claims"),
    ("initContainers", "*", "resources", "claims"),
    ("ephemeralContainers", "*", "resources", "claims"),
)
# v1alpha1/v1alpha2 objects predate these gates; the legacy checks judge them as they are.
_LEGACY_VERSIONS = frozenset({"v1alpha1", "v1alpha2"})


def apply_gates(obj: Canonical, old: Canonical | None, release: Release) -> tuple[Canonical, list[Problem]]:
    """The object as the server would validate it, and a warning per dropped field."""
    if obj.version in _LEGACY_VERSIONS:
        return obj, []
    features = [(f.gates, f.fields) for f in FEATURES
                if obj.kind in f.kinds and not (f.status and old is None)]
    if obj.manifest.pod_spec_paths:
        features = [((_POD_FEATURE_GATE,), tuple(tuple(base) + f for base in obj.manifest.pod_spec_paths
                                                 for f in _POD_FIELDS))]
    value: dict = obj.value
    problems: list[Problem] = []
    copied = False
    for gates, fields in features:
        # A gate the release does not have yet guards nothing there: its fields are either unknown to
        # that release's schema, or (adminAccess in 1.31) older than the gate and always kept.
        if any(release.stage(g) is None for g in gates):
            continue
        off = [g for g in gates if not release.gate(g)]
        if not off or (old is not None and _in_use(old.value, fields)):
            continue
        found = [path for path in _matches(value, fields) if _is_set(_get(value, path))]
        if not found:
            continue
        if not copied:
            value, copied = copy.deepcopy(value), True
        for path in found:
            _delete(value, path)
            problems.append(Problem(RULE, path, _message(path, off, release, old is not None),
                                    details={"gates": off}))
    return (replace(obj, value=value) if copied else obj), problems


def _message(path: FieldPath, gates: list[str], release: Release, update: bool) -> str:
    tail = len(path)
    while tail > 0 and isinstance(path[tail - 1], str) and not isinstance(path[tail - 1], Key):
        tail -= 1
    field = FieldPath(path[tail:]).render() or path.render()
    names = " and ".join(gates)
    stages = "; ".join(_stage_text(g, release) for g in gates)
    when = "on update, because the stored object does not use it yet" if update else "when the object is created"
    return (f"`{field}` will be silently dropped by the API server of Kubernetes {release.version} {when}: "
            f"feature gate {names} is off ({stages}). Enable the gate on the cluster (and pass "
            f"--feature-gates {gates[0]}=true), or remove the field; the rest of the object is checked as the "
            "server will see it")


def _stage_text(gate: str, release: Release) -> str:
    names = {"A": "alpha", "B-": "beta, off by default", "B+": "beta", "GA": "GA", "L": "GA"}
    stage = release.stage(gate)
    now = f"{names.get(stage or '', 'unknown')} in {release.version}" if stage else f"not in {release.version}"
    on_from = next((m for m in range(OLDEST_MINOR, NEWEST_MINOR + 1) if Release(m).gate(gate)), None)
    if on_from is None:
        return f"{gate}: {now}, not on by default in any release dralint knows"
    if on_from <= release.minor:
        return f"{gate}: {now}, turned off by --feature-gates"
    return f"{gate}: {now}, on by default from 1.{on_from}"


def _in_use(value: Any, fields: tuple[Pattern, ...]) -> bool:
    return any(_is_set(_get(value, path)) for path in _matches(value, fields))


def _is_set(value: Any) -> bool:
    return value is not None and value != [] and value != {}


def _matches(value: Any, patterns: Sequence[Pattern], prefix: tuple = ()) -> Iterator[FieldPath]:
    """Concrete paths in ``value`` that match any of ``patterns`` and exist.

    The patterns are walked together, as a trie: a feature's fields share long prefixes
    (``spec.devices.*.attributes.*``), and a slice has hundreds of attributes.
    """
    heads: dict[str, list[Pattern]] = {}
    for pattern in patterns:
        if not pattern:
            yield FieldPath(prefix)
        else:
            heads.setdefault(pattern[0], []).append(pattern[1:])
    for head, tails in heads.items():
        if head == "*":
            if isinstance(value, list):
                for i, item in enumerate(value):
                    yield from _matches(item, tails, prefix + (i,))
            elif isinstance(value, dict):
                for key, item in value.items():
                    yield from _matches(item, tails, prefix + (Key(str(key)),))
        elif isinstance(value, dict) and head in value:
            yield from _matches(value[head], tails, prefix + (head,))


def _get(value: Any, path: FieldPath) -> Any:
    for seg in path:
        if isinstance(value, list) and isinstance(seg, int):
            value = value[seg]
        elif isinstance(value, dict):
            value = value.get(str(seg))
        else:
            return None
    return value


def _delete(value: Any, path: FieldPath) -> None:
    parent = _get(value, FieldPath(path[:-1]))
    if isinstance(parent, dict):
        parent.pop(str(path[-1]), None)
