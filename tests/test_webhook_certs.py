"""``dralint-webhook certs``: the CA, the serving certificate and the webhook configuration."""
from __future__ import annotations

import base64
import contextlib
import datetime as dt
import ssl
import stat

import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from dralint_webhook.certs import dns_names
from dralint_webhook.cli import main

SERVICE, NAMESPACE = "dralint-webhook", "dralint"


def run_certs(tmp_path, *extra: str):
    out = tmp_path / "certs"
    assert main(["certs", "--service", SERVICE, "--namespace", NAMESPACE, "--out", str(out), *extra]) == 0
    return out


def test_files_and_names(tmp_path):
    out = run_certs(tmp_path, "--days", "30")
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "tls.crt", "tls.key", "webhook.yaml"]
    assert stat.S_IMODE((out / "tls.key").stat().st_mode) == 0o600
    ca = x509.load_pem_x509_certificate((out / "ca.crt").read_bytes())
    cert = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert names == ["dralint-webhook", "dralint-webhook.dralint", "dralint-webhook.dralint.svc",
                     "dralint-webhook.dralint.svc.cluster.local"] == dns_names(SERVICE, NAMESPACE)
    assert ExtendedKeyUsageOID.SERVER_AUTH in cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    cert.verify_directly_issued_by(ca)
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert dt.timedelta(days=30) <= lifetime <= dt.timedelta(days=30, minutes=10)


def test_the_pair_serves_tls_verified_against_the_ca(tmp_path):
    out = run_certs(tmp_path)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(out / "tls.crt", out / "tls.key")   # raises if the key does not fit
    client = ssl.create_default_context(cafile=str(out / "ca.crt"))
    client.check_hostname = True
    # The same check the API server's client makes, in memory: a handshake through BIOs.
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(c_in, c_out, server_hostname=f"{SERVICE}.{NAMESPACE}.svc")
    s = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        for end, outbox, other_in in ((c, c_out, s_in), (s, s_out, c_in)):
            with contextlib.suppress(ssl.SSLWantReadError):
                end.do_handshake()
            other_in.write(outbox.read())
    assert c.version() in ("TLSv1.2", "TLSv1.3") and c.getpeercert()["subjectAltName"]


def test_webhook_configuration_carries_the_ca(tmp_path):
    out = run_certs(tmp_path, "--failure-policy", "Fail")
    config = yaml.safe_load((out / "webhook.yaml").read_text())
    assert config["kind"] == "ValidatingWebhookConfiguration"
    for hook in config["webhooks"]:
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == (out / "ca.crt").read_bytes()
        assert hook["clientConfig"]["service"] == {"name": SERVICE, "namespace": NAMESPACE, "path": "/validate",
                                                   "port": 443}
        assert hook["failurePolicy"] == "Fail"
    assert "&id" not in (out / "webhook.yaml").read_text()   # plain YAML, no anchors


def test_each_run_makes_a_new_ca(tmp_path):
    first = run_certs(tmp_path / "a")
    second = run_certs(tmp_path / "b")
    assert (first / "ca.crt").read_bytes() != (second / "ca.crt").read_bytes()


def test_bad_days_is_a_usage_error(tmp_path, capsys):
    assert main(["certs", "--service", "s", "--namespace", "n", "--out", str(tmp_path), "--days", "0"]) == 2
    assert "--days" in capsys.readouterr().err


def test_serving_context_is_tls12_or_newer_and_survives_a_half_written_rotation(tmp_path):
    from dralint_webhook.tls import ServingTLS

    first, second = run_certs(tmp_path / "a"), run_certs(tmp_path / "b")
    live = tmp_path / "live"
    live.mkdir()
    for name in ("tls.crt", "tls.key"):
        (live / name).write_bytes((first / name).read_bytes())
    events: list[tuple] = []
    tls = ServingTLS(str(live / "tls.crt"), str(live / "tls.key"), interval=0, on_reload=lambda *e: events.append(e))
    original = tls.context()
    assert original.minimum_version is ssl.TLSVersion.TLSv1_2
    (live / "tls.crt").write_bytes((second / "tls.crt").read_bytes())   # the key still belongs to the first
    assert tls.context() is original and events[-1][1] is False
    (live / "tls.key").write_bytes((second / "tls.key").read_bytes())
    assert tls.context() is not original and events[-1][:2] == ("certificate", True)
