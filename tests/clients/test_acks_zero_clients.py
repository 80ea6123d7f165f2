"""A producer with acks=0 after its partition's leader moves.

acks=0 gets no answer, so when the broker that no longer leads refuses a batch, the only way
a producer learns of it is the connection closing (Kafka's handleProduceRequest closes it on
any partition error). aiokafka, kafka-python and confluent-kafka then refresh their metadata
and send to the new leader; the batches sent to the old one in between are lost, as acks=0 allows.
Without the close, a producer would go on sending to the old leader until its metadata aged
out (metadata.max.age.ms, 5 minutes by default), far past this test's deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.support.aio_loop import AioLoop
from tests.support.kafka_clients import close_confluent

pytestmark = pytest.mark.clients

DEADLINE = 20.0  # seconds to reach the new leader; without the close it takes minutes
PAUSE = 0.05  # seconds between messages


def values_on(mock: MockClusterThread, topic: str, broker: int) -> list[bytes]:
    """The values `broker`'s replica of topic-0 holds."""
    from kafka_protocol_codec.records import decode_batch

    def read() -> list[bytes]:
        replicas = mock.cluster.replicas(topic, 0)
        assert replicas is not None
        return [r.value for b in replicas.logs[broker].batches
                for r in decode_batch(b.data).records if r.value is not None]
    return mock.call(read)


def kafka_python_sender(boot: str) -> tuple[Callable[[str, bytes], None], Callable[[], None]]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=boot, acks=0, linger_ms=0)

    def send(topic: str, value: bytes) -> None:
        producer.send(topic, value=value, partition=0)
        producer.flush(timeout=5)
    return send, lambda: producer.close(timeout=5)


def confluent_sender(boot: str) -> tuple[Callable[[str, bytes], None], Callable[[], None]]:
    from confluent_kafka import Producer

    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": boot, "acks": 0, "linger.ms": 0,
                         "error_cb": errors.append})

    def send(topic: str, value: bytes) -> None:
        producer.produce(topic, value=value, partition=0)
        producer.flush(5)
    return send, lambda: close_confluent(producer)


def aiokafka_sender(boot: str) -> tuple[Callable[[str, bytes], None], Callable[[], None]]:
    from aiokafka import AIOKafkaProducer

    aio = AioLoop()

    async def start() -> Any:
        producer = AIOKafkaProducer(bootstrap_servers=boot, acks=0, linger_ms=0)
        await producer.start()
        return producer

    producer = aio.run(start())

    def send(topic: str, value: bytes) -> None:
        aio.run(producer.send_and_wait(topic, value=value, partition=0))

    def close() -> None:
        try:
            aio.run(producer.stop())
        finally:
            aio.close()
    return send, close


SENDERS = {"aiokafka": aiokafka_sender, "kafka-python": kafka_python_sender,
           "confluent-kafka": confluent_sender}


@pytest.mark.parametrize("client_name", sorted(SENDERS))
def test_acks_zero_producer_reaches_the_new_leader(client_name: str,
                                                   topic_name: Callable[[str], str]) -> None:
    with MockClusterThread(brokers=3) as mock:
        topic = topic_name()
        mock.call(mock.cluster.create_topic, topic, 1, 3)
        send, close = SENDERS[client_name](mock.bootstrap_servers)
        try:
            send(topic, b"before")
            old = mock.call(lambda: mock.cluster.image.topics[topic].partitions[0].leader)
            deadline = time.monotonic() + DEADLINE
            while b"before" not in values_on(mock, topic, old) and time.monotonic() < deadline:
                time.sleep(PAUSE)
            assert b"before" in values_on(mock, topic, old)
            new = mock.call(mock.cluster.elect_leader, topic, 0)
            assert new != old
            sent: list[bytes] = []
            while time.monotonic() < deadline:
                value = b"after-%d" % len(sent)
                send(topic, value)
                sent.append(value)
                if set(sent) & set(values_on(mock, topic, new)):
                    break
                time.sleep(PAUSE)
            arrived = [v for v in values_on(mock, topic, new) if v.startswith(b"after-")]
        finally:
            close()
    assert arrived, f"none of {len(sent)} messages reached the new leader in {DEADLINE} s"
    # what reached the new leader came in order, from some message on: the ones before it
    # went to the old leader and were lost, as acks=0 allows
    first = sent.index(arrived[0])
    assert arrived == sent[first:first + len(arrived)]
