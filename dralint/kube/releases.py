"""Kubernetes releases dralint targets and the DRA feature gates each one knows.

Gate stages per release come from the versioned feature specs of kubernetes/kubernetes
(``pkg/features/kube_features.go``) and the feature-gate pages of kubernetes/website
(``content/en/docs/reference/command-line-tools-reference/feature-gates/<Gate>.md``: stages with
fromVersion/toVersion). Everything here is data; the checks ask ``Release.gate(name)`` and never
compare version numbers themselves.

1.38 is known as the release under way (code freeze 2026-11-19, due 2026-12-16): it can be
targeted with ``kube-version: "1.38"``, but the default stays the newest released one. Its gate
stages are those of 1.37 plus the changes the 1.38 sources show (docs/schemas.md, "1.38"):
DynamicResourceAllocation removed (kubernetes/kubernetes#141946), DRADeviceTaints and
DRADeviceTaintRules locked on (#140256, both in CHANGELOG-1.38 v1.38.0-alpha.1), and
DRAFractionalCapacityRange on by default (its 1.37 entry with MinCompatibilityVersion 1.37 in
staging/src/k8s.io/kube-scheduler/pkg/features/kube_features.go at
ead35706ec68f83822a56d53b1577fa8a185ca14: a 1.37 server has minimum compatibility 1.36 and keeps it
off, a 1.38 server turns it on).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Iterator, Mapping

# The settings a release is built from, spelled as the configuration file spells them (dralint.config);
# each face may call them as its users write them (a flag, a policy key) through ReleaseError.named.
KUBE_VERSION = "kube-version"
FEATURE_GATES = "feature-gates"

OLDEST_MINOR = 26
NEWEST_MINOR = 38
# The newest released minor: what the kube-version setting defaults to.
DEFAULT_MINOR = 37

# Stage codes: A alpha (off), B- beta off by default, B+ beta on, GA on, L GA locked on.
# A gate is listed from the first release that has it; a gate removed later ends with None (its
# feature then stays as it last was: on for a gate removed after GA, off for a withdrawn alpha).
_STAGES: dict[str, dict[int, str | None]] = {
    "DynamicResourceAllocation": {26: "A", 32: "B-", 34: "GA", 35: "L", 38: None},
    "DRAControlPlaneController": {31: "A", 32: None},
    "DRAAdminAccess": {32: "A", 34: "B+", 36: "L"},
    "DRAResourceClaimDeviceStatus": {32: "A", 33: "B+", 37: "L"},
    "DRAPrioritizedList": {33: "A", 34: "B+", 36: "GA", 37: "L"},
    "DRADeviceTaints": {33: "A", 36: "B+", 37: "GA", 38: "L"},
    "DRAPartitionableDevices": {33: "A", 36: "B+"},
    "DRAConsumableCapacity": {34: "A", 36: "B+"},
    "DRADeviceBindingConditions": {34: "A", 36: "B+"},
    "DRAExtendedResource": {34: "A", 36: "B+", 37: "L"},
    "DRASchedulerFilterTimeout": {34: "B+"},
    "DRADeviceTaintRules": {35: "A", 36: "B-", 37: "GA", 38: "L"},
    "DRAListTypeAttributes": {36: "A"},
    "DRANodeAllocatableResources": {36: "A"},
    "DRAWorkloadResourceClaims": {36: "A", 37: "B-"},
    "DRAOptionalNodeOperations": {37: "A"},
    "DRADerivedAttributes": {37: "A"},
    "DRADeviceCompatibilityGroups": {37: "A"},
    "DRAFractionalCapacityRange": {37: "B-", 38: "B+"},
    # website feature-gates/DRAResourcePoolStatus.md: alpha from 1.36 (the ResourcePoolStatusRequest API).
    "DRAResourcePoolStatus": {36: "A"},
    # website feature-gates/DRAResourceClaimGranularStatusAuthorization.md: beta, on, from 1.36.
    "DRAResourceClaimGranularStatusAuthorization": {36: "B+"},
    # website feature-gates/DRAPartitionableDevicesType.md: alpha from 1.37 (partitionTypeAttribute).
    "DRAPartitionableDevicesType": {37: "A"},
    "KubeletPodResourcesDynamicResources": {27: "A", 34: "B+"},
}
_ON = {"B+", "GA", "L"}
# REST storage the API server only installs while a gate is on: (first minor, last minor, kind or
# None for every resource.k8s.io kind, gate); a 404 otherwise. pkg/registry/resource/rest/
# storage_resource.go serves every kind regardless of gates in 1.31 (commit 1b6390e5207c) and 1.34
# (its comment: "registers resource kinds also without the corresponding feature gate ... to allow
# cleaning them up"); 1.32 (04d0cfb13df7) installs v1alpha3 and v1beta1 only "if
# utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation)". No 1.33 copy could
# be read; 1.33 is taken to serve like 1.34. ResourcePoolStatusRequest: KEP-5677 ("DRAResourcePoolStatus
# gates the API type, its storage").
_SERVING_GATES: tuple[tuple[int, int, str | None, str], ...] = (
    (32, 32, None, "DynamicResourceAllocation"),
    (36, NEWEST_MINOR, "ResourcePoolStatusRequest", "DRAResourcePoolStatus"),
)


def _stage_at(stages: Mapping[int, str | None], minor: int) -> str | None:
    return next((stages[m] for m in sorted(stages, reverse=True) if m <= minor), None)


# Every check asks for gates, often per device: the stage of each gate in each release, worked out
# once from _STAGES; and, for a gate a release no longer has, whether its feature stayed on.
_STAGE_AT: dict[int, dict[str, str | None]] = {
    minor: {gate: _stage_at(stages, minor) for gate, stages in _STAGES.items()}
    for minor in range(OLDEST_MINOR, NEWEST_MINOR + 1)
}
_REMOVED_AT: dict[int, dict[str, tuple[int, bool]]] = {
    minor: {gate: (m, _stage_at(stages, m - 1) in _ON)
            for gate, stages in _STAGES.items()
            for m in [max((k for k, v in stages.items() if v is None and k <= minor), default=0)]
            if m and _STAGE_AT[minor][gate] is None}
    for minor in range(OLDEST_MINOR, NEWEST_MINOR + 1)
}


class ReleaseError(ValueError):
    """A kube-version or feature-gates setting the releases cannot take.

    The message names the setting; ``named`` gives it under another name, for a face whose users
    wrote it otherwise (``--feature-gates`` on the command line, ``featureGates`` in a policy).
    """

    def __init__(self, setting: str, reason: str, value: str | None = None) -> None:
        self.setting, self.reason, self.value = setting, reason, value
        super().__init__(self.named(setting))

    def named(self, name: str) -> str:
        """The message with the setting called ``name``."""
        return f"{name} {self.value!r}: {self.reason}" if self.value is not None else f"{name}: {self.reason}"


@dataclass(frozen=True)
class Release:
    """A Kubernetes minor release plus the feature-gate settings dralint judges with."""

    minor: int
    overrides: Mapping[str, bool] = field(default_factory=dict)

    def __hash__(self) -> int:
        # Per-release tables (gating, limits) are cached by release; the overrides are a plain dict.
        return hash((self.minor, tuple(sorted(self.overrides.items()))))

    @classmethod
    def parse(cls, version: str | None, gates: str | Mapping[str, bool] = "") -> tuple[Release, list[str]]:
        """The release ``version`` names (None: the default one) with the feature ``gates`` set, and
        notes on those gates (see :meth:`with_gates`); raises :class:`ReleaseError`."""
        return cls(DEFAULT_MINOR if version is None else parse_version(version)).with_gates(gates)

    @property
    def version(self) -> str:
        """The release as its users write it: ``1.35``."""
        return f"1.{self.minor}"

    def __str__(self) -> str:
        return self.version

    def with_gates(self, gates: str | Mapping[str, bool]) -> tuple[Release, list[str]]:
        """This release with ``gates`` set over its own settings, and notes on them.

        ``gates`` is ``Name=true,Other=false`` (the command line's spelling) or a mapping (the
        configuration's). Gates that are not DRA gates are ignored; turning off a gate the release
        does not have yet changes nothing and gets a note. A gate the release has locked on and
        turned off is honoured, for what-if runs and for judging as code built with it off would,
        with a note that a real API server refuses to start so ("cannot set feature gate ... to false,
        feature is locked to true"). Turning on a DRA gate the release does not have, a typo of one,
        or a bad value raises :class:`ReleaseError`.
        """
        overrides, notes = _parse_gates(gates, self.minor)
        return Release(self.minor, {**self.overrides, **overrides}), notes

    def stage(self, gate: str) -> str | None:
        """The gate's stage code in this release, or None when the release does not have it."""
        return _STAGE_AT[self.minor].get(gate)

    def gate(self, name: str) -> bool:
        """Whether gate ``name`` is on: the user's override, else the release default (for a gate the
        release removed, whether its feature stayed on)."""
        if name in self.overrides:
            return self.overrides[name]
        removed = _REMOVED_AT[self.minor].get(name)
        if removed is not None:
            return removed[1]
        return self.stage(name) in _ON

    def removed_in(self, name: str) -> int | None:
        """The minor that removed gate ``name``, when this release no longer has it."""
        removed = _REMOVED_AT[self.minor].get(name)
        return removed[0] if removed is not None else None

    def serving_gate(self, kind: str) -> str | None:
        """The gate without which this release's API server does not serve resource.k8s.io ``kind``."""
        return next((gate for first, last, only, gate in _SERVING_GATES
                     if first <= self.minor <= last and only in (None, kind)), None)

    def known_gates(self) -> list[str]:
        return sorted(g for g in _STAGES if self.stage(g) is not None)

    def at_least(self, minor: int) -> bool:
        return self.minor >= minor


def supported_versions() -> list[str]:
    return [f"1.{m}" for m in range(OLDEST_MINOR, NEWEST_MINOR + 1)]


def parse_version(text: str) -> int:
    """``"1.35"``, ``"v1.35.2"`` or ``"1.35.0-rc.1"`` → 35; raises :class:`ReleaseError`."""
    cleaned = text.strip().lstrip("vV")
    parts = cleaned.split(".")
    if len(parts) < 2 or parts[0] != "1" or not parts[1].isdigit():
        raise ReleaseError(KUBE_VERSION, "expected a Kubernetes version like 1.35", text)
    minor = int(parts[1])
    if not OLDEST_MINOR <= minor <= NEWEST_MINOR:
        raise ReleaseError(KUBE_VERSION, f"dralint knows Kubernetes 1.{OLDEST_MINOR} to 1.{NEWEST_MINOR}", text)
    return minor


def _gate_items(gates: str | Mapping[str, bool]) -> Iterator[tuple[str, bool]]:
    """Each gate setting in order; the text form is checked item by item, as it is read."""
    if not isinstance(gates, str):
        yield from ((name.strip(), on) for name, on in gates.items())
        return
    for item in filter(None, (p.strip() for p in gates.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.strip().lower() not in ("true", "false"):
            raise ReleaseError(FEATURE_GATES, f"{item!r} is not Name=true or Name=false")
        yield name.strip(), value.strip().lower() == "true"


def _parse_gates(gates: str | Mapping[str, bool], minor: int) -> tuple[dict[str, bool], list[str]]:
    """The overrides and notes of ``gates`` for release ``1.<minor>`` (Release.with_gates says which)."""
    overrides: dict[str, bool] = {}
    notes: list[str] = []
    release = Release(minor)
    for name, on in _gate_items(gates):
        stage = release.stage(name)
        removed = release.removed_in(name)
        if removed is not None:
            fixed = release.gate(name)
            state = "on" if fixed else "off"
            if on != fixed:
                turned = "on" if on else "off"
                raise ReleaseError(FEATURE_GATES, f"{name} was removed in Kubernetes 1.{removed}; its feature is "
                                                  f"always {state} in {release.version} and cannot be turned {turned}")
            notes.append(f"feature gate {name} was removed in Kubernetes 1.{removed} (its feature is always {state}); "
                         f"the API server of {release.version} refuses to start with it: drop it from the cluster's "
                         "--feature-gates")
            continue
        if stage is None:
            if name in _STAGES and not on:
                # Off is what a release without the gate does anyway; only enabling it is impossible.
                notes.append(f"feature gate {name} does not exist in Kubernetes {release.version}; "
                             f"{name}=false changes nothing")
                continue
            if name in _STAGES:
                raise ReleaseError(FEATURE_GATES, f"{name} does not exist in Kubernetes {release.version}; "
                                                  f"it cannot be turned on there")
            close = difflib.get_close_matches(name, list(_STAGES), n=1, cutoff=0.8)
            if close or name.startswith(("DRA", "DynamicResource")):
                hint = f"; did you mean {close[0]}?" if close else ""
                raise ReleaseError(FEATURE_GATES, f"unknown DRA feature gate {name}{hint}")
            notes.append(f"feature gate {name} does not concern DRA; ignored")
            continue
        if stage == "L" and not on:
            notes.append(f"feature gate {name} is locked on in Kubernetes {release.version}: its API server refuses "
                         "to start with it off; judging as if it were off")
        overrides[name] = on
    return overrides, notes
