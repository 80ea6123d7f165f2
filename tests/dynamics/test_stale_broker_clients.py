"""KIP-232 with real clients: one broker serves stale metadata after an election.

Broker 2's metadata is paused, then partitions 0-2 (replicas 0,1,2) move their leadership
from broker 0 to broker 1 (leader epoch 0 -> 1). Brokers 0 and 1 answer Metadata with leader
1 at epoch 1; broker 2 keeps answering leader 0 at epoch 0. Partition 3 is led by broker 2
itself, so the clients keep a connection to it and send it some of their (frequent)
metadata refreshes. The test records, on the broker side, every Produce and Metadata request:

- a client *regresses* when, after broker 1 acknowledged its write to a partition, it sends
  that partition to broker 0 again: it believed broker 2's stale answer;
- either way it must make progress: every message is acknowledged and read back.

What each client does (confluent-kafka 2.x / librdkafka, kafka-python 3.0.x):
- librdkafka compares leader epochs and ignores Metadata whose epoch is older than the one
  it has (KIP-320/KIP-232): no regression.
- kafka-python replaces its cached partitions wholesale on every Metadata response and
  compares epochs only for KIP-951 leader hints, so it does follow broker 2's stale answer
  for a while; broker 0 refuses those writes with NOT_LEADER_OR_FOLLOWER, the client
  refreshes and retries on broker 1, and no message is lost or stored on the stale leader.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.embedded import MockClusterThread
from mockbroker.handlers.registry import REGISTRY

pytestmark = pytest.mark.clients

TOPIC = "kip232"
PRODUCE, METADATA = 0, 3
MOVED = (0, 1, 2)  # partitions whose leadership moves from broker 0 to broker 1
PARTITIONS = 4
MESSAGES = 300
MIN_STALE_ANSWERS = 2  # Metadata answers from broker 2 after the client knew better
DEADLINE = 30.0
REFRESH_MS = 200


@dataclass
class Wire:
    """What the brokers saw: (time, broker, api key, request body, response)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: list[tuple[float, int, int, Any, Any]] = field(default_factory=list)

    def record(self, key: int) -> None:
        spec = REGISTRY[key]

        def recording(req: Any, ctx: Any) -> Any:
            result = spec.func(req, ctx)
            with self.lock:
                self.seen.append((time.monotonic(), ctx.broker_id, key, req, result))
            return result

        REGISTRY[key] = replace(spec, func=recording)

    def snapshot(self) -> list[tuple[float, int, int, Any, Any]]:
        with self.lock:
            return list(self.seen)


def learned(seen: list[tuple[float, int, int, Any, Any]]) -> dict[int, float]:
    """Per moved partition: when broker 1 first acknowledged a write to it."""
    out: dict[int, float] = {}
    for at, broker, key, _req, result in seen:
        if key != PRODUCE or broker != 1 or result is None:
            continue
        for topic in result["responses"]:
            for p in topic["partition_responses"]:
                if p["error_code"] == 0 and p["index"] in MOVED:
                    out.setdefault(p["index"], at)
    return out


def regressions(seen: list[tuple[float, int, int, Any, Any]],
                since: dict[int, float]) -> list[tuple[float, int, list[int]]]:
    """Produce requests to the old leader (broker 0) for partitions the client had seen
    broker 1 acknowledge, with the error codes broker 0 answered."""
    out = []
    for at, broker, key, req, result in seen:
        if key != PRODUCE or broker != 0:
            continue
        parts = [p.index for t in req.topic_data for p in t.partition_data
                 if p.index in since and at > since[p.index]]
        if parts:
            codes = [p["error_code"] for t in result["responses"]
                     for p in t["partition_responses"]]
            out.append((at, broker, codes))
    return out


def stale_answers(seen: list[tuple[float, int, int, Any, Any]], after: float) -> int:
    """Metadata answers from broker 2 after `after` that show the old leader and epoch."""
    count = 0
    for at, broker, key, _req, result in seen:
        if key == METADATA and broker == 2 and at > after:
            for topic in result["topics"]:
                if topic["name"] == TOPIC and any(
                        p["partition_index"] == 0 and p["leader_epoch"] == 0
                        for p in topic["partitions"]):
                    count += 1
    return count


@pytest.fixture
def stale_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[MockClusterThread, Wire]]:
    wire = Wire()
    for key in (PRODUCE, METADATA):
        monkeypatch.setitem(REGISTRY, key, REGISTRY[key])  # restored after the test
        wire.record(key)
    with MockClusterThread(brokers=3) as mock:
        cluster = mock.cluster
        mock.call(cluster.create_topic, TOPIC,
                  assignments=[[0, 1, 2]] * len(MOVED) + [[2, 0, 1]])
        mock.call(setattr, cluster.brokers[2], "paused", True)
        for p in MOVED:
            assert mock.call(cluster.elect_leader, TOPIC, p, 1) == 1
        yield mock, wire


# -- per client: produce until enough stale answers were served, then read everything ----------

def confluent_produce(boot: str, enough: Callable[[], bool]) -> dict[int, tuple[int, int]]:
    from confluent_kafka import Producer

    acked: dict[int, tuple[int, int]] = {}
    producer = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 5,
                         "topic.metadata.refresh.interval.ms": REFRESH_MS})

    def report(i: int) -> Callable[[Any, Any], None]:
        def done(err: Any, msg: Any) -> None:
            if err is None:
                acked[i] = (msg.partition(), msg.offset())
        return done

    deadline = time.monotonic() + DEADLINE
    i = 0
    while time.monotonic() < deadline and (i < MESSAGES or not enough()):
        producer.produce(TOPIC, value=b"m-%d" % i, partition=i % PARTITIONS,
                         on_delivery=report(i))
        producer.poll(0)
        i += 1
        time.sleep(0.01)
    assert producer.flush(DEADLINE) == 0
    assert len(acked) == i, f"{i - len(acked)} of {i} messages not acknowledged"
    return acked


def confluent_consume(boot: str, count: int) -> list[tuple[int, int, bytes]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": boot, "group.id": "kip232",
                         "enable.auto.commit": False,
                         "topic.metadata.refresh.interval.ms": REFRESH_MS})
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    out: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + DEADLINE
    try:
        while len(out) < count and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=500, timeout=0.1):
                if m.error() is None:
                    out.append((m.partition() or 0, m.offset() or 0, m.value() or b""))
    finally:
        consumer.close()
    return out


def kafka_python_produce(boot: str, enough: Callable[[], bool]) -> dict[int, tuple[int, int]]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=5,
                             metadata_max_age_ms=REFRESH_MS)
    futures = {}
    deadline = time.monotonic() + DEADLINE
    i = 0
    try:
        while time.monotonic() < deadline and (i < MESSAGES or not enough()):
            futures[i] = producer.send(TOPIC, value=b"m-%d" % i, partition=i % PARTITIONS)
            i += 1
            time.sleep(0.01)
        producer.flush(timeout=DEADLINE)
    finally:
        producer.close(timeout=10)
    acked = {}
    for index, future in futures.items():
        md = future.get(timeout=1)
        acked[index] = (md.partition, md.offset)
    return acked


def kafka_python_consume(boot: str, count: int) -> list[tuple[int, int, bytes]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=boot, group_id=None,
                             metadata_max_age_ms=REFRESH_MS)
    consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    out: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + DEADLINE
    try:
        while len(out) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=100).values():
                out += [(r.partition, r.offset, r.value) for r in records]
    finally:
        consumer.close()
    return out


CLIENTS = {
    # name: (produce, consume, rejects stale Metadata by leader epoch)
    "confluent-kafka": (confluent_produce, confluent_consume, True),
    "kafka-python": (kafka_python_produce, kafka_python_consume, False),
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_stale_broker_after_an_election(client: str,
                                        stale_cluster: tuple[MockClusterThread, Wire]) -> None:
    mock, wire = stale_cluster
    produce, consume, rejects_stale = CLIENTS[client]
    boot = mock.bootstrap_servers

    def enough() -> bool:
        seen = wire.snapshot()
        since = learned(seen)
        return len(since) == len(MOVED) and stale_answers(seen, max(since.values())) \
            >= MIN_STALE_ANSWERS

    acked = produce(boot, enough)
    seen = wire.snapshot()
    since = learned(seen)
    assert sorted(since) == list(MOVED), "broker 1 never acknowledged a moved partition"
    assert stale_answers(seen, max(since.values())) >= MIN_STALE_ANSWERS, (
        "broker 2 served no stale Metadata after the client learned the new leader")
    back = regressions(seen, since)
    # writes sent to the old leader are refused there, never stored
    assert all(code == ErrorCode.NOT_LEADER_OR_FOLLOWER for _, _, codes in back
               for code in codes), back
    if rejects_stale:
        assert back == [], f"{client} went back to the stale leader: {back}"
    # progress: every acknowledged message is read back once, where it was acknowledged
    consumed = consume(boot, len(acked))
    expected = {(p, o, b"m-%d" % i) for i, (p, o) in acked.items()}
    assert sorted(consumed) == sorted(expected)
    assert all(p in MOVED or p == 3 for p, _ in acked.values())
