"""Against the real server (gunicorn, TLS): claims that break the organisation's rules are denied even
when the rest of their review cannot finish, and bodies only Go's decoder reads get a verdict.

Each was an object admitted unjudged before (issue 23): with expensive selectors past the deadline,
with opaque parameters nested 5,000 deep, with a lone surrogate escape.
"""
from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from test_webhook_attacks import big_selector
from test_webhook_server import Client, Server, claim, review_of, serving

POLICY = """
onInternalError: allow
organization:
  maxDevicesPerClaim: 2
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory, certs) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("unjudged"), certs, POLICY) as srv:
        yield srv


def post(server: Server, certs: Path, body: bytes, query: str = "") -> dict:
    client = Client(server.port, certs / "ca.crt")
    try:
        status, data = client.request("POST", "/validate" + query, body)
    finally:
        client.close()
    assert status == 200, data[:300]
    return json.loads(data)["response"]


def body_of(obj: dict) -> bytes:
    return json.dumps(review_of(obj, "CREATE", None, "", False, str(uuid.uuid4()))).encode()


def expensive(devices: int) -> dict:
    obj = claim()
    obj["spec"]["devices"]["requests"] = [
        {"name": f"r{r}", "exactly": {"deviceClassName": "gpu.example.com",
                                      "selectors": [{"cel": {"expression": big_selector(r * 32 + j)}}
                                                    for j in range(32)]}} for r in range(devices)]
    return obj


def test_an_organisation_breaking_claim_with_expensive_selectors_is_denied(server, certs):
    started = time.monotonic()
    out = post(server, certs, body_of(expensive(5)))
    assert time.monotonic() - started < 5
    assert out["allowed"] is False and "DRA951 too-many-devices" in out["status"]["message"]
    assert any("deadline" in w for w in out["warnings"])


def test_the_deadline_follows_the_api_servers_timeout(server, certs):
    started = time.monotonic()
    out = post(server, certs, body_of(expensive(2)), "?timeout=2s")
    assert time.monotonic() - started < 2
    assert out["allowed"] is True and any("deadline" in w for w in out["warnings"])


def with_parameters(obj: dict, raw: bytes) -> bytes:
    obj["spec"]["devices"]["config"] = [{"opaque": {"driver": "gpu.example.com", "parameters": "RAW"}}]
    return body_of(obj).replace(b'"RAW"', raw)


# Within the API server's 10 KiB for parameters: 5,000 levels of arrays (two bytes each).
@pytest.mark.parametrize("raw", [b'{"a":' + b"[" * 5_000 + b"]" * 5_000 + b"}", b'{"note":"\\ud800 and \\udfff"}'],
                         ids=["nested-5000-deep", "lone-surrogates"])
def test_parameters_only_go_reads_get_a_verdict(server, certs, raw):
    good = claim()
    assert post(server, certs, with_parameters(good, raw))["allowed"] is True
    too_many = claim(count=3)
    out = post(server, certs, with_parameters(too_many, raw))
    assert out["allowed"] is False and "DRA951" in out["status"]["message"]
