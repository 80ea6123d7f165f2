"""The workload of a check run: real clients producing and consuming, recorded as a History.

Theory of operation: each producer of the plan (plan.py) runs its steps in order until its
write budget is spent or the run tells writers to stop: an idempotent producer sends each
step's values as a burst, a transactional one wraps them in a transaction that it commits
or aborts as the step says. Each consumer reads the topic with read_committed, either by
assigning every partition from the beginning or by subscribing in a group, until the run
tells readers to stop. Everything goes through the Recorder, which stamps it with one
monotonic clock: a value before it is handed to the client, its acknowledgement or error
from the delivery report, a transaction's commit request before the client is asked,
its outcome after the client answered, a read as soon as the client returned it, an
assignment when the client reports it. The final catch-up read (`final_read`) is one more
consumer that reads every partition from the beginning to the high watermark the brokers
report once the writers have finished.

confluent-kafka clients run in threads (one per client, each polling its own callbacks);
aiokafka clients run as tasks of one event loop in one thread; the Java clients run in one
JVM, its events recorded by two threads here (javaclient.py). Settings are the clients'
defaults except what the workload needs: acks=all and idempotence, a transactional id,
read_committed, auto.offset.reset=earliest (a group starting from its committed offsets or
the beginning), no auto commit for the assigning readers, and the clients' logs routed to a
logger so they do not flood the terminal. Every loop is bounded by a deadline and every
client call by a timeout; a transaction left open by a failure is closed by a new
producer with the same transactional id (InitProducerId fences the old one and aborts
its transaction), so no open transaction holds back the last stable offset at the end.

One client bug is worked around, because it would pass for a broker's loss: when
librdkafka (confluent-kafka 2.16) aborts a transaction and purges a message it had already
sent (its request in flight, or queued again after a broker went away), it hands that
message's sequence number out again within the same producer epoch. If the purged batch did
reach the log, the broker rightly takes the next batch as its duplicate and acknowledges it
with the purged batch's offset: the new value is reported delivered and is never written
(found against real Kafka: the acknowledged offset held the aborted value of the same
producer). A confluent transactional producer that saw a purge in a transaction it aborted
is therefore replaced before its next transaction (InitProducerId bumps the epoch, which
resets the sequences on both sides), and the run records that it did.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mockbroker.check.history import (
    FINAL_CONSUMER,
    MODE_ASSIGN,
    MODE_FINAL,
    MODE_SUBSCRIBE,
    TXN_ABORTED,
    TXN_COMMITTED,
    TXN_INDETERMINATE,
    TXN_UNFINISHED,
    Ack,
    ClientEvent,
    FaultEvent,
    FinalRead,
    History,
    Read,
    Session,
    Txn,
    Write,
    value_name,
)
from mockbroker.check.javaclient import JavaClients
from mockbroker.check.plan import ConsumerPlan, Plan, ProducerPlan

CALL_TIMEOUT_S = 10.0       # one client call (commit, abort, init, flush)
CALL_ATTEMPTS = 5           # retriable errors retried this often
# librdkafka's delivery report codes of a purged message: _PURGE_QUEUE, _PURGE_INFLIGHT
PURGED = (-152, -151)
MAX_RESTARTS = 20           # producers recreated after fatal errors, per producer
MAX_CLIENT_EVENTS = 5000    # client errors kept in the history (the rest are counted)
POLL_S = 0.2
CLIENT_LOG = logging.getLogger("mockbroker.check.clients")


class Recorder:
    """The history being written, shared by every client thread and task."""

    def __init__(self, topic: str, partitions: int) -> None:
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.history = History(topic, partitions)
        self._sessions: dict[str, int] = {}
        self.dropped_events = 0

    def now(self) -> float:
        return round(time.monotonic() - self.started, 6)

    def since_start(self, monotonic: float) -> float:
        """A time.monotonic() reading taken elsewhere (the Java client's), on this clock."""
        return round(monotonic - self.started, 6)

    # `at`: when it happened, if not now (an event reported later, by the Java client)

    def write(self, value: str, producer: str, seq: int, partition: int,
              txn: str | None, at: float | None = None) -> None:
        with self.lock:
            self.history.writes.append(Write(value, producer, seq, partition, txn,
                                             self.now() if at is None else at))

    def ack(self, value: str, offset: int | None, error: str | None,
            at: float | None = None) -> None:
        with self.lock:
            self.history.acks.append(Ack(value, offset, error,
                                         self.now() if at is None else at))

    def txn(self, txn: Txn) -> None:
        with self.lock:
            self.history.txns.append(txn)

    def session(self, consumer: str, partition: int, mode: str,
                start_offset: int | None, at: float | None = None) -> int:
        with self.lock:
            number = self._sessions.get(consumer, 0)
            self._sessions[consumer] = number + 1
            self.history.sessions.append(Session(consumer, number, partition, mode,
                                                 start_offset,
                                                 self.now() if at is None else at))
            return number

    def read(self, consumer: str, session: int, partition: int, offset: int,
             value: str, at: float | None = None) -> None:
        with self.lock:
            self.history.reads.append(Read(consumer, session, partition, offset, value,
                                           self.now() if at is None else at))

    def fault(self, step: int, kind: str, verb: str, args: dict[str, Any],
              error: str | None) -> None:
        with self.lock:
            self.history.faults.append(FaultEvent(self.now(), step, kind, verb, dict(args),
                                                  error))

    def client_event(self, client: str, error: str, at: float | None = None) -> None:
        with self.lock:
            if len(self.history.client_events) < MAX_CLIENT_EVENTS:
                self.history.client_events.append(
                    ClientEvent(self.now() if at is None else at, client, error))
            else:
                self.dropped_events += 1

    def snapshot(self) -> History:
        """A copy of the history so far (threads that outlived the run may still record)."""
        with self.lock:
            h = self.history
            return History(h.topic, h.partitions, list(h.writes), list(h.acks), list(h.txns),
                           list(h.sessions), list(h.reads), h.final, list(h.faults),
                           list(h.client_events), dict(h.meta))


@dataclass
class Context:
    """What every client of a run shares."""

    bootstrap: str
    topic: str
    plan: Plan
    recorder: Recorder
    run_id: str
    stop_writes: threading.Event = field(default_factory=threading.Event)
    stop_reads: threading.Event = field(default_factory=threading.Event)
    hard_deadline: float = 0.0  # time.monotonic(): no client call goes past it
    errors: list[str] = field(default_factory=list)  # workload failures (not anomalies)
    # set once the aiokafka producers are done (they share a thread with its consumers)
    aio_writers_done: threading.Event = field(default_factory=threading.Event)
    java_command: list[str] | None = None  # runs the Java clients (javaclient.py)

    def writers_done(self) -> bool:
        return self.aio_writers_done.is_set()

    def wait_writers(self, timeout: float) -> bool:
        return self.aio_writers_done.wait(timeout)

    def time_left(self) -> float:
        return self.hard_deadline - time.monotonic()

    def call_timeout(self) -> float:
        return max(1.0, min(CALL_TIMEOUT_S, self.time_left()))

    def transactional_id(self, producer: ProducerPlan) -> str:
        return f"check-{self.run_id}-{producer.name}"


def _decode(raw: bytes | None) -> str:
    return "" if raw is None else raw.decode("utf-8", errors="replace")


def _where(msg: Any) -> tuple[int, int]:
    """A confluent message's partition and offset (typed optional, set on consumed ones)."""
    partition, offset = msg.partition(), msg.offset()
    return (-1 if partition is None else int(partition),
            -1 if offset is None else int(offset))


# -- confluent-kafka ------------------------------------------------------------------------

def _kafka_error(exc: BaseException) -> Any:
    """The KafkaError inside a confluent KafkaException (None for another exception)."""
    args = getattr(exc, "args", ())
    return args[0] if args and hasattr(args[0], "txn_requires_abort") else None


def _describe(error: Any) -> str:
    if hasattr(error, "name") and callable(error.name):
        return f"{error.name()}: {error.str()}"
    return f"{type(error).__name__}: {error}"


def _confluent_common(ctx: Context, name: str) -> dict[str, Any]:
    return {"bootstrap.servers": ctx.bootstrap, "client.id": name,
            "logger": CLIENT_LOG,
            "error_cb": lambda err: ctx.recorder.client_event(name, _describe(err))}


class ConfluentProducer:
    """One producer of the plan on confluent-kafka, in its own thread."""

    def __init__(self, ctx: Context, plan: ProducerPlan) -> None:
        self.ctx, self.plan = ctx, plan
        self.rec = ctx.recorder
        self.producer: Any = None
        self.restarts = 0
        self.open_txn = False  # a transaction may be open on the broker side
        self.purged = False  # a delivery report said purged since the last (re)start

    def _config(self) -> dict[str, Any]:
        conf = {**_confluent_common(self.ctx, self.plan.name),
                "enable.idempotence": True, "acks": "all"}
        if self.plan.transactional:
            conf["transactional.id"] = self.ctx.transactional_id(self.plan)
        return conf

    def _make(self) -> bool:
        """A new producer (transactional: initialised, which fences and aborts whatever
        the last one left open); False if none could be made in time."""
        from confluent_kafka import KafkaException, Producer

        self._close()
        self.producer = Producer(self._config())
        self.purged = False
        if not self.plan.transactional:
            return True
        while self.ctx.time_left() > 0:
            try:
                self.producer.init_transactions(self.ctx.call_timeout())
                self.open_txn = False
                return True
            except KafkaException as exc:
                error = _kafka_error(exc)
                self.rec.client_event(self.plan.name, _describe(error or exc))
                if error is not None and error.fatal():
                    self._close()
                    self.producer = Producer(self._config())
                    self.purged = False
                time.sleep(0.1)
        return False

    def _close(self) -> None:
        if self.producer is not None:
            with contextlib.suppress(Exception):
                self.producer.purge()
                self.producer.flush(0)
            with contextlib.suppress(Exception):
                self.producer.close()
            self.producer = None

    def _restart(self) -> bool:
        self.restarts += 1
        return self.restarts <= MAX_RESTARTS and self._make()

    def _purged_since_start(self) -> bool:
        """Did a delivery report since the producer's start say purged? (The reports of
        what an abort purged are served by the abort call; poll once more for stragglers.)"""
        with contextlib.suppress(Exception):
            self.producer.poll(0)
        return self.purged

    def _produce(self, value: str, partition: int) -> None:
        rec = self.rec

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                if err.code() in PURGED:
                    self.purged = True
                rec.ack(value, None, _describe(err))
            else:
                rec.ack(value, msg.offset(), None)

        for _ in range(50):
            try:
                self.producer.produce(self.ctx.topic, value.encode(), partition=partition,
                                      on_delivery=delivered)
                return
            except BufferError:
                self.producer.poll(0.1)
        rec.ack(value, None, "BufferError: the local queue stayed full")

    def _retrying(self, call: Callable[[float], None]) -> None:
        """Call with a timeout; again on a retriable error that needs no abort."""
        from confluent_kafka import KafkaException

        for attempt in range(CALL_ATTEMPTS):
            try:
                call(self.ctx.call_timeout())
                return
            except KafkaException as exc:
                error = _kafka_error(exc)
                if error is None or not error.retriable() or error.txn_requires_abort() \
                        or error.fatal() or attempt == CALL_ATTEMPTS - 1 \
                        or self.ctx.time_left() <= 0:
                    raise
                self.rec.client_event(self.plan.name, _describe(error))

    def run(self) -> None:
        try:
            if not self._make():
                self.ctx.errors.append(f"{self.plan.name}: could not start")
                return
            if self.plan.transactional:
                self._transactions()
            else:
                self._bursts()
        finally:
            if self.plan.transactional and self.open_txn and self.ctx.time_left() > 0:
                self._make()  # fences the last one and aborts what it left open
            self._close()

    def _bursts(self) -> None:
        from confluent_kafka import KafkaException

        plan, ctx = self.ctx.plan, self.ctx
        budget, seq, number = plan.budget(self.plan), 0, 0
        while not ctx.stop_writes.is_set() and seq < budget and ctx.time_left() > 0:
            step = plan.step(self.plan, number)
            number += 1
            try:
                for partition in step.partitions[:budget - seq]:
                    value = value_name(self.plan.name, seq)
                    self.rec.write(value, self.plan.name, seq, partition, None)
                    seq += 1
                    self._produce(value, partition)
                self.producer.poll(0)
            except KafkaException as exc:
                self.rec.client_event(self.plan.name, _describe(_kafka_error(exc) or exc))
                if not self._restart():
                    break
            ctx.stop_writes.wait(step.pause_ms / 1000)
        left = self.producer.flush(max(0.0, ctx.time_left())) if self.producer else 0
        if left:
            self.rec.client_event(self.plan.name, f"UNDELIVERED: {left} message(s) purged")

    def _transactions(self) -> None:
        from confluent_kafka import KafkaException

        plan, ctx, rec, name = self.ctx.plan, self.ctx, self.rec, self.plan.name
        budget, seq, number = plan.budget(self.plan), 0, 0
        while not ctx.stop_writes.is_set() and seq < budget and ctx.time_left() > 0:
            step = plan.step(self.plan, number)
            txn_id = f"{name}/{number}"
            number += 1
            values: list[str] = []
            commit_at: float | None = None
            outcome, error = TXN_UNFINISHED, None
            try:
                self.producer.begin_transaction()
                self.open_txn = True
                for partition in step.partitions[:budget - seq]:
                    value = value_name(name, seq)
                    rec.write(value, name, seq, partition, txn_id)
                    values.append(value)
                    seq += 1
                    self._produce(value, partition)
                if step.commit:
                    commit_at = rec.now()
                    self._retrying(self.producer.commit_transaction)
                    outcome = TXN_COMMITTED
                else:
                    self.producer.flush(ctx.call_timeout())  # the aborted values get written
                    self._retrying(self.producer.abort_transaction)
                    outcome = TXN_ABORTED
                self.open_txn = False
            except KafkaException as exc:
                kafka_error = _kafka_error(exc)
                error = _describe(kafka_error or exc)
                rec.client_event(name, error)
                aborted = False
                if kafka_error is not None and kafka_error.txn_requires_abort():
                    try:
                        self._retrying(self.producer.abort_transaction)
                        aborted, self.open_txn = True, False
                    except KafkaException as again:
                        rec.client_event(name, _describe(_kafka_error(again) or again))
                if commit_at is not None:
                    outcome = TXN_INDETERMINATE
                elif aborted:
                    outcome = TXN_ABORTED
                if not aborted and not self._restart():
                    rec.txn(Txn(txn_id, name, tuple(values), outcome, commit_at, rec.now(),
                                error))
                    break
            rec.txn(Txn(txn_id, name, tuple(values), outcome, commit_at, rec.now(), error))
            if outcome in (TXN_ABORTED, TXN_INDETERMINATE) and self._purged_since_start():
                rec.client_event(name, "purged messages in an aborted transaction: a new "
                                       "producer, so librdkafka cannot reuse their sequences")
                if not self._restart():
                    break
            ctx.stop_writes.wait(step.pause_ms / 1000)


class ConfluentConsumer:
    """One reader of the plan on confluent-kafka, in its own thread."""

    def __init__(self, ctx: Context, plan: ConsumerPlan) -> None:
        self.ctx, self.plan = ctx, plan
        self.sessions: dict[int, int] = {}

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        ctx, rec, name = self.ctx, self.ctx.recorder, self.plan.name
        group = f"{self.plan.group}-{ctx.run_id}" if self.plan.group is not None \
            else f"check-{ctx.run_id}-{name}"  # assign needs a group.id, never joins it
        conf = {**_confluent_common(ctx, name), "group.id": group,
                "isolation.level": "read_committed", "auto.offset.reset": "earliest"}
        if self.plan.mode == MODE_ASSIGN:
            conf["enable.auto.commit"] = False
        consumer = Consumer(conf)
        try:
            if self.plan.mode == MODE_ASSIGN:
                for p in range(ctx.plan.partitions):
                    self.sessions[p] = rec.session(name, p, MODE_ASSIGN, 0)
                consumer.assign([TopicPartition(ctx.topic, p, OFFSET_BEGINNING)
                                 for p in range(ctx.plan.partitions)])
            else:
                def assigned(_: Any, partitions: list[Any]) -> None:
                    for tp in partitions:
                        self.sessions[tp.partition] = rec.session(name, tp.partition,
                                                                  MODE_SUBSCRIBE, None)

                def revoked(_: Any, partitions: list[Any]) -> None:
                    for tp in partitions:
                        self.sessions.pop(tp.partition, None)

                consumer.subscribe([ctx.topic], on_assign=assigned, on_revoke=revoked,
                                   on_lost=revoked)
            while not ctx.stop_reads.is_set() and ctx.time_left() > 0:
                for msg in consumer.consume(num_messages=500, timeout=POLL_S):
                    if msg.error() is not None:
                        rec.client_event(name, _describe(msg.error()))
                        continue
                    partition, offset = _where(msg)
                    session = self.sessions.get(partition)
                    if session is None:
                        session = self.sessions[partition] = rec.session(
                            name, partition, self.plan.mode, None)
                    rec.read(name, session, partition, offset, _decode(msg.value()))
        finally:
            with contextlib.suppress(Exception):
                consumer.close()


def final_read(ctx: Context, timeout: float) -> FinalRead:
    """Read every partition from the beginning to its high watermark (asked of the
    brokers first), read_committed; stop there or at the timeout."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    rec, partitions = ctx.recorder, range(ctx.plan.partitions)
    deadline = time.monotonic() + timeout
    consumer = Consumer({**_confluent_common(ctx, FINAL_CONSUMER),
                         "group.id": f"check-{ctx.run_id}-final",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    target: dict[int, int] = {}
    reached = dict.fromkeys(partitions, 0)
    try:
        for p in partitions:
            while p not in target and time.monotonic() < deadline:
                try:
                    target[p] = consumer.get_watermark_offsets(
                        TopicPartition(ctx.topic, p), timeout=CALL_TIMEOUT_S)[1]
                except Exception as exc:
                    rec.client_event(FINAL_CONSUMER, _describe(_kafka_error(exc) or exc))
        sessions = {p: rec.session(FINAL_CONSUMER, p, MODE_FINAL, 0) for p in partitions}
        consumer.assign([TopicPartition(ctx.topic, p, OFFSET_BEGINNING) for p in partitions])
        while time.monotonic() < deadline and any(
                reached[p] < target.get(p, 1 << 62) for p in partitions):
            for msg in consumer.consume(num_messages=500, timeout=POLL_S):
                error = msg.error()
                p, offset = _where(msg)
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF and p in reached:
                        reached[p] = max(reached[p], offset)
                    elif error.code() != KafkaError._PARTITION_EOF:
                        rec.client_event(FINAL_CONSUMER, _describe(error))
                    continue
                rec.read(FINAL_CONSUMER, sessions[p], p, offset, _decode(msg.value()))
                reached[p] = max(reached[p], offset + 1)
    finally:
        with contextlib.suppress(Exception):
            consumer.close()
    return FinalRead(target, reached, rec.now())


# -- aiokafka -------------------------------------------------------------------------------

def _aio_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class AioProducer:
    """One producer of the plan on aiokafka, a task of the aiokafka thread's loop."""

    def __init__(self, ctx: Context, plan: ProducerPlan) -> None:
        self.ctx, self.plan = ctx, plan
        self.rec = ctx.recorder
        self.producer: Any = None
        self.restarts = 0
        self.open_txn = False

    async def _make(self) -> bool:
        from aiokafka import AIOKafkaProducer

        await self._close()
        while self.ctx.time_left() > 0:
            kwargs: dict[str, Any] = {"bootstrap_servers": self.ctx.bootstrap,
                                      "client_id": self.plan.name,
                                      "enable_idempotence": True, "acks": "all"}
            if self.plan.transactional:
                kwargs["transactional_id"] = self.ctx.transactional_id(self.plan)
            producer = AIOKafkaProducer(**kwargs)
            try:
                await asyncio.wait_for(producer.start(), self.ctx.call_timeout())
                self.producer = producer
                return True
            except Exception as exc:
                self.rec.client_event(self.plan.name, _aio_error(exc))
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(producer.stop(), 2.0)
                await asyncio.sleep(0.1)
        return False

    async def _close(self) -> None:
        if self.producer is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.producer.stop(), max(1.0, self.ctx.time_left()))
            self.producer = None

    async def _restart(self) -> bool:
        self.restarts += 1
        return self.restarts <= MAX_RESTARTS and await self._make()

    async def _send(self, value: str, partition: int) -> asyncio.Future[Any] | None:
        try:
            future = await asyncio.wait_for(
                self.producer.send(self.ctx.topic, value.encode(), partition=partition),
                self.ctx.call_timeout())
        except Exception as exc:
            self.rec.ack(value, None, _aio_error(exc))
            raise

        def delivered(done: asyncio.Future[Any]) -> None:
            if done.cancelled():
                self.rec.ack(value, None, "cancelled")
            elif done.exception() is not None:
                self.rec.ack(value, None, _aio_error(done.exception()))  # type: ignore[arg-type]
            else:
                self.rec.ack(value, done.result().offset, None)

        future.add_done_callback(delivered)
        return future  # type: ignore[no-any-return]

    async def run(self) -> None:
        try:
            if not await self._make():
                self.ctx.errors.append(f"{self.plan.name}: could not start")
                return
            if self.plan.transactional:
                await self._transactions()
            else:
                await self._bursts()
        finally:
            if self.plan.transactional and self.open_txn and self.ctx.time_left() > 0:
                await self._fence()
            await self._close()

    async def _fence(self) -> None:
        """A new producer with the same transactional id: its producer id request (which
        begin_transaction waits for) fences the last one and aborts what it left open."""
        if not await self._make():
            return
        try:
            await asyncio.wait_for(self.producer.begin_transaction(), self.ctx.call_timeout())
            await asyncio.wait_for(self.producer.abort_transaction(), self.ctx.call_timeout())
            self.open_txn = False
        except Exception as exc:
            self.rec.client_event(self.plan.name, _aio_error(exc))

    async def _pause(self, ms: int) -> None:
        if ms and not self.ctx.stop_writes.is_set():
            await asyncio.sleep(ms / 1000)

    async def _bursts(self) -> None:
        plan, ctx = self.ctx.plan, self.ctx
        budget, seq, number = plan.budget(self.plan), 0, 0
        pending: set[asyncio.Future[Any]] = set()
        while not ctx.stop_writes.is_set() and seq < budget and ctx.time_left() > 0:
            step = plan.step(self.plan, number)
            number += 1
            try:
                for partition in step.partitions[:budget - seq]:
                    value = value_name(self.plan.name, seq)
                    self.rec.write(value, self.plan.name, seq, partition, None)
                    seq += 1
                    future = await self._send(value, partition)
                    if future is not None:
                        pending.add(future)
            except Exception as exc:
                self.rec.client_event(self.plan.name, _aio_error(exc))
            pending = {f for f in pending if not f.done()}
            await self._pause(step.pause_ms)
        if pending and ctx.time_left() > 0:
            await asyncio.wait(pending, timeout=max(0.1, ctx.time_left()))

    async def _transactions(self) -> None:
        plan, ctx, rec, name = self.ctx.plan, self.ctx, self.rec, self.plan.name
        budget, seq, number = plan.budget(self.plan), 0, 0
        while not ctx.stop_writes.is_set() and seq < budget and ctx.time_left() > 0:
            step = plan.step(self.plan, number)
            txn_id = f"{name}/{number}"
            number += 1
            values: list[str] = []
            commit_at: float | None = None
            outcome, error = TXN_UNFINISHED, None
            try:
                await asyncio.wait_for(self.producer.begin_transaction(), ctx.call_timeout())
                self.open_txn = True
                futures = []
                for partition in step.partitions[:budget - seq]:
                    value = value_name(name, seq)
                    rec.write(value, name, seq, partition, txn_id)
                    values.append(value)
                    seq += 1
                    future = await self._send(value, partition)
                    if future is not None:
                        futures.append(future)
                # every value answered before the transaction ends (aborted ones too)
                await asyncio.wait_for(asyncio.gather(*futures), ctx.call_timeout())
                if step.commit:
                    commit_at = rec.now()
                    await asyncio.wait_for(self.producer.commit_transaction(),
                                           ctx.call_timeout())
                    outcome = TXN_COMMITTED
                else:
                    await asyncio.wait_for(self.producer.abort_transaction(),
                                           ctx.call_timeout())
                    outcome = TXN_ABORTED
                self.open_txn = False
            except Exception as exc:
                error = _aio_error(exc)
                rec.client_event(name, error)
                aborted = False
                if commit_at is None and not isinstance(exc, asyncio.TimeoutError):
                    try:
                        await asyncio.wait_for(self.producer.abort_transaction(),
                                               ctx.call_timeout())
                        aborted, self.open_txn = True, False
                    except Exception as again:
                        rec.client_event(name, _aio_error(again))
                if commit_at is not None:
                    outcome = TXN_INDETERMINATE
                elif aborted:
                    outcome = TXN_ABORTED
                if not aborted and not await self._restart():
                    rec.txn(Txn(txn_id, name, tuple(values), outcome, commit_at, rec.now(),
                                error))
                    break
            rec.txn(Txn(txn_id, name, tuple(values), outcome, commit_at, rec.now(), error))
            await self._pause(step.pause_ms)


class AioConsumer:
    """One reader of the plan on aiokafka."""

    def __init__(self, ctx: Context, plan: ConsumerPlan) -> None:
        self.ctx, self.plan = ctx, plan
        self.sessions: dict[int, int] = {}

    def _listener(self) -> Any:
        from aiokafka import ConsumerRebalanceListener

        rec, name, sessions = self.ctx.recorder, self.plan.name, self.sessions

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                for tp in revoked:
                    sessions.pop(tp.partition, None)

            def on_partitions_assigned(self, assigned: Any) -> None:
                for tp in assigned:
                    sessions[tp.partition] = rec.session(name, tp.partition, MODE_SUBSCRIBE,
                                                         None)

        return Listener()

    async def run(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        ctx, rec, name = self.ctx, self.ctx.recorder, self.plan.name
        subscribe = self.plan.mode == MODE_SUBSCRIBE
        consumer = AIOKafkaConsumer(
            bootstrap_servers=ctx.bootstrap, client_id=name,
            group_id=f"{self.plan.group}-{ctx.run_id}" if subscribe else None,
            isolation_level="read_committed", auto_offset_reset="earliest",
            enable_auto_commit=subscribe)
        try:
            await asyncio.wait_for(consumer.start(), max(1.0, ctx.time_left()))
            if subscribe:
                consumer.subscribe([ctx.topic], listener=self._listener())
            else:
                parts = [TopicPartition(ctx.topic, p) for p in range(ctx.plan.partitions)]
                for p in range(ctx.plan.partitions):
                    self.sessions[p] = rec.session(name, p, MODE_ASSIGN, 0)
                consumer.assign(parts)
                await consumer.seek_to_beginning(*parts)
            while not ctx.stop_reads.is_set() and ctx.time_left() > 0:
                try:
                    batches = await consumer.getmany(timeout_ms=int(POLL_S * 1000),
                                                     max_records=500)
                except Exception as exc:
                    rec.client_event(name, _aio_error(exc))
                    await asyncio.sleep(POLL_S)
                    continue
                for tp, records in batches.items():
                    session = self.sessions.get(tp.partition)
                    if session is None:
                        session = self.sessions[tp.partition] = rec.session(
                            name, tp.partition, self.plan.mode, None)
                    for record in records:
                        rec.read(name, session, tp.partition, record.offset,
                                 _decode(record.value))
        except Exception as exc:
            rec.client_event(name, _aio_error(exc))
            ctx.errors.append(f"{name}: {_aio_error(exc)}")
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(consumer.stop(), 5.0)


# -- the threads ----------------------------------------------------------------------------

def start_clients(ctx: Context) -> tuple[list[threading.Thread], list[threading.Thread]]:
    """Start every client of the plan: (writer threads, reader threads). aiokafka's
    producers and consumers share one thread, counted among the writers (it ends once its
    consumers stop too)."""
    writers: list[threading.Thread] = []
    readers: list[threading.Thread] = []

    def thread(name: str, target: Callable[[], Any]) -> threading.Thread:
        def run() -> None:
            try:
                target()
            except BaseException as exc:  # a workload bug: reported, the run goes on
                ctx.errors.append(f"{name}: {type(exc).__name__}: {exc}")
                CLIENT_LOG.exception("%s failed", name)

        t = threading.Thread(target=run, name=f"check-{name}", daemon=True)
        t.start()
        return t

    plan = ctx.plan
    for p in plan.producers:
        if p.client == "confluent":
            writers.append(thread(p.name, ConfluentProducer(ctx, p).run))
    for c in plan.consumers:
        if c.client == "confluent":
            readers.append(thread(c.name, ConfluentConsumer(ctx, c).run))
    aio_producers = [AioProducer(ctx, p) for p in plan.producers if p.client == "aiokafka"]
    aio_consumers = [AioConsumer(ctx, c) for c in plan.consumers if c.client == "aiokafka"]
    if not aio_producers:
        ctx.aio_writers_done.set()
    if aio_producers or aio_consumers:
        async def producers() -> None:
            try:
                await asyncio.gather(*(p.run() for p in aio_producers))
            finally:
                ctx.aio_writers_done.set()

        async def everything() -> None:
            await asyncio.gather(producers(), *(c.run() for c in aio_consumers))

        def aiokafka() -> None:
            try:
                asyncio.run(everything())
            finally:
                ctx.aio_writers_done.set()

        readers.append(thread("aiokafka", aiokafka))
    if any(p.client == "java" for p in plan.producers) \
            or any(c.client == "java" for c in plan.consumers):
        if ctx.java_command is None:
            raise ValueError("the java client needs a command (a class path)")
        java = JavaClients(ctx, ctx.java_command)
        java.start()
        writers.append(thread("java-writers", java.run_writers))
        readers.append(thread("java", java.run))
    return writers, readers
