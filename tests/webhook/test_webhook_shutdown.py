"""Process faults of the real server: SIGTERM under traffic fails no call, the watcher dies with its master.

The traffic comes from :class:`GoTransport`, which uses connections the way the API server's
webhook client (Go's ``net/http`` Transport) does, so "no failed call" means what it would mean
for the API server. Every server, connection and wait is bounded; loopback only.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

import h11
import pytest

from fakeapi import FakeApiServer, FakeCluster
from test_webhook_server import HOSTNAME, REQUEST_TIMEOUT, Server, claim, review_of
from test_webhook_watch import TOKEN, kubeconfig, slice_of, wait_for

# After SIGTERM the endpoint leaves the Service: clients stop dialling it about this much later,
# and keep using the connections they have.
ENDPOINT_REMOVAL_SECONDS = 1.0


class NothingWritten(Exception):
    """The request failed before any byte of it went out: Go's transport sends it again elsewhere."""


class GoTransport:
    """Keep-alive HTTPS the way Go's ``net/http`` Transport uses it (the API server's webhook client).

    * one pool of idle connections shared by concurrent callers, the most recently used taken first;
    * a connection the server closed while it sat idle is dropped before use (Go's read loop sees
      the EOF as it comes);
    * a new connection when none is idle, as long as ``may_dial()`` (the endpoint is in the Service);
    * ``Connection: close`` honoured; a failed request is sent again only if none of it was written.
    """

    def __init__(self, port: int, cafile: Path, may_dial: Callable[[], bool]) -> None:
        self.port = port
        self.context = ssl.create_default_context(cafile=str(cafile))
        self.may_dial = may_dial
        self.idle: list[tuple[ssl.SSLSocket, h11.Connection]] = []
        self.lock = threading.Lock()
        self.dialled = 0

    def post(self, body: bytes) -> tuple[int, dict[str, str], bytes] | None:
        """The answer to one call, or None if it would have gone to another replica."""
        while True:
            conn = self._take()
            if conn is None:
                return None
            try:
                return self._round_trip(conn, body)
            except NothingWritten:
                continue

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for sock, _ in idle:
            sock.close()

    def _take(self) -> tuple[ssl.SSLSocket, h11.Connection] | None:
        with self.lock:
            while self.idle:
                sock, conn = self.idle.pop()
                if not _closed_by_peer(sock):
                    return sock, conn
                sock.close()
            if not self.may_dial():
                return None
            self.dialled += 1
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=REQUEST_TIMEOUT)
        return self.context.wrap_socket(raw, server_hostname=HOSTNAME), h11.Connection(h11.CLIENT)

    def _round_trip(self, conn: tuple[ssl.SSLSocket, h11.Connection], body: bytes) -> tuple[int, dict[str, str], bytes]:
        sock, http = conn
        data = http.send(h11.Request(method="POST", target="/validate", headers=[
            ("Host", HOSTNAME), ("Content-Type", "application/json"), ("Content-Length", str(len(body)))]))
        data += http.send(h11.Data(data=body)) + http.send(h11.EndOfMessage())
        try:
            sent = sock.send(data)
        except OSError as exc:
            sock.close()
            raise NothingWritten() from exc
        try:
            sock.sendall(data[sent:])
            status, headers, answer = _read_response(sock, http)
        except BaseException:
            sock.close()
            raise
        if http.our_state is h11.DONE and http.their_state is h11.DONE:
            http.start_next_cycle()
            with self.lock:
                self.idle.append(conn)
        else:
            sock.close()
        return status, headers, answer


def _closed_by_peer(sock: ssl.SSLSocket) -> bool:
    """Whether an idle connection is done for: the server closed it (or sent what nobody asked for)."""
    sock.setblocking(False)
    try:
        sock.recv(1)
        return True
    except (ssl.SSLWantReadError, BlockingIOError):
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(REQUEST_TIMEOUT)


def _read_response(sock: ssl.SSLSocket, http: h11.Connection) -> tuple[int, dict[str, str], bytes]:
    status, headers, body = 0, {}, b""
    while True:
        event = http.next_event()
        if event is h11.NEED_DATA:
            http.receive_data(sock.recv(65536))
        elif isinstance(event, h11.Response):
            status = event.status_code
            headers = {k.decode().lower(): v.decode() for k, v in event.headers}
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return status, headers, body
        elif isinstance(event, h11.ConnectionClosed):
            raise ConnectionError("closed before the answer")


def sigterm_under_traffic(tmp: Path, certs: Path) -> dict[str, int | list[str]]:
    """One server stopped with SIGTERM while callers keep sending reviews; what the callers saw."""
    srv = Server(tmp, certs / "tls.crt", certs / "tls.key")
    stopped_at: list[float] = []
    counts = {"calls": 0, "after_stop": 0, "told_to_close": 0}
    failures: list[str] = []
    lock = threading.Lock()

    def may_dial() -> bool:
        return not stopped_at or time.monotonic() < stopped_at[0] + ENDPOINT_REMOVAL_SECONDS

    transports = [GoTransport(srv.port, certs / "ca.crt", may_dial) for _ in range(2)]
    unused = GoTransport(srv.port, certs / "ca.crt", may_dial)     # one call, then its connection sits idle

    def caller(transport: GoTransport, pause: float) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            body = json.dumps(review_of(claim(), "CREATE", None, "", False, str(uuid.uuid4()))).encode()
            try:
                answer = transport.post(body)
            except Exception as exc:   # every failed call is a finding, collected for the message
                with lock:
                    failures.append(repr(exc))
                continue
            if answer is None:
                return
            status, headers, text = answer
            with lock:
                counts["calls"] += 1
                counts["after_stop"] += bool(stopped_at)
                counts["told_to_close"] += headers.get("connection") == "close"
                if status != 200 or "response" not in json.loads(text):
                    failures.append(f"{status} {text[:200]!r}")
            time.sleep(pause)

    try:
        srv.wait_ready(certs / "ca.crt")
        # Three busy callers and one that pauses on each transport: idle connections wait in the pools.
        threads = [threading.Thread(target=caller, args=(t, pause)) for t in transports for pause in (0, 0, 0, 0.05)]
        for t in threads:
            t.start()
        assert unused.post(json.dumps(review_of(claim(), "CREATE", None, "", False, "idle")).encode())
        wait_for(lambda: counts["calls"] >= 60, seconds=30, what="traffic before the stop")
        stopped_at.append(time.monotonic())
        srv.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
        code = srv.proc.wait(timeout=30)
        idle_closed = _closed_by_peer(unused.idle[0][0])
    finally:
        for transport in (*transports, unused):
            transport.close()
        srv.stop()
    return {**counts, "failures": failures, "exit": code, "dialled": sum(t.dialled for t in transports),
            "idle_closed": idle_closed}


def test_sigterm_under_keep_alive_traffic_fails_no_call(tmp_path, certs):
    seen = sigterm_under_traffic(tmp_path, certs)
    assert seen["failures"] == []
    assert seen["exit"] == 0 and seen["idle_closed"]
    # The stop was under way while calls came: answered, and told to close their connections.
    assert seen["after_stop"] > 0 and seen["told_to_close"] > 0


@pytest.mark.slow
def test_repeated_sigterms_under_traffic_fail_no_call(tmp_path, certs):
    runs = []
    for i in range(5):
        (tmp_path / str(i)).mkdir()
        runs.append(sigterm_under_traffic(tmp_path / str(i), certs))
    assert [r["failures"] for r in runs] == [[]] * 5
    assert all(r["exit"] == 0 and r["after_stop"] > 0 and r["idle_closed"] for r in runs)


# --- the watcher ends with its master --------------------------------------------------------------------

def children(pid: int) -> list[int]:
    out = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            out.append(int(status.parent.name))
    return out


def running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"    # a zombie has ended; only its parent's wait is missing


def connections_to(port: int) -> int:
    """Open TCP connections from this machine to ``port`` on 127.0.0.1 (client ends, ESTABLISHED)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, state = fields[2], fields[3]
        count += state == "01" and int(remote.split(":")[1], 16) == port
    return count


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "stopped"])
def test_the_watcher_and_its_watches_end_with_the_master(tmp_path, certs, sig):
    cluster = FakeCluster()
    cluster.create("deviceclasses", {"metadata": {"name": "gpu.example.com"}, "spec": {}})
    cluster.create("resourceslices", slice_of("node-0"))
    with FakeApiServer(cluster) as api:
        api.faults.token = TOKEN
        api_port = api.httpd.server_address[1]
        srv = Server(tmp_path, certs / "tls.crt", certs / "tls.key", "--watch",
                     "--kubeconfig", str(kubeconfig(tmp_path / "kubeconfig", api.url)))
        spawned: list[int] = []
        try:
            srv.wait_ready(certs / "ca.crt")          # ready: every resource listed, its watch open
            assert connections_to(api_port) > 0
            spawned = children(srv.proc.pid)         # the workers and the watcher
            assert len(spawned) == 3
            srv.proc.send_signal(sig)
            srv.proc.wait(timeout=30)
            if sig == signal.SIGTERM:                # a master that stops waits for all of them
                assert not any(running(pid) for pid in spawned) and connections_to(api_port) == 0
            wait_for(lambda: not any(running(pid) for pid in spawned), seconds=15, what="the master's children to end")
            wait_for(lambda: connections_to(api_port) == 0, seconds=5, what="the watches to close")
        finally:
            for pid in spawned:          # this test's own processes, if the watcher outlived its master
                if running(pid):
                    os.kill(pid, signal.SIGKILL)
            srv.stop()
    if sig == signal.SIGTERM:            # and the watcher stopped before its folder went
        assert [line for line in srv.log_lines() if line.get("level") == "error"] == []


def test_a_watcher_whose_master_is_gone_exits_even_if_it_ignores_the_stop():
    # Without the parent-death signal (other systems; a master gone before it was asked for) the
    # watcher's own check of its parent stops it, and ends it if it does not stop.
    from dralint_webhook.gunicorn_conf import ORPHAN_EXIT_SECONDS, PARENT_POLL_SECONDS

    script = textwrap.dedent("""
        import os, signal, sys, threading, time
        from dralint_webhook.gunicorn_conf import _orphan_exit
        master = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)     # a watcher that does not stop when asked
            threading.Thread(target=_orphan_exit, args=(master,), daemon=True).start()
            time.sleep(60)
            os._exit(0)
        print(pid, flush=True)
        os._exit(0)                                          # the master, gone without a word
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    orphan = int(proc.stdout.readline())
    proc.wait(timeout=10)
    try:
        wait_for(lambda: not running(orphan), seconds=PARENT_POLL_SECONDS + ORPHAN_EXIT_SECONDS + 10,
                 what="the orphaned watcher to end")
    finally:
        if running(orphan):             # this test's own process
            os.kill(orphan, signal.SIGKILL)
