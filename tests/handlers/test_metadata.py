"""Metadata in-process: brokers, leaders and leader epochs from each broker's own image,
topic selection by version, and auto-creation."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from tests.support.admin import fence
from tests.support.handlers import FIRST_PORT, HOST, HandlerHarness

METADATA = 3
ZERO = uuid.UUID(int=0)
UNSET_OPERATIONS = -2147483648


def v12_body(*names: str, allow_create: bool = False) -> dict[str, Any]:
    return {"topics": [{"topic_id": ZERO, "name": n} for n in names],
            "allow_auto_topic_creation": allow_create,
            "include_topic_authorized_operations": False}


async def metadata(harness: HandlerHarness, broker: int, body: dict[str, Any],
                   version: int = 12) -> Struct:
    response = await harness.call(broker, METADATA, version, body)
    assert response is not None
    return response


def partition_rows(topic: Struct) -> list[tuple[int, int, int, list[int], list[int]]]:
    """(index, leader, leader epoch, replicas, isr) per partition, in index order."""
    return [(p.partition_index, p.leader_id, p.leader_epoch, list(p.replica_nodes),
             list(p.isr_nodes)) for p in topic.partitions]


async def test_every_broker_reports_brokers_controller_and_leaders(
        harness: HandlerHarness) -> None:
    cluster = harness.cluster
    created = cluster.create_topic("orders", 3)
    assert created is not None
    for broker in cluster.brokers:
        response = await metadata(harness, broker, v12_body("orders"))
        assert [dict(b) for b in response.brokers] == [
            {"node_id": i, "host": HOST, "port": FIRST_PORT + i, "rack": None}
            for i in range(3)]
        assert response.cluster_id == cluster.config.cluster_id
        assert response.controller_id == 0  # the lowest live broker, as KRaft brokers answer
        assert response.throttle_time_ms == 0
        [topic] = response.topics
        assert (topic.error_code, topic.name, topic.topic_id, topic.is_internal) == (
            ErrorCode.NONE, "orders", created.topic_id, False)
        assert topic.topic_authorized_operations == UNSET_OPERATIONS
        # round-robin placement over brokers 0-2, the first replica leads, all in sync
        assert partition_rows(topic) == [
            (0, 0, 0, [0, 1, 2], [0, 1, 2]),
            (1, 1, 0, [1, 2, 0], [1, 2, 0]),
            (2, 2, 0, [2, 0, 1], [2, 0, 1])]
        assert all(p.error_code == ErrorCode.NONE and list(p.offline_replicas) == []
                   for p in topic.partitions)


async def test_elections_raise_the_epoch_and_a_paused_broker_keeps_its_view(
        harness: HandlerHarness) -> None:
    cluster = harness.cluster
    cluster.create_topic("orders", 1)
    assert cluster.elect_leader("orders", 0, 1) == 1
    for broker in cluster.brokers:
        [topic] = (await metadata(harness, broker, v12_body("orders"))).topics
        assert partition_rows(topic)[0][:3] == (0, 1, 1)

    cluster.brokers[2].paused = True  # broker 2 stops applying the metadata log
    assert cluster.elect_leader("orders", 0, 2) == 2
    [fresh] = (await metadata(harness, 0, v12_body("orders"))).topics
    [stale] = (await metadata(harness, 2, v12_body("orders"))).topics
    assert partition_rows(fresh)[0][:3] == (0, 2, 2)
    assert partition_rows(stale)[0][:3] == (0, 1, 1)  # KIP-232: the epoch shows it is older

    cluster.brokers[2].paused = False
    cluster.propagate()
    [caught_up] = (await metadata(harness, 2, v12_body("orders"))).topics
    assert partition_rows(caught_up)[0][:3] == (0, 2, 2)


async def test_a_fenced_broker_is_not_listed_and_its_replicas_are_offline(
        harness: HandlerHarness) -> None:
    harness.cluster.create_topic("t", 1, assignments=[[0, 2]])
    fence(harness.cluster, 2)
    response = await metadata(harness, 0, v12_body("t"))
    assert [b.node_id for b in response.brokers] == [0, 1]
    [p] = response.topics[0].partitions
    assert (p.leader_id, list(p.offline_replicas)) == (0, [2])


async def test_answers_follow_fencing_and_expansion_after_an_earlier_answer(
        harness: HandlerHarness) -> None:
    """Partition entries are reused between answers: every change must still show."""
    cluster = harness.cluster
    cluster.create_topic("t", 2, assignments=[[0, 2], [1, 2]])
    for version in (1, 12):  # both before the changes, so both have been answered once
        [topic] = (await metadata(harness, 0, v12_body("t"), version)).topics
        assert [list(p.offline_replicas) for p in topic.partitions] == [[], []]
    fence(cluster, 2)
    [topic] = (await metadata(harness, 0, v12_body("t"))).topics
    assert [list(p.offline_replicas) for p in topic.partitions] == [[2], [2]]
    cluster.controller.unfence_broker(2)
    cluster.propagate()
    [topic] = (await metadata(harness, 0, {"topics": None}, 1)).topics
    assert [list(p.offline_replicas) for p in topic.partitions] == [[], []]
    cluster.create_partitions("t", 3)
    [topic] = (await metadata(harness, 0, v12_body("t"))).topics
    assert [p.partition_index for p in topic.partitions] == [0, 1, 2]
    epoch = topic.partitions[0].leader_epoch
    assert cluster.elect_leader("t", 0, 2) == 2
    [topic] = (await metadata(harness, 0, {"topics": None}, 9)).topics
    assert partition_rows(topic)[0][:3] == (0, 2, epoch + 1)


async def test_which_topics_by_version(harness: HandlerHarness) -> None:
    for name in ("b", "a", "c"):
        harness.cluster.create_topic(name, 1)
    v0_all = await metadata(harness, 0, {"topics": []}, version=0)  # v0: empty means all
    assert [t.name for t in v0_all.topics] == ["a", "b", "c"]
    v1_all = await metadata(harness, 0, {"topics": None}, version=1)  # v1+: null means all
    assert [t.name for t in v1_all.topics] == ["a", "b", "c"]
    v1_none = await metadata(harness, 0, {"topics": []}, version=1)
    assert v1_none.topics == []
    v12_some = await metadata(harness, 0, v12_body("c", "a"))
    assert [t.name for t in v12_some.topics] == ["c", "a"]  # request order
    by_id = await metadata(harness, 0, {"topics": [
        {"topic_id": harness.cluster.image.topics["b"].topic_id, "name": None}]})
    assert [(t.name, t.error_code) for t in by_id.topics] == [("b", ErrorCode.NONE)]
    ghost = uuid.uuid4()
    unknown_id = await metadata(harness, 0, {"topics": [{"topic_id": ghost, "name": None}]})
    assert [(t.name, t.topic_id, t.error_code) for t in unknown_id.topics] == [
        (None, ghost, ErrorCode.UNKNOWN_TOPIC_ID)]


async def test_auto_creation_when_request_and_cluster_allow_it(
        harness: HandlerHarness) -> None:
    cluster = harness.cluster
    refused = await metadata(harness, 1, v12_body("fresh", allow_create=False))
    assert [(t.name, t.error_code, t.partitions) for t in refused.topics] == [
        ("fresh", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
    assert "fresh" not in cluster.image.topics

    creating = await metadata(harness, 1, v12_body("fresh", allow_create=True))
    # Kafka answers the creating request from metadata that lacks the topic yet
    assert [(t.name, t.error_code, t.partitions) for t in creating.topics] == [
        ("fresh", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
    created = await metadata(harness, 1, v12_body("fresh", allow_create=True))
    [topic] = created.topics
    assert (topic.name, topic.error_code) == ("fresh", ErrorCode.NONE)
    assert topic.topic_id == cluster.image.topics["fresh"].topic_id
    # the cluster's defaults: one partition, replication factor min(3, brokers)
    assert partition_rows(topic) == [(0, 0, 0, [0, 1, 2], [0, 1, 2])]

    v3 = await metadata(harness, 2, {"topics": [{"name": "implicit"}]}, version=3)
    assert [(t.name, t.error_code) for t in v3.topics] == [
        ("implicit", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert "implicit" in cluster.image.topics  # before v4 a request cannot refuse creation

    illegal = await metadata(harness, 0, v12_body("bad name!", allow_create=True))
    assert [(t.name, t.error_code) for t in illegal.topics] == [
        ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION)]
    assert sorted(cluster.image.topics) == ["fresh", "implicit"]


@pytest.mark.parametrize("version", [4, 12])
async def test_no_auto_creation_when_the_cluster_forbids_it(version: int) -> None:
    harness = HandlerHarness(brokers=1, auto_create_topics=False)
    body: dict[str, Any] = v12_body("fresh", allow_create=True) if version == 12 else {
        "topics": [{"name": "fresh"}], "allow_auto_topic_creation": True}
    response = await metadata(harness, 0, body, version=version)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("fresh", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert harness.cluster.image.topics == {}
