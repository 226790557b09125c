"""Connection handling that no number of idle or slow peers exhausts.

First the tables' eviction order on their own, then the real server (gunicorn, our worker, TLS,
a health port) on 127.0.0.1 under floods of silent and slow connections. Every test is bounded in
connections, bytes and time; client timeouts are those of the API server (the webhook's
``timeoutSeconds``) and of the kubelet's probes (the Deployment's ``timeoutSeconds``).
"""
from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from dralint_webhook.conntable import BUSY, HANDSHAKE, IDLE, NEW, READING, WRITING, Table
from dralint_webhook.gunicorn_conf import WORKER_CONNECTIONS as TABLE
from dralint_webhook.manifests import TIMEOUT_SECONDS
from dralint_webhook.worker import FIRST_REQUEST_SECONDS, HANDSHAKE_SECONDS, HEAD_SECONDS, REQUEST_SECONDS
from test_webhook_server import HOSTNAME, Client, Server, claim, free_port, serving

PROBE_TIMEOUT = 3           # the Deployment's livenessProbe timeoutSeconds
WORKERS = 2                 # the test server's; each has a review table of TABLE places


# --- the tables ----------------------------------------------------------------------------------------

@dataclass
class Entry:
    key: int
    state: str


def table_of(*states: str, capacity: int = 10) -> tuple[Table[Entry], list[Entry]]:
    table: Table[Entry] = Table(capacity)
    entries = [Entry(i, s) for i, s in enumerate(states)]
    for e in entries:
        table.add(e)
    return table, entries


def moved(table: Table[Entry], entry: Entry, state: str) -> None:
    entry.state = state
    table.update(entry)


def test_a_table_makes_room_from_waiting_connections_first_oldest_first():
    table, (idle, busy, fresh, hand, reading) = table_of(IDLE, BUSY, NEW, HANDSHAKE, READING)
    order = []
    while (victim := table.victim()) is not None:
        order.append(victim)
        table.remove(victim)
    assert order == [fresh, hand, reading, idle]      # being served is never a victim
    assert len(table) == 1


def test_a_wait_keeps_its_place_and_a_new_request_on_a_kept_alive_connection_waits_last():
    table, (a, b, c) = table_of(HANDSHAKE, NEW, IDLE)
    moved(table, a, NEW)          # its handshake done: still the oldest wait
    moved(table, a, READING)
    assert table.victim() is a
    moved(table, c, READING)      # the kept-alive one starts a request: the youngest wait
    moved(table, a, BUSY)
    assert table.victim() is b
    table.remove(b)
    assert table.victim() is c


def test_kept_alive_connections_go_least_recently_used_first():
    table, (a, b, c) = table_of(BUSY, BUSY, BUSY)
    assert table.victim() is None
    for e in (a, b, c):
        moved(table, e, WRITING)
        moved(table, e, IDLE)
    moved(table, a, READING)
    moved(table, a, BUSY)
    moved(table, a, IDLE)         # served again: now the most recently used
    assert [table.victim()] == [b]
    table.remove(b)
    assert table.victim() is c and not table.full


def test_a_closed_connection_is_never_a_victim_even_if_its_number_comes_back():
    table, (a,) = table_of(NEW)
    table.remove(a)
    moved(table, a, IDLE)         # a late state change of the closed connection
    assert table.victim() is None
    b = Entry(a.key, BUSY)        # the same file descriptor, a new connection being served
    table.add(b)
    moved(table, a, READING)
    assert table.victim() is None and len(table) == 1


def test_a_table_is_full_at_its_capacity():
    table, entries = table_of(NEW, NEW, capacity=2)
    assert table.full
    table.remove(entries[0])
    table.remove(entries[0])      # removing twice changes nothing
    assert not table.full and len(table) == 1


# --- the real server -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory, certs) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("flooded"), certs, None, "--health-port", str(free_port())) as srv:
        yield srv


def health_port(server: Server) -> int:
    args = server.proc.args
    return int(args[args.index("--health-port") + 1])


def probe(server: Server, path: str = "/healthz") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", health_port(server), timeout=PROBE_TIMEOUT)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


def reviews_answered(server: Server, certs: Path, count: int) -> int:
    """Reviews answered in time, each on a new connection, as the API server dials them."""
    answered = 0
    for _ in range(count):
        client = Client(server.port, certs / "ca.crt")
        client._connection().timeout = TIMEOUT_SECONDS
        try:
            answered += client.review(claim())["allowed"] is True
        except (OSError, http.client.HTTPException):
            pass
        finally:
            client.close()
    return answered


def silent_tls(port: int, cafile: Path, count: int) -> list[socket.socket]:
    """Connections that finish the TLS handshake and then send nothing."""
    context = ssl.create_default_context(cafile=str(cafile))
    out: list[socket.socket] = []
    for _ in range(count):
        raw = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_SECONDS)
        try:
            out.append(context.wrap_socket(raw, server_hostname=HOSTNAME))
        except OSError:     # a handshake cut short: its place was taken by a younger one
            raw.close()
    return out


def silent_plain(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_SECONDS) for _ in range(count)]


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (without waiting)."""
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        sock.setblocking(False)
        return sock.recv(1) == b""
    except (ssl.SSLWantReadError, BlockingIOError):
        return False
    except OSError:
        return True


def wait_closed(socks: list[socket.socket], seconds: float) -> list[socket.socket]:
    """Wait up to ``seconds`` for the server to close every one; those it did not."""
    deadline = time.monotonic() + seconds
    left = list(socks)
    while left and time.monotonic() < deadline:
        ready = select.select(left, [], [], max(0.0, min(0.5, deadline - time.monotonic())))[0]
        left = [s for s in left if s not in ready or not closed_by_server(s)]
    return left


def close_all(socks: list[socket.socket]) -> None:
    for s in socks:
        s.close()


def test_540_idle_connections_leave_reviews_and_probes_answered(server, certs):
    held: list[socket.socket] = []
    try:
        held += silent_tls(server.port, certs / "ca.crt", 270)
        held += silent_plain(health_port(server), 270)
        assert reviews_answered(server, certs, 30) >= 28
        assert all(probe(server, path) == 200 for path in ("/healthz", "/readyz", "/healthz"))
    finally:
        close_all(held)


def test_silent_connections_are_closed_after_the_first_request_timeout_and_kept_alive_ones_stay(server, certs):
    kept = Client(server.port, certs / "ca.crt")
    silent: list[socket.socket] = []
    try:
        assert kept.review(claim())["allowed"] is True          # served, now kept alive
        silent = silent_tls(server.port, certs / "ca.crt", 5) + silent_plain(health_port(server), 5)
        assert len(silent) == 10
        assert wait_closed(silent, HANDSHAKE_SECONDS + FIRST_REQUEST_SECONDS + 5) == []
        sock = kept.conn.sock
        assert not closed_by_server(sock)
        sock.settimeout(TIMEOUT_SECONDS)
        assert kept.review(claim())["allowed"] is True and kept.conn.sock is sock
    finally:
        kept.close()
        close_all(silent)


def test_a_health_port_flood_neither_stops_reviews_nor_closes_review_connections(server, certs):
    kept = Client(server.port, certs / "ca.crt")
    flood: list[socket.socket] = []
    try:
        assert kept.review(claim())["allowed"] is True
        sock = kept.conn.sock
        flood = silent_plain(health_port(server), 2 * WORKERS * TABLE)
        for s in flood[::4]:
            try:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHo")   # and some that stall in the head
            except OSError:
                pass                                        # already closed to make room
        assert reviews_answered(server, certs, 10) == 10
        assert kept.review(claim())["allowed"] is True and kept.conn.sock is sock
        assert probe(server) == 200                         # the flood's oldest made room for the probe
    finally:
        kept.close()
        close_all(flood)


def test_a_review_port_flood_neither_stops_probes_nor_closes_kept_alive_connections(server, certs):
    scraper = http.client.HTTPConnection("127.0.0.1", health_port(server), timeout=PROBE_TIMEOUT)
    kept = Client(server.port, certs / "ca.crt")
    flood: list[socket.socket] = []
    try:
        scraper.request("GET", "/metrics")                  # Prometheus keeps its connection
        assert scraper.getresponse().read()
        scraper_sock = scraper.sock
        assert kept.review(claim())["allowed"] is True
        kept_sock = kept.conn.sock
        flood = silent_tls(server.port, certs / "ca.crt", WORKERS * TABLE + 100)   # more than both tables hold
        assert sum(not closed_by_server(s) for s in flood) <= WORKERS * TABLE
        assert all(probe(server) == 200 for _ in range(3))
        assert reviews_answered(server, certs, 10) == 10
        scraper.request("GET", "/metrics")
        assert scraper.getresponse().status == 200 and scraper.sock is scraper_sock
        # Silent newcomers make room among themselves before a kept-alive connection is touched.
        assert kept.review(claim())["allowed"] is True and kept.conn.sock is kept_sock
    finally:
        scraper.close()
        kept.close()
        close_all(flood)


@pytest.mark.slow  # seconds of real backoff and deadlines: run by CI with the slow suites
def test_trickled_heads_and_bodies_are_closed_by_their_deadlines(server, certs):
    # Slowloris: a byte every half second keeps neither the head past HEAD_SECONDS nor the request
    # past REQUEST_SECONDS (deadlines count from the first byte; arriving bytes do not extend them).
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    head = b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 200
    body_head = b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
    closed: dict[str, bool] = {}

    def trickle(name: str, first: bytes, drip: bytes, seconds: float) -> None:
        raw = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT_SECONDS)
        sock = context.wrap_socket(raw, server_hostname=HOSTNAME)
        deadline = time.monotonic() + seconds
        try:
            sock.sendall(first)
            for i in range(len(drip)):
                if time.monotonic() >= deadline:
                    break
                sock.sendall(drip[i:i + 1])
                if select.select([sock], [], [], 0.5)[0] and closed_by_server(sock):
                    closed[name] = True
                    return
            closed[name] = False
        except OSError:
            closed[name] = True
        finally:
            sock.close()

    threads = [threading.Thread(target=trickle, args=("head", b"", head, HEAD_SECONDS + 5)),
               threading.Thread(target=trickle, args=("body", body_head, b"{" * 1000, REQUEST_SECONDS + 5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=REQUEST_SECONDS + 15)
    assert closed == {"head": True, "body": True}
