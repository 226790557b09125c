"""The replica's one watcher: a reflector per resource, publishing the state to the workers' folder.

gunicorn's master starts it as a child process (:class:`.gunicorn_conf.WebhookArbiter`) and starts
it again if it ever exits; the workers never talk to the API server. :func:`run` is its whole
life: load the endpoint, find the served version of ``resource.k8s.io``, read the API server's
release (``/version``, read again every ``Timing.rediscover``; :mod:`.kubeversion` says what the
workers do with it), start one reflector thread per resource, then write ``status.json`` every
second and publish the state (:mod:`.snapshot`): a first snapshot once every resource is listed,
then each interval's changed objects as a batch of the log, compacted into a new snapshot now and
then. A failure to reach or to be allowed by the API server is written into the status (the
workers' ``/readyz`` shows it). Nothing ends the loop but ``stop``, or the watcher's resident
memory over ``max_memory``: then it returns, the process exits and gunicorn's master starts a new
one; the workers judge with the last state they read until the new watcher has listed everything
again and published its first snapshot.
"""
from __future__ import annotations

import ctypes
import gc
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from dralint import gojson
from dralint.cluster.api import Api, ApiError, Endpoint, Unreachable, load_endpoint
from dralint.cluster.discovery import server_minor

from .guard import resident_bytes
from .logs import LOGGER, identify, log
from .metrics import Metrics
from .reflector import Backoff, Reflector, Timing, discover_version, served_version
from .snapshot import Publisher, write_status
from .store import GROUP_OF, OPTIONAL, RESOURCES, Store, settled

_log = logging.getLogger(LOGGER)
HEARTBEAT_SECONDS = 1.0


@dataclass(frozen=True)
class WatchSettings:
    """Where the API server is (``kubeconfig`` None: in the cluster) and where to publish."""

    folder: str
    kubeconfig: str | None = None
    context: str | None = None
    interval: float = 0.5
    timing: Timing = Timing()
    max_memory: int = 0         # bytes of resident memory; over it the watcher exits to be started again (0: none)
    metrics_dir: str | None = None   # the replica's metrics folder: the watcher is listed there among its processes


class ServerVersion:
    """The API server's release, as its ``/version`` says; read by one thread, shown in the heartbeat."""

    def __init__(self, api: Api) -> None:
        self._api = api
        self.seen: dict[str, Any] = {}      # {"minor": 36, "gitVersion": "v1.36.2"}; empty until read

    def read(self) -> None:
        """Read ``/version`` again; a failure keeps what was read before (logged: the workers then judge
        with the policy's release, or dralint's default)."""
        try:
            info = self._api.get("/version", timeout=10.0)
        except (ApiError, Unreachable) as exc:
            log(_log, logging.WARNING, "cannot read the API server's /version; its release stays unknown",
                error=str(exc)[:300])
            return
        minor = server_minor(info) if isinstance(info, dict) else None
        seen = {"minor": minor, "gitVersion": str(info.get("gitVersion") or "") if isinstance(info, dict) else ""}
        if seen != self.seen:
            log(_log, logging.INFO, "API server release", git_version=seen["gitVersion"],
                release=f"1.{minor}" if minor is not None else "unknown")
        self.seen = seen

    def follow(self, every: float, stop: threading.Event) -> None:
        """Read it again every ``every`` seconds until ``stop`` (a control plane upgraded under the watcher)."""
        while not stop.wait(every):
            self.read()


def run(settings: WatchSettings, stop: threading.Event,
        endpoint_of: Callable[[WatchSettings], Endpoint] | None = None) -> Store:
    """Watch until ``stop`` is set; returns the store (tests look at it)."""
    # Before the reflectors' threads start: list pages and events carry objects as deep as the API
    # server stores them (tests and benches call run() without main()).
    gojson.allow_deep_values()
    folder = Path(settings.folder)
    folder.mkdir(parents=True, exist_ok=True)
    store = Store()
    problem = ""
    timing = settings.timing
    backoff = Backoff(timing.backoff_initial, timing.backoff_max, timing.backoff_reset)
    api: Api | None = None
    while api is None and not stop.is_set():
        try:
            endpoint = (endpoint_of or _endpoint)(settings)
            api = Api(endpoint, user_agent="dralint-webhook", on_reload_error=_reload_failed)
            version = discover_version(api, "resource.k8s.io")
        except (ValueError, OSError, ApiError, Unreachable) as exc:
            problem = f"cannot reach the API server: {str(exc)[:500]}"
            if isinstance(exc, ApiError) and exc.code in (401, 403):
                problem = (f"the API server refused the webhook's credentials ({exc.code} {exc.reason}) when "
                           "discovering resource.k8s.io")
            elif isinstance(exc, ApiError) and exc.code == 404:
                problem = "the API server does not serve resource.k8s.io (Dynamic Resource Allocation is off)"
            log(_log, logging.WARNING, "cluster watcher cannot start; trying again", error=problem)
            _heartbeat(folder, store, problem)
            api = None
            stop.wait(backoff.next())
    if api is None:
        return store
    server = ServerVersion(api)
    server.read()
    threading.Thread(target=server.follow, args=(timing.rediscover, stop), name="watch-version", daemon=True).start()
    reflectors = [_reflector(api, store, name, version, timing, stop) for name, *_ in RESOURCES]
    for r in reflectors:
        threading.Thread(target=r.run, name=f"watch-{r.resource}", daemon=True).start()
    log(_log, logging.INFO, "cluster watcher started", host=api.endpoint.host, version=version)
    publisher = Publisher(folder)
    try:
        _publish(store, publisher, settings, stop, server)
    finally:
        publisher.close()
    return store


def _publish(store: Store, publisher: Publisher, settings: WatchSettings, stop: threading.Event,
             server: ServerVersion) -> None:
    """Publish the store until ``stop`` is set, or until the watcher is over its memory ceiling."""
    folder = Path(settings.folder)
    beat, synced_at = 0.0, 0
    while not stop.is_set():
        published = False
        if not synced_at:
            # Nothing before every resource is listed: the workers keep the state they have (a watcher
            # started again) rather than judge against a cluster without its claims.
            if all(settled(name, r) for name, r in store.status().items()):
                publisher.snapshot(store.drain(every=True).rows or [])
                synced_at = publisher.generation   # the workers wait for this state
                published = True
        else:
            compact = publisher.compaction_due()
            drained = store.drain(every=compact)
            if drained.changes:
                publisher.append(drained.changes)
                published = True
            if drained.rows is not None:
                publisher.snapshot(drained.rows)
        now = time.monotonic()
        if published or now - beat >= HEARTBEAT_SECONDS:
            _heartbeat(folder, store, "", synced_at, publisher.generation, server.seen)
            beat = now
            if settings.max_memory and _over(settings.max_memory):
                return
        stop.wait(settings.interval)


def _over(ceiling: int) -> bool:
    """Whether resident memory stays over ``ceiling`` once freed memory is given back (logged when it does)."""
    if resident_bytes() <= ceiling:
        return False
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)   # glibc keeps freed memory otherwise
    except (OSError, AttributeError):
        pass
    resident = resident_bytes()
    if resident <= ceiling:
        return False
    log(_log, logging.ERROR, "cluster watcher over its memory ceiling; exiting to be started again",
        resident_mib=resident // 2**20, ceiling_mib=ceiling // 2**20)
    return True


def _reflector(api: Api, store: Store, name: str, version: str, timing: Timing, stop: threading.Event) -> Reflector:
    """The reflector of one resource: core ones in v1, the group's in ``version``, an optional one in
    whichever version discovery finds serving it."""
    if name in OPTIONAL:
        return Reflector(api, store, name, None, timing=timing, stop=stop,
                         find_version=lambda: served_version(api, GROUP_OF[name], name))
    return Reflector(api, store, name, version if GROUP_OF[name] else "v1", timing=timing, stop=stop)


def _endpoint(settings: WatchSettings) -> Endpoint:
    return load_endpoint(settings.kubeconfig, settings.context)


def _reload_failed(error: str) -> None:
    """After a 401, the credentials could not be loaded again: the old ones stay, the 401 is reported."""
    log(_log, logging.WARNING, "cannot load the API server credentials again", error=error)


def _heartbeat(folder: Path, store: Store, problem: str, synced_at: int = 0, published: int = 0,
               server: dict[str, Any] | None = None) -> None:
    """The status the workers read: ``published`` is the generation of the last state published to
    them, ``server`` what the API server's ``/version`` said."""
    write_status(folder, {"pid": os.getpid(), "time": time.time(), "generation": store.generation,
                          "synced_at": synced_at, "published": published, "problem": problem,
                          "resources": store.status(), "server": server or {}})


def main(settings: WatchSettings) -> None:
    """The watcher process: run until SIGTERM."""
    import signal

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    identify("watcher")
    if settings.metrics_dir:
        # Listed once: its process_* numbers are read from /proc by the scrapes, its watch from status.json.
        Metrics(settings.metrics_dir).bind_process("watcher", follow=False)
    try:
        run(settings, stop)
    except Exception:  # logged for the admin; the master starts a new watcher
        log(_log, logging.ERROR, "cluster watcher failed", exc_info=True)
        raise
