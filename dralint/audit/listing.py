"""What ``dralint audit`` lists from the API server, and the index its objects are judged against.

Every DRA object the cluster stores (DeviceClasses, ResourceSlices, ResourceClaims,
ResourceClaimTemplates, DeviceTaintRules) and the Pods that ask for claims are audited; Nodes and
Namespaces are listed as what they are judged against (node selectors, admin-access labels). A
resource that cannot be listed (a 403) is reported and the others are audited: the index then
lacks objects that references point at, so the rules judging against the cluster's state are not
judged at all rather than judged falsely (a claim's class "not found" because DeviceClasses could
not be read).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from ..cluster.state import GROUP, ClusterSnapshot, Resource
from ..engine import cluster_object
from ..index import Index

# Listed, in this order; each judged object names its listing (``cluster:resourceclaims/ml/train``).
AUDITED: tuple[Resource, ...] = (
    Resource("namespaces", "", essential=False, loses="namespace labels (admin access) are unknown"),
    Resource("nodes", "", essential=False, loses="no Node is known"),
    Resource("deviceclasses", GROUP, essential=False, loses="DeviceClasses are not audited"),
    Resource("resourceslices", GROUP, essential=False, loses="ResourceSlices are not audited"),
    Resource("resourceclaims", GROUP, essential=False, loses="ResourceClaims are not audited"),
    Resource("resourceclaimtemplates", GROUP, essential=False, loses="ResourceClaimTemplates are not audited"),
    Resource("devicetaintrules", GROUP, essential=False, loses="DeviceTaintRules are not audited"),
    Resource("pods", "", essential=False, loses="Pods are not audited"),
)
# Listed only to judge the others against: never audited themselves.
CONTEXT_ONLY = frozenset({"namespaces", "nodes"})
# What references and feasibility look up: without one of them, the cluster-state rules would judge
# falsely (a class, a claim or a template "not found", every device "free").
REFERENCED = frozenset({"nodes", "deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates"})


@dataclass(frozen=True)
class StoredObject:
    """One object the cluster stores, as listed, with what names it."""

    resource: str          # the listing's resource (plural), e.g. resourceclaims
    value: dict[str, Any]  # as the API server listed it, apiVersion and kind included

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.value.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def kind(self) -> str:
        return str(self.value.get("kind") or "")

    @property
    def api_version(self) -> str:
        return str(self.value.get("apiVersion") or "")

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace") or "")

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid") or "")

    @property
    def key(self) -> str:
        """``ml/train`` (namespaced) or ``gpu.example.com``."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def source(self) -> str:
        """The name its findings carry in place of a file: ``cluster:resourceclaims/ml/train``."""
        return f"cluster:{self.resource}/{self.key}"

    @property
    def display(self) -> str:
        """``ResourceClaim ml/train``."""
        return f"{self.kind} {self.key}"


@dataclass(frozen=True)
class AuditState:
    """The listing of one audit: the objects to judge and the index to judge them against."""

    snapshot: ClusterSnapshot
    index: Index
    audited: list[StoredObject] = field(default_factory=list)
    # Resources that could not be listed and are referenced by others: the cluster-state rules are off.
    missing_references: tuple[str, ...] = ()


def pods_with_claims(objects: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The Pods among ``objects`` whose spec names resource claims (the others ask for no device)."""
    for pod in objects:
        spec = pod.get("spec")
        if isinstance(spec, dict) and spec.get("resourceClaims"):
            yield pod


def audit_state(snapshot: ClusterSnapshot, namespace: str | None = None) -> AuditState:
    """The objects of ``snapshot`` to audit (those of ``namespace`` alone when given: no cluster-scoped
    object) and the index of every listed object but Pods, as the webhook's live state holds them."""
    canonical = []
    for resource, listing in snapshot.listings.items():
        if resource == "pods":
            continue
        for value in listing.items:
            obj = cluster_object(value, StoredObject(resource, value).source)
            if obj is not None:
                canonical.append(obj)
    audited: list[StoredObject] = []
    for resource, listing in snapshot.listings.items():
        if resource in CONTEXT_ONLY:
            continue
        values = pods_with_claims(listing.items) if resource == "pods" else listing.items
        for value in values:
            stored = StoredObject(resource, value)
            if namespace is None or stored.namespace == namespace:
                audited.append(stored)
    missing = tuple(p.resource.name for p in snapshot.problems if p.resource.name in REFERENCED)
    return AuditState(snapshot, Index.build(canonical), audited, missing)
