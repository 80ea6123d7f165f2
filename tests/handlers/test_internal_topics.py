"""Kafka's internal topics in-process: `__consumer_offsets` and `__transaction_state` appear
on the first coordinator lookup of their kind, with Kafka's partition counts, replication and
topic configs; Metadata marks them internal; clients may read them but not produce to them."""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from tests.support.handlers import HandlerHarness

PRODUCE, FETCH, METADATA, FIND_COORDINATOR, DESCRIBE_CONFIGS = 0, 1, 3, 10, 32
TOPIC_RESOURCE = 2
DYNAMIC_TOPIC_CONFIG = 1
OFFSETS, TRANSACTIONS = "__consumer_offsets", "__transaction_state"


async def find_coordinator(harness: HandlerHarness, key_type: int, key: str) -> Struct:
    response = await harness.call(0, FIND_COORDINATOR, 4,
                                  {"key_type": key_type, "coordinator_keys": [key]})
    assert response is not None
    [found] = response.coordinators
    assert found.error_code == ErrorCode.NONE
    return found


async def all_topics(harness: HandlerHarness) -> dict[str, Struct]:
    response = await harness.call(0, METADATA, 12, {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    assert response is not None
    return {t.name: t for t in response.topics}


async def topic_configs(harness: HandlerHarness, name: str) -> dict[str, tuple[str, int]]:
    response = await harness.call(0, DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": name,
                       "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    assert response is not None
    [result] = response.results
    assert result.error_code == ErrorCode.NONE
    return {c.name: (c.value, c.config_source) for c in result.configs}


async def test_group_lookup_creates_consumer_offsets(harness: HandlerHarness) -> None:
    harness.cluster.create_topic("orders", 1)
    assert set(await all_topics(harness)) == {"orders"}
    await find_coordinator(harness, 0, "billing")
    topics = await all_topics(harness)
    assert set(topics) == {"orders", OFFSETS}
    offsets = topics[OFFSETS]
    assert (offsets.is_internal, topics["orders"].is_internal) == (True, False)
    assert len(offsets.partitions) == 50
    assert {len(p.replica_nodes) for p in offsets.partitions} == {3}
    configs = await topic_configs(harness, OFFSETS)
    overrides = {k: v for k, (v, source) in configs.items() if source == DYNAMIC_TOPIC_CONFIG}
    assert overrides == {"cleanup.policy": "compact", "segment.bytes": "104857600",
                         "compression.type": "producer"}
    # a second lookup, of any group, creates nothing more
    before = harness.cluster.image.topics[OFFSETS].topic_id
    await find_coordinator(harness, 0, "other")
    assert harness.cluster.image.topics[OFFSETS].topic_id == before
    assert TRANSACTIONS not in harness.cluster.image.topics


async def test_transaction_lookup_creates_transaction_state() -> None:
    harness = HandlerHarness(brokers=1, transaction_topic_partitions=4)
    await find_coordinator(harness, 1, "txn-1")
    topics = await all_topics(harness)
    assert set(topics) == {TRANSACTIONS}
    state = topics[TRANSACTIONS]
    assert state.is_internal and len(state.partitions) == 4
    assert [list(p.replica_nodes) for p in state.partitions] == [[0]] * 4
    configs = await topic_configs(harness, TRANSACTIONS)
    overrides = {k: v for k, (v, source) in configs.items() if source == DYNAMIC_TOPIC_CONFIG}
    assert overrides == {"cleanup.policy": "compact", "segment.bytes": "104857600",
                         "compression.type": "uncompressed",
                         "unclean.leader.election.enable": "false",
                         "min.insync.replicas": "1"}  # 2 in Kafka, capped at one replica


async def test_clients_may_read_but_not_write_internal_topics(harness: HandlerHarness) -> None:
    await find_coordinator(harness, 0, "billing")
    leader = harness.leader(OFFSETS, 0)
    body: dict[str, Any] = {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": OFFSETS, "partition_data": [
            {"index": 0, "records": build_batch([RecordSpec(value=b"x")])}]}]}
    for broker in (leader, (leader + 1) % 3):  # refused before the leadership check
        response = await harness.call(broker, PRODUCE, 11, body)
        assert response is not None
        [part] = response.responses[0].partition_responses
        # Kafka throws a plain InvalidTopicException: no error message
        assert (part.error_code, part.error_message) == (
            ErrorCode.INVALID_TOPIC_EXCEPTION, None)
    fetched = harness.call_now(leader, FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": OFFSETS, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
             "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1024}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    assert fetched is not None
    [part] = fetched.responses[0].partitions
    assert (part.error_code, part.high_watermark) == (ErrorCode.NONE, 0)


async def test_metadata_auto_creation_gives_internal_settings(harness: HandlerHarness) -> None:
    request = {"topics": [{"name": OFFSETS, "topic_id": None}],
               "allow_auto_topic_creation": True, "include_topic_authorized_operations": False}
    creating = await harness.call(0, METADATA, 12, request)
    assert creating is not None  # the request that creates it does not see it yet, as Kafka's
    assert [(t.name, t.error_code) for t in creating.topics] == [
        (OFFSETS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    response = await harness.call(0, METADATA, 12, request)
    assert response is not None
    [topic] = response.topics
    assert (topic.name, topic.error_code, topic.is_internal, len(topic.partitions)) == (
        OFFSETS, ErrorCode.NONE, True, 50)
    assert (await topic_configs(harness, OFFSETS))["cleanup.policy"] == ("compact",
                                                                         DYNAMIC_TOPIC_CONFIG)
