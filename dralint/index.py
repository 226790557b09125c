"""Every object of one run, indexed for the checks that look across objects.

Objects come from the linted files and from ``--cluster``; both count as "present" for
references and feasibility, unless the API server would refuse them (the engine leaves those
out and lists them in ``refused``). The index is built once per run and only read afterwards.
New indexes are derived from one without changing it: a review's object laid over the webhook's
cluster state (:meth:`Index.overlay`), the next live state after a few objects changed
(:meth:`Index.updated`). Both copy only the collections their objects belong to and share the
others, so their cost follows what changed, not the size of the cluster.

Two objects may share a kind, namespace and name (two example files that both define
``demo/gpus``): ``find`` resolves a reference to the one in the referrer's own file, then its
folder, then the first of the run; the tables hold the first of each.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .convert import Canonical
from .layered import LayeredDict

# The kinds whose objects other objects name: (kind, namespace, name) → every such object.
REFERABLE = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate"})


@dataclass
class Index:
    classes: dict[str, Canonical] = field(default_factory=dict)
    # The tables that grow with the workloads (tens of thousands of claims in a cluster) are layered:
    # an overlay or the next live state copies what it changes, not the table.
    claims: LayeredDict[tuple[str, str], Canonical] = field(default_factory=LayeredDict)
    templates: LayeredDict[tuple[str, str], Canonical] = field(default_factory=LayeredDict)
    slices: list[Canonical] = field(default_factory=list)
    taint_rules: list[Canonical] = field(default_factory=list)
    workloads: list[Canonical] = field(default_factory=list)
    nodes: dict[str, dict] = field(default_factory=dict)
    namespaces: dict[str, dict] = field(default_factory=dict)
    context_objects: list[Canonical] = field(default_factory=list)  # the Nodes and Namespaces, as given
    refused: dict[tuple[str, str, str], str] = field(default_factory=dict)
    """(kind, namespace, name) → file of an object left out because the API server would refuse it."""
    same: LayeredDict[tuple[str, str, str], list[Canonical]] = field(default_factory=LayeredDict, repr=False)
    """(kind, namespace, name) → every referable object of that identity, in run order."""
    # Facts derived from the whole index (e.g. every attribute name the slices publish), computed once
    # per run instead of once per object; it lives and dies with the index. Each entry remembers which
    # of the index's collections it was computed from, so that an overlay can reuse the entries whose
    # collections it leaves as they are.
    _derived: dict[str, tuple[Any, frozenset[str]]] = field(default_factory=dict, repr=False)
    # An overlay's base and the collections the overlay changed: facts that do not depend on those are
    # the base's facts too, and are kept there for the next overlay.
    _base: "Index | None" = field(default=None, repr=False, compare=False)
    _touched: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def derived(self, key: str, compute: Callable[["Index"], Any]) -> Any:
        """``compute(self)``, evaluated once per index and key."""
        entry = self._derived.get(key)
        if entry is None:
            reader = _Reader(self)
            entry = self._derived[key] = (compute(reader), frozenset(reader.read))  # type: ignore[arg-type]
            if self._base is not None and entry[1] and not entry[1] & self._touched:
                self._base._derived.setdefault(key, entry)
        return entry[0]

    def overlay(self, objects: Iterable[Canonical], *, beside: Callable[[Canonical], Any] | None = None) -> "Index":
        """This index plus ``objects``, leaving this one as it is (the webhook's cluster state plus the
        object under review): the collections the objects belong to are copied shallowly, the others
        shared, and derived facts computed from collections the objects do not touch are reused
        instead of computed again. An added object takes the place of one of the same name (the
        object under review is the newer). With ``beside`` (a sort key: the run's order of files),
        it joins them instead, as in a run that read both (the editor's documents laid over the
        files around them): :meth:`find` then picks as the command line does. Caches that read no
        collection (empty dicts filled by their users) are not shared: they stay per overlay."""
        objects = list(objects)
        touched = _with_companions({collection_of(obj) for obj in objects})
        out = self._sharing(touched)
        for obj in objects:
            if beside is None:
                out.add(obj, replace=True)
            else:
                out._join(obj, beside)
        out._base, out._touched = self, touched
        out._derived = {k: v for k, v in self._derived.items() if v[1] and not v[1] & touched}
        return out

    def updated(self, removed: Iterable[Canonical], added: Iterable[Canonical]) -> "Index":
        """This index without ``removed`` (objects it holds) and with ``added``, leaving this one as it is:
        the webhook's next live state, a changed object being its old version removed and its new one
        added. As with :meth:`overlay`, only the collections they belong to are copied, and the derived
        facts that read none of those carry over (a claim allocated or freed keeps the facts about
        every device of the fleet). An object removed from a name that other objects share gives
        its place to the next of them, as if it had never been added."""
        removed, added = list(removed), list(added)
        touched = _with_companions({collection_of(obj) for obj in removed + added})
        out = self._sharing(touched, fold=True)
        out._remove(removed)
        for obj in added:
            out.add(obj)
        out._derived = {k: v for k, v in self._derived.items() if v[1] and not v[1] & touched}
        return out

    def _sharing(self, touched: frozenset[str], *, fold: bool = False) -> "Index":
        """A new index with shallow copies of the ``touched`` collections and of ``refused`` (which the
        engine fills in after an overlay), sharing the others with this one. ``fold``: layered tables
        grown long are folded (the next live state pays for that once, not every review after it)."""
        return Index(**{name: _copy(getattr(self, name), fold) if name in touched or name == "refused"
                        else getattr(self, name) for name in _COLLECTIONS})

    def _remove(self, objects: list[Canonical]) -> None:
        """Take ``objects`` out of this index's own (copied) collections."""
        gone = {id(obj) for obj in objects}
        lists = set()
        for obj in objects:
            name = collection_of(obj)
            if name in ("nodes", "namespaces", "workloads", "slices", "taint_rules"):
                lists.add("context_objects" if name in ("nodes", "namespaces") else name)
            if name in ("nodes", "namespaces"):
                table = getattr(self, name)
                if table.get(obj.name) is obj.value:
                    del table[obj.name]
            elif name in _KEYED.values():
                identity = (obj.kind, obj.namespace, obj.name)
                rest = [o for o in self.same.get(identity, ()) if o is not obj]
                table, key = getattr(self, name), _table_key(obj)
                if rest:
                    self.same[identity] = rest   # a new list: the older index keeps its own
                else:
                    self.same.pop(identity, None)
                if table.get(key) is obj:
                    if rest:
                        table[key] = rest[0]
                    else:
                        del table[key]
        for name in lists:
            setattr(self, name, [o for o in getattr(self, name) if id(o) not in gone])

    def add(self, obj: Canonical, *, replace: bool = False) -> str:
        """File ``obj`` under its collection (the first of a name is kept, unless ``replace``); returns
        the collection's name ("" for an object no collection holds)."""
        name = collection_of(obj)
        if name in ("nodes", "namespaces"):
            getattr(self, name)[obj.name] = obj.value
            self.context_objects.append(obj)
        elif name in _KEYED.values():
            target, k = getattr(self, name), _table_key(obj)
            identity = (obj.kind, obj.namespace, obj.name)
            if replace:
                target[k] = obj
                self.same[identity] = [obj]  # a new list: an overlay's lists are its base's
            else:
                target.setdefault(k, obj)
                self.same.setdefault(identity, []).append(obj)
        elif name:
            getattr(self, name).append(obj)
        return name

    def _join(self, obj: Canonical, order: Callable[[Canonical], Any]) -> None:
        """File ``obj`` beside the objects of its name, each name's objects sorted by ``order``."""
        name = collection_of(obj)
        if name not in _KEYED.values():
            self.add(obj)
            return
        identity = (obj.kind, obj.namespace, obj.name)
        joined = sorted([*self.same.get(identity, ()), obj], key=order)  # a new list: the base keeps its own
        self.same[identity] = joined
        getattr(self, name)[_table_key(obj)] = joined[0]

    @classmethod
    def build(cls, objects: Iterable[Canonical], refused: Iterable[Canonical] = ()) -> "Index":
        """The index of ``objects``; ``refused`` are named in :attr:`refused` only."""
        index = cls()
        for obj in objects:
            index.add(obj)
        for obj in refused:
            index.refused.setdefault((obj.kind, obj.namespace, obj.name), obj.manifest.document.file)
        for name in ("claims", "templates", "same"):   # what was added becomes the base copies share
            setattr(index, name, getattr(index, name).folded())
        return index

    def find(self, kind: str, namespace: str, name: str, near: Canonical | None = None) -> Canonical | None:
        """The ``kind`` object a reference from ``near`` means: among the run's objects of that
        namespace and name, the one in ``near``'s file, else in its folder, else the first."""
        for space in namespaces_of(namespace) if kind != "DeviceClass" else ("",):
            found = self.same.get((kind, space, name))
            if found:
                return closest(found, near)
        return None

    def every(self, kind: str) -> list[Canonical]:
        """Every claim, template or class of the run, duplicates included, in run order."""
        return [obj for (k, _, _), objs in self.same.items() if k == kind for obj in objs]

    def refused_file(self, kind: str, namespace: str, name: str) -> str | None:
        """The file of a refused ``kind`` object of that namespace and name, if the run had one."""
        for space in namespaces_of(namespace) if kind != "DeviceClass" else ("",):
            file = self.refused.get((kind, space, name))
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


_COLLECTIONS = ("classes", "claims", "templates", "slices", "taint_rules", "workloads", "nodes", "namespaces",
                "context_objects", "refused", "same")
_KEYED = {"DeviceClass": "classes", "ResourceClaim": "claims", "ResourceClaimTemplate": "templates"}
_LISTED = {"ResourceSlice": "slices", "DeviceTaintRule": "taint_rules"}


def collection_of(obj: Canonical) -> str:
    """The collection of an index that holds ``obj`` ("" for none)."""
    if obj.manifest.kind in ("Node", "Namespace") and not obj.manifest.group:
        return "nodes" if obj.manifest.kind == "Node" else "namespaces"
    if obj.manifest.pod_spec_paths:
        return "workloads"
    return _KEYED.get(obj.kind) or _LISTED.get(obj.kind, "")


def _table_key(obj: Canonical) -> Any:
    """The key of ``obj`` in its keyed collection: a class by name, a claim or template by namespace and name."""
    return obj.name if obj.kind == "DeviceClass" else (obj.namespace, obj.name)


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


def _with_companions(touched: set[str]) -> frozenset[str]:
    """``touched`` collections, with those that change with them (the list of context objects, the
    identities of referable objects)."""
    touched.discard("")
    if touched & {"nodes", "namespaces"}:
        touched.add("context_objects")
    if touched & {"classes", "claims", "templates"}:
        touched.add("same")
    return frozenset(touched)


def _copy(value: Any, fold: bool = False) -> Any:
    if isinstance(value, LayeredDict):
        return value.folded() if fold else value.copy()
    return dict(value) if isinstance(value, dict) else list(value)


class _Reader:
    """The index as a derived fact's computation sees it, noting which collections it reads."""

    def __init__(self, index: Index) -> None:
        self._index = index
        self.read: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if name in _COLLECTIONS:
            self.read.add(name)
        elif name in ("all_objects", "namespace_labels"):
            self.read.update(_COLLECTIONS)
        return getattr(self._index, name)
