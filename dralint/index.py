"""Every object of one run, indexed for the checks that look across objects.

Objects come from the linted files and from ``--cluster``; both count as "present" for
references and feasibility. The index is built once per run and only read afterwards.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .convert import Canonical


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

    @classmethod
    def build(cls, objects: Iterable[Canonical]) -> "Index":
        index = cls()
        for obj in objects:
            index.add(obj)
        return index

    def all_objects(self) -> list[Canonical]:
        """Every DRA object and workload of the run."""
        return (list(self.classes.values()) + list(self.claims.values()) + list(self.templates.values())
                + self.slices + self.taint_rules + self.workloads)

    def namespace_labels(self, namespace: str) -> dict | None:
        """Labels of a namespace given in the run, or None when it was not given."""
        ns = self.namespaces.get(namespace)
        if ns is None:
            return None
        meta = ns.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        return labels if isinstance(labels, dict) else {}
