"""Produce's opt-in tagged fields over the wire (KIP-359 and KIP-253; docs/extensions.md).

A raw codec client sends Produce v9 with mockbroker's extensions: CurrentLeaderEpoch per
partition (tag 16384, KIP-359: older -> FENCED_LEADER_EPOCH 74, newer ->
UNKNOWN_LEADER_EPOCH 75, absent -> no check) and PartitionCount per topic (tag 16385,
KIP-253: a mismatch -> INVALID_PARTITIONS 37 for every partition of the topic). CreatePartitions
over the wire bumps the leader epochs of the existing partitions, so a producer holding the
old epoch is fenced, and one holding the old partition count is refused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec import Struct, api, codec_for, encode_request
from kafka_protocol_codec.api import generated_messages
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.embedded import MockCluster
from tests.support.admin import CREATE_PARTITIONS
from tests.support.rawclient import connect_broker

PRODUCE, METADATA = 0, 3
TOPIC = "extended"
FENCED, UNKNOWN_EPOCH = ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH
INVALID_PARTITIONS, NOT_LEADER = ErrorCode.INVALID_PARTITIONS, ErrorCode.NOT_LEADER_OR_FOLLOWER


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=3) as cluster:
        cluster.cluster.create_topic(TOPIC, 2, 3)
        yield cluster


def _partition(index: int, epoch: int | None) -> dict[str, Any]:
    data: dict[str, Any] = {"index": index, "records": bytes(build_batch(
        [RecordSpec(value=b"v", key=b"k")], base_timestamp=1_000))}
    if epoch is not None:
        data["current_leader_epoch"] = epoch
    return data


async def produce(mc: MockCluster, broker: int, partitions: list[dict[str, Any]],
                  count: int | None = None, version: int = 9) -> list[Struct]:
    topic: dict[str, Any] = {"name": TOPIC, "partition_data": partitions}
    if count is not None:
        topic["partition_count"] = count
    async with await connect_broker(mc, broker) as client:
        response = await client.request(PRODUCE, version, {
            "acks": -1, "timeout_ms": 5000, "topic_data": [topic]})
    [result] = response.responses
    return list(result.partition_responses)


def leader(mc: MockCluster, partition: int = 0) -> tuple[int, int]:
    part = mc.cluster.image.partition(TOPIC, partition)
    assert part is not None
    return part.leader, part.leader_epoch


def log_end(mc: MockCluster, partition: int = 0) -> int:
    log = mc.cluster.log(mc.cluster.image.topics[TOPIC].topic_id, partition)
    assert log is not None
    return log.log_end_offset


# -- KIP-359: CurrentLeaderEpoch ---------------------------------------------------------------

async def test_current_leader_epoch_is_checked_before_leadership(mc: MockCluster) -> None:
    mc.cluster.elect_leader(TOPIC, 0)
    broker, epoch = leader(mc)
    assert epoch == 1
    outcomes = {}
    for sent in (None, epoch - 1, epoch + 1, epoch):
        before = log_end(mc)
        [result] = await produce(mc, broker, [_partition(0, sent)])
        outcomes[sent] = result.error_code
        written = log_end(mc) - before
        assert written == (1 if result.error_code == 0 else 0)
    assert outcomes == {None: 0, epoch - 1: FENCED, epoch + 1: UNKNOWN_EPOCH, epoch: 0}
    # on a follower: an old epoch is fenced first; the current one meets NOT_LEADER
    follower = next(b for b in range(3) if b != broker)
    [old] = await produce(mc, follower, [_partition(0, epoch - 1)])
    [current] = await produce(mc, follower, [_partition(0, epoch)])
    assert (old.error_code, current.error_code) == (FENCED, NOT_LEADER)


async def test_each_partition_is_checked_on_its_own(mc: MockCluster) -> None:
    b0, e0 = leader(mc, 0)
    b1, e1 = leader(mc, 1)
    if b0 != b1:
        mc.cluster.elect_leader(TOPIC, 1, b0)
        e1 += 1
    results = await produce(mc, b0, [_partition(0, e0 + 3), _partition(1, e1)])
    assert [r.error_code for r in results] == [UNKNOWN_EPOCH, 0]


async def test_a_paused_broker_judges_by_its_own_stale_epoch(mc: MockCluster) -> None:
    broker, epoch = leader(mc)
    mc.cluster.brokers[broker].paused = True
    mc.cluster.elect_leader(TOPIC, 0, broker)  # same leader, epoch + 1, unseen by the broker
    # the producer's newer epoch is unknown to the stale leader: back off and retry
    [result] = await produce(mc, broker, [_partition(0, epoch + 1)])
    assert result.error_code == UNKNOWN_EPOCH
    mc.cluster.brokers[broker].paused = False
    mc.cluster.propagate()
    [result] = await produce(mc, broker, [_partition(0, epoch + 1)])
    assert result.error_code == 0


async def test_versions_without_tagged_fields_are_not_checked(mc: MockCluster) -> None:
    broker, epoch = leader(mc)
    # v8 is not flexible: the field cannot be sent (the encoder leaves it out), so no check
    [result] = await produce(mc, broker, [_partition(0, epoch + 5)], count=7, version=8)
    assert result.error_code == 0


# -- KIP-253: PartitionCount and expansion ------------------------------------------------------

async def test_partition_count_mismatch_rejects_the_whole_topic(mc: MockCluster) -> None:
    broker, _ = leader(mc)
    ok = await produce(mc, broker, [_partition(0, None)], count=2)
    assert [r.error_code for r in ok] == [0]
    stale = await produce(mc, broker, [_partition(0, None), _partition(1, None)], count=1)
    assert [r.error_code for r in stale] == [INVALID_PARTITIONS] * 2
    assert all("stale" in r.error_message for r in stale)
    ahead = await produce(mc, broker, [_partition(0, None)], count=3)
    assert [r.error_code for r in ahead] == [INVALID_PARTITIONS]
    assert "behind" in ahead[0].error_message


async def test_create_partitions_fences_old_epochs_and_counts(mc: MockCluster) -> None:
    broker, epoch = leader(mc)
    async with await connect_broker(mc, 1) as client:
        response = await client.request(CREATE_PARTITIONS, 3, {
            "topics": [{"name": TOPIC, "count": 4, "assignments": None}],
            "timeout_ms": 5000, "validate_only": False})
    assert response.results[0].error_code == 0
    broker, new_epoch = leader(mc)
    assert new_epoch == epoch + 1
    topic = mc.cluster.image.topics[TOPIC]
    assert [p.leader_epoch for _, p in sorted(topic.partitions.items())] == [1, 1, 0, 0]
    assert dict(topic.partitions[3].prior_leader_epochs) == {0: 0, 1: 0}
    [old] = await produce(mc, broker, [_partition(0, epoch)], count=4)
    [stale] = await produce(mc, broker, [_partition(0, new_epoch)], count=2)
    [fresh] = await produce(mc, broker, [_partition(0, new_epoch)], count=4)
    assert (old.error_code, stale.error_code, fresh.error_code) == (
        FENCED, INVALID_PARTITIONS, 0)
    # Metadata shows the new epochs to clients (KIP-232)
    async with await connect_broker(mc, 2) as client:
        meta = await client.request(METADATA, 12, {
            "topics": [{"name": TOPIC, "topic_id": topic.topic_id}],
            "allow_auto_topic_creation": False})
    epochs = [p.leader_epoch for p in meta.topics[0].partitions]
    assert epochs == [1, 1, 0, 0]


# -- the wire format ------------------------------------------------------------------------

def test_extensions_are_tagged_fields_kafka_skips() -> None:
    partition: dict[str, Any] = {"index": 0, "records": b"", "current_leader_epoch": 7}
    topic: dict[str, Any] = {"name": "t", "partition_count": 3, "partition_data": [partition]}
    body = {"acks": 1, "timeout_ms": 1, "topic_data": [topic]}
    extended = api(PRODUCE).request_codec(9)
    plain = codec_for(generated_messages(PRODUCE)[0], 9)
    wire = bytes(extended.encode(body))
    # tag 16384 is the varint 80 80 01, then the size 4 and the int32
    assert bytes.fromhex("808001" "04" "00000007") in wire
    assert bytes.fromhex("818001" "04" "00000003") in wire  # tag 16385, PartitionCount 3
    decoded = plain.decode(wire)  # Kafka's own schema skips the unknown tags
    assert decoded.topic_data[0].partition_data[0].index == 0
    assert "current_leader_epoch" not in decoded.topic_data[0].partition_data[0]
    # without the fields the bytes are exactly Kafka's
    del topic["partition_count"], partition["current_leader_epoch"]
    assert bytes(extended.encode(body)) == bytes(plain.encode(body))
    frame = encode_request(PRODUCE, 9, body, correlation_id=1)
    assert frame.endswith(bytes(plain.encode(body)))
