"""A worker's view of the live cluster state, followed from the watcher's folder (:mod:`.snapshot`).

A thread of each worker follows the watcher's snapshot and log (:class:`.snapshot.Follower`) every
``interval``: the objects of each new batch are parsed and converted (those of a snapshot only
where their resourceVersion is new), a new index is derived from the current one
(:meth:`Index.updated`: the changed collections copied, the rest shared, the derived facts of the
untouched ones kept), warmed, the feasibility view is changed in place, and the new state is
swapped in with one assignment: a review reads :meth:`LiveCluster.current` once and judges against
that state to the end, never against one in the middle of an update, and never waits for one. A
change costs the objects it changed, whatever the size of the cluster. Readiness and the
per-resource metrics come from the watcher's heartbeat.
"""
from __future__ import annotations

import logging
import threading
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable

from dralint import gojson
from dralint.convert import Canonical
from dralint.engine import cluster_object
from dralint.index import Index
from dralint.kube.releases import Release

from .cluster import LIVE_CONTEXT, ClusterState
from .collector import Collector
from .fleet import Change, FleetView
from .logs import LOGGER, log
from .snapshot import Follower, Row, Update, read_status
from .store import RESOURCES, permission, settled

_log = logging.getLogger(LOGGER)
# The watcher writes its heartbeat every second; this long without one, it is not running.
STALE_SECONDS = 10.0
# An update of more objects than this (a whole state, a relist) is taken in with the cycle collector paused.
LARGE_UPDATE_ROWS = 1000
STATUS_CACHE_SECONDS = 0.5


class LiveCluster:
    """The current :class:`ClusterState` of a worker, following the watcher's files."""

    def __init__(self, folder: str, *, interval: float = 0.5,
                 on_swap: Callable[[ClusterState], None] | None = None,
                 release_of: Callable[[], Release | None] | None = None,
                 warm: Callable[[Index], None] | None = None, collector: Collector | None = None) -> None:
        """``warm``: called with each new index before it serves (facts reviews derive from it);
        ``collector``: paused while a large update (a whole state, a relist) is taken in."""
        self.folder = Path(folder)
        self._warm = warm
        self._collector = collector
        # The feasibility view of the state, for the release reviews judge with (None: feasibility off).
        # The watch lists every Node: a slice naming a node that has none gives no capacity.
        self.fleet = FleetView(release_of, nodes_listed=True) if release_of is not None else None
        self.interval = interval
        self._state: ClusterState | None = None
        # (resource, key) → (resourceVersion, Canonical or None for an object that is not one dralint reads):
        # the objects of the current state, changed only by the thread that follows the folder.
        self._objects: dict[tuple[str, str], tuple[str, Canonical | None]] = {}
        self._follower = Follower(self.folder)
        self._status: tuple[float, dict[str, Any] | None] = (0.0, None)
        self._on_swap = on_swap
        self._stop = threading.Event()
        self._loading = threading.Lock()
        self._served = False      # once ready, ready for good: the last good state serves through any outage
        self.swaps = 0

    def current(self) -> ClusterState | None:
        """The state reviews judge against (None until the watcher has published a full one).

        A worker that has not yet read the first full state (it started while the watcher was still
        listing, and the probe that found the replica ready asked another worker) reads it here,
        once: judging without it would be judging without the cluster.
        """
        state = self._state
        if state is None or state.generation < self._synced_at():
            with self._loading:
                self.refresh()
            state = self._state
        return state

    def loaded(self) -> ClusterState | None:
        """The state this worker has loaded, as it is: never waits to read a newer one."""
        return self._state

    def _synced_at(self) -> int:
        status = self.status()
        return int(status.get("synced_at") or 0) if status else 0

    def start(self) -> None:
        """Follow the folder in a thread of this process (in each worker, after fork)."""
        self.refresh()
        threading.Thread(target=self._follow, name="cluster-state", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _follow(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                with self._loading:
                    if not self.refresh() and self.fleet is not None and self._state is not None \
                            and self.fleet.behind():
                        # A policy edit changed the release: a new view of every device, built beside.
                        with self._collector.paused() if self._collector is not None else nullcontext():
                            self.fleet.update(self._state.index, [])
            except Exception:  # the previous state stays in force; the next change is tried again
                log(_log, logging.ERROR, "reading the cluster state failed", exc_info=True)

    def refresh(self) -> bool:
        """Take in what the watcher published since the last call; True when a new state was swapped in."""
        update = self._follower.poll()
        if update is None:
            return False
        # A DeviceTaintRule may taint any device: its change builds the fleet view anew, like a relist.
        large = self._collector is not None and (update.full or len(update.rows) > LARGE_UPDATE_ROWS or any(
            row.resource == "devicetaintrules" for row in update.rows))
        with self._collector.paused() if large and self._collector is not None else nullcontext():
            return self._take(update)

    def _take(self, update: Update) -> bool:
        try:
            changes, removed, staged = self._convert(update)
            previous = self._state
            if previous is None:   # nothing was read before: every object is in ``staged``
                index = Index.build(entry[1] for entry in staged.values() if entry is not None and entry[1] is not None)
            else:
                index = previous.index.updated(removed, (c.obj for c in changes if c.obj is not None))
            if self._warm is not None:
                self._warm(index)
            if self.fleet is not None:
                self.fleet.update(index, changes)
        except Exception:
            # What was read is not applied: the whole state is read again next time (only the objects
            # whose resourceVersion this worker has not seen are converted).
            self._follower.rewind()
            raise
        for ident, entry in staged.items():
            if entry is None:
                del self._objects[ident]
            else:
                self._objects[ident] = entry
        state = ClusterState(index, (), context=LIVE_CONTEXT, generation=update.generation, fleet=self.fleet)
        self._state = state
        self.swaps += 1
        if self._on_swap is not None:
            self._on_swap(state)
        return True

    def _convert(self, update: Update) -> tuple[list[Change], list[Canonical], dict[tuple[str, str], Any]]:
        """What ``update`` changes in the objects of the current state: each changed object parsed and
        converted (one whose resourceVersion is unchanged kept as it was). Returns the changes, the
        objects they replace or remove, and the new entries of the objects (None: removed), applied
        once the new state is in place."""
        changes: list[Change] = []
        removed: list[Canonical] = []
        staged: dict[tuple[str, str], Any] = {}
        rows = {(row.resource, row.key): row for row in update.rows}
        if update.full:   # a whole state: what this worker has and the state lacks is gone
            rows.update({ident: Row(ident[0], ident[1], "", b"") for ident in self._objects if ident not in rows})
        for ident, row in rows.items():
            known = self._objects.get(ident)
            if known is not None and row.data and row.version and known[0] == row.version:
                continue
            if known is None and not row.data:
                continue
            obj = _parse(row) if row.data else None
            staged[ident] = (row.version, obj) if row.data else None
            if known is not None and known[1] is not None:
                removed.append(known[1])
            if (known is not None and known[1] is not None) or obj is not None:
                changes.append(Change(ident[0], ident[1], obj))
        return changes, removed, staged

    def status(self) -> dict[str, Any] | None:
        """The watcher's last heartbeat (read at most every half second)."""
        at, value = self._status
        now = time.monotonic()
        if now - at >= STATUS_CACHE_SECONDS:
            value = read_status(self.folder)
            self._status = (now, value)
        return value

    def server_release(self) -> int | None:
        """The API server's minor release, as the watcher last read it (None: not read yet, or unreadable)."""
        server = (self.status() or {}).get("server")
        minor = server.get("minor") if isinstance(server, dict) else None
        return minor if isinstance(minor, int) and not isinstance(minor, bool) else None

    def readiness(self) -> list[str]:
        """Why reviews cannot yet be judged against the cluster; empty when they can.

        Until every resource's first full list is in (the first full sync), the reasons name what
        is missing: a permission refused, the API server unreachable. From then on a watch that
        fails (401/403, 5xx, unreachable, stalled), and a watcher that is restarted and lists
        everything again, keep the replica ready on the last good state,
        and the metrics say so (``dralint_webhook_cluster_watch_connected``, ``_denied``...): one
        resource refused for a while must not take every replica, and the organisation rules with
        them, out of service at once.
        """
        if self._served:
            # This worker has judged against a synced state: it stays ready on it while the watcher is
            # restarted or lists again (its heartbeat age and the watch metrics say so).
            return []
        status = self.status()
        if status is None:
            return ["cluster watcher has not reported yet"]
        age = time.time() - float(status.get("time") or 0)
        if age > STALE_SECONDS:
            return [f"cluster watcher not running (last heartbeat {age:.0f} s ago)"]
        if status.get("problem"):
            return [str(status["problem"])]
        resources = status.get("resources") or {}
        # An optional resource the webhook may not read (RBAC from before it was watched) is settled:
        # logged and counted (dralint_webhook_cluster_denied), never a reason to be unready.
        waiting = [name for name, r in resources.items() if isinstance(r, dict) and not settled(name, r)]
        problems = [str(resources[n].get("error")) for n in waiting if resources[n].get("denied")]
        if waiting:
            errors = [f"{permission(n)}: {resources[n].get('error')}" for n in waiting if resources[n].get("error")
                      and not resources[n].get("denied")]
            problems.append("cluster state not synced yet: " + ", ".join(waiting) +
                            (f" ({'; '.join(errors)})" if errors else ""))
        synced_at = int(status.get("synced_at") or 0)
        if not problems and not synced_at:
            problems.append("cluster state not published yet")
        elif not problems and (self._state is None or self._state.generation < synced_at):
            problems.append("cluster state not loaded by this worker yet")
        elif not problems and self.fleet is not None and not self.fleet.ready():
            problems.append("building the feasibility view of the cluster's devices")
        self._served = not problems
        return problems

    def metric_lines(self) -> list[str]:
        """Gauges and counters of the watch, per resource, in the Prometheus text format."""
        status = self.status() or {}
        resources = status.get("resources") or {}
        now = time.time()
        lines: list[str] = []
        families = (
            ("dralint_webhook_cluster_synced", "gauge", "1 when the resource's first full list is in the state.",
             lambda r: 1 if r.get("synced") else 0),
            ("dralint_webhook_cluster_objects", "gauge", "Objects of the resource in the watched state.",
             lambda r: int(r.get("objects") or 0)),
            ("dralint_webhook_cluster_last_event_age_seconds", "gauge",
             "Seconds since the resource's last list, watch event or bookmark.",
             lambda r: round(max(0.0, now - float(r.get("last_event") or 0)), 3) if r.get("last_event") else -1),
            ("dralint_webhook_cluster_relists_total", "counter",
             "Full lists after the first (an expired watch, an error, a lost permission).",
             lambda r: int(r.get("relists") or 0)),
            ("dralint_webhook_cluster_events_total", "counter", "Watch events applied, bookmarks included.",
             lambda r: int(r.get("events") or 0)),
            ("dralint_webhook_cluster_denied", "gauge", "1 while the API server refuses the resource (401/403).",
             lambda r: 1 if r.get("denied") else 0),
            ("dralint_webhook_cluster_watch_connected", "gauge",
             "1 while a watch stream of the resource is open; 0 while listing or waiting after a failure or expiry.",
             lambda r: 1 if r.get("connected") else 0),
            ("dralint_webhook_cluster_last_list_timestamp_seconds", "gauge",
             "Unix time of the resource's last successful full list (0: none yet).",
             lambda r: round(float(r.get("last_list") or 0), 3)),
            ("dralint_webhook_cluster_watch_failures_total", "counter",
             "Failed lists and watches: unreachable, 401/403, 5xx, a stalled stream, a watch that ended at once.",
             lambda r: int(r.get("failures") or 0)),
            ("dralint_webhook_cluster_skipped_objects_total", "counter",
             "List items and watch events left out: unreadable even to Go's JSON decoder, or not storable "
             "(each logged with its namespace/name).",
             lambda r: int(r.get("skipped") or 0)),
        )
        for name, kind, help_text, value in families:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
            for resource, *_ in RESOURCES:
                r = resources.get(resource)
                if isinstance(r, dict):
                    lines.append(f'{name}{{resource="{resource}"}} {value(r)}')
        lines += ["# HELP dralint_webhook_cluster_published_generation Generation of the last cluster state the "
                  "watcher published to the workers (each worker's own: dralint_webhook_cluster_state_generation).",
                  "# TYPE dralint_webhook_cluster_published_generation gauge",
                  f"dralint_webhook_cluster_published_generation {int(status.get('published') or 0)}"]
        heartbeat = status.get("time")
        lines += ["# HELP dralint_webhook_cluster_watcher_heartbeat_age_seconds Seconds since the watcher's last "
                  "heartbeat.", "# TYPE dralint_webhook_cluster_watcher_heartbeat_age_seconds gauge",
                  f"dralint_webhook_cluster_watcher_heartbeat_age_seconds "
                  f"{round(now - float(heartbeat), 3) if heartbeat else -1}"]
        return lines


def _parse(row: Row) -> Canonical | None:
    """The canonical object of a row (None for JSON that is not an object dralint reads)."""
    try:
        value = gojson.loads(row.data)
    except gojson.GoJSONError:
        return None
    return cluster_object(value, f"cluster:{row.resource}/{row.key}") if isinstance(value, dict) else None
