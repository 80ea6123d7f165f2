"""SASL and SCRAM: SaslHandshake (the mechanism list, an unsupported mechanism),
SaslAuthenticate (a login, a bad password), DescribeUserScramCredentials and
AlterUserScramCredentials (upserts, deletions, their refusals), and client telemetry
(GetTelemetrySubscriptions, PushTelemetry, ListClientMetricsResources) as a client without a
subscription sees it.

The SASL cases open connections of their own to the SASL_PLAINTEXT listener (a session's
connections are logged in already); each answer is recorded with `Session.observe`. SCRAM
users are named after the case, so no case sees another's."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from tests.conformance.cases.admin_support import plain
from tests.conformance.harness import USERS, Session
from tests.conformance.registry import case, cases
from tests.support.rawclient import ConnectionClosed, RawClient

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
DESCRIBE_SCRAM = 50
ALTER_SCRAM = 51
GET_TELEMETRY_SUBSCRIPTIONS = 71
PUSH_TELEMETRY = 72
LIST_CLIENT_METRICS_RESOURCES = 74
SCRAM_SHA_256, SCRAM_SHA_512 = 1, 2
ZERO_UUID = uuid.UUID(int=0)


async def sasl_exchange(s: Session, steps: list[tuple[int, int, dict[str, Any]]],
                        label: str) -> None:
    """Send `steps` on a fresh SASL_PLAINTEXT connection; record each answer (or that the
    broker closed the connection, after which nothing more is sent)."""
    raw = await RawClient.connect(s.target.sasl_port, client_id="conformance")
    try:
        for index, (api_key, version, body) in enumerate(steps):
            try:
                answer = await raw.request(api_key, version, body, timeout=15.0)
            except ConnectionClosed:
                s.observe(f"{label}[{index}]", {"closed": True})
                return
            s.observe(f"{label}[{index}]", plain(answer))
    finally:
        await raw.close()


@cases("security/sasl-handshake", [0, 1], api=SASL_HANDSHAKE)
async def sasl_handshake(s: Session, version: int) -> None:
    """PLAIN is enabled: NONE and the list of enabled mechanisms."""
    await sasl_exchange(s, [(SASL_HANDSHAKE, version, {"mechanism": "PLAIN"})], "handshake")


@cases("security/sasl-handshake-unsupported", ["SCRAM-SHA-256", "GSSAPI", "plain", ""],
       api=SASL_HANDSHAKE)
async def sasl_handshake_unsupported(s: Session, mechanism: str) -> None:
    """A mechanism that is not enabled: UNSUPPORTED_SASL_MECHANISM with the enabled list."""
    await sasl_exchange(s, [(SASL_HANDSHAKE, 1, {"mechanism": mechanism})], "handshake")


@case("security/sasl-handshake-v0-unsupported", api=SASL_HANDSHAKE)
async def sasl_handshake_v0_unsupported(s: Session) -> None:
    """The same at v0 (before KIP-152), then the connection is closed."""
    await sasl_exchange(s, [(SASL_HANDSHAKE, 0, {"mechanism": "OAUTHBEARER"}),
                            (SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})], "handshake")


@cases("security/sasl-authenticate", [0, 1, 2], api=SASL_AUTHENTICATE)
async def sasl_authenticate(s: Session, version: int) -> None:
    """A PLAIN login: NONE, no server bytes; v1+ the session lifetime (0: none)."""
    token = f"\0alice\0{USERS['alice']}".encode()
    await sasl_exchange(s, [(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}),
                            (SASL_AUTHENTICATE, version, {"auth_bytes": token})], "login")


@cases("security/sasl-bad-password", [1, 2], api=SASL_AUTHENTICATE)
async def sasl_bad_password(s: Session, version: int) -> None:
    """A wrong password: SASL_AUTHENTICATION_FAILED (with a message); the broker then closes
    the connection (after its delay)."""
    token = b"\0alice\0wrong-password"
    await sasl_exchange(s, [(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}),
                            (SASL_AUTHENTICATE, version, {"auth_bytes": token})], "login")


@case("security/sasl-unknown-user", api=SASL_AUTHENTICATE)
async def sasl_unknown_user(s: Session) -> None:
    token = f"\0{s.name()}\0secret".encode()
    await sasl_exchange(s, [(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}),
                            (SASL_AUTHENTICATE, 2, {"auth_bytes": token})], "login")


@case("security/sasl-authenticate-without-handshake", api=SASL_AUTHENTICATE)
async def sasl_authenticate_without_handshake(s: Session) -> None:
    """SaslAuthenticate before any handshake: refused (the connection closes)."""
    token = f"\0alice\0{USERS['alice']}".encode()
    await sasl_exchange(s, [(SASL_AUTHENTICATE, 2, {"auth_bytes": token})], "login")


@case("security/sasl-handshake-twice", api=SASL_HANDSHAKE)
async def sasl_handshake_twice(s: Session) -> None:
    """A second handshake after a login: ILLEGAL_SASL_STATE or a closed connection."""
    token = f"\0alice\0{USERS['alice']}".encode()
    await sasl_exchange(s, [(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}),
                            (SASL_AUTHENTICATE, 2, {"auth_bytes": token}),
                            (SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})], "login")


@case("security/sasl-handshake-on-plaintext", api=SASL_HANDSHAKE)
async def sasl_handshake_on_plaintext(s: Session) -> None:
    """SaslHandshake on the PLAINTEXT listener, where there is nothing to authenticate."""
    await s.call(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})


# -- SCRAM credentials -----------------------------------------------------------------------

def upsertion(name: str, mechanism: int = SCRAM_SHA_256, iterations: int = 4096,
              password: str = "secret") -> dict[str, Any]:
    salt = hashlib.sha256(name.encode()).digest()[:16]
    algorithm = "sha256" if mechanism == SCRAM_SHA_256 else "sha512"
    salted = hashlib.pbkdf2_hmac(algorithm, password.encode(), salt, max(iterations, 1))
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt,
            "salted_password": salted}


def alter_body(upsertions: list[dict[str, Any]],
               deletions: list[tuple[str, int]] | None = None) -> dict[str, Any]:
    return {"deletions": [{"name": n, "mechanism": m} for n, m in deletions or []],
            "upsertions": upsertions}


async def describe_users(s: Session, names: list[str] | None, *, label: str | None = None,
                         user: str | None = None) -> None:
    """DescribeUserScramCredentials, recorded with each user's credentials by mechanism:
    Kafka's image keeps them in a HashMap keyed by an enum (identity hash codes), so its
    order changes from one JVM to the next."""
    answer = await s.call(DESCRIBE_SCRAM, 0, {
        "users": None if names is None else [{"name": n} for n in names]}, record=False,
        user=user)
    if answer is None:
        s.observe(label or "50v0", {"closed": True})
        return
    result = plain(answer)
    for entry in result["results"]:
        entry["credential_infos"].sort(key=lambda c: c["mechanism"])
    s.observe(label or "50v0", result)


async def until_described(s: Session, name: str, count: int) -> None:
    """Wait (bounded) until `name` has `count` credentials: the broker answers from its
    metadata image, a moment after the controller wrote them."""
    async def described() -> bool:
        answer = await s.call(DESCRIBE_SCRAM, 0, {"users": [{"name": name}]}, record=False)
        return answer is not None and len(answer.results[0].credential_infos) == count

    await s.until(described, what=f"{count} credentials of {name}")


@case("security/scram-upsert-describe-delete", api=ALTER_SCRAM)
async def scram_upsert_describe_delete(s: Session) -> None:
    user = s.name()
    await s.call(ALTER_SCRAM, 0, alter_body([upsertion(user)]))
    await until_described(s, user, 1)
    await s.call(ALTER_SCRAM, 0, alter_body([upsertion(user, SCRAM_SHA_512, 8192)]),
                 label="second mechanism")
    await until_described(s, user, 2)
    await describe_users(s, [user], label="described")
    await s.call(ALTER_SCRAM, 0, alter_body([], [(user, SCRAM_SHA_256)]), label="delete one")
    await until_described(s, user, 1)
    await describe_users(s, [user], label="one left")


@case("security/scram-describe-unknown", api=DESCRIBE_SCRAM)
async def scram_describe_unknown(s: Session) -> None:
    """A user without credentials: RESOURCE_NOT_FOUND; a name twice: DUPLICATE_RESOURCE."""
    await describe_users(s, [s.name("nobody")])
    await describe_users(s, [s.name("twice"), s.name("twice")], label="twice")


@case("security/scram-describe-all", api=DESCRIBE_SCRAM)
async def scram_describe_all(s: Session) -> None:
    """All users (null or empty list): this case's user among them."""
    user = s.name()
    await s.call(ALTER_SCRAM, 0, alter_body([upsertion(user)]), record=False)
    await until_described(s, user, 1)
    for label, names in (("null", None), ("empty", [])):
        answer = await s.call(DESCRIBE_SCRAM, 0, {"users": names}, record=False)
        assert answer is not None
        mine = [plain(r) for r in answer.results if r.user == user]
        for entry in mine:
            entry["credential_infos"].sort(key=lambda c: c["mechanism"])
        s.observe(label, {"error_code": answer.error_code, "mine": mine})


@cases("security/scram-alter-invalid", ["mechanism", "iterations-low", "iterations-high",
                                        "empty-name", "duplicate", "upsert-twice",
                                        "delete-missing", "delete-unknown-mechanism",
                                        "empty-password"],
       api=ALTER_SCRAM)
async def scram_alter_invalid(s: Session, kind: str) -> None:
    user = s.name()
    bodies: dict[str, dict[str, Any]] = {
        "mechanism": alter_body([upsertion(user, mechanism=0)]),
        "iterations-low": alter_body([upsertion(user, iterations=100)]),
        "iterations-high": alter_body([upsertion(user, iterations=20000)]),
        "empty-name": alter_body([upsertion("")]),
        "duplicate": alter_body([upsertion(user)], [(user, SCRAM_SHA_256)]),
        "upsert-twice": alter_body([upsertion(user), upsertion(user, SCRAM_SHA_512)]),
        "delete-missing": alter_body([], [(user, SCRAM_SHA_256)]),
        "delete-unknown-mechanism": alter_body([], [(user, 0)]),
        "empty-password": alter_body([dict(upsertion(user), salted_password=b"")]),
    }
    await s.call(ALTER_SCRAM, 0, bodies[kind])


@case("security/scram-denied", api=ALTER_SCRAM)
async def scram_denied(s: Session) -> None:
    """alice may neither alter nor describe other users' credentials."""
    user = s.name()
    await s.call(ALTER_SCRAM, 0, alter_body([upsertion(user)]), user="alice")
    await describe_users(s, [user], label="describe", user="alice")


# -- client telemetry ------------------------------------------------------------------------

@case("security/telemetry-subscriptions", api=GET_TELEMETRY_SUBSCRIPTIONS)
async def telemetry_subscriptions(s: Session) -> None:
    """No client metrics subscription configured: the broker assigns an instance id and
    answers an empty subscription."""
    answer = await s.call(GET_TELEMETRY_SUBSCRIPTIONS, 0,
                          {"client_instance_id": ZERO_UUID}, record=False)
    assert answer is not None
    result = plain(answer)
    # the subscription id is a hash of the (empty) subscription and the instance id: whether
    # there is one
    result["subscription_id"] = "set" if result["subscription_id"] else 0
    s.observe("subscriptions", result)


@case("security/push-telemetry-unknown", api=PUSH_TELEMETRY)
async def push_telemetry_unknown(s: Session) -> None:
    """A push with an instance id the broker never handed out."""
    await s.call(PUSH_TELEMETRY, 0, {"client_instance_id": uuid.uuid4(), "subscription_id": 1,
                                     "terminating": False, "compression_type": 0,
                                     "metrics": b""})


@case("security/list-client-metrics-resources", api=LIST_CLIENT_METRICS_RESOURCES)
async def list_client_metrics_resources(s: Session) -> None:
    """No client metrics subscription: none listed; alice lacks DESCRIBE_CONFIGS on the
    cluster: CLUSTER_AUTHORIZATION_FAILED."""
    await s.call(LIST_CLIENT_METRICS_RESOURCES, 0, {})
    await s.call(LIST_CLIENT_METRICS_RESOURCES, 0, {}, user="alice", label="as alice")
