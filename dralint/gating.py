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
import functools
from dataclasses import dataclass, replace
from typing import Any, Sequence

from .problems import Problem
from .convert import Canonical
from .paths import FieldPath, Key, value_at
from .kube.releases import NEWEST_MINOR, OLDEST_MINOR, Release
from .kube.shapes import LEGACY_VERSIONS

RULE = "DRA802"

# A pattern is a path whose "*" segments stand for every list index or map key.
Pattern = tuple[str, ...]


@dataclass(frozen=True)
class _Trie:
    """Patterns compiled for walking objects: each shared prefix is visited once per object.

    ``leaves`` are the names below this node that end a pattern and go no further, the common
    tail (``attributes.*.bools``): they are looked up without building a path, which matters on
    a slice with hundreds of attributes.
    """

    end: bool
    named: tuple[tuple[str, "_Trie"], ...]
    star: "_Trie | None"
    leaves: tuple[str, ...]
    leaf_set: frozenset[str]

    @property
    def only_leaves(self) -> bool:
        return not self.end and not self.named and self.star is None


def _compile(patterns: Sequence[Pattern]) -> _Trie:
    heads: dict[str, list[Pattern]] = {}
    for pattern in patterns:
        if pattern:
            heads.setdefault(pattern[0], []).append(pattern[1:])
    leaves = tuple(h for h, tails in heads.items() if h != "*" and tails == [()])
    named = tuple((h, _compile(tails)) for h, tails in heads.items() if h != "*" and h not in leaves)
    return _Trie(end=any(not p for p in patterns), named=named,
                 star=_compile(heads["*"]) if "*" in heads else None, leaves=leaves,
                 leaf_set=frozenset(leaves))


@dataclass(frozen=True)
class Feature:
    """Gated fields of one kind that are dropped together; all ``gates`` must be on to keep them."""

    gates: tuple[str, ...]
    kinds: frozenset[str]
    fields: tuple[Pattern, ...]
    status: bool = False  # status fields: only written through /status, never judged on create
    since: int = 0        # the first minor whose server really drops them (see distinctAttribute)

    @property
    def trie(self) -> _Trie:
        return _compiled(self.fields)


_CLAIM = ("spec", "devices")
_TEMPLATE = ("spec", "spec", "devices")


def _claim_spec(gate: str, *fields: Pattern, since: int = 0) -> list[Feature]:
    """The same spec fields of claims (``spec``) and templates (``spec.spec``)."""
    return [Feature((gate,), frozenset({"ResourceClaim"}), tuple(_CLAIM + f for f in fields), since=since),
            Feature((gate,), frozenset({"ResourceClaimTemplate"}), tuple(_TEMPLATE + f for f in fields), since=since)]


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
    *_claim_spec("DRAConsumableCapacity", ("requests", "*", "exactly", "capacity"),
                 ("requests", "*", "firstAvailable", "*", "capacity")),
    # 1.34's dropDisabledDRAConsumableCapacityFields clears distinctAttribute on a copy of each
    # constraint, so the server stores it; 1.35 fixed that.
    *_claim_spec("DRAConsumableCapacity", ("constraints", "*", "distinctAttribute"), since=35),
    *_claim_spec("DRADerivedAttributes", ("requests", "*", "exactly", "derivedAttributes"),
                 ("requests", "*", "firstAvailable", "*", "derivedAttributes")),
    Feature(("DRAAdminAccess",), _CLAIM_KIND, (_RESULTS + ("adminAccess",),), status=True),
    Feature(("DRAResourceClaimDeviceStatus",), _CLAIM_KIND, (("status", "devices"),), status=True),
    Feature(("DRAConsumableCapacity",), _CLAIM_KIND,
            (_RESULTS + ("shareID",), _RESULTS + ("consumedCapacity",), ("status", "devices", "*", "shareID")),
            status=True),
    # The claim status strategy clears the binding conditions of allocation results like the slice
    # strategy clears the devices' (resourceclaim/strategy.go, dropDisabledDRADeviceBindingConditionsFields).
    Feature(("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"), _CLAIM_KIND,
            (_RESULTS + ("bindingConditions",), _RESULTS + ("bindingFailureConditions",)), status=True),
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
    Feature(("DRADeviceCompatibilityGroups",), _SLICE, (_DEVICE + ("consumesCounters", "*", "compatibilityGroups"),)),
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


def apply_gates(obj: Canonical, old: Canonical | None, release: Release) -> tuple[Canonical, list[Problem]]:
    """The object as the server would validate it, and a warning per dropped field."""
    if obj.manifest.is_dra and obj.version in LEGACY_VERSIONS:  # a JobSet's v1alpha2 is no DRA version
        return obj, []
    if obj.manifest.pod_spec_paths:
        pod_fields = tuple(tuple(base) + f for base in obj.manifest.pod_spec_paths for f in _POD_FIELDS)
        droppers = _droppers(((_POD_FEATURE_GATE,), _compiled(pod_fields)), release=release)
    else:
        droppers = _kind_droppers(obj.kind, old is not None, release)
    value: dict = obj.value
    problems: list[Problem] = []
    copied = False
    for off, trie in droppers:
        if old is not None and _in_use(old.value, trie):
            continue
        found = [path for path in _matches(value, trie) if _is_set(value_at(value, path))]
        if not found:
            continue
        if not copied:
            value, copied = copy.deepcopy(value), True
        for path in found:
            _delete(value, path)
            problems.append(Problem(RULE, path, _message(path, list(off), release, old is not None),
                                    details={"gates": list(off)}))
    return (replace(obj, value=value) if copied else obj), problems


@functools.lru_cache(maxsize=64)  # kinds × create/update × the run's release (the webhook's too)
def _kind_droppers(kind: str, update: bool, release: Release) -> tuple[tuple[tuple[str, ...], _Trie], ...]:
    """What an object of ``kind`` loses in ``release``: (the gates that are off, the fields) in order."""
    return _droppers(*((f.gates, f.trie) for f in FEATURES
                       if kind in f.kinds and (update or not f.status) and release.minor >= f.since), release=release)


def _droppers(*features: tuple[tuple[str, ...], _Trie],
              release: Release) -> tuple[tuple[tuple[str, ...], _Trie], ...]:
    kept = []
    for gates, trie in features:
        # A gate the release does not have yet guards nothing there: its fields are either unknown to
        # that release's schema, or (adminAccess in 1.31) older than the gate and always kept.
        if any(release.stage(g) is None for g in gates):
            continue
        off = tuple(g for g in gates if not release.gate(g))
        if off:
            kept.append((off, trie))
    return tuple(kept)


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


def _in_use(value: Any, trie: _Trie) -> bool:
    return any(_is_set(value_at(value, path)) for path in _matches(value, trie))


def _is_set(value: Any) -> bool:
    return value is not None and value != [] and value != {}


@functools.lru_cache(maxsize=64)
def _compiled(patterns: tuple[Pattern, ...]) -> _Trie:
    """The trie of ``patterns``; bounded, since pod patterns depend on where a kind keeps its pod spec."""
    return _compile(patterns)


def _matches(value: Any, trie: _Trie) -> list[FieldPath]:
    """Concrete paths in ``value`` that match the trie's patterns and exist."""
    found: list[FieldPath] = []
    _walk(value, trie, (), found)
    return found


def _walk(value: Any, trie: _Trie, prefix: tuple, found: list[FieldPath]) -> None:
    if trie.end:
        found.append(FieldPath(prefix))
    star = trie.star
    if isinstance(value, dict):
        for name in trie.leaves:
            if name in value:
                found.append(FieldPath(prefix + (name,)))
        for name, below in trie.named:
            if name in value:
                _walk(value[name], below, prefix + (name,), found)
        if star is None:
            return
        # Map keys become path segments only where something matched: most never do.
        entries: Any = value.items()
        segment_of: Any = _map_segment
    elif isinstance(value, list) and star is not None:
        entries, segment_of = enumerate(value), _list_segment
    else:
        return
    if star.only_leaves:
        names, name_set = star.leaves, star.leaf_set
        for raw, item in entries:
            if isinstance(item, dict) and not name_set.isdisjoint(item):
                segment = segment_of(raw)
                found.extend(FieldPath(prefix + (segment, n)) for n in names if n in item)
        return
    for raw, item in entries:
        _walk(item, star, prefix + (segment_of(raw),), found)


def _map_segment(key: Any) -> Key:
    return Key(str(key))


def _list_segment(index: int) -> int:
    return index


def _delete(value: Any, path: FieldPath) -> None:
    parent = value_at(value, FieldPath(path[:-1]))
    if isinstance(parent, dict):
        parent.pop(str(path[-1]), None)
