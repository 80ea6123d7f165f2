"""The group APIs on the wire, every advertised version, with a raw codec client.

Each version of JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
DescribeGroups, ListGroups, DeleteGroups and FindCoordinator is encoded and decoded through
the real server; a rebalance with two members runs over two connections (the second
JoinGroup waits until the first member rejoins); wrong brokers answer NOT_COORDINATOR.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from kafka_protocol_codec import codec_for, data_type
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.embedded import MockCluster
from tests.support.rawclient import RawClient, connect_broker

_ids = itertools.count()


def _subscription(*topics: str) -> bytes:
    body = codec_for(data_type("ConsumerProtocolSubscription"), 0).encode(
        {"topics": list(topics), "user_data": None})
    return (0).to_bytes(2, "big") + body


def _join_body(group: str, member_id: str = "", metadata: bytes = b"",
               instance: str | None = None) -> dict[str, Any]:
    return {"group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 20_000,
            "member_id": member_id, "group_instance_id": instance,
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": metadata}]}


async def _coordinator(mc: MockCluster, group: str) -> RawClient:
    owner = mc.cluster.coordinator_for(0, group)
    assert owner is not None
    return await connect_broker(mc, owner)


async def _join(client: RawClient, version: int, group: str, metadata: bytes = b"") -> Any:
    resp = await client.request(11, version, _join_body(group, metadata=metadata))
    if version >= 4:
        assert resp.error_code == ErrorCode.MEMBER_ID_REQUIRED and resp.member_id
        resp = await client.request(11, version, _join_body(group, resp.member_id, metadata))
    assert resp.error_code == ErrorCode.NONE
    return resp


async def test_every_version_of_the_group_lifecycle():
    # every version mockbroker handles: the default (Kafka 4.0's) starts JoinGroup at v2
    async with MockCluster(brokers=3, kafka_version="all") as mc:
        mc.cluster.create_topic("t", 2)
        for v in range(10):
            group = f"wire-{v}-{next(_ids)}"
            async with await _coordinator(mc, group) as client:
                join = await _join(client, v, group, metadata=_subscription("t"))
                member, gen = join.member_id, join.generation_id
                assert join.leader == member and gen == 1 and join.protocol_name == "range"
                assert [m.member_id for m in join.members] == [member]
                sync = await client.request(14, min(v, 5), {
                    "group_id": group, "generation_id": gen, "member_id": member,
                    "protocol_type": "consumer", "protocol_name": "range",
                    "assignments": [{"member_id": member, "assignment": b"A"}]})
                assert (sync.error_code, sync.assignment) == (ErrorCode.NONE, b"A")
                beat = await client.request(12, min(v, 4), {
                    "group_id": group, "generation_id": gen, "member_id": member})
                assert beat.error_code == ErrorCode.NONE
                described = await client.request(15, min(v, 5), {
                    "groups": [group], "include_authorized_operations": True})
                entry = described.groups[0]
                assert (entry.group_state, entry.protocol_data) == ("Stable", "range")
                assert entry.members[0].member_assignment == b"A"
                if v >= 3:  # no authorizer: all of a group's operations (READ, DELETE,
                    # DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS), as Kafka 4 answers
                    assert entry.authorized_operations == sum(1 << b for b in (3, 6, 8, 10, 11))
                listed = await client.request(16, min(v, 5), {})
                assert group in {g.group_id for g in listed.groups}
                commit = await client.request(8, v, {
                    "group_id": group, "generation_id_or_member_epoch": gen,
                    "member_id": member, "topics": [{"name": "t", "partitions": [
                        {"partition_index": 1, "committed_offset": 5 + v,
                         "committed_leader_epoch": 2, "committed_metadata": None}]}]})
                expected = ErrorCode.NONE if v >= 1 else ErrorCode.UNKNOWN_MEMBER_ID
                assert commit.topics[0].partitions[0].error_code == expected
                if v >= 8:
                    fetched = await client.request(9, v, {"groups": [
                        {"group_id": group, "topics": [{"name": "t", "partition_indexes": [1]}]}]})
                    part = fetched.groups[0].topics[0].partitions[0]
                else:
                    fetched = await client.request(9, v, {
                        "group_id": group, "topics": [{"name": "t", "partition_indexes": [1]}]})
                    part = fetched.topics[0].partitions[0]
                if v >= 1:
                    assert part.committed_offset == 5 + v
                    assert part.committed_leader_epoch == (2 if v >= 6 else -1)
                deleted = await client.request(47, 0, {"group_id": group, "topics": [
                    {"name": "t", "partitions": [{"partition_index": 1}]}]})
                assert deleted.topics[0].partitions[0].error_code == \
                    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                leave_body: dict[str, Any] = {"group_id": group, "member_id": member,
                                              "members": [{"member_id": member}]}
                left = await client.request(13, min(v, 5), leave_body)
                assert left.error_code == ErrorCode.NONE
                # a group named twice is deleted once, as Kafka takes the distinct names
                gone = await client.request(42, min(v, 2), {"groups_names": [group, group]})
                assert [r.error_code for r in gone.results] == [ErrorCode.NONE]


async def test_rebalance_over_two_connections():
    async with MockCluster(brokers=3) as mc:
        group = f"pair-{next(_ids)}"
        a_conn = await _coordinator(mc, group)
        b_conn = await _coordinator(mc, group)
        try:
            a = await _join(a_conn, 9, group)
            await a_conn.request(14, 5, {"group_id": group, "generation_id": 1,
                                         "member_id": a.member_id, "assignments": []})
            first = await b_conn.request(11, 9, _join_body(group))
            b_join = asyncio.create_task(b_conn.request(11, 9, _join_body(
                group, first.member_id), timeout=10))
            await asyncio.sleep(0.1)
            assert not b_join.done()  # waits for a to rejoin
            beat = await a_conn.request(12, 4, {"group_id": group, "generation_id": 1,
                                                "member_id": a.member_id})
            assert beat.error_code == ErrorCode.REBALANCE_IN_PROGRESS
            a2 = await a_conn.request(11, 9, _join_body(group, a.member_id))
            b2 = await b_join
            assert a2.generation_id == b2.generation_id == 2
            assert a2.leader == b2.leader == a.member_id and len(a2.members) == 2
            b_sync = asyncio.create_task(b_conn.request(14, 5, {
                "group_id": group, "generation_id": 2, "member_id": b2.member_id,
                "assignments": []}, timeout=10))
            await asyncio.sleep(0.05)
            assert not b_sync.done()
            await a_conn.request(14, 5, {"group_id": group, "generation_id": 2,
                                         "member_id": a.member_id, "assignments": [
                                             {"member_id": b2.member_id, "assignment": b"B"}]})
            assert (await b_sync).assignment == b"B"
        finally:
            await a_conn.close()
            await b_conn.close()


async def test_find_coordinator_versions_and_wrong_broker():
    async with MockCluster(brokers=3) as mc:
        group = f"fc-{next(_ids)}"
        owner = mc.cluster.coordinator_for(0, group)
        assert owner is not None
        for broker in range(3):
            async with await connect_broker(mc, broker) as client:
                for v in range(4):
                    resp = await client.request(10, v, {"key": group, "key_type": 0})
                    assert (resp.error_code, resp.node_id) == (ErrorCode.NONE, owner)
                batched = await client.request(10, 4, {"key_type": 1,
                                                       "coordinator_keys": ["tx-a", "tx-b"]})
                assert [c.node_id for c in batched.coordinators] == [
                    mc.cluster.coordinator_for(1, "tx-a"), mc.cluster.coordinator_for(1, "tx-b")]
                bad = await client.request(10, 3, {"key": group, "key_type": 7})
                assert bad.error_code == ErrorCode.INVALID_REQUEST
                if broker != owner:
                    join = await client.request(11, 9, _join_body(group))
                    assert join.error_code == ErrorCode.NOT_COORDINATOR
                    beat = await client.request(12, 0, {"group_id": group, "generation_id": 1,
                                                        "member_id": "x"})
                    assert beat.error_code == ErrorCode.NOT_COORDINATOR
                    listed = await client.request(16, 5, {})
                    assert group not in {g.group_id for g in listed.groups}
        # the coordinator goes down: unavailable until it is moved (fenced)
        mc.cluster.brokers[owner].up = False
        other = next(b for b in range(3) if b != owner)
        async with await connect_broker(mc, other) as client:
            resp = await client.request(10, 3, {"key": group, "key_type": 0})
            assert resp.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
            mc.cluster.controller.fence_broker(owner)
            mc.cluster.propagate()
            resp = await client.request(10, 3, {"key": group, "key_type": 0})
            assert resp.error_code == ErrorCode.NONE and resp.node_id != owner
