"""Which objects of a run count as cluster state, and which are defined twice.

An object the API server would refuse never reaches the cluster: a linted object that would be
refused must not feed references or feasibility (a broken ResourceSlice in one file must not fail
a good claim in another). Cluster state given as such (``--cluster``, the webhook's) is what the
cluster holds, and is taken as given: stored objects may predate today's validation. An
object is refused when an error of a rule the API server enforces (its catalog entry names the
server's answer, ``api_server``, and it is an error by default) was reported on it.

Two objects with the same kind, namespace and name in one run are one object in the cluster:
whichever is applied last replaces the other. That is reported (DRA605) and references resolve
to the one nearest the referrer (``Index.find``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from .catalog import Catalog
from .convert import Canonical
from .findings import Finding, Severity
from .manifest import NAMESPACED_DRA_KINDS

DUPLICATE_RULE = "DRA605"
# What other objects read: claims and pods name these, and feasibility allocates from them.
STATE_KINDS = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceTaintRule"})


def refusing_rules(catalog: Catalog) -> frozenset[str]:
    """The rules whose findings mean "the API server refuses this object"."""
    return frozenset(rule.id for rule in catalog if rule.api_server and rule.severity is Severity.ERROR)


def refused(objects: Iterable[Canonical], findings: Iterable[Finding], rules: frozenset[str]) -> list[Canonical]:
    """The objects of a kind other objects read that have a finding of a refusing rule.

    Findings name their object by file and display name (``ResourceSlice worker-1``), which is
    what survives the trip from the processes of ``-j``.
    """
    hit = {(f.file, f.object) for f in findings if f.rule in rules and f.severity is Severity.ERROR and f.object}
    return [obj for obj in objects
            if obj.kind in STATE_KINDS and (obj.manifest.document.file, obj.manifest.display) in hit]


@dataclass(frozen=True)
class Duplicate:
    """An object whose kind, namespace and name an earlier object of the run already has."""

    obj: Canonical
    first: Canonical


def duplicates(objects: Sequence[Canonical], around: Mapping[tuple, Canonical] | None = None,
               order: Callable[[Canonical], Any] | None = None) -> list[Duplicate]:
    """Every object after the first of its kind, namespace and name (objects named by
    ``generateName`` and the context kinds Node and Namespace, often repeated on purpose, aside).

    ``around`` holds the first object of each :func:`duplicate_key` among the run's other objects
    (the files around an editor's documents), which ``order`` places among ``objects`` (before
    them all without it)."""
    around = around or {}
    first: dict[tuple, Canonical] = {}
    found: list[Duplicate] = []
    for obj in objects:
        key = duplicate_key(obj)
        if key is None:
            continue
        earlier = first.setdefault(key, obj)
        other = around.get(key)
        if other is not None and (order is None or order(other) < order(earlier)):
            earlier = other
        if earlier is not obj:
            found.append(Duplicate(obj, earlier))
    return found


def duplicate_key(obj: Canonical) -> tuple[str, str, str, str] | None:
    """What makes two objects one in the cluster (group, kind, namespace, name); None for objects
    that are not compared (no name, or a Node or Namespace)."""
    manifest = obj.manifest
    meta = manifest.value.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return None
    if not manifest.group and manifest.kind in ("Node", "Namespace"):
        return None
    namespaced = manifest.kind in NAMESPACED_DRA_KINDS or bool(manifest.pod_spec_paths)
    return manifest.group, manifest.kind, (manifest.namespace or "default") if namespaced else "", manifest.name
