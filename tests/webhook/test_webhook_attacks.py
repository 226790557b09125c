"""Each attack an adversary would try against the real server (gunicorn, our worker, TLS) on 127.0.0.1.

Every test is bounded in connections, bytes and time, and checks behaviour (answered, refused,
not crashed), never a speed: client timeouts are the API server's own (the webhook's
``timeoutSeconds``), which is what "starved" means here.
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from dralint_webhook.admission import MAX_BODY_BYTES
from dralint_webhook.manifests import TIMEOUT_SECONDS
from test_webhook_server import Client, Server, children, claim, free_port, review_of, serving

# The first bytes of a TLS ClientHello record: a handshake that never goes on.
CLIENT_HELLO_START = bytes.fromhex("1603010200010001fc0303") + os.urandom(16)


@pytest.fixture(scope="module")
def server(tmp_path_factory, certs) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("attacked"), certs, "onInternalError: allow\n", "--threads", "8",
                 "--health-port", str(free_port())) as srv:
        yield srv


def health_port(server: Server) -> int:
    args = server.proc.args
    return int(args[args.index("--health-port") + 1])


def plain_get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_SECONDS)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def post(client: Client, body: bytes) -> tuple[int, dict]:
    status, data = client.request("POST", "/validate", body)
    return status, json.loads(data)


def review_body(obj: dict, operation: str = "CREATE", old: dict | None = None) -> bytes:
    return json.dumps(review_of(obj, operation, old, "", False, str(uuid.uuid4()))).encode()


def worker_rss(server: Server) -> list[int]:
    """Resident memory (bytes) of the server's child processes (its workers)."""
    return [rss for _, rss in children(server)]


# --- 1. stalled connections ------------------------------------------------------------------------

def test_stalled_handshakes_and_idle_connections_starve_nothing(server, certs):
    stalled: list[socket.socket] = []
    try:
        for i in range(600):     # more than the workers' connection tables hold together (2 x 256)
            s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            if i % 2:
                s.sendall(CLIENT_HELLO_START)
            stalled.append(s)
        for _ in range(3):
            assert plain_get(health_port(server), "/healthz")[0] == 200
            assert plain_get(health_port(server), "/readyz")[0] == 200
            client = Client(server.port, certs / "ca.crt")
            try:
                assert client.review(claim())["allowed"] is True
                assert client.request("GET", "/healthz")[0] == 200
            finally:
                client.close()
    finally:
        for s in stalled:
            s.close()


def test_a_stalled_request_head_is_closed(server, certs):
    client = Client(server.port, certs / "ca.crt")
    conn = client._connection()
    conn.connect()
    conn.sock.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Le")   # and stalls
    conn.sock.settimeout(30)
    started = time.monotonic()
    assert conn.sock.recv(1) == b""          # the server closes it (its request deadline)
    assert time.monotonic() - started < 30
    client.close()


# --- 2. expensive CEL ------------------------------------------------------------------------------

def big_selector(i: int) -> str:
    parts, n = [], 0
    while sum(len(p) + 4 for p in parts) < 9800:
        parts.append(f'device.attributes["gpu.example.com"].model == "m{i}-{n}"')
        n += 1
    return " || ".join(parts)


def test_expensive_selectors_are_answered_before_the_api_server_gives_up(server, certs):
    obj = claim()
    obj["spec"]["devices"]["requests"] = [
        {"name": f"r{r}", "exactly": {"deviceClassName": "gpu.example.com",
                                      "selectors": [{"cel": {"expression": big_selector(r * 32 + j)}}
                                                    for j in range(32)]}} for r in range(5)]
    client = Client(server.port, certs / "ca.crt")
    try:
        started = time.monotonic()
        status, answer = post(client, review_body(obj))
        assert time.monotonic() - started < TIMEOUT_SECONDS
        assert status == 200
        response = answer["response"]
        assert response["allowed"] is True and "deadline" in response["warnings"][0]
        # The worker is still there and answers the next review at once.
        assert client.review(claim())["allowed"] is True
    finally:
        client.close()
    assert max(worker_rss(server)) < 600 * 2**20


# --- 3. bodies the API server can send --------------------------------------------------------------

def test_a_review_of_escaped_characters_is_judged_not_refused(server, certs):
    obj = claim()
    obj["metadata"]["annotations"] = {"note": "<" * 200_000}
    literal = '"' + "<" * 9_000 + '" != device.driver'
    obj["spec"]["devices"]["requests"] = [
        {"name": f"r{r}", "exactly": {"deviceClassName": "gpu.example.com",
                                      "selectors": [{"cel": {"expression": literal}}] * 2}} for r in range(32)]
    # Go's encoder writes each `<` as \u003c: what the API server sends for this object.
    body = review_body(obj).replace(b"<", b"\\u003c")
    assert 4_000_000 < len(body) < MAX_BODY_BYTES
    client = Client(server.port, certs / "ca.crt")
    try:
        status, answer = post(client, body)
        assert status == 200 and "response" in answer
    finally:
        client.close()


def test_chunked_bodies_over_the_limit_are_refused_not_cut(server, certs):
    client = Client(server.port, certs / "ca.crt")
    conn = client._connection()
    conn.putrequest("POST", "/validate")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    chunk = b"x" * (1 << 20)
    try:
        for _ in range(MAX_BODY_BYTES // len(chunk) + 2):
            conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        conn.send(b"0\r\n\r\n")
    except OSError:
        pass      # the server may answer and close before the last chunk
    resp = conn.getresponse()
    assert resp.status == 413
    client.close()


# --- 5. metrics that survive workers, with bounded labels ---------------------------------------------

def metric(text: str, line_start: str) -> float:
    return sum(float(x.rsplit(" ", 1)[1]) for x in text.splitlines() if x.startswith(line_start))


def test_a_killed_worker_loses_no_counts_and_invented_kinds_stay_one_label(server, certs):
    client = Client(server.port, certs / "ca.crt")
    try:
        for i in range(50):
            obj = {"apiVersion": "example.com/v1", "kind": f"Invented{i}", "metadata": {"name": "x"}}
            assert client.review(obj)["allowed"] is True
        time.sleep(1.5)          # a worker writes its snapshot once a second; a SIGKILL loses at most that
        before = plain_get(health_port(server), "/metrics")[1].decode()
        victim = sorted(Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children").read_text().split())[0]
        os.kill(int(victim), signal.SIGKILL)
        server.proc.send_signal(signal.SIGHUP)   # and every worker replaced, gracefully
        time.sleep(2.0)
        for _ in range(5):
            client.close()
            assert client.review(claim())["allowed"] is True
        deadline = time.monotonic() + 10
        while True:
            after = plain_get(health_port(server), "/metrics")[1].decode()
            total = metric(after, "dralint_webhook_requests_total{")
            if total >= metric(before, "dralint_webhook_requests_total{") + 5 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        client.close()
    assert metric(after, 'dralint_webhook_requests_total{kind="other"') >= 50
    assert "Invented" not in after and len(after) < 100_000
    assert total >= metric(before, "dralint_webhook_requests_total{") + 5


# --- 6. answers cut ---------------------------------------------------------------------------------------

def test_answers_stay_small_whatever_the_request_quotes(server, certs):
    obj = claim()
    obj["spec"]["devices"]["requests"] = [{"name": f"{'N' * 30_000}{i}", "exactly": {
        "deviceClassName": "X" * 30_000, "count": "many " * 1000}} for i in range(90)]
    body = review_body(obj)
    assert len(body) > 2_500_000
    client = Client(server.port, certs / "ca.crt")
    try:
        status, data = client.request("POST", "/validate", body)
    finally:
        client.close()
    assert status == 200 and json.loads(data)["response"]["allowed"] is False
    assert len(data) < 200_000


# --- 9. graceful stop with kept-alive connections -----------------------------------------------------------

def test_sigterm_answers_a_request_on_a_kept_alive_connection(tmp_path, certs):
    srv = Server(tmp_path, certs / "tls.crt", certs / "tls.key")
    try:
        srv.wait_ready(certs / "ca.crt")
        client = Client(srv.port, certs / "ca.crt")
        assert client.review(claim())["allowed"] is True     # the connection is kept alive
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        conn = client._connection()
        conn.request("POST", "/validate", body=review_body(claim()), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("Connection") == "close"
        assert json.loads(resp.read())["response"]["allowed"] is True
        client.close()
    finally:
        assert srv.stop() == 0
