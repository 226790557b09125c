"""What migrating one object to another resource.k8s.io version changes, as edits of its text.

Objects are found in the parsed values (Lists expanded, as the linter does); the edits come from
:mod:`dralint.reshape` over the text's layout. A migration runs in steps because a step may
change lines a later one moves (v1alpha3's bare capacities are wrapped before their ``basic:``
is removed); each step is planned on the text the previous one left.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .. import schema
from ..manifest import DRA_GROUP, Manifest, identify
from ..paths import FieldPath, value_at
from ..kube.shapes import FLAT_VERSIONS, REQUESTS, STRUCTURED_VERSIONS
from ..reshape import (bare_capacities, device_from_basic, device_to_basic, request_from_exactly,
                       request_to_exactly)
from ..source.records import SourceDocument
from ..yamltext.edits import Splice, hoist_entry, indent_step, replace_scalar
from ..yamltext.layout import Layout, Node

TARGETS = ("v1", "v1beta2", "v1beta1")
MIGRATED_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice",
                            "DeviceTaintRule"})


@dataclass(frozen=True)
class ObjectRef:
    """One object of a text: its document, where it sits in it, what it is."""

    document: int
    base: FieldPath
    kind: str
    api_version: str
    display: str
    pod_specs: tuple[FieldPath, ...] = ()

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def is_dra(self) -> bool:
        return self.api_version.rpartition("/")[0] == DRA_GROUP


Step = Callable[[Layout, Node, int], list[Splice]]


def objects(values: list[Any], name: str) -> Iterator[ObjectRef]:
    """The objects of a text's documents (``values`` in document order; None for an empty one)."""
    for index, value in enumerate(values):
        if not isinstance(value, dict):
            continue
        for item in identify(SourceDocument(name, index, 0, value)):
            if isinstance(item, Manifest) and item.api_version:
                yield ObjectRef(index, item.base, item.kind, item.api_version, item.display, item.pod_spec_paths)


def refusal(ref: ObjectRef, target: str, release: str) -> str | None:
    """Why ``ref`` has no form in ``target`` that the API server of ``release`` serves (None when it has one)."""
    if ref.version in ("v1alpha1", "v1alpha2"):
        return (f"{ref.api_version} is classic DRA (Kubernetes 1.26–1.30), removed in 1.31; it has no {target} "
                "equivalent: rewrite it by hand as DeviceClasses and ResourceClaims with device requests")
    if ref.version not in STRUCTURED_VERSIONS:
        return f"{ref.api_version} is not a resource.k8s.io version dralint knows"
    target_api = f"{DRA_GROUP}/{target}"
    serving = schema.served_releases(target_api, ref.kind)
    if not serving:
        served = [v for v in TARGETS if schema.served_releases(f"{DRA_GROUP}/{v}", ref.kind)]
        also = f" (it is served as {', '.join(served)})" if served else ""
        return f"{ref.kind} has no {target_api} form{also}"
    if release not in serving:
        # The output would be refused by the very server the input was written for.
        instead = [v for v in TARGETS if schema.serves(release, f"{DRA_GROUP}/{v}", ref.kind)]
        hint = f"; it serves {ref.kind} as {', '.join(instead)} (--to {instead[0]})" if instead else ""
        return (f"Kubernetes {release} does not serve {ref.kind} as {target_api} ({_span(serving)}){hint}; "
                "--kube-version names the cluster's release")
    return None


def _span(releases: list[str]) -> str:
    """``served from 1.37`` or ``served in 1.32 to 1.37``: the releases serving a version (oldest first)."""
    if releases[-1] == schema.known_releases()[-1]:
        return f"served from {releases[0]}"
    return f"served in {releases[0]} to {releases[-1]}"


def steps(ref: ObjectRef, value: dict, target: str) -> list[Step]:
    """The steps that migrate ``ref`` (whose value is ``value``) to ``target`` (none: nothing to change)."""
    if not ref.is_dra:
        return [_pod_sources(ref)] if _has_sources(ref, value) else []
    if ref.version == target:
        return []
    to_flat, from_flat = target in FLAT_VERSIONS, ref.version in FLAT_VERSIONS
    new_api = f"{DRA_GROUP}/{target}"

    def shape(layout: Layout, node: Node, step: int) -> list[Splice]:
        version = node.find(("apiVersion",))
        assert version is not None   # ref.version was read from it
        splices = [replace_scalar(version, new_api)]
        if ref.kind in REQUESTS and to_flat != from_flat:
            requests = node.find(REQUESTS[ref.kind])
            for request in requests.items if requests is not None and requests.kind == "seq" else ():
                splices += request_from_exactly(layout, request) if to_flat else request_to_exactly(layout, request, step)
        if ref.kind == "ResourceSlice" and to_flat != from_flat:
            for device in _devices(node):
                splices += device_to_basic(layout, device, step) if to_flat else device_from_basic(layout, device)
        return splices

    if ref.kind == "ResourceSlice" and from_flat:  # bare quantities exist only in flat versions (1.31)
        return [_capacities, shape]
    return [shape]


def _devices(node: Node) -> list[Node]:
    devices = node.find(("spec", "devices"))
    return devices.items if devices is not None and devices.kind == "seq" else []


def _capacities(layout: Layout, node: Node, step: int) -> list[Splice]:
    """v1alpha3's bare capacity quantities wrapped as ``{value: …}`` (before ``basic`` is removed)."""
    splices = []
    for device in _devices(node):
        capacity = device.find(("basic", "capacity"))
        if capacity is not None:
            splices += bare_capacities(layout, capacity, step)
    return splices


def _has_sources(ref: ObjectRef, value: dict) -> bool:
    for spec in ref.pod_specs:
        claims = value_at(value, tuple(spec) + ("resourceClaims",))
        if isinstance(claims, list) and any(isinstance(c, dict) and isinstance(c.get("source"), dict) for c in claims):
            return True
    return False


def _pod_sources(ref: ObjectRef) -> Step:
    """Pods (and workloads) of Kubernetes ≤ 1.30 named their claim under ``source:``; 1.31 moved it up."""
    def step(layout: Layout, node: Node, indent: int) -> list[Splice]:
        splices = []
        for spec in ref.pod_specs:
            claims = node.find(tuple(spec) + ("resourceClaims",))
            for entry in claims.items if claims is not None and claims.kind == "seq" else ():
                if entry.kind == "map" and entry.entry("source") is not None:
                    splices += hoist_entry(layout, entry, "source")
        return splices

    return step


def shared_edit(layout: Layout, ref: ObjectRef, node: Node, splices: list[Splice]) -> str | None:
    """Why ``splices`` (edits of ``ref``, whose node is ``node``) would change another object too: they
    edit a node of ``ref`` that an alias outside it repeats (a ``kind: List`` whose items share text).
    None when they change ``ref`` alone."""
    for document, anchored, alias in layout.aliases:
        if document != ref.document or not _within(anchored, node) or _within(alias, node):
            continue
        if any(max(s.start, anchored.start) < min(s.end, anchored.end) for s in splices):
            return (f"its text from line {anchored.line + 1} is anchored as `&{anchored.anchor}` and repeated by "
                    f"`*{alias.anchor}` at line {alias.line + 1}, outside the object: editing it would change "
                    "that too (write the object out in full)")
    return None


def borrowed_text(layout: Layout, ref: ObjectRef) -> str:
    """A hint for an object that repeats, by an alias, text anchored outside it (which no edit of the
    object changes): '' when it does not."""
    node = object_node(layout, ref)
    if node is None:
        return ""
    for document, anchored, alias in layout.aliases:
        if document == ref.document and _within(alias, node) and not _within(anchored, node):
            return (f"; its text at line {alias.line + 1} is `*{alias.anchor}`, a repeat of `&{anchored.anchor}` at "
                    f"line {anchored.line + 1} outside the object, which migrate leaves as it is")
    return ""


def _within(inner: Node, outer: Node) -> bool:
    return outer.start <= inner.start and inner.end <= outer.end


def object_node(layout: Layout, ref: ObjectRef) -> Node | None:
    """The node of ``ref`` in a layout of its text."""
    root = layout.roots[ref.document] if ref.document < len(layout.roots) else None
    return root.find(tuple(ref.base)) if root is not None else None


def document_step(layout: Layout, ref: ObjectRef) -> int:
    root = layout.roots[ref.document] if ref.document < len(layout.roots) else None
    return indent_step(layout, root)
