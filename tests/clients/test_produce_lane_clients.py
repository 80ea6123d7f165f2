"""Real clients through the plain Produce lane (handlers/produce_lane.py).

On a one-broker cluster (one replica per partition) and on a three-broker one (three
replicas, whose followers fetch in the leader's append), aiokafka, kafka-python,
confluent-kafka and kcat produce with their default settings, and then with idempotence on
(Java's default, and so Spark's): every message must be acknowledged at the offset it is
read back from, with exactly the key and value sent, and the brokers' lanes must have
answered Produce requests (their `taken` counts moved), so what is checked is the lane's
work and not only the general path's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import (
    CONSUME_TIMEOUT,
    Client,
    Delivered,
    KcatClient,
    Msg,
    close_confluent,
)

pytestmark = pytest.mark.clients

PARTITIONS = 3
COUNT = 600


def messages(tag: str) -> list[Msg]:
    return [Msg(b"key-%d" % i, b"%s-value-%d-" % (tag.encode(), i) + b"x" * (i % 50))
            for i in range(COUNT)]


def lane_taken(mock: MockClusterThread) -> int:
    """Requests the brokers' lanes answered so far, over all brokers."""
    assert mock.mock is not None
    server = mock.mock.server
    lanes = mock.call(lambda: [server.produce_lane(node)
                               for node in mock.cluster.brokers.values()])
    assert None not in lanes, "the compiled plain Produce codec is not built"
    return sum(lane.taken for lane in lanes)


def produce_idempotent(client: str, boot: str, topic: str, msgs: list[Msg],
                       kcat: Client) -> list[Delivered] | None:
    """`msgs` through the client's own producer with idempotence on (acks=all, as
    idempotence requires); the deliveries where the client reports them."""
    if client == "confluent-kafka":
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": boot, "enable.idempotence": True})
        results: dict[int, Delivered] = {}
        errors: list[Any] = []

        def report(index: int) -> Any:
            def on_delivery(err: Any, m: Any) -> None:
                if err is not None:
                    errors.append(err)
                else:
                    results[index] = Delivered(m.partition(), m.offset())
            return on_delivery

        try:
            for i, m in enumerate(msgs):
                producer.produce(topic, key=m.key, value=m.value, on_delivery=report(i))
                producer.poll(0)
            assert producer.flush(CONSUME_TIMEOUT) == 0
        finally:
            close_confluent(producer)
        assert not errors, errors[:5]
        return [results[i] for i in range(len(msgs))]
    if client == "kafka-python":
        from kafka import KafkaProducer

        kp = KafkaProducer(bootstrap_servers=boot, enable_idempotence=True)
        try:
            futures = [kp.send(topic, key=m.key, value=m.value) for m in msgs]
            kp.flush(timeout=CONSUME_TIMEOUT)
            return [Delivered(md.partition, md.offset)
                    for md in (f.get(timeout=CONSUME_TIMEOUT) for f in futures)]
        finally:
            kp.close(timeout=10)
    if client == "aiokafka":
        from aiokafka import AIOKafkaProducer

        async def run() -> list[Delivered]:
            producer = AIOKafkaProducer(bootstrap_servers=boot, enable_idempotence=True)
            await producer.start()
            try:
                futures = [await producer.send(topic, key=m.key, value=m.value) for m in msgs]
                await producer.flush()
                return [Delivered(md.partition, md.offset)
                        for md in [await f for f in futures]]
            finally:
                await producer.stop()

        return asyncio.run(asyncio.wait_for(run(), CONSUME_TIMEOUT))
    assert client == "kcat"
    lines = b"".join(m.key + b":" + m.value + b"\n" for m in msgs if m.key and m.value)
    assert isinstance(kcat, KcatClient)
    kcat._run(["-P", "-b", boot, "-t", topic, "-K:", "-X", "enable.idempotence=true"],
                lines)
    return None


@pytest.mark.parametrize("brokers", [1, 3], ids=["1-broker", "3-brokers"])
@pytest.mark.parametrize("idempotent", [False, True], ids=["default", "idempotent"])
@pytest.mark.parametrize("client_name", ["aiokafka", "kafka-python", "confluent-kafka", "kcat"])
def test_clients_produce_through_the_lane(client_name: str, idempotent: bool, brokers: int,
                                          client_factory: Callable[[str], Client],
                                          topic_name: Callable[[str], str]) -> None:
    client = client_factory(client_name)
    with MockClusterThread(brokers=brokers) as mock:
        topic = topic_name()
        mock.call(mock.cluster.create_topic, topic, PARTITIONS, brokers)
        boot = mock.bootstrap_servers
        msgs = messages(client_name)
        before = lane_taken(mock)
        if idempotent:
            delivered = produce_idempotent(client_name, boot, topic, msgs, client)
        else:
            delivered = client.produce(boot, topic, msgs)
        taken = lane_taken(mock) - before
        consumed = client.consume(boot, topic, PARTITIONS, COUNT)
    assert taken > 0, "no Produce request went through the lane"
    got = sorted((c.key, c.value) for c in consumed)
    assert got == sorted((m.key, m.value) for m in msgs)  # each exactly once
    if delivered is not None:  # acknowledged where it is read back
        where = {(c.partition, c.offset): (c.key, c.value) for c in consumed}
        assert [where[(d.partition, d.offset)] for d in delivered] == \
            [(m.key, m.value) for m in msgs]
    per_partition: dict[int, list[int]] = {}
    for c in consumed:
        per_partition.setdefault(c.partition, []).append(c.offset)
    for offsets in per_partition.values():  # no gaps, no duplicates
        assert sorted(offsets) == list(range(len(offsets)))
