"""The real-client phases of bench/throughput.py: produce or consume N messages with one client.

Each phase function takes (bootstrap, topic, n, size, partitions, meter, deadline), returns
how many messages were acknowledged or seen, and starts and stops `meter` (processes.Meter)
around the timed part only: client start-up and the first metadata round trip stay outside.
Messages go round-robin to the partitions, and the confluent consumer sets
fetch.queue.backoff.ms (CONFLUENT_FETCH_QUEUE_BACKOFF_MS), both for the reasons the
benchmark's docstring gives.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from processes import Meter  # bench/processes.py

# librdkafka stops fetching for fetch.queue.backoff.ms (default 1000) whenever its prefetch
# queue holds more than queued.min.messages (default 100000). Both brokers serve 200k
# messages faster than the application drains them, so with the default the consume time of
# either is ~1 s of that timer; 10 ms lets the broker, not the timer, show.
CONFLUENT_FETCH_QUEUE_BACKOFF_MS = 10


# ------------------------------------------------------------------ client phases
# Each returns the number of messages acknowledged / seen; the Meter holds the timing.


class Outcome(Exception):
    """A phase that ended early; carries how many messages it got."""

    def __init__(self, count: int, reason: str) -> None:
        super().__init__(reason)
        self.count = count


def confluent_produce(bootstrap: str, topic: str, n: int, size: int, partitions: int,
                      meter: Meter, deadline: float) -> int:
    from confluent_kafka import Producer

    delivered = [0, 0]  # ok, failed

    def on_delivery(err: Any, _msg: Any) -> None:
        delivered[err is not None] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "client.id": "bench-confluent-producer"})
    try:
        producer.list_topics(topic, timeout=10)
        payload = b"m" * size
        produce, poll = producer.produce, producer.poll
        meter.start()
        for i in range(n):
            while True:
                try:
                    produce(topic, payload, partition=i % partitions, on_delivery=on_delivery)
                    break
                except BufferError:  # local queue full: serve delivery reports
                    poll(0.005)
                    if time.monotonic() > deadline:
                        raise Outcome(delivered[0], "timed out producing") from None
            if i % 8192 == 0:
                poll(0)
        producer.flush(max(0.1, deadline - time.monotonic()))
        meter.stop()
        if delivered[0] != n:
            raise Outcome(delivered[0], f"{delivered[1]} delivery failures, "
                                        f"{n - sum(delivered)} unacknowledged")
        return delivered[0]
    finally:
        producer.purge()
        producer.flush(0)
        del producer


def confluent_consume(bootstrap: str, topic: str, n: int, size: int, partitions: int,
                      meter: Meter, deadline: float) -> int:
    from confluent_kafka import Consumer, TopicPartition

    # group.id is mandatory in confluent-kafka's config, but with assign() no group is used:
    # the consumer fetches from explicit offsets and never commits.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False, "enable.auto.offset.store": False,
                         "fetch.queue.backoff.ms": CONFLUENT_FETCH_QUEUE_BACKOFF_MS,
                         "client.id": "bench-confluent-consumer"})
    try:
        consumer.list_topics(topic, timeout=10)
        got = errors = 0
        meter.start()
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        while got < n and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10000, timeout=0.2):
                if msg.error() is None:
                    got += 1
                else:
                    errors += 1
        meter.stop()
        if got < n:
            raise Outcome(got, f"timed out consuming ({errors} errors)")
        return got
    finally:
        consumer.close()


async def _aiokafka_produce(bootstrap: str, topic: str, n: int, size: int, partitions: int,
                            meter: Meter, deadline: float) -> int:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                client_id="bench-aiokafka-producer")
    await asyncio.wait_for(producer.start(), 15)
    futures: list[asyncio.Future[Any]] = []
    try:
        await producer.partitions_for(topic)
        payload = b"m" * size

        async def timed() -> None:
            send = producer.send
            for i in range(n):
                futures.append(await send(topic, payload, partition=i % partitions))
            await asyncio.gather(*futures)

        meter.start()
        try:
            await asyncio.wait_for(timed(), max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            ok = sum(1 for f in futures if f.done() and not f.cancelled() and not f.exception())
            raise Outcome(ok, "timed out producing") from None
        meter.stop()
        return len(futures)
    finally:
        await asyncio.wait_for(producer.stop(), 15)


async def _aiokafka_consume(bootstrap: str, topic: str, n: int, partitions: int, meter: Meter,
                            deadline: float) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                client_id="bench-aiokafka-consumer")
    await asyncio.wait_for(consumer.start(), 15)
    try:
        await consumer.topics()  # first metadata round trip, outside the window
        got = 0
        meter.start()
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        while got < n and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200, max_records=10000)
            got += sum(len(records) for records in batches.values())
        meter.stop()
        if got < n:
            raise Outcome(got, "timed out consuming")
        return got
    finally:
        await asyncio.wait_for(consumer.stop(), 15)


def aiokafka_produce(bootstrap: str, topic: str, n: int, size: int, partitions: int,
                     meter: Meter, deadline: float) -> int:
    return asyncio.run(_aiokafka_produce(bootstrap, topic, n, size, partitions, meter,
                                         deadline))


def aiokafka_consume(bootstrap: str, topic: str, n: int, size: int, partitions: int,
                     meter: Meter, deadline: float) -> int:
    return asyncio.run(_aiokafka_consume(bootstrap, topic, n, partitions, meter, deadline))


PhaseFn = Callable[[str, str, int, int, int, Meter, float], int]
PHASES: dict[tuple[str, str], PhaseFn] = {
    ("confluent", "produce"): confluent_produce,
    ("confluent", "consume"): confluent_consume,
    ("aiokafka", "produce"): aiokafka_produce,
    ("aiokafka", "consume"): aiokafka_consume,
}
