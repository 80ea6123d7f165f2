"""Produce then Fetch in-process: offsets, watermarks and the records exactly as written.

Fetch answers with the stored batches unchanged except for the base offset and partition
leader epoch the leader patched in, so decoding them gives back every key, value, header and
timestamp the producer sent.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import (
    DecodedBatch,
    Header,
    RecordSpec,
    TimestampType,
    build_batch,
    decode_batch,
)

from tests.support.handlers import HandlerHarness

PRODUCE, FETCH = 0, 1
TOPIC = "events"


def produce_body(records: bytes, partition: int = 0, acks: int = -1,
                 topic: str = TOPIC, transactional_id: str | None = None) -> dict[str, Any]:
    return {"transactional_id": transactional_id, "acks": acks, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": records}]}]}


def fetch_body(offset: int, partition: int = 0, topic: str = TOPIC,
               epoch: int = -1) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 24,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "current_leader_epoch": epoch, "fetch_offset": offset,
                 "last_fetched_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


async def produce(harness: HandlerHarness, broker: int, records: bytes,
                  version: int = 9, **kwargs: Any) -> Struct:
    response = await harness.call(broker, PRODUCE, version, produce_body(records, **kwargs))
    assert response is not None
    [topic] = response.responses
    [part] = topic.partition_responses
    return part


async def fetch(harness: HandlerHarness, broker: int, offset: int, version: int = 12,
                **kwargs: Any) -> Struct:
    response = await harness.call(broker, FETCH, version, fetch_body(offset, **kwargs))
    assert response is not None and response.error_code == ErrorCode.NONE
    [topic] = response.responses
    [part] = topic.partitions
    return part


def batches(records: bytes | None) -> list[DecodedBatch]:
    return [decode_batch(b) for b in split_batches(records or b"")]


FIRST = [RecordSpec(key=b"k0", value=b"v0", headers=[("trace", b"t0")], timestamp=1_000),
         RecordSpec(key=None, value=b"v1", timestamp=1_001),
         RecordSpec(key=b"k2", value=None, headers=[("a", b"1"), ("b", None)],
                    timestamp=1_002)]
SECOND = [RecordSpec(key=b"k3", value=b"v3", timestamp=2_000),
          RecordSpec(key=b"k4", value=b"v4", timestamp=2_001)]


@pytest.mark.parametrize("fetch_version", [4, 11, 12])
async def test_round_trip_offsets_and_records(harness: HandlerHarness,
                                              fetch_version: int) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    leader = harness.leader(TOPIC)
    first = await produce(harness, leader, build_batch(FIRST))
    assert dict(first) == {"index": 0, "error_code": ErrorCode.NONE, "base_offset": 0,
                           "log_append_time_ms": -1, "log_start_offset": 0,
                           "record_errors": [], "error_message": None,
                           # a tagged field of later versions, decoded at its default
                           "current_leader": {"leader_id": -1, "leader_epoch": -1}}
    second = await produce(harness, leader, build_batch(SECOND))
    assert (second.error_code, second.base_offset) == (ErrorCode.NONE, 3)

    part = await fetch(harness, leader, 0, version=fetch_version)
    log_start = 0 if fetch_version >= 5 else -1  # the field exists from Fetch v5
    assert (part.partition_index, part.error_code, part.high_watermark,
            part.last_stable_offset, part.log_start_offset) == (0, ErrorCode.NONE, 5, 5,
                                                                log_start)
    got = batches(part.records)
    assert [(b.base_offset, b.last_offset, b.header.partition_leader_epoch) for b in got] == [
        (0, 2, 0), (3, 4, 0)]
    records = [r for b in got for r in b.records]
    assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == [
        (0, 1_000, b"k0", b"v0"), (1, 1_001, None, b"v1"), (2, 1_002, b"k2", None),
        (3, 2_000, b"k3", b"v3"), (4, 2_001, b"k4", b"v4")]
    assert [r.headers for r in records] == [
        [Header("trace", b"t0")], [], [Header("a", b"1"), Header("b", None)], [], []]
    assert all(b.timestamp_type == TimestampType.CREATE_TIME for b in got)


async def test_fetch_positions(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    leader = harness.leader(TOPIC)
    await produce(harness, leader, build_batch(FIRST))
    await produce(harness, leader, build_batch(SECOND))

    from_second = await fetch(harness, leader, 3)
    assert [[r.value for r in b.records] for b in batches(from_second.records)] == [
        [b"v3", b"v4"]]
    # mid-batch: the whole batch comes back (clients skip the records before their offset)
    mid = await fetch(harness, leader, 4)
    assert [b.base_offset for b in batches(mid.records)] == [3]
    at_end = await fetch(harness, leader, 5)
    assert (at_end.error_code, at_end.high_watermark, batches(at_end.records)) == (
        ErrorCode.NONE, 5, [])
    beyond = await fetch(harness, leader, 6)
    assert (beyond.error_code, beyond.high_watermark, beyond.log_start_offset) == (
        ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1)


async def test_followers_refuse_produce_and_fetch_before_v11(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    leader = harness.leader(TOPIC)
    for follower in (b for b in harness.cluster.brokers if b != leader):
        refused = await produce(harness, follower, build_batch(FIRST))
        assert (refused.error_code, refused.base_offset) == (
            ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
        fetched = await fetch(harness, follower, 0, version=10)
        assert fetched.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        # KIP-392: from v11 a consumer's read is served by any replica (here: empty)
        served = await fetch(harness, follower, 0, version=11)
        assert (served.error_code, served.high_watermark) == (ErrorCode.NONE, 0)
    assert (await fetch(harness, leader, 0)).high_watermark == 0  # nothing was written


async def test_unknown_topic_or_partition(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    missing = await produce(harness, 0, build_batch(FIRST), topic="nope")
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    beyond = await produce(harness, 0, build_batch(FIRST), partition=5)
    assert beyond.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_acks_zero_sends_no_response_but_stores(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    leader = harness.leader(TOPIC)
    response = await harness.call(leader, PRODUCE, 9, produce_body(build_batch(FIRST), acks=0))
    assert response is None
    part = await fetch(harness, leader, 0)
    assert [r.value for b in batches(part.records) for r in b.records] == [b"v0", b"v1", None]


async def test_log_append_time_comes_from_the_broker_clock(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1, configs={"message.timestamp.type": "LogAppendTime"})
    harness.clock.advance(12_345)
    appended_at = harness.clock.now_ms()
    leader = harness.leader(TOPIC)
    result = await produce(harness, leader, build_batch(FIRST))
    assert (result.error_code, result.log_append_time_ms) == (ErrorCode.NONE, appended_at)
    [batch] = batches((await fetch(harness, leader, 0)).records)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.header.max_timestamp == appended_at
    assert [r.timestamp for r in batch.records] == [appended_at] * 3


async def test_idempotent_duplicate_is_acknowledged_with_its_first_offset(
        harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    leader = harness.leader(TOPIC)
    await produce(harness, leader, build_batch(SECOND))  # offsets 0-1, no producer id
    idempotent = build_batch(FIRST, producer_id=4_000, producer_epoch=0, base_sequence=0)
    first = await produce(harness, leader, idempotent)
    again = await produce(harness, leader, idempotent)  # a retry of the same batch
    assert (first.error_code, first.base_offset) == (ErrorCode.NONE, 2)
    assert (again.error_code, again.base_offset) == (ErrorCode.NONE, 2)
    assert (await fetch(harness, leader, 0)).high_watermark == 5  # stored once
