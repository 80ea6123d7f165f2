"""Named listener sets with security protocols, and TLS on them (generated or given
certificates, hostname verification, mutual TLS and its principal).

Kafka's configuration shapes: `listeners` NAME://HOST:PORT, `advertised.listeners`,
`listener.security.protocol.map`. Each set advertises its own endpoints; TLS clients verify
the broker's certificate against the generated CA with hostname verification on, as
librdkafka does by default.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cryptography import x509

from mockbroker.embedded import MockCluster
from mockbroker.server.listeners import ListenerConfig, parse_named_listeners
from mockbroker.server.tls import generated_files
from tests.support.rawclient import ConnectionClosed, RawClient

METADATA = 3
NO_TOPICS = {"topics": [], "allow_auto_topic_creation": False}


# -- configuration ---------------------------------------------------------------------------

def test_parse_named_listeners() -> None:
    parsed = parse_named_listeners(
        "sasl_ssl://0.0.0.0:9093, INTERNAL://:9092,SSL://127.0.0.1:0",
        advertised="SASL_SSL://localhost:19093,INTERNAL://mockbroker",
        protocol_map="INTERNAL:PLAINTEXT,UNUSED:SSL")
    assert parsed == [
        ListenerConfig("0.0.0.0", 9093, "localhost", 19093, "SASL_SSL", "SASL_SSL"),
        ListenerConfig("0.0.0.0", 9092, "mockbroker", None, "INTERNAL", "PLAINTEXT"),
        ListenerConfig("127.0.0.1", 0, None, None, "SSL", "SSL")]
    assert parse_named_listeners("PLAINTEXT://127.0.0.1:0", None,
                                 "PLAINTEXT:SASL_PLAINTEXT")[0].security_protocol == \
        "SASL_PLAINTEXT"  # the map beats the name


@pytest.mark.parametrize(("listeners", "advertised", "protocols", "reason"), [
    ("EXTERNAL://127.0.0.1:0", None, None, "listener EXTERNAL has no security protocol"),
    ("SSL://127.0.0.1:0", None, "SSL:TLS", "protocol must be one of"),
    ("SSL://127.0.0.1", None, None, "needs a port"),
    ("SSL://127.0.0.1:1,ssl://127.0.0.1:2", None, None, "listener SSL given twice"),
    ("127.0.0.1:9092", None, None, "expected NAME://HOST:PORT"),
    ("SSL://127.0.0.1:0", "OTHER://h:1", None, "advertised listener OTHER is not among"),
    ("SSL://127.0.0.1:0", "SSL://h:0", None, "port 0 cannot be advertised"),
    ("", None, None, "no listener given"),
])
def test_parse_named_listeners_refuses(listeners: str, advertised: str | None,
                                       protocols: str | None, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_named_listeners(listeners, advertised, protocols)


def test_mock_cluster_refuses_bad_security_keywords() -> None:
    with pytest.raises(ValueError, match="security_protocol must be one of"):
        MockCluster(security_protocol="TLS")
    with pytest.raises(ValueError, match="SASL mechanisms must be some of"):
        MockCluster(sasl_mechanisms="GSSAPI")
    with pytest.raises(ValueError, match="ssl client auth must be one of"):
        MockCluster(ssl_client_auth="always")
    with pytest.raises(ValueError, match="give both the certificate file and its key file"):
        MockCluster(ssl_certfile="broker.pem")
    with pytest.raises(ValueError, match="go with listeners"):
        MockCluster(advertised_listeners="SSL://localhost")
    with pytest.raises(ValueError, match="expected NAME:PASSWORD"):
        MockCluster(sasl_users="alice")


# -- each listener advertises its own endpoints ---------------------------------------------

def _client_context(ca: str | None, cert: str | None = None,
                    key: str | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca)  # verifies the chain and the host name
    if cert is not None:
        context.load_cert_chain(cert, key)
    return context


@pytest.fixture
async def two_listeners() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=2, listeners="SSL://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                           advertised_listeners="SSL://localhost",
                           listener_security_protocol_map="INTERNAL:PLAINTEXT",
                           trace_buffer=100) as cluster:
        yield cluster


async def _brokers(port: int, host: str = "127.0.0.1",
                   context: ssl.SSLContext | None = None) -> dict[int, tuple[str, int]]:
    async with await RawClient.connect(port, host, ssl=context) as raw:
        meta = await raw.request(METADATA, 12, NO_TOPICS)
    return {b.node_id: (b.host, b.port) for b in meta.brokers}


async def test_each_listener_answers_with_its_own_endpoints(two_listeners: MockCluster) -> None:
    mc = two_listeners
    files = mc.tls_files
    assert files is not None and files.ca is not None
    tls_ports = mc.server.bound_ports
    plain_ports = mc.server.extra_bound_ports[0]
    assert mc.bootstrap_servers == f"localhost:{tls_ports[0]},localhost:{tls_ports[1]}"
    assert mc.listener_bootstrap("internal") == \
        f"127.0.0.1:{plain_ports[0]},127.0.0.1:{plain_ports[1]}"
    context = _client_context(files.ca)
    for broker in (0, 1):
        assert await _brokers(tls_ports[broker], "localhost", context) == \
            {b: ("localhost", tls_ports[b]) for b in (0, 1)}
        assert await _brokers(plain_ports[broker]) == \
            {b: ("127.0.0.1", plain_ports[b]) for b in (0, 1)}
    state = await mc.control.state()
    assert state["listeners"] == [
        {"name": "SSL", "security_protocol": "SSL", "host": "127.0.0.1",
         "bootstrap": mc.bootstrap_servers},
        {"name": "INTERNAL", "security_protocol": "PLAINTEXT", "host": "127.0.0.1",
         "bootstrap": mc.listener_bootstrap("INTERNAL")}]
    assert state["security"]["tls"]["ca"] == files.ca
    traced = (await mc.control.trace(n=20, api="Metadata"))["requests"]
    assert [r["principal"] for r in traced] == ["User:ANONYMOUS", None] * 2  # TLS, plain


async def test_hostname_verification_and_an_untrusted_ca(two_listeners: MockCluster) -> None:
    port = two_listeners.server.bound_ports[0]
    files = two_listeners.tls_files
    assert files is not None
    assert len(await _brokers(port, "127.0.0.1", _client_context(files.ca))) == 2  # IP SAN
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        await RawClient.connect(port, "localhost", ssl=ssl.create_default_context())


def test_generated_certificates_cover_the_hosts_and_are_cached() -> None:
    files = generated_files(["broker.test", "0.0.0.0", "10.1.2.3"])
    assert generated_files(["10.1.2.3", "broker.test"]) is files  # once per host set
    assert files.cert.startswith(str(files.directory)) and files.ca.endswith("ca.pem")
    with open(files.cert, "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sorted(names.get_values_for_type(x509.DNSName)) == ["broker.test", "localhost"]
    assert sorted(str(ip) for ip in names.get_values_for_type(x509.IPAddress)) == \
        ["10.1.2.3", "127.0.0.1"]


# -- mutual TLS ------------------------------------------------------------------------------

async def _principal_of_request(mc: MockCluster, context: ssl.SSLContext) -> Any:
    async with await RawClient.connect(mc.server.bound_ports[0], "localhost",
                                       ssl=context) as raw:
        await raw.request(METADATA, 12, NO_TOPICS)
    return (await mc.control.trace(n=1, api="Metadata"))["requests"][0]["principal"]


async def test_mutual_tls_names_the_client_by_its_certificate_subject() -> None:
    async with MockCluster(brokers=1, security_protocol="SSL", ssl_client_auth="required",
                           trace_buffer=10) as mc:
        files = mc.tls_files
        assert files is not None and files.client_cert is not None
        context = _client_context(files.ca, files.client_cert, files.client_key)
        assert await _principal_of_request(mc, context) == "User:CN=mockbroker-client"
        with pytest.raises((ConnectionClosed, ssl.SSLError, ConnectionError)):
            async with await RawClient.connect(mc.server.bound_ports[0], "localhost",
                                               ssl=_client_context(files.ca)) as raw:
                await raw.request(METADATA, 12, NO_TOPICS)  # no client certificate


async def test_requested_client_auth_lets_anonymous_clients_in() -> None:
    async with MockCluster(brokers=1, security_protocol="SSL", ssl_client_auth="requested",
                           trace_buffer=10) as mc:
        files = mc.tls_files
        assert files is not None
        assert await _principal_of_request(mc, _client_context(files.ca)) == "User:ANONYMOUS"
        with_cert = _client_context(files.ca, files.client_cert, files.client_key)
        assert await _principal_of_request(mc, with_cert) == "User:CN=mockbroker-client"


async def test_user_supplied_certificate_files() -> None:
    theirs = generated_files(["kafka.example"])
    async with MockCluster(brokers=1, security_protocol="SSL", ssl_certfile=theirs.cert,
                           ssl_keyfile=theirs.key, ssl_cafile=theirs.ca,
                           ssl_client_auth="required", trace_buffer=10) as mc:
        assert mc.tls_files is not None and mc.tls_files.directory is None
        assert mc.tls_files.cert == theirs.cert
        context = _client_context(theirs.ca, theirs.client_cert, theirs.client_key)
        assert await _principal_of_request(mc, context) == "User:CN=mockbroker-client"


async def test_unreadable_certificate_files_fail_the_start(tmp_path: Any) -> None:
    bogus = tmp_path / "broker.pem"
    bogus.write_text("not a certificate")
    cluster = MockCluster(brokers=1, security_protocol="SSL", ssl_certfile=str(bogus),
                          ssl_keyfile=str(bogus))
    with pytest.raises(ValueError, match="cannot load the TLS certificate"):
        await cluster.start()
    assert not cluster.server.servers
