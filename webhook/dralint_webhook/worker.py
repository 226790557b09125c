"""The gunicorn worker: one event loop reads whole requests, threads only judge them.

gunicorn's ``gthread`` worker hands each new connection to a pool thread, which then does the TLS
handshake and reads the request head with blocking calls and no time limit: 16 connections that
send a few bytes of a ClientHello and stall take all of 2 workers × 8 threads, and ``/healthz``
and ``/validate`` go unanswered for as long as they stay (measured: 300 idle connections, a 27 s
outage). Here the loop does everything that waits on the network, without blocking:

* the TLS handshake (``HANDSHAKE_SECONDS`` from the accept), the first byte of the first request
  (``FIRST_REQUEST_SECONDS`` after the handshake: the API server's Go client and the kubelet send
  at once), the request head (``HEAD_SECONDS`` from its first byte) and the body
  (``REQUEST_SECONDS`` in all), parsed by ``h11``; a connection over its time is closed; bodies
  are bounded (``admission.MAX_BODY_BYTES``: a larger one, chunked or not, is answered 413 at
  once), and so are the bytes buffered by all connections together;
* each port has its own connection table (:mod:`.conntable`): the TLS port the worker's
  ``worker_connections``, the health port ``HEALTH_CONNECTIONS``. A full table closes its oldest
  connection that is not being served to make room (first those that have not sent a whole
  request, then kept-alive ones), so no number of silent or slow peers locks out the API server
  or the kubelet, and a flood on one port never touches the other;
* writing the answer (``WRITE_SECONDS``). Each socket's send buffer holds any whole answer
  (``SEND_BUFFER``), so a peer that never reads leaves a kept-alive connection behind, which can
  be closed to make room, rather than one stuck being served.

Only a complete request reaches a thread: a review there costs CPU, never a wait on a client.
Requests on the health port (plain HTTP, for the kubelet's probes and Prometheus) are answered by
the loop itself, so probes stay answered even while every thread is judging.

On SIGTERM (also SIGHUP's replacement of workers, and when the master is gone) the worker stops
without failing a call (:meth:`WebhookWorker._drain`): it keeps accepting while connections still
come (the endpoint takes a moment to leave the Service, and a connection left in the listen
backlog would be reset when the last listener closes), answers every request with
``Connection: close``, finishes what is in flight, and only then closes the kept-alive
connections left unused.

It depends on gunicorn's ``Worker`` base only (process life, heartbeats, signals), not on the
internals of gunicorn's own workers.
"""
from __future__ import annotations

import errno
import os
import select
import selectors
import socket
import ssl
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from queue import Empty, SimpleQueue
from typing import Any, cast

import h11
from gunicorn.workers.base import Worker

from . import wsgi
from .admission import MAX_BODY_BYTES
from .conntable import BUSY, HANDSHAKE, IDLE, NEW, READING, WRITING, Table

HANDSHAKE_SECONDS = 5.0
FIRST_REQUEST_SECONDS = 5.0
HEAD_SECONDS = 5.0
REQUEST_SECONDS = 10.0
WRITE_SECONDS = 10.0
HEAD_MAX = 64 * 1024
# Bytes of request bodies a worker holds at once, being read, queued or judged: two of the largest reviews.
BUFFER_MAX = 2 * MAX_BODY_BYTES
READ_CHUNK = 256 * 1024
# Probes and scrapes: the kubelet opens a connection per probe, Prometheus keeps one.
HEALTH_CONNECTIONS = 32
# Larger than any answer (answers.py keeps a review's under ~150 KB; /metrics is smaller), so an
# answer goes to the kernel in one go whether or not the peer reads it.
SEND_BUFFER = 512 * 1024
# Connections taken from the backlog per wake-up of a listener: a flood cannot starve the rest of the loop.
ACCEPT_BATCH = 64
# While stopping: keep accepting until no new review connection came for DRAIN_QUIET_SECONDS, at
# most DRAIN_ACCEPT_SECONDS (the endpoint's removal reaching every API server; the Pod's preStop
# pause normally covers it, so new connections have stopped before SIGTERM).
DRAIN_QUIET_SECONDS = 1.0
DRAIN_ACCEPT_SECONDS = 10.0


@dataclass(eq=False)
class _Port:
    """A listening socket of the worker and the table of its connections."""

    listener: Any
    table: Table["_Conn"]
    health: bool
    accepting: bool = False
    closed: bool = False


class _Conn:
    """One client connection and where it is in its request."""

    def __init__(self, sock: socket.socket, peer: Any, port: _Port, now: float) -> None:
        self.sock = sock
        self.key = sock.fileno()
        self.peer = peer
        self.port = port
        self.health = port.health
        self.state = NEW
        self.since = now            # when it entered its state
        self.deadline = now
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=HEAD_MAX)
        self.request: h11.Request | None = None
        self.body: list[bytes] = []
        self.size = 0
        self.held = 0               # bytes of a body handed to a thread: buffered until it is answered
        self.started = now          # the first byte of the current request
        self.out = b""
        self.close_after = False
        self.registered = False
        self.open = True


class WebhookWorker(Worker):
    """gunicorn worker: an event loop for the network, a thread pool for the reviews."""

    alive: bool                        # gunicorn's Worker: False once the worker is to stop
    health_port: int | None = None     # set by :func:`worker_class`
    timeout_seconds: float = 5.0       # the API server's timeout when a call names none (``?timeout=``)

    def init_process(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.pool = ThreadPoolExecutor(max_workers=self.cfg.threads, thread_name_prefix="review")
        self.done: SimpleQueue = SimpleQueue()
        self.conns: dict[int, _Conn] = {}
        self.ports: list[_Port] = []
        self.buffered = 0
        self.soonest = float("inf")          # the nearest deadline of any connection
        self.last_accept = float("-inf")     # of a review connection, for the drain
        super().init_process()

    # --- the loop -------------------------------------------------------------------------------

    def run(self) -> None:
        # gunicorn's signal wake-up pipe: a SIGTERM ends the wait at once. Threads use it too.
        self.selector.register(self.PIPE[0], selectors.EVENT_READ, ("wake", None))
        for listener in self.sockets:
            listener.setblocking(False)
            health = self.health_port is not None and listener.getsockname()[1] == self.health_port
            port = _Port(listener, Table(HEALTH_CONNECTIONS if health else self.worker_connections), health)
            self.ports.append(port)
            self._listen(port, True)
        while self.alive:
            self.notify()
            self._turn(1.0)
            if self.ppid != os.getppid():
                self.log.info("Parent changed, shutting down: %s", self)
                self.alive = False
        self._drain()

    def _drain(self) -> None:
        """Stop without failing a call (SIGTERM, SIGHUP's replacement of workers, or the master gone)."""
        stop = time.monotonic()
        hard = stop + max(1.0, float(self.cfg.graceful_timeout) - 1.0)   # before the master's SIGKILL
        accept_until = min(stop + DRAIN_ACCEPT_SECONDS, hard)
        # New connections are still served (with Connection: close) while they come: closing the
        # listener with connections in its backlog would reset them.
        while True:
            now = time.monotonic()
            if now >= accept_until or now - max(stop, self.last_accept) >= DRAIN_QUIET_SECONDS:
                break
            self.notify()
            self._turn(0.1)
        for port in self.ports:
            self._close_port(port)
        # Requests in flight finish, each answer saying Connection: close. A connection in use has
        # carried a request, and so that answer, by now; one unused for DRAIN_QUIET_SECONDS is closed,
        # and only while nothing waits to be read on it (closing over unread bytes resets the
        # connection, which fails a call whose request was written). Go's client drops an idle
        # connection it sees closed without writing on it; what no HTTP/1.1 server can rule out is a
        # request written in the instant between the close and the client seeing it.
        while self.conns and time.monotonic() < hard:
            self.notify()
            self._turn(0.1)
            unused_since = time.monotonic() - DRAIN_QUIET_SECONDS
            for conn in [c for c in self.conns.values() if c.state in (NEW, IDLE) and c.since <= unused_since]:
                if not _readable(conn.sock):
                    self._close(conn)
        for conn in list(self.conns.values()):
            self._close(conn)
        self.pool.shutdown(wait=False)

    def _turn(self, timeout: float) -> None:
        now = time.monotonic()
        timeout = max(0.0, min(timeout, self.soonest - now))
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
        for port in self.ports:
            if not port.accepting and not port.closed and (not port.table.full or port.table.victim() is not None):
                self._listen(port, True)   # a place is free again

    @property
    def worker_connections(self) -> int:
        return int(self.cfg.worker_connections)

    # --- accepting --------------------------------------------------------------------------------

    def _listen(self, port: _Port, enabled: bool) -> None:
        if port.closed or enabled == port.accepting:
            return
        if enabled:
            self.selector.register(port.listener, selectors.EVENT_READ, ("accept", port))
        else:
            self.selector.unregister(port.listener)
        port.accepting = enabled

    def _on_accept(self, port: _Port) -> None:
        for _ in range(ACCEPT_BATCH):
            if port.table.full and port.table.victim() is None:
                # Every connection is being served: newcomers wait in the backlog until one is not.
                self._listen(port, False)
                return
            if not self._take(port):
                return

    def _take(self, port: _Port) -> bool:
        """Accept a connection, closing another to make room if the table is full; False if none waits."""
        while True:
            try:
                sock, peer = port.listener.accept()
                break
            except OSError as exc:
                if exc.errno == errno.ECONNABORTED:
                    continue
                if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                    return False
                raise
        if port.table.full:
            victim = port.table.victim()
            if victim is not None:
                self._close(victim)
        self._admit(port, sock, peer)
        return True

    def _admit(self, port: _Port, sock: socket.socket, peer: Any) -> None:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        now = time.monotonic()
        conn = _Conn(sock, peer, port, now)
        if self.cfg.is_ssl and not port.health:
            context = self.cfg.ssl_context(self.cfg, None)
            conn.sock = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
            conn.state, conn.deadline = HANDSHAKE, now + HANDSHAKE_SECONDS
        else:
            conn.state, conn.deadline = NEW, now + FIRST_REQUEST_SECONDS
        if not port.health:
            self.last_accept = now
        self.conns[conn.key] = conn
        port.table.add(conn)
        self.soonest = min(self.soonest, conn.deadline)
        self._interest(conn, selectors.EVENT_READ)
        if conn.state == HANDSHAKE:
            self._handshake(conn)

    def _close_port(self, port: _Port) -> None:
        """Stop listening on ``port``, after taking what waits in its backlog (closing would reset it)."""
        self._listen(port, False)
        port.closed = True
        try:
            while self._take(port):
                pass
        except OSError:
            pass
        port.listener.close()

    # --- reading ----------------------------------------------------------------------------------

    def _on_ready(self, conn: _Conn, mask: int) -> None:
        if not conn.open:
            return
        if conn.state == HANDSHAKE:
            self._handshake(conn)
        elif conn.state == WRITING:
            self._write(conn)
        elif conn.state in (NEW, IDLE, READING):
            self._read(conn)

    def _handshake(self, conn: _Conn) -> None:
        try:
            cast(ssl.SSLSocket, conn.sock).do_handshake()   # in HANDSHAKE: wrapped at the accept
        except ssl.SSLWantReadError:
            self._interest(conn, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._interest(conn, selectors.EVENT_WRITE)
            return
        except (ssl.SSLError, OSError):
            self._close(conn)
            return
        self._set(conn, NEW, FIRST_REQUEST_SECONDS)
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
            if conn.state in (NEW, IDLE) and data:
                conn.started = time.monotonic()
                self._set(conn, READING, HEAD_SECONDS)
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
                declared = wsgi.header(event.headers, b"content-length")
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
                    if not conn.open:
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
        # The body stays counted until it is answered: bodies queued for a thread or being judged are
        # memory too, and the budget must cover them, or fast peers could queue any number.
        conn.body, conn.held, conn.size = [], conn.size, 0
        environ = wsgi.environ(conn.request, body, conn.sock, conn.peer, started=conn.started, health=conn.health,
                               timeout_seconds=self.timeout_seconds)
        self._interest(conn, 0)
        if conn.health:
            self._set(conn, BUSY, WRITE_SECONDS)
            self._release(conn)
            self._respond(conn, wsgi.call(self.wsgi, environ))
            return
        # The guard answers by the review's deadline (the API server's ?timeout=); this one is the backstop.
        self._set(conn, BUSY, environ["dralint.deadline"] + REQUEST_SECONDS - time.monotonic())
        future = self.pool.submit(wsgi.call, self.wsgi, environ)
        future.add_done_callback(lambda f: self._completed(conn, f))

    def _completed(self, conn: _Conn, future: Future) -> None:
        # In the pool's thread: hand the answer to the loop.
        self.done.put((conn, future))
        try:
            os.write(self.PIPE[1], b"\0")
        except OSError:
            pass

    def _on_wake(self) -> None:
        try:
            while os.read(self.PIPE[0], 4096):
                pass
        except OSError:
            pass
        while True:
            try:
                conn, future = self.done.get_nowait()
            except Empty:
                return
            self._release(conn)
            if conn.open:
                try:
                    answer = future.result()
                except Exception as exc:   # the app answers its own errors; this is a last resort
                    self.log.exception("review failed outside the app")
                    answer = wsgi.json_answer(500, {"error": f"internal error ({type(exc).__name__})"})
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
        self._set(conn, WRITING, WRITE_SECONDS)
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
        # Close as the answer announced (Connection: close once stopping).
        if conn.h11.our_state is h11.MUST_CLOSE or conn.close_after or conn.h11.their_state is not h11.DONE:
            self._close(conn)
            return
        conn.h11.start_next_cycle()
        conn.request = None
        self._set(conn, IDLE, float(self.cfg.keepalive))
        self._interest(conn, selectors.EVENT_READ)
        if conn.h11.trailing_data[0]:
            conn.started = time.monotonic()
            self._set(conn, READING, HEAD_SECONDS)
            self._parse(conn)

    def _reply_error(self, conn: _Conn, code: int, message: str) -> None:
        conn.close_after = True
        self.buffered -= conn.size
        conn.size, conn.body = 0, []
        self._interest(conn, 0)
        code, headers, body = wsgi.json_answer(code, {"error": message[:300]})
        data = (f"HTTP/1.1 {code} {wsgi.reason(code)}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) +
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
        conn.h11 = h11.Connection(h11.SERVER)   # the old one is in an error state; this answer ends the connection
        conn.out = data
        self._set(conn, WRITING, WRITE_SECONDS)
        self._write_raw(conn)

    def _reply_too_large(self, conn: _Conn, size: int) -> None:
        """413 through the app (it counts it and writes the message), without reading the body."""
        assert conn.request is not None
        self.buffered -= conn.size
        conn.size, conn.body, conn.close_after = 0, [], True
        environ = wsgi.environ(conn.request, b"", conn.sock, conn.peer, started=conn.started, health=conn.health,
                               timeout_seconds=self.timeout_seconds)
        environ["CONTENT_LENGTH"] = str(max(size, MAX_BODY_BYTES + 1))
        self._interest(conn, 0)
        code, headers, body = wsgi.call(self.wsgi, environ)
        data = (f"HTTP/1.1 {code} {wsgi.reason(code)}\r\n" +
                "".join(f"{k}: {v}\r\n" for k, v in headers if k.lower() not in ("content-length", "connection")) +
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
        conn.h11 = h11.Connection(h11.SERVER)
        conn.out = data
        self._set(conn, WRITING, WRITE_SECONDS)
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

    def _set(self, conn: _Conn, state: str, seconds: float) -> None:
        """Move ``conn`` to ``state``, due to be closed ``seconds`` from now unless it moves on."""
        now = time.monotonic()
        conn.state, conn.since, conn.deadline = state, now, now + seconds
        self.soonest = min(self.soonest, conn.deadline)
        conn.port.table.update(conn)

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
        soonest = float("inf")
        for conn in list(self.conns.values()):
            if conn.deadline > now:
                soonest = min(soonest, conn.deadline)
                continue
            if conn.state == BUSY:
                conn.close_after = True   # the guard answers a review by its deadline; this is the backstop
            self._close(conn)
        self.soonest = soonest

    def _release(self, conn: _Conn) -> None:
        """The body handed to a thread is answered: its bytes leave the buffer budget."""
        self.buffered -= conn.held
        conn.held = 0

    def _close(self, conn: _Conn) -> None:
        if not conn.open:
            return
        conn.open = False
        if self.conns.get(conn.key) is conn:
            del self.conns[conn.key]
        conn.port.table.remove(conn)
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


def _readable(sock: socket.socket) -> bool:
    """Whether bytes (or the peer's close) wait to be read on ``sock``."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))
