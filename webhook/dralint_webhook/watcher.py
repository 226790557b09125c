"""The replica's one watcher: a reflector per resource, publishing the state to the workers' folder.

gunicorn's master starts it as a child process (:class:`.gunicorn_conf.WebhookArbiter`) and starts
it again if it ever exits; the workers never talk to the API server. :func:`run` is its whole
life: load the endpoint, find the served version of ``resource.k8s.io``, start one reflector
thread per resource, then write ``status.json`` every second and the ``state`` file whenever the
state changed (at most every ``interval``). A failure to reach or to be allowed by the API
server is written into the status (the workers' ``/readyz`` shows it); nothing ends the loop but
``stop``.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dralint import gojson

from .kube import Api, ApiError, Endpoint, Unreachable, load_endpoint
from .logs import LOGGER, log
from .reflector import Backoff, Reflector, Timing, discover_version, served_version
from .snapshot import write_state, write_status
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
            api = Api(endpoint)
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
    problem = ""
    reflectors = [_reflector(api, store, name, version, timing, stop) for name, *_ in RESOURCES]
    for r in reflectors:
        threading.Thread(target=r.run, name=f"watch-{r.resource}", daemon=True).start()
    log(_log, logging.INFO, "cluster watcher started", host=api.endpoint.host, version=version)
    written, beat, synced_at = -1, 0.0, 0
    while not stop.is_set():
        generation, status, rows = store.view() if store.generation != written else (written, None, None)
        now = time.monotonic()
        if rows is not None:
            write_state(folder, generation, sorted(rows))
            written = generation
            if not synced_at and status and all(settled(name, r) for name, r in status.items()):
                synced_at = generation   # the first state with every resource listed: workers wait for it
        if rows is not None or now - beat >= HEARTBEAT_SECONDS:
            _heartbeat(folder, store, problem, synced_at)
            beat = now
        stop.wait(settings.interval)
    return store


def _reflector(api: Api, store: Store, name: str, version: str, timing: Timing, stop: threading.Event) -> Reflector:
    """The reflector of one resource: core ones in v1, the group's in ``version``, an optional one in
    whichever version discovery finds serving it."""
    if name in OPTIONAL:
        return Reflector(api, store, name, None, timing=timing, stop=stop,
                         find_version=lambda: served_version(api, GROUP_OF[name], name))
    return Reflector(api, store, name, version if GROUP_OF[name] else "v1", timing=timing, stop=stop)


def _endpoint(settings: WatchSettings) -> Endpoint:
    return load_endpoint(settings.kubeconfig, settings.context)


def _heartbeat(folder: Path, store: Store, problem: str, synced_at: int = 0) -> None:
    write_status(folder, {"pid": os.getpid(), "time": time.time(), "generation": store.generation,
                          "synced_at": synced_at, "problem": problem, "resources": store.status()})


def main(settings: WatchSettings) -> None:
    """The watcher process: run until SIGTERM."""
    import signal

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        run(settings, stop)
    except Exception:  # logged for the admin; the master starts a new watcher
        log(_log, logging.ERROR, "cluster watcher failed", exc_info=True)
        raise
