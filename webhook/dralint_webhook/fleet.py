"""A worker's feasibility fleet view of the live cluster, kept current off the request path.

The allocator's view (``dralint.feasibility.Fleet``: devices as columns, per-node counts) costs
seconds to build for thousands of nodes and milliseconds to ask; so it is built once, in the
thread that follows the watcher's state, and then changed object by object as the state changes
(``Fleet.apply``). A change too large to apply one by one (a relist, a new release from a policy
edit, a DeviceTaintRule: it may taint any device of the fleet) builds a new view beside the old
one, which serves until the swap. A claim allocated,
freed or removed costs the devices it holds, not a new count over every claim. Reviews ask it
under :attr:`FleetView.lock`: updates and judgements (which fill the view's caches as they go)
never overlap.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from dralint.index import Index
from dralint.kube.releases import Release

if TYPE_CHECKING:  # imported when the first view is built: feasibility is heavy (CEL) and may be off
    from dralint.feasibility import Fleet

# Above this many changed objects a new view is built instead of changing the old one in place.
REBUILD_CHANGES = 500
# How long a drop of the view's caches waits for the reviews using it (each holds it for milliseconds).
DROP_WAIT_SECONDS = 1.0


@dataclass(frozen=True)
class Change:
    """One object of the live state added or changed (``obj``), or removed (None); a
    ``dralint.feasibility.fleet.Change``."""

    resource: str
    key: str
    obj: Any


class FleetView:
    """The view for one release, or none while it is being built."""

    def __init__(self, release_of: Callable[[], Release | None], *, nodes_listed: bool = False) -> None:
        """``nodes_listed``: the state's Nodes are the cluster's whole node list (the watch lists them),
        so a slice of a node that has none gives nothing, even when there are no Nodes at all; else
        (files) the list is known once they hold a Node."""
        self.lock = threading.Lock()
        self._release_of = release_of
        self._nodes_listed = nodes_listed
        self._fleet: Fleet | None = None
        self._release: Release | None = None
        self.builds = 0
        # A drop waiting for the view in a thread of its own, and what it freed once it could.
        self._dropping = threading.Lock()
        self._waiting = False
        self._dropped: int | None = None

    def fleet(self, release: Release) -> Fleet | None:
        """The view to judge with under ``release``, or None (not built yet, or for another release)."""
        fleet = self._fleet
        return fleet if fleet is not None and self._release == release else None

    def ready(self) -> bool:
        """A view for the release the policy judges with is in place (or none is needed)."""
        release = self._release_of()
        return release is None or self.fleet(release) is not None

    def behind(self) -> bool:
        """The policy moved on: a view is needed for another release, or none any more (feasibility off)."""
        release = self._release_of()
        return (self._fleet is not None or release is not None) and (self._fleet is None or self._release != release)

    def drop_caches(self) -> int | None:
        """Empty the view's caches (selector answers, counts, node sets: worked out again when next
        asked); the bytes they held, as estimated. While a review or an update holds the view, a
        thread waits for it (up to ``DROP_WAIT_SECONDS``) and drops them: None until then, and what it
        freed when asked next. (Not the review itself as it lets go: the memory guard may interrupt a
        review anywhere, and a lock must be taken and given back where nothing can interrupt.)"""
        with self._dropping:
            if self._dropped is not None:
                freed, self._dropped = self._dropped, None
                return freed
            if self._waiting:
                return None
            if not self.lock.acquire(blocking=False):
                self._waiting = True
                threading.Thread(target=self._drop_when_free, name="fleet-cache-drop", daemon=True).start()
                return None
        try:
            return self._drop()
        finally:
            self.lock.release()

    def _drop_when_free(self) -> None:
        freed = 0
        if self.lock.acquire(timeout=DROP_WAIT_SECONDS):
            try:
                freed = self._drop()
            finally:
                self.lock.release()
        with self._dropping:
            self._waiting, self._dropped = False, freed

    def _drop(self) -> int:
        return self._fleet.drop_caches() if self._fleet is not None else 0

    def update(self, index: Index, changes: list[Change]) -> None:
        """Bring the view in step with ``index`` (the state after ``changes``). In the follow thread."""
        release = self._release_of()
        if release is None:            # feasibility is off: no view, no memory for one
            self._fleet, self._release = None, None
            return
        if self._fleet is None or self._release != release or len(changes) > REBUILD_CHANGES or \
                any(change.resource == "devicetaintrules" for change in changes):
            from dralint.feasibility import Fleet

            fleet = Fleet.build(index, release, nodes_listed=self._nodes_listed)
            with self.lock:
                self._fleet, self._release = fleet, release
            self.builds += 1
            return
        with self.lock:
            try:
                for change in changes:
                    self._fleet.apply(change)
                if changes:
                    self._fleet.warm()   # here, not in the next review
            except Exception:
                self._fleet = None   # half changed: built again by the next update, never judged with
                raise

