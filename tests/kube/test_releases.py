"""Releases: feature gates by stage, version parsing, gate settings and their notes."""
from __future__ import annotations

import pytest

from dralint.kube.releases import Release, ReleaseError, parse_version


def test_release_gate_stages():
    assert not Release(33).gate("DRAPrioritizedList")
    assert Release(34).gate("DRAPrioritizedList")
    assert Release(36).gate("DRAConsumableCapacity") and not Release(35).gate("DRAConsumableCapacity")
    assert Release(35, {"DRAConsumableCapacity": True}).gate("DRAConsumableCapacity")
    assert Release(37).stage("DRAControlPlaneController") is None


def test_parse_version_and_gates():
    assert parse_version("v1.35.2") == 35
    with pytest.raises(ValueError):
        parse_version("1.20")
    gated, notes = Release(35).with_gates("DRAConsumableCapacity=true,PodLevelResources=true")
    assert gated.overrides == {"DRAConsumableCapacity": True} and "PodLevelResources" in notes[0]
    with pytest.raises(ReleaseError, match="did you mean DRAAdminAccess"):
        Release(35).with_gates("DRAAdminAcess=true")
    # A locked gate turned off: a real kube-apiserver refuses to start, but a what-if run (or code
    # built with the gate off, as the allocator conformance cases are) is judged so, with a note.
    gated, notes = Release(36).with_gates("DRAAdminAccess=false")
    assert gated.overrides == {"DRAAdminAccess": False}
    assert "locked on in Kubernetes 1.36" in notes[0] and "refuses to start" in notes[0]
    assert Release(35).with_gates("DRAAdminAccess=false")[0].overrides == {"DRAAdminAccess": False}  # beta there
    with pytest.raises(ReleaseError, match="does not exist"):
        Release(35).with_gates("DRAListTypeAttributes=true")
    gated, notes = Release(35).with_gates("DRAListTypeAttributes=false")
    assert gated.overrides == {} and "changes nothing" in notes[0]
