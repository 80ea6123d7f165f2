"""SASL on the wire, message by message: Kafka's server-side state machine (KIP-43, KIP-152,
KIP-368) with PLAIN, SCRAM and OAUTHBEARER, seen through the raw codec.

The cluster has a SASL_PLAINTEXT listener (the registered one) and a PLAINTEXT listener,
users alice and `bob,=x` (a name that needs SCRAM's =2C/=3D escaping), a session lifetime
of 60 s (connections.max.reauth.ms) and a manual clock, so session expiry happens when the
test advances time.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.cluster import ManualClock
from mockbroker.control.webview import render_view
from mockbroker.embedded import MockCluster
from mockbroker.handlers import REGISTRY
from mockbroker.handlers.context import RequestContext
from tests.support.rawclient import ConnectionClosed, RawClient
from tests.support.sasl import ScramClient, oauthbearer_initial, unsecured_jwt

PRODUCE, METADATA, LIST_GROUPS = 0, 3, 16
SASL_HANDSHAKE, API_VERSIONS, SASL_AUTHENTICATE = 17, 18, 36
MAX_REAUTH_MS = 60_000
ENABLED = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
NO_TOPICS = {"topics": [], "allow_auto_topic_creation": False}


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    clock = ManualClock(int(time.time() * 1000))
    async with MockCluster(brokers=2, clock=clock,
                           listeners="SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
                           sasl_users={"alice": "secret", "bob,=x": "pw"},
                           connections_max_reauth_ms=MAX_REAUTH_MS, trace_buffer=100) as cluster:
        yield cluster


def _sasl_port(mc: MockCluster) -> int:
    return mc.cluster.brokers[0].port


def _clock(mc: MockCluster) -> ManualClock:
    clock = mc.cluster.clock
    assert isinstance(clock, ManualClock)
    return clock


@pytest.fixture
async def client(mc: MockCluster) -> AsyncIterator[RawClient]:
    async with await RawClient.connect(_sasl_port(mc)) as raw:
        yield raw


async def _handshake(client: RawClient, mechanism: str, version: int = 1) -> None:
    answer = await client.request(SASL_HANDSHAKE, version, {"mechanism": mechanism})
    assert (answer.error_code, list(answer.mechanisms)) == (E.NONE, ENABLED)


async def _plain(client: RawClient, user: str = "alice", password: str = "secret",
                 version: int = 2) -> object:
    await _handshake(client, "PLAIN")
    return await client.request(SASL_AUTHENTICATE, version,
                                {"auth_bytes": f"\0{user}\0{password}".encode()})


async def _no_response_and_closed(client: RawClient) -> None:
    with pytest.raises(ConnectionClosed):
        await client.read_frame(timeout=5)


# -- before authentication -------------------------------------------------------------------

async def test_a_request_before_the_handshake_closes_the_connection(client: RawClient) -> None:
    await client.send(METADATA, 12, NO_TOPICS)
    await _no_response_and_closed(client)


async def test_api_versions_then_the_handshake_only(mc: MockCluster) -> None:
    async with await RawClient.connect(_sasl_port(mc)) as raw:
        versions = await raw.request(API_VERSIONS, 3, {"client_software_name": "t",
                                                       "client_software_version": "1"})
        advertised = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert advertised[SASL_HANDSHAKE] == (0, 1) and advertised[SASL_AUTHENTICATE] == (0, 2)
        await raw.send(METADATA, 12, NO_TOPICS)
        await _no_response_and_closed(raw)
    async with await RawClient.connect(_sasl_port(mc)) as raw:  # a second ApiVersions
        await raw.request(API_VERSIONS, 3, {"client_software_name": "t",
                                            "client_software_version": "1"})
        await raw.send(API_VERSIONS, 3, {"client_software_name": "t",
                                         "client_software_version": "1"})
        await _no_response_and_closed(raw)


# -- ILLEGAL_SASL_STATE: Kafka's SaslServerAuthenticator ------------------------------------

async def test_sasl_authenticate_without_a_handshake_closes_without_an_answer(
        mc: MockCluster) -> None:
    """Before a handshake Kafka accepts only ApiVersions and SaslHandshake: anything else
    (SaslAuthenticate too) is an InvalidRequestException, and nothing is sent back."""
    async with await RawClient.connect(_sasl_port(mc)) as raw:
        await raw.send(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0secret"})
        await _no_response_and_closed(raw)
    async with await RawClient.connect(_sasl_port(mc)) as raw:
        await raw.request(API_VERSIONS, 3, {"client_software_name": "t",
                                            "client_software_version": "1"})
        await raw.send(SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0secret"})
        await _no_response_and_closed(raw)


async def test_a_request_during_authentication_gets_illegal_sasl_state_then_closes(
        mc: MockCluster) -> None:
    """After a v1 handshake only SaslAuthenticate may come; Kafka answers anything else with
    that request's error response carrying ILLEGAL_SASL_STATE, then closes."""
    message = "Unexpected Kafka request of type {} during SASL authentication."
    async with await RawClient.connect(_sasl_port(mc)) as raw:
        await _handshake(raw, "PLAIN")
        answer = await raw.request(METADATA, 12, {
            "topics": [{"name": "t", "topic_id": None}], "allow_auto_topic_creation": False})
        assert [(t.name, t.error_code, list(t.partitions)) for t in answer.topics] == [
            ("t", E.ILLEGAL_SASL_STATE, [])]
        assert list(answer.brokers) == []
        assert await raw.is_closed()
    async with await RawClient.connect(_sasl_port(mc)) as raw:
        await _handshake(raw, "SCRAM-SHA-256")
        answer = await raw.request(PRODUCE, 9, {
            "transactional_id": None, "acks": 1, "timeout_ms": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": None},
                                                            {"index": 1, "records": None}]}]})
        assert [(t.name, p.index, p.error_code, p.base_offset, p.error_message)
                for t in answer.responses for p in t.partition_responses] == [
            ("t", i, E.ILLEGAL_SASL_STATE, -1, message.format("PRODUCE")) for i in (0, 1)]
        assert await raw.is_closed()
    async with await RawClient.connect(_sasl_port(mc)) as raw:
        await _handshake(raw, "PLAIN")
        answer = await raw.request(LIST_GROUPS, 4, {"states_filter": []})
        assert (answer.error_code, list(answer.groups)) == (E.ILLEGAL_SASL_STATE, [])
        assert await raw.is_closed()
    states = [(a["principal"], a["mechanism"])
              for a in (await mc.control.state())["security"]["authentications"]]
    assert states == []  # nobody authenticated on the way


async def test_a_second_handshake_gets_illegal_sasl_state_then_closes(
        client: RawClient) -> None:
    await _handshake(client, "PLAIN")
    again = await client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert (again.error_code, list(again.mechanisms)) == (E.ILLEGAL_SASL_STATE, [])
    assert await client.is_closed()


async def test_after_a_v0_handshake_every_frame_is_a_token(client: RawClient) -> None:
    """A v0 handshake means bare tokens follow (no Kafka header): a second handshake is
    taken as a PLAIN token, fails, and the connection just closes."""
    await _handshake(client, "PLAIN", version=0)
    await client.send(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    await _no_response_and_closed(client)


async def test_api_versions_above_the_advertised_may_be_retried(client: RawClient) -> None:
    """A newer client's first ApiVersions is answered UNSUPPORTED_VERSION (v0 layout), and
    the retry at a supported version is still allowed before the handshake, as in Kafka."""
    await client.send_raw(_api_versions_frame(version=99))
    answer = await client.read_frame()
    assert int.from_bytes(answer[:4], "big") == 77  # correlation id, then the error code
    assert int.from_bytes(answer[4:6], "big") == E.UNSUPPORTED_VERSION
    versions = await client.request(API_VERSIONS, 3, {"client_software_name": "t",
                                                      "client_software_version": "1"})
    assert versions.error_code == E.NONE
    await _handshake(client, "PLAIN")


def _api_versions_frame(version: int) -> bytes:
    header = (API_VERSIONS.to_bytes(2, "big") + version.to_bytes(2, "big")
              + (77).to_bytes(4, "big") + (1).to_bytes(2, "big") + b"t")
    return len(header).to_bytes(4, "big") + header


async def test_unsupported_mechanism_lists_the_enabled_ones_then_closes(
        client: RawClient) -> None:
    answer = await client.request(SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
    assert (answer.error_code, list(answer.mechanisms)) == (E.UNSUPPORTED_SASL_MECHANISM,
                                                            ENABLED)
    assert await client.is_closed()


async def test_sasl_requests_on_a_plaintext_listener_are_illegal(mc: MockCluster) -> None:
    port = mc.server.extra_bound_ports[0][0]
    async with await RawClient.connect(port) as raw:
        handshake = await raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert (handshake.error_code, list(handshake.mechanisms)) == (E.ILLEGAL_SASL_STATE, [])
        auth = await raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0secret"})
        assert (auth.error_code, auth.error_message) == (
            E.ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful "
                                  "authentication")
        meta = await raw.request(METADATA, 12, NO_TOPICS)  # plain listener: no auth needed
        assert sorted(b.node_id for b in meta.brokers) == [0, 1]


# -- PLAIN -----------------------------------------------------------------------------------

async def test_plain_authenticates_and_names_the_principal(mc: MockCluster,
                                                           client: RawClient) -> None:
    answer = await _plain(client)
    assert (answer.error_code, answer.error_message, answer.auth_bytes,
            answer.session_lifetime_ms) == (E.NONE, "", b"", MAX_REAUTH_MS)
    meta = await client.request(METADATA, 12, NO_TOPICS)
    ports = {b.node_id: b.port for b in meta.brokers}  # the SASL listener's endpoints
    assert ports == {b: mc.cluster.brokers[b].port for b in (0, 1)}
    auths = (await mc.control.state())["security"]["authentications"]
    assert [(a["principal"], a["mechanism"], a["listener"], a["session_lifetime_ms"])
            for a in auths] == [("User:alice", "PLAIN", "SASL_PLAINTEXT", MAX_REAUTH_MS)]
    traced = (await mc.control.trace(n=1, api="Metadata"))["requests"]
    assert traced[0]["principal"] == "User:alice"
    view = render_view(await mc.control.state())  # the web view lists listeners and logins
    assert "<td>SASL_PLAINTEXT</td><td>SASL_PLAINTEXT</td>" in view
    assert "<td>User:alice</td><td>PLAIN</td><td>SASL_PLAINTEXT</td>" in view


async def test_handlers_see_the_principal_and_the_listener(
        mc: MockCluster, client: RawClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """What authorization will read: every RequestContext names who sent the request and
    on which listener."""
    seen: list[tuple[str, str]] = []
    spec = REGISTRY[METADATA]

    def recording(body: Any, ctx: RequestContext) -> Any:
        seen.append((ctx.principal, ctx.listener_name))
        return spec.func(body, ctx)

    monkeypatch.setitem(REGISTRY, METADATA, dataclasses.replace(spec, func=recording))
    await _plain(client)
    await client.request(METADATA, 12, NO_TOPICS)
    async with await RawClient.connect(mc.server.extra_bound_ports[0][1]) as plain:
        await plain.request(METADATA, 12, NO_TOPICS)
    assert seen == [("User:alice", "SASL_PLAINTEXT"), ("User:ANONYMOUS", "PLAINTEXT")]


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "secret")])
async def test_plain_wrong_credentials_fail_with_kafkas_message(
        client: RawClient, user: str, password: str) -> None:
    answer = await _plain(client, user, password)
    assert (answer.error_code, answer.error_message) == (
        E.SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password")
    assert await client.is_closed()


async def test_plain_malformed_token_gets_the_generic_message(client: RawClient) -> None:
    await _handshake(client, "PLAIN")
    answer = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"alice:secret"})
    assert (answer.error_code, answer.error_message) == (
        E.SASL_AUTHENTICATION_FAILED, "Authentication failed during authentication due to "
                                      "invalid credentials with SASL mechanism PLAIN")
    assert await client.is_closed()


# -- SCRAM -----------------------------------------------------------------------------------

@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize(("user", "password"), [("alice", "secret"), ("bob,=x", "pw")])
async def test_scram_exchange_with_server_signature(client: RawClient, mechanism: str,
                                                    user: str, password: str) -> None:
    scram = ScramClient(mechanism, user, password)
    await _handshake(client, mechanism)
    first = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first()})
    assert (first.error_code, first.session_lifetime_ms) == (E.NONE, 0)
    fields = dict(p.split("=", 1) for p in first.auth_bytes.decode().split(","))
    assert list(fields) == ["r", "s", "i"] and fields["i"] == "4096"
    final = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.final(
        first.auth_bytes)})
    assert (final.error_code, final.session_lifetime_ms) == (E.NONE, MAX_REAUTH_MS)
    assert scram.check_server_final(final.auth_bytes)
    meta = await client.request(METADATA, 12, NO_TOPICS)
    assert len(meta.brokers) == 2


@pytest.mark.parametrize("prefix", ["fyko+d2lbbFgONRv9qkxdawL", "x"])
async def test_scram_final_nonce_must_end_with_the_servers(client: RawClient,
                                                           prefix: str) -> None:
    """As Kafka's ScramSaslServer: the final nonce ends with the server's (librdkafka 1.x
    repeats its own nonce in front)."""
    scram = ScramClient("SCRAM-SHA-256", "alice", "secret")
    await _handshake(client, "SCRAM-SHA-256")
    first = await client.request(SASL_AUTHENTICATE, 1, {"auth_bytes": scram.first()})
    final = await client.request(SASL_AUTHENTICATE, 1, {"auth_bytes": scram.final(
        first.auth_bytes, prefix)})
    assert final.error_code == E.NONE and scram.check_server_final(final.auth_bytes)


async def test_scram_final_with_another_nonce_fails(client: RawClient) -> None:
    scram = ScramClient("SCRAM-SHA-256", "alice", "secret")
    await _handshake(client, "SCRAM-SHA-256")
    first = await client.request(SASL_AUTHENTICATE, 1, {"auth_bytes": scram.first()})
    message = scram.final(first.auth_bytes)
    tampered = message.replace(b",p=", b"Z,p=", 1)  # a nonce the server never sent
    final = await client.request(SASL_AUTHENTICATE, 1, {"auth_bytes": tampered})
    assert final.error_code == E.SASL_AUTHENTICATION_FAILED
    assert await client.is_closed()


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("nobody", "secret")])
async def test_scram_wrong_credentials_fail_without_saying_why(
        client: RawClient, user: str, password: str) -> None:
    scram = ScramClient("SCRAM-SHA-512", user, password)
    await _handshake(client, "SCRAM-SHA-512")
    first = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first()})
    if first.error_code == E.NONE:  # a known user: the proof is what fails
        first = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.final(
            first.auth_bytes)})
    assert (first.error_code, first.error_message) == (
        E.SASL_AUTHENTICATION_FAILED, "Authentication failed during authentication due to "
                                      "invalid credentials with SASL mechanism SCRAM-SHA-512")
    assert await client.is_closed()


async def test_scram_tolerates_extensions(client: RawClient) -> None:
    """Kafka's SCRAM client may append extensions (`tokenauth=true`) to its first message."""
    scram = ScramClient("SCRAM-SHA-512", "alice", "secret")
    scram.client_first_bare += ",tokenauth=false"  # part of the signed AuthMessage
    await _handshake(client, "SCRAM-SHA-512")
    first = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first()})
    assert first.error_code == E.NONE
    final = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.final(
        first.auth_bytes)})
    assert final.error_code == E.NONE


async def test_scram_rejects_a_bad_username_escape(client: RawClient) -> None:
    await _handshake(client, "SCRAM-SHA-256")
    answer = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"n,,n=al=ice,r=abc"})
    assert answer.error_code == E.SASL_AUTHENTICATION_FAILED
    assert await client.is_closed()


# -- SaslHandshake v0: bare tokens -----------------------------------------------------------

async def test_handshake_v0_takes_bare_tokens(client: RawClient) -> None:
    answer = await client.request(SASL_HANDSHAKE, 0, {"mechanism": "SCRAM-SHA-256"})
    assert (answer.error_code, list(answer.mechanisms)) == (E.NONE, ENABLED)
    scram = ScramClient("SCRAM-SHA-256", "alice", "secret")
    await client.send_raw(len(scram.first()).to_bytes(4, "big") + scram.first())
    server_first = await client.read_frame()
    final = scram.final(server_first)
    await client.send_raw(len(final).to_bytes(4, "big") + final)
    assert scram.check_server_final(await client.read_frame())
    meta = await client.request(METADATA, 12, NO_TOPICS)
    assert len(meta.brokers) == 2


async def test_handshake_v0_failure_just_closes(client: RawClient) -> None:
    await client.request(SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
    token = b"\0alice\0wrong"
    await client.send_raw(len(token).to_bytes(4, "big") + token)
    await _no_response_and_closed(client)


# -- re-authentication (KIP-368) -------------------------------------------------------------

async def test_an_expired_session_is_closed_on_its_next_request(mc: MockCluster,
                                                                client: RawClient) -> None:
    await _plain(client)
    _clock(mc).advance(MAX_REAUTH_MS)  # the last moment of the session
    assert len((await client.request(METADATA, 12, NO_TOPICS)).brokers) == 2
    _clock(mc).advance(1)
    await client.send(METADATA, 12, NO_TOPICS)
    await _no_response_and_closed(client)


async def test_reauthentication_on_the_same_connection_extends_the_session(
        mc: MockCluster, client: RawClient) -> None:
    await _plain(client)
    _clock(mc).advance(MAX_REAUTH_MS + 1)  # expired: only a re-authentication is let in
    again = await _plain(client)
    assert (again.error_code, again.session_lifetime_ms) == (E.NONE, MAX_REAUTH_MS)
    assert len((await client.request(METADATA, 12, NO_TOPICS)).brokers) == 2
    auths = (await mc.control.state())["security"]["authentications"]
    assert [a["reauthentication"] for a in auths] == [False, True]


async def test_reauthentication_cannot_change_the_principal(mc: MockCluster,
                                                            client: RawClient) -> None:
    mc.cluster.credentials.add_user("carol", "pw3")
    await _plain(client)
    answer = await _plain(client, "carol", "pw3")
    assert answer.error_code == E.SASL_AUTHENTICATION_FAILED
    assert "Cannot change principals during re-authentication" in answer.error_message
    assert await client.is_closed()


async def test_authenticate_v0_client_cannot_reauthenticate(client: RawClient) -> None:
    answer = await _plain(client, version=0)
    assert answer.error_code == E.NONE
    handshake = await client.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert handshake.error_code == E.ILLEGAL_SASL_STATE  # answered as Kafka's KafkaApis does


# -- OAUTHBEARER (KIP-255 unsecured tokens) -------------------------------------------------

async def test_oauthbearer_token_names_the_principal_and_bounds_the_session(
        mc: MockCluster, client: RawClient) -> None:
    now_s = _clock(mc).now_ms() / 1000
    token = unsecured_jwt({"sub": "svc-orders", "iat": now_s, "exp": now_s + 30,
                           "scope": "kafka"})
    await _handshake(client, "OAUTHBEARER")
    answer = await client.request(SASL_AUTHENTICATE, 2,
                                  {"auth_bytes": oauthbearer_initial(token)})
    assert (answer.error_code, answer.session_lifetime_ms) == (E.NONE, 30_000)  # < max reauth
    auths = (await mc.control.state())["security"]["authentications"]
    assert auths[-1]["principal"] == "User:svc-orders"


@pytest.mark.parametrize("claims_alg", [
    ({"sub": "a", "exp": -1}, "none"),  # expired
    ({"sub": "a", "exp": 2**40, "iat": 2**40 - 1}, "none"),  # issued in the future
    ({"exp": 2**40}, "none"),  # no subject
    ({"sub": "a", "exp": 2**40}, "HS256"),  # not unsecured
])
async def test_oauthbearer_bad_token_gets_the_error_status_then_fails(
        client: RawClient, claims_alg: tuple[dict[str, object], str]) -> None:
    claims, alg = claims_alg
    await _handshake(client, "OAUTHBEARER")
    answer = await client.request(SASL_AUTHENTICATE, 2, {
        "auth_bytes": oauthbearer_initial(unsecured_jwt(claims, alg))})
    assert answer.error_code == E.NONE
    assert json.loads(answer.auth_bytes) == {"status": "invalid_token"}
    final = await client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
    assert (final.error_code, final.error_message) == (E.SASL_AUTHENTICATION_FAILED,
                                                       '{"status":"invalid_token"}')
    assert await client.is_closed()


async def test_oauthbearer_authzid_must_match_the_subject(mc: MockCluster,
                                                          client: RawClient) -> None:
    now_s = _clock(mc).now_ms() / 1000
    token = unsecured_jwt({"sub": "alice", "exp": now_s + 60})
    await _handshake(client, "OAUTHBEARER")
    answer = await client.request(SASL_AUTHENTICATE, 2, {
        "auth_bytes": oauthbearer_initial(token, authzid="bob")})
    assert (answer.error_code, answer.error_message) == (
        E.SASL_AUTHENTICATION_FAILED, "Authentication failed: Client requested an "
        "authorization id (bob) that is different from the token's principal name (alice)")


def _fetch_body(version: int, topic_id: Any = None) -> dict[str, Any]:
    partitions = [{"partition": i, "current_leader_epoch": -1, "fetch_offset": 0,
                   "last_fetched_epoch": -1, "log_start_offset": -1,
                   "partition_max_bytes": 1024} for i in (0, 1)]
    topic = {"topic": "t", "partitions": partitions} if version < 13 else \
        {"topic_id": topic_id, "partitions": partitions}
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 7 if version >= 7 else 0,
            "session_epoch": 3, "topics": [topic], "forgotten_topics_data": [],
            "rack_id": ""}


@pytest.mark.parametrize("version", [4, 6, 7, 11, 12])
async def test_fetch_during_authentication_below_v13_errs_in_every_partition(
        mc: MockCluster, version: int) -> None:
    """Kafka's FetchRequest.getErrorResponse below v13: each requested partition carries
    ILLEGAL_SASL_STATE (high watermark -1, no aborted transactions, null records), beside
    the top-level code and the request's session id from v7."""
    async with await RawClient.connect(_sasl_port(mc)) as raw:
        await _handshake(raw, "PLAIN")
        answer = await raw.request(1, version, _fetch_body(version))
        assert [(t.topic, p.partition_index, p.error_code, p.high_watermark,
                 p.last_stable_offset, p.log_start_offset, list(p.aborted_transactions),
                 p.records) for t in answer.responses for p in t.partitions] == [
            ("t", i, E.ILLEGAL_SASL_STATE, -1, -1, -1, [], None) for i in (0, 1)]
        if version >= 7:
            assert (answer.error_code, answer.session_id) == (E.ILLEGAL_SASL_STATE, 7)
        else:
            assert answer.error_code == E.NONE  # not on the wire below v7: the default
        assert await raw.is_closed()


@pytest.mark.parametrize("version", [13, 15, 17])
async def test_fetch_during_authentication_from_v13_errs_only_at_the_top(
        mc: MockCluster, version: int) -> None:
    """From v13 Kafka's Fetch error response carries the top-level code only: no topics."""
    import uuid

    async with await RawClient.connect(_sasl_port(mc)) as raw:
        await _handshake(raw, "SCRAM-SHA-512")
        answer = await raw.request(1, version, _fetch_body(version, uuid.uuid4()))
        assert (answer.error_code, answer.session_id, list(answer.responses)) == (
            E.ILLEGAL_SASL_STATE, 7, [])
        assert await raw.is_closed()
