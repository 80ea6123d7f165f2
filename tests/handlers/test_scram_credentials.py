"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51): the wire answers,
Kafka's per-user errors, and that an upserted credential logs in over SASL while the
broker never holds the password.

Also the control API's user verbs (add-user, delete-user, users) on the same store, `reset`
bringing back the configured users, and confluent-kafka's AdminClient calls.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.control.api import ControlError
from mockbroker.embedded import MockCluster, MockClusterThread
from tests.support.rawclient import RawClient
from tests.support.sasl import ScramClient

DESCRIBE, ALTER, SASL_HANDSHAKE, SASL_AUTHENTICATE = 50, 51, 17, 36
SHA256, SHA512 = 1, 2


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=1, listeners="PLAINTEXT://127.0.0.1:0,"
                                                "SASL_PLAINTEXT://127.0.0.1:0",
                           sasl_users={"alice": "secret"}) as cluster:
        yield cluster


@pytest.fixture
async def admin(mc: MockCluster) -> AsyncIterator[RawClient]:
    async with await RawClient.connect(mc.cluster.brokers[0].port) as raw:
        yield raw


async def _describe(admin: RawClient, users: list[str] | None) -> list[tuple[object, ...]]:
    body = {"users": None if users is None else [{"name": u} for u in users]}
    answer = await admin.request(DESCRIBE, 0, body)
    assert answer.error_code == E.NONE
    return [(r.user, r.error_code, r.error_message,
             [(c.mechanism, c.iterations) for c in r.credential_infos])
            for r in answer.results]


def _upsertion(name: str, password: str, mechanism: int = SHA512,
               iterations: int = 8192) -> dict[str, object]:
    salt = os.urandom(16)
    hash_name = "sha256" if mechanism == SHA256 else "sha512"
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt,
            "salted_password": hashlib.pbkdf2_hmac(hash_name, password.encode(), salt,
                                                   iterations)}


async def _scram_login(mc: MockCluster, mechanism: str, user: str, password: str,
                       broker: int = 0) -> int:
    port = mc.server.extra_bound_ports[0][broker]
    async with await RawClient.connect(port) as raw:
        await raw.request(SASL_HANDSHAKE, 1, {"mechanism": mechanism})
        scram = ScramClient(mechanism, user, password)
        first = await raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first()})
        if first.error_code != E.NONE:
            return int(first.error_code)
        final = await raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": scram.final(
            first.auth_bytes)})
        return int(final.error_code)


async def test_describe_all_and_named_users(admin: RawClient) -> None:
    alice = ("alice", E.NONE, "", [(SHA256, 4096), (SHA512, 4096)])  # Errors.NONE's message
    assert await _describe(admin, None) == [alice]
    assert await _describe(admin, []) == [alice]
    assert await _describe(admin, ["alice", "nobody", "twice", "twice"]) == [
        alice,
        ("nobody", E.RESOURCE_NOT_FOUND,
         "Attempt to describe a user credential that does not exist", []),
        ("twice", E.DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials for the same user "
                                        "twice in a single request", [])]


async def test_alter_upserts_a_login_and_deletes_it(mc: MockCluster, admin: RawClient) -> None:
    answer = await admin.request(ALTER, 0, {"deletions": [], "upsertions": [
        _upsertion("dave", "dave-pw")]})
    assert [(r.user, r.error_code, r.error_message) for r in answer.results] == [
        ("dave", E.NONE, None)]
    assert await _describe(admin, ["dave"]) == [("dave", E.NONE, "", [(SHA512, 8192)])]
    assert await _scram_login(mc, "SCRAM-SHA-512", "dave", "dave-pw") == E.NONE
    assert await _scram_login(mc, "SCRAM-SHA-512", "dave", "nope") == \
        E.SASL_AUTHENTICATION_FAILED
    assert await _scram_login(mc, "SCRAM-SHA-256", "dave", "dave-pw") == \
        E.SASL_AUTHENTICATION_FAILED  # no SHA-256 credential
    stored = mc.cluster.credentials.scram["dave"]["SCRAM-SHA-512"]
    assert b"dave-pw" not in repr(stored).encode()  # salted keys only
    answer = await admin.request(ALTER, 0, {"deletions": [{"name": "dave",
                                                           "mechanism": SHA512}],
                                            "upsertions": []})
    assert answer.results[0].error_code == E.NONE
    assert await _describe(admin, None) == [("alice", E.NONE, "",
                                             [(SHA256, 4096), (SHA512, 4096)])]


async def test_alter_refuses_per_user_as_kafka(admin: RawClient) -> None:
    answer = await admin.request(ALTER, 0, {
        "deletions": [{"name": "ghost", "mechanism": SHA256},
                      {"name": "dup", "mechanism": SHA256}],
        "upsertions": [_upsertion("dup", "x"), _upsertion("twice", "x"),
                       _upsertion("twice", "y"), _upsertion("few", "x", iterations=4095),
                       _upsertion("many", "x", iterations=16385),
                       _upsertion("odd", "x", mechanism=3), _upsertion("", "x"),
                       _upsertion("fine", "x", mechanism=SHA256)]})
    # Kafka's ScramControlManager: the successes, then the refused users in the order of
    # its HashMap of them (java.util.HashMap prints these keys in this order); "dup" is
    # refused by its deletion (no such credential) and its upsertion is then not looked at
    missing = "Attempt to delete a user credential that does not exist"
    assert [(r.user, r.error_code, r.error_message) for r in answer.results] == [
        ("fine", E.NONE, None),
        ("", E.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ("twice", E.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the "
                                        "same request"),
        ("ghost", E.RESOURCE_NOT_FOUND, missing),
        ("few", E.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("many", E.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ("dup", E.RESOURCE_NOT_FOUND, missing),
        ("odd", E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")]
    assert [u for u, *_ in await _describe(admin, None)] == ["alice", "fine"]


async def test_control_user_verbs_and_reset(mc: MockCluster) -> None:
    added = await mc.control.add_user("erin", "erin-pw", iterations=5000)
    assert added == {"user": "erin", "replaced": False, "plain": True,
                     "scram": {"SCRAM-SHA-256": 5000, "SCRAM-SHA-512": 5000}}
    assert await _scram_login(mc, "SCRAM-SHA-256", "erin", "erin-pw") == E.NONE
    assert sorted((await mc.control.users())["users"]) == ["alice", "erin"]
    assert await mc.control.delete_user("alice") == {"deleted": "alice"}
    assert await _scram_login(mc, "SCRAM-SHA-256", "alice", "secret") == \
        E.SASL_AUTHENTICATION_FAILED
    with pytest.raises(ControlError, match="no SASL user 'alice'"):
        await mc.control.delete_user("alice")
    with pytest.raises(ControlError, match="iterations must be an integer 4096-16384"):
        await mc.control.add_user("x", "y", iterations=10)
    assert (await mc.control.state())["security"]["authentications"]  # erin's logins
    await mc.control.reset()  # the configured users come back, added ones go
    assert sorted((await mc.control.users())["users"]) == ["alice"]
    assert (await mc.control.state())["security"]["authentications"] == []
    assert (await mc.control.state())["security"]["users"] == {
        "alice": {"plain": True, "scram": {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096}}}


async def test_credentials_are_metadata_records_each_broker_authenticates_by_its_image(
        ) -> None:
    """AlterUserScramCredentials on broker 0 writes UserScramCredentialRecords through the
    controller; broker 1, its metadata paused, describes and authenticates by the
    credentials it has until it catches up."""
    async with MockCluster(brokers=2, listeners="PLAINTEXT://127.0.0.1:0,"
                                                "SASL_PLAINTEXT://127.0.0.1:0",
                           sasl_users={"alice": "secret"}) as mc:
        await mc.control.pause_metadata(1)
        start = mc.cluster.controller.log.end_offset
        async with await RawClient.connect(mc.cluster.brokers[0].port) as first, \
                await RawClient.connect(mc.cluster.brokers[1].port) as second:
            answer = await first.request(ALTER, 0, {"deletions": [], "upsertions": [
                _upsertion("dave", "dave-pw")]})
            assert answer.results[0].error_code == E.NONE
            records = mc.cluster.controller.log.since(start - 1)
            assert [(r.record_type, r.data["name"], r.data["mechanism"], r.data["iterations"])
                    for r in records] == [(11, "dave", SHA512, 8192)]
            assert b"dave-pw" not in records[0].encoded
            assert await _describe(first, ["dave"]) == [("dave", E.NONE, "",
                                                         [(SHA512, 8192)])]
            assert (await _describe(second, ["dave"]))[0][1] == E.RESOURCE_NOT_FOUND
            assert await _scram_login(mc, "SCRAM-SHA-512", "dave", "dave-pw") == E.NONE
            assert await _scram_login(mc, "SCRAM-SHA-512", "dave", "dave-pw", broker=1) \
                == E.SASL_AUTHENTICATION_FAILED
            await mc.control.resume_metadata(1)
            assert await _describe(second, ["dave"]) == [("dave", E.NONE, "",
                                                          [(SHA512, 8192)])]
            assert await _scram_login(mc, "SCRAM-SHA-512", "dave", "dave-pw", broker=1) \
                == E.NONE
            # delete-user goes through the controller too: removal records, every broker
            assert await mc.control.delete_user("dave") == {"deleted": "dave"}
            assert [r.record_type for r in mc.cluster.controller.log.since(start)] == [22]
            assert await _scram_login(mc, "SCRAM-SHA-512", "dave", "dave-pw", broker=1) \
                == E.SASL_AUTHENTICATION_FAILED


def test_confluent_admin_scram_credentials() -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    with MockClusterThread(brokers=1, sasl_users={"alice": "secret"}) as mock:
        admin = AdminClient({"bootstrap.servers": mock.bootstrap_servers})
        upsert = UserScramCredentialUpsertion(
            "frank", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10000), b"frank-pw")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            assert future.result(timeout=30) is None
        described = admin.describe_user_scram_credentials(["frank"])
        infos = described["frank"].result(timeout=30).scram_credential_infos
        assert [(i.mechanism, i.iterations) for i in infos] == [
            (ScramMechanism.SCRAM_SHA_256, 10000)]
        deletion = UserScramCredentialDeletion("frank", ScramMechanism.SCRAM_SHA_256)
        for future in admin.alter_user_scram_credentials([deletion]).values():
            assert future.result(timeout=30) is None
        assert sorted(mock.control.users()["users"]) == ["alice"]


async def test_alter_checks_each_item_in_order_as_kafka(admin: RawClient) -> None:
    """Kafka's ScramControlManager takes the deletions, then the upsertions, one by one: a
    user whose item failed is skipped from then on; a second item for a user whose first
    was accepted is DUPLICATE_RESOURCE and takes the first back (nothing applies)."""
    await admin.request(ALTER, 0, {"deletions": [], "upsertions": [
        _upsertion("kept", "x", mechanism=SHA256), _upsertion("twice", "x", mechanism=SHA256)]})
    answer = await admin.request(ALTER, 0, {
        "deletions": [{"name": "ghost", "mechanism": SHA256},
                      {"name": "ghost", "mechanism": SHA512},
                      {"name": "kept", "mechanism": SHA256}],
        "upsertions": [_upsertion("kept", "y", mechanism=SHA512),
                       _upsertion("new", "x", mechanism=SHA256),
                       _upsertion("new", "x", mechanism=SHA512),
                       _upsertion("twice", "x", iterations=10),
                       _upsertion("twice", "x", mechanism=SHA512)]})
    assert sorted((r.user, r.error_code) for r in answer.results) == [
        ("ghost", E.RESOURCE_NOT_FOUND), ("kept", E.DUPLICATE_RESOURCE),
        ("new", E.DUPLICATE_RESOURCE), ("twice", E.UNACCEPTABLE_CREDENTIAL)]
    assert [(u, infos) for u, _, _, infos in await _describe(admin, None)] == [
        ("alice", [(SHA256, 4096), (SHA512, 4096)]), ("kept", [(SHA256, 8192)]),
        ("twice", [(SHA256, 8192)])]
