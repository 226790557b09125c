"""cert-manager as the cert-manager overlay uses it: self-signed and CA Issuers, Certificates, CA injection.

What is modelled, from cert-manager's documentation: a ``selfSigned`` Issuer signs a Certificate
with the Certificate's own key, and its Secret's ``ca.crt`` is that certificate; a ``ca`` Issuer
signs with the key of its Secret, and the issued Secret's ``ca.crt`` is the CA's certificate; a
re-issue keeps the private key when ``privateKey.rotationPolicy`` is ``Never`` and makes a new
one otherwise (``Always``, the default since cert-manager 1.18); ``isCA`` gives a CA certificate,
``dnsNames`` the SANs (critical when there is no ``commonName``), ``usages: [server auth]`` the
extended key usage; the CA injector writes the ``ca.crt`` of the Certificate named by
``cert-manager.io/inject-ca-from`` (NS/NAME) into the ``caBundle`` of every webhook of the
annotated configuration. Only ECDSA P-256 keys, as the overlay asks.
"""
from __future__ import annotations

import base64
import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from dralint_webhook.manifests import INJECT_CA_FROM

Secret = dict[str, bytes]   # tls.crt, tls.key, ca.crt (PEM)


def hours(text: str) -> dt.timedelta:
    """A cert-manager duration as the overlay writes them ("2160h")."""
    if not text.endswith("h"):
        raise NotImplementedError(f"duration {text!r}")
    return dt.timedelta(hours=int(text[:-1]))


@dataclass
class CertManager:
    """The Issuers and Certificates of a rendered overlay, and the Secrets cert-manager keeps for them."""

    objects: list[dict[str, Any]]
    now: dt.datetime
    secrets: dict[tuple[str, str], Secret] = field(default_factory=dict)

    def _get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        for obj in self.objects:
            meta = obj["metadata"]
            if obj["kind"] == kind and meta.get("namespace") == namespace and meta["name"] == name:
                return obj
        raise KeyError(f"{kind} {namespace}/{name}")

    def certificates(self) -> list[dict[str, Any]]:
        return [obj for obj in self.objects if obj["kind"] == "Certificate"]

    def reconcile(self) -> None:
        """Issue every Certificate without a Secret, each once its Issuer is ready (its CA Secret exists)."""
        pending = [c for c in self.certificates() if self.secret_of(c) is None]
        while pending:
            ready = [c for c in pending if self._issuer_ready(c)]
            if not ready:
                raise ValueError(f"Issuers never ready for {[c['metadata']['name'] for c in pending]}")
            for cert in ready:
                self.issue(cert["metadata"]["namespace"], cert["metadata"]["name"])
            pending = [c for c in pending if c not in ready]

    def secret_of(self, cert: dict[str, Any]) -> Secret | None:
        return self.secrets.get((cert["metadata"]["namespace"], cert["spec"]["secretName"]))

    def _issuer(self, cert: dict[str, Any]) -> dict[str, Any]:
        ref = cert["spec"]["issuerRef"]
        if ref.get("kind", "Issuer") != "Issuer":
            raise NotImplementedError(f"issuer kind {ref['kind']}")
        return self._get("Issuer", cert["metadata"]["namespace"], ref["name"])

    def _issuer_ready(self, cert: dict[str, Any]) -> bool:
        spec = self._issuer(cert)["spec"]
        return "selfSigned" in spec or (cert["metadata"]["namespace"], spec["ca"]["secretName"]) in self.secrets

    def issue(self, namespace: str, name: str) -> Secret:
        """Issue (or re-issue: a renewal) the Certificate ``namespace/name`` into its Secret."""
        cert = self._get("Certificate", namespace, name)
        spec = cert["spec"]
        key_spec = spec.get("privateKey", {})
        if (key_spec.get("algorithm"), key_spec.get("size")) != ("ECDSA", 256):
            raise NotImplementedError(f"private key {key_spec}")
        previous = self.secret_of(cert)
        if previous is not None and key_spec.get("rotationPolicy", "Always") == "Never":
            key = serialization.load_pem_private_key(previous["tls.key"], None)
        else:
            key = ec.generate_private_key(ec.SECP256R1())
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, spec["commonName"])] if "commonName" in spec
                            else [])
        issuer_spec = self._issuer(cert)["spec"]
        if "selfSigned" in issuer_spec:
            signer, issuer_name, issuer_ski = key, subject, x509.SubjectKeyIdentifier.from_public_key(key.public_key())
            ca_pem = None
        else:
            ca = self.secrets[(namespace, issuer_spec["ca"]["secretName"])]
            ca_cert = x509.load_pem_x509_certificate(ca["tls.crt"])
            signer = serialization.load_pem_private_key(ca["tls.key"], None)
            issuer_name = ca_cert.subject
            issuer_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
            ca_pem = ca["tls.crt"]
        start = self.now - dt.timedelta(minutes=1)
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer_name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(start + hours(spec["duration"]))
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(issuer_ski),
                                  critical=False))
        if spec.get("isCA"):
            builder = (builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                       .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                    content_commitment=False, key_encipherment=False,
                                                    data_encipherment=False, key_agreement=False,
                                                    encipher_only=False, decipher_only=False), critical=True))
        else:
            builder = (builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                       .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False,
                                                    content_commitment=False, key_encipherment=False,
                                                    data_encipherment=False, key_agreement=False,
                                                    encipher_only=False, decipher_only=False), critical=True))
        if spec.get("dnsNames"):
            # Critical when the subject is empty, as RFC 5280 asks and cert-manager does.
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in spec["dnsNames"]]),
                                            critical=not spec.get("commonName"))
        if "server auth" in spec.get("usages", []):
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        assert isinstance(signer, ec.EllipticCurvePrivateKey)
        issued = builder.sign(signer, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
        secret = {"tls.crt": issued, "tls.key": key.private_bytes(serialization.Encoding.PEM,
                                                                    serialization.PrivateFormat.PKCS8,
                                                                    serialization.NoEncryption()),
                  "ca.crt": ca_pem if ca_pem is not None else issued}
        self.secrets[(namespace, spec["secretName"])] = secret
        return secret

    def inject(self, configuration: dict[str, Any]) -> dict[str, Any]:
        """The CA injector's write: ``configuration`` with every caBundle set from inject-ca-from."""
        source = configuration["metadata"].get("annotations", {}).get(INJECT_CA_FROM)
        if source is None:
            return configuration
        namespace, name = source.split("/")
        secret = self.secret_of(self._get("Certificate", namespace, name))
        if secret is None:
            return configuration   # nothing to inject yet: the injector waits
        out = copy.deepcopy(configuration)
        bundle = base64.b64encode(secret["ca.crt"]).decode("ascii")
        for hook in out["webhooks"]:
            hook["clientConfig"]["caBundle"] = bundle
        return out
