"""The serving TLS context, rebuilt when the certificate files change.

gunicorn asks its ``ssl_context`` hook for a context on every new connection (the gthread worker
wraps each accepted socket), so handing it :meth:`ServingTLS.context` is enough for a rotated
certificate to be served from the next handshake on, with no restart. Connections already open
keep the context they were made with and finish normally: no request fails during a rotation.
"""
from __future__ import annotations

import ssl

from .reloading import ReloadHook, Reloading


def build_context(cert: str, key: str) -> ssl.SSLContext:
    """A server context for ``cert``/``key``: TLS 1.2 or newer, no client certificates, HTTP/1.1."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile=cert, keyfile=key)
    context.set_alpn_protocols(["http/1.1"])
    return context


class ServingTLS:
    """The current serving context of one certificate and key pair."""

    def __init__(self, cert: str, key: str, *, interval: float = 1.0, on_reload: ReloadHook | None = None) -> None:
        self.cert = cert
        self.key = key
        # A pair that has looked the same for an interval: not a certificate with the key of the one before.
        self.source = Reloading("certificate", (cert, key), lambda: build_context(cert, key),
                                  interval=interval, settle=interval, on_reload=on_reload)

    def context(self) -> ssl.SSLContext:
        """The context for a new connection (rebuilt first when the files changed)."""
        return self.source.current()
