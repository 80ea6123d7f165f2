"""Requests that once hurt the broker: each is answered as Kafka answers it, at once.

- CreateTopics asking for 2^31-1 partitions (a 41-byte request) used to block the event loop
  while it built the assignment, growing RSS to gigabytes. Kafka's controller refuses a
  request that would create more than 10,000 partitions before it allocates anything:
  POLICY_VIOLATION for every topic of the request. CreatePartitions and the control API's
  expand-partitions are bounded the same way.
- Metadata v10/v11 naming a topic by id with a null name made the encoder fail (the
  response's name is nullable only from v12) and the connection dropped without an answer;
  Kafka answers UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import uuid

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.control.api import ControlError
from mockbroker.embedded import MockCluster
from tests.support.admin import (
    CREATE_PARTITIONS,
    create_topic,
    create_topics,
    topic_spec,
)
from tests.support.rawclient import RawClient

INT32_MAX = 2**31 - 1
METADATA = 3
POLICY_MESSAGE = "Excessively large number of partitions per request."


async def test_create_topics_with_int32_max_partitions_is_a_policy_violation(
        mc: MockCluster, client: RawClient) -> None:
    [result] = await create_topics(client, topic_spec("huge", INT32_MAX, 1))
    assert (result.name, result.error_code, result.error_message) == (
        "huge", E.POLICY_VIOLATION, POLICY_MESSAGE)
    assert "huge" not in mc.cluster.image.topics
    # the broker is still serving: the next request on the same connection is answered
    await create_topic(client, "normal", 2)
    assert len(mc.cluster.image.topics["normal"].partitions) == 2


async def test_the_bound_counts_the_whole_request(mc: MockCluster, client: RawClient) -> None:
    results = await create_topics(client, topic_spec("a", 6000, 1), topic_spec("b", 4001, 1))
    assert [(r.name, r.error_code, r.error_message) for r in results] == [
        ("a", E.POLICY_VIOLATION, POLICY_MESSAGE), ("b", E.POLICY_VIOLATION, POLICY_MESSAGE)]
    assert not {"a", "b"} & set(mc.cluster.image.topics)
    # exactly at the limit is allowed (validate_only keeps the test light)
    [ok] = await create_topics(client, topic_spec("c", 10_000, 1), validate_only=True)
    assert (ok.error_code, ok.num_partitions) == (E.NONE, 10_000)


async def test_create_partitions_is_bounded_too(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "grow", 1)
    response = await client.request(CREATE_PARTITIONS, 3, {
        "topics": [{"name": "grow", "count": INT32_MAX, "assignments": None}],
        "timeout_ms": 5000, "validate_only": False})
    [result] = response.results
    assert (result.name, result.error_code, result.error_message) == (
        "grow", E.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
    assert len(mc.cluster.image.topics["grow"].partitions) == 1


async def test_expand_partitions_verb_is_bounded(mc: MockCluster) -> None:
    await mc.control.create_topic("grow", partitions=1)
    with pytest.raises(ControlError) as info:
        await mc.control.expand_partitions("grow", INT32_MAX)
    assert info.value.status == 400
    assert "excessively large" in info.value.message
    assert len(mc.cluster.image.topics["grow"].partitions) == 1


@pytest.mark.parametrize("version", [10, 11])
async def test_metadata_by_unknown_topic_id_with_null_name(client: RawClient,
                                                           version: int) -> None:
    wanted = uuid.UUID("00000000-0000-0000-0000-0000000000aa")
    response = await client.request(METADATA, version, {
        "topics": [{"topic_id": wanted, "name": None}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    [topic] = response.topics  # Kafka looks topics up by id from v12 only
    assert (topic.error_code, topic.topic_id, topic.name, list(topic.partitions)) == (
        E.INVALID_REQUEST, wanted, "", [])
    assert (response.brokers, response.cluster_id, response.controller_id) == ([], None, -1)
    assert not await client.is_closed(timeout=0.2)


async def test_metadata_v12_by_unknown_topic_id_has_a_null_name(client: RawClient) -> None:
    wanted = uuid.UUID("00000000-0000-0000-0000-0000000000bb")
    response = await client.request(METADATA, 12, {
        "topics": [{"topic_id": wanted, "name": None}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    [topic] = response.topics
    assert (topic.error_code, topic.topic_id, topic.name) == (E.UNKNOWN_TOPIC_ID, wanted, None)


async def test_metadata_by_known_topic_id_at_v10(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "known", 2)
    topic_id = mc.cluster.image.topics["known"].topic_id
    response = await client.request(METADATA, 10, {
        "topics": [{"topic_id": topic_id, "name": None}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    [topic] = response.topics  # even a known id: Kafka's INVALID_REQUEST below v12
    assert (topic.error_code, topic.name, topic.topic_id) == (E.INVALID_REQUEST, "", topic_id)
    assert list(topic.partitions) == []
