"""The gunicorn worker: one event loop reads whole requests, threads only judge them.

gunicorn's ``gthread`` worker hands each new connection to a pool thread, which then does the TLS
handshake and reads the request head with blocking calls and no time limit: 16 connections that
send a few bytes of a ClientHello and stall take all of 2 workers × 8 threads, and ``/healthz``
and ``/validate`` go unanswered for as long as they stay (measured: 300 idle connections, a 27 s
outage). Here the loop does everything that waits on the network, without blocking:

* the TLS handshake (``HANDSHAKE_SECONDS``), the request head (``HEAD_SECONDS`` from its first
  byte) and the body (``REQUEST_SECONDS`` in all), parsed by ``h11``; a connection over its time is
  closed; bodies are bounded (``admission.MAX_BODY_BYTES``: a larger one, chunked or not, is
  answered 413 at once), and so are the bytes buffered by all connections together;
* when the connection table is full, the oldest connection that has not yet sent a whole request
  is closed to make room, so a crowd of stalled connections cannot lock out the API server;
* writing the answer (``WRITE_SECONDS``).

Only a complete request reaches a thread: a review there costs CPU, never a wait on a client.
Requests on the health port (plain HTTP, for the kubelet's probes and Prometheus) are answered by
the loop itself, so probes stay answered even while every thread is judging. On SIGTERM the
worker stops accepting, finishes what is in flight, answers a request that arrives on a kept-alive
connection within ``STOP_LINGER_SECONDS`` with ``Connection: close`` and then closes idle
connections (the API server's Go client sends nothing on a connection it sees closed idle).

It depends on gunicorn's ``Worker`` base only (process life, heartbeats, signals), not on the
internals of gunicorn's own workers.
"""
from __future__ import annotations

import errno
import io
import os
import selectors
import socket
import ssl
import sys
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from queue import Empty, SimpleQueue
from typing import Any, Callable
from urllib.parse import unquote

import h11
import orjson
from gunicorn.workers.base import Worker

from .admission import MAX_BODY_BYTES
from .timeouts import review_deadline

HANDSHAKE_SECONDS = 5.0
HEAD_SECONDS = 5.0
REQUEST_SECONDS = 10.0
WRITE_SECONDS = 10.0
STOP_LINGER_SECONDS = 2.0
HEAD_MAX = 64 * 1024
# Bytes of request bodies buffered by all connections of a worker at once: two of the largest reviews.
BUFFER_MAX = 2 * MAX_BODY_BYTES
READ_CHUNK = 256 * 1024

HANDSHAKE, IDLE, READING, BUSY, WRITING = "handshake", "idle", "reading", "busy", "writing"


class _Conn:
    """One client connection and where it is in its request."""

    def __init__(self, sock: socket.socket, peer: Any, health: bool, now: float) -> None:
        self.sock = sock
        self.peer = peer
        self.health = health
        self.state = IDLE
        self.deadline = now
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=HEAD_MAX)
        self.request: h11.Request | None = None
        self.body: list[bytes] = []
        self.size = 0
        self.started = now
        self.out = b""
        self.close_after = False
        self.registered = False

    @property
    def waiting_for_client(self) -> bool:
        """Not yet a whole request: such a connection may be closed to make room for another."""
        return self.state in (HANDSHAKE, READING)


class WebhookWorker(Worker):
    """gunicorn worker: an event loop for the network, a thread pool for the reviews."""

    health_port: int | None = None     # set by :func:`worker_class`
    timeout_seconds: float = 5.0       # the API server's timeout when a call names none (``?timeout=``)

    def init_process(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.pool = ThreadPoolExecutor(max_workers=self.cfg.threads, thread_name_prefix="review")
        self.done: SimpleQueue = SimpleQueue()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.conns: OrderedDict[int, _Conn] = OrderedDict()     # by fd, oldest first
        self.buffered = 0
        self.accepting = False
        super().init_process()

    # --- the loop -------------------------------------------------------------------------------

    def run(self) -> None:
        self.selector.register(self.wake_r, selectors.EVENT_READ, ("wake", None))
        for listener in self.sockets:
            listener.setblocking(False)
        self._accept(True)
        while self.alive:
            self.notify()
            self._turn(1.0)
            if self.ppid != os.getppid():
                self.log.info("Parent changed, shutting down: %s", self)
                break
        self._accept(False)
        stop = time.monotonic()
        for conn in list(self.conns.values()):
            if conn.state == IDLE:
                conn.deadline = min(conn.deadline, stop + STOP_LINGER_SECONDS)
        graceful = stop + self.cfg.graceful_timeout
        while self.conns and time.monotonic() < graceful:
            self.notify()
            self._turn(0.2)
        for conn in list(self.conns.values()):
            self._close(conn)
        self.pool.shutdown(wait=False)

    def _turn(self, timeout: float) -> None:
        now = time.monotonic()
        if self.conns:
            timeout = max(0.0, min(timeout, min(c.deadline for c in self.conns.values()) - now))
        for key, mask in self.selector.select(timeout):
            what, obj = key.data
            try:
                if what == "accept":
                    self._on_accept(obj)
                elif what == "wake":
                    self._on_wake()
                else:
                    self._on_ready(obj, mask)
            except Exception:   # one connection's surprise must not take the worker down
                self.log.exception("error on a connection")
                if what == "conn":
                    self._close(obj)
        self._expire(time.monotonic())

    def _accept(self, enabled: bool) -> None:
        if enabled == self.accepting:
            return
        for listener in self.sockets:
            if enabled:
                self.selector.register(listener, selectors.EVENT_READ, ("accept", listener))
            else:
                self.selector.unregister(listener)
        self.accepting = enabled

    def _on_accept(self, listener: Any) -> None:
        try:
            sock, peer = listener.accept()
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                return
            raise
        if len(self.conns) >= self.worker_connections:
            oldest = next((c for c in self.conns.values() if c.waiting_for_client), None)
            if oldest is None:
                sock.close()
                return
            self._close(oldest)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        health = self.health_port is not None and listener.getsockname()[1] == self.health_port
        now = time.monotonic()
        conn = _Conn(sock, peer, health, now)
        if self.cfg.is_ssl and not health:
            context = self.cfg.ssl_context(self.cfg, None)
            conn.sock = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
            conn.state, conn.deadline = HANDSHAKE, now + HANDSHAKE_SECONDS
        else:
            conn.state, conn.deadline = IDLE, now + self.cfg.keepalive
        self.conns[conn.sock.fileno()] = conn
        self._interest(conn, selectors.EVENT_READ)
        if conn.state == HANDSHAKE:
            self._handshake(conn)

    @property
    def worker_connections(self) -> int:
        return int(self.cfg.worker_connections)

    # --- reading ----------------------------------------------------------------------------------

    def _on_ready(self, conn: _Conn, mask: int) -> None:
        if conn.sock.fileno() not in self.conns:
            return
        if conn.state == HANDSHAKE:
            self._handshake(conn)
        elif conn.state == WRITING:
            self._write(conn)
        elif conn.state in (IDLE, READING):
            self._read(conn)

    def _handshake(self, conn: _Conn) -> None:
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._interest(conn, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._interest(conn, selectors.EVENT_WRITE)
            return
        except (ssl.SSLError, OSError):
            self._close(conn)
            return
        conn.state, conn.deadline = IDLE, time.monotonic() + self.cfg.keepalive
        self._interest(conn, selectors.EVENT_READ)
        self._read(conn)   # the client's request may already be in the TLS buffer

    def _read(self, conn: _Conn) -> None:
        while True:
            try:
                data = conn.sock.recv(READ_CHUNK)
            except (ssl.SSLWantReadError, BlockingIOError):
                return
            except ssl.SSLWantWriteError:
                self._interest(conn, selectors.EVENT_WRITE)
                return
            except (ssl.SSLError, OSError):
                self._close(conn)
                return
            if conn.state == IDLE and data:
                now = time.monotonic()
                conn.state, conn.started, conn.deadline = READING, now, now + HEAD_SECONDS
            conn.h11.receive_data(data)
            if not self._parse(conn) or not data:
                return
            if not (isinstance(conn.sock, ssl.SSLSocket) and conn.sock.pending()) and len(data) < READ_CHUNK:
                return

    def _parse(self, conn: _Conn) -> bool:
        """Feed h11's events; False once the connection stops reading (dispatched, answered or closed)."""
        while True:
            try:
                event = conn.h11.next_event()
            except h11.RemoteProtocolError as exc:
                self._reply_error(conn, exc.error_status_hint or 400, f"bad HTTP request: {exc}")
                return False
            if event is h11.NEED_DATA:
                return True
            if isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                if isinstance(event, h11.ConnectionClosed):
                    self._close(conn)
                return False
            if isinstance(event, h11.Request):
                conn.request, conn.body, conn.size = event, [], 0
                conn.deadline = conn.started + REQUEST_SECONDS
                declared = _header(event.headers, b"content-length")
                if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                    self._reply_too_large(conn, int(declared))
                    return False
            elif isinstance(event, h11.Data):
                conn.size += len(event.data)
                self.buffered += len(event.data)
                if conn.size > MAX_BODY_BYTES:
                    self._reply_too_large(conn, conn.size)
                    return False
                conn.body.append(event.data)
                if self.buffered > BUFFER_MAX:
                    self._make_room(conn)
                    if conn.sock.fileno() not in self.conns:
                        return False
            elif isinstance(event, h11.EndOfMessage):
                self._dispatch(conn)
                return False

    def _make_room(self, keep: _Conn) -> None:
        """Too many bytes buffered: close the oldest connection still sending (not ``keep`` if another is)."""
        for conn in list(self.conns.values()):
            if conn.state == READING and conn is not keep and conn.size:
                self._close(conn)
                if self.buffered <= BUFFER_MAX:
                    return
        if self.buffered > BUFFER_MAX:
            self._close(keep)

    # --- answering ---------------------------------------------------------------------------------

    def _dispatch(self, conn: _Conn) -> None:
        assert conn.request is not None
        body = b"".join(conn.body)
        self.buffered -= conn.size
        conn.body, conn.state = [], BUSY
        environ = self._environ(conn, conn.request, body)
        self._interest(conn, 0)
        if conn.health:
            self._respond(conn, _call(self.wsgi, environ))
            return
        conn.deadline = environ["dralint.deadline"] + REQUEST_SECONDS   # the guard answers first
        future = self.pool.submit(_call, self.wsgi, environ)
        future.add_done_callback(lambda f, c=conn: self._completed(c, f))

    def _completed(self, conn: _Conn, future: Future) -> None:
        # In the pool's thread: hand the answer to the loop.
        self.done.put((conn, future))
        try:
            os.write(self.wake_w, b"\0")
        except OSError:
            pass

    def _on_wake(self) -> None:
        try:
            while os.read(self.wake_r, 4096):
                pass
        except OSError:
            pass
        while True:
            try:
                conn, future = self.done.get_nowait()
            except Empty:
                return
            if conn.sock.fileno() in self.conns and self.conns.get(conn.sock.fileno()) is conn:
                try:
                    answer = future.result()
                except Exception as exc:   # the app answers its own errors; this is a last resort
                    self.log.exception("review failed outside the app")
                    answer = _json_answer(500, {"error": f"internal error ({type(exc).__name__})"})
                self._respond(conn, answer)

    def _respond(self, conn: _Conn, answer: tuple[int, list[tuple[str, str]], bytes]) -> None:
        code, headers, body = answer
        headers = [(k, v) for k, v in headers if k.lower() not in ("content-length", "connection",
                                                                  "transfer-encoding")]
        headers.append(("Content-Length", str(len(body))))
        if not self.alive or conn.close_after:
            headers.append(("Connection", "close"))
        try:
            data = conn.h11.send(h11.Response(status_code=code, headers=headers))
            data += conn.h11.send(h11.Data(data=body)) if body else b""
            data += conn.h11.send(h11.EndOfMessage())
        except h11.LocalProtocolError:
            self._close(conn)
            return
        conn.out = data
        conn.state, conn.deadline = WRITING, time.monotonic() + WRITE_SECONDS
        self._write(conn)

    def _write(self, conn: _Conn) -> None:
        while conn.out:
            try:
                sent = conn.sock.send(conn.out)
            except (ssl.SSLWantWriteError, BlockingIOError):
                self._interest(conn, selectors.EVENT_WRITE)
                return
            except ssl.SSLWantReadError:
                self._interest(conn, selectors.EVENT_READ)
                return
            except (ssl.SSLError, OSError):
                self._close(conn)
                return
            conn.out = conn.out[sent:]
        # Close as the answer announced (Connection: close once stopping): a worker told to stop while
        # it wrote a keep-alive answer keeps the connection a moment, for a request already on its way.
        if conn.h11.our_state is h11.MUST_CLOSE or conn.close_after or conn.h11.their_state is not h11.DONE:
            self._close(conn)
            return
        conn.h11.start_next_cycle()
        conn.request = None
        linger = self.cfg.keepalive if self.alive else STOP_LINGER_SECONDS
        conn.state, conn.deadline = IDLE, time.monotonic() + linger
        self._interest(conn, selectors.EVENT_READ)
        if conn.h11.trailing_data[0]:
            conn.state, conn.started = READING, time.monotonic()
            conn.deadline = conn.started + HEAD_SECONDS
            self._parse(conn)

    def _reply_error(self, conn: _Conn, code: int, message: str) -> None:
        conn.close_after = True
        self.buffered -= conn.size
        conn.size, conn.body = 0, []
        self._interest(conn, 0)
        code, headers, body = _json_answer(code, {"error": message[:300]})
        data = (f"HTTP/1.1 {code} {h11_reason(code)}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) +
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
        conn.h11 = h11.Connection(h11.SERVER)   # the old one is in an error state; this answer ends the connection
        conn.out, conn.state, conn.deadline = data, WRITING, time.monotonic() + WRITE_SECONDS
        self._write_raw(conn)

    def _reply_too_large(self, conn: _Conn, size: int) -> None:
        """413 through the app (it counts it and writes the message), without reading the body."""
        assert conn.request is not None
        self.buffered -= conn.size
        conn.size, conn.body, conn.close_after = 0, [], True
        environ = self._environ(conn, conn.request, b"")
        environ["CONTENT_LENGTH"] = str(max(size, MAX_BODY_BYTES + 1))
        self._interest(conn, 0)
        code, headers, body = _call(self.wsgi, environ)
        data = (f"HTTP/1.1 {code} {h11_reason(code)}\r\n" +
                "".join(f"{k}: {v}\r\n" for k, v in headers if k.lower() not in ("content-length", "connection")) +
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
        conn.h11 = h11.Connection(h11.SERVER)
        conn.out, conn.state, conn.deadline = data, WRITING, time.monotonic() + WRITE_SECONDS
        self._write_raw(conn)

    def _write_raw(self, conn: _Conn) -> None:
        """Write an answer made without h11 and close."""
        while conn.out:
            try:
                sent = conn.sock.send(conn.out)
            except (ssl.SSLWantWriteError, BlockingIOError, ssl.SSLWantReadError):
                self._interest(conn, selectors.EVENT_WRITE)
                conn.close_after = True
                return
            except (ssl.SSLError, OSError):
                break
            conn.out = conn.out[sent:]
        self._close(conn)

    # --- bookkeeping ---------------------------------------------------------------------------------

    def _environ(self, conn: _Conn, request: h11.Request, body: bytes) -> dict[str, Any]:
        target = request.target.decode("latin-1")
        path, _, query = target.partition("?")
        local = conn.sock.getsockname()
        environ: dict[str, Any] = {
            "REQUEST_METHOD": request.method.decode("ascii", "replace"), "SCRIPT_NAME": "",
            "PATH_INFO": unquote(path, encoding="latin-1"), "QUERY_STRING": query,
            "SERVER_NAME": str(local[0]), "SERVER_PORT": str(local[1]), "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": str(conn.peer[0]) if isinstance(conn.peer, tuple) else "",
            "wsgi.version": (1, 0), "wsgi.url_scheme": "https" if isinstance(conn.sock, ssl.SSLSocket) else "http",
            "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr, "wsgi.multithread": True,
            "wsgi.multiprocess": True, "wsgi.run_once": False, "CONTENT_LENGTH": str(len(body)),
            "dralint.started": conn.started, "dralint.health": conn.health,
            "dralint.deadline": review_deadline(conn.started, query, self.timeout_seconds),
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

    def _interest(self, conn: _Conn, events: int) -> None:
        """Wait for ``events`` on the connection (0: none, while its request is being judged)."""
        try:
            if events and conn.registered:
                self.selector.modify(conn.sock, events, ("conn", conn))
            elif events:
                self.selector.register(conn.sock, events, ("conn", conn))
            elif conn.registered:
                self.selector.unregister(conn.sock)
            conn.registered = bool(events)
        except (KeyError, ValueError, OSError):
            pass

    def _expire(self, now: float) -> None:
        for conn in [c for c in self.conns.values() if c.deadline <= now]:
            if conn.state == BUSY:
                conn.close_after = True   # the guard answers a review by its deadline; this is the backstop
            self._close(conn)

    def _close(self, conn: _Conn) -> None:
        fd = conn.sock.fileno()
        if fd >= 0 and self.conns.get(fd) is conn:
            del self.conns[fd]
            self._interest(conn, 0)
        if conn.state == READING:
            self.buffered -= conn.size
            conn.size = 0
        try:
            conn.sock.close()
        except OSError:
            pass


def worker_class(health_port: int | None, timeout_seconds: float) -> type[WebhookWorker]:
    """The worker class with the health port and the API server's default call timeout."""
    return type("WebhookWorker", (WebhookWorker,), {"health_port": health_port,
                                                    "timeout_seconds": timeout_seconds})


def _call(app: Callable, environ: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
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


def _json_answer(code: int, value: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    return code, [("Content-Type", "application/json")], orjson.dumps(value)


def _header(headers: Any, name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def h11_reason(code: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return "Error"
