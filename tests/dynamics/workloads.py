"""A produce-and-consume workload per real client, for tests that disturb the cluster.

Each Workload produces numbered messages (acks=all, idempotent where the client supports
it) from the background and consumes the topic in a consumer group, recording what was
acknowledged (message index -> partition, offset) and what was consumed. The test disturbs
the cluster meanwhile (elections, broker stops, faults), then stops producing, waits until
every acknowledged message has been consumed, and checks the ledger.

Every loop is bounded in time and count; every client is closed before the workload ends.
confluent-kafka and kafka-python run in plain threads; aiokafka runs its producer and
consumer as tasks on an event loop in its own thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

MAX_SECONDS = 90.0  # no workload thread outlives this
POLL_SECONDS = 0.1


def key_of(i: int) -> bytes:
    return f"key-{i % 12}".encode()


def value_of(i: int) -> bytes:
    return f"value-{i}".encode()


def index_of(value: bytes) -> int:
    return int(value.decode().rsplit("-", 1)[1])


@dataclass
class Ledger:
    """Thread-safe record of what was sent, acknowledged and consumed."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    sent: int = 0
    acked: dict[int, tuple[int, int]] = field(default_factory=dict)
    failed: list[tuple[int, str]] = field(default_factory=list)
    consumed: list[tuple[int, int, bytes]] = field(default_factory=list)
    consumer_errors: list[str] = field(default_factory=list)
    twice_acked: list[int] = field(default_factory=list)

    def ack(self, index: int, partition: int, offset: int) -> None:
        with self.lock:
            if index in self.acked:
                self.twice_acked.append(index)
            self.acked[index] = (partition, offset)

    def fail(self, index: int, err: Any) -> None:
        with self.lock:
            self.failed.append((index, str(err)))

    def got(self, records: list[tuple[int, int, bytes]]) -> None:
        with self.lock:
            self.consumed.extend(records)

    def consumed_indexes(self) -> set[int]:
        with self.lock:
            return {index_of(v) for _, _, v in self.consumed}

    def problems(self) -> list[str]:
        """Everything that breaks "every acknowledged message consumed, none twice"."""
        out = []
        with self.lock:
            if self.failed:
                out.append(f"{len(self.failed)} deliveries failed: {self.failed[:3]}")
            if self.twice_acked:
                out.append(f"acknowledged twice: {self.twice_acked[:5]}")
            if self.sent != len(self.acked) + len(self.failed):
                out.append(f"sent {self.sent}, acknowledged {len(self.acked)}, "
                           f"failed {len(self.failed)}")
            twice = [k for k, n in Counter((p, o) for p, o, _ in self.consumed).items()
                     if n > 1]
            if twice:
                out.append(f"{len(twice)} offsets consumed twice: {twice[:5]}")
            got = {index_of(v): (p, o) for p, o, v in self.consumed}
            missing = sorted(set(self.acked) - set(got))
            if missing:
                out.append(f"{len(missing)} acknowledged never consumed: {missing[:10]}")
            wrong = [i for i, at in got.items() if i in self.acked and self.acked[i] != at]
            if wrong:
                out.append(f"consumed at another offset than acknowledged: {wrong[:5]}")
            unacked = sorted(set(got) - set(self.acked))
            if unacked:
                out.append(f"consumed but never acknowledged: {unacked[:5]}")
            by_partition: dict[int, list[int]] = defaultdict(list)
            for p, _, v in sorted(self.consumed):
                by_partition[p].append(index_of(v))
            for p, order in by_partition.items():
                if order != sorted(order):
                    out.append(f"partition {p} out of production order")
        return out


class Workload:
    """Background producer and group consumer for one client and one topic."""

    client = ""

    def __init__(self, boot: str, topic: str, group: str, *, per_round: int = 5,
                 interval: float = 0.02, max_messages: int = 50_000) -> None:
        self.boot, self.topic, self.group = boot, topic, group
        self.per_round, self.interval, self.max_messages = per_round, interval, max_messages
        self.ledger = Ledger()
        self.stop_producing_event = threading.Event()
        self.stop_consuming_event = threading.Event()
        self.producer_done = threading.Event()
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> Workload:
        raise NotImplementedError

    def _thread(self, target: Any, name: str) -> None:
        def run() -> None:
            try:
                target()
            except BaseException as exc:
                self.errors.append(exc)
        thread = threading.Thread(target=run, name=f"{self.client}-{name}", daemon=True)
        thread.start()
        self.threads.append(thread)

    def _producing(self, started: float) -> bool:
        return (not self.stop_producing_event.is_set()
                and self.ledger.sent < self.max_messages
                and time.monotonic() - started < MAX_SECONDS)

    def _consuming(self, started: float) -> bool:
        return not self.stop_consuming_event.is_set() and time.monotonic() - started < MAX_SECONDS

    def stop_producing(self, timeout: float = 60.0) -> None:
        self.stop_producing_event.set()
        assert self.producer_done.wait(timeout), f"{self.client}: producer did not finish"

    def wait_consumed(self, timeout: float = 45.0, grace: float = 0.5) -> None:
        """Until every acknowledged message was consumed (then a little longer)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.errors:
            if set(self.ledger.acked) <= self.ledger.consumed_indexes():
                break
            time.sleep(0.05)
        time.sleep(grace)  # duplicates would arrive now

    def close(self) -> None:
        self.stop_producing_event.set()
        self.stop_consuming_event.set()
        for thread in self.threads:
            thread.join(30)
        assert not any(t.is_alive() for t in self.threads), f"{self.client}: threads hang"

    def check(self) -> None:
        assert not self.errors, f"{self.client}: {self.errors!r}"
        assert self.ledger.sent > 0 and self.ledger.acked, f"{self.client}: nothing produced"
        problems = self.ledger.problems()
        assert not problems, f"{self.client}: {problems}"


class ConfluentWorkload(Workload):
    client = "confluent-kafka"

    def start(self) -> Workload:
        self._thread(self._produce, "producer")
        self._thread(self._consume, "consumer")
        return self

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.boot, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5})
        ledger = self.ledger
        started = time.monotonic()
        try:
            while self._producing(started):
                for _ in range(self.per_round):
                    i = ledger.sent

                    def report(err: Any, m: Any, i: int = i) -> None:
                        if err is not None:
                            ledger.fail(i, err)
                        else:
                            ledger.ack(i, m.partition(), m.offset())
                    producer.produce(self.topic, key=key_of(i), value=value_of(i),
                                     on_delivery=report)
                    ledger.sent += 1
                producer.poll(0)
                time.sleep(self.interval)
            left = producer.flush(60)
            assert left == 0, f"{left} messages undelivered"
        finally:
            self.producer_done.set()

    def _consume(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer({"bootstrap.servers": self.boot, "group.id": self.group,
                             "auto.offset.reset": "earliest",
                             "error_cb": lambda e: self.ledger.consumer_errors.append(str(e))})
        consumer.subscribe([self.topic])
        started = time.monotonic()
        try:
            while self._consuming(started):
                out = []
                for m in consumer.consume(num_messages=500, timeout=POLL_SECONDS):
                    if m.error() is None:
                        out.append((m.partition(), m.offset(), m.value()))
                    else:
                        self.ledger.consumer_errors.append(str(m.error()))
                self.ledger.got(out)
        finally:
            consumer.close()


class KafkaPythonWorkload(Workload):
    client = "kafka-python"

    def start(self) -> Workload:
        self._thread(self._produce, "producer")
        self._thread(self._consume, "consumer")
        return self

    def _produce(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.boot, acks="all",
                                 enable_idempotence=True, linger_ms=5)
        ledger = self.ledger
        started = time.monotonic()
        try:
            while self._producing(started):
                for _ in range(self.per_round):
                    i = ledger.sent
                    future = producer.send(self.topic, key=key_of(i), value=value_of(i))
                    future.add_callback(lambda md, i=i: ledger.ack(i, md.partition, md.offset))
                    future.add_errback(lambda exc, i=i: ledger.fail(i, exc))
                    ledger.sent += 1
                time.sleep(self.interval)
            producer.flush(timeout=60)
        finally:
            producer.close(timeout=10)
            self.producer_done.set()

    def _consume(self) -> None:
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(bootstrap_servers=self.boot, group_id=self.group,
                                 auto_offset_reset="earliest")
        # Topic metadata first, then subscribe: kafka-python 3.0.12 sometimes stalls (no
        # OffsetFetch after the assignment) when its first JoinGroup runs before the topic's
        # metadata arrives and the metadata then forces a second rebalance.
        started = time.monotonic()
        while not consumer.partitions_for_topic(self.topic) and self._consuming(started):
            time.sleep(0.05)
        consumer.subscribe([self.topic])
        try:
            while self._consuming(started):
                batch = consumer.poll(timeout_ms=int(POLL_SECONDS * 1000))
                self.ledger.got([(r.partition, r.offset, r.value)
                                 for records in batch.values() for r in records])
        finally:
            consumer.close()


class AiokafkaWorkload(Workload):
    client = "aiokafka"

    def start(self) -> Workload:
        self._thread(lambda: asyncio.run(self._main()), "loop")
        return self

    async def _main(self) -> None:
        await asyncio.gather(self._produce(), self._consume())

    async def _produce(self) -> None:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=self.boot, acks="all",
                                    enable_idempotence=True, linger_ms=5)
        ledger = self.ledger
        pending: set[asyncio.Future[Any]] = set()
        try:
            await producer.start()
            started = time.monotonic()
            while self._producing(started):
                for _ in range(self.per_round):
                    i = ledger.sent
                    future = await producer.send(self.topic, key=key_of(i), value=value_of(i))

                    def done(f: asyncio.Future[Any], i: int = i) -> None:
                        pending.discard(f)
                        if f.exception() is not None:
                            ledger.fail(i, f.exception())
                        else:
                            md = f.result()
                            ledger.ack(i, md.partition, md.offset)
                    pending.add(future)
                    future.add_done_callback(done)
                    ledger.sent += 1
                await asyncio.sleep(self.interval)
            await asyncio.wait_for(producer.flush(), 60)
            if pending:
                await asyncio.wait(list(pending), timeout=60)
        finally:
            await producer.stop()
            self.producer_done.set()

    async def _consume(self) -> None:
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(self.topic, bootstrap_servers=self.boot,
                                    group_id=self.group, auto_offset_reset="earliest")
        try:
            await consumer.start()
            started = time.monotonic()
            while self._consuming(started):
                batch = await consumer.getmany(timeout_ms=int(POLL_SECONDS * 1000))
                self.ledger.got([(r.partition, r.offset, r.value)
                                 for records in batch.values() for r in records])
        finally:
            await consumer.stop()


WORKLOADS: dict[str, type[Workload]] = {
    "confluent-kafka": ConfluentWorkload,
    "kafka-python": KafkaPythonWorkload,
    "aiokafka": AiokafkaWorkload,
}
