"""Identify what each document is: a DRA object, a workload carrying pod specs, or neither.

Lists (``kind: List`` and every ``*List``) are expanded into their items; each item keeps the
path it has inside its document so findings still point at the right line. What the API server
would not take as an object at all (DRA003, DRA006, DRA007) this stage reports itself
(:func:`refusal`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterator

from .paths import FieldPath
from .problems import Problem
from .workloads import PodTemplate, carries_pod_claims, is_workload_kind, pod_templates

DRA_GROUP = "resource.k8s.io"

# Where the pod specs of a workload kind live (group, kind) -> paths to PodSpecs.
_POD_SPECS: dict[tuple[str, str], tuple[FieldPath, ...]] = {
    ("", "Pod"): (FieldPath(("spec",)),),
    ("", "PodTemplate"): (FieldPath(("template", "spec")),),
    ("", "ReplicationController"): (FieldPath(("spec", "template", "spec")),),
    ("apps", "Deployment"): (FieldPath(("spec", "template", "spec")),),
    ("apps", "StatefulSet"): (FieldPath(("spec", "template", "spec")),),
    ("apps", "DaemonSet"): (FieldPath(("spec", "template", "spec")),),
    ("apps", "ReplicaSet"): (FieldPath(("spec", "template", "spec")),),
    ("batch", "Job"): (FieldPath(("spec", "template", "spec")),),
    ("batch", "CronJob"): (FieldPath(("spec", "jobTemplate", "spec", "template", "spec")),),
}
# Core kinds read for context only: node labels (node selectors), namespace labels (admin access).
CONTEXT_KINDS = frozenset({("", "Node"), ("", "Namespace")})
NAMESPACED_DRA_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "PodSchedulingContext", "PodScheduling",
                                  "ResourceClaimParameters", "ResourceClassParameters"})


@dataclass(frozen=True)
class Manifest:
    """One Kubernetes object found in a document (possibly an item of a List)."""

    document: Any            # the SourceDocument it came from
    value: dict
    base: FieldPath          # where the object sits inside its document (``items[3]`` for List items)
    api_version: str
    kind: str
    from_cluster: bool = False

    # Cached: every stage asks these of every object, many times (the value is never changed in place).
    @cached_property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0] if "/" in self.api_version else ""

    @cached_property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @cached_property
    def is_dra(self) -> bool:
        return self.group == DRA_GROUP

    @cached_property
    def pod_spec_paths(self) -> tuple[FieldPath, ...]:
        """Where the object's pod specs are: fixed for Kubernetes' own kinds, worked out from the value
        for the workload CRDs of workloads.py (``replicatedJobs[i]``)."""
        return _POD_SPECS.get((self.group, self.kind)) or tuple(t.spec for t in self.pod_templates)

    @cached_property
    def pod_templates(self) -> tuple[PodTemplate, ...]:
        """The pod templates of a workload CRD with how many pods each runs (none for other kinds)."""
        return pod_templates(self.group, self.kind, self.value)

    @property
    def name(self) -> str:
        meta = self.value.get("metadata")
        if isinstance(meta, dict):
            name = meta.get("name") or meta.get("generateName")
            return name if isinstance(name, str) else ""
        return ""

    @property
    def namespace(self) -> str:
        meta = self.value.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        return ns if isinstance(ns, str) else ""

    @property
    def display(self) -> str:
        """``ResourceClaim ml/gpu-claim`` (cluster-scoped objects have no namespace part)."""
        name = self.name or "<unnamed>"
        return f"{self.kind} {self.namespace}/{name}" if self.namespace else f"{self.kind} {name}"


@dataclass(frozen=True)
class WrongGroup:
    """A kind dralint knows, under a built-in API group that does not have it (``v1`` Deployment)."""

    document: Any
    base: FieldPath
    api_version: str
    kind: str
    expected: str


@dataclass(frozen=True)
class NotJudged:
    """An object of a kind dralint neither judges nor reads as context (a Service, a ConfigMap, a
    custom resource without pod templates): counted, and its kind named once per run."""

    api_version: str
    kind: str


@dataclass(frozen=True)
class Unread:
    """An object of a kind dralint does not read whose value holds a pod spec with ``resourceClaims``
    (a workload CRD not in workloads.py): said once per run, so that its claims are not judged unseen."""

    document: Any
    base: FieldPath
    api_version: str
    kind: str


@dataclass(frozen=True)
class NotAnObject:
    """A document that is YAML but not a mapping (a list or a scalar)."""

    document: Any
    found: str


def identify(document: Any, *,
             from_cluster: bool = False) -> Iterator[Manifest | NotAnObject | WrongGroup | Unread | NotJudged]:
    """Yield the objects of one document that dralint cares about, Lists expanded."""
    value = document.value
    if not isinstance(value, dict):
        yield NotAnObject(document, type_name(value))
        return
    yield from _objects(document, value, FieldPath(), from_cluster)


def _objects(document: Any, value: dict, base: FieldPath,
             from_cluster: bool) -> Iterator[Manifest | WrongGroup | Unread | NotJudged]:
    api_version, kind = value.get("apiVersion"), value.get("kind")
    if not isinstance(kind, str) or not kind:
        return
    items = value.get("items")
    if kind.endswith("List") and isinstance(items, list):
        for i, item in enumerate(items):
            if isinstance(item, dict):
                yield from _objects(document, item, base.child("items", i), from_cluster)
        return
    api_version = api_version if isinstance(api_version, str) else ""
    manifest = Manifest(document, value, base, api_version, kind, from_cluster)
    if manifest.is_dra or manifest.pod_spec_paths or is_workload_kind(manifest.group, kind) \
            or (manifest.group, kind) in CONTEXT_KINDS or (not api_version and kind in KNOWN_KINDS):
        yield manifest
    elif api_version and kind in _HOME_GROUP and _builtin_group(manifest.group):
        yield WrongGroup(document, base, api_version, kind, _HOME_GROUP[kind])
    elif carries_pod_claims(value):
        yield Unread(document, base, api_version, kind)
    else:
        yield NotJudged(api_version, kind)


def _builtin_group(group: str) -> bool:
    """Kubernetes' own groups: dotless ("", apps, batch) or under k8s.io; CRDs use other domains."""
    return "." not in group or group.endswith(".k8s.io")


KNOWN_KINDS = frozenset({k for _, k in _POD_SPECS} | {
    "ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice", "DeviceTaintRule", "ResourceClass",
    "PodSchedulingContext", "ResourceClaimParameters", "ResourceClassParameters", "ResourcePoolStatusRequest"})


# The API group each kind above belongs to, for "Deployment is in apps/v1, not v1".
_HOME_GROUP = {kind: (f"{group}/v1" if group else "v1") for group, kind in _POD_SPECS} | {
    kind: DRA_GROUP for kind in ("ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice",
                                 "DeviceTaintRule", "ResourceClass", "PodSchedulingContext", "ResourceClaimParameters",
                                 "ResourceClassParameters", "ResourcePoolStatusRequest")}


@dataclass(frozen=True)
class Refusal:
    """What the API server says of a document or object it would not take (DRA003, DRA006, DRA007).

    No conversion has run, so the problem's paths are the user's, under ``base`` in ``document``;
    ``base`` is None for a document that is no object at all, reported at its first line.
    """

    document: Any
    base: FieldPath | None
    display: str
    problem: Problem


def refusal(item: Manifest | NotAnObject | WrongGroup) -> Refusal | None:
    """The manifest stage's finding on an identified item; None for an object the later stages judge.

    A :class:`NotAnObject` is only asked about when it stands where an object was meant (see
    :func:`mistaken_object`).
    """
    if isinstance(item, WrongGroup):
        return Refusal(item.document, item.base, f"{item.kind} {_name_of(item)}", Problem(
            "DRA007", FieldPath(("apiVersion",)), f"{item.kind} does not exist in {item.api_version}; it is in "
                                                  f"{item.expected} (the API server answers \"no matches for kind\")"))
    if isinstance(item, NotAnObject):
        why = ("; write each object as its own document (after `---`) or as the `items` of a "
               "`kind: List`" if _list_of_objects(item.document.value)
               else " (the other documents of this file are objects)")
        return Refusal(item.document, None, "", Problem(
            "DRA003", FieldPath(), f"the document is {item.found}, not a Kubernetes object (a mapping){why}"))
    if not item.api_version:
        hint = " (keys are case-sensitive: found `apiversion`)" if "apiversion" in item.value else ""
        return Refusal(item.document, item.base, item.display, Problem(
            "DRA006", FieldPath(("apiVersion",)), f"{item.kind} has no apiVersion{hint}; the API server refuses an "
                                                  "object without apiVersion and kind", at=FieldPath()))
    return None


def object_shaped(value: Any) -> bool:
    """A mapping with a ``kind``: a Kubernetes object, or one meant to be."""
    return isinstance(value, dict) and isinstance(value.get("kind"), str) and bool(value["kind"])


def mistaken_object(value: Any, manifests_file: bool) -> bool:
    """A list or scalar where an object was meant: a list of objects, or a stray document in a
    file of objects (DRA003). A mapping without ``kind`` is no object of anyone's."""
    return not isinstance(value, dict) and (_list_of_objects(value) or manifests_file)


def _list_of_objects(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and object_shaped(value[0])


def _name_of(item: WrongGroup) -> str:
    meta = item.document.value.get("metadata") if isinstance(item.document.value, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else "<unnamed>"


def type_name(value: Any) -> str:
    """How a YAML value is called in messages."""
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a mapping"
