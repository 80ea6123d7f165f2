"""Connection-level faults against real clients: what each one reports or delivers, exactly.

For confluent-kafka (librdkafka), kafka-python and aiokafka, with a one-broker cluster whose
single partition is seeded with three record batches of two records (offsets 0-5):

- a CRC-corrupted first batch (one Fetch): librdkafka with check.crcs=true delivers a
  _BAD_MSG error naming the failed CRC32C check, fetches again and delivers 0-5 once; without
  check.crcs (its default) it delivers 0-5 without noticing. kafka-python (check_crcs on by
  default) raises CorruptRecordError from poll; aiokafka (check_crcs on by default) raises
  CorruptRecordException from getmany, then delivers 0-5 on the next calls. (kafka-python
  3.0's next poll after that error spins without returning, so the test stops there.)
- a duplicated first batch (one Fetch): librdkafka and kafka-python deliver offsets 0 and 1
  twice (0, 1, 0, 1, 2, ..., 5: both skip only records below the fetch's start offset, and
  both copies are at it); aiokafka delivers 0-5 once (it drops records below its position).
- a Produce that is read and never answered (hang, selected by the producer's client.id):
  kafka-python and aiokafka fail the send with RequestTimedOutError after their
  request_timeout_ms; librdkafka times the request out at message.timeout.ms and fails the
  delivery with _MSG_TIMED_OUT. Nothing is written.
- refused connections on the only broker: bootstrapping fails (kafka-python 3.0:
  KafkaTimeoutError "Unable to bootstrap" at bootstrap_timeout_ms; librdkafka: list_topics
  fails with _TRANSPORT), and after accept-connections the same calls succeed.
- a bandwidth cap on the consumer's connections (by client id), for each client: every
  record arrives intact and in order, and the fault counts the paced bytes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

TOPIC = "faulty"
DEADLINE = 15.0
SEEDED = [(o, f"{o // 2}-{o % 2}".encode()) for o in range(6)]  # (offset, value)
DOUBLED = SEEDED[:2] + SEEDED  # the first batch twice


@pytest.fixture
def mock() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=1) as cluster:
        cluster.control.create_topic(TOPIC, partitions=1, replication_factor=1)
        yield cluster


def seed(mock: MockClusterThread, batches: int = 3, per_batch: int = 2,
         value_size: int = 0) -> list[bytes]:
    """Append batches straight to the log (on the broker's loop); the values in order."""
    values: list[bytes] = []

    def append() -> None:
        cluster = mock.cluster
        leader = cluster.brokers[cluster.image.partition(TOPIC, 0).leader]
        for b in range(batches):
            batch = [f"{b}-{i}".encode().ljust(value_size, b".") for i in range(per_batch)]
            values.extend(batch)
            result = cluster.produce(leader, TOPIC, 0,
                                     build_batch([RecordSpec(value=v) for v in batch]), acks=1)
            assert result.ok
    mock.call(append)
    return values


def log_end(mock: MockClusterThread) -> int:
    state = mock.control.state()
    end: int = state["topics"][TOPIC]["partitions"][0]["log_end_offset"]
    return end


# -- confluent-kafka --------------------------------------------------------------------------

def confluent_consume(mock: MockClusterThread, wanted: int,
                      **config: Any) -> tuple[list[tuple[int, bytes]], list[Any]]:
    """(offset, value) delivered and errors seen, until `wanted` messages or the deadline."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": mock.bootstrap_servers, "group.id": "cf",
                         "enable.auto.commit": False, **config})
    got: list[tuple[int, bytes]] = []
    errors: list[Any] = []
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + DEADLINE
        while len(got) < wanted and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                errors.append(message.error())
            else:
                got.append((message.offset(), message.value()))
    finally:
        consumer.close()
    return got, errors


def test_confluent_sees_the_corrupted_crc(mock: MockClusterThread) -> None:
    seed(mock)
    fault = mock.control.inject_connection_fault("corrupt-crc", topic=TOPIC, count=1)
    got, errors = confluent_consume(mock, len(SEEDED), **{"check.crcs": True})
    assert [e.name() for e in errors] == ["_BAD_MSG"]
    assert "failed CRC32C check" in errors[0].str() and "offset 0" in errors[0].str()
    assert got == SEEDED  # fetched again, delivered once
    assert mock.control.wait_fault_consumed(fault["id"], timeout_ms=1000)["satisfied"]


def test_confluent_without_check_crcs_does_not_notice(mock: MockClusterThread) -> None:
    seed(mock)
    fault = mock.control.inject_connection_fault("corrupt-crc", count=1)
    got, errors = confluent_consume(mock, len(SEEDED))
    assert (got, errors) == (SEEDED, [])
    assert all(f["id"] != fault["id"] for f in mock.control.state()["faults"])  # it fired


def test_confluent_delivery_of_a_duplicated_batch(mock: MockClusterThread) -> None:
    seed(mock)
    mock.control.inject_connection_fault("duplicate-batch", topic=TOPIC, partition=0, count=1)
    got, errors = confluent_consume(mock, len(DOUBLED))
    assert (got, errors) == (DOUBLED, [])


def test_confluent_never_answered_produce_times_out(mock: MockClusterThread) -> None:
    from confluent_kafka import Producer

    mock.control.inject_connection_fault("hang", api="Produce", client_id="hung-producer")
    producer = Producer({"bootstrap.servers": mock.bootstrap_servers,
                         "client.id": "hung-producer", "request.timeout.ms": 1000,
                         "message.timeout.ms": 2000, "retries": 0,
                         "enable.idempotence": False})
    reports: list[Any] = []
    producer.produce(TOPIC, b"lost", on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(DEADLINE) == 0
    assert [e.name() for e in reports] == ["_MSG_TIMED_OUT"]
    assert log_end(mock) == 0  # read, never handled
    hung = mock.control.state()["faults"][0]
    assert (hung["kind"], hung["fired"]) == ("hang", 1)


def test_confluent_refused_bootstrap_then_accepted(mock: MockClusterThread) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    mock.control.refuse_connections(0)
    admin = AdminClient({"bootstrap.servers": mock.bootstrap_servers,
                         "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 100})
    with pytest.raises(KafkaException) as refused:
        admin.list_topics(timeout=1.5)
    assert refused.value.args[0].name() == "_TRANSPORT"
    mock.control.accept_connections(0)
    assert TOPIC in admin.list_topics(timeout=DEADLINE).topics


def capped(mock: MockClusterThread) -> tuple[list[bytes], int]:
    """80 records of 1000 bytes, and a bandwidth cap on the client id "slow-consumer"."""
    values = seed(mock, batches=8, per_batch=10, value_size=1000)
    fault = mock.control.inject_connection_fault("bandwidth", client_id="slow-consumer",
                                                 bytes_per_second=400_000)
    return values, fault["id"]


def check_capped(mock: MockClusterThread, fault_id: int, values: list[bytes],
                 got: list[tuple[int, bytes]]) -> None:
    assert got == list(enumerate(values))  # intact and in order
    paced = next(f for f in mock.control.state()["faults"] if f["id"] == fault_id)
    assert paced["throttled_bytes"] > len(values) * 1000  # every record went through it
    assert paced["fired"] >= 1


def test_confluent_consumer_under_a_bandwidth_cap(mock: MockClusterThread) -> None:
    values, fault_id = capped(mock)
    got, errors = confluent_consume(mock, len(values), **{"client.id": "slow-consumer"})
    assert errors == []
    check_capped(mock, fault_id, values, got)


# -- kafka-python -----------------------------------------------------------------------------

def kafka_python_consumer(mock: MockClusterThread, client_id: str = "kafka-python") -> Any:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=mock.bootstrap_servers, client_id=client_id,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    consumer.assign([TopicPartition(TOPIC, 0)])
    return consumer


def kafka_python_poll(consumer: Any, wanted: int) -> list[tuple[int, bytes]]:
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + DEADLINE
    while len(got) < wanted and time.monotonic() < deadline:
        for records in consumer.poll(200).values():
            got += [(r.offset, r.value) for r in records]
    return got


def test_kafka_python_sees_the_corrupted_crc(mock: MockClusterThread) -> None:
    from kafka.errors import CorruptRecordError

    seed(mock)
    mock.control.inject_connection_fault("corrupt-crc", topic=TOPIC, count=1)
    consumer = kafka_python_consumer(mock)
    try:
        raised = None
        deadline = time.monotonic() + DEADLINE
        while raised is None and time.monotonic() < deadline:
            try:
                assert consumer.poll(200) == {}  # nothing before the corrupted batch
            except CorruptRecordError as exc:
                raised = exc
    finally:
        consumer.close()
    assert raised is not None
    assert "at offset 0 failed crc check" in str(raised)


def test_kafka_python_delivery_of_a_duplicated_batch(mock: MockClusterThread) -> None:
    seed(mock)
    mock.control.inject_connection_fault("duplicate-batch", count=1)
    consumer = kafka_python_consumer(mock)
    try:
        got = kafka_python_poll(consumer, len(DOUBLED))
    finally:
        consumer.close()
    assert got == DOUBLED


def test_kafka_python_never_answered_produce_times_out(mock: MockClusterThread) -> None:
    from kafka import KafkaProducer
    from kafka.errors import RequestTimedOutError

    mock.control.inject_connection_fault("hang", api="Produce", client_id="hung-producer")
    producer = KafkaProducer(bootstrap_servers=mock.bootstrap_servers,
                             client_id="hung-producer", request_timeout_ms=1000, retries=0,
                             enable_idempotence=False)
    try:
        with pytest.raises(RequestTimedOutError):
            producer.send(TOPIC, b"lost").get(timeout=DEADLINE)
    finally:
        producer.close(timeout=5)
    assert log_end(mock) == 0


def test_kafka_python_consumer_under_a_bandwidth_cap(mock: MockClusterThread) -> None:
    values, fault_id = capped(mock)
    consumer = kafka_python_consumer(mock, client_id="slow-consumer")
    try:
        got = kafka_python_poll(consumer, len(values))
    finally:
        consumer.close()
    check_capped(mock, fault_id, values, got)


def test_kafka_python_refused_bootstrap_then_accepted(mock: MockClusterThread) -> None:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaTimeoutError

    mock.control.refuse_connections(0)
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaAdminClient(bootstrap_servers=mock.bootstrap_servers, bootstrap_timeout_ms=1500)
    mock.control.accept_connections(0)
    admin = KafkaAdminClient(bootstrap_servers=mock.bootstrap_servers)
    try:
        assert TOPIC in admin.list_topics()
    finally:
        admin.close()


# -- aiokafka ---------------------------------------------------------------------------------

def aiokafka_consume(mock: MockClusterThread, wanted: int, client_id: str = "aiokafka"
                     ) -> tuple[list[tuple[int, bytes]], list[Exception]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> tuple[list[tuple[int, bytes]], list[Exception]]:
        consumer = AIOKafkaConsumer(bootstrap_servers=mock.bootstrap_servers,
                                    client_id=client_id,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        got: list[tuple[int, bytes]] = []
        errors: list[Exception] = []
        try:
            consumer.assign([TopicPartition(TOPIC, 0)])
            deadline = time.monotonic() + DEADLINE
            while len(got) < wanted and time.monotonic() < deadline:
                try:
                    batches = await consumer.getmany(timeout_ms=200)
                except Exception as exc:  # what the client raises is the subject
                    errors.append(exc)
                    continue
                for records in batches.values():
                    got += [(r.offset, r.value) for r in records]
        finally:
            await consumer.stop()
        return got, errors

    return asyncio.run(run())


def test_aiokafka_sees_the_corrupted_crc(mock: MockClusterThread) -> None:
    from aiokafka.errors import CorruptRecordException

    seed(mock)
    mock.control.inject_connection_fault("corrupt-crc", count=1)
    got, errors = aiokafka_consume(mock, len(SEEDED))
    assert [type(e) for e in errors] == [CorruptRecordException]
    assert "Invalid CRC" in str(errors[0])
    assert got == SEEDED


def test_aiokafka_delivery_of_a_duplicated_batch(mock: MockClusterThread) -> None:
    seed(mock)
    mock.control.inject_connection_fault("duplicate-batch", count=1)
    got, errors = aiokafka_consume(mock, len(SEEDED))
    assert (got, errors) == (SEEDED, [])
    assert mock.control.state()["faults"] == []  # it fired


def test_aiokafka_never_answered_produce_times_out(mock: MockClusterThread) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import RequestTimedOutError

    mock.control.inject_connection_fault("hang", api="Produce", client_id="hung-producer")

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=mock.bootstrap_servers,
                                    client_id="hung-producer", request_timeout_ms=1000,
                                    enable_idempotence=False)
        await producer.start()
        try:
            with pytest.raises(RequestTimedOutError):
                await asyncio.wait_for(producer.send_and_wait(TOPIC, b"lost"), DEADLINE)
        finally:
            await producer.stop()

    asyncio.run(run())
    assert log_end(mock) == 0


def test_aiokafka_consumer_under_a_bandwidth_cap(mock: MockClusterThread) -> None:
    values, fault_id = capped(mock)
    got, errors = aiokafka_consume(mock, len(values), client_id="slow-consumer")
    assert errors == []
    check_capped(mock, fault_id, values, got)
