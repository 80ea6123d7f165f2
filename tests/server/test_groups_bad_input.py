"""Bad input on the wire: what Kafka does with group requests that carry junk.

Kafka's classic group coordinator treats protocol metadata and assignments as opaque bytes:
garbage subscription metadata is stored and handed to the leader as it came, and garbage
assignments from the leader are stored and relayed to the members as they came (both the
ZooKeeper-era GroupCoordinator and the KIP-848 GroupMetadataManager only map member ids to
byte arrays). Only the protocol *type and names* are checked: an empty protocol type or an
empty protocol list, a type or protocols the current members do not share, and a SyncGroup
v5 naming another type or protocol get INCONSISTENT_GROUP_PROTOCOL. A protocol type Kafka has
never heard of is fine for a group of its own (Connect uses "connect", Streams "consumer").

Group metadata is bounded by the request frame limit (socket.request.max.bytes, 100 MiB): a
5 MB subscription is handled and the broker stays healthy; a frame announcing more than the
limit closes that connection only.

Members that vanish mid-rebalance (close the socket without LeaveGroup) are expired on the
injected clock: a member that does not rejoin expires at its session timeout, a leader that
never syncs expires at its session timeout (the followers' waiting SyncGroup hears
REBALANCE_IN_PROGRESS), a member told MEMBER_ID_REQUIRED that never comes back stops holding
the join at its session timeout, and a member whose parked JoinGroup is answered after its
connection closed is expired like any silent member. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
from typing import Any

import pytest
from kafka_protocol_codec import codec_for, data_type
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import ManualClock
from mockbroker.embedded import MockCluster
from tests.support.rawclient import RawClient, connect_broker

JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST, API_VERSIONS, OFFSET_DELETE = (
    11, 12, 13, 14, 15, 16, 18, 47)
OFFSET_COMMIT = 8
SESSION_MS = 10_000
REBALANCE_MS = 20_000
PARKED = 0.2  # seconds to let a request that must wait show that it waits
E = ErrorCode
_ids = itertools.count()


def _subscription(*topics: str) -> bytes:
    body = codec_for(data_type("ConsumerProtocolSubscription"), 0).encode(
        {"topics": list(topics), "user_data": None})
    return (0).to_bytes(2, "big") + body


def _join_body(group: str, member_id: str = "", *, protocol_type: str = "consumer",
               protocols: list[tuple[str, bytes]] | None = None) -> dict[str, Any]:
    if protocols is None:
        protocols = [("range", _subscription("t"))]
    return {"group_id": group, "session_timeout_ms": SESSION_MS,
            "rebalance_timeout_ms": REBALANCE_MS, "member_id": member_id,
            "group_instance_id": None, "protocol_type": protocol_type,
            "protocols": [{"name": n, "metadata": m} for n, m in protocols], "reason": None}


async def _coordinator(mc: MockCluster, group: str) -> RawClient:
    owner = mc.cluster.coordinator_for(0, group)
    assert owner is not None
    return await connect_broker(mc, owner, client_id="bad-input")


async def _join(client: RawClient, group: str, *, timeout: float = 5.0, **kwargs: Any) -> Any:
    """JoinGroup v9 through MEMBER_ID_REQUIRED; returns the second answer (may be an error)."""
    first = await client.request(JOIN, 9, _join_body(group, **kwargs))
    if first.error_code != E.MEMBER_ID_REQUIRED:
        return first
    return await client.request(JOIN, 9, _join_body(group, first.member_id, **kwargs),
                                timeout=timeout)


async def _sync(client: RawClient, group: str, generation: int, member: str,
                assignments: list[tuple[str, bytes]] | None = None, *,
                protocol_type: str | None = None, protocol_name: str | None = None,
                version: int = 5, timeout: float = 5.0) -> Any:
    return await client.request(SYNC, version, {
        "group_id": group, "generation_id": generation, "member_id": member,
        "group_instance_id": None, "protocol_type": protocol_type,
        "protocol_name": protocol_name,
        "assignments": [{"member_id": m, "assignment": a} for m, a in assignments or []]},
        timeout=timeout)


async def _beat(client: RawClient, group: str, generation: int, member: str) -> int:
    body = await client.request(HEARTBEAT, 4, {"group_id": group, "generation_id": generation,
                                               "member_id": member, "group_instance_id": None})
    return int(body.error_code)


async def _describe(client: RawClient, group: str) -> Any:
    body = await client.request(DESCRIBE, 5, {"groups": [group],
                                              "include_authorized_operations": False})
    return body.groups[0]


async def _healthy_group(mc: MockCluster, group: str) -> None:
    """A whole, well-formed group lifecycle: the coordinator still works."""
    if "t" not in mc.cluster.image.topics:
        mc.cluster.create_topic("t", 2)
    async with await _coordinator(mc, group) as client:
        join = await _join(client, group)
        assert join.error_code == E.NONE and join.leader == join.member_id
        sync = await _sync(client, group, join.generation_id, join.member_id,
                           [(join.member_id, b"ok")])
        assert (sync.error_code, sync.assignment) == (E.NONE, b"ok")
        assert await _beat(client, group, join.generation_id, join.member_id) == E.NONE
        commit = await client.request(OFFSET_COMMIT, 8, {
            "group_id": group, "generation_id_or_member_epoch": join.generation_id,
            "member_id": join.member_id, "group_instance_id": None, "topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                              "committed_leader_epoch": -1,
                                              "committed_metadata": None}]}]})
        assert commit.topics[0].partitions[0].error_code == E.NONE
        left = await client.request(LEAVE, 5, {"group_id": group, "members": [
            {"member_id": join.member_id, "group_instance_id": None, "reason": None}]})
        assert left.error_code == E.NONE and left.members[0].error_code == E.NONE


async def _api_versions_ok(mc: MockCluster, broker: int) -> None:
    async with await connect_broker(mc, broker) as client:
        body = await client.request(API_VERSIONS, 3, {"client_software_name": "t",
                                                      "client_software_version": "1"})
        assert body.error_code == E.NONE


def _no_handler_failures(caplog: pytest.LogCaptureFixture) -> None:
    failures = [r.getMessage() for r in caplog.records
                if r.name.startswith("mockbroker") and r.levelno >= logging.ERROR]
    assert failures == []


# -- malformed assignments and metadata -----------------------------------------------------

GARBAGE_ASSIGNMENTS = [b"\xff" * 7 + b"\x00\x01garbage", b"\x00\x03" + b"\xff" * 40, b""]


async def test_garbage_assignments_are_relayed_verbatim_at_every_sync_version(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mockbroker")
    async with MockCluster(brokers=3) as mc:
        mc.cluster.create_topic("t", 2)
        for version in range(6):
            for junk in GARBAGE_ASSIGNMENTS:
                group = f"junk-assign-{version}-{next(_ids)}"
                async with await _coordinator(mc, group) as client:
                    join = await _join(client, group)
                    assert join.error_code == E.NONE
                    sync = await _sync(client, group, join.generation_id, join.member_id,
                                       [(join.member_id, junk)], version=version)
                    assert (sync.error_code, bytes(sync.assignment)) == (E.NONE, junk)
                    entry = await _describe(client, group)
                    assert entry.group_state == "Stable"
                    assert bytes(entry.members[0].member_assignment) == junk
                    # a Stable member's SyncGroup resend gets the stored bytes again
                    again = await _sync(client, group, join.generation_id, join.member_id)
                    assert bytes(again.assignment) == junk
        await _healthy_group(mc, f"after-junk-{next(_ids)}")
    _no_handler_failures(caplog)


async def test_leader_garbage_reaches_each_follower_as_sent(
        caplog: pytest.LogCaptureFixture) -> None:
    """Two members: the leader's assignment list holds junk, an unknown member id and a
    duplicate entry; Kafka maps member id -> bytes (the last duplicate wins, unknown ids are
    dropped) without decoding anything."""
    caplog.set_level(logging.WARNING, logger="mockbroker")
    async with MockCluster(brokers=3) as mc:
        group = f"junk-pair-{next(_ids)}"
        a_conn, b_conn = await _coordinator(mc, group), await _coordinator(mc, group)
        try:
            a = await _join(a_conn, group)
            await _sync(a_conn, group, a.generation_id, a.member_id, [(a.member_id, b"x")])
            b_first = await b_conn.request(JOIN, 9, _join_body(group))
            b_join = asyncio.create_task(b_conn.request(
                JOIN, 9, _join_body(group, b_first.member_id), timeout=10))
            await asyncio.sleep(PARKED)
            assert not b_join.done()
            a2 = await a_conn.request(JOIN, 9, _join_body(group, a.member_id))
            b2 = await b_join
            assert a2.generation_id == b2.generation_id == a.generation_id + 1
            assert a2.leader == a.member_id and len(a2.members) == 2
            b_sync = asyncio.create_task(_sync(b_conn, group, b2.generation_id, b2.member_id,
                                               timeout=10))
            await asyncio.sleep(PARKED)
            assert not b_sync.done()
            junk_a, junk_b = b"\x00\x01\xff\xff\xff\xffnot-an-assignment", bytes(range(256))
            leader_sync = await _sync(a_conn, group, a2.generation_id, a.member_id, [
                (b2.member_id, b"overwritten"), (a.member_id, junk_a), ("ghost", b"??"),
                (b2.member_id, junk_b)])
            assert (leader_sync.error_code, bytes(leader_sync.assignment)) == (E.NONE, junk_a)
            follower = await b_sync
            assert (follower.error_code, bytes(follower.assignment)) == (E.NONE, junk_b)
            entry = await _describe(a_conn, group)
            assert {m.member_id: bytes(m.member_assignment) for m in entry.members} == {
                a.member_id: junk_a, b2.member_id: junk_b}
            assert await _beat(a_conn, group, a2.generation_id, a.member_id) == E.NONE
            assert await _beat(b_conn, group, b2.generation_id, b2.member_id) == E.NONE
        finally:
            await a_conn.close()
            await b_conn.close()
        await _healthy_group(mc, f"after-pair-{next(_ids)}")
    _no_handler_failures(caplog)


GARBAGE_METADATA = [
    b"",  # nothing at all
    b"\x00",  # half a version
    b"\xff\xff",  # a negative version
    b"\x00\x00\x7f\xff\xff\xff",  # v0, a topic array of 2^31-1 entries with no bytes
    b"\x00\x03" + b"\xff" * 64,  # a future version full of junk
    bytes(range(256)) * 4,
]


async def test_garbage_protocol_metadata_is_stored_and_returned_verbatim(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mockbroker")
    async with MockCluster(brokers=3) as mc:
        mc.cluster.create_topic("t", 2)
        mc.cluster.create_topic("unrelated", 1)
        for junk in GARBAGE_METADATA:
            group = f"junk-meta-{next(_ids)}"
            async with await _coordinator(mc, group) as client:
                join = await _join(client, group, protocols=[("range", junk)])
                assert join.error_code == E.NONE and join.protocol_name == "range"
                assert [bytes(m.metadata) for m in join.members] == [junk]
                sync = await _sync(client, group, join.generation_id, join.member_id,
                                   [(join.member_id, b"a")])
                assert sync.error_code == E.NONE
                entry = await _describe(client, group)
                assert entry.group_state == "Stable"
                assert bytes(entry.members[0].member_metadata) == junk
                # Kafka cannot tell what an undecodable subscription covers, so it treats
                # every topic as subscribed (GroupMetadata.isSubscribedToTopic)
                deleted = await client.request(OFFSET_DELETE, 0, {"group_id": group, "topics": [
                    {"name": "t", "partitions": [{"partition_index": 0}]},
                    {"name": "unrelated", "partitions": [{"partition_index": 0}]}]})
                assert deleted.error_code == E.NONE
                assert [t.partitions[0].error_code for t in deleted.topics] == [
                    E.GROUP_SUBSCRIBED_TO_TOPIC, E.GROUP_SUBSCRIBED_TO_TOPIC]
                assert await _beat(client, group, join.generation_id, join.member_id) == E.NONE
        await _healthy_group(mc, f"after-meta-{next(_ids)}")
    _no_handler_failures(caplog)


# -- protocol types -------------------------------------------------------------------------

async def test_unknown_protocol_type_and_inconsistent_protocols(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mockbroker")
    # JoinGroup v0 below: the default (Kafka 4.0's advertisement) starts at v2
    async with MockCluster(brokers=3, kafka_version="all") as mc:
        group = f"odd-type-{next(_ids)}"
        async with await _coordinator(mc, group) as client:
            # a type Kafka never heard of is fine for a group of its own
            own = await _join(client, group, protocol_type="no-such-type",
                              protocols=[("whatever", b"\x01\x02")])
            assert own.error_code == E.NONE and own.protocol_type == "no-such-type"
            assert own.protocol_name == "whatever"
            member, generation = own.member_id, own.generation_id
            sync = await _sync(client, group, generation, member, [(member, b"\x09")],
                               protocol_type="no-such-type", protocol_name="whatever")
            assert (sync.error_code, sync.protocol_type, sync.protocol_name) == (
                E.NONE, "no-such-type", "whatever")
            entry = await _describe(client, group)
            assert (entry.protocol_type, entry.protocol_data) == ("no-such-type", "whatever")
            listed = await client.request(LIST, 5, {"states_filter": [], "types_filter": []})
            assert {g.group_id: g.protocol_type for g in listed.groups}[group] == "no-such-type"

            # another type, or no protocol in common: INCONSISTENT_GROUP_PROTOCOL, before any
            # member id is handed out
            for kwargs in ({"protocol_type": "consumer"},
                           {"protocol_type": "no-such-type", "protocols": [("other", b"")]}):
                refused = await client.request(JOIN, 9, _join_body(group, **kwargs))
                assert refused.error_code == E.INCONSISTENT_GROUP_PROTOCOL
                assert refused.member_id == ""
            # SyncGroup v5 naming another type or protocol
            for pt, pn in (("consumer", "whatever"), ("no-such-type", "range")):
                wrong = await _sync(client, group, generation, member, protocol_type=pt,
                                    protocol_name=pn)
                assert wrong.error_code == E.INCONSISTENT_GROUP_PROTOCOL
            # OffsetDelete: a non-empty group that is not a consumer group keeps its offsets
            deleted = await client.request(OFFSET_DELETE, 0, {"group_id": group, "topics": [
                {"name": "t", "partitions": [{"partition_index": 0}]}]})
            assert deleted.error_code == E.NON_EMPTY_GROUP
            assert await _beat(client, group, generation, member) == E.NONE  # unharmed

            # once Empty, the group takes any type again
            left = await client.request(LEAVE, 5, {"group_id": group, "members": [
                {"member_id": member, "group_instance_id": None, "reason": None}]})
            assert left.members[0].error_code == E.NONE
            consumer = await _join(client, group)
            assert consumer.error_code == E.NONE and consumer.protocol_type == "consumer"

        # an empty type or an empty protocol list is refused and leaves no group behind
        for kwargs in ({"protocol_type": ""}, {"protocols": []}):
            fresh = f"refused-{next(_ids)}"
            async with await _coordinator(mc, fresh) as client:
                for version in (0, 5, 9):
                    body = _join_body(fresh, **kwargs)
                    refused = await client.request(JOIN, version, body)
                    assert refused.error_code == E.INCONSISTENT_GROUP_PROTOCOL, version
                entry = await _describe(client, fresh)
                assert entry.group_state == "Dead" and list(entry.members) == []
        await _healthy_group(mc, f"after-types-{next(_ids)}")
    _no_handler_failures(caplog)


# -- oversized metadata ---------------------------------------------------------------------

BIG = bytes(range(256)) * (5 * 1024 * 1024 // 256)  # 5 MiB


async def test_5mb_protocol_metadata_is_handled_and_the_broker_stays_healthy(
        caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's only bound on a JoinGroup is the frame limit (100 MiB), so 5 MB metadata is
    accepted and handed to the leader. (Real Kafka then fails the leader's SyncGroup with
    UNKNOWN_SERVER_ERROR, because the group's record exceeds __consumer_offsets'
    message.max.bytes of 1 MB; the mock keeps no such record, so its SyncGroup succeeds.
    Both are accepted here; what must hold is that nothing crashes.)"""
    caplog.set_level(logging.WARNING, logger="mockbroker")
    async with MockCluster(brokers=3) as mc:
        group = f"big-{next(_ids)}"
        owner = mc.cluster.coordinator_for(0, group)
        assert owner is not None
        async with await _coordinator(mc, group) as client:
            join = await _join(client, group, protocols=[("range", BIG)], timeout=20)
            assert join.error_code == E.NONE and join.leader == join.member_id
            assert len(join.members) == 1 and bytes(join.members[0].metadata) == BIG
            sync = await _sync(client, group, join.generation_id, join.member_id,
                               [(join.member_id, b"a")], timeout=20)
            assert sync.error_code in (E.NONE, E.UNKNOWN_SERVER_ERROR)
            if sync.error_code == E.NONE:
                assert bytes(sync.assignment) == b"a"
                assert await _beat(client, group, join.generation_id,
                                   join.member_id) == E.NONE
                entry = await _describe(client, group)
                assert bytes(entry.members[0].member_metadata) == BIG

            # the frame limit: a JoinGroup announcing more than 100 MiB closes that
            # connection only (the size prefix alone decides; nothing more is read)
            async with await _coordinator(mc, group) as huge:
                header = struct.pack(">hhih", JOIN, 9, 1, 3) + b"big"
                await huge.send_raw(struct.pack(">i", 100 * 1024 * 1024 + 1) + header)
                assert await huge.is_closed()
            assert any("bad frame" in r.getMessage() for r in caplog.records)

            # the broker is healthy: other groups, other connections, this member
            await _healthy_group(mc, f"beside-big-{next(_ids)}")
            await _api_versions_ok(mc, owner)
            left = await client.request(LEAVE, 5, {"group_id": group, "members": [
                {"member_id": join.member_id, "group_instance_id": None, "reason": None}]})
            assert left.members[0].error_code == E.NONE
            assert (await _describe(client, group)).group_state == "Empty"
    failures = [r.getMessage() for r in caplog.records
                if r.name.startswith("mockbroker") and r.levelno >= logging.ERROR]
    assert failures == []


# -- members that vanish mid-rebalance, on the injected clock --------------------------------

async def _advance(mc: MockCluster, clock: ManualClock, ms: int) -> None:
    clock.advance(ms)
    mc.cluster.tick()
    await asyncio.sleep(0.05)  # let answered requests reach their connections


async def _stable_leader(mc: MockCluster, group: str) -> tuple[RawClient, Any]:
    conn = await _coordinator(mc, group)
    join = await _join(conn, group)
    assert join.error_code == E.NONE
    sync = await _sync(conn, group, join.generation_id, join.member_id,
                       [(join.member_id, b"A")])
    assert sync.error_code == E.NONE
    return conn, join


async def test_member_that_vanishes_instead_of_rejoining_expires_at_its_session_timeout():
    clock = ManualClock()
    async with MockCluster(brokers=3, clock=clock) as mc:
        group = f"vanish-join-{next(_ids)}"
        a_conn, a = await _stable_leader(mc, group)
        b_conn = await _coordinator(mc, group)
        try:
            b_first = await b_conn.request(JOIN, 9, _join_body(group))
            b_join = asyncio.create_task(b_conn.request(
                JOIN, 9, _join_body(group, b_first.member_id), timeout=10))
            await asyncio.sleep(PARKED)
            assert not b_join.done()  # waits for a to rejoin
            await a_conn.close()  # a vanishes: no LeaveGroup, no JoinGroup
            await _advance(mc, clock, SESSION_MS - 1)
            assert not b_join.done()
            await _advance(mc, clock, 2)  # a's session has run out
            b2 = await asyncio.wait_for(b_join, 5)
            assert b2.error_code == E.NONE and b2.generation_id == a.generation_id + 1
            assert b2.leader == b2.member_id
            assert [m.member_id for m in b2.members] == [b2.member_id]
            sync = await _sync(b_conn, group, b2.generation_id, b2.member_id,
                               [(b2.member_id, b"B")])
            assert (sync.error_code, bytes(sync.assignment)) == (E.NONE, b"B")
            async with await _coordinator(mc, group) as ghost:
                assert await _beat(ghost, group, a.generation_id, a.member_id) \
                    == E.UNKNOWN_MEMBER_ID
        finally:
            await a_conn.close()
            await b_conn.close()


async def test_leader_that_vanishes_before_syncing_expires_and_the_follower_rebalances():
    clock = ManualClock()
    async with MockCluster(brokers=3, clock=clock) as mc:
        group = f"vanish-sync-{next(_ids)}"
        a_conn, a = await _stable_leader(mc, group)
        b_conn = await _coordinator(mc, group)
        try:
            b_first = await b_conn.request(JOIN, 9, _join_body(group))
            b_join = asyncio.create_task(b_conn.request(
                JOIN, 9, _join_body(group, b_first.member_id), timeout=10))
            await asyncio.sleep(PARKED)
            a2 = await a_conn.request(JOIN, 9, _join_body(group, a.member_id))
            b2 = await b_join
            assert a2.leader == a.member_id and b2.generation_id == a2.generation_id
            b_sync = asyncio.create_task(_sync(b_conn, group, b2.generation_id, b2.member_id,
                                               timeout=10))
            await asyncio.sleep(PARKED)
            assert not b_sync.done()  # waits for the leader's assignment
            await a_conn.close()  # the leader vanishes mid-rebalance
            await _advance(mc, clock, SESSION_MS - 1)
            assert not b_sync.done()
            await _advance(mc, clock, 2)
            assert (await asyncio.wait_for(b_sync, 5)).error_code == E.REBALANCE_IN_PROGRESS
            b3 = await b_conn.request(JOIN, 9, _join_body(group, b2.member_id))
            assert b3.error_code == E.NONE and b3.generation_id == b2.generation_id + 1
            assert b3.leader == b2.member_id and len(b3.members) == 1
            sync = await _sync(b_conn, group, b3.generation_id, b2.member_id,
                               [(b2.member_id, b"B")])
            assert (sync.error_code, bytes(sync.assignment)) == (E.NONE, b"B")
        finally:
            await a_conn.close()
            await b_conn.close()


async def test_member_told_member_id_required_that_never_returns_stops_holding_the_join():
    clock = ManualClock()
    async with MockCluster(brokers=3, clock=clock) as mc:
        group = f"vanish-pending-{next(_ids)}"
        a_conn, a = await _stable_leader(mc, group)
        try:
            async with await _coordinator(mc, group) as b_conn:
                first = await b_conn.request(JOIN, 9, _join_body(group))
                assert first.error_code == E.MEMBER_ID_REQUIRED  # ... and b is gone
            # the leader rejoins (a rebalance); the join waits for the pending member
            a_join = asyncio.create_task(a_conn.request(
                JOIN, 9, _join_body(group, a.member_id), timeout=10))
            await asyncio.sleep(PARKED)
            assert not a_join.done()
            await _advance(mc, clock, SESSION_MS - 1)
            assert not a_join.done()
            await _advance(mc, clock, 2)
            a2 = await asyncio.wait_for(a_join, 5)
            assert a2.error_code == E.NONE and a2.generation_id == a.generation_id + 1
            assert [m.member_id for m in a2.members] == [a.member_id]
        finally:
            await a_conn.close()


async def test_member_whose_connection_closed_while_its_join_was_parked_is_expired(
        caplog: pytest.LogCaptureFixture) -> None:
    """b's JoinGroup is answered after b's socket closed: the broker drops the answer,
    keeps serving, and b (now a member that never syncs nor heartbeats) expires."""
    caplog.set_level(logging.WARNING, logger="mockbroker")
    clock = ManualClock()
    async with MockCluster(brokers=3, clock=clock) as mc:
        group = f"vanish-parked-{next(_ids)}"
        a_conn, a = await _stable_leader(mc, group)
        b_conn = await _coordinator(mc, group)
        try:
            b_first = await b_conn.request(JOIN, 9, _join_body(group))
            b_member = b_first.member_id
            await b_conn.send(JOIN, 9, _join_body(group, b_member))
            await asyncio.sleep(PARKED)
            await b_conn.close()  # gone while its JoinGroup is parked
            a2 = await a_conn.request(JOIN, 9, _join_body(group, a.member_id))
            assert a2.error_code == E.NONE and a2.leader == a.member_id
            assert {m.member_id for m in a2.members} == {a.member_id, b_member}
            sync = await _sync(a_conn, group, a2.generation_id, a.member_id,
                               [(a.member_id, b"A"), (b_member, b"B")])
            assert sync.error_code == E.NONE
            await asyncio.sleep(PARKED)  # the answer to b went nowhere
            assert await _beat(a_conn, group, a2.generation_id, a.member_id) == E.NONE
            await _advance(mc, clock, SESSION_MS // 2)
            assert await _beat(a_conn, group, a2.generation_id, a.member_id) == E.NONE
            await _advance(mc, clock, SESSION_MS // 2 + 1)  # b's session has run out
            assert await _beat(a_conn, group, a2.generation_id, a.member_id) \
                == E.REBALANCE_IN_PROGRESS
            a3 = await a_conn.request(JOIN, 9, _join_body(group, a.member_id))
            assert a3.error_code == E.NONE and a3.generation_id == a2.generation_id + 1
            assert [m.member_id for m in a3.members] == [a.member_id]
            await _api_versions_ok(mc, mc.cluster.coordinator_for(0, group) or 0)
        finally:
            await a_conn.close()
            await b_conn.close()
    _no_handler_failures(caplog)
