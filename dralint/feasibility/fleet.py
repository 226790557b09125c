"""The allocator's view of a cluster's devices, kept beside a live cluster state.

Building the view (devices as columns, per-node counts) costs seconds for thousands of nodes and
asking it milliseconds; so a caller that follows a cluster (the webhook) builds it once with
:meth:`Fleet.build`, changes it object by object with :meth:`Fleet.apply` and hands it to every
judgement. This is the only door to the view from outside the package: the view's own types stay
inside it.
"""
from __future__ import annotations

from typing import Protocol

from ..convert import Canonical
from ..index import Index
from ..kube.releases import Release
from .selection import cel_evaluator, cel_required_driver
from .world import World


class Change(Protocol):
    """One object of the cluster state added or changed (``obj``), or removed (None): the caller's
    record, read by resource name (``resourceslices``...) and key (``namespace/name`` or ``/name``)."""

    @property
    def resource(self) -> str: ...

    @property
    def key(self) -> str: ...

    @property
    def obj(self) -> Canonical | None: ...


class Fleet:
    """The allocator's view of one cluster state under one release."""

    def __init__(self, world: World) -> None:
        self.world = world

    @classmethod
    def build(cls, index: Index, release: Release, *, nodes_listed: bool = False) -> Fleet:
        """The view of ``index`` under ``release``, warmed. ``nodes_listed``: the index's Nodes are
        the cluster's whole node list, so a slice of a node that has none gives nothing."""
        world = World.from_index(index, release, cel_evaluator(release), None, cel_required_driver(release),
                                 by_name=True, nodes_listed=nodes_listed)
        world.warm()
        return cls(world)

    def apply(self, change: Change) -> None:
        """Bring the view in step with one changed object (slices, classes, nodes and claims; other
        resources change nothing the view keeps)."""
        world, obj, name = self.world, change.obj, change.key.rsplit("/", 1)[-1]
        if change.resource == "resourceslices":
            world.put_slice(obj) if obj is not None else world.drop_slice(name)
        elif change.resource == "deviceclasses":
            world.put_class(obj) if obj is not None else world.drop_class(name)
        elif change.resource == "nodes":
            world.put_node(name, obj.value if obj is not None else None)
        elif change.resource == "resourceclaims":
            namespace = change.key.split("/", 1)[0]
            world.put_claim(obj, (namespace, name))

    def warm(self) -> None:
        """Work out what the changed nodes' arrays and pools need now, not in the next judgement."""
        self.world.warm()

    def drop_caches(self) -> int:
        """Empty the view's caches (worked out again when next asked); the bytes they held, as estimated."""
        return self.world.drop_caches()
