"""A share group's whole life over sockets with a raw-codec client (KIP-932, v0 of APIs 76-79):
find the coordinator, join, fetch acquired records, acknowledge, see an unacknowledged
record redelivered after its acquisition lock expires (ManualClock), a second member
receive disjoint records, leave, and the group go Empty."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker import MockCluster
from mockbroker.cluster import ManualClock
from tests.support.rawclient import ConnectionClosed, RawClient, connect_broker
from tests.support.share import (
    ACCEPT,
    REJECT,
    SHARE_GROUP_DESCRIBE,
    ShareMemberClient,
    delivered,
    heartbeat_body,
    share_groups_enabled,
)

PRODUCE, METADATA, FIND_COORDINATOR = 0, 3, 10
TOPIC, GROUP = "tasks", "task-workers"


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[MockCluster, ManualClock]]:
    clock = ManualClock()
    mc = MockCluster(brokers=3, clock=clock, broker_properties=share_groups_enabled())
    await mc.start()
    try:
        yield mc, clock
    finally:
        await mc.stop()


async def _produce(client: RawClient, values: list[bytes]) -> None:
    batch = bytes(build_batch([RecordSpec(key=None, value=v, timestamp=1_000)
                               for v in values]))
    response = await client.request(PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE


async def test_share_group_lifecycle(cluster: tuple[MockCluster, ManualClock]) -> None:
    mc, clock = cluster
    await mc.control.create_topic(TOPIC, partitions=1)
    mc.cluster.share_groups.set_group_config(GROUP, "share.auto.offset.reset", "earliest")
    ports = mc.server.bound_ports
    async with await RawClient.connect(ports[0]) as bootstrap:
        meta = await bootstrap.request(METADATA, 12, {"topics": [{"name": TOPIC,
                                                                  "topic_id": None}],
                                                      "allow_auto_topic_creation": False})
        [topic] = meta.topics
        topic_id, leader = topic.topic_id, topic.partitions[0].leader_id
        found = await bootstrap.request(FIND_COORDINATOR, 4, {"key_type": 0,
                                                              "coordinator_keys": [GROUP]})
        coordinator = found.coordinators[0].node_id
    async with await RawClient.connect(ports[coordinator]) as coord_a, \
            await RawClient.connect(ports[leader]) as leader_a, \
            await RawClient.connect(ports[coordinator]) as coord_b, \
            await RawClient.connect(ports[leader]) as leader_b:
        await _produce(leader_a, [b"t0", b"t1", b"t2"])
        first = ShareMemberClient(coord_a, leader_a, GROUP)
        joined = await first.join([TOPIC])
        assert joined.error_code == ErrorCode.NONE and joined.member_epoch == 1
        assert [(tp.topic_id, list(tp.partitions))
                for tp in joined.assignment.topic_partitions] == [(topic_id, [0])]

        got = delivered(await first.fetch(topic_id))
        assert got.values == {0: b"t0", 1: b"t1", 2: b"t2"}
        # accept t0, reject t1; t2 stays acquired until its lock runs out
        acked = await first.acknowledge(topic_id, 0, [(0, 0, ACCEPT), (1, 1, REJECT)])
        assert acked.responses[0].partitions[0].error_code == ErrorCode.NONE

        second = ShareMemberClient(coord_b, leader_b, GROUP)
        assert (await second.join([TOPIC])).member_epoch == 2
        await _produce(leader_a, [b"t3"])
        assert delivered(await second.fetch(topic_id)).values == {3: b"t3"}  # disjoint

        clock.advance(30_000)  # group.share.record.lock.duration.ms
        mc.cluster.tick()
        assert (await first.heartbeat()).member_epoch == 2
        again = delivered(await first.fetch(topic_id))
        assert again.values == {2: b"t2", 3: b"t3"}
        assert again.delivery_counts == {2: 2, 3: 2}
        await first.acknowledge(topic_id, 0, [(2, 3, ACCEPT)])
        share = mc.cluster.share_groups.groups[GROUP].partitions[(topic_id, 0)]
        assert (share.spso, share.speo, share.records) == (4, 4, {})

        # a long poll is answered by the next append
        parked = asyncio.ensure_future(second.fetch(topic_id, max_wait_ms=30_000))
        await _produce(leader_a, [b"t4"])
        assert delivered(await asyncio.wait_for(parked, 10)).values == {4: b"t4"}

        assert (await second.fetch(topic_id, acks=[(4, 4, ACCEPT)], close=True)).error_code == 0
        assert (await first.leave()).member_epoch == -1
        assert (await second.leave()).member_epoch == -1
        described = await coord_a.request(SHARE_GROUP_DESCRIBE, 0, {
            "group_ids": [GROUP], "include_authorized_operations": False})
        assert (described.groups[0].group_state, list(described.groups[0].members)) == \
            ("Empty", [])
        assert (share.spso, share.records) == (5, {})


async def _advertised(mc: MockCluster) -> dict[int, tuple[int, int]]:
    async with await connect_broker(mc) as client:
        response = await client.request(18, 3, {"client_software_name": "t",
                                                "client_software_version": "1"})
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


async def _share_api_errors(mc: MockCluster) -> list[int]:
    """The error codes of one request to each share API, in order: ShareGroupHeartbeat,
    ShareGroupDescribe's two groups, ShareFetch, ShareAcknowledge."""
    async with await connect_broker(mc) as client:
        member = ShareMemberClient(client, client, "g", member_id="m", member_epoch=1,
                                   session_epoch=1)
        heartbeat = await client.request(76, 0, heartbeat_body("g", "", 0, ["t"]))
        described = await client.request(SHARE_GROUP_DESCRIBE, 0, {
            "group_ids": ["g", "h"], "include_authorized_operations": False})
        assert [g.group_id for g in described.groups] == ["g", "h"]
        fetched = await member.fetch(uuid.uuid4())
        acked = await member.acknowledge(uuid.uuid4(), 0, [(0, 0, ACCEPT)])
    return [heartbeat.error_code, *(g.error_code for g in described.groups),
            fetched.error_code, acked.error_code]


async def test_share_group_apis_are_hidden_unless_unstable_apis_are_enabled() -> None:
    """Kafka 4.0's share-group APIs are latestVersionUnstable: unstable.api.versions.enable
    alone decides whether they are advertised (ApiVersionManager); a request to a hidden
    one closes the connection, as for any API the broker does not expose."""
    share_apis = {76, 77, 78, 79}
    only_share = {"group.coordinator.rebalance.protocols": "classic,consumer,share"}
    for properties in ({}, only_share):
        async with MockCluster(brokers=1, broker_properties=dict(properties)) as mc:
            assert share_apis.isdisjoint(await _advertised(mc))
            async with await connect_broker(mc) as client:
                with pytest.raises(ConnectionClosed):
                    await client.request(76, 0, heartbeat_body("g", "m", 0, ["t"]))
    for properties in ({"unstable.api.versions.enable": "true"}, share_groups_enabled()):
        async with MockCluster(brokers=1, broker_properties=properties) as mc:
            assert {key: span for key, span in (await _advertised(mc)).items()
                    if key in share_apis} == {key: (0, 0) for key in share_apis}
    async with MockCluster(brokers=1, kafka_version="all") as mc:
        assert share_apis <= set(await _advertised(mc))


async def test_share_apis_answer_unsupported_version_without_the_share_protocol() -> None:
    """Advertised (unstable.api.versions.enable=true) but "share" not among
    group.coordinator.rebalance.protocols: Kafka 4.0's KafkaApis answers every share API
    with UNSUPPORTED_VERSION (isShareGroupProtocolEnabled), ShareGroupDescribe per group.
    With both settings they serve: a join succeeds and the other three answer their own
    errors (the made-up member and session are unknown)."""
    unsupported = [ErrorCode.UNSUPPORTED_VERSION] * 5
    async with MockCluster(brokers=1,
                           broker_properties={"unstable.api.versions.enable": "true"}) as mc:
        assert await _share_api_errors(mc) == unsupported
        assert "g" not in mc.cluster.share_groups.groups
    async with MockCluster(brokers=1, kafka_version="all") as mc:
        assert await _share_api_errors(mc) == unsupported
    async with MockCluster(brokers=1, broker_properties=share_groups_enabled()) as mc:
        await mc.control.create_topic("t", partitions=1)
        assert await _share_api_errors(mc) == [
            ErrorCode.NONE, ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND,
            ErrorCode.SHARE_SESSION_NOT_FOUND,
            ErrorCode.SHARE_SESSION_NOT_FOUND]
