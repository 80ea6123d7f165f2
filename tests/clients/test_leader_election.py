"""Leaders move while a producer keeps producing and a consumer keeps consuming.

The test elects a new leader for every partition a few times (each election moves the leader
to the next in-sync replica and raises the leader epoch), while a background producer sends
numbered messages and the consumer under test polls. Afterwards the consumer must have read
exactly what was acknowledged: nothing lost, nothing twice, each partition in offset order,
and (the producer being idempotent) each partition in production order.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import (
    BackgroundProducer,
    Consumed,
    close_confluent,
    confluent_record,
    kafka_python_record,
)

pytestmark = pytest.mark.clients

PARTITIONS = 3
ELECTION_ROUNDS = 4
ELECTION_INTERVAL = 0.3  # seconds between rounds
DEADLINE = 40.0  # seconds for the whole exchange; normally a few seconds


class Acks:
    """Thread-safe record of acknowledged messages: index -> (partition, offset)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: dict[int, tuple[int, int]] = {}
        self.errors: list[Any] = []

    def ok(self, index: int, partition: int, offset: int) -> None:
        with self.lock:
            assert index not in self.acked, f"message {index} acknowledged twice"
            self.acked[index] = (partition, offset)

    def failed(self, index: int, err: Any) -> None:
        with self.lock:
            self.errors.append((index, err))


def key_of(i: int) -> bytes:
    return f"key-{i % 20}".encode()


def value_of(i: int) -> bytes:
    return f"value-{i}".encode()


# -- producers --------------------------------------------------------------------------------

def confluent_producer(boot: str, topic: str, acks: Acks) -> BackgroundProducer:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": boot, "acks": "all",
                         "enable.idempotence": True})

    def send(i: int) -> None:
        def report(err: Any, m: Any) -> None:
            if err is not None:
                acks.failed(i, err)
            else:
                acks.ok(i, m.partition(), m.offset())
        producer.produce(topic, key=key_of(i), value=value_of(i), on_delivery=report)
        producer.poll(0)

    def flush() -> None:
        try:
            left = producer.flush(30)
            assert left == 0, f"{left} messages undelivered"
        finally:
            close_confluent(producer)

    return BackgroundProducer(send, flush)


def kafka_python_producer(boot: str, topic: str, acks: Acks) -> BackgroundProducer:
    from kafka import KafkaProducer

    # kafka-python 3 is idempotent by default; say so, as production order is asserted.
    producer = KafkaProducer(bootstrap_servers=boot, acks="all", enable_idempotence=True)

    def send(i: int) -> None:
        future = producer.send(topic, key=key_of(i), value=value_of(i))
        future.add_callback(lambda md: acks.ok(i, md.partition, md.offset))
        future.add_errback(lambda exc: acks.failed(i, exc))

    def flush() -> None:
        try:
            producer.flush(timeout=30)
        finally:
            producer.close(timeout=10)

    return BackgroundProducer(send, flush)


# -- consumers --------------------------------------------------------------------------------

class ConfluentConsumer:
    def __init__(self, boot: str, topic: str) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        self.errors: list[Any] = []
        self.consumer = Consumer({"bootstrap.servers": boot, "group.id": "election-test",
                                  "enable.auto.commit": False,
                                  "error_cb": self.errors.append})
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                              for p in range(PARTITIONS)])

    def poll(self) -> list[Consumed]:
        out = []
        for m in self.consumer.consume(num_messages=500, timeout=0.05):
            if m.error() is not None:
                self.errors.append(m.error())
            else:
                out.append(confluent_record(m))
        return out

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonConsumer:
    def __init__(self, boot: str, topic: str) -> None:
        from kafka import KafkaConsumer, TopicPartition

        self.errors: list[Any] = []
        self.consumer = KafkaConsumer(bootstrap_servers=boot, group_id=None)
        self.consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        self.consumer.seek_to_beginning()

    def poll(self) -> list[Consumed]:
        return [kafka_python_record(r) for records in
                self.consumer.poll(timeout_ms=50).values() for r in records]

    def close(self) -> None:
        self.consumer.close()


CASES = {
    "confluent-kafka": (confluent_producer, ConfluentConsumer),
    "kafka-python": (kafka_python_producer, KafkaPythonConsumer),
}


@pytest.mark.parametrize("client_name", list(CASES))
def test_consume_through_leader_elections(mock: MockClusterThread,
                                          topic_name: Callable[[str], str],
                                          client_name: str) -> None:
    make_producer, make_consumer = CASES[client_name]
    topic = topic_name()
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    boot = mock.bootstrap_servers
    acks = Acks()
    consumed: list[Consumed] = []
    leaders: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    consumer = make_consumer(boot, topic)
    producer = make_producer(boot, topic, acks).start()
    producer_joined = False
    try:
        deadline = time.monotonic() + DEADLINE
        rounds = 0
        next_round: float | None = None
        # Phase 1: elections while both sides are busy.
        while rounds < ELECTION_ROUNDS and time.monotonic() < deadline:
            consumed.extend(consumer.poll())
            now = time.monotonic()
            if next_round is None and consumed:
                next_round = now  # the consumer is under way: start electing
            if next_round is not None and now >= next_round:
                assert producer.thread.is_alive(), "producer stopped before the elections"
                for p in range(PARTITIONS):
                    leaders[p].append(mock.call(mock.cluster.elect_leader, topic, p))
                rounds += 1
                next_round = now + ELECTION_INTERVAL
        assert rounds == ELECTION_ROUNDS, f"only {rounds} election rounds before the deadline"
        # Phase 2: let the producer run on a little under the last leaders, then stop it.
        settle = time.monotonic() + ELECTION_INTERVAL
        while time.monotonic() < settle:
            consumed.extend(consumer.poll())
        producer.join()
        producer_joined = True
        # Phase 3: read until everything acknowledged has arrived, then a little longer.
        expected = len(acks.acked)
        while len(consumed) < expected and time.monotonic() < deadline:
            consumed.extend(consumer.poll())
        grace = time.monotonic() + 0.3
        while time.monotonic() < grace:
            consumed.extend(consumer.poll())
    finally:
        if not producer_joined:
            producer.stop_event.set()
            producer.thread.join(30)
        consumer.close()

    assert not acks.errors, acks.errors[:5]
    assert producer.sent == len(acks.acked), (producer.sent, len(acks.acked))
    assert producer.sent > 100, "the producer barely produced"

    # The elections happened: leaders rotated, epochs rose by one per election.
    epochs = mock.call(lambda: {p: mock.cluster.image.partition(topic, p).leader_epoch
                                for p in range(PARTITIONS)})
    assert epochs == dict.fromkeys(range(PARTITIONS), ELECTION_ROUNDS)
    for p, moved in leaders.items():
        assert all(a != b for a, b in itertools.pairwise(moved)), (p, moved)

    # Nothing lost, nothing twice: exactly the acknowledged messages, once each.
    index_of = {value_of(i): i for i in range(producer.sent)}
    twice = [k for k, n in Counter((c.partition, c.offset) for c in consumed).items() if n > 1]
    assert not twice, f"duplicates at {twice[:10]}"
    got = {index_of[c.value]: (c.partition, c.offset) for c in consumed}
    assert len(got) == len(consumed)
    missing = sorted(set(acks.acked) - set(got))
    assert not missing, f"{len(missing)} acknowledged messages never consumed: {missing[:10]}"
    assert got == acks.acked
    for c in consumed:
        assert c.key == key_of(index_of[c.value])

    # Per partition: offsets 0..n-1 in consumption order, and production order.
    by_partition: dict[int, list[Consumed]] = defaultdict(list)
    for c in consumed:
        by_partition[c.partition].append(c)
    for p, records in by_partition.items():
        assert [c.offset for c in records] == list(range(len(records))), p
        order = [index_of[c.value] for c in records]
        assert order == sorted(order), f"partition {p} out of production order"
