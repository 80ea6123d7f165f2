"""max.connections.per.ip with real confluent-kafka clients from 127.0.0.1, limit 2.

What librdkafka does: the producer needs one connection (the broker it learns from Metadata
has the bootstrap address, so the bootstrap connection serves it). The consumer opens two:
the broker connection and a separate one for its group coordinator. With the producer still
open, one of them is the IP's third: the broker closes it at once (Kafka's
TooManyConnectionsException), librdkafka logs "Disconnected" and retries, again and again.
Which of the consumer's two gets the free slot is a race: usually the consumer cannot join
its group meanwhile, but in some runs librdkafka got an assignment and a record through the
one it had. So the test checks what holds every time: the IP never has more than two open
connections, the extra ones are refused, and once the producer is gone the consumer reads
exactly what was produced, each record once.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from mockbroker.embedded import MockClusterThread

TIMEOUT = 30.0
IP = "127.0.0.1"


@pytest.fixture
def cluster() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=1,
                           broker_properties={"max.connections.per.ip": "2"}) as mock:
        yield mock


def _connections(cluster: MockClusterThread) -> dict[str, Any]:
    return dict(cluster.control.state()["quotas"]["connections"])


def test_consumer_waits_for_the_producer_to_free_a_connection(
        cluster: MockClusterThread) -> None:
    cluster.control.create_topic("limited")
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for index in range(3):
        producer.produce("limited", key=f"k{index}".encode(), value=f"v{index}".encode())
    assert producer.flush(TIMEOUT) == 0
    assert _connections(cluster)["open_by_ip"] == {IP: 1}  # one connection is enough

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g",
                         "auto.offset.reset": "earliest", "reconnect.backoff.ms": 50,
                         "reconnect.backoff.max.ms": 200})
    try:
        consumer.subscribe(["limited"])
        received: list[tuple[bytes | None, bytes | None, int]] = []

        def poll_once() -> None:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                received.append((message.key(), message.value(), message.offset()))

        deadline = time.monotonic() + TIMEOUT
        while _connections(cluster)["refused_by_ip"].get(IP, 0) < 3 \
                and time.monotonic() < deadline:
            poll_once()
        state = _connections(cluster)
        assert state["refused_by_ip"][IP] >= 3  # the consumer's other connection, again
        assert state["open_by_ip"] == {IP: 2}  # the producer's and one of the consumer's

        del producer  # librdkafka closes its connection when the handle is destroyed
        gc.collect()
        deadline = time.monotonic() + TIMEOUT
        while len(received) < 3 and time.monotonic() < deadline:
            poll_once()
        assert received == [(b"k0", b"v0", 0), (b"k1", b"v1", 1), (b"k2", b"v2", 2)]
        # only the consumer's are left: one or two (in some runs librdkafka had closed the
        # connection it kept retrying by the time the records came)
        assert _connections(cluster)["open_by_ip"][IP] in (1, 2)
    finally:
        consumer.close()
