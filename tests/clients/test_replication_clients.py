"""Replication with consequences, seen by real clients.

- acks=1: N records are acknowledged and replicated, replication of the partition is paused,
  M more are acknowledged by the leader alone, and the leader stops. The new leader (a
  follower still in the ISR: its lag is below replica.lag.time.max.ms) never had the M, so
  a consumer reads exactly the N; the old leader truncates them when it comes back.
- acks=all with min.insync.replicas=2: leaders stop and restart round after round while a
  producer writes; every acknowledged record is read back.
- KIP-320: a follower left out of the ISR misses five records; an unclean election makes it
  leader, and librdkafka's consumer, positioned past its log end, reports the truncation at
  the real end of the old epoch on the new leader (OffsetForLeaderEpoch from its epoch cache).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

DEADLINE = 20.0
KEPT, LOST = 6, 4
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka")


def _produce(client: str, boot: str, topic: str, values: list[bytes], acks: Any) -> None:
    """Send `values` to partition 0 and wait until each is acknowledged."""
    if client == "confluent-kafka":
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": boot, "acks": str(acks),
                             "enable.idempotence": False, "linger.ms": 0})
        errors: list[Any] = []
        for value in values:
            producer.produce(topic, value, partition=0,
                             on_delivery=lambda err, _m: err and errors.append(err))
            producer.flush(10)
        assert producer.flush(10) == 0 and errors == []
    elif client == "kafka-python":
        from kafka import KafkaProducer

        kp = KafkaProducer(bootstrap_servers=boot, acks=acks, enable_idempotence=False)
        try:
            for value in values:
                kp.send(topic, value, partition=0).get(timeout=10)
        finally:
            kp.close(timeout=10)
    else:
        from aiokafka import AIOKafkaProducer

        async def run() -> None:
            ap = AIOKafkaProducer(bootstrap_servers=boot, acks=acks)
            await ap.start()
            try:
                for value in values:
                    await ap.send_and_wait(topic, value, partition=0)
            finally:
                await ap.stop()
        asyncio.run(run())


def _consume(client: str, boot: str, topic: str, count: int) -> list[bytes]:
    """Read partition 0 from the beginning until `count` records or the deadline."""
    deadline = time.monotonic() + DEADLINE
    out: list[bytes] = []
    if client == "confluent-kafka":
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": boot, "group.id": f"g-{topic}",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        try:
            while len(out) < count and time.monotonic() < deadline:
                out += [m.value() for m in consumer.consume(100, 0.1) if m.error() is None]
        finally:
            consumer.close()
    elif client == "kafka-python":
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KTP

        kc = KafkaConsumer(bootstrap_servers=boot, group_id=None, auto_offset_reset="earliest")
        kc.assign([KTP(topic, 0)])
        try:
            while len(out) < count and time.monotonic() < deadline:
                out += [r.value for rs in kc.poll(100).values() for r in rs]
        finally:
            kc.close()
    else:
        from aiokafka import AIOKafkaConsumer
        from aiokafka import TopicPartition as ATP

        async def run() -> None:
            ac = AIOKafkaConsumer(bootstrap_servers=boot, auto_offset_reset="earliest",
                                  enable_auto_commit=False)
            await ac.start()
            try:
                ac.assign([ATP(topic, 0)])
                while len(out) < count and time.monotonic() < deadline:
                    out.extend(r.value for rs in (await ac.getmany(timeout_ms=100)).values()
                               for r in rs)
            finally:
                await ac.stop()
        asyncio.run(run())
    return out


def _partition(mock: MockClusterThread, topic: str) -> dict[str, Any]:
    state: dict[str, Any] = mock.control.state()["topics"][topic]["partitions"][0]
    return state


@pytest.mark.parametrize("client", CLIENTS)
def test_acks_1_records_only_the_failed_leader_held_are_lost(client: str) -> None:
    topic = f"acks1-{client}"
    with MockClusterThread(brokers=3) as mock:
        mock.control.create_topic(topic, partitions=1, replication_factor=3)
        kept = [f"kept-{i}".encode() for i in range(KEPT)]
        lost = [f"lost-{i}".encode() for i in range(LOST)]
        _produce(client, mock.bootstrap_servers, topic, kept, acks=1)
        mock.control.pause_replication(topic=topic, partition=0)
        _produce(client, mock.bootstrap_servers, topic, lost, acks=1)
        before = _partition(mock, topic)
        old = before["leader"]
        ends = {r["broker"]: r["log_end_offset"] for r in before["replica_logs"]}
        assert ends[old] == KEPT + LOST and before["high_watermark"] == KEPT
        assert sorted(before["isr"]) == [0, 1, 2]  # behind, but not for lag.time.max yet
        mock.control.stop_broker(old)
        assert _consume(client, mock.bootstrap_servers, topic, KEPT) == kept
        after = _partition(mock, topic)
        assert after["leader"] != old and after["high_watermark"] == KEPT  # nothing more
        mock.control.resume_replication(topic=topic, partition=0)
        mock.control.start_broker(old)
        rejoined = {r["broker"]: r for r in _partition(mock, topic)["replica_logs"]}
        assert rejoined[old]["log_end_offset"] == KEPT and rejoined[old]["in_isr"]


def test_acks_all_with_min_insync_2_keeps_every_acknowledged_record() -> None:
    from confluent_kafka import Producer

    topic = "acks-all"
    with MockClusterThread(brokers=3) as mock:
        mock.control.create_topic(topic, partitions=1, replication_factor=3,
                                  configs={"min.insync.replicas": "2"})
        producer = Producer({"bootstrap.servers": mock.bootstrap_servers, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5,
                             "message.timeout.ms": 15000})
        acked: list[bytes] = []
        failed: list[Any] = []

        def report(err: Any, m: Any) -> None:
            (failed.append(err) if err is not None else acked.append(m.value()))

        for round_ in range(4):
            for i in range(10):
                producer.produce(topic, f"r{round_}-{i}".encode(), partition=0,
                                 on_delivery=report)
            producer.poll(0)
            leader = _partition(mock, topic)["leader"]
            mock.control.stop_broker(leader)
            producer.flush(15)
            mock.control.start_broker(leader)
        assert producer.flush(15) == 0
        assert failed == [] and len(acked) == 40
        read = _consume("confluent-kafka", mock.bootstrap_servers, topic, len(acked))
        assert sorted(read) == sorted(acked)
        assert _partition(mock, topic)["high_watermark"] == len(acked)


def test_confluent_detects_the_truncation_of_a_real_unclean_election() -> None:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    topic = "unclean-real"
    with MockClusterThread(brokers=3) as mock:
        mock.control.create_topic(topic, partitions=1, replication_factor=3)
        boot = mock.bootstrap_servers
        _produce("kafka-python", boot, topic, [f"a-{i}".encode() for i in range(5)], acks=1)
        part = _partition(mock, topic)
        laggard = next(b for b in part["replicas"] if b != part["leader"])
        mock.control.pause_replication(broker=laggard)
        mock.control.set_isr(topic, 0, [b for b in part["isr"] if b != laggard])
        _produce("kafka-python", boot, topic, [f"b-{i}".encode() for i in range(5)],
                 acks="all")
        consumer = Consumer({"bootstrap.servers": boot, "group.id": "unclean-real",
                             "enable.auto.commit": False, "auto.offset.reset": "error"})
        consumer.assign([TopicPartition(topic, 0, 0)])
        records: list[Any] = []
        errors: list[Any] = []
        try:
            deadline = time.monotonic() + DEADLINE
            while len(records) < 10 and time.monotonic() < deadline:
                records += [m for m in consumer.consume(100, 0.1) if m.error() is None]
            assert [m.offset() for m in records] == list(range(10))
            result = mock.control.unclean_elect(topic, 0, broker=laggard)
            assert (result["leader"], result["log_end_offset"], result["truncated_records"]) \
                == (laggard, 5, 5)
            mock.control.resume_replication(broker=laggard)
            _produce("kafka-python", boot, topic, [b"new-0"], acks=1)
            deadline = time.monotonic() + DEADLINE
            while not errors and time.monotonic() < deadline:
                errors += [m.error() for m in consumer.consume(100, 0.1)
                           if m.error() is not None]
        finally:
            consumer.close()
        assert len(errors) == 1 and errors[0].code() == KafkaError._AUTO_OFFSET_RESET
        assert "log truncation detected at offset 10 (leader epoch 0)" in errors[0].str()
        assert "broker end offset is 5" in errors[0].str()


def test_a_crashed_leader_is_fenced_by_its_session_timeout_and_clients_move_on() -> None:
    """crash-broker closes the leader's sockets without telling the controller; after
    broker.session.timeout.ms it is fenced, leadership moves, and a consumer reads every
    record written with acks=all before and after."""
    topic = "crashed"
    with MockClusterThread(brokers=3, broker_session_timeout_ms=1500) as mock:
        mock.control.create_topic(topic, partitions=1, replication_factor=3)
        boot = mock.bootstrap_servers
        before = [f"before-{i}".encode() for i in range(5)]
        after = [f"after-{i}".encode() for i in range(5)]
        _produce("kafka-python", boot, topic, before, acks="all")
        leader = _partition(mock, topic)["leader"]
        crashed = mock.control.crash_broker(leader)
        assert (crashed["up"], crashed["fenced"], crashed["listening"]) == (False, False, False)
        assert _partition(mock, topic)["leader"] == leader  # nobody has noticed yet
        mock.control.wait_broker_fenced(leader, timeout_ms=15_000)
        moved = _partition(mock, topic)
        assert moved["leader"] != leader and leader not in moved["isr"]
        survivors = ",".join(f"127.0.0.1:{b['port']}" for b in mock.control.state()["brokers"]
                             if b["up"])
        _produce("confluent-kafka", survivors, topic, after, acks="all")
        assert _consume("confluent-kafka", survivors, topic, 10) == before + after
