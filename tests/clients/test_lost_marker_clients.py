"""A transaction's commit marker lost in a leader change, seen by real clients.

Three brokers, replication factor 3, min.insync.replicas=2. A transactional producer commits
a value while one replica (still in the ISR) is paused: the commit marker reaches the leader
and one follower only, the paused replica holding the high watermark back. That replica is
then elected, so the other two truncate the marker. Kafka's coordinator is still completing
the commit (it waits for each marker to be acknowledged with acks=all) and writes the marker
again on the new leader. The producer's next transaction, aborted, then hides only its own
value: a read_committed consumer reads the committed value (before the fix the abort marker
covered the first transaction too, whose marker was gone, and it read nothing).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kafka_protocol_codec.records import decode_batch

from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

DEADLINE = 30.0


def _read_committed(boot: str, topic: str, until: bytes) -> list[bytes]:
    """Values a read_committed confluent consumer reads from the start until `until` (a
    value written after the others) or the deadline."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": boot, "group.id": f"g-{topic}",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[bytes] = []
    deadline = time.monotonic() + DEADLINE
    try:
        while until not in out and time.monotonic() < deadline:
            out += [m.value() for m in consumer.consume(100, 0.1) if m.error() is None]
    finally:
        consumer.close()
    return out


def test_a_commit_marker_truncated_by_a_leader_change_is_written_again() -> None:
    from confluent_kafka import Producer

    topic = "lost-marker"
    with MockClusterThread(brokers=3) as mock:
        mock.control.create_topic(topic, partitions=1, replication_factor=3,
                                  configs={"min.insync.replicas": "2"})
        boot = mock.bootstrap_servers
        producer = Producer({"bootstrap.servers": boot, "transactional.id": "lost-marker",
                             "linger.ms": 0})
        producer.init_transactions(DEADLINE)
        producer.begin_transaction()
        producer.produce(topic, b"committed", partition=0)
        assert producer.flush(DEADLINE) == 0
        part = mock.control.state()["topics"][topic]["partitions"][0]
        laggard = next(b for b in part["isr"] if b != part["leader"])
        mock.control.pause_replication(broker=laggard)
        producer.commit_transaction(DEADLINE)
        mock.control.elect_leader(topic, 0, laggard)  # the others truncate the marker
        mock.control.resume_replication(broker=laggard)
        producer.begin_transaction()
        producer.produce(topic, b"aborted", partition=0)
        assert producer.flush(DEADLINE) == 0
        producer.abort_transaction(DEADLINE)
        after = Producer({"bootstrap.servers": boot, "linger.ms": 0})
        after.produce(topic, b"after", partition=0)
        assert after.flush(DEADLINE) == 0
        assert _read_committed(boot, topic, b"after") == [b"committed", b"after"]
        cluster = mock.cluster

        def committed_reads() -> dict[int, list[Any]]:
            """What each replica would serve read_committed: values below its last stable
            offset outside its aborted transactions."""
            replica_set = cluster.replicas(topic, 0)
            assert replica_set is not None
            out: dict[int, list[Any]] = {}
            for broker, log in replica_set.logs.items():
                out[broker] = [
                    r.value for b in log.batches
                    if not b.is_control and b.base_offset < log.last_stable_offset
                    and not any(pid == b.producer_id and first <= b.base_offset <= last
                                for pid, first, last in log.aborted_index)
                    for r in decode_batch(b.data).records]
            return out

        deadline = time.monotonic() + DEADLINE
        reads = mock.call(committed_reads)
        while time.monotonic() < deadline and any(v != [b"committed", b"after"]
                                                   for v in reads.values()):
            time.sleep(0.1)
            reads = mock.call(committed_reads)
        assert reads == {b: [b"committed", b"after"] for b in (0, 1, 2)}
