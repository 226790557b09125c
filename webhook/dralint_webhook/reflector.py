"""List and watch one resource, the way client-go's reflector does, into the :class:`~.store.Store`.

* A paginated list (``limit``/``continue``) gives every object and the list's resourceVersion.
* A watch from that resourceVersion, with bookmarks (``allowWatchBookmarks``), applies each event
  and moves the position; when the server ends the watch (its ``timeoutSeconds``), the next one
  starts at once from the last position, without a list.
* An expired position arrives as HTTP 200 and then an ``ERROR`` event carrying Status 410
  ``Expired`` (or as HTTP 410): that is answered with a full list again (an expired ``continue``
  starts the list over at once).
* Backoff as client-go's (``NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)``): before
  every list but the first and after every failure the reflector waits, the step doubling from
  0.8 s to 30 s and each wait between the step and twice it; two minutes without a wait start it
  over. Failures: the server unreachable, a 5xx or 429, a stream cut in the middle of an event or
  stalled, and a watch that ends within a second without an event (client-go's "very short
  watch"). After one, the reflector watches again from its position (a list only if that has
  expired); the objects stay as they were meanwhile. Each retry is logged with its reason.
* Back after an outage: a reflector whose request got no answer at all (the server down) stops
  waiting as soon as another request of the same watcher is answered, so every resource catches
  up with the first one that gets through instead of each at the end of its own capped wait.
  The API server sees at most one request per resource more for each answer.
* A stalled stream (the connection open, no byte coming): until a watch has delivered a bookmark,
  no byte for its ``timeoutSeconds`` plus ``read_margin`` ends it; from its first bookmark on,
  no byte for :data:`STALL_FACTOR` times the API server's bookmark interval (its watch cache sends
  one about every minute) does.
* 401 and 403 mark the resource *denied*, with a message naming the missing permission, and list
  it again after the wait (a 401 also makes the next request load the credentials again).
* Every item of a list and every watch event is read with :mod:`dralint.gojson`, as the API
  server's own decoder reads it. One that cannot be read even so, or that the store cannot keep,
  is skipped, counted and logged with its namespace/name; a list page that does not decode as a
  whole is split item by item (:mod:`.jsonscan`). Nothing here raises out of :meth:`Reflector.run`.
* An optional resource (one a feature gate serves, in a version of its own) is first looked up in
  discovery (:func:`served_version`). Not served: the store knows it has no objects, and discovery
  is asked again every ``Timing.rediscover`` seconds. A 404 later (the API server restarted with
  the gate off) looks it up again.
"""
from __future__ import annotations

import builtins  # the class has a method named list: annotations inside it name the type explicitly
import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from dralint import gojson
from dralint.cluster.api import Api, ApiError, Unreachable
from dralint.cluster.discovery import group_versions, version_resources

from . import jsonscan
from .logs import LOGGER, log
from .store import GROUP_OF, Store, Unstorable, encode_page, permission, version_of

_log = logging.getLogger(LOGGER)
PAGE_SIZE = 500
# After a watch's first bookmark, this many bookmark intervals without a byte mean a dead connection.
STALL_FACTOR = 2.5
# While waiting out a backoff after an unanswered request: how often to look whether the server is back.
WAKE_POLL = 0.25
EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR")


@dataclass(frozen=True)
class Timing:
    """How long to wait for what (tests shorten them)."""

    watch_seconds: tuple[int, int] = (300, 600)   # the server ends each watch after a random time in this range
    read_margin: float = 30.0                     # before a bookmark: no byte for the watch's time plus this is dead
    bookmark_interval: float = 60.0               # the API server's watch cache sends a bookmark about this often
    list_timeout: float = 60.0
    backoff_initial: float = 0.8
    backoff_max: float = 30.0
    backoff_reset: float = 120.0                  # this long without a wait: the backoff starts over
    short_watch: float = 1.0                      # a watch ending sooner without an event is a failure
    rediscover: float = 600.0                     # an optional resource not served: look again after this


class Backoff:
    """client-go's backoff manager: the step doubles from ``initial`` up to ``cap``, each wait is
    between the step and twice it (jitter), and ``reset`` seconds after the last wait began the
    next one starts from ``initial`` again."""

    def __init__(self, initial: float, cap: float, reset: float = 120.0, rand: Callable[[], float] = random.random,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.initial, self.cap, self.reset = initial, cap, reset
        self._rand, self._clock = rand, clock
        self._step = initial
        self._last: float | None = None

    def next(self) -> float:
        """The wait before the next try."""
        now = self._clock()
        if self._last is not None and now - self._last > self.reset:
            self._step = self.initial
        self._last = now
        step, self._step = self._step, min(self.cap, self._step * 2)
        return step * (1.0 + self._rand())


class Expired(Exception):
    """The position to watch (or list) from is gone: list again."""


class Unreadable(ValueError):
    """A watch event that cannot be read: it is skipped."""


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
        self.backoff = Backoff(timing.backoff_initial, timing.backoff_max, timing.backoff_reset, rand)
        self.lists = 0      # full lists done, the first included

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
                        self.stop.wait(self.timing.rediscover)
                        continue
                    log(_log, logging.INFO, "cluster watch found an optional resource", resource=self.resource,
                        version=self.version)
                if position is None:
                    position = self.list()
                position = self.watch(position)
            except Expired as exc:
                position = None
                self.store.watching(self.resource, False)
                self._retry(logging.INFO, f"the watch position expired: {str(exc)[:300]}", relist=True)
            except ApiError as exc:
                if exc.code in (401, 403, 404):
                    position = None
                self._failed(exc, relist=position is None)
                if exc.code == 404 and self._find_version is not None:
                    self._use(None)   # no longer served in that version (or at all): look it up again
            except Unreachable as exc:
                self._failed(exc, relist=position is None)
            except Exception as exc:  # a bug here must not end the watch: log it and start over
                log(_log, logging.ERROR, "cluster watch failed unexpectedly", exc_info=True, resource=self.resource)
                position = None
                self._failed(exc, relist=True)

    def list(self) -> str:
        """Every object, page by page; the resourceVersion to watch from."""
        # Each page is kept as the store keeps it as soon as it arrives: never a whole list of parsed objects.
        started = time.monotonic()
        items: dict[str, tuple[str, bytes]] = {}
        unstorable: list[Unstorable] = []
        params: dict[str, Any] = {"limit": PAGE_SIZE}
        while True:
            try:
                body = self.api.get_bytes(self.path, params, timeout=self.timing.list_timeout)
            except ApiError as exc:
                if exc.code == 410 and "continue" in params:
                    # The continue token outlived the server's compaction: start the list over.
                    items, unstorable, params = {}, [], {"limit": PAGE_SIZE}
                    continue
                raise
            meta, page_items = self._page(body)
            kept, left_out = encode_page(self.resource, page_items, self.api_version)
            items.update(kept)
            unstorable += left_out
            token = meta.get("continue")
            if not token:
                version = str(meta.get("resourceVersion") or "")
                self.store.replace(self.resource, items, version, self.api_version)
                # Every list is logged, relists above all: each is the whole resource again from the API server.
                log(_log, logging.INFO, "cluster watch listed", resource=self.resource, relist=self.lists > 0,
                    objects=len(items), resource_version=version, seconds=round(time.monotonic() - started, 3))
                self.lists += 1
                for problem in unstorable:
                    self._skip(problem.key, f"cannot be stored: {problem.reason}")
                return version
            params = {"limit": PAGE_SIZE, "continue": token}

    def _page(self, body: bytes) -> tuple[dict[str, Any], builtins.list[dict[str, Any]]]:
        """The metadata and the items of one list page; an item that cannot be read is skipped."""
        try:
            page = gojson.loads(body)
            items = page.get("items") if isinstance(page, dict) else None
        except gojson.GoJSONError as exc:
            # One item Go's decoder would refuse (no API server sends one) must not cost the others.
            try:
                page, texts = jsonscan.split_items(body)
            except ValueError:
                raise Unreachable(f"GET {self.path}: the answer is not JSON ({exc})") from None
            items = []
            for text in texts:
                try:
                    items.append(gojson.loads(text))
                except gojson.GoJSONError as item_exc:
                    self._skip(jsonscan.identity(text), f"not JSON: {item_exc}")
        meta = page.get("metadata") if isinstance(page, dict) else None
        if not isinstance(meta, dict) or not isinstance(items, list):
            raise Unreachable(f"GET {self.path}: the answer is not a list")
        kept = [item for item in items if isinstance(item, dict)]
        for _ in range(len(items) - len(kept)):
            self._skip("", "a list item that is not an object")
        return meta, kept

    def watch(self, position: str) -> str:
        """One watch from ``position`` until the server ends it; the position reached."""
        low, high = self.timing.watch_seconds
        seconds = low + int((high - low) * self._rand())
        params = {"watch": "1", "resourceVersion": position, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(seconds)}
        started = time.monotonic()
        received = 0
        bookmarked = False
        try:
            stream = self.api.watch(self.path, params, timeout=seconds + self.timing.read_margin)
        except ApiError as exc:
            if exc.code == 410:
                raise Expired(exc.message) from None
            raise
        with stream:
            self.store.watching(self.resource, True)
            for line in stream.lines():
                received += 1
                try:
                    kind, obj = self._event(line)
                except Unreadable as exc:
                    self._skip(jsonscan.identity(line), str(exc))
                    continue
                if kind == "ERROR":
                    error = ApiError.from_status(500, obj)
                    if error.code == 410:
                        raise Expired(error.message)
                    raise error
                if kind == "BOOKMARK" and not bookmarked:
                    # From here on the server sends a bookmark about every interval: a silence several
                    # times as long is a dead connection, long before the watch's own timeout.
                    stream.read_timeout(STALL_FACTOR * self.timing.bookmark_interval)
                    bookmarked = True
                try:
                    self.store.apply(self.resource, kind, obj, self.api_version)
                except Unstorable as exc:
                    self._skip(exc.key, f"cannot be stored: {exc.reason}")
                position = version_of(obj) or position
                if self.stop.is_set():
                    break
        lasted = time.monotonic() - started
        if not received and lasted < self.timing.short_watch and not self.stop.is_set():
            raise Unreachable(f"watch {self.path}: ended after {lasted:.2f} s without an event")
        return position

    def _event(self, line: bytes) -> tuple[str, dict[str, Any]]:
        """The type and object of one watch event; raises :class:`Unreadable`."""
        try:
            event = gojson.loads(line)
        except gojson.GoJSONError as exc:
            raise Unreadable(f"not JSON: {exc}") from None
        kind = event.get("type") if isinstance(event, dict) else None
        obj = event.get("object") if isinstance(event, dict) else None
        if not isinstance(obj, dict):
            raise Unreadable("a watch event without an object")
        if kind not in EVENT_TYPES:
            raise Unreadable(f"a watch event of type {str(kind)[:40]!r}")
        return kind, obj

    def _skip(self, who: object, reason: str) -> None:
        """Count and log one list item or watch event left out; ``who`` names it as far as known."""
        self.store.skipped(self.resource)
        fields: dict[str, Any] = {"resource": self.resource, "object": str(who) or "(unknown)", "reason": reason}
        if isinstance(who, jsonscan.Identity) and who.resource_version:
            fields["resource_version"] = who.resource_version
        log(_log, logging.WARNING, "cluster watch skipped an object it cannot read", **fields)

    def _failed(self, exc: Exception, *, relist: bool) -> None:
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
        self._retry(logging.WARNING, message, relist=relist,
                    until_answered=isinstance(exc, Unreachable) and exc.unanswered)

    def _retry(self, level: int, reason: str, *, relist: bool, until_answered: bool = False) -> None:
        """Wait the backoff out (logged with ``reason``) before the next list or watch; with
        ``until_answered``, only until another request of the watcher is answered."""
        wait = self.backoff.next()
        log(_log, level, "cluster watch interrupted; listing again" if relist else
            "cluster watch interrupted; watching again from its position", resource=self.resource, reason=reason,
            retry_seconds=round(wait, 2))
        if not until_answered:
            self.stop.wait(wait)
            return
        failed = time.monotonic()
        end = failed + wait
        while (left := end - time.monotonic()) > 0 and not self.stop.wait(min(left, WAKE_POLL)):
            if self.api.answered > failed:
                return


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
    for version, names in version_resources(api, group, group_versions(api, group)):
        if resource in names:
            return version
    return None
