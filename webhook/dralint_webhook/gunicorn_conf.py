"""gunicorn's configuration for admission traffic, and the application that runs it.

Choices, for the traffic an API server sends:

* our own worker (:mod:`.worker`): an event loop does the TLS handshakes and reads whole requests
  with time limits, a pool of threads judges them; workers (processes) use the cores, since
  judging is CPU-bound Python. The API server keeps a few long-lived HTTP/1.1 connections and
  sends many small requests on each.
* keep-alive longer than the API server's idle timeout (Go's transport: 90 s), so it is always
  the client that closes an idle connection: a server-side close racing a new POST would fail
  the call (POST is not retried).
* the engine is imported and warmed in the master before fork (``preload_app``), so workers
  share the catalog and compiled schemas copy-on-write and start answering at full speed; the
  warmed objects are frozen out of the garbage collector's sight (``gc.freeze``).
* TLS 1.2+ from the certificate files, re-read when they change (:mod:`.tls`), via the
  ``ssl_context`` hook that the worker calls for every new connection.
* SIGTERM: each worker drains without failing a call (:mod:`.worker`), within
  ``graceful_timeout``; the Pod's preStop pause plus that stays under its
  ``terminationGracePeriodSeconds``.
* ``--watch``: the master starts one cluster watcher process beside the workers
  (:class:`WebhookArbiter`), starts it again if it exits, and stops it once the workers are gone
  (they judge against its state until the end); the workers read what it publishes
  (:mod:`.live`). One list and watch per resource per replica. The watcher ends with the master
  however the master ends, SIGKILL included (:func:`spawn_watcher`).
"""
from __future__ import annotations

import ctypes
import gc
import logging
import os
import select
import signal
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from .app import Webhook, create_app
from .logs import LOGGER, log, logconfig_dict
from .manifests import TIMEOUT_SECONDS
from .metrics import Metrics
from .processes import assign_slot
from .watcher import WatchSettings
from .worker import worker_class

_log = logging.getLogger(LOGGER)
# A watcher that exits is started again, but not more often than this (a crash loop must not spin).
WATCHER_RESTART_SECONDS = 5.0

KEEPALIVE_SECONDS = 120
THREADS = 8
WORKER_CONNECTIONS = 256
# The Pod's preStop pause (5 s) plus this stays under its terminationGracePeriodSeconds (30 s); a
# worker normally drains in a second or two (worker.py), this bounds a slow one.
GRACEFUL_SECONDS = 20
# A watcher whose master is gone: how often it looks, and how long it has to stop before it is ended.
PARENT_POLL_SECONDS = 0.5
ORPHAN_EXIT_SECONDS = 5.0
# How long a stopping master waits for the watcher to stop before ending it.
WATCHER_STOP_SECONDS = 5.0
PR_SET_PDEATHSIG = 1    # linux/prctl.h


@dataclass(frozen=True)
class ServeOptions:
    bind: str = "0.0.0.0"
    port: int = 8443
    workers: int = 2
    threads: int = THREADS
    log_level: str = "info"
    health_port: int | None = None     # plain HTTP for probes and metrics, answered by each worker's loop


def bind_address(host: str, port: int) -> str:
    """``host:port``, with IPv6 addresses in brackets."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def settings(options: ServeOptions, hook: Webhook) -> dict[str, Any]:
    """gunicorn settings serving ``hook`` (hooks close over it: no module-level state)."""
    binds = [bind_address(options.bind, options.port)]
    if options.health_port:
        binds.append(bind_address(options.bind, options.health_port))
    out: dict[str, Any] = {
        "bind": binds,
        "workers": options.workers,
        # A review is answered before the API server gives up on the call: its ?timeout=, else TIMEOUT_SECONDS.
        "worker_class": worker_class(options.health_port, float(TIMEOUT_SECONDS)),
        "threads": options.threads,
        "worker_connections": WORKER_CONNECTIONS,
        "keepalive": KEEPALIVE_SECONDS,
        "timeout": 30,
        "graceful_timeout": GRACEFUL_SECONDS,
        "preload_app": True,
        "proc_name": "dralint-webhook",
        "logconfig_dict": logconfig_dict(options.log_level),
        "accesslog": None,
        "when_ready": lambda server: _master_ready(hook),
        # A worker's metrics and logs are labelled by a slot, not its pid: replacements reuse slots.
        "pre_fork": lambda server, worker: assign_slot(server.WORKERS.values(), worker),
        "post_fork": lambda server, worker: hook.start_worker(worker.slot),
        "worker_exit": lambda server, worker: hook.metrics.close(),
    }
    if hook.tls is not None:
        out["certfile"] = hook.tls.cert
        out["keyfile"] = hook.tls.key
        out["ssl_context"] = _ssl_context_hook(hook.tls.context)
    return out


def _master_ready(hook: Webhook) -> None:
    """In the master, once it listens and before the first fork."""
    if hook.settings.metrics_dir:
        # Listed among the replica's processes (the scrapes read its process_* numbers from /proc); it
        # serves nothing, so its listing has no gauges: a Metrics of its own, not the workers'.
        Metrics(hook.settings.metrics_dir).bind_process("master", follow=False)
    # The warmed catalog, schemas and CEL programs live for the whole process: freezing them before
    # fork keeps the collector from walking them (shorter pauses) and their pages shared.
    gc.freeze()


def _ssl_context_hook(current: Callable[[], ssl.SSLContext]) -> Callable[[Any, Any], ssl.SSLContext]:
    def ssl_context(config: Any, default_factory: Any) -> ssl.SSLContext:
        return current()
    return ssl_context


class WebhookArbiter(Arbiter):
    """gunicorn's master, also keeping the replica's one cluster watcher process running."""

    def __init__(self, app: Any, watch: WatchSettings | None) -> None:
        self._watch = watch
        self._watcher: tuple[int, int] | None = None     # its pid and the read end of a pipe it holds open
        self._watcher_started = float("-inf")
        super().__init__(app)

    def manage_workers(self) -> None:
        self._manage_watcher()
        super().manage_workers()

    def _manage_watcher(self) -> None:
        if self._watch is None:
            return
        if self._watcher is not None:
            pid, fd = self._watcher
            if not select.select([fd], [], [], 0)[0]:
                return          # the pipe is still open: the watcher is alive
            os.close(fd)
            self._watcher = None
            log(_log, logging.ERROR, "cluster watcher exited; starting a new one", pid=pid)
        if time.monotonic() - self._watcher_started < WATCHER_RESTART_SECONDS:
            return
        self._watcher_started = time.monotonic()
        self._watcher = spawn_watcher(self._watch, self.LISTENERS)

    def stop(self, graceful: bool = True) -> None:
        super().stop(graceful)
        if self._watcher is None:
            return
        pid, fd = self._watcher
        self._watcher = None
        # Waited for: the master's exit removes the folder the watcher writes into.
        try:
            os.kill(pid, signal.SIGTERM)
            if not select.select([fd], [], [], WATCHER_STOP_SECONDS)[0]:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(fd)


def spawn_watcher(settings: WatchSettings, listeners: list[Any]) -> tuple[int, int]:
    """Fork the watcher process; returns its pid and a pipe end that reads EOF once it is gone."""
    from . import watcher

    master = os.getpid()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_end)
        return pid, read_end
    code = 1
    try:
        os.close(read_end)
        for listener in listeners:   # the watcher serves nothing: it must not hold the port
            listener.close()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD, signal.SIGUSR1,
                    signal.SIGUSR2, signal.SIGTTIN, signal.SIGTTOU, signal.SIGWINCH):
            signal.signal(sig, signal.SIG_DFL)
        _exit_with(master)
        watcher.main(settings)
        code = 0
    finally:
        sys.stderr.flush()
        os._exit(code)


def _exit_with(master: int) -> None:
    """In the watcher: stop when ``master`` ends, however it ends (its watches must not outlive it).

    The kernel sends SIGTERM when the master dies (Linux's parent-death signal), which the watcher
    takes as its stop; a thread that sees the parent change covers other systems, a master that
    died before the signal was asked for, and a watcher that does not stop in time.
    """
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    threading.Thread(target=_orphan_exit, args=(master,), name="orphan", daemon=True).start()


def _orphan_exit(master: int) -> None:
    while os.getppid() == master:
        time.sleep(PARENT_POLL_SECONDS)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(ORPHAN_EXIT_SECONDS)
    os._exit(1)


class WebhookServer(BaseApplication):
    """gunicorn serving an already built (and warmed) :class:`Webhook`."""

    def __init__(self, hook: Webhook, options: ServeOptions, watch: WatchSettings | None = None) -> None:
        self._hook = hook
        self._options = options
        self._watch = watch
        super().__init__()

    def run(self) -> None:
        try:
            WebhookArbiter(self, self._watch).run()
        except RuntimeError as exc:
            log(_log, logging.ERROR, f"gunicorn: {exc}")
            sys.exit(1)

    def load_config(self) -> None:
        for key, value in settings(self._options, self._hook).items():
            self.cfg.set(key, value)
        # Recent gunicorn releases (27 here) open a control socket under $HOME by default; the root
        # filesystem is read-only in the Pod and nothing here uses it. Older releases have no such setting.
        if "control_socket_disable" in self.cfg.settings:
            self.cfg.set("control_socket_disable", True)

    def load(self) -> Any:
        return create_app(self._hook)
