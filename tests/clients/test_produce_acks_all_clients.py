"""Real clients producing with acks=all, read back where they were acknowledged.

On a one-broker cluster (one replica per partition) and on a three-broker one (three
replicas, whose followers fetch in the leader's append), aiokafka, kafka-python,
confluent-kafka and kcat produce through the suite's adapters (acks=all, otherwise the
clients' defaults), and then with idempotence on as well (Java's default, and so Spark's):
every message must be acknowledged at the offset it is read back from, with exactly the key
and value sent. Transactional producers (aiokafka, kafka-python and confluent-kafka; kcat
has none) commit one transaction and abort the next: a read_committed consumer must read
exactly the committed messages, where they were acknowledged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import Client, ConfluentClient, Delivered, Msg

pytestmark = pytest.mark.clients

PARTITIONS = 3
COUNT = 600


def messages(tag: str) -> list[Msg]:
    return [Msg(b"key-%d" % i, b"%s-value-%d-" % (tag.encode(), i) + b"x" * (i % 50))
            for i in range(COUNT)]


@pytest.mark.parametrize("brokers", [1, 3], ids=["1-broker", "3-brokers"])
@pytest.mark.parametrize("idempotent", [False, True], ids=["default", "idempotent"])
@pytest.mark.parametrize("client_name", ["aiokafka", "kafka-python", "confluent-kafka", "kcat"])
def test_clients_produce_with_acks_all(client_name: str, idempotent: bool, brokers: int,
                                       client_factory: Callable[[str], Client],
                                       topic_name: Callable[[str], str]) -> None:
    client = client_factory(client_name)
    with MockClusterThread(brokers=brokers) as mock:
        topic = topic_name()
        mock.call(mock.cluster.create_topic, topic, PARTITIONS, brokers)
        boot = mock.bootstrap_servers
        msgs = messages(client_name)
        delivered = client.produce(boot, topic, msgs, idempotent=idempotent)
        consumed = client.consume(boot, topic, PARTITIONS, COUNT)
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


def _transactions_confluent(boot: str, topic: str, commit: list[Msg],
                            abort: list[Msg]) -> list[Delivered]:
    from confluent_kafka import Producer

    delivered: dict[int, Delivered] = {}
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": boot, "transactional.id": f"{topic}-tx"})
    producer.init_transactions(30)
    for batch, ending in ((commit, producer.commit_transaction),
                          (abort, producer.abort_transaction)):
        producer.begin_transaction()
        for i, m in enumerate(batch):
            def report(err: Any, msg: Any, i: int = i, batch: list[Msg] = batch) -> None:
                if err is not None:
                    errors.append(err)
                elif batch is commit:
                    delivered[i] = Delivered(msg.partition(), msg.offset())
            producer.produce(topic, key=m.key, value=m.value, partition=i % PARTITIONS,
                             on_delivery=report)
        assert producer.flush(30) == 0  # every message acknowledged, then the ending
        ending(30)
    assert not errors, errors[:5]
    return [delivered[i] for i in range(len(commit))]


def _transactions_kafka_python(boot: str, topic: str, commit: list[Msg],
                               abort: list[Msg]) -> list[Delivered]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=boot, transactional_id=f"{topic}-tx")
    try:
        producer.init_transactions()
        out = []
        for batch, committing in ((commit, True), (abort, False)):
            producer.begin_transaction()
            futures = [producer.send(topic, key=m.key, value=m.value, partition=i % PARTITIONS)
                       for i, m in enumerate(batch)]
            producer.flush(timeout=30)
            metadata = [f.get(timeout=30) for f in futures]
            if committing:
                out = [Delivered(r.partition, r.offset) for r in metadata]
                producer.commit_transaction()
            else:
                producer.abort_transaction()
        return out
    finally:
        producer.close(timeout=10)


def _transactions_aiokafka(boot: str, topic: str, commit: list[Msg],
                           abort: list[Msg]) -> list[Delivered]:
    from aiokafka import AIOKafkaProducer

    async def run() -> list[Delivered]:
        producer = AIOKafkaProducer(bootstrap_servers=boot, transactional_id=f"{topic}-tx")
        await producer.start()
        try:
            out = []
            for batch, committing in ((commit, True), (abort, False)):
                await producer.begin_transaction()
                futures = [await producer.send(topic, key=m.key, value=m.value,
                                               partition=i % PARTITIONS)
                           for i, m in enumerate(batch)]
                metadata = [await f for f in futures]
                if committing:
                    out = [Delivered(r.partition, r.offset) for r in metadata]
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
            return out
        finally:
            await producer.stop()

    return asyncio.run(asyncio.wait_for(run(), 60))


TRANSACTIONAL = {"aiokafka": _transactions_aiokafka, "kafka-python": _transactions_kafka_python,
                 "confluent-kafka": _transactions_confluent}


@pytest.mark.parametrize("brokers", [1, 3], ids=["1-broker", "3-brokers"])
@pytest.mark.parametrize("client_name", sorted(TRANSACTIONAL))
def test_transactional_producers(client_name: str, brokers: int,
                                topic_name: Callable[[str], str]) -> None:
    with MockClusterThread(brokers=brokers) as mock:
        topic = topic_name()
        mock.call(mock.cluster.create_topic, topic, PARTITIONS, brokers)
        boot = mock.bootstrap_servers
        msgs = messages(client_name)
        commit, abort = msgs[:COUNT // 2], msgs[COUNT // 2:]
        delivered = TRANSACTIONAL[client_name](boot, topic, commit, abort)
        # read_committed (librdkafka's default), then briefly longer: an aborted one would show
        consumed = ConfluentClient().consume(boot, topic, PARTITIONS, len(commit))
    assert sorted((c.key, c.value) for c in consumed) == sorted((m.key, m.value) for m in commit)
    where = {(c.partition, c.offset): (c.key, c.value) for c in consumed}
    assert [where[(d.partition, d.offset)] for d in delivered] == \
        [(m.key, m.value) for m in commit]
