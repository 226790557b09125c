"""The real thing: ``dralint-webhook serve`` (gunicorn, 2 workers) over TLS on 127.0.0.1.

The command runs as ``python -m dralint_webhook`` (the console script's own ``main``), so the
test uses the interpreter it runs under whatever the PATH says.

Certificates come from our own ``certs`` command; every request is verified against its CA with
the Service's DNS name, as the API server does. Each server is bounded in time and stopped with
SIGTERM by the test that started it.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import platform
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from dralint import __version__
from dralint_webhook.admission import MAX_BODY_BYTES

SERVICE, NAMESPACE = "dralint-webhook", "dralint"
HOSTNAME = f"{SERVICE}.{NAMESPACE}.svc"
START_TIMEOUT = 60.0
REQUEST_TIMEOUT = 10.0
# Who sends every review of these tests, as the API server would say.
USER = {"username": "alice@example.com", "uid": "4f1c", "groups": ["ml-team", "system:authenticated"]}


def make_certs(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "dralint_webhook", "certs", "--service", SERVICE,
                    "--namespace", NAMESPACE, "--out", str(out)], check=True, capture_output=True, timeout=60)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """Keep-alive HTTPS to the webhook, verifying the certificate for the Service's name."""

    def __init__(self, port: int, cafile: Path) -> None:
        self.port = port
        self.context = ssl.create_default_context(cafile=str(cafile))
        self.conn: http.client.HTTPSConnection | None = None

    def _connection(self) -> http.client.HTTPSConnection:
        if self.conn is None:
            context = self.context

            class Conn(http.client.HTTPSConnection):
                def connect(self) -> None:
                    sock = socket.create_connection((self.host, self.port), self.timeout)
                    self.sock = context.wrap_socket(sock, server_hostname=HOSTNAME)

            self.conn = Conn("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT, context=context)
        return self.conn

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        conn = self._connection()
        try:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, resp.read()
        except Exception:
            self.close()
            raise

    def review(self, obj: dict | None, operation: str = "CREATE", old: dict | None = None, sub: str = "",
               dry_run: bool = False) -> dict:
        uid = str(uuid.uuid4())
        body = json.dumps(review_of(obj, operation, old, sub, dry_run, uid)).encode()
        status, body = self.request("POST", "/validate", body)
        assert status == 200, body
        out = json.loads(body)
        assert out["response"]["uid"] == uid and "patch" not in out["response"]
        return out["response"]

    def peer_certificate(self) -> bytes:
        conn = self._connection()
        if conn.sock is None:
            conn.connect()
        return conn.sock.getpeercert(binary_form=True)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def review_of(obj: dict | None, operation: str, old: dict | None, sub: str, dry_run: bool, uid: str) -> dict:
    src = obj or old or {}
    group, _, version = src.get("apiVersion", "v1").rpartition("/")
    kind = src.get("kind", "Pod")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "kind": {"group": group, "version": version, "kind": kind},
                        "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
                        "subResource": sub, "operation": operation, "namespace": "ml", "name": "train",
                        "object": obj, "oldObject": old, "dryRun": dry_run, "userInfo": USER}}


def claim(count: Any = 1, device_class: str = "gpu.example.com") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "train", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class,
                                                                          "count": count}}]}}}


class Server:
    """One ``dralint-webhook serve`` subprocess."""

    def __init__(self, tmp: Path, cert: Path, key: Path, *extra: str) -> None:
        self.port = free_port()
        # The plain port of probes and metrics, as the deployment has one: the test's, or one of its own.
        if "--health-port" in extra:
            self.health_port = int(extra[extra.index("--health-port") + 1])
        else:
            self.health_port = free_port()
            extra = (*extra, "--health-port", str(self.health_port))
        self.log = tmp / f"server-{self.port}.log"
        cmd = [sys.executable, "-m", "dralint_webhook", "serve", "--cert", str(cert), "--key", str(key),
               "--bind", "127.0.0.1", "--port", str(self.port), "--workers", "2", "--reload-interval", "0.2", *extra]
        self._log_file = self.log.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log_file, stderr=subprocess.STDOUT)

    def wait_ready(self, cafile: Path) -> None:
        client = Client(self.port, cafile)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.log.read_text()}")
            try:
                if client.request("GET", "/readyz")[0] == 200:
                    client.close()
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"server not ready: {self.log.read_text()}")

    def scrape(self) -> str:
        """``/metrics`` from the health port, as Prometheus reads it."""
        conn = http.client.HTTPConnection("127.0.0.1", self.health_port, timeout=REQUEST_TIMEOUT)
        try:
            conn.request("GET", "/metrics")
            resp = conn.getresponse()
            body = resp.read().decode()
            assert resp.status == 200, body
            return body
        finally:
            conn.close()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log_file.close()
        return self.proc.returncode

    def log_lines(self) -> list[dict]:
        out = []
        for line in self.log.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out


def children(server: Server) -> list[tuple[int, int]]:
    """(pid, resident bytes) of the server's child processes: its workers, and the watcher with ``--watch``."""
    out = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if fields.get("PPid", "").strip() == str(server.proc.pid):
            out.append((int(status.parent.name), int(fields.get("VmRSS", "0 kB").split()[0]) * 1024))
    return out


@contextmanager
def serving(tmp: Path, certs: Path, policy: str | None, *extra: str) -> Iterator[Server]:
    """A ready server (with ``policy`` as its policy file, if any), stopped at the end."""
    if policy is not None:
        (tmp / "policy.yaml").write_text(policy)
        extra = ("--config", str(tmp / "policy.yaml"), *extra)
    srv = Server(tmp, certs / "tls.crt", certs / "tls.key", *extra)
    try:
        srv.wait_ready(certs / "ca.crt")
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory, certs) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("server"), certs, "severities: {DRA208: warning}\n") as srv:
        yield srv


@pytest.fixture
def client(server, certs) -> Iterator[Client]:
    c = Client(server.port, certs / "ca.crt")
    yield c
    c.close()


def test_allowed_denied_and_warned_over_tls(client):
    assert client.review(claim())["allowed"] is True
    denied = client.review(claim(count="2"))
    assert denied["allowed"] is False and denied["status"]["code"] == 422
    assert denied["status"]["details"]["causes"][0]["field"] == "spec.devices.requests[0].exactly.count"
    warned = client.review(claim(device_class="Not_A_Class"))
    assert warned["allowed"] is True and "DRA208" in warned["warnings"][0]
    assert client.conn is not None and client.conn.sock.version() in ("TLSv1.2", "TLSv1.3")


def test_update_status_and_dry_run(client):
    assert client.review(claim(count=2), "UPDATE", old=claim(count=1))["allowed"] is False
    relabelled = claim()
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert client.review(relabelled, "UPDATE", old=claim())["allowed"] is True
    bad_status = claim()
    bad_status["status"] = {"reservedFor": [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(300)]}
    assert client.review(bad_status, "UPDATE", old=claim(), sub="status")["allowed"] is False
    assert client.review(claim(count="2"), dry_run=True)["allowed"] is False
    assert client.review(None, "DELETE", old=claim(count="2"))["allowed"] is True


def test_keep_alive_serves_many_requests_on_one_connection(client):
    client.review(claim())
    sock = client.conn.sock
    for _ in range(20):
        client.review(claim())
    assert client.conn.sock is sock


def test_malformed_bodies_get_400(client):
    for body in (b"{", b"[]", json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode()):
        status, text = client.request("POST", "/validate", body)
        assert status == 400 and json.loads(text)["error"]


def test_oversized_bodies_get_413(client):
    # The server answers from Content-Length without reading the body; sending all of it would race
    # the server's close (a reset while the client is still writing), so only the start is sent.
    conn = client._connection()
    conn.putrequest("POST", "/validate")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(MAX_BODY_BYTES + 1))
    conn.endheaders(message_body=b" " * 1024)
    resp = conn.getresponse()
    status, text = resp.status, resp.read()
    client.close()
    assert status == 413 and "limit" in json.loads(text)["error"]


def test_health_readiness_metrics_and_logs(client, server):
    assert client.request("GET", "/healthz")[0] == 200
    assert client.request("GET", "/readyz")[0] == 200
    # What the API server reaches serves reviews and probes, never the metrics.
    status, text = client.request("GET", "/metrics")
    assert status == 404 and "--health-port" in json.loads(text)["error"]
    marker = client.review(claim(count="2"))
    assert marker["allowed"] is False
    # Snapshots of the other worker arrive within a second or so: poll, bounded.
    deadline = time.monotonic() + 15
    while True:
        metrics = server.scrape()
        if 'dralint_webhook_findings_total{rule="DRA102",severity="error"}' in metrics or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert 'dralint_webhook_requests_total{kind="ResourceClaim",operation="CREATE",allowed="false"}' in metrics
    assert "dralint_webhook_review_duration_seconds_bucket" in metrics
    reviews = [line for line in server.log_lines() if line.get("msg") == "review"]
    keys = {"uid", "kind", "namespace", "name", "operation", "allowed", "duration_ms", "rules", "user", "denied_by"}
    assert reviews and keys <= set(reviews[-1])
    refused = next(line for line in reversed(reviews) if line["uid"] == marker["uid"])
    assert (refused["kind"], refused["namespace"], refused["name"], refused["operation"]) == \
        ("ResourceClaim.resource.k8s.io/v1", "ml", "train", "CREATE")
    assert refused["user"] == {"username": USER["username"], "groups": USER["groups"]}
    assert refused["allowed"] is False and refused["denied_by"] == ["DRA102"] and "DRA102" in refused["rules"]
    assert all(line["denied_by"] == [] for line in reviews if line["allowed"])


def test_metrics_name_every_process_of_the_replica(server, certs):
    """Build info once, and each process's numbers and what each worker serves, by role and slot."""
    policy = hashlib.sha256((server.log.parent / "policy.yaml").read_bytes()).hexdigest()
    expected = {("master", "0"), ("worker", "0"), ("worker", "1")}
    deadline = time.monotonic() + 15
    while True:     # both workers have written their first snapshot by the time they serve; bounded anyway
        metrics = server.scrape()
        if labelled(metrics, "process_resident_memory_bytes") == expected or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert labelled(metrics, "process_resident_memory_bytes") == expected
    for family in ("process_cpu_seconds_total", "process_start_time_seconds", "process_open_fds",
                   "process_max_fds", "process_virtual_memory_bytes"):
        assert labelled(metrics, family) == expected, family
    assert len(children(server)) == 2       # nothing else runs: the series are the replica's processes
    (build,) = [line for line in metrics.splitlines() if line.startswith("dralint_webhook_build_info{")]
    assert f'version="{__version__}"' in build and f'python="{platform.python_version()}"' in build
    for slot in ("0", "1"):
        assert f'dralint_webhook_policy_info{{role="worker",slot="{slot}",sha256="{policy}"}} 1' in metrics
        assert f'dralint_webhook_reload_success{{role="worker",slot="{slot}",what="policy"}} 1' in metrics
    assert 'role="master"' not in "".join(line for line in metrics.splitlines() if line.startswith("dralint_"))


def labelled(metrics: str, family: str) -> set[tuple[str, str]]:
    """The (role, slot) of each series of ``family``."""
    return set(re.findall(rf'^{family}{{role="(\w+)",slot="(\d+)"}} [0-9.e+]+$', metrics, re.MULTILINE))


def test_every_line_the_server_writes_is_json(server, client):
    client.review(claim())
    lines = server.log.read_text().splitlines()
    assert lines and [line for line in lines if not _is_json_object(line)] == []
    first = json.loads(lines[0])
    assert first["role"] == "master" and first["level"] == "info"
    records = [json.loads(line) for line in lines]
    master = first["pid"]
    assert all(r.get("role") == "master" for r in records if r["pid"] == master)
    # A worker names itself once forked; only gunicorn's "Booting worker" line comes before that.
    # Which worker answers the review is the kernel's choice, so only those that wrote are looked at.
    workers = [r for r in records if r["pid"] != master and not r["msg"].startswith("Booting worker")]
    assert workers and all(r.get("role") == "worker" and r.get("slot") in (0, 1) for r in workers)


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False


def test_metrics_add_up_across_workers(tmp_path, certs):
    srv = Server(tmp_path, certs / "tls.crt", certs / "tls.key")
    try:
        srv.wait_ready(certs / "ca.crt")
        sent = 40
        for _ in range(sent):   # a new connection each time: both workers get some
            c = Client(srv.port, certs / "ca.crt")
            c.review(claim())
            c.close()
        line = 'dralint_webhook_requests_total{kind="ResourceClaim",operation="CREATE",allowed="true"} '
        deadline = time.monotonic() + 15
        while True:
            text = srv.scrape()
            count = next((int(float(x[len(line):])) for x in text.splitlines() if x.startswith(line)), 0)
            if count == sent or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert count == sent
    finally:
        assert srv.stop() == 0


def test_certificate_rotation_while_requests_flow(tmp_path):
    # Kubelet's Secret-volume layout: files are symlinks into ..data, which is swapped atomically.
    first, second = make_certs(tmp_path / "first"), make_certs(tmp_path / "second")
    bundle = tmp_path / "bundle.crt"
    bundle.write_bytes((first / "ca.crt").read_bytes() + (second / "ca.crt").read_bytes())
    volume = tmp_path / "volume"
    volume.mkdir()
    (volume / "..v1").symlink_to(first, target_is_directory=True)
    (volume / "..data").symlink_to("..v1")
    for name in ("tls.crt", "tls.key"):
        (volume / name).symlink_to(f"..data/{name}")

    srv = Server(tmp_path, volume / "tls.crt", volume / "tls.key")
    errors: list[str] = []
    seen: dict[bytes, int] = {}
    stop = threading.Event()
    lock = threading.Lock()

    def traffic(fresh_connections: bool) -> None:
        client = Client(srv.port, bundle)
        while not stop.is_set():
            try:
                cert = client.peer_certificate()
                if not client.review(claim())["allowed"]:
                    errors.append("denied")
                with lock:
                    seen[cert] = seen.get(cert, 0) + 1
            except Exception as exc:  # every failure is a test failure, collected for the message
                errors.append(repr(exc))
            if fresh_connections:
                client.close()
        client.close()

    try:
        srv.wait_ready(bundle)
        threads = [threading.Thread(target=traffic, args=(fresh,)) for fresh in (True, True, False)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while sum(seen.values()) < 30 and time.monotonic() < deadline:
            time.sleep(0.05)
        (volume / "..v2").symlink_to(second, target_is_directory=True)
        (volume / "..data_tmp").symlink_to("..v2")
        os.replace(volume / "..data_tmp", volume / "..data")
        new_cert = ssl.PEM_cert_to_DER_cert((second / "tls.crt").read_text())
        while seen.get(new_cert, 0) < 30 and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        for t in threads:
            t.join(timeout=30)
    finally:
        stop.set()
        assert srv.stop() == 0
    old_cert = ssl.PEM_cert_to_DER_cert((first / "tls.crt").read_text())
    assert errors == []
    assert seen.get(old_cert, 0) >= 30 and seen.get(new_cert, 0) >= 30
    assert any(line.get("msg") == "certificate reloaded" for line in srv.log_lines())


def test_policy_reload_without_restart(tmp_path, certs):
    policy = tmp_path / "policy.yaml"
    policy.write_text("kubeVersion: '1.35'\n")
    srv = Server(tmp_path, certs / "tls.crt", certs / "tls.key", "--config", str(policy))
    try:
        srv.wait_ready(certs / "ca.crt")

        def verdicts() -> set[bool]:
            out = set()
            for _ in range(6):   # fresh connections reach both workers, most of the time
                c = Client(srv.port, certs / "ca.crt")
                out.add(c.review(claim(device_class="Not_A_Class"))["allowed"])
                c.close()
            return out

        def workers_logging(message: str) -> set[int]:
            return {line["pid"] for line in srv.log_lines() if line.get("msg") == message}

        def until(done) -> None:
            # Each worker reloads when a request reaches it; keep sending until every one has.
            deadline = time.monotonic() + 30
            while not done() and time.monotonic() < deadline:
                verdicts()
                time.sleep(0.2)

        assert verdicts() == {False}
        replacement = tmp_path / "policy.new"
        replacement.write_text("kubeVersion: '1.35'\nignore: [DRA208]\n")
        os.replace(replacement, policy)
        until(lambda: len(workers_logging("policy reloaded")) == 2)
        assert len(workers_logging("policy reloaded")) == 2 and verdicts() == {True}
        policy.write_text("kubeVersion: [broken\n")   # a bad edit is refused; the last good policy stays
        failed = "policy reload failed; keeping the previous one"
        until(lambda: len(workers_logging(failed)) == 2)
        assert len(workers_logging(failed)) == 2 and verdicts() == {True}
    finally:
        assert srv.stop() == 0


def test_bad_startup_files_are_refused(tmp_path, certs):
    bad = tmp_path / "policy.yaml"
    bad.write_text("onInternalError: sometimes\n")
    result = subprocess.run([sys.executable, "-m", "dralint_webhook", "serve", "--cert", str(certs / "tls.crt"),
                             "--key", str(certs / "tls.key"), "--config", str(bad), "--bind", "127.0.0.1",
                             "--port", str(free_port())], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "onInternalError" in result.stderr
