"""Talking to the Kubernetes API server: where it is, who we are, and one GET at a time.

Configuration and credentials come from the official ``kubernetes`` client
(``load_incluster_config`` / ``load_kube_config``): the service account's token, re-read as the
kubelet rotates it, and every kubeconfig form (client certificates, exec plugins, OIDC). The
requests themselves go through ``urllib3`` (the official client's own transport), built from that
configuration: the watcher needs raw bytes, line by line, under its own timeouts, not the
generated models (docs/webhook-cluster-state.md says why and what was measured).

Nothing here retries or interprets a list or a watch: that is :mod:`.reflector`'s job.
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any, Iterator
from urllib.parse import urlencode

import orjson

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
            status_code = body.get("code") if isinstance(body.get("code"), int) else code
            return cls(status_code, str(body.get("reason") or ""), str(body.get("message") or ""))
        return cls(code, "", "")


class Unreachable(Exception):
    """No answer: connection refused, TLS failure, a timeout, a stream cut short."""


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
    from kubernetes import client, config   # the watcher process only: ~40 MB and ~0.8 s to import

    configuration = client.Configuration()
    try:
        if kubeconfig is None:
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration,
                                    persist_config=False)
    except (config.ConfigException, OSError, KeyError, TypeError) as exc:
        where = "the Pod's service account" if kubeconfig is None else f"kubeconfig {kubeconfig}"
        raise ValueError(f"cannot load the API server's address and credentials from {where}: {exc}") from None
    return Endpoint(host=configuration.host.rstrip("/"), ca_file=configuration.ssl_ca_cert,
                    verify=bool(configuration.verify_ssl), cert_file=configuration.cert_file,
                    key_file=configuration.key_file,
                    server_name=getattr(configuration, "tls_server_name", None), config=configuration)


class Api:
    """GET requests to one API server over one pool of kept-alive connections (thread-safe)."""

    def __init__(self, endpoint: Endpoint, *, connect_timeout: float = 5.0, user_agent: str = "dralint-webhook") -> None:
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
        try:
            return self._pool.request("GET", url, headers=self._headers(), timeout=timeout, preload_content=False,
                                      redirect=False)
        except self._urllib3.exceptions.HTTPError as exc:
            raise Unreachable(f"GET {path}: {exc}") from None

    def get(self, path: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0) -> Any:
        """The decoded JSON body of a 200 answer; raises :class:`ApiError` or :class:`Unreachable`."""
        resp = self._open(path, params or {}, timeout)
        try:
            body = _read_all(resp, self._urllib3)
        finally:
            resp.release_conn()
        decoded = _decode(body)
        if resp.status != 200:
            raise ApiError.from_status(resp.status, decoded)
        if decoded is None:
            raise Unreachable(f"GET {path}: the answer is not JSON")
        return decoded

    def stream(self, path: str, params: dict[str, Any], *, timeout: float) -> Iterator[Any]:
        """The decoded JSON objects of a watch stream, one per line, until the server ends it.

        ``timeout`` bounds the wait for each read (the server sends bookmarks well within it). A
        status other than 200 raises :class:`ApiError`; a stream cut in the middle of a line raises
        :class:`Unreachable` (the partial line is never decoded).
        """
        resp = self._open(path, params, timeout)
        try:
            if resp.status != 200:
                raise ApiError.from_status(resp.status, _decode(_read_all(resp, self._urllib3)))
            buffer = b""
            while True:
                try:
                    chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
                except self._urllib3.exceptions.HTTPError as exc:
                    raise Unreachable(f"watch {path}: {exc}") from None
                except OSError as exc:
                    raise Unreachable(f"watch {path}: {exc}") from None
                if not chunk:
                    if buffer.strip():
                        raise Unreachable(f"watch {path}: the stream ended in the middle of an event")
                    return
                buffer += chunk
                if len(buffer) > MAX_LINE_BYTES:
                    raise Unreachable(f"watch {path}: an event of more than {MAX_LINE_BYTES} bytes")
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        event = _decode(line)
                        if event is None:
                            raise Unreachable(f"watch {path}: an event that is not JSON")
                        yield event
        finally:
            resp.release_conn()
            resp.close()

    def close(self) -> None:
        self._pool.clear()


def _read_all(resp: Any, urllib3: Any) -> bytes:
    chunks, total = [], 0
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
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
