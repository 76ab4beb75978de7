"""Certificates for SSL authentication tests, made with ``cryptography``: a CA, host
certificates it signs, and the PEM files HTCondor's AUTH_SSL_* knobs name."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Issued:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """``stem.crt`` and ``stem.key`` in ``directory``; the key readable only by
        its owner, as HTCondor wants a host key."""
        directory.mkdir(parents=True, exist_ok=True)
        crt, key = directory / f"{stem}.crt", directory / f"{stem}.key"
        crt.write_bytes(self.cert_pem())
        key.write_bytes(self.key_pem())
        key.chmod(0o600)
        return crt, key


def _name(cn: str, org: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _build(subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey,
           signer: ec.EllipticCurvePrivateKey, ca: bool, sans: tuple[str, ...]
           ) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
         .public_key(public).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(hours=1))
         .not_valid_after(now + datetime.timedelta(days=2))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(s) for s in sans]),
                            critical=False)
    return b.sign(signer, hashes.SHA256())


def make_ca(name: str = "condorpy test CA") -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name(name, "condorpy tests")
    return Issued(_build(subject, subject, key.public_key(), key, True, ()), key)


def issue(ca: Issued, cn: str, sans: tuple[str, ...] = (), org: str = "condorpy tests"
          ) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    return Issued(_build(_name(cn, org), ca.cert.subject, key.public_key(), ca.key, False,
                         sans), key)
