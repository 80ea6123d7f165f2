"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455): replicas are added,
visible as adding/removing while the reassignment is in progress (a delay on the injected
clock), then the old ones leave with a leader epoch bump; cancelling, errors; the records in
the metadata log; kafka-python's admin client end to end."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.cluster import ManualClock
from mockbroker.cluster.kraft.metadata_log import NO_LEADER_CHANGE, PARTITION_CHANGE
from mockbroker.embedded import MockCluster, MockClusterThread
from tests.support.admin import create_topic, running_cluster
from tests.support.rawclient import RawClient, connect_broker

ALTER, LIST = 45, 46
DELAY_MS = 5_000


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with running_cluster(brokers=4, clock=ManualClock(),
                               reassignment_delay_ms=DELAY_MS) as cluster:
        yield cluster


async def alter(client: RawClient, topic: str,
                *partitions: tuple[int, list[int] | None]) -> list[tuple[int, int, str | None]]:
    response = await client.request(ALTER, 0, {"timeout_ms": 1000, "topics": [
        {"name": topic, "partitions": [{"partition_index": p, "replicas": r}
                                       for p, r in partitions]}]})
    assert response.error_code == E.NONE
    [result] = response.responses
    return [(p.partition_index, p.error_code, p.error_message) for p in result.partitions]


async def listed(client: RawClient, topics: Any = None) -> list[tuple[str, int, list[int],
                                                                       list[int], list[int]]]:
    response = await client.request(LIST, 0, {"timeout_ms": 1000, "topics": topics})
    assert response.error_code == E.NONE
    return [(t.name, p.partition_index, list(p.replicas), list(p.adding_replicas),
             list(p.removing_replicas)) for t in response.topics for p in t.partitions]


def state(mc: MockCluster, topic: str, index: int) -> tuple[Any, ...]:
    part = mc.cluster.image.partition(topic, index)
    assert part is not None
    return part.replicas, part.isr, part.leader, part.leader_epoch


async def test_move_then_complete_after_the_delay(mc: MockCluster) -> None:
    clock = mc.cluster.clock
    assert isinstance(clock, ManualClock)
    async with await connect_broker(mc, 3) as client:
        await create_topic(client, "t", partitions=2, rf=2)
        assert state(mc, "t", 0) == ((0, 1), (0, 1), 0, 0)
        assert await alter(client, "t", (0, [2, 3])) == [(0, E.NONE, None)]
        start = mc.cluster.controller.log.records[-1]
        assert (start.record_type, start.data["replicas"], start.data["adding_replicas"],
                start.data["removing_replicas"], start.data["leader"]) == (
            PARTITION_CHANGE, [2, 3, 0, 1], [2, 3], [0, 1], NO_LEADER_CHANGE)
        assert state(mc, "t", 0) == ((2, 3, 0, 1), (0, 1), 0, 0)  # same leader epoch
        assert await listed(client) == [("t", 0, [2, 3, 0, 1], [2, 3], [0, 1])]
        clock.advance(DELAY_MS - 1)
        mc.cluster.tick()
        assert await listed(client, [{"name": "t", "partition_indexes": [0, 1]}]) == [
            ("t", 0, [2, 3, 0, 1], [2, 3], [0, 1])]
        clock.advance(1)
        mc.cluster.tick()
        assert state(mc, "t", 0) == ((2, 3), (2, 3), 2, 1)  # the old replicas left: epoch +1
        done = mc.cluster.controller.log.records[-1]
        assert (done.data["replicas"], done.data["isr"], done.data["leader"],
                done.data["adding_replicas"], done.data["removing_replicas"]) == (
            [2, 3], [2, 3], 2, [], [])
        assert await listed(client) == []
        # the Metadata the clients read follows
        metadata = await client.request(3, 12, {"topics": [{"name": "t", "topic_id": None}],
                                                "allow_auto_topic_creation": False,
                                                "include_topic_authorized_operations": False})
        [topic] = metadata.topics
        assert [(p.partition_index, list(p.replica_nodes), p.leader_id, p.leader_epoch)
                for p in topic.partitions] == [(0, [2, 3], 2, 1), (1, [1, 2], 1, 0)]


async def test_cancel_reorder_and_errors(mc: MockCluster) -> None:
    async with await connect_broker(mc, 0) as client:
        await create_topic(client, "t", partitions=2, rf=2)
        assert await alter(client, "t", (0, None)) == [
            (0, E.NO_REASSIGNMENT_IN_PROGRESS, None)]  # Kafka's controller: no message
        assert await alter(client, "t", (0, [1, 2]), (1, [])) == [
            (0, E.NONE, None),
            (1, E.INVALID_REPLICA_ASSIGNMENT,
             "The manual partition assignment includes an empty replica list.")]
        assert state(mc, "t", 0) == ((1, 2, 0), (0, 1), 0, 0)
        assert await alter(client, "t", (0, None)) == [(0, E.NONE, None)]  # cancel
        # replica 2 left (epoch +1); the others keep their order in the merged list, as
        # Kafka's revert does
        assert state(mc, "t", 0) == ((1, 0), (0, 1), 0, 1)
        assert await listed(client) == []
        assert await alter(client, "t", (1, [2, 1])) == [(1, E.NONE, None)]  # reorder: at once
        assert state(mc, "t", 1) == ((2, 1), (1, 2), 1, 0)  # leader and epoch stay
        assert await alter(client, "t", (0, [1, 1]), (1, [7])) == [
            (0, E.INVALID_REPLICA_ASSIGNMENT,
             "The manual partition assignment includes duplicate replicas."),
            (1, E.INVALID_REPLICA_ASSIGNMENT,
             "The manual partition assignment includes broker 7, but no such broker is "
             "registered.")]
        assert await alter(client, "t", (5, [0])) == [
            (5, E.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")]
        assert await alter(client, "nope", (0, [0])) == [
            (0, E.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")]


@pytest.fixture
def threaded() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3, clock=ManualClock(), reassignment_delay_ms=DELAY_MS) as m:
        yield m


@pytest.mark.clients
def test_kafka_python_reassignments(threaded: MockClusterThread) -> None:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=threaded.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("k", num_partitions=1, replication_factor=1)])
        tp = TopicPartition("k", 0)
        before = threaded.call(lambda: threaded.cluster.image.partition("k", 0).replicas)
        target = [(before[0] + 1) % 3]
        altered = admin.alter_partition_reassignments({tp: target})
        ongoing = admin.list_partition_reassignments()

        def complete() -> None:
            clock = threaded.cluster.clock
            assert isinstance(clock, ManualClock)
            clock.advance(DELAY_MS)
            threaded.cluster.tick()
        threaded.call(complete)
        after = admin.list_partition_reassignments()
        replicas = threaded.call(lambda: threaded.cluster.image.partition("k", 0).replicas)
    finally:
        admin.close()
    assert altered == {tp: None}  # kafka-python: None for a partition without error
    assert ongoing == {tp: {"replicas": [*target, *before], "adding_replicas": target,
                            "removing_replicas": list(before)}}
    assert (after, replicas) == ({}, tuple(target))
