"""``dralint-webhook certs`` and ``configuration``: TLS for clusters without cert-manager.

``certs`` writes ``ca.crt``, ``tls.crt``, ``tls.key`` (mode 0600) and ``webhook.yaml`` (the
ValidatingWebhookConfiguration with the CA as ``caBundle``). Keys are ECDSA P-256: the API
server's Go client supports them and a handshake costs less than with RSA. The CA's key is
never written: to renew, run the command again.

``configuration`` writes ``webhook.yaml`` again for CAs already trusted (``ca.crt`` kept from
``certs``): an upgrade that changes the webhook's rules keeps the bundle, and a renewal can trust
the old and the new CA at once while the Secret changes. These two commands are the only
writers of the bundle of a cluster without cert-manager.
"""
from __future__ import annotations

import base64
import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .manifests import CONTROLLER_WEBHOOK_NAME, webhook_configuration

# Clock skew between this machine and the cluster must not make a fresh certificate "not yet valid".
_BACKDATE = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class Issued:
    """PEM texts of one run of the command."""

    ca_cert: bytes
    cert: bytes
    key: bytes


def dns_names(service: str, namespace: str) -> list[str]:
    """The names the API server may use for the Service: it dials ``NAME.NS.svc``."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def issue(service: str, namespace: str, days: int = 365, now: dt.datetime | None = None) -> Issued:
    """A new CA and a serving certificate for ``service`` in ``namespace``, valid for ``days``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    start, end = now - _BACKDATE, now + dt.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"dralint-webhook CA ({namespace}/{service})")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(ca_ski, critical=False)
          .sign(ca_key, hashes.SHA256()))

    key = ec.generate_private_key(ec.SECP256R1())
    names = dns_names(service, namespace)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[2])]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return Issued(ca_cert=ca.public_bytes(serialization.Encoding.PEM),
                  cert=cert.public_bytes(serialization.Encoding.PEM),
                  key=key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))


def read_ca_bundle(paths: list[Path]) -> bytes:
    """The PEM certificates of ``paths``, one after another; ValueError unless each file holds CAs only."""
    bundle = b""
    for path in paths:
        data = path.read_bytes()
        try:
            certs = x509.load_pem_x509_certificates(data)
        except ValueError:
            raise ValueError(f"{path}: holds no PEM certificate") from None
        for cert in certs:
            try:
                is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
            except x509.ExtensionNotFound:
                is_ca = False
            if not is_ca:
                # tls.crt passed for ca.crt would make a bundle that verifies nothing: every review fails TLS.
                raise ValueError(f"{path}: {cert.subject.rfc4514_string()} is not a CA certificate")
            bundle += cert.public_bytes(serialization.Encoding.PEM)
    return bundle


def configuration_yaml(service: str, namespace: str, ca_pem: bytes, failure_policy: str = "Ignore",
                       controllers: bool = False) -> str:
    """``webhook.yaml``: the ValidatingWebhookConfiguration trusting the PEM CA certificates ``ca_pem``."""
    bundle = base64.b64encode(ca_pem).decode("ascii")
    config = webhook_configuration(service, namespace, bundle, failure_policy=failure_policy, controllers=controllers)
    return yaml.safe_dump(config, sort_keys=False)


def dropped_settings(previous: str, new: str) -> list[str]:
    """What ``new`` (a ``webhook.yaml``) no longer sets that ``previous`` did: a webhook left out or a
    failurePolicy changed, which an upgrade that forgot the install's options would do silently."""
    try:
        before = {h["name"]: h for h in yaml.safe_load(previous)["webhooks"]}
    except (yaml.YAMLError, TypeError, KeyError):
        return []   # not a configuration this command wrote: nothing to compare
    after = {h["name"]: h for h in yaml.safe_load(new)["webhooks"]}
    notes = []
    for name, hook in before.items():
        if name not in after:
            keep = " (--judge-status-and-slices keeps it)" if name == CONTROLLER_WEBHOOK_NAME else ""
            notes.append(f"{name} is no longer in the configuration{keep}")
        elif hook.get("failurePolicy") != after[name]["failurePolicy"]:
            notes.append(f"{name}: failurePolicy {hook.get('failurePolicy')} becomes {after[name]['failurePolicy']} "
                         f"(--failure-policy keeps it)")
    return notes


def write(out: Path, service: str, namespace: str, issued: Issued, failure_policy: str = "Ignore",
          controllers: bool = False) -> list[Path]:
    """Write the files into ``out`` (created if needed); returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"ca.crt": issued.ca_cert, "tls.crt": issued.cert}
    written = []
    for name, data in files.items():
        (out / name).write_bytes(data)
        written.append(out / name)
    key_path = out / "tls.key"
    # Created with 0600 from the start: the key is never readable by others, not even for a moment.
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(issued.key)
    os.chmod(key_path, 0o600)
    written.append(key_path)
    (out / "webhook.yaml").write_text(configuration_yaml(service, namespace, issued.ca_cert, failure_policy,
                                                         controllers), encoding="utf-8")
    written.append(out / "webhook.yaml")
    return written
