"""A leader deposed while its metadata is paused, seen by real producers with acks=all.

Three brokers, replication factor 3, min.insync.replicas=2. Producer A writes to the
partition's leader; the leader's metadata is paused and another in-sync replica is elected.
Producer B, which knows only the new leader, writes to it; producer A, whose metadata still
names the old leader, writes to the old one, which (believing it still leads) appends in
the old epoch. In Kafka the old leader is nobody's follower and nobody fetches from it: it
acknowledges none of A's writes and does not copy the new leader's. Once it learns of the
change it answers NOT_LEADER_OR_FOLLOWER, truncates its old-epoch tail and follows, and A
retries on the new leader. Every acknowledged value must then be in the partition exactly
once, at the offset acknowledged, on every replica, even after the old leader is elected
again (before the fix its log kept A's old-epoch batch in the middle of the new epoch, so
electing it lost the value B had been acknowledged at that offset).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kafka_protocol_codec.records import BatchHeader, decode_batch

from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

DEADLINE = 40.0


Handles = tuple[Callable[[bytes], None], Callable[[float], int], Callable[[], None]]


class Acked:
    """Values acknowledged by any producer: value -> offset; errors kept."""

    def __init__(self) -> None:
        self.offsets: dict[bytes, int] = {}
        self.errors: list[Any] = []


def _confluent(boot: str, topic: str, acked: Acked) -> Handles:
    """send(value), drain(seconds) -> messages still pending, and close, for a confluent
    producer."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": boot, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 0})

    def report(err: Any, m: Any) -> None:
        if err is not None:
            acked.errors.append(err)
        else:
            acked.offsets[m.value()] = m.offset()

    def send(value: bytes) -> None:
        producer.produce(topic, value, partition=0, on_delivery=report)
        producer.poll(0)

    def drain(seconds: float) -> int:
        deadline = time.monotonic() + seconds
        while producer.flush(0.1) and time.monotonic() < deadline:
            pass
        return int(producer.flush(0))
    return send, drain, lambda: None


def _kafka_python(boot: str, topic: str, acked: Acked) -> Handles:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=boot, acks="all", enable_idempotence=True,
                             linger_ms=0)
    pending: list[tuple[bytes, Any]] = []

    def send(value: bytes) -> None:
        pending.append((value, producer.send(topic, value, partition=0)))

    def drain(seconds: float) -> int:
        deadline = time.monotonic() + seconds
        while any(not f.is_done for _, f in pending) and time.monotonic() < deadline:
            time.sleep(0.05)
        for value, future in [p for p in pending if p[1].is_done]:
            pending.remove((value, future))
            if future.failed():
                acked.errors.append(future.exception)
            else:
                acked.offsets[value] = future.value.offset
        return len(pending)
    return send, drain, lambda: producer.close(timeout=5)


PRODUCERS = {"confluent-kafka": _confluent, "kafka-python": _kafka_python}


def _partition(mock: MockClusterThread, topic: str) -> dict[str, Any]:
    state: dict[str, Any] = mock.control.state()["topics"][topic]["partitions"][0]
    return state


@pytest.mark.parametrize("client", sorted(PRODUCERS))
def test_a_deposed_leader_acknowledges_nothing_that_is_then_lost(client: str) -> None:
    topic = f"deposed-{client}"
    with MockClusterThread(brokers=3) as mock:
        mock.control.create_topic(topic, partitions=1, replication_factor=3,
                                  configs={"min.insync.replicas": "2"})
        acked = Acked()
        send_a, drain_a, close_a = PRODUCERS[client](mock.bootstrap_servers, topic, acked)
        for i in range(5):
            send_a(f"a-{i}".encode())
        assert drain_a(DEADLINE) == 0 and len(acked.offsets) == 5
        part = _partition(mock, topic)
        stale = part["leader"]
        mock.control.pause_metadata(stale)
        new = mock.control.elect_leader(topic, 0, next(b for b in part["isr"] if b != stale))
        endpoint = next(b["endpoint"] for b in mock.control.state()["brokers"]
                        if b["id"] == new["leader"])
        send_b, drain_b, _ = _confluent(endpoint, topic, acked)
        for i in range(5):  # the new leader's epoch starts (before the fix the old
            send_b(f"b-{i}".encode())  # leader copied it as a follower)
        drain_b(0.5)
        mock.control.pause_replication(broker=stale)
        for i in range(5, 10):  # the new leader's log grows past the old leader's end
            send_b(f"b-{i}".encode())
        drain_b(0.5)
        send_a(b"a-zombie")  # to the old leader, in the old epoch
        drain_a(0.5)
        cluster = mock.cluster

        def old_epoch_tail() -> int:
            """Records the old leader holds in the old epoch past the new epoch's start."""
            replica_set = cluster.replicas(topic, 0)
            current = cluster.image.partition(topic, 0)
            assert replica_set is not None and current is not None
            new_epoch, start = replica_set.logs[current.leader].epoch_cache[-1]
            return sum(b.last_offset - b.base_offset + 1
                       for b in replica_set.logs[stale].batches_from(start)
                       if b.base_offset >= start
                       and BatchHeader.parse(b.data).partition_leader_epoch < new_epoch)

        assert mock.call(old_epoch_tail) == 1  # the old leader did append a-zombie
        mock.control.resume_replication(broker=stale)
        mock.control.resume_metadata(stale)
        assert drain_a(DEADLINE) == 0 and drain_b(DEADLINE) == 0
        close_a()
        assert acked.errors == [] and len(acked.offsets) == 16
        mock.control.elect_leader(topic, 0, stale)  # the old leader leads again

        def contents() -> dict[int, list[tuple[int, bytes | None]]]:
            replica_set = cluster.replicas(topic, 0)
            assert replica_set is not None
            return {broker: [(r.offset, r.value) for b in log.batches
                             for r in decode_batch(b.data).records]
                    for broker, log in replica_set.logs.items()}

        deadline = time.monotonic() + DEADLINE
        logs = mock.call(contents)
        while time.monotonic() < deadline and len({tuple(v) for v in logs.values()}) > 1:
            time.sleep(0.1)
            logs = mock.call(contents)
        held = logs[stale]
        values = [v for _, v in held]
        # nothing twice, nothing acknowledged missing, each at its acknowledged offset
        assert len(values) == len(set(values)) == 16
        assert {v: o for o, v in held} == acked.offsets
        for broker, log in logs.items():
            assert log == held, f"replica {broker} differs from the leader"
