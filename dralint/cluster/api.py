"""Talking to the Kubernetes API server: where it is, who we are, one GET at a time, and whole lists.

Configuration and credentials come from the official ``kubernetes`` client
(``load_incluster_config`` / ``load_kube_config``): the service account's token, re-read as the
kubelet rotates it, and every kubeconfig form (client certificates, exec plugins, OIDC). A 401
loads them again at once (the token file, an exec plugin's token) instead of waiting for the
client's own refresh period. The requests themselves go through ``urllib3`` (the official
client's own transport), built from that configuration: the webhook's watcher needs raw bytes, line
by line, under its own timeouts, not the generated models (docs/webhook-cluster-state.md says why
and what was measured). Bodies are read with :mod:`dralint.gojson`, as the API server's own
decoder reads them.

Both packages come with the ``cluster`` extra (``pip install 'dralint[cluster]'``) and are imported
only when a connection is made. This module is shared by the ``dralint`` command's live cluster
(:mod:`dralint.cluster.state`) and the webhook's watcher, whose reflector does its own lists and
watches; :func:`list_all` is the one-shot list the command uses."""
from __future__ import annotations

import logging
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator
from urllib.parse import urlencode

from dralint import gojson

_log = logging.getLogger(__name__)
# An answer larger than this is not one the watcher asked for (a list page holds at most 500 objects).
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024 * 1024


class ApiError(Exception):
    """The API server answered, with a status other than 200 (or a watch ``ERROR`` event)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}" if message else f"{code} {reason}")
        self.code = code
        self.reason = reason
        self.message = message

    @classmethod
    def from_status(cls, code: int, body: Any) -> "ApiError":
        """From an HTTP status and the ``metav1.Status`` body the API server sends with it (if any)."""
        if isinstance(body, dict) and body.get("kind") == "Status":
            reported = body.get("code")
            status_code = reported if isinstance(reported, int) else code
            return cls(status_code, str(body.get("reason") or ""), str(body.get("message") or ""))
        return cls(code, "", "")


class Unreachable(Exception):
    """No answer: connection refused, TLS failure, a timeout, a stream cut short or stalled.

    ``unanswered``: the request got no answer at all, and not for want of patience (refused,
    dropped, no route): the API server itself is down or out of reach, not merely slow.
    """

    def __init__(self, message: str, *, unanswered: bool = False) -> None:
        super().__init__(message)
        self.unanswered = unanswered


@dataclass(frozen=True)
class Endpoint:
    """Where the API server is and how to authenticate, from the official client's configuration."""

    host: str
    ca_file: str | None
    verify: bool
    cert_file: str | None
    key_file: str | None
    server_name: str | None
    config: Any   # kubernetes.client.Configuration: asked for the bearer token on each request (rotation)
    # Loads the configuration into ``config`` again (raises ValueError); None: nothing to reload.
    reload: Callable[[Any], None] | None = field(default=None, compare=False, repr=False)

    def authorization(self) -> str | None:
        """The ``Authorization`` header value (re-read when the official client refreshes it)."""
        if self.config is None:
            return None
        # auth_settings() asks the refresh hook first (a rotated service-account token, an expired exec token).
        bearer = self.config.auth_settings().get("BearerToken")
        value = bearer.get("value") if isinstance(bearer, dict) else None
        return value if isinstance(value, str) and value else None


def load_endpoint(kubeconfig: str | None, context: str | None = None) -> Endpoint:
    """The in-cluster endpoint (``kubeconfig`` None) or a kubeconfig file's; raises ``ValueError``."""
    from kubernetes import client   # the watcher process only: ~40 MB and ~0.8 s to import

    configuration = client.Configuration()
    load = _loader(kubeconfig, context)
    load(configuration)
    return Endpoint(host=configuration.host.rstrip("/"), ca_file=configuration.ssl_ca_cert,
                    verify=bool(configuration.verify_ssl), cert_file=configuration.cert_file,
                    key_file=configuration.key_file,
                    server_name=getattr(configuration, "tls_server_name", None), config=configuration, reload=load)


def _loader(kubeconfig: str | None, context: str | None) -> Callable[[Any], None]:
    """What loads the address and credentials into a ``Configuration``: the Pod's service account or a kubeconfig."""
    from kubernetes import config

    def load(configuration: Any) -> None:
        try:
            if kubeconfig is None:
                config.load_incluster_config(client_configuration=configuration)
            else:
                config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration,
                                        persist_config=False)
        except (config.ConfigException, OSError, KeyError, TypeError) as exc:
            where = "the Pod's service account" if kubeconfig is None else f"kubeconfig {kubeconfig}"
            raise ValueError(f"cannot load the API server's address and credentials from {where}: {exc}") from None

    return load


class Api:
    """GET requests to one API server over one pool of kept-alive connections (thread-safe)."""

    def __init__(self, endpoint: Endpoint, *, connect_timeout: float = 5.0, user_agent: str = "dralint",
                 on_reload_error: Callable[[str], None] | None = None) -> None:
        """``on_reload_error`` is told why credentials could not be loaded again after a 401 (default: a
        warning on this module's logger); the old credentials stay either way."""
        import urllib3

        self.endpoint = endpoint
        self._connect_timeout = connect_timeout
        self._user_agent = user_agent
        context = ssl.create_default_context(cafile=endpoint.ca_file) if endpoint.verify else \
            ssl._create_unverified_context()   # noqa: S323 - the kubeconfig said insecure-skip-tls-verify
        if endpoint.cert_file and endpoint.key_file:
            context.load_cert_chain(endpoint.cert_file, endpoint.key_file)
        kwargs: dict[str, Any] = {"ssl_context": context, "maxsize": 8, "retries": False}
        if endpoint.server_name:
            kwargs["server_hostname"] = endpoint.server_name
        self._pool = urllib3.PoolManager(**kwargs)
        self._urllib3 = urllib3
        self._credentials = threading.Lock()
        self._credentials_loaded = time.monotonic()
        self._on_reload_error = on_reload_error or _warn_reload
        self.answered = 0.0   # time.monotonic() of the last answer, of any status, to any request

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        auth = self.endpoint.authorization()
        if auth:
            headers["Authorization"] = auth
        return headers

    def _open(self, path: str, params: dict[str, Any], read_timeout: float) -> Any:
        url = f"{self.endpoint.host}{path}"
        if params:
            url += "?" + urlencode(params)
        timeout = self._urllib3.Timeout(connect=self._connect_timeout, read=read_timeout)
        sent = time.monotonic()
        try:
            resp = self._pool.request("GET", url, headers=self._headers(), timeout=timeout, preload_content=False,
                                      redirect=False)
        except self._urllib3.exceptions.HTTPError as exc:
            slow = isinstance(exc, self._urllib3.exceptions.ReadTimeoutError)
            raise Unreachable(f"GET {path}: {exc}", unanswered=not slow) from None
        self.answered = time.monotonic()
        if resp.status == 401:
            self._reload_credentials(sent)
        return resp

    def _reload_credentials(self, sent: float) -> None:
        """After a 401 to a request sent at ``sent``: load the credentials again, unless another
        thread did so since (its next request already carries the new ones)."""
        if self.endpoint.reload is None:
            return
        with self._credentials:
            if self._credentials_loaded > sent:
                return
            try:
                self.endpoint.reload(self.endpoint.config)
            except ValueError as exc:   # the old credentials stay; the 401 is reported by the caller
                self._on_reload_error(str(exc))
            self._credentials_loaded = time.monotonic()

    def get_bytes(self, path: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0) -> bytes:
        """The body of a 200 answer; raises :class:`ApiError` or :class:`Unreachable`."""
        resp = self._open(path, params or {}, timeout)
        try:
            body = _read_all(resp, self._urllib3)
        except Unreachable:
            _discard(resp)
            raise
        resp.release_conn()
        if resp.status != 200:
            raise ApiError.from_status(resp.status, _decode(body))
        return body

    def get(self, path: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0) -> Any:
        """The decoded JSON body of a 200 answer; raises :class:`ApiError` or :class:`Unreachable`."""
        decoded = _decode(self.get_bytes(path, params, timeout=timeout))
        if decoded is None:
            raise Unreachable(f"GET {path}: the answer is not JSON")
        return decoded

    def watch(self, path: str, params: dict[str, Any], *, timeout: float) -> "Watch":
        """An open watch stream (HTTP 200); a status other than 200 raises :class:`ApiError`.

        ``timeout`` bounds the wait for each read until :meth:`Watch.read_timeout` changes it.
        """
        resp = self._open(path, params, timeout)
        if resp.status != 200:
            try:
                body = _read_all(resp, self._urllib3)
            finally:
                _discard(resp)
            raise ApiError.from_status(resp.status, _decode(body))
        return Watch(resp, path, timeout, self._urllib3)

    def close(self) -> None:
        self._pool.clear()


class Watch:
    """One watch response, read line by line; its connection is closed when it ends, never reused."""

    def __init__(self, resp: Any, path: str, timeout: float, urllib3: Any) -> None:
        self._resp = resp
        self._path = path
        self._timeout = timeout
        self._urllib3 = urllib3

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def lines(self) -> Iterator[bytes]:
        """Each non-empty line (one event) until the server ends the stream.

        A stream cut in the middle of a line, or silent for longer than the read timeout, raises
        :class:`Unreachable` (the partial line is never returned).
        """
        pending: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = self._resp.read1(65536) if hasattr(self._resp, "read1") else self._resp.read(65536)
            except self._urllib3.exceptions.ReadTimeoutError:
                raise Unreachable(f"watch {self._path}: no byte for {self._timeout:g} s (a stalled stream)") from None
            except (self._urllib3.exceptions.HTTPError, OSError) as exc:
                raise Unreachable(f"watch {self._path}: {exc}") from None
            if not chunk:
                if b"".join(pending).strip():
                    raise Unreachable(f"watch {self._path}: the stream ended in the middle of an event")
                return
            parts = chunk.split(b"\n")
            if len(parts) > 1:
                parts[0] = b"".join(pending) + parts[0]
                pending, size = [], 0
                for line in parts[:-1]:
                    if line.strip():
                        yield line
            pending.append(parts[-1])
            size += len(parts[-1])
            if size > MAX_LINE_BYTES:
                raise Unreachable(f"watch {self._path}: an event of more than {MAX_LINE_BYTES} bytes")

    def read_timeout(self, seconds: float) -> None:
        """From now on, wait at most ``seconds`` for each next byte."""
        sock = getattr(self._resp.connection, "sock", None)
        if sock is not None:
            sock.settimeout(seconds)
            self._timeout = seconds

    def close(self) -> None:
        _discard(self._resp)


def _warn_reload(error: str) -> None:
    _log.warning("cannot load the API server credentials again: %s", error)


def _discard(resp: Any) -> None:
    """Close ``resp`` and its connection, then hand the connection back to the pool.

    In that order: released first, the connection would go back with the rest of a stream unread,
    and the next request on it would read that stream as its answer (``BadStatusLine``).
    """
    resp.close()
    resp.release_conn()


def _read_all(resp: Any, urllib3: Any) -> bytes:
    chunks: list[bytes] = []
    total = 0
    try:
        while True:
            chunk = resp.read(1 << 20)
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if total > MAX_RESPONSE_BYTES:
                raise Unreachable(f"an answer of more than {MAX_RESPONSE_BYTES} bytes")
            chunks.append(chunk)
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise Unreachable(str(exc)) from None


def _decode(body: bytes) -> Any:
    try:
        return gojson.loads(body)
    except gojson.GoJSONError:
        return None


# A list page holds at most this many objects: the API server's own cap is higher, but a page of
# 500 keeps each answer small (the webhook's reflector pages the same way).
PAGE_SIZE = 500
# How often an expired ``continue`` token starts a list over before the list is given up: each
# restart is a whole list again, and a cluster compacting faster than one list lasts will not settle.
LIST_RESTARTS = 3


@dataclass(frozen=True)
class Listing:
    """Every object of one collection, as one consistent list (all pages at one resourceVersion)."""

    items: list[dict[str, Any]]   # each with its apiVersion and kind (list pages leave them out)
    resource_version: str
    api_version: str              # the list's, e.g. resource.k8s.io/v1
    kind: str                     # the objects' kind, e.g. ResourceSlice
    restarts: int = 0             # lists started over after an expired continue token


def list_all(api: Api, path: str, params: dict[str, Any] | None = None, *, page_size: int = PAGE_SIZE,
             timeout: float = 60.0, restarts: int = LIST_RESTARTS,
             on_page: Callable[[int, int | None], None] | None = None) -> Listing:
    """Every object of the collection at ``path`` (e.g. ``/api/v1/nodes``, ``/api/v1/namespaces/ml/pods``),
    page by page (``limit``/``continue``); ``params`` adds selectors (``fieldSelector``...).

    A 410 on a ``continue`` token (compaction overtook the list) starts the list over, at most
    ``restarts`` times, then raises that :class:`ApiError`. ``on_page(objects so far, objects left
    or None)`` is called after each page (a progress line). Raises :class:`ApiError` or
    :class:`Unreachable`.
    """
    base = {**(params or {}), "limit": page_size}
    items: list[dict[str, Any]] = []
    request = dict(base)
    started_over = 0
    while True:
        try:
            page = api.get(path, request, timeout=timeout)
        except ApiError as exc:
            if exc.code == 410 and "continue" in request and started_over < restarts:
                started_over += 1
                items, request = [], dict(base)
                continue
            raise
        meta = page.get("metadata") if isinstance(page, dict) else None
        page_items = page.get("items") if isinstance(page, dict) else None
        if not isinstance(meta, dict) or not isinstance(page_items, list):
            raise Unreachable(f"GET {path}: the answer is not a list")
        api_version = str(page.get("apiVersion") or "")
        kind = str(page.get("kind") or "").removesuffix("List")
        for item in page_items:
            if isinstance(item, dict):
                # The server leaves each item's apiVersion and kind out of a list: put them back, as kubectl does.
                items.append({"apiVersion": api_version, "kind": kind, **item})
        token = meta.get("continue")
        left = meta.get("remainingItemCount")
        if on_page is not None:
            on_page(len(items), left if isinstance(left, int) and token else None)
        if not token:
            return Listing(items, str(meta.get("resourceVersion") or ""), api_version, kind, started_over)
        request = {**base, "continue": token}
