"""gunicorn's configuration for admission traffic, and the application that runs it.

Choices, for the traffic an API server sends:

* ``gthread`` workers: the API server keeps a few long-lived HTTP/1.1 connections and sends
  many small requests on each. Threads serve connections concurrently within a worker; workers
  (processes) use the cores, since judging is CPU-bound Python.
* keep-alive longer than the API server's idle timeout (Go's transport: 90 s), so it is always
  the client that closes an idle connection: a server-side close racing a new POST would fail
  the call (POST is not retried).
* the engine is imported and warmed in the master before fork (``preload_app``), so workers
  share the catalog and compiled schemas copy-on-write and start answering at full speed; the
  warmed objects are frozen out of the garbage collector's sight (``gc.freeze``).
* TLS 1.2+ from the certificate files, re-read when they change (:mod:`.tls`), via the
  ``ssl_context`` hook that gthread calls for every new connection.
* SIGTERM: gunicorn stops accepting, lets in-flight reviews finish within ``graceful_timeout``
  (the webhook's own timeout: the API server gives up on a call after that anyway) and exits.
"""
from __future__ import annotations

import gc
import ssl
from dataclasses import dataclass
from typing import Any, Callable

from gunicorn.app.base import BaseApplication

from .app import Webhook, create_app
from .logs import logconfig_dict
from .manifests import TIMEOUT_SECONDS

KEEPALIVE_SECONDS = 120
THREADS = 8
WORKER_CONNECTIONS = 256


@dataclass(frozen=True)
class ServeOptions:
    bind: str = "0.0.0.0"
    port: int = 8443
    workers: int = 2
    threads: int = THREADS
    log_level: str = "info"


def bind_address(host: str, port: int) -> str:
    """``host:port``, with IPv6 addresses in brackets."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def settings(options: ServeOptions, hook: Webhook) -> dict[str, Any]:
    """gunicorn settings serving ``hook`` (hooks close over it: no module-level state)."""
    out: dict[str, Any] = {
        "bind": [bind_address(options.bind, options.port)],
        "workers": options.workers,
        "worker_class": "gthread",
        "threads": options.threads,
        "worker_connections": WORKER_CONNECTIONS,
        "keepalive": KEEPALIVE_SECONDS,
        "timeout": 30,
        "graceful_timeout": TIMEOUT_SECONDS,
        "preload_app": True,
        "proc_name": "dralint-webhook",
        "logconfig_dict": logconfig_dict(options.log_level),
        "accesslog": None,
        # The warmed catalog, schemas and CEL programs live for the whole process: freezing them before
        # fork keeps the collector from walking them (shorter pauses) and their pages shared.
        "when_ready": lambda server: gc.freeze(),
        "post_fork": lambda server, worker: hook.metrics.bind_process(),
        "worker_exit": lambda server, worker: hook.metrics.close(),
    }
    if hook.tls is not None:
        out["certfile"] = hook.tls.cert
        out["keyfile"] = hook.tls.key
        out["ssl_context"] = _ssl_context_hook(hook.tls.context)
    return out


def _ssl_context_hook(current: Callable[[], ssl.SSLContext]) -> Callable[[Any, Any], ssl.SSLContext]:
    def ssl_context(config: Any, default_factory: Any) -> ssl.SSLContext:
        return current()
    return ssl_context


class WebhookServer(BaseApplication):
    """gunicorn serving an already built (and warmed) :class:`Webhook`."""

    def __init__(self, hook: Webhook, options: ServeOptions) -> None:
        self._hook = hook
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in settings(self._options, self._hook).items():
            self.cfg.set(key, value)
        # Recent gunicorn releases (27 here) open a control socket under $HOME by default; the root
        # filesystem is read-only in the Pod and nothing here uses it. Older releases have no such setting.
        if "control_socket_disable" in self.cfg.settings:
            self.cfg.set("control_socket_disable", True)

    def load(self) -> Any:
        return create_app(self._hook)
