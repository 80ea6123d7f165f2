"""Admin APIs over the wire: CreateTopics, DeleteTopics, CreatePartitions, DescribeCluster,
DeleteRecords, ElectLeaders (configs are in test_admin_configs.py), each at its newest
version and an old one, with exact expected answers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.cluster.configs import TOPIC_CONFIGS
from mockbroker.embedded import MockCluster
from tests.support.admin import (
    API_VERSIONS,
    CREATE_PARTITIONS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    ELECT_LEADERS,
    LIST_OFFSETS,
    by_name,
    create_topic,
    create_topics,
    fence,
    leader_client,
    produce,
    running_cluster,
    topic_spec,
)
from tests.support.rawclient import RawClient, connect_broker

ZERO = uuid.UUID(int=0)


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with running_cluster() as cluster:
        yield cluster


@pytest.fixture
async def client(mc: MockCluster) -> AsyncIterator[RawClient]:
    async with await connect_broker(mc, 0) as raw:
        yield raw


async def test_advertised_versions(client: RawClient) -> None:
    response = await client.request(API_VERSIONS, 3, {"client_software_name": "t",
                                                      "client_software_version": "1"})
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert {key: ranges[key] for key in (19, 20, 21, 32, 33, 37, 43, 44, 60)} == {
        19: (0, 7), 20: (0, 6), 21: (0, 2), 32: (0, 4), 33: (0, 2), 37: (0, 3), 43: (0, 2),
        44: (0, 1), 60: (0, 1)}


# -- CreateTopics ----------------------------------------------------------------------------

async def test_create_topics_v7_defaults(mc: MockCluster, client: RawClient) -> None:
    [result] = await create_topics(client, topic_spec("t", configs={"retention.ms": "1000"}))
    topic = mc.cluster.image.topics["t"]
    assert (result.name, result.error_code, result.error_message) == ("t", 0, None)
    assert (result.topic_id, result.num_partitions, result.replication_factor) == (
        topic.topic_id, 1, 3)
    assert result.topic_config_error_code == 0
    configs = by_name(result.configs)
    assert len(configs) == len(TOPIC_CONFIGS)
    assert dict(configs["retention.ms"]) == {"name": "retention.ms", "value": "1000",
                                             "read_only": False, "config_source": 1,
                                             "is_sensitive": False}
    assert dict(configs["cleanup.policy"]) == {"name": "cleanup.policy", "value": "delete",
                                               "read_only": False, "config_source": 5,
                                               "is_sensitive": False}
    assert list(topic.partitions) == [0]
    assert topic.partitions[0].replicas == (0, 1, 2)
    assert mc.cluster.topic_config("t")["retention.ms"] == "1000"
    for node in mc.cluster.brokers.values():  # every broker applied it
        assert "t" in node.image.topics


async def test_create_topics_counts_and_manual_assignment(mc: MockCluster,
                                                          client: RawClient) -> None:
    results = await create_topics(
        client, topic_spec("counted", 3, 2),
        topic_spec("manual", assignments={0: [2, 1], 1: [1, 0]}))
    assert [(r.name, r.error_code, r.num_partitions, r.replication_factor) for r in results] \
        == [("counted", 0, 3, 2), ("manual", 0, 2, 2)]
    counted = mc.cluster.image.topics["counted"].partitions
    assert [p.replicas for p in counted.values()] == [(0, 1), (1, 2), (2, 0)]
    assert [p.leader for p in counted.values()] == [0, 1, 2]
    manual = mc.cluster.image.topics["manual"].partitions
    assert [(p.replicas, p.leader, p.isr) for p in manual.values()] == [
        ((2, 1), 2, (2, 1)), ((1, 0), 1, (1, 0))]


async def test_create_topics_errors(mc: MockCluster, client: RawClient) -> None:
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
    assert sorted(mc.cluster.image.topics) == ["a_b", "exists"]


async def test_create_topics_validate_only(mc: MockCluster, client: RawClient) -> None:
    [result] = await create_topics(client, topic_spec("v", 4, configs={"segment.ms": "5000"}),
                                   validate_only=True)
    assert (result.error_code, result.topic_id, result.num_partitions,
            result.replication_factor) == (0, ZERO, 4, 3)
    assert by_name(result.configs)["segment.ms"].value == "5000"
    assert "v" not in mc.cluster.image.topics
    [bad] = await create_topics(client, topic_spec("v", 0), validate_only=True)
    assert bad.error_code == E.INVALID_PARTITIONS


async def test_create_topics_v0_v1(mc: MockCluster, client: RawClient) -> None:
    [ok, dup] = await create_topics(client, topic_spec("old", 2, 1), topic_spec("old", 2, 1)
                                    | {"name": "x"}, version=0)
    assert (ok.name, ok.error_code, dup.name, dup.error_code) == ("old", 0, "x", 0)
    assert len(mc.cluster.image.topics["old"].partitions) == 2
    [again] = await create_topics(client, topic_spec("old", 2, 1), version=1)
    assert (again.error_code, again.error_message) == (E.TOPIC_ALREADY_EXISTS,
                                                       "Topic 'old' already exists.")
    [checked] = await create_topics(client, topic_spec("new", 1, 1), version=1,
                                    validate_only=True)
    assert (checked.error_code, checked.error_message) == (0, None)
    assert "new" not in mc.cluster.image.topics


# -- DeleteTopics ----------------------------------------------------------------------------

async def test_delete_topics_v6(mc: MockCluster, client: RawClient) -> None:
    for name in ("t1", "t2", "t3", "t4"):
        await create_topic(client, name)
    t2_id = mc.cluster.image.topics["t2"].topic_id
    t4_id = mc.cluster.image.topics["t4"].topic_id
    t1_id = mc.cluster.image.topics["t1"].topic_id
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
    assert sorted(mc.cluster.image.topics) == ["t3"]


async def test_delete_topics_v6_successes_carry_name_and_id(mc: MockCluster,
                                                            client: RawClient) -> None:
    await create_topic(client, "a")
    await create_topic(client, "b")
    ids = {n: mc.cluster.image.topics[n].topic_id for n in ("a", "b")}
    response = await client.request(DELETE_TOPICS, 6, {"topics": [
        {"name": "a", "topic_id": ZERO}, {"name": None, "topic_id": ids["b"]}]})
    assert [(r.name, r.topic_id, r.error_code, r.error_message) for r in response.responses] \
        == [("a", ids["a"], 0, None), ("b", ids["b"], 0, None)]
    assert mc.cluster.image.topics == {}


async def test_delete_topics_v0_v5(mc: MockCluster, client: RawClient) -> None:
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
    assert mc.cluster.image.topics == {}
    assert not any(k for k in mc.cluster.logs)


# -- CreatePartitions ------------------------------------------------------------------------

async def test_create_partitions_v3(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "grow")
    await create_topic(client, "manual", 1, 2)
    response = await client.request(CREATE_PARTITIONS, 3, {"topics": [
        {"name": "grow", "count": 3, "assignments": None},
        {"name": "manual", "count": 3, "assignments": [{"broker_ids": [2, 0]},
                                                       {"broker_ids": [1, 2]}]},
    ], "timeout_ms": 5000, "validate_only": False})
    assert [(r.name, r.error_code, r.error_message) for r in response.results] == [
        ("grow", 0, None), ("manual", 0, None)]
    grow = mc.cluster.image.topics["grow"].partitions
    assert [p.replicas for p in grow.values()] == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    manual = mc.cluster.image.topics["manual"].partitions
    assert [p.replicas for p in manual.values()] == [(0, 1), (2, 0), (1, 2)]
    assert (mc.cluster.image.topics["grow"].topic_id, 2) in mc.cluster.logs
    # the new partition takes writes
    async with await leader_client(mc, "grow", 2) as leader:
        assert (await produce(leader, "grow", 2, [b"x"])).error_code == 0


async def test_create_partitions_errors(mc: MockCluster, client: RawClient) -> None:
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
        ("missing", E.UNKNOWN_TOPIC_OR_PARTITION,
         "This server does not host this topic-partition.")]
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
    assert len(mc.cluster.image.topics["t"].partitions) == 2


async def test_create_partitions_v0(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t")
    response = await client.request(CREATE_PARTITIONS, 0, {"topics": [
        {"name": "t", "count": 2, "assignments": None},
        {"name": "u", "count": 2, "assignments": None}], "timeout_ms": 1000})
    assert [(r.name, r.error_code) for r in response.results] == [
        ("t", 0), ("u", E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert len(mc.cluster.image.topics["t"].partitions) == 2


# -- DescribeCluster -------------------------------------------------------------------------

async def test_describe_cluster_v1(mc: MockCluster, client: RawClient) -> None:
    nodes = mc.cluster.brokers
    expected_brokers = [{"broker_id": i, "host": "127.0.0.1", "port": nodes[i].port,
                         "rack": None} for i in range(3)]
    plain = await client.request(DESCRIBE_CLUSTER, 1, {
        "include_cluster_authorized_operations": False, "endpoint_type": 1})
    assert {k: v for k, v in plain.items() if k != "brokers"} == {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "endpoint_type": 1,
        "cluster_id": mc.cluster.config.cluster_id, "controller_id": 0,
        "cluster_authorized_operations": -2147483648}
    assert [dict(b) for b in plain.brokers] == expected_brokers
    with_ops = await client.request(DESCRIBE_CLUSTER, 1, {
        "include_cluster_authorized_operations": True})
    assert with_ops.cluster_authorized_operations == 8096  # CREATE..IDEMPOTENT_WRITE bits
    controllers = await client.request(DESCRIBE_CLUSTER, 1, {"endpoint_type": 2})
    assert (controllers.error_code, controllers.brokers) == (E.MISMATCHED_ENDPOINT_TYPE, [])
    unknown = await client.request(DESCRIBE_CLUSTER, 1, {"endpoint_type": 7})
    assert (unknown.error_code, unknown.error_message) == (E.UNSUPPORTED_ENDPOINT_TYPE,
                                                           "Unsupported endpoint type 7")


async def test_describe_cluster_v0_after_fencing(mc: MockCluster, client: RawClient) -> None:
    fence(mc.cluster, 0)
    response = await client.request(DESCRIBE_CLUSTER, 0, {})
    assert [b.broker_id for b in response.brokers] == [1, 2]
    assert (response.error_code, response.controller_id, response.cluster_id) == (
        0, 1, mc.cluster.config.cluster_id)


# -- DeleteRecords ---------------------------------------------------------------------------

async def _earliest(client: RawClient, topic: str, partition: int) -> int:
    response = await client.request(LIST_OFFSETS, 7, {"replica_id": -1, "topics": [
        {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -2}]}]})
    return int(response.topics[0].partitions[0].offset)


async def test_delete_records_v2(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t", 2, 3)
    await create_topic(client, "compacted", 1, 3, {"cleanup.policy": "compact"})
    async with await leader_client(mc, "t", 1) as leader:
        for i in range(5):
            assert (await produce(leader, "t", 1, [b"v%d" % i])).error_code == 0

        async def delete(partition: int, offset: int, topic: str = "t",
                         via: RawClient = leader) -> tuple[int, int]:
            response = await via.request(DELETE_RECORDS, 2, {"topics": [
                {"name": topic, "partitions": [{"partition_index": partition,
                                                "offset": offset}]}], "timeout_ms": 1000})
            part = response.topics[0].partitions[0]
            assert (response.topics[0].name, part.partition_index) == (topic, partition)
            return part.error_code, part.low_watermark

        assert await delete(1, 3) == (0, 3)
        assert await _earliest(leader, "t", 1) == 3
        assert await delete(1, 1) == (0, 3)  # never backwards
        assert await delete(1, 6) == (E.OFFSET_OUT_OF_RANGE, -1)
        assert await delete(1, -5) == (E.OFFSET_OUT_OF_RANGE, -1)
        assert await delete(1, -1) == (0, 5)  # -1: the high watermark
        assert await delete(7, 0) == (E.UNKNOWN_TOPIC_OR_PARTITION, -1)
        assert await delete(0, 0, topic="nope") == (E.UNKNOWN_TOPIC_OR_PARTITION, -1)
        log = mc.cluster.log(mc.cluster.image.topics["t"].topic_id, 1)
        assert log is not None and (log.log_start_offset, log.log_end_offset) == (5, 5)
        follower = next(b for b in range(3) if b != mc.cluster.image.partition("t", 1).leader)
        async with await connect_broker(mc, follower) as other:
            assert await delete(1, 5, via=other) == (E.NOT_LEADER_OR_FOLLOWER, -1)
    async with await leader_client(mc, "compacted", 0) as leader:
        response = await leader.request(DELETE_RECORDS, 2, {"topics": [
            {"name": "compacted", "partitions": [{"partition_index": 0, "offset": 0}]}]})
        assert response.topics[0].partitions[0].error_code == E.POLICY_VIOLATION


async def test_delete_records_v0(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t", 1, 3)
    assert (await produce(client, "t", 0, [b"a", b"b", b"c"])).error_code == 0
    response = await client.request(DELETE_RECORDS, 0, {"topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "offset": 2}]}],
        "timeout_ms": 1000})
    assert [dict(p) for p in response.topics[0].partitions] == [
        {"partition_index": 0, "low_watermark": 2, "error_code": 0}]


# -- ElectLeaders ----------------------------------------------------------------------------

async def _elect(client: RawClient, election: int | None,
                 partitions: dict[str, list[int]] | None, version: int = 2) -> object:
    body: dict[str, object] = {"timeout_ms": 1000, "topic_partitions": None if partitions is None
                               else [{"topic": t, "partitions": p}
                                     for t, p in partitions.items()]}
    if election is not None:
        body["election_type"] = election
    return await client.request(ELECT_LEADERS, version, body)


def _results(response: object) -> dict[tuple[str, int], tuple[int, str | None]]:
    return {(t.topic, p.partition_id): (p.error_code, p.error_message)
            for t in response.replica_election_results  # type: ignore[attr-defined]
            for p in t.partition_result}


async def test_elect_leaders_preferred_v2(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t", 3, 3)
    cluster = mc.cluster
    cluster.elect_leader("t", 0, 1)
    cluster.elect_leader("t", 2, 0)
    response = await _elect(client, 0, {"t": [0, 1, 2], "nope": [0]})
    assert response.error_code == 0  # type: ignore[attr-defined]
    assert _results(response) == {
        ("t", 0): (0, None),
        ("t", 1): (E.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
        ("t", 2): (0, None),
        ("nope", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nope")}
    parts = cluster.image.topics["t"].partitions
    assert [(p.leader, p.leader_epoch) for p in parts.values()] == [(0, 2), (1, 0), (2, 2)]
    log = cluster.log(cluster.image.topics["t"].topic_id, 0)
    assert log is not None and log.epoch_cache[-1][0] == 2
    assert all(node.image.partition("t", 0).leader == 0 for node in cluster.brokers.values())
    missing = await _elect(client, 0, {"t": [9]})
    assert _results(missing) == {("t", 9): (E.UNKNOWN_TOPIC_OR_PARTITION,
                                            "No such partition as t-9")}


async def test_elect_leaders_preferred_not_available(mc: MockCluster,
                                                     client: RawClient) -> None:
    await create_topic(client, "t", 2, 3)
    cluster = mc.cluster
    cluster.elect_leader("t", 0, 1)
    cluster.set_isr("t", 0, [1, 2])  # preferred replica 0 out of sync
    cluster.elect_leader("t", 1, 2)
    fence(cluster, 1)  # preferred replica of partition 1 not alive
    response = await _elect(client, 0, {"t": [0, 1]}, version=1)
    message = "The preferred leader was not available."
    assert _results(response) == {("t", 0): (E.PREFERRED_LEADER_NOT_AVAILABLE, message),
                                  ("t", 1): (E.PREFERRED_LEADER_NOT_AVAILABLE, message)}
    assert [p.leader for p in cluster.image.topics["t"].partitions.values()] == [1, 2]


async def test_elect_leaders_unclean(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t", 3, 3)
    await create_topics(client, topic_spec("solo", assignments={0: [0]}))
    cluster = mc.cluster
    cluster.set_isr("t", 0, [0])  # p0: leader 0 alone in sync
    cluster.elect_leader("t", 2, 0)  # p2: leader 0, others in sync
    fence(cluster, 0)
    response = await _elect(client, 1, {"t": [0, 1, 2], "solo": [0]})
    assert _results(response) == {
        ("t", 0): (0, None),
        ("t", 1): (E.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
        ("t", 2): (0, None),
        ("solo", 0): (E.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                      "Eligible topic partition leaders are not available.")}
    p0, p1, p2 = (cluster.image.partition("t", i) for i in range(3))
    assert p0 is not None and (p0.leader, p0.isr, p0.leader_epoch) == (1, (1,), 1)
    assert p1 is not None and (p1.leader, p1.leader_epoch) == (1, 0)
    # p2's ISR still had live members, so the election was clean
    assert p2 is not None and (p2.leader, p2.isr, p2.leader_epoch) == (2, (2, 0, 1), 2)


async def test_elect_leaders_all_partitions(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "a", 2, 3)
    await create_topic(client, "b", 1, 3)
    mc.cluster.elect_leader("a", 1, 2)
    response = await _elect(client, 0, None)
    assert [(t.topic, [dict(p) for p in t.partition_result])
            for t in response.replica_election_results] == [  # type: ignore[attr-defined]
        ("a", [{"partition_id": 1, "error_code": 0, "error_message": None}]), ("b", [])]
    assert mc.cluster.image.partition("a", 1).leader == 1


async def test_elect_leaders_v0_and_bad_type(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t", 1, 3)
    mc.cluster.elect_leader("t", 0, 2)
    response = await _elect(client, None, {"t": [0]}, version=0)
    assert _results(response) == {("t", 0): (0, None)}
    assert mc.cluster.image.partition("t", 0).leader == 0
    bad = await _elect(client, 5, {"t": [0]})
    assert bad.error_code == E.INVALID_REQUEST  # type: ignore[attr-defined]
    assert _results(bad) == {("t", 0): (E.INVALID_REQUEST, "Unknown election type 5")}


async def test_raw_client_sees_the_broker_close(mc: MockCluster, client: RawClient) -> None:
    assert not await client.is_closed(timeout=0.2)  # a good connection stays open
    frame = bytes.fromhex("7fff0000" "00000001" "ffff")  # api key 32767, no client id
    await client.send_raw(len(frame).to_bytes(4, "big") + frame)
    assert await client.is_closed(timeout=2.0)
