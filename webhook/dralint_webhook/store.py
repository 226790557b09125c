"""The watcher's copy of the cluster: per resource, every object by key at its resourceVersion.

A full list replaces a resource's objects; watch events change one object each; a bookmark only
moves the position. Objects are kept as the compact JSON the workers read (trimmed: no
``managedFields``, and for Nodes, Namespaces and ResourceClaims only what judging uses), so the
watcher holds bytes, not parsed trees, written with :mod:`dralint.gojson` (at any depth an API
server stores). An object that cannot be trimmed or written is left out and reported
(:class:`Unstorable`), never the whole list or watch. Every change bumps :attr:`Store.generation`
and notes the object's key; the publisher (:mod:`.snapshot`) takes the noted objects with
:meth:`Store.drain`, so a change costs the publisher that object, not the whole state. Each
resource also keeps the health of its watch (connected, last list, failures, skipped objects) for
``/readyz`` and ``/metrics``. Thread-safe: one lock, held for a dictionary update (a full list:
for comparing the old objects with the new).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from dralint import gojson

# Resources the webhook judges against: (plural, API group, kind, namespaced).
RESOURCES: tuple[tuple[str, str, str, bool], ...] = (
    ("namespaces", "", "Namespace", False),
    ("nodes", "", "Node", False),
    ("deviceclasses", "resource.k8s.io", "DeviceClass", False),
    ("resourceslices", "resource.k8s.io", "ResourceSlice", False),
    ("resourceclaims", "resource.k8s.io", "ResourceClaim", True),
    ("resourceclaimtemplates", "resource.k8s.io", "ResourceClaimTemplate", True),
    ("devicetaintrules", "resource.k8s.io", "DeviceTaintRule", False),
)
# Served only where a feature gate turns them on (DeviceTaintRule: DRADeviceTaints in 1.33–1.34,
# DRADeviceTaintRules from 1.35), and in a version of their own (v1alpha3, then v1beta2): each is
# looked up in discovery, and a cluster that does not serve it simply has none.
OPTIONAL: frozenset[str] = frozenset({"devicetaintrules"})
KIND_OF = {name: kind for name, _, kind, _ in RESOURCES}
GROUP_OF = {name: group for name, group, _, _ in RESOURCES}
# Of a Node, judging reads its labels (node selectors), taints and whether it is cordoned; its status
# (images, conditions, addresses) is most of its size and is never read.
_NODE_SPEC = ("taints", "unschedulable")
# Annotations that copy the whole object (kubectl apply) double its size and are never read.
_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
# Of a ResourceClaim in the cluster, judging reads its identity, its requests (a Pod's claim is judged
# with the Pod) and the devices its allocation holds and where (feasibility). Who it is reserved for,
# the drivers' per-device status, owner references and the creating controller's annotations are most
# of a busy claim's size and are never read.
_CLAIM_META = ("name", "namespace", "uid", "resourceVersion", "labels", "deletionTimestamp")
_CLAIM_STATUS = ("allocation",)


def permission(resource: str) -> str:
    """``resourceslices.resource.k8s.io`` (core resources by their plural alone), as RBAC names them."""
    group = GROUP_OF[resource]
    return f"{resource}.{group}" if group else resource


def settled(resource: str, status: Mapping[str, Any]) -> bool:
    """Whether the webhook may serve as far as ``resource`` goes: its first full list is in, or it is
    an optional resource the webhook may not read (RBAC from before it was watched: that is logged
    and counted, not an outage)."""
    return bool(status.get("synced")) or (resource in OPTIONAL and bool(status.get("denied")))


def key_of(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` or ``name``: an object's identity within its resource."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    name, namespace = meta.get("name"), meta.get("namespace")
    name = name if isinstance(name, str) else ""
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name


def version_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return rv if isinstance(rv, str) else ""


def trim(resource: str, obj: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """What the workers need of ``obj`` (a list item or a watch event's object), with apiVersion and kind.

    List items carry neither apiVersion nor kind (the list does): they are filled in here.
    """
    meta = dict(obj.get("metadata") or {})
    meta.pop("managedFields", None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and any(a in annotations for a in _DROPPED_ANNOTATIONS):
        meta["annotations"] = {k: v for k, v in annotations.items() if k not in _DROPPED_ANNOTATIONS}
    out: dict[str, Any] = {"apiVersion": api_version, "kind": KIND_OF[resource]}
    if resource == "resourceclaims":
        out["metadata"] = {k: meta[k] for k in _CLAIM_META if k in meta}
        if "spec" in obj:
            out["spec"] = obj["spec"]
        status = obj.get("status")
        if isinstance(status, dict) and any(k in status for k in _CLAIM_STATUS):
            out["status"] = {k: status[k] for k in _CLAIM_STATUS if k in status}
        return out
    if resource in ("nodes", "namespaces"):
        out["metadata"] = {k: meta[k] for k in ("name", "uid", "resourceVersion", "labels") if k in meta}
        spec = obj.get("spec")
        if resource == "nodes" and isinstance(spec, dict):
            out["spec"] = {k: spec[k] for k in _NODE_SPEC if k in spec}
        return out
    out["metadata"] = meta
    for k, v in obj.items():
        if k not in ("apiVersion", "kind", "metadata"):
            out[k] = v
    return out


@dataclass
class ResourceState:
    """One resource: its objects (key → (resourceVersion, JSON)), its position and its health."""

    objects: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    version: str = ""             # the position to watch from: the list's, or the last event's
    synced: bool = False          # a full list has been applied (it stays the state served from then on)
    lists: int = 0                # full lists, the first included
    relists: int = 0              # full lists after the first (an expired watch, an error)
    events: int = 0               # watch events applied, bookmarks included
    last_event: float = 0.0       # wall-clock time of the last list or event
    last_list: float = 0.0        # wall-clock time of the last full list
    connected: bool = False       # a watch stream is open (from its 200 to the next failure or expiry)
    failures: int = 0             # failed lists and watches (errors, stalls, watches that ended at once)
    skipped: int = 0              # list items and watch events left out: unreadable, or not storable
    error: str = ""               # the last failure, "" once the next list or watch succeeds
    denied: bool = False          # the last failure was 401 or 403
    served: bool = True           # False: the API server does not serve this (optional) resource

    def status(self) -> dict[str, Any]:
        return {"synced": self.synced, "version": self.version, "objects": len(self.objects), "lists": self.lists,
                "relists": self.relists, "events": self.events, "last_event": self.last_event,
                "last_list": self.last_list, "connected": self.connected, "failures": self.failures,
                "skipped": self.skipped, "error": self.error, "denied": self.denied, "served": self.served}


class Store:
    """Every watched resource's state, and a generation number bumped by each change."""

    def __init__(self, resources: Iterable[str] = tuple(KIND_OF)) -> None:
        self._lock = threading.Lock()
        self.resources: dict[str, ResourceState] = {name: ResourceState() for name in resources}
        self.generation = 0
        self.api_versions: dict[str, str] = {}   # resource → the apiVersion its objects are written in
        # (resource, key) of every object added, changed or removed since the last drain, in order.
        self._changed: dict[tuple[str, str], None] = {}

    def replace(self, resource: str, items: Iterable[Mapping[str, Any]] | dict[str, tuple[str, bytes]], version: str,
                api_version: str, *, now: float | None = None) -> list[Unstorable]:
        """A full list: ``items`` are the resource's objects at ``version``, as listed or as
        :func:`encode_page` kept them page by page (so that a list of 50,000 claims is never held parsed
        all at once). Objects it cannot keep are left out and returned (the caller names them and
        counts them with :meth:`skipped`)."""
        objects, unstorable = (items, []) if isinstance(items, dict) else encode_page(resource, items, api_version)
        with self._lock:
            state = self.resources[resource]
            old = state.objects
            changed = [key for key, entry in objects.items() if old.get(key) != entry]
            changed += [key for key in old if key not in objects]
            self._changed.update(((resource, key), None) for key in changed)
            state.objects = objects
            state.version = version
            if state.lists:
                state.relists += 1
            state.lists += 1
            state.synced, state.error, state.denied, state.served = True, "", False, True
            state.last_event = state.last_list = time.time() if now is None else now
            self.api_versions[resource] = api_version
            self.generation += 1 if changed or state.lists == 1 else 0
        return unstorable

    def apply(self, resource: str, event_type: str, obj: Mapping[str, Any], api_version: str,
              *, now: float | None = None) -> None:
        """One watch event (ADDED, MODIFIED, DELETED or BOOKMARK); ``obj`` is its object.

        Raises :class:`Unstorable` (nothing applied) for an object it cannot keep.
        """
        version = version_of(obj)
        data = encode(resource, obj, api_version) if event_type not in ("BOOKMARK", "DELETED") else b""
        with self._lock:
            state = self.resources[resource]
            state.events += 1
            state.last_event = time.time() if now is None else now
            state.error, state.denied = "", False
            if version:
                state.version = version
            if event_type == "BOOKMARK":
                return
            key = key_of(obj)
            if event_type == "DELETED":
                if state.objects.pop(key, None) is not None:
                    self._changed[(resource, key)] = None
                    self.generation += 1
                return
            state.objects[key] = (version, data)
            self._changed[(resource, key)] = None
            self.generation += 1

    def absent(self, resource: str) -> None:
        """The API server does not serve ``resource`` (an optional one): it has no objects, and that is known."""
        with self._lock:
            state = self.resources[resource]
            changed = bool(state.objects) or not state.synced or state.served
            self._changed.update(((resource, key), None) for key in state.objects)
            state.objects, state.version = {}, ""
            state.synced, state.error, state.denied, state.served = True, "", False, False
            self.generation += 1 if changed else 0

    def failed(self, resource: str, message: str, *, denied: bool = False) -> None:
        """A list or watch failed; the objects stay as they were (stale, not wrong)."""
        with self._lock:
            state = self.resources[resource]
            was_settled = settled(resource, state.status())
            state.error, state.denied, state.connected = message, denied, False
            state.failures += 1
            # A refused optional resource lets the webhook serve: a new generation gets that published.
            self.generation += 1 if settled(resource, state.status()) != was_settled else 0

    def watching(self, resource: str, connected: bool) -> None:
        """A watch stream of ``resource`` opened (the API server answered 200), or ended."""
        with self._lock:
            state = self.resources[resource]
            state.connected = connected
            if connected:
                state.error, state.denied = "", False

    def skipped(self, resource: str, count: int = 1) -> None:
        """``count`` list items or watch events of ``resource`` were left out (unreadable or not storable)."""
        with self._lock:
            self.resources[resource].skipped += count

    def drain(self, *, every: bool = False) -> "Drained":
        """The objects changed since the last drain (and with ``every``, all objects at that moment), which
        the next drain no longer returns. A change costs this the changed object only."""
        with self._lock:
            changes: list[ObjectRow] = []
            for resource, key in self._changed:
                entry = self.resources[resource].objects.get(key)
                changes.append((resource, key, entry[0], entry[1]) if entry is not None else (resource, key, "", None))
            self._changed = {}
            rows = [(name, key, version, data) for name, state in self.resources.items()
                    for key, (version, data) in state.objects.items()] if every else None
            return Drained(changes, rows)

    def status(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {name: state.status() for name, state in self.resources.items()}

    def objects(self, resource: str) -> dict[str, tuple[str, bytes]]:
        """A copy of one resource's objects (tests compare it with a fresh list)."""
        with self._lock:
            return dict(self.resources[resource].objects)


ObjectRow = tuple[str, str, str, Any]
"""(resource, key, resourceVersion, JSON bytes), the JSON None for an object removed."""


@dataclass(frozen=True)
class Drained:
    """What :meth:`Store.drain` took: the changed objects, and every object (or None)."""

    changes: list[ObjectRow]
    rows: list[ObjectRow] | None


class Unstorable(ValueError):
    """An object the store cannot keep: trimming or writing it failed."""

    def __init__(self, obj: Any, reason: str) -> None:
        super().__init__(reason)
        self.key = key_of(obj) if isinstance(obj, Mapping) else ""
        self.reason = reason


def encode(resource: str, obj: Mapping[str, Any], api_version: str) -> bytes:
    """The JSON the store keeps of ``obj`` (trimmed); raises :class:`Unstorable`."""
    try:
        data = gojson.dumps(trim(resource, obj, api_version))
    except Exception as exc:  # whatever the shape of one object, the list or watch goes on without it
        raise Unstorable(obj, f"{type(exc).__name__}: {str(exc)[:300]}") from None
    # orjson's bytes keep the buffer it wrote into (4 KiB and more for a 600-byte claim); the watcher keeps
    # tens of thousands of these, so each is copied to its own size.
    return bytes(memoryview(data))


def encode_page(resource: str, items: Iterable[Mapping[str, Any]],
                api_version: str) -> tuple[dict[str, tuple[str, bytes]], list[Unstorable]]:
    """What the store keeps of ``items`` (a page of a list): by key, their resourceVersion and JSON; and
    the objects it cannot keep."""
    objects: dict[str, tuple[str, bytes]] = {}
    unstorable: list[Unstorable] = []
    for item in items:
        try:
            objects[key_of(item)] = (version_of(item), encode(resource, item, api_version))
        except Unstorable as exc:
            unstorable.append(exc)
    return objects, unstorable
