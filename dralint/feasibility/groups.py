"""What is allocated together: the claims of one pod (or pod template), or a claim on its own.

A workload asks for its pod as many times as it has replicas (``replicas`` of a Deployment,
ReplicaSet, StatefulSet or ReplicationController, ``parallelism`` of a Job or a CronJob's job, what
each template of a workload CRD runs: workloads.py);
each pod gets its own claims from the templates and shares the claims named directly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterable

from ..convert import Canonical
from ..index import Index
from ..paths import FieldPath
from ..workloads import PodTemplate
from .model import ClaimSpec, read_claim
from .placement import Placement, read_placement


@dataclass(frozen=True)
class Member:
    """One claim of a group, with where the group's owner names it (for findings on a pod)."""

    obj: Canonical                 # the claim or template
    display: str                   # the claim's name as messages give it (a template's: the pod's claim)
    ref_path: FieldPath | None     # the pod's ``resourceClaims[i]`` entry, None for a lone claim
    linted: bool
    shared: bool = False           # named directly (resourceClaimName): one claim for every replica

    @cached_property
    def spec(self) -> ClaimSpec:
        """The claim as the allocator reads it; read when first judged (in the process judging it)."""
        return read_claim(self.obj, self.display)


@dataclass
class Group:
    owner: Canonical                       # the workload, or the claim/template judged alone
    members: list[Member] = field(default_factory=list)
    pinned: list[Canonical] = field(default_factory=list)   # already-allocated claims of the pod
    placement: Placement = field(default_factory=Placement)
    replicas: int = 1
    spec_path: FieldPath | None = None     # the pod spec inside the owner

    @property
    def is_workload(self) -> bool:
        return bool(self.owner.manifest.pod_spec_paths)

    @property
    def label(self) -> str:
        return self.owner.manifest.display


def _allocated(claim: Canonical) -> bool:
    return isinstance(claim.get("status", "allocation"), dict)


def claim_display(obj: Canonical) -> str:
    return f"{obj.namespace or 'default'}/{obj.name}"


def build_groups(index: Index, linted: Callable[[Canonical], bool],
                 candidates: Iterable[Canonical] | None = None) -> list[Group]:
    """Groups to judge: linted workloads, then linted claims and templates no linted workload uses.

    ``candidates``: the only objects that may be linted, when the caller knows them (a review: its
    own object), so that a review is not a walk over every claim of the cluster state."""
    groups: list[Group] = []
    used: set[int] = set()
    for work in index.workloads:
        if not linted(work):
            continue
        for spec_path in work.manifest.pod_spec_paths:
            pod_spec = work.get(*spec_path, default={})
            group = Group(owner=work, placement=read_placement(pod_spec if isinstance(pod_spec, dict) else {}),
                          replicas=replicas(work, spec_path), spec_path=spec_path)
            entries = work.get(*spec_path, "resourceClaims", default=[])
            for i, entry in enumerate(entries if isinstance(entries, list) else []):
                _add_entry(group, index, work, spec_path.child("resourceClaims", i), entry, used, linted)
            if group.placement.node_name and group.members:
                continue  # bypasses the scheduler: its unallocated claims never are (DRA249), nothing to judge
            if group.members or group.pinned:
                groups.append(group)
    for obj in _claims_and_templates(index, candidates):
        if linted(obj) and id(obj) not in used and not _allocated(obj):
            groups.append(Group(owner=obj, members=[Member(obj, claim_display(obj), None, True)]))
    return groups


def _claims_and_templates(index: Index, candidates: Iterable[Canonical] | None) -> list[Canonical]:
    """The index's claims, then its templates, in run order; of ``candidates`` only (in their order) when
    given."""
    if candidates is None:
        return index.every("ResourceClaim") + index.every("ResourceClaimTemplate")
    present = [obj for obj in candidates
               if any(o is obj for o in index.same.get((obj.kind, obj.namespace, obj.name), ()))]
    return [o for o in present if o.kind == "ResourceClaim"] + [o for o in present if o.kind == "ResourceClaimTemplate"]


def _add_entry(group: Group, index: Index, work: Canonical, path: FieldPath, entry: Any, used: set[int],
               linted: Callable[[Canonical], bool]) -> None:
    if not isinstance(entry, dict):
        return
    ns = work.namespace
    claim_name, template_name = entry.get("resourceClaimName"), entry.get("resourceClaimTemplateName")
    if isinstance(claim_name, str) and claim_name:
        obj = index.find("ResourceClaim", ns, claim_name, near=work)
        if obj is None:
            return  # the reference check reports the missing claim
        used.add(id(obj))
        if _allocated(obj):
            group.pinned.append(obj)
        else:
            group.members.append(Member(obj, claim_display(obj), path, linted(obj), shared=True))
    elif isinstance(template_name, str) and template_name:
        obj = index.find("ResourceClaimTemplate", ns, template_name, near=work)
        if obj is None:
            return
        used.add(id(obj))
        display = f"{ns or 'default'}/{work.name}-{entry.get('name', '')}"
        group.members.append(Member(obj, display, path, linted(obj)))


_REPLICAS = {"Deployment": ("spec", "replicas"), "ReplicaSet": ("spec", "replicas"),
             "StatefulSet": ("spec", "replicas"), "ReplicationController": ("spec", "replicas"),
             "Job": ("spec", "parallelism"), "CronJob": ("spec", "jobTemplate", "spec", "parallelism")}


def _template(work: Canonical, spec_path: FieldPath | None) -> PodTemplate | None:
    return next((t for t in work.manifest.pod_templates if t.spec == spec_path), None)


def replicas_path(work: Canonical, spec_path: FieldPath | None = None) -> FieldPath | None:
    """Where the workload says how many pods it runs at once (from the pod spec at ``spec_path``)."""
    template = _template(work, spec_path)
    if template is not None:
        return template.count_path
    path = _REPLICAS.get(work.manifest.kind)
    return FieldPath(path) if path else None


def replicas(work: Canonical, spec_path: FieldPath | None = None) -> int:
    """How many pods the workload asks for at once from the pod spec at ``spec_path`` (1 when it does
    not say, or says nonsense)."""
    template = _template(work, spec_path)
    if template is not None:
        return template.count
    path = _REPLICAS.get(work.manifest.kind)
    if path is None:
        return 1
    value = work.get(*path, default=1)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 1
