"""librdkafka at its defaults against a default (Kafka 4.0-like) mockbroker: it produces with
Produce v10 and consumes with Fetch v16 (topic ids, KIP-951), and every key, value, header,
timestamp and offset comes back exactly."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import close_confluent

pytestmark = pytest.mark.clients

TOPIC = "newest"
SENT = [(b"k0", b"v0", [("h", b"1")], 1_000), (None, b"v1", [], 1_001),
        (b"k2", None, [("a", b"x"), ("b", None)], 1_002), (b"k3", b"v3" * 500, [], 1_003)]


def test_confluent_round_trip_on_fetch_v16_and_produce_v10() -> None:
    with MockClusterThread(brokers=3, trace_buffer=2000) as mock:
        mock.control.create_topic(TOPIC, partitions=1)
        producer = Producer({"bootstrap.servers": mock.bootstrap_servers, "linger.ms": 0})
        for key, value, headers, timestamp in SENT:
            producer.produce(TOPIC, value, key, headers=headers, timestamp=timestamp)
        assert producer.flush(15) == 0
        consumer = Consumer({"bootstrap.servers": mock.bootstrap_servers, "group.id": "new",
                             "enable.auto.commit": False})
        got = []
        try:
            consumer.assign([TopicPartition(TOPIC, 0, 0)])
            for _ in range(80):  # bounded: 20 s at most
                if len(got) == len(SENT):
                    break
                msg = consumer.poll(0.25)
                if msg is not None and msg.error() is None:
                    got.append((msg.offset(), msg.key(), msg.value(), msg.headers() or [],
                                msg.timestamp()[1]))
        finally:
            close_confluent(consumer)
        used = {(r["api"], r["version"]) for r in mock.control.trace(None)["requests"]}
    assert got == [(offset, key, value, headers, timestamp)
                   for offset, (key, value, headers, timestamp) in enumerate(SENT)]
    assert ("Produce", 10) in used and ("Fetch", 16) in used
    assert {v for api, v in used if api in ("Produce", "Fetch")} == {10, 16}
