"""TLS for SSL and SASL_SSL listeners: the server context, generated certificates, and the
principal of a client certificate.

Theory of operation: a test should trust the broker the way production clients do
(ssl.ca.location, hostname verification on, as librdkafka's default
ssl.endpoint.identification.algorithm=https). Without user-supplied files, mockbroker
generates a CA and a broker certificate signed by it, whose subject alternative names are
every host a listener binds or advertises plus localhost and 127.0.0.1, and writes them as
PEM files into a temporary directory that the READY line and `state` name (ca.pem,
broker.pem, broker-key.pem, and client.pem/client-key.pem, a client certificate for
CN=mockbroker-client signed by the same CA, for mutual TLS). Keys are EC P-256, so
generation takes milliseconds; the material is cached per process by its host set, so a
pool of clusters pays once. The directory is removed when the process exits.

With `certfile`/`keyfile` (and `cafile`, the CA that signs client certificates), those
files are used as given. `client_auth` is Kafka's ssl.client.auth: none, requested
(a certificate is verified if sent) or required.

Kafka's default principal builder names an SSL client by its certificate's subject in RFC
2253 form (`User:CN=alice,O=Acme`), and `User:ANONYMOUS` without a client certificate.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # ssl (about 5 ms to import) only when a TLS listener starts
    import ssl

CLIENT_AUTH = ("none", "requested", "required")
ANONYMOUS = "User:ANONYMOUS"
CLIENT_COMMON_NAME = "mockbroker-client"
_VALID_DAYS = 365
_GENERATED: dict[tuple[str, ...], TlsFiles] = {}


@dataclass(frozen=True)
class TlsFiles:
    """PEM files for a TLS listener; the client pair only for generated material."""

    directory: str | None
    ca: str | None
    cert: str
    key: str
    client_cert: str | None = None
    client_key: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"directory": self.directory, "ca": self.ca, "cert": self.cert,
                "key": self.key, "client_cert": self.client_cert,
                "client_key": self.client_key}


@dataclass(frozen=True)
class TlsSettings:
    """What the user asked for: their own files, or none (generate), and client auth."""

    certfile: str | None = None
    keyfile: str | None = None
    cafile: str | None = None
    client_auth: str = "none"

    def __post_init__(self) -> None:
        if self.client_auth not in CLIENT_AUTH:
            raise ValueError(f"ssl client auth must be one of {', '.join(CLIENT_AUTH)}, "
                             f"got {self.client_auth!r}")
        if (self.certfile is None) != (self.keyfile is None):
            raise ValueError("give both the certificate file and its key file, or neither "
                             "(then mockbroker generates them)")
        if self.certfile is None and self.cafile is not None:
            raise ValueError("a CA file goes with your own certificate and key files")


def server_context(settings: TlsSettings, hosts: Iterable[str]) -> tuple[ssl.SSLContext,
                                                                         TlsFiles]:
    """The SSLContext of the TLS listeners and the files it was built from."""
    import ssl

    if settings.certfile is not None and settings.keyfile is not None:
        files = TlsFiles(None, settings.cafile, settings.certfile, settings.keyfile)
    else:
        files = generated_files(hosts)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(files.cert, files.key)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"cannot load the TLS certificate {files.cert} with key "
                         f"{files.key}: {exc}") from None
    if settings.client_auth != "none":
        if files.ca is None:
            raise ValueError("ssl client auth needs the CA file that signs client "
                             "certificates")
        context.load_verify_locations(files.ca)
        context.verify_mode = ssl.CERT_REQUIRED if settings.client_auth == "required" \
            else ssl.CERT_OPTIONAL
    return context, files


def peer_principal(ssl_object: Any) -> str:
    """Kafka's default principal of a TLS client: `User:` and its certificate's subject
    (RFC 2253), or User:ANONYMOUS without one."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    from cryptography import x509

    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()


def generated_files(hosts: Iterable[str]) -> TlsFiles:
    """A CA, a broker certificate for `hosts` (plus localhost and 127.0.0.1) and a client
    certificate, generated once per process and host set."""
    names = tuple(sorted({"localhost", "127.0.0.1", *(h for h in hosts if h)}
                         - {"0.0.0.0", "::"}))
    files = _GENERATED.get(names)
    if files is None:
        files = _GENERATED[names] = _generate(names)
    return files


def _generate(names: tuple[str, ...]) -> TlsFiles:
    # what generating certificates needs loads with the first TLS listener, not at start-up
    import atexit
    import datetime
    import ipaddress
    import shutil
    import tempfile

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mockbroker test CA")])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now).not_valid_after(now + datetime.timedelta(_VALID_DAYS))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(False, False, False, False, False, True, True,
                                            False, False), critical=True)
               .sign(ca_key, hashes.SHA256()))

    def issue(common_name: str, usage: Any, alt_names: list[Any] | None) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                               common_name)]))
                   .issuer_name(ca_name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now)
                   .not_valid_after(now + datetime.timedelta(_VALID_DAYS))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                                  critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if alt_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt_names),
                                            critical=False)
        return builder.sign(ca_key, hashes.SHA256()), key

    alt: list[Any] = []
    for name in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    broker_cert, broker_key = issue("localhost", ExtendedKeyUsageOID.SERVER_AUTH, alt)
    client_cert, client_key = issue(CLIENT_COMMON_NAME, ExtendedKeyUsageOID.CLIENT_AUTH, None)

    directory = tempfile.mkdtemp(prefix="mockbroker-tls-")
    atexit.register(shutil.rmtree, directory, True)

    def write(name: str, data: bytes) -> str:
        path = os.path.join(directory, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    pem = serialization.Encoding.PEM

    def key_pem(key: Any) -> bytes:
        return bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))

    return TlsFiles(
        directory=directory, ca=write("ca.pem", ca_cert.public_bytes(pem)),
        cert=write("broker.pem", broker_cert.public_bytes(pem)),
        key=write("broker-key.pem", key_pem(broker_key)),
        client_cert=write("client.pem", client_cert.public_bytes(pem)),
        client_key=write("client-key.pem", key_pem(client_key)))
