"""Delivery semantics with real clients: group handover, committed leader epochs, idempotent
retries, transactions and static membership (what the other client tests leave out).

For aiokafka, kafka-python and confluent-kafka, with default settings and no api_version
pinning (the only settings given are the ones a scenario is about: a group id, where to start
without a committed offset, manual commits, a group.instance.id, idempotence where it is off
by default):

- group sharing over 3,000 messages: two members share a 6-partition topic and commit what
  they processed; one leaves and the other takes every partition over exactly at the
  committed offsets; a restarted member reads exactly what was produced after the last commit;
  nothing is lost and nothing is processed twice;
- the committed leader epoch round trip after leader elections, through the client's normal
  commit of its consumed positions (kafka-python and confluent-kafka expose the epoch;
  aiokafka commits with OffsetCommit v2, which has no epoch field);
- the idempotent producer: its normal path, a raw codec client re-sending the client's last
  batch (the original offset comes back, the log holds it once), a sequence gap
  (OUT_OF_ORDER_SEQUENCE_NUMBER), and the client carrying on undisturbed;
- consume-transform-produce with aiokafka (confluent's is in test_transactions_clients.py);
- on a ManualClock: a static member restarts and rejoins without a rebalance, then goes
  silent and expires at its session timeout while the other member takes its partitions.

Every consumer is driven through one small synchronous interface (aiokafka runs on an event
loop in a helper thread). Every loop stops at its goal or at a deadline; every client is
closed before its cluster stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import BatchHeader, patch_batch
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import Cluster, ManualClock
from mockbroker.embedded import MockClusterThread
from tests.support.aio_loop import AioLoop
from tests.support.rawclient import connect_broker

pytestmark = pytest.mark.clients

CLIENTS = ("aiokafka", "kafka-python", "confluent-kafka")
PARTITIONS = 6
TIMEOUT = 30.0  # seconds; a bound for any one wait (a rebalance takes about 3 s)
BATCH = 100  # records per poll: small enough that a member can stop part way
KAFKA_PYTHON_JOIN_POLL = 1.0  # seconds: see KafkaPythonMember.poll


# -- one consumer interface for the three clients --------------------------------------------

@dataclass(frozen=True)
class Rec:
    partition: int
    offset: int
    value: bytes
    leader_epoch: int | None


class Member(Protocol):
    def poll(self, timeout: float) -> list[Rec]: ...
    def assignment(self) -> set[int]: ...
    def commit(self, offsets: dict[int, int]) -> None: ...
    def commit_consumed(self) -> None: ...
    def committed(self, partitions: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        ...
    def close(self) -> None: ...


class KafkaPythonMember:
    def __init__(self, boot: str, topic: str, group: str, subscribe: bool,
                 **extra: Any) -> None:
        from kafka import KafkaConsumer

        self.topic = topic
        self.c = KafkaConsumer(*([topic] if subscribe else []), bootstrap_servers=boot,
                               group_id=group, auto_offset_reset="earliest",
                               enable_auto_commit=False, **extra)

    def poll(self, timeout: float) -> list[Rec]:
        # A poll that will (re)join the group waits at least KAFKA_PYTHON_JOIN_POLL (it returns
        # as soon as it has records): kafka-python 3.0.12 loses a JoinGroup/SyncGroup still in
        # flight when the poll that started it times out (the next poll starts a new join
        # over the finished one, or, when the join's own assignment ended the need to rejoin,
        # never reads its result), so on a loaded machine 50 ms polls could keep a member
        # without partitions for good (seen on CI and in ~1 of 20 runs under load;
        # client-side, whatever the broker: test_groups_clients.py pins it with polls of
        # timeout_ms=0). need_rejoin() is what that poll asks first.
        coordinator = getattr(self.c, "_coordinator", None)
        if coordinator is None or coordinator.need_rejoin():
            timeout = max(timeout, KAFKA_PYTHON_JOIN_POLL)
        got = self.c.poll(timeout_ms=int(timeout * 1000), max_records=BATCH)
        return [Rec(r.partition, r.offset, r.value, r.leader_epoch)
                for records in got.values() for r in records]

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.c.assignment()}

    def commit(self, offsets: dict[int, int]) -> None:
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        self.c.commit({TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1)
                       for p, o in offsets.items()})

    def commit_consumed(self) -> None:
        self.c.commit()

    def committed(self, partitions: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        from kafka import TopicPartition

        out: dict[int, tuple[int | None, int | None]] = {}
        for p in partitions:
            found = self.c.committed(TopicPartition(self.topic, p), metadata=True)
            out[p] = (None, None) if found is None else (found.offset, found.leader_epoch)
        return out

    def close(self) -> None:
        self.c.close(autocommit=False)


class ConfluentMember:
    def __init__(self, boot: str, topic: str, group: str, subscribe: bool,
                 **extra: Any) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self.c = Consumer({"bootstrap.servers": boot, "group.id": group,
                           "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           **extra})
        if subscribe:
            self.c.subscribe([topic])

    def poll(self, timeout: float) -> list[Rec]:
        out = []
        for m in self.c.consume(num_messages=BATCH, timeout=timeout):
            assert m.error() is None, m.error()
            out.append(Rec(m.partition(), m.offset(), m.value(), m.leader_epoch()))
        return out

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.c.assignment()}

    def commit(self, offsets: dict[int, int]) -> None:
        from confluent_kafka import TopicPartition

        self.c.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in offsets.items()],
                      asynchronous=False)

    def commit_consumed(self) -> None:
        self.c.commit(asynchronous=False)  # the stored (consumed) positions

    def committed(self, partitions: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        from confluent_kafka import TopicPartition

        got = self.c.committed([TopicPartition(self.topic, p) for p in partitions],
                               timeout=TIMEOUT)
        return {tp.partition: (tp.offset if tp.offset >= 0 else None, tp.leader_epoch)
                for tp in got}

    def close(self) -> None:
        self.c.close()


class AiokafkaMember:
    def __init__(self, aio: AioLoop, boot: str, topic: str, group: str, subscribe: bool,
                 **extra: Any) -> None:
        from aiokafka import AIOKafkaConsumer

        self.aio, self.topic = aio, topic

        async def start() -> Any:
            consumer = AIOKafkaConsumer(*([topic] if subscribe else []), bootstrap_servers=boot,
                                        group_id=group, auto_offset_reset="earliest",
                                        enable_auto_commit=False, **extra)
            await consumer.start()
            return consumer

        self.c = aio.run(start())

    def poll(self, timeout: float) -> list[Rec]:
        got = self.aio.run(self.c.getmany(timeout_ms=int(timeout * 1000), max_records=BATCH))
        return [Rec(r.partition, r.offset, r.value, None)
                for records in got.values() for r in records]

    def assignment(self) -> set[int]:
        async def read() -> set[int]:
            return {tp.partition for tp in self.c.assignment()}

        return self.aio.run(read())

    def commit(self, offsets: dict[int, int]) -> None:
        from aiokafka import TopicPartition

        self.aio.run(self.c.commit({TopicPartition(self.topic, p): o
                                    for p, o in offsets.items()}))

    def commit_consumed(self) -> None:
        self.aio.run(self.c.commit())

    def committed(self, partitions: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        from aiokafka import TopicPartition

        return {p: (self.aio.run(self.c.committed(TopicPartition(self.topic, p))), None)
                for p in partitions}

    def close(self) -> None:
        self.aio.run(self.c.stop())


def static(client: str, instance: str) -> dict[str, Any]:
    """The client's spelling of group.instance.id."""
    return {"group.instance.id": instance} if client == "confluent-kafka" \
        else {"group_instance_id": instance}


class Members:
    """Makes members of any client and closes every one still open at teardown."""

    def __init__(self) -> None:
        self.open: list[Member] = []
        self.aio: AioLoop | None = None

    def __call__(self, client: str, boot: str, topic: str, group: str, *,
                 subscribe: bool = True, **extra: Any) -> Member:
        member: Member
        if client == "aiokafka":
            if self.aio is None:
                self.aio = AioLoop()
            member = AiokafkaMember(self.aio, boot, topic, group, subscribe, **extra)
        elif client == "kafka-python":
            member = KafkaPythonMember(boot, topic, group, subscribe, **extra)
        elif client == "confluent-kafka":
            member = ConfluentMember(boot, topic, group, subscribe, **extra)
        else:
            raise ValueError(client)
        self.open.append(member)
        return member

    def close(self, member: Member) -> None:
        self.open.remove(member)
        member.close()

    def close_all(self) -> None:
        while self.open:
            with contextlib.suppress(Exception):
                self.close(self.open[-1])
        if self.aio is not None:
            self.aio.close()


@pytest.fixture
def members(mock: MockClusterThread) -> Iterator[Members]:
    made = Members()
    yield made
    made.close_all()


@pytest.fixture
def manual() -> Iterator[tuple[MockClusterThread, ManualClock, Members]]:
    """A cluster on a ManualClock, with its own member factory (closed before it stops)."""
    clock = ManualClock()
    with MockClusterThread(brokers=3, clock=clock) as cluster:
        made = Members()
        try:
            yield cluster, clock, made
        finally:
            made.close_all()


# -- helpers ---------------------------------------------------------------------------------

def _values(start: int, n: int) -> list[bytes]:
    return [b"m%05d" % i for i in range(start, start + n)]


def _produce(boot: str, topic: str, values: list[bytes], partitions: int = PARTITIONS) -> None:
    """Round-robin over the partitions with librdkafka's producer (default settings)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": boot})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions)
    assert producer.flush(TIMEOUT) == 0


def _ends(mock: MockClusterThread, topic: str) -> dict[int, int]:
    def read(cluster: Cluster) -> dict[int, int]:
        topic_id = cluster.image.topics[topic].topic_id
        out = {}
        for p in range(len(cluster.image.topics[topic].partitions)):
            log = cluster.log(topic_id, p)
            assert log is not None
            out[p] = log.log_end_offset
        return out

    return mock.call(read, mock.cluster)


def _process(member: Member, seen: list[Rec], timeout: float = 0.05) -> list[Rec]:
    """Poll once, 'process' what came (append to `seen`), then commit exactly that."""
    records = member.poll(timeout)
    if records:
        seen.extend(records)
        done: dict[int, int] = {}
        for r in records:
            done[r.partition] = max(done.get(r.partition, 0), r.offset + 1)
        member.commit(done)
    return records


def _first_offsets(records: Iterable[Rec]) -> dict[int, int]:
    first: dict[int, int] = {}
    for r in records:
        first.setdefault(r.partition, r.offset)
    return first


def _split(a: Member, b: Member) -> bool:
    one, two = a.assignment(), b.assignment()
    return bool(one) and bool(two) and one | two == set(range(PARTITIONS)) and not one & two


def _drive(members: list[Member], done: Callable[[], bool], what: str,
           timeout: float = TIMEOUT) -> None:
    """Poll every member (expecting no records) until done() or the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for member in members:
            assert member.poll(0.05) == [], f"unexpected records while waiting for {what}"
        if done():
            return
    raise AssertionError(f"timed out waiting for {what}")


# -- group sharing over 3,000 messages -------------------------------------------------------

@pytest.mark.parametrize("client", CLIENTS)
def test_group_sharing_handover_and_restart(client: str, mock: MockClusterThread,
                                            members: Members,
                                            topic_name: Callable[[str], str]) -> None:
    topic = topic_name("share")
    group = f"{topic}-g"
    boot = mock.bootstrap_servers
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    first = members(client, boot, topic, group)
    second = members(client, boot, topic, group)
    # both join while the topic is empty, so nothing is processed during that rebalance
    _drive([first, second], lambda: _split(first, second), "the two members to split")
    one, two = first.assignment(), second.assignment()

    # 1. 2,000 messages: the first member processes all of its share, the second about half
    #    of its share; each commits exactly what it processed after every poll
    phase1 = _values(0, 2000)
    _produce(boot, topic, phase1)
    ends1 = _ends(mock, topic)
    share_one = sum(ends1[p] for p in one)
    share_two = sum(ends1[p] for p in two)
    first_log: list[Rec] = []
    second_log: list[Rec] = []
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and (
            len(first_log) < share_one or len(second_log) < share_two // 2):
        if len(first_log) < share_one:
            _process(first, first_log)
        if len(second_log) < share_two // 2:
            _process(second, second_log)
    assert len(first_log) == share_one and share_two // 2 <= len(second_log) < share_two
    assert {r.partition for r in first_log} <= one and {r.partition for r in second_log} <= two
    second_commits = {p: o + 1 for p, o in
                      ((r.partition, r.offset) for r in second_log)}  # last one wins
    seen_by_first = first.committed(two)
    assert {p: o for p, (o, _) in seen_by_first.items() if o is not None} == second_commits

    # 2. the second leaves; the first takes every partition over, from the commit point
    members.close(second)
    after: list[Rec] = []
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and (
            first.assignment() != set(range(PARTITIONS))
            or len(after) < share_two - len(second_log)):
        _process(first, after)
    assert first.assignment() == set(range(PARTITIONS))
    left_over = set(phase1) - {r.value for r in first_log + second_log}
    assert sorted(r.value for r in after) == sorted(left_over)
    phase2 = _values(2000, 600)
    _produce(boot, topic, phase2)
    ends2 = _ends(mock, topic)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and len(after) < len(left_over) + len(phase2):
        _process(first, after)
    # the survivor started exactly at the committed offsets: the second's commits on the
    # partitions it took over, its own commits (the end of phase 1) on the others
    starts = {p: second_commits.get(p, 0) for p in two} | {p: ends1[p] for p in one}
    assert _first_offsets(after) == starts
    assert sorted(r.value for r in after) == sorted(left_over | set(phase2))
    assert {p: o for p, (o, _) in first.committed(range(PARTITIONS)).items()} == ends2
    members.close(first)

    # 3. a restart: a new member of the group reads exactly what came after the last commit
    phase3 = _values(2600, 400)
    _produce(boot, topic, phase3)
    third = members(client, boot, topic, group)
    third_log: list[Rec] = []
    deadline = time.monotonic() + TIMEOUT
    grace: float | None = None  # keep polling a little: anything extra would show
    while time.monotonic() < deadline and (grace is None or time.monotonic() < grace):
        _process(third, third_log)
        if len(third_log) >= len(phase3) and grace is None:
            grace = time.monotonic() + 1.0
    assert sorted(r.value for r in third_log) == phase3
    assert _first_offsets(third_log) == ends2
    members.close(third)

    # over all 3,000: none lost, none processed twice
    everything = Counter(r.value for r in first_log + second_log + after + third_log)
    assert set(everything) == set(phase1 + phase2 + phase3)
    assert everything.most_common(1)[0][1] == 1


# -- the committed leader epoch after elections ----------------------------------------------

@pytest.mark.parametrize("client", CLIENTS)
def test_committed_leader_epoch_round_trip_after_elections(
        client: str, mock: MockClusterThread, members: Members,
        topic_name: Callable[[str], str]) -> None:
    topic = topic_name("epoch")
    group = f"{topic}-g"
    boot = mock.bootstrap_servers
    parts = 3
    mock.call(mock.cluster.create_topic, topic, parts)
    _produce(boot, topic, _values(0, 30), parts)  # written at leader epoch 0
    for _ in range(2):
        for p in range(parts):
            mock.call(mock.cluster.elect_leader, topic, p)

    def epochs() -> dict[int, int]:
        return {p: mock.cluster.image.partition(topic, p).leader_epoch  # type: ignore[union-attr]
                for p in range(parts)}

    current = mock.call(epochs)
    assert all(e >= 2 for e in current.values())
    _produce(boot, topic, _values(30, 30), parts)  # written at the new epochs

    consumer = members(client, boot, topic, group)
    got: list[Rec] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < 60 and time.monotonic() < deadline:
        got.extend(consumer.poll(0.1))
    assert sorted(r.value for r in got) == _values(0, 60)
    last = {r.partition: r for r in got}
    if client != "aiokafka":  # aiokafka's records carry no leader epoch
        assert {p: r.leader_epoch for p, r in last.items()} == current
    consumer.commit_consumed()  # the client's normal commit of its consumed positions
    members.close(consumer)

    stored = mock.call(mock.cluster.groups.fetch_offsets, group, None)
    checker = members(client, boot, topic, group, subscribe=False)
    seen = checker.committed(range(parts))
    if client == "aiokafka":
        # OffsetCommit v2 carries no epoch, so Kafka stores none (-1)
        assert {f.partition: (f.offset, f.leader_epoch) for f in stored} == {
            p: (20, -1) for p in range(parts)}
        assert seen == {p: (20, None) for p in range(parts)}
    else:
        assert {f.partition: (f.offset, f.leader_epoch) for f in stored} == {
            p: (20, current[p]) for p in range(parts)}
        assert seen == {p: (20, current[p]) for p in range(parts)}


# -- the idempotent producer -----------------------------------------------------------------

class IdempotentProducer(Protocol):
    def send(self, values: list[bytes]) -> list[int]: ...
    def close(self) -> None: ...


class KafkaPythonProducer:
    def __init__(self, boot: str, topic: str) -> None:
        from kafka import KafkaProducer

        self.topic = topic
        self.p = KafkaProducer(bootstrap_servers=boot)
        assert self.p.config["enable_idempotence"], "kafka-python 3 is idempotent by default"

    def send(self, values: list[bytes]) -> list[int]:
        futures = [self.p.send(self.topic, value=v, partition=0) for v in values]
        self.p.flush(timeout=TIMEOUT)
        return [f.get(timeout=TIMEOUT).offset for f in futures]

    def close(self) -> None:
        self.p.close(timeout=10)


class ConfluentProducer:
    def __init__(self, boot: str, topic: str) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.p = Producer({"bootstrap.servers": boot, "enable.idempotence": True})

    def send(self, values: list[bytes]) -> list[int]:
        acked: dict[int, int] = {}
        errors: list[Any] = []

        def report(index: int) -> Callable[[Any, Any], None]:
            def done(err: Any, msg: Any) -> None:
                if err is not None:
                    errors.append(err)
                else:
                    acked[index] = msg.offset()
            return done

        for i, v in enumerate(values):
            self.p.produce(self.topic, value=v, partition=0, on_delivery=report(i))
            self.p.poll(0)
        assert self.p.flush(TIMEOUT) == 0 and errors == []
        return [acked[i] for i in range(len(values))]

    def close(self) -> None:
        self.p.flush(TIMEOUT)


class AiokafkaProducer:
    def __init__(self, boot: str, topic: str) -> None:
        from aiokafka import AIOKafkaProducer

        self.topic = topic
        self.aio = AioLoop()

        async def start() -> Any:
            producer = AIOKafkaProducer(bootstrap_servers=boot, enable_idempotence=True)
            await producer.start()
            return producer

        self.p = self.aio.run(start())

    def send(self, values: list[bytes]) -> list[int]:
        async def send_all() -> list[int]:
            futures = [await self.p.send(self.topic, v, partition=0) for v in values]
            return [m.offset for m in await asyncio.gather(*futures)]

        return self.aio.run(send_all())

    def close(self) -> None:
        try:
            self.aio.run(self.p.stop())
        finally:
            self.aio.close()


PRODUCERS: dict[str, Callable[[str, str], IdempotentProducer]] = {
    "aiokafka": AiokafkaProducer, "kafka-python": KafkaPythonProducer,
    "confluent-kafka": ConfluentProducer}


@dataclass(frozen=True)
class LogView:
    batches: list[tuple[BatchHeader, bytes]]  # data batches in offset order
    log_end_offset: int
    producers: dict[int, tuple[int, int]]  # producer id -> (epoch, last sequence)


def _log_view(mock: MockClusterThread, topic: str) -> LogView:
    def read(cluster: Cluster) -> LogView:
        log = cluster.log(cluster.image.topics[topic].topic_id, 0)
        assert log is not None
        batches = [(BatchHeader.parse(b.data), bytes(b.data)) for b in log.batches
                   if not b.is_control]
        return LogView(batches, log.log_end_offset,
                       {pid: (e.epoch, e.last_seq) for pid, e in log.producer_states.items()})

    return mock.call(read, mock.cluster)


async def _raw_produce(mock: MockClusterThread, topic: str, batch: bytes) -> Any:
    leader = mock.call(lambda: mock.cluster.image.partition(topic, 0).leader)  # type: ignore[union-attr]
    async with await connect_broker(mock, leader, client_id="raw-replay") as raw:
        body = await raw.request(0, 9, {
            "transactional_id": None, "acks": -1, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": 0, "records": batch}]}]})
    return body.responses[0].partition_responses[0]


@pytest.mark.parametrize("client", CLIENTS)
def test_idempotent_producer_replay_and_gap(client: str, mock: MockClusterThread,
                                            topic_name: Callable[[str], str]) -> None:
    topic = topic_name("idem")
    mock.call(mock.cluster.create_topic, topic, 1)
    values = [b"i%04d" % i for i in range(300)]
    producer = PRODUCERS[client](mock.bootstrap_servers, topic)
    try:
        # the normal path: every message once, in order, sequences 0..299 from one producer
        # (sent in three flushes, so the log holds several batches)
        for start in range(0, 300, 100):
            assert producer.send(values[start:start + 100]) == list(range(start, start + 100))
        view = _log_view(mock, topic)
        assert view.log_end_offset == 300 and len(view.producers) == 1
        [(pid, (epoch, last_seq))] = view.producers.items()
        assert pid >= 0 and last_seq == 299
        expected_seq = 0
        for header, _ in view.batches:
            assert (header.producer_id, header.producer_epoch) == (pid, epoch)
            assert header.base_sequence == expected_seq
            expected_seq += header.record_count
        assert expected_seq == 300

        # a raw codec client re-sends the client's last batch as the client's retry would
        # carry it (baseOffset 0, no partition leader epoch: the broker patched both when it
        # stored the batch, outside the CRC): its original offset comes back and the log
        # holds it once
        assert len(view.batches) >= 3
        last_header, last_batch = view.batches[-1]
        assert last_header.base_offset > 0
        retry = bytes(patch_batch(last_batch, 0, -1))
        replay = asyncio.run(_raw_produce(mock, topic, retry))
        assert (replay.error_code, replay.base_offset) == (ErrorCode.NONE,
                                                            last_header.base_offset)
        again = _log_view(mock, topic)
        assert again.log_end_offset == 300 and len(again.batches) == len(view.batches)

        # a sequence gap is refused and appends nothing
        gap = build_batch([RecordSpec(value=b"gap")], producer_id=pid, producer_epoch=epoch,
                          base_sequence=last_seq + 2)
        refused = asyncio.run(_raw_produce(mock, topic, gap))
        assert refused.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert _log_view(mock, topic).log_end_offset == 300

        # the client's own sequence state is undisturbed: it carries on at 300
        assert producer.send([b"after"]) == [300]
        final = _log_view(mock, topic)
        assert final.producers == {pid: (epoch, 300)}
    finally:
        producer.close()


# -- consume-transform-produce with aiokafka -------------------------------------------------

def test_aiokafka_consume_transform_produce_commits_offsets_atomically(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    src, dst = topic_name("src"), topic_name("dst")
    parts = 3
    for name in (src, dst):
        mock.call(mock.cluster.create_topic, name, parts)
    boot = mock.bootstrap_servers
    group = f"{src}-g"
    inputs = [b"in-%03d" % i for i in range(30)]
    _produce(boot, src, inputs, parts)

    def committed_on_broker() -> dict[int, int]:
        def read(cluster: Cluster) -> dict[int, int]:
            found = {}
            for p in range(parts):
                entry = cluster.groups.offsets.get(group, src, p)
                if entry is not None:
                    found[p] = entry.offset
            return found

        return mock.call(read, mock.cluster)

    async def read_all(isolation: str, expected: int) -> list[bytes]:
        reader = AIOKafkaConsumer(bootstrap_servers=boot, isolation_level=isolation)
        await reader.start()
        out: list[bytes] = []
        try:
            reader.assign([TopicPartition(dst, p) for p in range(parts)])
            await reader.seek_to_beginning()
            deadline = time.monotonic() + TIMEOUT
            grace: float | None = None
            while time.monotonic() < deadline and (grace is None or time.monotonic() < grace):
                for records in (await reader.getmany(timeout_ms=100)).values():
                    out.extend(r.value for r in records)
                if len(out) >= expected and grace is None:
                    grace = time.monotonic() + 0.5
        finally:
            await reader.stop()
        return out

    async def scenario() -> None:
        consumer = AIOKafkaConsumer(src, bootstrap_servers=boot, group_id=group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    isolation_level="read_committed")
        producer = AIOKafkaProducer(bootstrap_servers=boot, transactional_id=f"tx-{src}")
        await consumer.start()
        await producer.start()
        try:
            consumed = []
            deadline = time.monotonic() + TIMEOUT
            while len(consumed) < len(inputs) and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    consumed.extend(records)
            assert sorted(r.value for r in consumed) == inputs
            tps = [TopicPartition(src, p) for p in range(parts)]

            async with producer.transaction():
                for r in consumed:
                    await producer.send(dst, r.value.replace(b"in", b"out"),
                                        partition=r.partition)
                positions = {tp: await consumer.position(tp) for tp in tps}
                await producer.send_offsets_to_transaction(positions, group)
                # inside the transaction: the offsets are pending, the output uncommitted
                assert committed_on_broker() == {}
                assert [await consumer.committed(tp) for tp in tps] == [None] * parts
            assert committed_on_broker() == dict.fromkeys(range(parts), 10)
            assert [await consumer.committed(tp) for tp in tps] == [10] * parts

            # an aborted transaction's offsets and output never become visible
            await producer.begin_transaction()
            await producer.send_and_wait(dst, b"doomed", partition=0)
            await producer.send_offsets_to_transaction({tp: 3 for tp in tps}, group)
            await producer.abort_transaction()
            assert committed_on_broker() == dict.fromkeys(range(parts), 10)
            assert [await consumer.committed(tp) for tp in tps] == [10] * parts
        finally:
            await producer.stop()
            await consumer.stop()
        outputs = sorted(v.replace(b"in", b"out") for v in inputs)
        assert sorted(await read_all("read_committed", 30)) == outputs
        assert sorted(await read_all("read_uncommitted", 31)) == sorted([*outputs, b"doomed"])

    asyncio.run(asyncio.wait_for(scenario(), 90))


# -- static membership and session expiry on the injected clock ------------------------------

@pytest.mark.parametrize("client", CLIENTS)
def test_static_rejoin_without_rebalance_then_silent_member_expires_on_the_clock(
        client: str, manual: tuple[MockClusterThread, ManualClock, Members],
        topic_name: Callable[[str], str]) -> None:
    mock, clock, make = manual
    topic = topic_name("static")
    group = f"{topic}-g"
    boot = mock.bootstrap_servers
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)

    def state() -> tuple[int, str, dict[str, str], dict[str, int], dict[str, int]]:
        """generation, state, instance -> member id, member id -> deadline / session."""
        def read() -> tuple[int, str, dict[str, str], dict[str, int], dict[str, int]]:
            g = mock.cluster.groups.get(group)
            assert g is not None
            return (g.generation_id, g.state.value, dict(g.static_members),
                    {m.member_id: m.deadline_ms for m in g.members.values()},
                    {m.member_id: m.session_timeout_ms for m in g.members.values()})
        return mock.call(read)

    a = make(client, boot, topic, group, **static(client, "a"))
    b = make(client, boot, topic, group, **static(client, "b"))
    _drive([a, b], lambda: _split(a, b), "the two static members to split")
    a_parts, b_parts = a.assignment(), b.assignment()
    _drive([a, b], lambda: state()[1] == "Stable", "a stable group")
    generation, _, ids, _, sessions = state()
    assert set(ids) == {"a", "b"}

    # a restarts: a static member sends no LeaveGroup, and its rejoin (a new member id for
    # the same instance) gets the current generation and assignment without a rebalance
    make.close(a)
    assert state()[:3] == (generation, "Stable", ids)
    a2 = make(client, boot, topic, group, **static(client, "a"))
    _drive([a2, b], lambda: a2.assignment() == a_parts, "the restarted member's partitions")
    gen2, st2, ids2, _, _ = state()
    assert (gen2, st2) == (generation, "Stable")
    assert ids2["b"] == ids["b"] and ids2["a"] != ids["a"]
    assert b.assignment() == b_parts

    # a goes silent for good: it expires at its session timeout on the injected clock,
    # while b, heartbeating, stays and takes every partition in the next generation
    make.close(a2)
    session = sessions[ids["a"]]
    b_deadline = state()[3][ids["b"]]
    mock.call(clock.advance, session // 2)
    mock.call(mock.cluster.tick)
    assert set(state()[2]) == {"a", "b"}  # nobody has expired yet
    _drive([b], lambda: state()[3][ids["b"]] > b_deadline, "b's next heartbeat")
    mock.call(clock.advance, session - session // 2 + 1)
    mock.call(mock.cluster.tick)
    assert state()[2] == {"b": ids["b"]}  # a's session ran out; b's did not
    _drive([b], lambda: b.assignment() == set(range(PARTITIONS)), "b to take over")
    _drive([b], lambda: state()[1] == "Stable", "a stable group")
    gen3, _, ids3, deadlines3, _ = state()
    assert gen3 == generation + 1 and ids3 == {"b": ids["b"]} and list(deadlines3) == [ids["b"]]
