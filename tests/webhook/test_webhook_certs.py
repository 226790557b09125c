"""``dralint-webhook certs`` and ``configuration``: the CA, the serving certificate and the webhook configuration."""
from __future__ import annotations

import base64
import contextlib
import datetime as dt
import ssl
import stat

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from dralint_webhook.certs import dns_names
from dralint_webhook.cli import build_parser, main

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
    # --failure-policy is the claims' and Pods' only: DeviceClasses and DeviceTaintRules stay Ignore.
    assert {h["name"]: h["failurePolicy"] for h in config["webhooks"]} == {
        "resources.dralint.dev": "Fail", "pods.dralint.dev": "Fail", "classes-and-taints.dralint.dev": "Ignore"}
    assert "&id" not in (out / "webhook.yaml").read_text()   # plain YAML, no anchors


def test_the_help_says_whom_the_failure_policy_is_for(capsys):
    for command in ("certs", "configuration"):
        with contextlib.suppress(SystemExit):
            build_parser().parse_args([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--failure-policy {Ignore,Fail} failurePolicy of the webhooks for claims, templates and Pods" in text
        assert "DeviceClasses and DeviceTaintRules are always judged with Ignore" in text


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


def configuration(*args: str) -> int:
    return main(["configuration", "--service", SERVICE, "--namespace", NAMESPACE, *args])


def test_configuration_from_the_kept_ca_is_what_certs_wrote(tmp_path):
    out = run_certs(tmp_path, "--failure-policy", "Fail", "--judge-status-and-slices")
    again = tmp_path / "again.yaml"
    assert configuration("--ca", str(out / "ca.crt"), "--out", str(again), "--failure-policy", "Fail",
                         "--judge-status-and-slices") == 0
    # Byte for byte: the upgrade's `kubectl apply` of it changes nothing it need not, the bundle least of all.
    assert again.read_text() == (out / "webhook.yaml").read_text()
    hooks = yaml.safe_load(again.read_text())["webhooks"]
    assert [h["name"] for h in hooks] == ["resources.dralint.dev", "pods.dralint.dev", "classes-and-taints.dralint.dev",
                                          "controllers.dralint.dev"]
    assert {base64.b64decode(h["clientConfig"]["caBundle"]) for h in hooks} == {(out / "ca.crt").read_bytes()}
    assert hooks[3]["failurePolicy"] == "Ignore"   # what controllers write is never behind Fail


def test_configuration_trusts_every_ca_given_for_a_renewal(tmp_path):
    old, new = run_certs(tmp_path / "old"), run_certs(tmp_path / "new")
    both = tmp_path / "both.yaml"
    assert configuration("--ca", str(old / "ca.crt"), "--ca", str(new / "ca.crt"), "--out", str(both)) == 0
    bundle = base64.b64decode(yaml.safe_load(both.read_text())["webhooks"][0]["clientConfig"]["caBundle"])
    # The certificate served before the Secret changes and the one after both verify against it.
    assert [c.public_bytes(serialization.Encoding.PEM) for c in x509.load_pem_x509_certificates(bundle)] == [
        (old / "ca.crt").read_bytes(), (new / "ca.crt").read_bytes()]


def test_configuration_refuses_anything_but_ca_certificates(tmp_path, capsys):
    out = run_certs(tmp_path)
    (out / "empty.crt").write_text("")
    target = tmp_path / "webhook.yaml"
    for wrong, says in (("tls.crt", "is not a CA certificate"), ("tls.key", "holds no PEM certificate"),
                        ("empty.crt", "holds no PEM certificate"), ("missing.crt", "No such file")):
        # A good CA beside it does not help: every file given must be a CA.
        assert configuration("--ca", str(out / "ca.crt"), "--ca", str(out / wrong), "--out", str(target)) == 2
        assert says in capsys.readouterr().err
    assert not target.exists()   # nothing written that would make every review fail TLS
    assert configuration("--ca", str(out / "ca.crt"), "--out", str(tmp_path / "no-such-folder" / "webhook.yaml")) == 2
    assert "No such file" in capsys.readouterr().err


def test_an_upgrade_that_forgets_the_installs_options_is_told(tmp_path, capsys):
    out = run_certs(tmp_path, "--failure-policy", "Fail", "--judge-status-and-slices")
    capsys.readouterr()
    assert configuration("--ca", str(out / "ca.crt"), "--out", str(out / "webhook.yaml")) == 0
    notes = capsys.readouterr().err.splitlines()
    assert notes == [
        "dralint-webhook: note: resources.dralint.dev: failurePolicy Fail becomes Ignore (--failure-policy keeps it)",
        "dralint-webhook: note: pods.dralint.dev: failurePolicy Fail becomes Ignore (--failure-policy keeps it)",
        "dralint-webhook: note: controllers.dralint.dev is no longer in the configuration "
        "(--judge-status-and-slices keeps it)"]
    # Given the same options, nothing to say.
    assert configuration("--ca", str(out / "ca.crt"), "--out", str(out / "webhook.yaml")) == 0
    assert capsys.readouterr().err == ""
