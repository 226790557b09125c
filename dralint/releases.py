"""Kubernetes releases dralint targets and the DRA feature gates each one knows.

Gate stages per release come from the versioned feature specs of kubernetes/kubernetes
(``pkg/features/kube_features.go``) and the feature-gate pages of kubernetes/website
(``content/en/docs/reference/command-line-tools-reference/feature-gates/<Gate>.md``: stages with
fromVersion/toVersion). Everything here is data; the checks ask ``Release.gate(name)`` and never
compare version numbers themselves.

1.38 is known as the release under way (code freeze 2026-11-19, due 2026-12-16): it can be
targeted with --kube-version 1.38, but the default stays the newest released one. Its gate
stages are those of 1.37 unless a change is listed: no graduation of a DRA gate to 1.38 could be
read from the sources available to us (see docs/schemas.md, "1.38").
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Mapping

OLDEST_MINOR = 26
NEWEST_MINOR = 38
# The newest released minor: what --kube-version defaults to.
DEFAULT_MINOR = 37

# Stage codes: A alpha (off), B- beta off by default, B+ beta on, GA on, L GA locked on.
# A gate is listed from the first release that has it; a gate removed later ends with None.
_STAGES: dict[str, dict[int, str | None]] = {
    "DynamicResourceAllocation": {26: "A", 32: "B-", 34: "GA", 35: "L"},
    "DRAControlPlaneController": {31: "A", 32: None},
    "DRAAdminAccess": {32: "A", 34: "B+", 36: "L"},
    "DRAResourceClaimDeviceStatus": {32: "A", 33: "B+", 37: "L"},
    "DRAPrioritizedList": {33: "A", 34: "B+", 36: "GA", 37: "L"},
    "DRADeviceTaints": {33: "A", 36: "B+", 37: "GA"},
    "DRAPartitionableDevices": {33: "A", 36: "B+"},
    "DRAConsumableCapacity": {34: "A", 36: "B+"},
    "DRADeviceBindingConditions": {34: "A", 36: "B+"},
    "DRAExtendedResource": {34: "A", 36: "B+", 37: "L"},
    "DRASchedulerFilterTimeout": {34: "B+"},
    "DRADeviceTaintRules": {35: "A", 36: "B-", 37: "GA"},
    "DRAListTypeAttributes": {36: "A"},
    "DRANodeAllocatableResources": {36: "A"},
    "DRAWorkloadResourceClaims": {36: "A", 37: "B-"},
    "DRAOptionalNodeOperations": {37: "A"},
    "DRADerivedAttributes": {37: "A"},
    "DRADeviceCompatibilityGroups": {37: "A"},
    "DRAFractionalCapacityRange": {37: "A"},
    # website feature-gates/DRAResourcePoolStatus.md: alpha from 1.36 (the ResourcePoolStatusRequest API).
    "DRAResourcePoolStatus": {36: "A"},
    # website feature-gates/DRAResourceClaimGranularStatusAuthorization.md: beta, on, from 1.36.
    "DRAResourceClaimGranularStatusAuthorization": {36: "B+"},
    # website feature-gates/DRAPartitionableDevicesType.md: alpha from 1.37 (partitionTypeAttribute).
    "DRAPartitionableDevicesType": {37: "A"},
    "KubeletPodResourcesDynamicResources": {27: "A", 34: "B+"},
}
_ON = {"B+", "GA", "L"}
# Kinds whose REST storage the API server only installs while a gate is on (the registry's
# storage_resource.go: "<gvr> is disabled because the <gate> feature is disabled"): a 404 otherwise.
API_GATES: dict[str, str] = {"ResourcePoolStatusRequest": "DRAResourcePoolStatus"}
# Every check asks for gates, often per device: the stage of each gate in each release, worked out
# once from _STAGES.
_STAGE_AT: dict[int, dict[str, str | None]] = {
    minor: {gate: next((stages[m] for m in sorted(stages, reverse=True) if m <= minor), None)
            for gate, stages in _STAGES.items()}
    for minor in range(OLDEST_MINOR, NEWEST_MINOR + 1)
}


class GateError(ValueError):
    """A --feature-gates value that the target release cannot take."""


@dataclass(frozen=True)
class Release:
    """A Kubernetes minor release plus the feature-gate settings dralint judges with."""

    minor: int
    overrides: Mapping[str, bool] = field(default_factory=dict)

    def __hash__(self) -> int:
        # Per-release tables (gating, limits) are cached by release; the overrides are a plain dict.
        return hash((self.minor, tuple(sorted(self.overrides.items()))))

    @property
    def version(self) -> str:
        return f"1.{self.minor}"

    def stage(self, gate: str) -> str | None:
        """The gate's stage code in this release, or None when the release does not have it."""
        return _STAGE_AT[self.minor].get(gate)

    def gate(self, name: str) -> bool:
        """Whether gate ``name`` is on: the user's override, else the release default."""
        if name in self.overrides:
            return self.overrides[name]
        return self.stage(name) in _ON

    def known_gates(self) -> list[str]:
        return sorted(g for g in _STAGES if self.stage(g) is not None)

    def at_least(self, minor: int) -> bool:
        return self.minor >= minor


def supported_versions() -> list[str]:
    return [f"1.{m}" for m in range(OLDEST_MINOR, NEWEST_MINOR + 1)]


def parse_version(text: str) -> int:
    """``"1.35"``, ``"v1.35.2"`` or ``"1.35.0-rc.1"`` → 35; raises ValueError with a usable message."""
    cleaned = text.strip().lstrip("vV")
    parts = cleaned.split(".")
    if len(parts) < 2 or parts[0] != "1" or not parts[1].isdigit():
        raise ValueError(f"--kube-version {text!r}: expected a Kubernetes version like 1.35")
    minor = int(parts[1])
    if not OLDEST_MINOR <= minor <= NEWEST_MINOR:
        raise ValueError(f"--kube-version {text!r}: dralint knows Kubernetes 1.{OLDEST_MINOR} to 1.{NEWEST_MINOR}")
    return minor


def parse_gates(text: str, minor: int) -> tuple[dict[str, bool], list[str]]:
    """Parse ``Name=true,Other=false`` for release ``1.<minor>``.

    Returns the overrides and notes (gates that are not DRA gates are ignored; turning off a gate the
    release does not have yet changes nothing and gets a note). Turning on a DRA gate the release
    does not have, turning off a gate the release has locked on (the API server refuses to start:
    "cannot set feature gate ... to false, feature is locked to true"), a typo of one, or a bad value
    raises GateError.
    """
    overrides: dict[str, bool] = {}
    notes: list[str] = []
    release = Release(minor)
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or value.strip().lower() not in ("true", "false"):
            raise GateError(f"--feature-gates: {item!r} is not Name=true or Name=false")
        on = value.strip().lower() == "true"
        stage = release.stage(name)
        if stage is None:
            if name in _STAGES and not on:
                # Off is what a release without the gate does anyway; only enabling it is impossible.
                notes.append(f"feature gate {name} does not exist in Kubernetes {release.version}; "
                             f"{name}=false changes nothing")
                continue
            if name in _STAGES:
                raise GateError(f"--feature-gates: {name} does not exist in Kubernetes {release.version}; "
                                f"it cannot be turned on there")
            close = difflib.get_close_matches(name, list(_STAGES), n=1, cutoff=0.8)
            if close or name.startswith(("DRA", "DynamicResource")):
                hint = f"; did you mean {close[0]}?" if close else ""
                raise GateError(f"--feature-gates: unknown DRA feature gate {name}{hint}")
            notes.append(f"feature gate {name} does not concern DRA; ignored")
            continue
        if stage == "L" and not on:
            raise GateError(f"--feature-gates: {name} is locked on in Kubernetes {release.version}: it cannot be set "
                            "to false there (the API server refuses to start with it)")
        overrides[name] = on
    return overrides, notes
