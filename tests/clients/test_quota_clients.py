"""Client quotas with a real producer: librdkafka under a small producer_byte_rate gets
throttle_time_ms in its Produce responses (its throttle callback reports it), its data
arrives intact, and the broker's counters show what was measured and throttled.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from mockbroker.embedded import MockClusterThread

TIMEOUT = 30.0
VALUES = [f"reading-{i:03d}".encode() * 50 for i in range(10)]  # 10 x 600 bytes


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=1) as mock:
        yield mock


def test_producer_over_its_byte_rate_is_throttled_and_its_data_intact(
        cluster: MockClusterThread) -> None:
    cluster.control.reset()
    cluster.control.create_topic("meters")
    # about 6 KB in one Produce over a 10 s window is ~600 B/s: a 500 B/s quota throttles
    cluster.control.set_quota({"client-id": "metered-producer"},
                              {"producer_byte_rate": 500})
    throttles: list[Any] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "client.id": "metered-producer", "linger.ms": 50,
                         "compression.type": "none", "throttle_cb": throttles.append})
    errors: list[Any] = []
    for value in VALUES:
        producer.produce("meters", value, on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(TIMEOUT) == 0
    deadline = time.monotonic() + TIMEOUT
    while not throttles and time.monotonic() < deadline:  # the callback is served by poll
        producer.poll(0.1)
    assert errors == [None] * len(VALUES)
    quotas = cluster.control.quotas()
    assert quotas["throttled_responses"]["producer_byte_rate"] >= 1
    [last] = [t for t in quotas["throttles"] if t["client_id"] == "metered-producer"]
    assert last["quota"] == "producer_byte_rate" and last["throttle_time_ms"] > 0
    # librdkafka reports the broker's throttle_time_ms (in seconds; 0 once it has ended)
    reported = [round(t.throttle_time * 1000) for t in throttles if t.throttle_time > 0]
    assert reported and reported[-1] == last["throttle_time_ms"]

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "group.id": "meter-readers", "auto.offset.reset": "earliest"})
    consumer.subscribe(["meters"])
    got: list[bytes] = []
    try:
        while len(got) < len(VALUES) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    assert got == VALUES


def test_consumer_over_its_byte_rate_is_throttled_and_reads_everything(
        cluster: MockClusterThread) -> None:
    cluster.control.reset()
    cluster.control.create_topic("readings")
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for value in VALUES:
        producer.produce("readings", value)
    assert producer.flush(TIMEOUT) == 0
    cluster.control.set_quota({"user": None, "client-id": "metered-consumer"},
                              {"consumer_byte_rate": 500})
    throttles: list[Any] = []
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "client.id": "metered-consumer", "group.id": "readers",
                         "auto.offset.reset": "earliest", "throttle_cb": throttles.append})
    consumer.subscribe(["readings"])
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while (len(got) < len(VALUES) or not any(t.throttle_time > 0 for t in throttles)) \
                and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    assert got == VALUES
    quotas = cluster.control.quotas()
    assert quotas["throttled_responses"]["consumer_byte_rate"] >= 1
    assert quotas["recorded"]["consumer_byte_rate"] >= sum(map(len, VALUES))
    assert any(t.throttle_time > 0 for t in throttles)  # 0 is reported when it ends
