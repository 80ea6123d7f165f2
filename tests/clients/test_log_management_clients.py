"""Log management seen by real clients: a compacted topic read back after a cleaner pass holds
only the latest value per key, at its original offset (gaps where older records were), for
confluent-kafka, kafka-python, aiokafka and kcat; size retention moves the log start, so
ListOffsets earliest follows it and a consumer positioned below it is answered
OFFSET_OUT_OF_RANGE and resets (auto.offset.reset=earliest) to the new log start."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kafka_protocol_codec.record_batches import BatchHeader

from mockbroker.cluster import ManualClock
from mockbroker.embedded import MockClusterThread
from tests.clients.conftest import CLIENT_NAMES
from tests.support.kafka_clients import Client

pytestmark = pytest.mark.clients

# keys in produce order, one batch (and, with internal.segment.bytes=100, one segment) each: the last
# is the active segment, which the cleaner leaves alone; a's last record is a tombstone
KEYS = [b"u", b"a", b"a", b"v", b"a", b"b", b"b", b"w", b"b", b"z"]
TOMBSTONE_AT = 4
T0 = 1_700_000_000_000  # record timestamps T0 + offset (the tombstone's batch then holds
# KIP-534's delete horizon as its base timestamp: clients must still read T0 + 4)
# the latest record of every key survives: offsets 1, 2, 5 and 6 go
COMPACTED = [(0, b"u", b"0"), (3, b"v", b"3"), (4, b"a", None), (7, b"w", b"7"),
             (8, b"b", b"8"), (9, b"z", b"9")]
DEADLINE_S = 20.0


def _produce_one_batch_each(boot: str, topic: str,
                            records: list[tuple[bytes | None, bytes | None]],
                            timestamps: list[int] | None = None) -> None:
    producer = Producer({"bootstrap.servers": boot, "linger.ms": 0, "acks": "all"})
    for index, (key, value) in enumerate(records):
        if timestamps is None:
            producer.produce(topic, value, key=key)
        else:
            producer.produce(topic, value, key=key, timestamp=timestamps[index])
        assert producer.flush(10) == 0  # one batch per record


@pytest.mark.parametrize("client_name", CLIENT_NAMES)
def test_a_compacted_topic_reads_back_the_latest_value_per_key(
        mock: MockClusterThread, topic_name: Callable[[str], str],
        client_factory: Callable[[str], Client], client_name: str) -> None:
    topic = topic_name()
    mock.control.create_topic(topic, partitions=1, configs={
        "cleanup.policy": "compact", "internal.segment.bytes": 100})
    _produce_one_batch_each(
        mock.bootstrap_servers, topic,
        [(k, None if i == TOMBSTONE_AT else b"%d" % i) for i, k in enumerate(KEYS)],
        [T0 + i for i in range(len(KEYS))])
    answer = mock.control.run_log_cleaner(topic=topic, force=True)
    assert {(r["broker"], r["cleaned"], r["records_removed"]) for r in answer["replicas"]} \
        == {(b, True, 4) for b in range(3)}
    [state] = answer["partitions"]
    # emptied segments join their neighbours (each kept batch alone nearly fills 100 bytes)
    assert state["segments"] == 6 and state["cleaner_checkpoint"] == len(KEYS) - 1

    def tombstone_header() -> BatchHeader:
        replica_set = mock.cluster.replicas(topic, 0)
        assert replica_set is not None
        stored = next(b for b in replica_set.leader_log().batches
                      if b.base_offset == TOMBSTONE_AT)
        return BatchHeader.parse(stored.data)

    header = mock.call(tombstone_header)
    assert header.has_delete_horizon and header.base_timestamp > T0 + TOMBSTONE_AT
    got = client_factory(client_name).consume(mock.bootstrap_servers, topic, 1, len(COMPACTED))
    assert [(c.offset, c.key, c.value) for c in got] == COMPACTED
    assert [c.timestamp for c in got] == [T0 + offset for offset, _, _ in COMPACTED]


def _earliest(boot: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": boot})
    partition = ConfluentPartition(topic, 0)
    offset: int = admin.list_offsets({partition: OffsetSpec.earliest()})[partition] \
        .result(10).offset
    return offset


def _confluent_from(boot: str, topic: str, offset: int, count: int) -> list[tuple[int, bytes]]:
    """Assign at `offset` with auto.offset.reset=earliest and read `count` records."""
    consumer = Consumer({"bootstrap.servers": boot, "group.id": "retention-readers",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    out: list[tuple[int, bytes]] = []
    try:
        consumer.assign([ConfluentPartition(topic, 0, offset)])
        deadline = time.monotonic() + DEADLINE_S
        while len(out) < count and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=100, timeout=0.1):
                assert m.error() is None, m.error()
                out.append((m.offset(), m.value()))
    finally:
        consumer.close()
    return out


def _kafka_python_from(boot: str, topic: str, offset: int, count: int) -> list[tuple[int, Any]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=boot, group_id=None,
                             auto_offset_reset="earliest")
    out: list[tuple[int, Any]] = []
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek(partition, offset)
        deadline = time.monotonic() + DEADLINE_S
        while len(out) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=100).values():
                out.extend((r.offset, r.value) for r in records)
    finally:
        consumer.close()
    return out


def test_size_retention_moves_the_log_start_and_consumers_reset_to_it(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    topic = topic_name()
    mock.control.create_topic(topic, partitions=1, configs={"internal.segment.bytes": 100})
    _produce_one_batch_each(mock.bootstrap_servers, topic,
                            [(None, b"v%d" % i) for i in range(8)])
    before = mock.control.state()["topics"][topic]["partitions"][0]["log"]
    assert before["segments"] == 8 and before["log_start_offset"] == 0
    batch_size = before["size_bytes"] // 8
    assert _earliest(mock.bootstrap_servers, topic) == 0
    # keep three batches' worth: the five oldest segments go at the next check
    mock.call(mock.cluster.set_configs,
              [(2, topic, "retention.bytes", str(3 * batch_size))])
    answer = mock.control.run_log_cleaner(topic=topic)
    [state] = answer["partitions"]
    assert state["log_start_offset"] == 5 and state["segments"] == 3
    assert state["size_bytes"] == 3 * batch_size
    assert _earliest(mock.bootstrap_servers, topic) == 5
    expected = [(5, b"v5"), (6, b"v6"), (7, b"v7")]
    # offset 2 is below the log start: OFFSET_OUT_OF_RANGE, then the reset to earliest
    assert _confluent_from(mock.bootstrap_servers, topic, 2, 3) == expected
    assert _kafka_python_from(mock.bootstrap_servers, topic, 2, 3) == expected


def test_time_retention_runs_on_advance_clock() -> None:
    """retention.ms on the manual clock: the retention check runs from the tick that
    advance-clock triggers; record timestamps are the producer's (CreateTime)."""
    start = int(time.time() * 1000)
    with MockClusterThread(brokers=3, clock=ManualClock(start), broker_properties={
            "log.retention.check.interval.ms": "1000"}) as mock:
        topic = "expiring"
        mock.control.create_topic(topic, partitions=1, configs={
            "internal.segment.bytes": 100, "retention.ms": 3_600_000})
        producer = Producer({"bootstrap.servers": mock.bootstrap_servers, "linger.ms": 0})
        for index, timestamp in enumerate([start, start, start + 1_800_000]):
            producer.produce(topic, b"v%d" % index, timestamp=timestamp)
            assert producer.flush(10) == 0
        mock.control.advance_clock(ms=3_000_000)  # 50 min: nothing is an hour old
        assert _earliest(mock.bootstrap_servers, topic) == 0
        mock.control.advance_clock(ms=600_001)  # the first two batches are an hour old
        assert _earliest(mock.bootstrap_servers, topic) == 2
        assert _kafka_python_from(mock.bootstrap_servers, topic, 0, 1) == [(2, b"v2")]
