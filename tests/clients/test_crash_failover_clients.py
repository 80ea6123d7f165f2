"""acks=all under repeated leader crashes, with real clients.

A topic of replication factor 3 and min.insync.replicas=2; a producer writes a known
sequence to partition 0, one record at a time (each waits for its acknowledgement), while
the test crash-brokers the partition's current leader (sockets closed, the controller not
told), waits until the controller fences it by broker.session.timeout.ms (small here, so
the test stays short on the real clock the clients run on), restarts it and waits until it
is back in the ISR, round after round. At the end a consumer reads the partition back.

What each client promises, and what is asserted:
- confluent-kafka (idempotent by default) and kafka-python with enable_idempotence: no
  record fails, and the log holds the sequence exactly once and in order (a retried batch
  carries its producer id and sequence, so the new leader answers DUPLICATE_SEQUENCE or
  appends nothing twice).
- aiokafka without idempotence (its default): at least once. Every acknowledged record is
  read back; nothing that was not sent appears; a record may appear more than once (the
  client resends a batch whose answer it lost, the test resends after an error), but
  only where it was sent, so the order of first appearances is the order of sending.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.clients.test_replication_clients import _consume, _partition

pytestmark = pytest.mark.clients

MAX_RECORDS = 5_000  # the producer stops earlier, once the crash rounds are over
CRASH_ROUNDS = 3
SESSION_TIMEOUT_MS = 1000
WAIT_S = 30.0
MAX_ATTEMPTS = 5


class Tally:
    """What the producer thread saw: acknowledged values, failed attempts."""

    def __init__(self) -> None:
        self.acked: list[bytes] = []
        self.errors: list[tuple[bytes, str]] = []
        self.lock = threading.Lock()
        self.crashes_over = threading.Event()

    def count(self) -> int:
        with self.lock:
            return len(self.acked)


def _sequence(topic: str, tally: Tally) -> Iterator[bytes]:
    """The known sequence, until the crash rounds are over (so they overlap sends)."""
    for i in range(MAX_RECORDS):
        if tally.crashes_over.is_set():
            return
        yield f"{topic}-{i}".encode()


def _send_each(values: Iterable[bytes], send: Callable[[bytes], None], tally: Tally) -> None:
    """Send one value at a time; after an error send it again (bounded)."""
    for value in values:
        for _ in range(MAX_ATTEMPTS):
            try:
                send(value)
            except Exception as exc:  # any failure is recorded and retried
                with tally.lock:
                    tally.errors.append((value, repr(exc)))
                continue
            with tally.lock:
                tally.acked.append(value)
            break


def _producer_thread(client: str, boot: str, topic: str, tally: Tally) -> None:
    values = _sequence(topic, tally)
    if client == "confluent-kafka":
        from confluent_kafka import KafkaException, Producer

        producer = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 0,
                             "message.timeout.ms": 60_000})
        assert producer.list_topics(timeout=10) is not None

        def send_confluent(value: bytes) -> None:
            outcome: list[Any] = []
            producer.produce(topic, value, partition=0,
                             on_delivery=lambda err, _m: outcome.append(err))
            deadline = time.monotonic() + 70
            while not outcome and time.monotonic() < deadline:
                producer.poll(0.05)
            if not outcome or outcome[0] is not None:
                raise KafkaException(outcome[0] if outcome else "no delivery report")
        _send_each(values, send_confluent, tally)
        producer.flush(10)
    elif client == "kafka-python":
        from kafka import KafkaProducer

        kp = KafkaProducer(bootstrap_servers=boot, acks="all", enable_idempotence=True,
                           retries=2**31 - 1, delivery_timeout_ms=60_000,
                           request_timeout_ms=5_000)
        try:
            _send_each(values, lambda v: kp.send(topic, v, partition=0).get(timeout=70),
                       tally)
        finally:
            kp.close(timeout=10)
    else:
        from aiokafka import AIOKafkaProducer

        async def run() -> None:
            ap = AIOKafkaProducer(bootstrap_servers=boot, acks="all",
                                  request_timeout_ms=5_000)
            await ap.start()
            try:
                for value in values:
                    for _ in range(MAX_ATTEMPTS):
                        try:
                            await ap.send_and_wait(topic, value, partition=0)
                        except Exception as exc:  # recorded and retried
                            with tally.lock:
                                tally.errors.append((value, repr(exc)))
                            continue
                        with tally.lock:
                            tally.acked.append(value)
                        break
            finally:
                await ap.stop()
        asyncio.run(run())


def _wait(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _wait_for_more_acknowledgements(tally: Tally, when: str) -> None:
    target = tally.count() + 3
    _wait(lambda: tally.count() >= target, f"three more acknowledgements {when}")


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka"])
def test_acks_all_loses_nothing_while_the_leader_crashes_again_and_again(client: str) -> None:
    topic = f"crash-{client}"
    with MockClusterThread(brokers=3, broker_session_timeout_ms=SESSION_TIMEOUT_MS) as mock:
        mock.control.create_topic(topic, partitions=1, replication_factor=3,
                                  configs={"min.insync.replicas": "2"})
        tally = Tally()
        thread = threading.Thread(target=_producer_thread, daemon=True,
                                  args=(client, mock.bootstrap_servers, topic, tally))
        thread.start()
        crashed: list[int] = []
        for round_ in range(CRASH_ROUNDS):
            _wait_for_more_acknowledgements(tally, f"before crash {round_}")
            assert thread.is_alive()
            leader = _partition(mock, topic)["leader"]
            mock.control.crash_broker(leader)
            crashed.append(leader)
            mock.control.wait_broker_fenced(leader, timeout_ms=int(WAIT_S * 1000))
            assert _partition(mock, topic)["leader"] not in (leader, -1)
            mock.control.start_broker(leader)
            _wait(lambda: len(_partition(mock, topic)["isr"]) == 3,
                  f"broker {leader} back in the ISR")
        _wait_for_more_acknowledgements(tally, "after the crashes")
        tally.crashes_over.set()
        thread.join(timeout=WAIT_S * 3)
        assert not thread.is_alive(), "the producer did not finish"
        values = [f"{topic}-{i}".encode() for i in range(len(tally.acked))]
        assert tally.acked == values  # every value acknowledged, in order
        high_watermark = _partition(mock, topic)["high_watermark"]
        read = _consume(client, mock.bootstrap_servers, topic, high_watermark)
        assert len(read) == high_watermark
        if client in ("confluent-kafka", "kafka-python"):
            assert tally.errors == []
            assert read == values  # exactly once, in order
        else:
            assert set(read) == set(values)  # at least once, nothing foreign
            assert list(dict.fromkeys(read)) == values  # duplicates only of resends
        assert len(crashed) == CRASH_ROUNDS
