"""One HTTP request as a WSGI call, for the worker's event loop (worker.py): the environ built
from h11's request, the app's answer collected whole, and the small answers the loop writes itself.
"""
from __future__ import annotations

import io
import socket
import ssl
import sys
from http import HTTPStatus
from typing import Any, Callable
from urllib.parse import unquote

import h11
import orjson

from .timeouts import review_deadline


def environ(request: h11.Request, body: bytes, sock: socket.socket, peer: Any, *, started: float, health: bool,
            timeout_seconds: float) -> dict[str, Any]:
    """The WSGI environ of ``request`` with its ``body``, read on ``sock`` from ``peer``; ``started`` (when
    its first byte came) and ``timeout_seconds`` (the API server's default) set its review deadline."""
    target = request.target.decode("latin-1")
    path, _, query = target.partition("?")
    local = sock.getsockname()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method.decode("ascii", "replace"), "SCRIPT_NAME": "",
        "PATH_INFO": unquote(path, encoding="latin-1"), "QUERY_STRING": query,
        "SERVER_NAME": str(local[0]), "SERVER_PORT": str(local[1]), "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": str(peer[0]) if isinstance(peer, tuple) else "",
        "wsgi.version": (1, 0), "wsgi.url_scheme": "https" if isinstance(sock, ssl.SSLSocket) else "http",
        "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr, "wsgi.multithread": True,
        "wsgi.multiprocess": True, "wsgi.run_once": False, "CONTENT_LENGTH": str(len(body)),
        "dralint.started": started, "dralint.health": health,
        "dralint.deadline": review_deadline(started, query, timeout_seconds),
    }
    for name, value in request.headers:
        key = name.decode("latin-1").upper().replace("-", "_")
        if key in ("CONTENT_LENGTH", "TRANSFER_ENCODING"):
            continue
        if key == "CONTENT_TYPE":
            environ["CONTENT_TYPE"] = value.decode("latin-1")
            continue
        environ[f"HTTP_{key}"] = value.decode("latin-1")
    return environ


def call(app: Callable, environ: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """Run the WSGI app on one request; its status, headers and body."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable:
        started[:] = [status, headers]
        return lambda data: None

    result = app(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    status, headers = started
    return int(status.split(" ", 1)[0]), list(headers), body


def json_answer(code: int, value: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """A JSON answer: status ``code``, its header, ``value`` encoded."""
    return code, [("Content-Type", "application/json")], orjson.dumps(value)


def header(headers: Any, name: bytes) -> str | None:
    """The value of header ``name`` (lower case) among h11's ``headers``; None when absent."""
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def reason(code: int) -> str:
    """The reason phrase of HTTP status ``code`` ("Error" for a code HTTP does not name)."""
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return "Error"
