"""Unclean election: the log loses its tail, and KIP-320 consumers notice.

Ten records are written in leader epoch 0 (two batches, offsets 0-4 and 5-9) and read by the
consumer under test, whose position is then 10 with last fetched epoch 0. unclean-elect
moves leadership to another replica and truncates the log to offset 5 (epoch 1 starts
there), and three new records are written at offsets 5-7. The consumer learns of the new
leader, validates its position with OffsetForLeaderEpoch (epoch 0 now ends at 5 < 10) and
reports the truncation. What each client reports:

- kafka-python without a reset policy raises LogTruncationError naming the first diverging
  offset (5, epoch 0); with one, it seeks to offset 5 and reads the new records;
- librdkafka (confluent-kafka) with auto.offset.reset=error delivers an _AUTO_OFFSET_RESET
  error "Partition log truncation detected at offset 10 (leader epoch 0): broker end offset
  is 5"; with earliest it also seeks to offset 5 (not to the beginning);
- aiokafka has no KIP-320 validation: its fetch at 10 is OFFSET_OUT_OF_RANGE and it resets
  to the beginning, re-reading offsets 0-4 without noticing anything. (Its fetch goes to
  the old leader, now a follower, which serves a Fetch v11+ as Kafka's does (KIP-392) and
  answers OFFSET_OUT_OF_RANGE from its own log; aiokafka's ListOffsets for the reset then
  gets NOT_LEADER_OR_FOLLOWER there and is retried without a metadata refresh, so the test
  shortens metadata.max.age.ms for it to find the new leader.)
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

TOPIC = "unclean"
DEADLINE = 15.0
NEW = [b"new-0", b"new-1", b"new-2"]


def _write(boot: str, values: list[bytes], flush_every: int) -> None:
    from kafka import KafkaProducer

    # not idempotent: the truncation also drops producer state, and an idempotent producer
    # would (rightly) get OUT_OF_ORDER_SEQUENCE_NUMBER for its next batch
    producer = KafkaProducer(bootstrap_servers=boot, acks="all", enable_idempotence=False)
    try:
        for i, value in enumerate(values, 1):
            producer.send(TOPIC, value, partition=0)
            if i % flush_every == 0:
                producer.flush(10)
        producer.flush(10)
    finally:
        producer.close(timeout=10)


def _setup(mock: MockClusterThread) -> str:
    mock.control.create_topic(TOPIC, partitions=1)
    _write(mock.bootstrap_servers, [f"old-{i}".encode() for i in range(10)], flush_every=5)
    log = mock.control.state()["topics"][TOPIC]["partitions"][0]
    assert (log["log_end_offset"], log["leader"]) == (10, 0)
    return mock.bootstrap_servers


def _truncate_and_write(mock: MockClusterThread) -> None:
    result = mock.control.unclean_elect(TOPIC, 0, broker=1, truncate_to=5)
    assert (result["leader"], result["leader_epoch"], result["truncated_records"]) == (1, 1, 5)
    assert result["leader_epoch_cache"] == [[0, 0], [1, 5]]
    _write(mock.bootstrap_servers, NEW, flush_every=3)


def _kafka_python(mock: MockClusterThread, reset: str) -> tuple[list[Any], Any]:
    from kafka import KafkaConsumer, TopicPartition

    boot = _setup(mock)
    consumer = KafkaConsumer(bootstrap_servers=boot, group_id=None, auto_offset_reset=reset)
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    records: list[Any] = []
    raised: Any = None
    try:
        deadline = time.monotonic() + DEADLINE
        while len(records) < 10 and time.monotonic() < deadline:
            records += [r for rs in consumer.poll(timeout_ms=100).values() for r in rs]
        assert consumer.position(tp) == 10
        records.clear()
        _truncate_and_write(mock)
        deadline = time.monotonic() + DEADLINE
        while len(records) < len(NEW) and time.monotonic() < deadline:
            try:
                records += [r for rs in consumer.poll(timeout_ms=100).values() for r in rs]
            except Exception as exc:
                raised = exc
                break
    finally:
        consumer.close()
    return [(r.offset, r.value) for r in records], raised


def test_kafka_python_raises_log_truncation_error(mock: MockClusterThread) -> None:
    from kafka import TopicPartition
    from kafka.errors import LogTruncationError
    from kafka.structs import OffsetAndMetadata

    records, raised = _kafka_python(mock, "none")
    assert records == []
    assert isinstance(raised, LogTruncationError)
    assert raised.divergent_offsets == {TopicPartition(TOPIC, 0): OffsetAndMetadata(5, "", 0)}


def test_kafka_python_with_a_reset_policy_seeks_to_the_divergence(
        mock: MockClusterThread) -> None:
    records, raised = _kafka_python(mock, "earliest")
    assert raised is None
    assert records == list(zip([5, 6, 7], NEW, strict=True))


def _confluent(mock: MockClusterThread, reset: str) -> tuple[list[Any], list[Any]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    boot = _setup(mock)
    consumer = Consumer({"bootstrap.servers": boot, "group.id": "unclean-cf",
                         "enable.auto.commit": False, "auto.offset.reset": reset})
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    records: list[Any] = []
    errors: list[Any] = []
    try:
        deadline = time.monotonic() + DEADLINE
        while len(records) < 10 and time.monotonic() < deadline:
            records += [m for m in consumer.consume(100, 0.1) if m.error() is None]
        assert len(records) == 10
        records.clear()
        _truncate_and_write(mock)
        deadline = time.monotonic() + DEADLINE
        while len(records) < len(NEW) and not errors and time.monotonic() < deadline:
            for m in consumer.consume(100, 0.1):
                (errors if m.error() is not None else records).append(m)
    finally:
        consumer.close()
    return ([(m.offset(), m.value(), m.leader_epoch()) for m in records],
            [m.error() for m in errors])


def test_confluent_reports_log_truncation(mock: MockClusterThread) -> None:
    from confluent_kafka import KafkaError

    records, errors = _confluent(mock, "error")
    assert records == [] and len(errors) == 1
    error = errors[0]
    assert error.code() == KafkaError._AUTO_OFFSET_RESET
    assert "log truncation detected at offset 10 (leader epoch 0)" in error.str()
    assert "broker end offset is 5" in error.str()


def test_confluent_with_earliest_seeks_to_the_divergence(mock: MockClusterThread) -> None:
    records, errors = _confluent(mock, "earliest")
    assert errors == []
    assert records == [(5, NEW[0], 1), (6, NEW[1], 1), (7, NEW[2], 1)]


def test_aiokafka_without_kip_320_rereads_from_the_beginning(mock: MockClusterThread) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    boot = _setup(mock)

    async def run() -> list[tuple[int, bytes]]:
        consumer = AIOKafkaConsumer(bootstrap_servers=boot, auto_offset_reset="earliest",
                                    enable_auto_commit=False, metadata_max_age_ms=1000)
        await consumer.start()
        try:
            tp = TopicPartition(TOPIC, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            seen: list[Any] = []
            deadline = time.monotonic() + DEADLINE
            while len(seen) < 10 and time.monotonic() < deadline:
                seen += [r for rs in (await consumer.getmany(timeout_ms=100)).values()
                         for r in rs]
            assert await consumer.position(tp) == 10
            await asyncio.to_thread(_truncate_and_write, mock)
            after: list[Any] = []
            deadline = time.monotonic() + DEADLINE
            while len(after) < 8 and time.monotonic() < deadline:
                after += [r for rs in (await consumer.getmany(timeout_ms=100)).values()
                          for r in rs]
            return [(r.offset, r.value) for r in after]
        finally:
            await consumer.stop()

    records = asyncio.run(run())
    assert records == [(i, f"old-{i}".encode()) for i in range(5)] + list(
        zip([5, 6, 7], NEW, strict=True))
