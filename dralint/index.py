"""Every object of one run, indexed for the checks that look across objects.

Objects come from the linted files and from ``--cluster``; both count as "present" for
references and feasibility, unless the API server would refuse them (the engine leaves those
out and lists them in ``refused``). The index is built once per run and only read afterwards.

Two objects may share a kind, namespace and name (two example files that both define
``demo/gpus``): ``find`` resolves a reference to the one in the referrer's own file, then its
folder, then the first of the run; the tables hold the first of each.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .convert import Canonical

# The kinds whose objects other objects name: (kind, namespace, name) → every such object.
REFERABLE = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate"})


@dataclass
class Index:
    classes: dict[str, Canonical] = field(default_factory=dict)
    claims: dict[tuple[str, str], Canonical] = field(default_factory=dict)
    templates: dict[tuple[str, str], Canonical] = field(default_factory=dict)
    slices: list[Canonical] = field(default_factory=list)
    taint_rules: list[Canonical] = field(default_factory=list)
    workloads: list[Canonical] = field(default_factory=list)
    nodes: dict[str, dict] = field(default_factory=dict)
    namespaces: dict[str, dict] = field(default_factory=dict)
    context_objects: list[Canonical] = field(default_factory=list)  # the Nodes and Namespaces, as given
    refused: dict[tuple[str, str, str], str] = field(default_factory=dict)
    """(kind, namespace, name) → file of an object left out because the API server would refuse it."""
    _same: dict[tuple[str, str, str], list[Canonical]] = field(default_factory=dict, repr=False)
    # Facts derived from the whole index (e.g. every attribute name the slices publish), computed once
    # per run instead of once per object; it lives and dies with the index.
    _derived: dict[str, Any] = field(default_factory=dict, repr=False)

    def derived(self, key: str, compute: Callable[["Index"], Any]) -> Any:
        """``compute(self)``, evaluated once per index and key."""
        if key not in self._derived:
            self._derived[key] = compute(self)
        return self._derived[key]

    def add(self, obj: Canonical) -> None:
        key = (obj.namespace, obj.name)
        if obj.manifest.kind in ("Node", "Namespace") and not obj.manifest.group:
            target = self.nodes if obj.manifest.kind == "Node" else self.namespaces
            target[obj.name] = obj.value
            self.context_objects.append(obj)
        elif obj.manifest.pod_spec_paths:
            self.workloads.append(obj)
        elif obj.kind == "DeviceClass":
            self.classes.setdefault(obj.name, obj)
        elif obj.kind == "ResourceClaim":
            self.claims.setdefault(key, obj)
        elif obj.kind == "ResourceClaimTemplate":
            self.templates.setdefault(key, obj)
        elif obj.kind == "ResourceSlice":
            self.slices.append(obj)
        elif obj.kind == "DeviceTaintRule":
            self.taint_rules.append(obj)
        if obj.kind in REFERABLE and not obj.manifest.pod_spec_paths:
            self._same.setdefault((obj.kind, obj.namespace, obj.name), []).append(obj)

    @classmethod
    def build(cls, objects: Iterable[Canonical], refused: Iterable[Canonical] = ()) -> "Index":
        """The index of ``objects``; ``refused`` are named in :attr:`refused` only."""
        index = cls()
        for obj in objects:
            index.add(obj)
        for obj in refused:
            index.refused.setdefault((obj.kind, obj.namespace, obj.name), obj.manifest.document.file)
        return index

    def find(self, kind: str, namespace: str, name: str, near: Canonical | None = None) -> Canonical | None:
        """The ``kind`` object a reference from ``near`` means: among the run's objects of that
        namespace and name, the one in ``near``'s file, else in its folder, else the first."""
        for space in namespaces_of(namespace):
            found = self._same.get((kind, space if kind != "DeviceClass" else "", name))
            if found:
                return closest(found, near)
        return None

    def every(self, kind: str) -> list[Canonical]:
        """Every claim, template or class of the run, duplicates included, in run order."""
        return [obj for (k, _, _), objs in self._same.items() if k == kind for obj in objs]

    def refused_file(self, kind: str, namespace: str, name: str) -> str | None:
        """The file of a refused ``kind`` object of that namespace and name, if the run had one."""
        for space in namespaces_of(namespace):
            file = self.refused.get((kind, space if kind != "DeviceClass" else "", name))
            if file is not None:
                return file
        return None

    def all_objects(self) -> list[Canonical]:
        """Every DRA object and workload of the run."""
        return (self.every("DeviceClass") + self.every("ResourceClaim") + self.every("ResourceClaimTemplate")
                + self.slices + self.taint_rules + self.workloads)

    def namespace_labels(self, namespace: str) -> dict | None:
        """Labels of a namespace given in the run, or None when it was not given."""
        ns = self.namespaces.get(namespace)
        if ns is None:
            return None
        meta = ns.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        return labels if isinstance(labels, dict) else {}


def namespaces_of(namespace: str) -> tuple[str, ...]:
    """An object without a namespace lands in the context's namespace, usually ``default``."""
    return ("", "default") if namespace in ("", "default") else (namespace,)


def closest(candidates: list[Canonical], near: Canonical | None) -> Canonical:
    """The candidate in ``near``'s file, else in its folder, else the first."""
    if near is None or len(candidates) == 1:
        return candidates[0]
    file = near.manifest.document.file
    same_file = [c for c in candidates if c.manifest.document.file == file]
    if same_file:
        return same_file[0]
    folder = os.path.dirname(file)
    return next((c for c in candidates if os.path.dirname(c.manifest.document.file) == folder), candidates[0])
