"""CreateTopics, DeleteTopics and CreatePartitions in-process, each at its newest version and
an old one, with exact expected answers (Kafka's error codes and messages)."""

from __future__ import annotations

import uuid

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.cluster.configs.config_defs import HIDDEN_UNLESS_SET, TOPIC_CONFIGS
from tests.support.admin import (
    CREATE_PARTITIONS,
    DELETE_TOPICS,
    by_name,
    create_topic,
    create_topics,
    produce,
    topic_spec,
)
from tests.support.handlers import BrokerHandle, HandlerHarness

ZERO = uuid.UUID(int=0)


@pytest.fixture
def client(harness: HandlerHarness) -> BrokerHandle:
    """Broker 0: admin requests are accepted by any broker (applied through the controller)."""
    return harness.client(0)


# -- CreateTopics ----------------------------------------------------------------------------

async def test_create_topics_v7_defaults(harness: HandlerHarness, client: BrokerHandle) -> None:
    [result] = await create_topics(client, topic_spec("t", configs={"retention.ms": "1000"}))
    topic = harness.cluster.image.topics["t"]
    assert (result.name, result.error_code, result.error_message) == ("t", 0, None)
    assert (result.topic_id, result.num_partitions, result.replication_factor) == (
        topic.topic_id, 1, 3)
    assert result.topic_config_error_code == 0
    configs = by_name(result.configs)
    assert len(configs) == len(set(TOPIC_CONFIGS) - HIDDEN_UNLESS_SET)
    assert dict(configs["retention.ms"]) == {"name": "retention.ms", "value": "1000",
                                             "read_only": False, "config_source": 1,
                                             "is_sensitive": False}
    assert dict(configs["cleanup.policy"]) == {"name": "cleanup.policy", "value": "delete",
                                               "read_only": False, "config_source": 5,
                                               "is_sensitive": False}
    assert list(topic.partitions) == [0]
    assert topic.partitions[0].replicas == (0, 1, 2)
    assert harness.cluster.topic_config("t")["retention.ms"] == "1000"
    for node in harness.cluster.brokers.values():  # every broker applied it
        assert "t" in node.image.topics


async def test_create_topics_counts_and_manual_assignment(harness: HandlerHarness,
                                                          client: BrokerHandle) -> None:
    results = await create_topics(
        client, topic_spec("counted", 3, 2),
        topic_spec("manual", assignments={0: [2, 1], 1: [1, 0]}))
    assert [(r.name, r.error_code, r.num_partitions, r.replication_factor) for r in results] \
        == [("counted", 0, 3, 2), ("manual", 0, 2, 2)]
    counted = harness.cluster.image.topics["counted"].partitions
    assert [p.replicas for p in counted.values()] == [(0, 1), (1, 2), (2, 0)]
    assert [p.leader for p in counted.values()] == [0, 1, 2]
    manual = harness.cluster.image.topics["manual"].partitions
    assert [(p.replicas, p.leader, p.isr) for p in manual.values()] == [
        ((2, 1), 2, (2, 1)), ((1, 0), 1, (1, 0))]


async def test_create_topics_errors(harness: HandlerHarness, client: BrokerHandle) -> None:
    await create_topic(client, "exists")
    await create_topic(client, "a_b")
    results = await create_topics(
        client,
        topic_spec("exists"),
        topic_spec("bad name!"),
        topic_spec("a.b"),
        topic_spec("zero", 0),
        topic_spec("rf0", 1, 0),
        topic_spec("rf4", 1, 4),
        topic_spec("unknown_cfg", configs={"foo": "bar"}),
        topic_spec("bad_value", configs={"retention.ms": "abc"}),
        topic_spec("bad_choice", configs={"message.timestamp.type": "Now"}),
        topic_spec("null_cfg", configs={"retention.ms": None}),
        topic_spec("manual_rf", rf=3, assignments={0: [0]}),
        topic_spec("manual_np", partitions=1, assignments={0: [0]}),
        topic_spec("manual_dup", assignments={0: [1, 1]}),
        topic_spec("manual_unknown", assignments={0: [7]}),
        topic_spec("manual_empty", assignments={0: []}),
        topic_spec("manual_gap", assignments={0: [0], 2: [1]}),
        topic_spec("manual_rf_mix", assignments={0: [0, 1], 1: [2]}),
        topic_spec("dup"),
        topic_spec("dup", 3),
    )
    got = [(r.name, r.error_code, r.error_message) for r in results]
    assert got == [
        ("exists", E.TOPIC_ALREADY_EXISTS, "Topic 'exists' already exists."),
        ("bad name!", E.INVALID_TOPIC_EXCEPTION, "Topic name 'bad name!' is illegal."),
        ("a.b", E.INVALID_TOPIC_EXCEPTION, "Topic 'a.b' collides with existing topic: a_b"),
        ("zero", E.INVALID_PARTITIONS,
         "Number of partitions was set to an invalid non-positive value."),
        ("rf0", E.INVALID_REPLICATION_FACTOR,
         "Replication factor must be larger than 0, or -1 to use the default value."),
        ("rf4", E.INVALID_REPLICATION_FACTOR,
         "Unable to replicate the partition 4 time(s): The target replication factor of 4 "
         "cannot be reached because only 3 broker(s) are registered."),
        ("unknown_cfg", E.INVALID_CONFIG, "Unknown topic config name: foo"),
        ("bad_value", E.INVALID_CONFIG,
         "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
        ("bad_choice", E.INVALID_CONFIG,
         "Invalid value Now for configuration message.timestamp.type: String must be one of: "
         "CreateTime, LogAppendTime"),
        ("null_cfg", E.INVALID_CONFIG, "Null value not supported for topic configs: "
                                       "retention.ms"),
        ("manual_rf", E.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                         "replication factor was not set to -1."),
        ("manual_np", E.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                         "numPartitions was not set to -1."),
        ("manual_dup", E.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes the broker 1 more than once."),
        ("manual_unknown", E.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes broker 7, but no such broker is "
         "registered."),
        ("manual_empty", E.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes an empty replica list."),
        ("manual_gap", E.INVALID_REPLICA_ASSIGNMENT,
         "partitions should be a consecutive 0-based integer sequence"),
        ("manual_rf_mix", E.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes a partition with 1 replica(s), but this is "
         "not consistent with previous partitions, which have 2 replica(s)."),
        ("dup", E.INVALID_REQUEST, "Duplicate topic name."),
    ]
    for r in results:
        assert (r.topic_id, r.num_partitions, r.replication_factor, r.configs) == (
            ZERO, -1, -1, [])
    assert sorted(harness.cluster.image.topics) == ["a_b", "exists"]


async def test_create_topics_validate_only(harness: HandlerHarness, client: BrokerHandle) -> None:
    [result] = await create_topics(client, topic_spec("v", 4, configs={"segment.ms": "5000"}),
                                   validate_only=True)
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 4, 3)
    # Kafka's controller draws the topic's id before validating: a fresh id, no topic
    assert result.topic_id != ZERO
    [again] = await create_topics(client, topic_spec("v", 4), validate_only=True)
    assert again.topic_id not in (ZERO, result.topic_id)
    assert by_name(result.configs)["segment.ms"].value == "5000"
    assert "v" not in harness.cluster.image.topics
    [bad] = await create_topics(client, topic_spec("v", 0), validate_only=True)
    assert bad.error_code == E.INVALID_PARTITIONS


async def test_create_topics_v0_v1(harness: HandlerHarness, client: BrokerHandle) -> None:
    [ok, dup] = await create_topics(client, topic_spec("old", 2, 1), topic_spec("old", 2, 1)
                                    | {"name": "x"}, version=0)
    assert (ok.name, ok.error_code, dup.name, dup.error_code) == ("old", 0, "x", 0)
    assert len(harness.cluster.image.topics["old"].partitions) == 2
    [again] = await create_topics(client, topic_spec("old", 2, 1), version=1)
    assert (again.error_code, again.error_message) == (E.TOPIC_ALREADY_EXISTS,
                                                       "Topic 'old' already exists.")
    [checked] = await create_topics(client, topic_spec("new", 1, 1), version=1,
                                    validate_only=True)
    assert (checked.error_code, checked.error_message) == (0, None)
    assert "new" not in harness.cluster.image.topics


# -- DeleteTopics ----------------------------------------------------------------------------

async def test_delete_topics_v6(harness: HandlerHarness, client: BrokerHandle) -> None:
    for name in ("t1", "t2", "t3", "t4"):
        await create_topic(client, name)
    t2_id = harness.cluster.image.topics["t2"].topic_id
    t4_id = harness.cluster.image.topics["t4"].topic_id
    t1_id = harness.cluster.image.topics["t1"].topic_id
    ghost = uuid.uuid4()
    body = {"topics": [
        {"name": "t1", "topic_id": ZERO}, {"name": None, "topic_id": t2_id},
        {"name": "missing", "topic_id": ZERO}, {"name": None, "topic_id": ghost},
        {"name": "t3", "topic_id": t2_id}, {"name": None, "topic_id": ZERO},
        {"name": "t4", "topic_id": ZERO}, {"name": "t4", "topic_id": ZERO},
        {"name": None, "topic_id": t4_id}], "timeout_ms": 5000}
    response = await client.request(DELETE_TOPICS, 6, body)
    got = sorted(((r.name or "", str(r.topic_id)), r.error_code, r.error_message)
                 for r in response.responses)
    assert got == sorted([
        (("t3", str(t2_id)), E.INVALID_REQUEST,
         "You may not specify both topic name and topic id."),
        (("", str(ZERO)), E.INVALID_REQUEST, "Neither topic name nor id were specified."),
        (("t4", str(ZERO)), E.INVALID_REQUEST, "Duplicate topic name."),
        (("", str(ghost)), E.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."),
        (("missing", str(ZERO)), E.UNKNOWN_TOPIC_OR_PARTITION,
         "This server does not host this topic-partition."),
        (("t4", str(t4_id)), E.NONE, None),
        (("t1", str(t1_id)), E.NONE, None),
        (("t2", str(t2_id)), E.NONE, None),
    ])
    # t4 named twice is not deleted by name; its id entry deleted it
    assert sorted(harness.cluster.image.topics) == ["t3"]


async def test_delete_topics_v6_successes_carry_name_and_id(harness: HandlerHarness,
                                                            client: BrokerHandle) -> None:
    await create_topic(client, "a")
    await create_topic(client, "b")
    ids = {n: harness.cluster.image.topics[n].topic_id for n in ("a", "b")}
    response = await client.request(DELETE_TOPICS, 6, {"topics": [
        {"name": "a", "topic_id": ZERO}, {"name": None, "topic_id": ids["b"]}]})
    assert [(r.name, r.topic_id, r.error_code, r.error_message) for r in response.responses] \
        == [("a", ids["a"], 0, None), ("b", ids["b"], 0, None)]
    assert harness.cluster.image.topics == {}


async def test_delete_topics_v0_v5(harness: HandlerHarness, client: BrokerHandle) -> None:
    await create_topic(client, "t1")
    await create_topic(client, "t2")
    v0 = await client.request(DELETE_TOPICS, 0, {"topic_names": ["t1", "nope"],
                                                 "timeout_ms": 1000})
    assert [(r.name, r.error_code) for r in v0.responses] == [
        ("nope", E.UNKNOWN_TOPIC_OR_PARTITION), ("t1", 0)]
    v5 = await client.request(DELETE_TOPICS, 5, {"topic_names": ["t2", "t1"]})
    assert [(r.name, r.error_code, r.error_message) for r in v5.responses] == [
        ("t1", E.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."),
        ("t2", 0, None)]
    assert harness.cluster.image.topics == {}
    assert not any(k for k in harness.cluster.replication.partitions)


# -- CreatePartitions ------------------------------------------------------------------------

async def test_create_partitions_v3(harness: HandlerHarness, client: BrokerHandle) -> None:
    await create_topic(client, "grow")
    await create_topic(client, "manual", 1, 2)
    response = await client.request(CREATE_PARTITIONS, 3, {"topics": [
        {"name": "grow", "count": 3, "assignments": None},
        {"name": "manual", "count": 3, "assignments": [{"broker_ids": [2, 0]},
                                                       {"broker_ids": [1, 2]}]},
    ], "timeout_ms": 5000, "validate_only": False})
    assert [(r.name, r.error_code, r.error_message) for r in response.results] == [
        ("grow", 0, None), ("manual", 0, None)]
    grow = harness.cluster.image.topics["grow"].partitions
    assert [p.replicas for p in grow.values()] == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    manual = harness.cluster.image.topics["manual"].partitions
    assert [p.replicas for p in manual.values()] == [(0, 1), (2, 0), (1, 2)]
    assert (harness.cluster.image.topics["grow"].topic_id, 2) in harness.cluster.replication.partitions
    # the new partition takes writes
    leader = harness.client(harness.leader("grow", 2))
    assert (await produce(leader, "grow", 2, [b"x"])).error_code == 0


async def test_create_partitions_errors(harness: HandlerHarness, client: BrokerHandle) -> None:
    await create_topic(client, "t", 2, 3)
    response = await client.request(CREATE_PARTITIONS, 3, {"topics": [
        {"name": "t", "count": 2, "assignments": None},
        {"name": "missing", "count": 2, "assignments": None},
        {"name": "dup", "count": 2, "assignments": None},
        {"name": "dup", "count": 3, "assignments": None},
    ]})
    assert [(r.name, r.error_code, r.error_message) for r in response.results] == [
        ("dup", E.INVALID_REQUEST, "Duplicate topic name."),
        ("t", E.INVALID_PARTITIONS, "Topic already has 2 partition(s)."),
        ("missing", E.UNKNOWN_TOPIC_OR_PARTITION, None)]  # Kafka's controller: no message
    cases = [
        ({"count": 1, "assignments": None}, E.INVALID_PARTITIONS,
         "The topic t currently has 2 partition(s); 1 would not be an increase."),
        ({"count": 4, "assignments": [{"broker_ids": [0, 1, 2]}]},
         E.INVALID_REPLICA_ASSIGNMENT,
         "Attempted to add 2 additional partition(s), but only 1 assignment(s) were "
         "specified."),
        ({"count": 3, "assignments": [{"broker_ids": [0, 1]}]}, E.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes a partition with 2 replica(s), but this "
         "is not consistent with previous partitions, which have 3 replica(s)."),
        ({"count": 3, "assignments": [{"broker_ids": [0, 1, 9]}]},
         E.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes broker 9, but no such broker is "
         "registered."),
    ]
    for fields, code, message in cases:
        response = await client.request(CREATE_PARTITIONS, 3,
                                        {"topics": [{"name": "t", **fields}]})
        assert [(r.error_code, r.error_message) for r in response.results] == [
            (code, message)]
    checked = await client.request(CREATE_PARTITIONS, 3, {
        "topics": [{"name": "t", "count": 5, "assignments": None}], "validate_only": True})
    assert checked.results[0].error_code == 0
    assert len(harness.cluster.image.topics["t"].partitions) == 2


async def test_create_partitions_v0(harness: HandlerHarness, client: BrokerHandle) -> None:
    await create_topic(client, "t")
    response = await client.request(CREATE_PARTITIONS, 0, {"topics": [
        {"name": "t", "count": 2, "assignments": None},
        {"name": "u", "count": 2, "assignments": None}], "timeout_ms": 1000})
    assert [(r.name, r.error_code) for r in response.results] == [
        ("t", 0), ("u", E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert len(harness.cluster.image.topics["t"].partitions) == 2
