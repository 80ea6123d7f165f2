"""ListOffsets in-process: earliest, latest, by timestamp and max timestamp, with the leader
epoch in which the returned offset was written (v4+)."""

from __future__ import annotations

from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from tests.support.handlers import HandlerHarness

PRODUCE, LIST_OFFSETS = 0, 2
TOPIC = "offsets"
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


async def produce(harness: HandlerHarness, timestamps: list[int]) -> int:
    leader = harness.leader(TOPIC)
    batch = build_batch([RecordSpec(value=b"v%d" % t, timestamp=t) for t in timestamps])
    response = await harness.call(leader, PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
    assert response is not None
    part = response.responses[0].partition_responses[0]
    assert part.error_code == ErrorCode.NONE
    return int(part.base_offset)


async def list_offsets(harness: HandlerHarness, timestamp: int, version: int = 7,
                       broker: int | None = None, **fields: Any) -> Struct:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp,
         "max_num_offsets": 1, **fields}]}]}
    target = harness.leader(TOPIC) if broker is None else broker
    response = await harness.call(target, LIST_OFFSETS, version, body)
    assert response is not None
    [topic] = response.topics
    assert topic.name == TOPIC
    [part] = topic.partitions
    assert part.partition_index == 0
    return part


def answer(part: Struct) -> tuple[int, int, int, int]:
    return part.error_code, part.offset, part.timestamp, part.leader_epoch


@pytest.fixture
async def two_epochs(harness: HandlerHarness) -> HandlerHarness:
    """Offsets 0-2 written in epoch 0 (timestamps 1000-1002), offsets 3-4 in epoch 1
    (timestamps 5000 then 3000: not in order, as CreateTime allows)."""
    harness.cluster.create_topic(TOPIC, 1)
    assert await produce(harness, [1_000, 1_001, 1_002]) == 0
    harness.cluster.elect_leader(TOPIC, 0)
    assert harness.leader_epoch(TOPIC) == 1
    assert await produce(harness, [5_000, 3_000]) == 3
    return harness


async def test_earliest_and_latest(two_epochs: HandlerHarness) -> None:
    harness = two_epochs
    # latest: the high watermark, in the current epoch; earliest: offset 0, written in epoch 0
    assert answer(await list_offsets(harness, LATEST)) == (ErrorCode.NONE, 5, -1, 1)
    assert answer(await list_offsets(harness, EARLIEST)) == (ErrorCode.NONE, 0, -1, 0)


async def test_by_timestamp_finds_the_first_record_at_or_after_it(
        two_epochs: HandlerHarness) -> None:
    harness = two_epochs
    assert answer(await list_offsets(harness, 1_001)) == (ErrorCode.NONE, 1, 1_001, 0)
    assert answer(await list_offsets(harness, 0)) == (ErrorCode.NONE, 0, 1_000, 0)
    assert answer(await list_offsets(harness, 1_500)) == (ErrorCode.NONE, 3, 5_000, 1)
    assert answer(await list_offsets(harness, 3_000)) == (ErrorCode.NONE, 3, 5_000, 1)
    # nothing that late: no offset, no timestamp, no epoch
    assert answer(await list_offsets(harness, 6_000)) == (ErrorCode.NONE, -1, -1, -1)


async def test_max_timestamp_from_v7(two_epochs: HandlerHarness) -> None:
    harness = two_epochs
    assert answer(await list_offsets(harness, MAX_TIMESTAMP)) == (ErrorCode.NONE, 3, 5_000, 1)
    older = await list_offsets(harness, MAX_TIMESTAMP, version=6)
    assert older.error_code == ErrorCode.UNSUPPORTED_VERSION


async def test_old_versions(two_epochs: HandlerHarness) -> None:
    harness = two_epochs
    v0 = await list_offsets(harness, LATEST, version=0)
    assert (v0.error_code, list(v0.old_style_offsets)) == (ErrorCode.NONE, [5])
    v0_none = await list_offsets(harness, LATEST, version=0, max_num_offsets=0)
    assert list(v0_none.old_style_offsets) == []
    v1 = await list_offsets(harness, 1_002, version=1)
    assert (v1.error_code, v1.offset, v1.timestamp) == (ErrorCode.NONE, 2, 1_002)


async def test_followers_and_unknown_partitions(two_epochs: HandlerHarness) -> None:
    harness = two_epochs
    leader = harness.leader(TOPIC)
    for follower in (b for b in harness.cluster.brokers if b != leader):
        refused = await list_offsets(harness, LATEST, broker=follower)
        assert answer(refused) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1, -1)
    response = await harness.call(leader, LIST_OFFSETS, 7, {"replica_id": -1, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 4, "timestamp": LATEST}]},
        {"name": "nope", "partitions": [{"partition_index": 0, "timestamp": LATEST}]}]})
    assert response is not None
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in response.topics] == [
        (TOPIC, [(4, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
        ("nope", [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])]


EARLIEST_LOCAL, LATEST_TIERED = -4, -5


@pytest.mark.parametrize("version", [8, 9, 10])
async def test_earliest_local_is_the_log_start_from_v8(two_epochs: HandlerHarness,
                                                       version: int) -> None:
    harness = two_epochs
    assert answer(await list_offsets(harness, EARLIEST_LOCAL, version=version)) == (
        ErrorCode.NONE, 0, -1, 0)
    log = harness.cluster.log(harness.cluster.image.topics[TOPIC].topic_id, 0)
    assert log is not None
    log.delete_records_before(4)  # the log start moves into epoch 1
    assert answer(await list_offsets(harness, EARLIEST_LOCAL, version=version)) == (
        ErrorCode.NONE, 4, -1, 1)
    assert answer(await list_offsets(harness, EARLIEST, version=version)) == (
        ErrorCode.NONE, 4, -1, 1)
    older = await list_offsets(harness, EARLIEST_LOCAL, version=7)
    assert older.error_code == ErrorCode.UNSUPPORTED_VERSION


async def test_latest_tiered_without_tiered_storage_from_v9(two_epochs: HandlerHarness) -> None:
    harness = two_epochs
    for version in (9, 10):
        tiered = await list_offsets(harness, LATEST_TIERED, version=version)
        assert answer(tiered) == (ErrorCode.NONE, -1, -1, -1)
    older = await list_offsets(harness, LATEST_TIERED, version=8)
    assert older.error_code == ErrorCode.UNSUPPORTED_VERSION
    # max timestamp still answers at v10
    assert answer(await list_offsets(harness, MAX_TIMESTAMP, version=10)) == (
        ErrorCode.NONE, 3, 5_000, 1)
