"""List and watch one resource, the way client-go's reflector does, into the :class:`~.store.Store`.

* A paginated list (``limit``/``continue``) gives every object and the list's resourceVersion.
* A watch from that resourceVersion, with bookmarks (``allowWatchBookmarks``), applies each event
  and moves the position; when the server ends the watch (its ``timeoutSeconds``), the next one
  starts from the last position, without a list.
* An expired position arrives as HTTP 200 and then an ``ERROR`` event carrying Status 410
  ``Expired`` (or as HTTP 410 on a list's ``continue``): that is answered with a full list again.
* Any other failure (the server unreachable, a stream cut in the middle of an event, a 5xx) waits
  with exponential backoff and jitter and tries again; the objects stay as they were meanwhile.
  401 and 403 mark the resource *denied*, with a message naming the missing permission: the
  webhook is not ready until a later list succeeds. Nothing here raises out of :meth:`run`.
* An optional resource (one a feature gate serves, in a version of its own) is first looked up in
  discovery (:func:`served_version`). Not served: the store knows it has no objects, and discovery
  is asked again every ``Timing.rediscover`` seconds. A 404 later (the API server restarted with
  the gate off) looks it up again.
"""
from __future__ import annotations

import logging
import random
import threading
from dataclasses import dataclass
from typing import Any, Callable

from .kube import Api, ApiError, Unreachable
from .logs import LOGGER, log
from .store import GROUP_OF, Store, encode, permission

_log = logging.getLogger(LOGGER)
PAGE_SIZE = 500


@dataclass(frozen=True)
class Timing:
    """How long to wait for what (tests shorten them)."""

    watch_seconds: tuple[int, int] = (300, 600)   # the server ends each watch after a random time in this range
    read_margin: float = 30.0                     # no byte for the watch's time plus this: the connection is dead
    list_timeout: float = 60.0
    backoff_initial: float = 0.8
    backoff_max: float = 30.0
    rediscover: float = 600.0                     # an optional resource not served: look again after this


class Backoff:
    """Exponential backoff with jitter: initial, doubling, capped; a success starts it over."""

    def __init__(self, initial: float, cap: float, rand: Callable[[], float] = random.random) -> None:
        self.initial, self.cap, self._rand = initial, cap, rand
        self.failures = 0

    def next(self) -> float:
        """The wait before the next try: between half and all of the (capped) exponential step."""
        step = min(self.cap, self.initial * (2 ** self.failures))
        self.failures += 1
        return step * (0.5 + 0.5 * self._rand())

    def reset(self) -> None:
        self.failures = 0


class Expired(Exception):
    """The position to watch (or list) from is gone: list again."""


def collection_path(resource: str, version: str) -> str:
    """``/api/v1/nodes`` or ``/apis/resource.k8s.io/v1/resourceslices`` (every namespace)."""
    group = GROUP_OF[resource]
    return f"/apis/{group}/{version}/{resource}" if group else f"/api/{version}/{resource}"


class Reflector:
    """Keeps one resource of ``store`` in step with the API server (one thread runs :meth:`run`)."""

    def __init__(self, api: Api, store: Store, resource: str, version: str | None, *, timing: Timing = Timing(),
                 stop: threading.Event | None = None, rand: Callable[[], float] = random.random,
                 find_version: Callable[[], str | None] | None = None) -> None:
        """``version`` None: an optional resource, whose version ``find_version`` looks up (None: not served)."""
        self.api = api
        self.store = store
        self.resource = resource
        self._find_version = find_version
        self._use(version)
        self.timing = timing
        self.stop = stop or threading.Event()
        self._rand = rand
        self.backoff = Backoff(timing.backoff_initial, timing.backoff_max, rand)

    def _use(self, version: str | None) -> None:
        self.version = version                # the API version listed and watched (v1, or v1 of the group)
        group = GROUP_OF[self.resource]
        self.api_version = (f"{group}/{version}" if group else version) if version else ""
        self.path = collection_path(self.resource, version) if version else ""

    def run(self) -> None:
        """List, then watch, until :attr:`stop` is set; never raises."""
        position: str | None = None
        while not self.stop.is_set():
            try:
                if self.version is None:
                    assert self._find_version is not None
                    self._use(self._find_version())
                    if self.version is None:
                        self.store.absent(self.resource)
                        self.backoff.reset()
                        self.stop.wait(self.timing.rediscover)
                        continue
                    log(_log, logging.INFO, "cluster watch found an optional resource", resource=self.resource,
                        version=self.version)
                if position is None:
                    position = self.list()
                position = self.watch(position)
                self.backoff.reset()
            except Expired:
                position = None       # list again at once: the server has moved on
            except ApiError as exc:
                self._failed(exc)
                if exc.code in (401, 403, 404):
                    position = None
                if exc.code == 404 and self._find_version is not None:
                    self._use(None)   # no longer served in that version (or at all): look it up again
            except Unreachable as exc:
                self._failed(exc)
            except Exception as exc:  # a bug here must not end the watch: log it and start over
                log(_log, logging.ERROR, "cluster watch failed unexpectedly", exc_info=True, resource=self.resource)
                self._failed(exc)
                position = None

    def list(self) -> str:
        """Every object, page by page; the resourceVersion to watch from."""
        items: dict[str, tuple[str, bytes]] = {}    # each page trimmed and encoded as it comes (store.encode)
        params: dict[str, Any] = {"limit": PAGE_SIZE}
        while True:
            try:
                page = self.api.get(self.path, params, timeout=self.timing.list_timeout)
            except ApiError as exc:
                if exc.code == 410 and "continue" in params:
                    # The continue token outlived the server's compaction: start the list over.
                    items, params = {}, {"limit": PAGE_SIZE}
                    continue
                raise
            meta = page.get("metadata") if isinstance(page, dict) else None
            page_items = page.get("items") if isinstance(page, dict) else None
            if not isinstance(meta, dict) or not isinstance(page_items, list):
                raise Unreachable(f"GET {self.path}: the answer is not a list")
            items.update(encode(self.resource, (i for i in page_items if isinstance(i, dict)), self.api_version))
            token = meta.get("continue")
            if not token:
                version = str(meta.get("resourceVersion") or "")
                self.store.replace(self.resource, items, version, self.api_version)
                return version
            params = {"limit": PAGE_SIZE, "continue": token}

    def watch(self, position: str) -> str:
        """One watch from ``position`` until the server ends it; the position reached."""
        low, high = self.timing.watch_seconds
        seconds = low + int((high - low) * self._rand())
        params = {"watch": "1", "resourceVersion": position, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(seconds)}
        for event in self.api.stream(self.path, params, timeout=seconds + self.timing.read_margin):
            kind = event.get("type") if isinstance(event, dict) else None
            obj = event.get("object") if isinstance(event, dict) else None
            if not isinstance(obj, dict):
                raise Unreachable(f"watch {self.path}: an event without an object")
            if kind == "ERROR":
                error = ApiError.from_status(500, obj)
                if error.code == 410:
                    raise Expired(error.message)
                raise error
            if kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
                raise Unreachable(f"watch {self.path}: an event of type {str(kind)[:40]!r}")
            self.store.apply(self.resource, kind, obj, self.api_version)
            position = self.store.resources[self.resource].version or position
            self.backoff.reset()
            if self.stop.is_set():
                break
        return position

    def _failed(self, exc: Exception) -> None:
        denied = isinstance(exc, ApiError) and exc.code in (401, 403)
        if isinstance(exc, ApiError) and exc.code == 401:
            message = (f"the API server refused the webhook's credentials (401 Unauthorized) when listing "
                       f"{permission(self.resource)}")
        elif isinstance(exc, ApiError) and exc.code == 403:
            message = (f"the webhook may not list and watch {permission(self.resource)} (403 Forbidden: "
                       f"{exc.message[:300]}); give its ServiceAccount get, list and watch on it "
                       "(webhook/deploy/base/rbac.yaml)")
        elif self.version is None:
            message = f"{permission(self.resource)}: discovery failed: {str(exc)[:500]}"
        else:
            message = f"{permission(self.resource)}: {str(exc)[:500]}"
        self.store.failed(self.resource, message, denied=denied)
        wait = self.backoff.next()
        log(_log, logging.WARNING, "cluster watch failed; trying again", resource=self.resource, error=message,
            retry_seconds=round(wait, 2))
        self.stop.wait(wait)


def discover_version(api: Api, group: str) -> str:
    """The version of ``group`` the API server prefers (``v1`` for resource.k8s.io since 1.34)."""
    doc = api.get(f"/apis/{group}", timeout=30)
    preferred = doc.get("preferredVersion") if isinstance(doc, dict) else None
    version = preferred.get("version") if isinstance(preferred, dict) else None
    if not isinstance(version, str) or not version:
        raise Unreachable(f"/apis/{group}: no preferred version")
    return version


def served_version(api: Api, group: str, resource: str) -> str | None:
    """The version of ``group`` that serves ``resource``, the server's preferred first; None if none does."""
    doc = api.get(f"/apis/{group}", timeout=30)
    versions = doc.get("versions") if isinstance(doc, dict) else None
    if not isinstance(versions, list):
        raise Unreachable(f"/apis/{group}: no list of versions")
    for entry in versions:
        version = entry.get("version") if isinstance(entry, dict) else None
        if not isinstance(version, str) or not version:
            continue
        try:
            listing = api.get(f"/apis/{group}/{version}", timeout=30)
        except ApiError as exc:
            if exc.code == 404:   # listed a moment ago, gone now (a restart in between): the next one
                continue
            raise
        resources = listing.get("resources") if isinstance(listing, dict) else None
        if isinstance(resources, list) and any(isinstance(r, dict) and r.get("name") == resource for r in resources):
            return version
    return None
