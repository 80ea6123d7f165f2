"""Admin APIs over the wire: DescribeCluster, DeleteRecords, ElectLeaders (configs are in
test_admin_configs.py; CreateTopics, DeleteTopics and CreatePartitions are tested in-process
in tests/handlers/test_admin_topics.py), each at its newest version and an old one, with
exact expected answers."""

from __future__ import annotations

from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.embedded import MockCluster
from tests.support.admin import (
    API_VERSIONS,
    DELETE_RECORDS,
    DESCRIBE_CLUSTER,
    ELECT_LEADERS,
    LIST_OFFSETS,
    create_topic,
    create_topics,
    fence,
    leader_client,
    produce,
    topic_spec,
)
from tests.support.rawclient import RawClient, connect_broker


async def test_advertised_versions(client: RawClient) -> None:
    """Kafka 4.0's ranges by default: KIP-896 raised CreateTopics to v2, DeleteTopics and
    DescribeConfigs to v1."""
    response = await client.request(API_VERSIONS, 3, {"client_software_name": "t",
                                                      "client_software_version": "1"})
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert {key: ranges[key] for key in (19, 20, 21, 32, 33, 37, 43, 44, 60)} == {
        19: (2, 7), 20: (1, 6), 21: (0, 2), 32: (1, 4), 33: (0, 2), 37: (0, 3), 43: (0, 2),
        44: (0, 1), 60: (0, 1)}


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
