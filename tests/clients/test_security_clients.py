"""Real clients with their production security settings: SASL_SSL, SASL_PLAINTEXT, SSL with
client certificates, against mockbroker's listeners.

Each client keeps its defaults except what a production configuration sets (security
protocol, mechanism, credentials, the CA to trust): librdkafka verifies the broker's host
name by default (ssl.endpoint.identification.algorithm=https), and so do aiokafka's and
kafka-python's default SSL contexts, so the generated certificate must name the advertised
host. Every test checks what came back exactly (values, the error code of a refused login,
the principal in the trace).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import confluent_read_values, find_kcat

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
TIMEOUT = 30.0
VALUES = [b"one", b"two", b"three"]


@pytest.fixture(scope="module")
def secure() -> Iterator[MockClusterThread]:
    """Brokers with a SASL_SSL, a SASL_PLAINTEXT and an SSL listener (mTLS requested)."""
    with MockClusterThread(
            brokers=3, listeners="SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
                                 "SSL://127.0.0.1:0", advertised_listeners="SASL_SSL://localhost",
            sasl_users=USERS, ssl_client_auth="requested", trace_buffer=10_000) as mock:
        yield mock


def _ca(mock: MockClusterThread) -> str:
    files = mock.tls_files
    assert files is not None and files.ca is not None
    return files.ca


def _confluent(mock: MockClusterThread, listener: str, **extra: str) -> dict[str, Any]:
    return {"bootstrap.servers": mock.listener_bootstrap(listener),
            "security.protocol": listener, "ssl.ca.location": _ca(mock), **extra}


def _confluent_roundtrip(config: dict[str, Any], topic: str) -> list[bytes]:
    producer = Producer(config)
    for value in VALUES:
        producer.produce(topic, value)
    assert producer.flush(TIMEOUT) == 0
    return confluent_read_values({**config, "group.id": f"g-{topic}",
                                  "auto.offset.reset": "earliest"}, topic, len(VALUES), TIMEOUT)


def _principals(mock: MockClusterThread, api: str = "Produce") -> set[str]:
    return {r["principal"] for r in mock.control.trace(n=10_000, api=api)["requests"]}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_confluent_sasl_ssl(secure: MockClusterThread, mechanism: str) -> None:
    topic = f"confluent-sasl-ssl-{mechanism.lower()}"
    config = _confluent(secure, "SASL_SSL", **{"sasl.mechanism": mechanism,
                                               "sasl.username": "alice",
                                               "sasl.password": USERS["alice"]})
    assert config["bootstrap.servers"].startswith("localhost:")  # verified host name
    assert _confluent_roundtrip(config, topic) == VALUES
    assert _principals(secure) >= {"User:alice"}


def _confluent_login_error(config: dict[str, Any]) -> KafkaError:
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + TIMEOUT
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors, "no error reported"
    return errors[0]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_confluent_wrong_password_is_an_authentication_error(secure: MockClusterThread,
                                                             mechanism: str) -> None:
    error = _confluent_login_error(_confluent(
        secure, "SASL_SSL", **{"sasl.mechanism": mechanism, "sasl.username": "alice",
                               "sasl.password": "wrong"}))
    assert error.code() == KafkaError._AUTHENTICATION
    expected = "Authentication failed: Invalid username or password" if mechanism == "PLAIN" \
        else f"invalid credentials with SASL mechanism {mechanism}"
    assert expected in error.str()


def test_confluent_mutual_tls_principal(secure: MockClusterThread) -> None:
    files = secure.tls_files
    assert files is not None and files.client_cert is not None and files.client_key is not None
    config = _confluent(secure, "SSL", **{"ssl.certificate.location": files.client_cert,
                                          "ssl.key.location": files.client_key})
    assert _confluent_roundtrip(config, "confluent-mtls") == VALUES
    assert "User:CN=mockbroker-client" in _principals(secure)


def test_confluent_oauthbearer_unsecured_jwt() -> None:
    with MockClusterThread(brokers=1, security_protocol="SASL_PLAINTEXT",
                           sasl_mechanisms="OAUTHBEARER", trace_buffer=1000) as mock:
        config = {"bootstrap.servers": mock.bootstrap_servers,
                  "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                  "sasl.oauthbearer.config": "principal=alice",
                  "enable.sasl.oauthbearer.unsecure.jwt": True}
        assert _confluent_roundtrip(config, "oauth") == VALUES
        state = mock.control.state()
        auths = state["security"]["authentications"]
        assert {(a["principal"], a["mechanism"]) for a in auths} == {("User:alice",
                                                                      "OAUTHBEARER")}
        # the token's exp (librdkafka: an hour) bounds the session (KIP-368)
        assert all(3_500_000 < a["session_lifetime_ms"] <= 3_600_000 for a in auths)
        assert _principals(mock) == {"User:alice"}


def test_confluent_reauthenticates_on_the_same_connection() -> None:
    """KIP-368 with a real client: the broker's session lifetime (connections.max.reauth.ms)
    makes librdkafka re-authenticate on its open connection before the session ends, and
    producing goes on (waits for that event, bounded; asserts no timing)."""
    with MockClusterThread(brokers=1, security_protocol="SASL_PLAINTEXT", sasl_users=USERS,
                           connections_max_reauth_ms=1000) as mock:
        producer = Producer({"bootstrap.servers": mock.bootstrap_servers,
                             "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
                             "sasl.password": USERS["alice"]})
        delivered: list[object] = []
        reauthenticated: list[dict[str, Any]] = []
        deadline = time.monotonic() + TIMEOUT
        while not reauthenticated and time.monotonic() < deadline:
            producer.produce("reauth", b"v", on_delivery=lambda err, _m: delivered.append(err))
            producer.poll(0.1)
            logins = mock.control.state()["security"]["authentications"]
            first_peers = {a["peer"] for a in logins if not a["reauthentication"]}
            reauthenticated = [a for a in logins
                               if a["reauthentication"] and a["peer"] in first_peers]
        assert producer.flush(TIMEOUT) == 0
        assert reauthenticated, "librdkafka did not re-authenticate"
        assert {(a["principal"], a["session_lifetime_ms"]) for a in reauthenticated} == {
            ("User:alice", 1000)}
        assert delivered and set(delivered) == {None}


@pytest.mark.mockbroker(brokers=1, security_protocol="SASL_SSL", sasl_users={"carol": "pw"})
def test_pytest_marker_gives_a_sasl_ssl_cluster(mockbroker: Any) -> None:
    files = mockbroker.tls_files
    config = {"bootstrap.servers": mockbroker.bootstrap_servers,
              "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
              "sasl.username": "carol", "sasl.password": "pw", "ssl.ca.location": files.ca}
    assert _confluent_roundtrip(config, "marked") == VALUES


# -- kafka-python ----------------------------------------------------------------------------

def _kafka_python_roundtrip(settings: dict[str, Any], topic: str) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(**settings)
    try:
        for value in VALUES:
            producer.send(topic, value).get(timeout=TIMEOUT)
    finally:
        producer.close(timeout=TIMEOUT)
    consumer = KafkaConsumer(topic, **settings, group_id=None, auto_offset_reset="earliest",
                             consumer_timeout_ms=int(TIMEOUT * 1000))
    try:
        return [record.value for _, record in zip(VALUES, consumer, strict=False)]
    finally:
        consumer.close()


@pytest.mark.parametrize(("protocol", "mechanism"), [
    ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512")])
def test_kafka_python(secure: MockClusterThread, protocol: str, mechanism: str) -> None:
    settings: dict[str, Any] = {
        "bootstrap_servers": secure.listener_bootstrap(protocol),
        "security_protocol": protocol, "sasl_mechanism": mechanism,
        "sasl_plain_username": "bob", "sasl_plain_password": USERS["bob"]}
    if protocol == "SASL_SSL":
        settings["ssl_cafile"] = _ca(secure)
    topic = f"kafka-python-{protocol}-{mechanism}".lower()
    assert _kafka_python_roundtrip(settings, topic) == VALUES
    assert "User:bob" in _principals(secure)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kafka_python_legacy_handshake_v0(secure: MockClusterThread, mechanism: str) -> None:
    """kafka-python told the broker is 0.11 takes the pre-KIP-152 path: SaslHandshake v0,
    then the tokens as bare frames (no SaslAuthenticate)."""
    client_id = f"kafka-python-legacy-{mechanism}".lower()
    settings: dict[str, Any] = {
        "bootstrap_servers": secure.listener_bootstrap("SASL_PLAINTEXT"),
        "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
        "sasl_plain_username": "bob", "sasl_plain_password": USERS["bob"],
        "api_version": (0, 11), "client_id": client_id}
    assert _kafka_python_roundtrip(settings, client_id) == VALUES
    mine = [r for r in secure.control.trace(n=10_000)["requests"]
            if r["client_id"] == client_id or r["outcome"] == "SASL token (v0 handshake)"]
    assert {(r["api"], r["version"]) for r in mine if r["api"].startswith("Sasl")} == {
        ("SaslHandshake", 0)}
    assert {r["principal"] for r in mine if r["api"] == "Produce"} == {"User:bob"}
    tokens = [r for r in mine if r["outcome"] == "SASL token (v0 handshake)"]
    assert tokens and {(r["api"], r["api_key"]) for r in tokens} == {("?", None)}


def test_kafka_python_wrong_password(secure: MockClusterThread) -> None:
    """kafka-python retries a refused login until its bootstrap gives up
    (bootstrap_timeout_ms); the broker
    refused each attempt with SASL_AUTHENTICATION_FAILED."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(bootstrap_servers=secure.listener_bootstrap("SASL_PLAINTEXT"),
                      security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                      sasl_plain_username="bob", sasl_plain_password="wrong",
                      client_id="kafka-python-wrong-password", bootstrap_timeout_ms=3000).close()
    refused = [r for r in secure.control.trace(n=10_000, api="SaslAuthenticate")["requests"]
               if r["client_id"] == "kafka-python-wrong-password" and r["errors"]]
    assert refused and {tuple(r["errors"].items()) for r in refused} == {
        (("SASL_AUTHENTICATION_FAILED", 1),)}


# -- aiokafka --------------------------------------------------------------------------------

async def _aiokafka_roundtrip(settings: dict[str, Any], topic: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    producer = AIOKafkaProducer(**settings)
    await producer.start()
    try:
        for value in VALUES:
            await producer.send_and_wait(topic, value)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, **settings, group_id=None,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        got = []
        while len(got) < len(VALUES):
            got.append((await asyncio.wait_for(consumer.getone(), TIMEOUT)).value)
        return got
    finally:
        await consumer.stop()


@pytest.mark.parametrize(("protocol", "mechanism"), [
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256")])
async def test_aiokafka(secure: MockClusterThread, protocol: str, mechanism: str) -> None:
    from aiokafka.helpers import create_ssl_context

    settings: dict[str, Any] = {
        "bootstrap_servers": secure.listener_bootstrap(protocol),
        "security_protocol": protocol, "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice", "sasl_plain_password": USERS["alice"]}
    if protocol == "SASL_SSL":
        settings["ssl_context"] = create_ssl_context(cafile=_ca(secure))
    topic = f"aiokafka-{protocol}-{mechanism}".lower()
    assert await _aiokafka_roundtrip(settings, topic) == VALUES


async def test_aiokafka_wrong_password(secure: MockClusterThread,
                                       caplog: pytest.LogCaptureFixture) -> None:
    """aiokafka reports the broker's error 58 with Kafka's message, then gives up on the
    bootstrap."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    producer = AIOKafkaProducer(bootstrap_servers=secure.listener_bootstrap("SASL_PLAINTEXT"),
                                security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                sasl_plain_username="alice", sasl_plain_password="wrong")
    try:
        with pytest.raises(KafkaConnectionError, match="Unable to bootstrap"):
            await producer.start()
    finally:
        await producer.stop()
    assert "[Error 58] SaslAuthenticationFailed: Authentication failed: Invalid username or " \
           "password" in caplog.text


# -- kcat --------------------------------------------------------------------------------------

def test_kcat_sasl_ssl(secure: MockClusterThread) -> None:
    kcat = find_kcat()
    assert kcat is not None, "kcat is a test dependency"
    options = ["-b", secure.listener_bootstrap("SASL_SSL"), "-X", "security.protocol=SASL_SSL",
               "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=bob",
               "-X", f"sasl.password={USERS['bob']}", "-X", f"ssl.ca.location={_ca(secure)}"]
    subprocess.run([kcat, *options, "-P", "-t", "kcat-sasl"], input=b"\n".join(VALUES),
                   check=True, timeout=TIMEOUT, capture_output=True)
    out = subprocess.run([kcat, *options, "-C", "-t", "kcat-sasl", "-o", "beginning", "-e",
                          "-c", str(len(VALUES))], check=True, timeout=TIMEOUT,
                         capture_output=True).stdout
    assert out.splitlines() == VALUES
    assert "User:bob" in _principals(secure, "Fetch")
