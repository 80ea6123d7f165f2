"""kafkajs (tests/kafkajs/client.js) with its production security settings against
mockbroker's SASL_SSL listeners: `ssl: {ca: [CA]}` trusting the generated CA (Node verifies
the host name `localhost` the listener advertises) and `sasl` with each mechanism kafkajs
speaks: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER, whose `oauthBearerProvider`
hands over an unsecured JWT (alg none) that the broker validates as Kafka's default
validator does. Checked exactly: the records read back and the principal the broker saw;
a wrong password is kafkajs' KafkaJSSASLAuthenticationError; with the authorizer on, a user
allowed DESCRIBE but not WRITE gets TOPIC_AUTHORIZATION_FAILED from Produce.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.clients.test_kafkajs import _b64, _record, node, run_kafkajs

pytestmark = pytest.mark.clients
__all__ = ["node"]  # the fixture, shared with test_kafkajs

USERS = {"alice": "alice-secret", "admin": "admin-secret"}
MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
# advertised as localhost, the name the generated certificate carries and Node verifies
SASL_SSL_LOCALHOST = {"listeners": "SASL_SSL://127.0.0.1:0",
                      "advertised_listeners": "SASL_SSL://localhost"}
VALUES = [b"one", "два ✓".encode(), bytes(range(256))]


def _ssl(mock: MockClusterThread) -> dict[str, str]:
    files = mock.tls_files
    assert files is not None and files.ca is not None
    return {"ca": files.ca}


def _messages(values: list[bytes]) -> list[dict[str, Any]]:
    return [{"partition": 0, "key": _b64(f"k-{i}".encode()), "value": _b64(value),
             "headers": [["n", _b64(str(i).encode())]]} for i, value in enumerate(values)]


def _unsecured_jwt(subject: str, lifetime_s: int = 3600) -> str:
    """An unsecured JWS (RFC 7515 with alg none): header.claims. with an empty signature."""
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + lifetime_s})}."


@pytest.fixture(scope="module")
def secure() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3, **SASL_SSL_LOCALHOST, sasl_users=USERS,
                           sasl_mechanisms=MECHANISMS, trace_buffer=10_000) as mock:
        yield mock


def _spec(mock: MockClusterThread, topic: str, sasl: dict[str, str],
          values: list[bytes]) -> dict[str, Any]:
    return {"brokers": mock.bootstrap_servers, "topic": topic, "groupId": f"g-{topic}",
            "messages": _messages(values), "ssl": _ssl(mock), "sasl": sasl}


@pytest.mark.parametrize("mechanism", ["plain", "scram-sha-256", "scram-sha-512",
                                       "oauthbearer"])
def test_kafkajs_sasl_ssl_roundtrip(node: str, secure: MockClusterThread, mechanism: str) -> None:
    topic = f"kafkajs-sasl-ssl-{mechanism}"
    secure.control.create_topic(topic, partitions=1)
    sasl = ({"mechanism": mechanism, "token": _unsecured_jwt("alice")}
            if mechanism == "oauthbearer" else
            {"mechanism": mechanism, "username": "alice", "password": USERS["alice"]})
    assert secure.bootstrap_servers.startswith("localhost:")  # Node checks this name
    out = run_kafkajs(node, "roundtrip", _spec(secure, topic, sasl, VALUES))
    assert out["offsets"] == [[0, i] for i in range(len(VALUES))]
    assert [_record(m) for m in out["messages"]] == [
        (0, i, f"k-{i}".encode(), value, (("n", str(i).encode()),))
        for i, value in enumerate(VALUES)]
    logins = secure.control.state()["security"]["authentications"]
    assert ("User:alice", mechanism.upper()) in {(a["principal"], a["mechanism"])
                                                 for a in logins}


@pytest.mark.parametrize("mechanism", ["plain", "scram-sha-512"])
def test_kafkajs_wrong_password_is_a_sasl_authentication_error(
        node: str, secure: MockClusterThread, mechanism: str) -> None:
    secure.control.create_topic(f"kafkajs-refused-{mechanism}", partitions=1)
    out = run_kafkajs(node, "attempt", _spec(
        secure, f"kafkajs-refused-{mechanism}",
        {"mechanism": mechanism, "username": "alice", "password": "wrong"}, VALUES[:1]))
    assert out["error"] is not None, out
    assert out["error"]["name"] == "KafkaJSSASLAuthenticationError"


def test_kafkajs_acl_denial_is_topic_authorization_failed(node: str) -> None:
    with MockClusterThread(brokers=1, **SASL_SSL_LOCALHOST, sasl_users=USERS,
                           authorizer=True, super_users="User:admin",
                           trace_buffer=1000) as mock:
        mock.control.create_topic("audited", partitions=1)
        mock.control.create_acl("TOPIC", "audited", "User:alice", "DESCRIBE")
        sasl = {"mechanism": "scram-sha-256", "username": "alice", "password": USERS["alice"]}
        out = run_kafkajs(node, "attempt", _spec(mock, "audited", sasl, VALUES[:1]))
        assert out["error"] is not None, out
        assert out["error"]["name"] == "KafkaJSProtocolError"
        assert (out["error"]["type"], out["error"]["code"]) == ("TOPIC_AUTHORIZATION_FAILED", 29)
        produces = mock.control.trace(n=1000, api="Produce")["requests"]
        assert produces and {r["principal"] for r in produces} == {"User:alice"}
        assert mock.control.state()["topics"]["audited"]["partitions"][0]["log_end_offset"] == 0
        # the same client as admin (a super user) writes
        admin = {"mechanism": "scram-sha-256", "username": "admin", "password": USERS["admin"]}
        out = run_kafkajs(node, "attempt", _spec(mock, "audited", admin, VALUES[:1]))
        assert out == {"error": None, "offsets": [[0, 0]]}
