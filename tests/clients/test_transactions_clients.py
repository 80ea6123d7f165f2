"""Idempotent and transactional producers of the real clients against the mock cluster.

Default client settings, no api_version pinning. Committed transactions must be visible to
read_committed consumers and aborted ones invisible (but visible to read_uncommitted); a
second producer with the same transactional.id fences the first; kafka-python's default
(idempotent) producer writes every message exactly once. Consumers use assign(), so these
tests need no group membership.

Every wait is bounded: consumers stop when each partition reports its end (or at a
deadline), and every client call carries a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka_protocol_codec.records import decode_batch

from mockbroker.cluster import Cluster
from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

PARTITIONS = 3
TIMEOUT = 20.0  # seconds; any single wait, normally reached in well under a second


# -- helpers --------------------------------------------------------------------------------

def _create(mock: MockClusterThread, topic: str, partitions: int = PARTITIONS) -> None:
    mock.call(mock.cluster.create_topic, topic, partitions)


def _stored(mock: MockClusterThread, topic: str) -> tuple[list[bytes | None], int]:
    """Data record values in the topic's logs (every partition) and the number of
    transaction markers, read on the broker's loop."""

    def read(cluster: Cluster) -> tuple[list[bytes | None], int]:
        topic_id = cluster.image.topics[topic].topic_id
        values: list[bytes | None] = []
        markers = 0
        for p in range(len(cluster.image.topics[topic].partitions)):
            log = cluster.log(topic_id, p)
            assert log is not None
            for batch in log.batches:
                if batch.is_control:
                    markers += 1
                else:
                    values.extend(r.value for r in decode_batch(batch.data).records)
        return values, markers

    return mock.call(read, mock.cluster)


def _values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def confluent_read(boot: str, topic: str, isolation: str,
                   partitions: int = PARTITIONS) -> list[bytes]:
    """Everything a confluent consumer reads from the beginning to each partition's end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": boot, "group.id": f"reader-{uuid.uuid4()}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "enable.partition.eof": True})
    out: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                         for p in range(partitions)])
        at_end: set[int] = set()
        deadline = time.monotonic() + TIMEOUT
        while len(at_end) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                at_end.add(msg.partition())
                continue
            at_end.discard(msg.partition())
            out.append(msg.value())
        assert len(at_end) == partitions, f"no end of partition seen: {at_end}"
    finally:
        consumer.close()
    return out


def kafka_python_read(boot: str, topic: str, isolation: str, expected: int,
                      partitions: int = PARTITIONS) -> list[bytes]:
    """What kafka-python reads from the beginning: until `expected` messages, then a short
    grace period so extra (aborted or duplicated) messages would show."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=boot, group_id=None,
                             isolation_level=isolation)
    out: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        deadline = time.monotonic() + TIMEOUT
        grace: float | None = None
        while time.monotonic() < deadline and (grace is None or time.monotonic() < grace):
            for records in consumer.poll(timeout_ms=100).values():
                out.extend(r.value for r in records)
            if len(out) >= expected and grace is None:
                grace = time.monotonic() + 0.5
    finally:
        consumer.close()
    return out


async def aiokafka_read(boot: str, topic: str, isolation: str, expected: int,
                        partitions: int = PARTITIONS) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=boot, isolation_level=isolation)
    await consumer.start()
    out: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        await consumer.seek_to_beginning()
        deadline = time.monotonic() + TIMEOUT
        grace: float | None = None
        while time.monotonic() < deadline and (grace is None or time.monotonic() < grace):
            batches = await consumer.getmany(timeout_ms=100)
            for records in batches.values():
                out.extend(r.value for r in records)
            if len(out) >= expected and grace is None:
                grace = time.monotonic() + 0.5
    finally:
        await consumer.stop()
    return out


@pytest.fixture
def confluent_producers(mock: MockClusterThread) -> Iterator[Callable[..., Any]]:
    """Makes confluent producers (transactional when given an id, initialised) and closes
    them all before the cluster stops."""
    from confluent_kafka import KafkaException, Producer

    made: list[Any] = []

    def make(txn_id: str | None = None, **config: Any) -> Any:
        conf = {"bootstrap.servers": mock.bootstrap_servers, **config}
        if txn_id is not None:
            conf["transactional.id"] = txn_id
        producer = Producer(conf)
        made.append(producer)
        if txn_id is not None:
            producer.init_transactions(TIMEOUT)
        return producer

    yield make
    for producer in made:
        with contextlib.suppress(KafkaException):  # a fenced producer cannot abort
            producer.close()


def _confluent_txn(producer: Any, topic: str, values: list[bytes], commit: bool) -> None:
    producer.begin_transaction()
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % PARTITIONS)
    if commit:
        producer.commit_transaction(TIMEOUT)
    else:
        producer.flush(TIMEOUT)  # the aborted data reaches the log first
        producer.abort_transaction(TIMEOUT)


# -- confluent-kafka ------------------------------------------------------------------------

def test_confluent_commit_is_visible_and_abort_is_not(mock: MockClusterThread,
                                                      topic_name: Callable[[str], str],
                                                      confluent_producers: Any):
    topic = topic_name()
    _create(mock, topic)
    boot = mock.bootstrap_servers
    committed, aborted, later = _values("c", 30), _values("a", 20), _values("d", 10)
    producer = confluent_producers(f"tx-{topic}")
    _confluent_txn(producer, topic, committed, commit=True)
    _confluent_txn(producer, topic, aborted, commit=False)
    _confluent_txn(producer, topic, later, commit=True)
    producer.flush(TIMEOUT)

    stored, markers = _stored(mock, topic)
    assert sorted(stored) == sorted(committed + aborted + later)  # the log holds all of it
    assert markers == 3 * PARTITIONS  # one marker per partition per transaction
    assert sorted(confluent_read(boot, topic, "read_committed")) == sorted(committed + later)
    assert sorted(confluent_read(boot, topic, "read_uncommitted")) \
        == sorted(committed + aborted + later)


def test_confluent_zombie_is_fenced(mock: MockClusterThread,
                                    topic_name: Callable[[str], str],
                                    confluent_producers: Any):
    from confluent_kafka import KafkaError, KafkaException

    topic = topic_name()
    _create(mock, topic)
    boot = mock.bootstrap_servers
    txn_id = f"tx-{topic}"
    zombie = confluent_producers(txn_id)
    zombie.begin_transaction()
    for value in _values("zombie", 6):
        zombie.produce(topic, value=value)
    zombie.flush(TIMEOUT)

    successor = confluent_producers(txn_id)  # fences the zombie, aborts its txn
    with pytest.raises(KafkaException) as fenced:
        zombie.commit_transaction(TIMEOUT)
    error = fenced.value.args[0]
    assert error.fatal() and error.code() == KafkaError._FENCED, error
    _confluent_txn(successor, topic, _values("successor", 6), commit=True)

    assert sorted(confluent_read(boot, topic, "read_committed")) \
        == sorted(_values("successor", 6))
    meta = mock.call(mock.cluster.transactions.get, txn_id)
    assert meta is not None and meta.state.value == "CompleteCommit"
    assert meta.producer_epoch == 2  # init, fence-abort bump, successor's bump


def test_confluent_transaction_timeout_aborts_and_fences(mock: MockClusterThread,
                                                        topic_name: Callable[[str], str],
                                                        confluent_producers: Any):
    from confluent_kafka import KafkaError, KafkaException

    topic = topic_name()
    _create(mock, topic)
    boot = mock.bootstrap_servers
    txn_id = f"tx-{topic}"
    producer = confluent_producers(txn_id, **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    for value in _values("late", 5):
        producer.produce(topic, value=value)
    producer.flush(TIMEOUT)
    deadline = time.monotonic() + 5  # the server's ticker aborts the transaction at 1 s
    while time.monotonic() < deadline:
        meta = mock.call(mock.cluster.transactions.get, txn_id)
        if meta is not None and meta.state.value == "CompleteAbort":
            break
        time.sleep(0.05)
    assert meta is not None and meta.state.value == "CompleteAbort"
    with pytest.raises(KafkaException) as fenced:
        producer.commit_transaction(TIMEOUT)  # the producer's epoch was bumped: fenced
    error = fenced.value.args[0]
    assert error.fatal() and error.code() == KafkaError._FENCED, error
    stored, markers = _stored(mock, topic)
    assert len(stored) == 5 and markers >= 1
    assert confluent_read(boot, topic, "read_committed") == []


# -- kafka-python ---------------------------------------------------------------------------

def test_kafka_python_idempotent_producer_writes_each_message_once(
        mock: MockClusterThread, topic_name: Callable[[str], str]):
    from kafka import KafkaProducer

    topic = topic_name()
    _create(mock, topic)
    boot = mock.bootstrap_servers
    values = _values("m", 500)
    producer = KafkaProducer(bootstrap_servers=boot)  # idempotent by default
    try:
        futures = [producer.send(topic, value=v) for v in values]
        producer.flush(timeout=TIMEOUT)
        offsets = {(f.get(timeout=TIMEOUT).partition, f.get(timeout=TIMEOUT).offset)
                   for f in futures}
    finally:
        producer.close(timeout=10)
    assert len(offsets) == 500
    stored, markers = _stored(mock, topic)
    assert sorted(stored) == sorted(values) and markers == 0
    assert sorted(kafka_python_read(boot, topic, "read_uncommitted", 500)) == sorted(values)

    def producer_ids(cluster: Cluster) -> set[int]:
        topic_id = cluster.image.topics[topic].topic_id
        return {pid for p in range(PARTITIONS)
                for pid in cluster.log(topic_id, p).producer_states}  # type: ignore[union-attr]

    assert len(mock.call(producer_ids, mock.cluster)) == 1  # one idempotent producer id


def test_kafka_python_transactions_commit_and_abort(mock: MockClusterThread,
                                                    topic_name: Callable[[str], str]):
    from kafka import KafkaProducer

    topic = topic_name()
    _create(mock, topic)
    boot = mock.bootstrap_servers
    committed, aborted = _values("c", 20), _values("a", 20)
    producer = KafkaProducer(bootstrap_servers=boot, transactional_id=f"tx-{topic}")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i, v in enumerate(committed):
            producer.send(topic, value=v, partition=i % PARTITIONS)
        producer.commit_transaction()
        producer.begin_transaction()
        for i, v in enumerate(aborted):
            producer.send(topic, value=v, partition=i % PARTITIONS)
        producer.flush(timeout=TIMEOUT)
        producer.abort_transaction()
    finally:
        producer.close(timeout=10)
    stored, markers = _stored(mock, topic)
    assert sorted(stored) == sorted(committed + aborted) and markers == 2 * PARTITIONS
    assert sorted(kafka_python_read(boot, topic, "read_committed", len(committed))) \
        == sorted(committed)
    assert sorted(kafka_python_read(boot, topic, "read_uncommitted", 40)) \
        == sorted(committed + aborted)


# -- aiokafka -------------------------------------------------------------------------------

def test_aiokafka_transactions_commit_abort_and_fencing(mock: MockClusterThread,
                                                        topic_name: Callable[[str], str]):
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import ProducerFenced

    topic = topic_name()
    _create(mock, topic)
    boot = mock.bootstrap_servers
    txn_id = f"tx-{topic}"
    committed, aborted = _values("c", 20), _values("a", 20)

    async def scenario() -> tuple[list[bytes], list[bytes]]:
        producer = AIOKafkaProducer(bootstrap_servers=boot, transactional_id=txn_id)
        await producer.start()
        try:
            async with producer.transaction():
                for i, v in enumerate(committed):
                    await producer.send(topic, value=v, partition=i % PARTITIONS)
            await producer.begin_transaction()
            for i, v in enumerate(aborted):
                await producer.send_and_wait(topic, value=v, partition=i % PARTITIONS)
            await producer.abort_transaction()
            # a second producer with the same id fences this one mid-transaction
            await producer.begin_transaction()
            await producer.send_and_wait(topic, value=b"zombie", partition=0)
            successor = AIOKafkaProducer(bootstrap_servers=boot, transactional_id=txn_id)
            await successor.start()
            try:
                with pytest.raises(ProducerFenced):
                    await producer.commit_transaction()
                async with successor.transaction():
                    await successor.send(topic, value=b"successor", partition=1)
            finally:
                await successor.stop()
        finally:
            await producer.stop()
        return (await aiokafka_read(boot, topic, "read_committed", len(committed) + 1),
                await aiokafka_read(boot, topic, "read_uncommitted", 42))

    read_committed, read_uncommitted = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert sorted(read_committed) == sorted([*committed, b"successor"])
    assert sorted(read_uncommitted) == sorted([*committed, *aborted, b"zombie", b"successor"])


# -- consume-transform-produce: offsets committed inside the transaction --------------------

def _seed(producer: Any, topic: str, n: int) -> list[bytes]:
    values = _values("in", n)
    for i, v in enumerate(values):
        producer.produce(topic, value=v, partition=i % PARTITIONS)
    assert producer.flush(TIMEOUT) == 0
    return values


def _committed(mock: MockClusterThread, group: str, topic: str) -> dict[int, int]:
    """Offsets the group has committed for the topic, read from the cluster."""

    def read(cluster: Cluster) -> dict[int, int]:
        found = {}
        for p in range(PARTITIONS):
            entry = cluster.groups.offsets.get(group, topic, p)
            if entry is not None:
                found[p] = entry.offset
        return found

    return mock.call(read, mock.cluster)


def test_confluent_send_offsets_to_transaction(mock: MockClusterThread,
                                               topic_name: Callable[[str], str],
                                               confluent_producers: Any):
    from confluent_kafka import Consumer, TopicPartition

    src, dst = topic_name("src"), topic_name("dst")
    _create(mock, src)
    _create(mock, dst)
    boot = mock.bootstrap_servers
    inputs = _seed(confluent_producers(), src, 30)
    group = f"g-{src}"
    consumer = Consumer({"bootstrap.servers": boot, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    producer = confluent_producers(f"tx-{src}")
    try:
        consumer.assign([TopicPartition(src, p) for p in range(PARTITIONS)])
        consumed = []
        deadline = time.monotonic() + TIMEOUT
        while len(consumed) < len(inputs) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                consumed.append(msg)
        assert len(consumed) == len(inputs)
        producer.begin_transaction()
        for msg in consumed:
            producer.produce(dst, value=msg.value().replace(b"in", b"out"),
                             partition=msg.partition())
        positions = consumer.position([TopicPartition(src, p) for p in range(PARTITIONS)])
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(),
                                             TIMEOUT)
        assert _committed(mock, group, src) == {}  # pending until the commit
        producer.commit_transaction(TIMEOUT)
        assert _committed(mock, group, src) == dict.fromkeys(range(PARTITIONS), 10)
        seen = consumer.committed([TopicPartition(src, p) for p in range(PARTITIONS)],
                                  TIMEOUT)
        assert {tp.partition: tp.offset for tp in seen} == dict.fromkeys(range(PARTITIONS), 10)

        # an aborted transaction's offsets never become visible
        producer.begin_transaction()
        producer.produce(dst, value=b"doomed", partition=0)
        producer.send_offsets_to_transaction(
            [TopicPartition(src, p, 3) for p in range(PARTITIONS)],
            consumer.consumer_group_metadata(), TIMEOUT)
        producer.abort_transaction(TIMEOUT)
        assert _committed(mock, group, src) == dict.fromkeys(range(PARTITIONS), 10)
    finally:
        consumer.close()
    assert sorted(confluent_read(boot, dst, "read_committed")) == sorted(_values("out", 30))


def test_kafka_python_send_offsets_to_transaction(mock: MockClusterThread,
                                                  topic_name: Callable[[str], str]):
    from kafka import KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    src, dst = topic_name("src"), topic_name("dst")
    _create(mock, src)
    _create(mock, dst)
    group = f"g-{src}"
    producer = KafkaProducer(bootstrap_servers=mock.bootstrap_servers,
                             transactional_id=f"tx-{src}")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(dst, value=b"out", partition=0)
        producer.send_offsets_to_transaction(
            {TopicPartition(src, p): OffsetAndMetadata(7 + p, "meta", -1)
             for p in range(PARTITIONS)}, group)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(dst, value=b"doomed", partition=0)
        producer.send_offsets_to_transaction(
            {TopicPartition(src, 0): OffsetAndMetadata(99, "", -1)}, group)
        producer.abort_transaction()
    finally:
        producer.close(timeout=10)
    assert _committed(mock, group, src) == {0: 7, 1: 8, 2: 9}


def test_aiokafka_send_offsets_to_transaction(mock: MockClusterThread,
                                              topic_name: Callable[[str], str]):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    src, dst = topic_name("src"), topic_name("dst")
    _create(mock, src)
    _create(mock, dst)
    boot = mock.bootstrap_servers
    group = f"g-{src}"

    async def scenario() -> dict[int, int | None]:
        producer = AIOKafkaProducer(bootstrap_servers=boot, transactional_id=f"tx-{src}")
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send(dst, value=b"out", partition=0)
                await producer.send_offsets_to_transaction(
                    {TopicPartition(src, p): 4 + p for p in range(PARTITIONS)}, group)
            await producer.begin_transaction()
            await producer.send_offsets_to_transaction({TopicPartition(src, 0): 99}, group)
            await producer.abort_transaction()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=boot, group_id=group,
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            return {p: await consumer.committed(TopicPartition(src, p))
                    for p in range(PARTITIONS)}
        finally:
            await consumer.stop()

    assert asyncio.run(asyncio.wait_for(scenario(), 60)) == {0: 4, 1: 5, 2: 6}
    assert _committed(mock, group, src) == {0: 4, 1: 5, 2: 6}
