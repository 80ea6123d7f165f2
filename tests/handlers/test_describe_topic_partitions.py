"""DescribeTopicPartitions (KIP-966) in-process: topics in name order, pagination by cursor
and ResponsePartitionLimit as Kafka pages, unknown and illegal names, empty ELR lists; and
FindCoordinator v6's share-group key type, refused as share groups are not enabled."""

from __future__ import annotations

from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.handlers.metadata import ALL_TOPIC_OPERATIONS
from tests.support.handlers import HandlerHarness

DESCRIBE_TOPIC_PARTITIONS, FIND_COORDINATOR = 75, 10


async def describe(harness: HandlerHarness, topics: list[str], limit: int = 2000,
                   cursor: tuple[str, int] | None = None) -> Struct:
    body: dict[str, Any] = {
        "topics": [{"name": t} for t in topics], "response_partition_limit": limit,
        "cursor": None if cursor is None else {"topic_name": cursor[0],
                                               "partition_index": cursor[1]}}
    response = await harness.call(0, DESCRIBE_TOPIC_PARTITIONS, 0, body)
    assert response is not None
    return response


def pages(response: Struct) -> tuple[list[tuple[str, int, list[int]]], tuple[str, int] | None]:
    topics = [(t.name, t.error_code, [p.partition_index for p in t.partitions])
              for t in response.topics]
    cursor = response.next_cursor
    return topics, None if cursor is None else (cursor.topic_name, cursor.partition_index)


@pytest.fixture
def three_topics(harness: HandlerHarness) -> HandlerHarness:
    harness.cluster.create_topic("b-five", 5)
    harness.cluster.create_topic("a-two", 2)
    harness.cluster.create_topic("c-one", 1)
    return harness


async def test_every_topic_in_name_order_with_full_partition_data(
        three_topics: HandlerHarness) -> None:
    harness = three_topics
    response = await describe(harness, [])
    assert pages(response) == ([("a-two", 0, [0, 1]), ("b-five", 0, [0, 1, 2, 3, 4]),
                                ("c-one", 0, [0])], None)
    topic = response.topics[0]
    image = harness.cluster.image.topics["a-two"]
    assert (topic.topic_id, topic.is_internal, topic.topic_authorized_operations) == (
        image.topic_id, False, ALL_TOPIC_OPERATIONS)
    for got in topic.partitions:
        want = image.partitions[got.partition_index]
        assert dict(got) == {
            "error_code": 0, "partition_index": want.partition, "leader_id": want.leader,
            "leader_epoch": want.leader_epoch, "replica_nodes": list(want.replicas),
            "isr_nodes": list(want.isr), "eligible_leader_replicas": [],
            "last_known_elr": [], "offline_replicas": []}


async def test_pages_through_the_partition_limit(three_topics: HandlerHarness) -> None:
    harness = three_topics
    first = await describe(harness, [], limit=3)
    assert pages(first) == ([("a-two", 0, [0, 1]), ("b-five", 0, [0])], ("b-five", 1))
    second = await describe(harness, [], limit=3, cursor=("b-five", 1))
    assert pages(second) == ([("b-five", 0, [1, 2, 3])], ("b-five", 4))
    # the limit is reached exactly at the end of a topic: the cursor names the next topic
    third = await describe(harness, [], limit=1, cursor=("b-five", 4))
    assert pages(third) == ([("b-five", 0, [4])], ("c-one", 0))
    last = await describe(harness, [], limit=3, cursor=("c-one", 0))
    assert pages(last) == ([("c-one", 0, [0])], None)


async def test_named_topics_unknown_and_illegal(three_topics: HandlerHarness) -> None:
    harness = three_topics
    response = await describe(harness, ["c-one", "zzz", "bad/name", "a-two"])
    assert pages(response) == ([
        ("a-two", ErrorCode.NONE, [0, 1]),
        ("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION, []),
        ("c-one", ErrorCode.NONE, [0]),
        ("zzz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])], None)
    assert "zzz" not in harness.cluster.image.topics  # never auto-created
    # a cursor must name one of the requested topics
    refused = await describe(harness, ["a-two", "c-one"], cursor=("b-five", 0))
    assert pages(refused) == ([("a-two", ErrorCode.INVALID_REQUEST, []),
                               ("c-one", ErrorCode.INVALID_REQUEST, [])], None)
    negative = await describe(harness, ["a-two"], cursor=("a-two", -1))
    assert pages(negative) == ([("a-two", ErrorCode.INVALID_REQUEST, [])], None)


async def test_offline_leader(three_topics: HandlerHarness) -> None:
    harness = three_topics
    harness.cluster.create_topic("solo", 1, assignments=[[2]])
    harness.cluster.fence_broker(2)
    [topic] = (await describe(harness, ["solo"])).topics
    [part] = topic.partitions
    assert (part.error_code, part.offline_replicas) == (ErrorCode.LEADER_NOT_AVAILABLE, [2])


@pytest.mark.parametrize("version", [5, 6])
async def test_find_coordinator_v5_v6(harness: HandlerHarness, version: int) -> None:
    response = await harness.call(0, FIND_COORDINATOR, version,
                                  {"key_type": 0, "coordinator_keys": ["g1"]})
    assert response is not None
    [found] = response.coordinators
    assert (found.key, found.error_code) == ("g1", ErrorCode.NONE)
    assert found.node_id == harness.cluster.coordinator_for(0, "g1")
    share = await harness.call(0, FIND_COORDINATOR, version,
                               {"key_type": 2, "coordinator_keys": ["g1:topic:0"]})
    assert share is not None
    [refused] = share.coordinators
    assert (refused.error_code, refused.node_id) == (ErrorCode.INVALID_REQUEST, -1)
