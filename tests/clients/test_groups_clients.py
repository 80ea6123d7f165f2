"""Consumer groups and committed offsets with the real clients, default settings.

confluent-kafka, kafka-python, aiokafka and kcat join groups through FindCoordinator,
JoinGroup (with MEMBER_ID_REQUIRED where the version has it), SyncGroup and Heartbeat, and
commit and fetch offsets. Two confluent consumers split a topic's partitions after a
rebalance; the Python clients restart and resume exactly from the committed offsets; a raw
codec client checks the committed leader epoch round trip (OffsetCommit v6+, OffsetFetch v5+).
Two kafka-python consumers split a topic while the coordinator answers late, and one test
pins kafka-python's own defect behind a pair that never split under load: a join that
finishes between two polls is lost.

Every wait is bounded: loops stop at the expected count or at a deadline, and every client
is closed before the cluster stops.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import ManualClock
from mockbroker.embedded import MockCluster, MockClusterThread
from tests.support.rawclient import connect_broker

pytestmark = pytest.mark.clients

PARTITIONS = 3
TIMEOUT = 30.0  # seconds; a bound, normally reached far sooner (a rebalance takes ~3 s)


def _values(n: int, start: int = 0) -> list[bytes]:
    return [b"m%05d" % i for i in range(start, start + n)]


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    """Round-robin over the partitions with librdkafka's producer (default settings)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % PARTITIONS)
    assert producer.flush(TIMEOUT) == 0


def _setup(mock: MockClusterThread, topic: str, n: int) -> list[bytes]:
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    values = _values(n)
    _produce(mock.bootstrap_servers, topic, values)
    return values


# -- confluent-kafka ------------------------------------------------------------------------

def _commit(consumer: Any) -> None:
    """Commit the positions; _NO_OFFSET means the auto-commit already did (default)."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        consumer.commit(asynchronous=False)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError._NO_OFFSET:
            raise


def test_confluent_group_consumes_commits_and_splits_partitions(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic = topic_name("ck")
    expected = _setup(mock, topic, 300)
    conf = {"bootstrap.servers": mock.bootstrap_servers, "group.id": f"{topic}-g",
            "auto.offset.reset": "earliest"}
    first = Consumer(conf)
    second = None
    try:
        first.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < len(expected) and time.monotonic() < deadline:
            msg = first.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert sorted(got) == expected  # every message once, none twice
        _commit(first)
        wanted = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        committed = first.committed(wanted, timeout=TIMEOUT)
        assert {tp.partition: tp.offset for tp in committed} == {p: 100 for p in range(3)}
        assert all(tp.leader_epoch == 0 for tp in committed)  # KIP-232 round trip

        second = Consumer(conf)
        second.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT
        one: set[int] = set()
        two: set[int] = set()
        while time.monotonic() < deadline:
            for consumer in (first, second):
                msg = consumer.poll(0.1)
                assert msg is None or msg.error() is not None, "nothing new to read"
            one = {tp.partition for tp in first.assignment()}
            two = {tp.partition for tp in second.assignment()}
            if one and two and one | two == set(range(PARTITIONS)) and not one & two:
                break
        assert one and two and one | two == set(range(PARTITIONS)) and not one & two
        seen = second.committed(wanted, timeout=TIMEOUT)
        assert {tp.partition: tp.offset for tp in seen} == {p: 100 for p in range(3)}

        # new messages are shared out: each read once, by the owner of its partition
        split = _values(60, start=300)
        _produce(mock.bootstrap_servers, topic, split)
        by: dict[int, list[tuple[int, bytes]]] = {1: [], 2: []}
        deadline = time.monotonic() + TIMEOUT
        while sum(map(len, by.values())) < len(split) and time.monotonic() < deadline:
            for index, consumer in ((1, first), (2, second)):
                msg = consumer.poll(0.1)
                if msg is not None and msg.error() is None:
                    by[index].append((msg.partition(), msg.value()))
        assert sorted(v for got_by in by.values() for _, v in got_by) == split
        assert {p for p, _ in by[1]} <= one and {p for p, _ in by[2]} <= two
        for consumer in (first, second):
            _commit(consumer)

        # the second leaves: the first takes every partition over, from the commit point
        second.close()
        second = None
        rest = _values(30, start=360)
        _produce(mock.bootstrap_servers, topic, rest)
        got = []
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and (
                len(got) < len(rest) or len(first.assignment()) < PARTITIONS):
            msg = first.poll(0.1)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert {tp.partition for tp in first.assignment()} == set(range(PARTITIONS))
        assert sorted(got) == rest  # none lost, none read twice after the commit point
    finally:
        first.close()
        if second is not None:
            second.close()


def test_confluent_commit_with_explicit_leader_epoch(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic = topic_name("ck-epoch")
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    consumer = Consumer({"bootstrap.servers": mock.bootstrap_servers,
                         "group.id": f"{topic}-g"})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 1, 7, leader_epoch=3)],
                        asynchronous=False)
        got = consumer.committed([TopicPartition(topic, 1)], timeout=TIMEOUT)
        assert (got[0].offset, got[0].leader_epoch) == (7, 3)
    finally:
        consumer.close()


def test_confluent_static_member_rejoins_without_rebalance_and_expires_on_the_clock(
        topic_name: Callable[[str], str]) -> None:
    from confluent_kafka import Consumer

    clock = ManualClock()
    topic = topic_name("ck-static")
    group = f"{topic}-g"
    with MockClusterThread(brokers=3, clock=clock) as mock:
        mock.call(mock.cluster.create_topic, topic, PARTITIONS)
        conf = {"bootstrap.servers": mock.bootstrap_servers, "group.id": group,
                "group.instance.id": "static-1"}

        def members() -> tuple[int, str, list[str]]:
            def read() -> tuple[int, str, list[str]]:
                g = mock.cluster.groups.get(group)
                assert g is not None
                return g.generation_id, g.state.value, list(g.members)
            return mock.call(read)

        def run_member() -> None:
            consumer = Consumer(conf)
            try:
                consumer.subscribe([topic])
                deadline = time.monotonic() + TIMEOUT
                while len(consumer.assignment()) < PARTITIONS and time.monotonic() < deadline:
                    consumer.poll(0.1)
                assert len(consumer.assignment()) == PARTITIONS
            finally:
                consumer.close()  # a static member does not send LeaveGroup

        run_member()
        generation, state, ids = members()
        assert state == "Stable" and len(ids) == 1 and ids[0].startswith("static-1-")
        run_member()  # the restart replaces the member id: no rebalance
        assert members()[0] == generation and members()[2] != ids
        assert members()[1] == "Stable" and len(members()[2]) == 1
        mock.call(clock.advance, 45_001)  # librdkafka's default session.timeout.ms
        mock.call(mock.cluster.tick)
        assert members()[1:] == ("Empty", [])


# -- kafka-python ---------------------------------------------------------------------------

def _kafka_python_metadata_first(consumer: Any, topic: str) -> None:
    """Have the subscribed topic's metadata before the first poll joins the group.

    The coordinator completes a first join at once (group.initial.rebalance.delay.ms is 0, as
    in Kafka's shipped server.properties). A kafka-python leader that has no metadata for the
    topic then assigns nothing, and rejoins when the metadata comes; under load that rejoin
    can be lost for good (_drops_finished_joins: its own assignment ends its need to rejoin
    before it reads the answer), leaving the consumer without partitions."""
    assert consumer.partitions_for_topic(topic) == set(range(PARTITIONS))


def _kafka_python_consume(bootstrap: str, topic: str, group: str, n: int) -> list[bytes]:
    """Join the group, read `n` messages, commit, close; returns what it read."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    got: list[bytes] = []
    try:
        _kafka_python_metadata_first(consumer, topic)
        deadline = time.monotonic() + TIMEOUT
        while len(got) < n and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value for r in records)
        consumer.commit()
    finally:
        consumer.close(autocommit=False)
    return got


def test_kafka_python_group_commit_and_restart_resumes_exactly(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    from kafka import KafkaConsumer, TopicPartition

    topic = topic_name("kp")
    group = f"{topic}-g"
    expected = _setup(mock, topic, 30)
    assert sorted(_kafka_python_consume(mock.bootstrap_servers, topic, group, 30)) == expected
    more = _values(15, start=30)
    _produce(mock.bootstrap_servers, topic, more)
    # the restarted member reads exactly what came after the commit
    assert sorted(_kafka_python_consume(mock.bootstrap_servers, topic, group, 15)) == more
    checker = KafkaConsumer(bootstrap_servers=mock.bootstrap_servers, group_id=group,
                            enable_auto_commit=False)
    try:
        found = checker.committed(TopicPartition(topic, 0), metadata=True)
        assert found is not None and found.offset == 15 and found.leader_epoch == 0
    finally:
        checker.close(autocommit=False)


def _drops_finished_joins() -> bool:
    """Whether this kafka-python throws away a join that finished between two polls.

    kafka-python 3.0.12 (and its development line since) sends JoinGroup and SyncGroup in one
    task, `BaseCoordinator._join_task`, which outlives a poll whose timeout ends first; the
    next poll's `join_group_async` starts a new task, and a new JoinGroup, whenever the old
    one `is_done`, without reading its result. If the leader's own assignment has cleared its
    need to rejoin meanwhile, no poll looks at the task again: the member keeps its old
    partitions, stays "rebalancing", and never heartbeats again."""
    import inspect

    from kafka.coordinator.base import BaseCoordinator

    join = getattr(BaseCoordinator, "join_group_async", None)
    return join is not None and "self._join_task.is_done" in inspect.getsource(join)


def _group_member_partitions(mock: MockClusterThread, group: str) -> tuple[int, list[list[int]]]:
    """The group's generation and each member's partitions, as the coordinator holds them."""
    from mockbroker.cluster.groups.group_migration import decode_assignment

    def read() -> tuple[int, list[list[int]]]:
        g = mock.cluster.groups.get(group)
        if g is None:
            return 0, []
        return g.generation_id, [sorted(p for _, p in decode_assignment(m.assignment) or ())
                                 for m in g.members.values()]

    return mock.call(read)


def test_kafka_python_drops_a_join_that_finished_between_polls(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    """Why two kafka-python consumers could stay at A=[0, 1, 2], B=[] for a minute in a
    loaded run: a join that finishes while the application is between two polls is lost
    (_drops_finished_joins). Under load a JoinGroup and SyncGroup outlive short polls; here
    every poll has timeout_ms=0 and the application works 0.5 s between polls, so every join
    finishes in between. The coordinator answers as Kafka's does (the only member's JoinGroup
    completes at once; its SyncGroup gets the assignment; the leader's next JoinGroup in the
    Stable group starts the next rebalance): the group holds the consumer with all three
    partitions, generation after generation, while the consumer has none. A kafka-python
    that reads such a join (a fixed one) must hold the three partitions instead."""
    drops = _drops_finished_joins()
    from kafka import KafkaConsumer

    topic = topic_name("kp-lost-join")
    group = f"{topic}-g"
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    consumer = KafkaConsumer(topic, bootstrap_servers=mock.bootstrap_servers, group_id=group,
                             enable_auto_commit=False)
    try:
        generation, held = 0, []
        deadline = time.monotonic() + TIMEOUT
        for _ in range(60):
            consumer.poll(timeout_ms=0)  # starts a join: JoinGroup, then SyncGroup
            time.sleep(0.5)  # the application's own work, while the join finishes
            generation, held = _group_member_partitions(mock, group)
            if not drops and len(consumer.assignment()) == PARTITIONS:
                break
            if (generation >= 5 and held == [[0, 1, 2]]) or time.monotonic() > deadline:
                break
        if drops:
            assert generation >= 5 and held == [[0, 1, 2]]  # five joins, answered in full
            assert consumer.assignment() == set()  # none of them read
        else:
            assert held == [[0, 1, 2]]
            assert {tp.partition for tp in consumer.assignment()} == {0, 1, 2}
    finally:
        consumer.close(autocommit=False)


def test_kafka_python_pair_splits_with_a_slow_coordinator(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    """Two kafka-python consumers split three partitions while every JoinGroup, SyncGroup
    and Heartbeat is answered 300 ms late, as by a loaded broker: the first member learns
    of the second from a late heartbeat (REBALANCE_IN_PROGRESS), rejoins, and the second
    one's parked JoinGroup completes with it. Each consumer polls in its own thread, for up
    to 3 s while it (re)joins, so that it reads its own join's answer (see the test above)."""
    import threading

    from kafka import KafkaConsumer

    topic = topic_name("kp-slow")
    group = f"{topic}-g"
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    for api in ("JoinGroup", "SyncGroup", "Heartbeat"):
        mock.control.inject_latency(api, 300)
    owned: dict[str, set[int]] = {}
    stop = threading.Event()
    failures: list[BaseException] = []

    def member(name: str) -> None:
        try:
            consumer = KafkaConsumer(topic, bootstrap_servers=mock.bootstrap_servers,
                                     group_id=group, enable_auto_commit=False)
            try:
                _kafka_python_metadata_first(consumer, topic)
                end = time.monotonic() + 3 * TIMEOUT
                while not stop.is_set() and time.monotonic() < end:
                    joining = consumer._coordinator.need_rejoin()
                    consumer.poll(timeout_ms=3_000 if joining else 100)
                    owned[name] = {tp.partition for tp in consumer.assignment()}
            finally:
                consumer.close(autocommit=False)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    def wait_for(done: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + TIMEOUT
        while not done() and not failures and time.monotonic() < deadline:
            time.sleep(0.05)
        return done()

    threads = [threading.Thread(target=member, args=(name,), daemon=True)
               for name in ("a", "b")]
    try:
        threads[0].start()
        assert wait_for(lambda: owned.get("a") == {0, 1, 2}), owned
        threads[1].start()

        def split() -> bool:
            one, two = owned.get("a", set()), owned.get("b", set())
            return bool(one) and bool(two) and one | two == {0, 1, 2} and not one & two

        assert wait_for(split), owned
        _, held = _group_member_partitions(mock, group)
        assert sorted(held) == sorted([sorted(owned["a"]), sorted(owned["b"])])
    finally:
        stop.set()
        for thread in threads:
            if thread.ident is not None:  # started
                thread.join(TIMEOUT)
    assert not failures, failures


# -- aiokafka -------------------------------------------------------------------------------

async def _aiokafka_consume(bootstrap: str, topic: str, group: str, n: int) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + TIMEOUT
        while len(got) < n and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                got.extend(r.value for r in records)
        await consumer.commit()
    finally:
        await consumer.stop()
    return got


async def _aiokafka_produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i, value in enumerate(values):
            await producer.send(topic, value, partition=i % PARTITIONS)
        await producer.flush()
    finally:
        await producer.stop()


async def test_aiokafka_group_commit_and_restart_resumes_exactly(
        topic_name: Callable[[str], str]) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    topic = topic_name("aio")
    group = f"{topic}-g"
    async with MockCluster(brokers=3) as mock:
        mock.cluster.create_topic(topic, PARTITIONS)
        bootstrap = mock.bootstrap_servers
        first = _values(30)
        await _aiokafka_produce(bootstrap, topic, first)
        assert sorted(await _aiokafka_consume(bootstrap, topic, group, 30)) == first
        more = _values(15, start=30)
        await _aiokafka_produce(bootstrap, topic, more)
        assert sorted(await _aiokafka_consume(bootstrap, topic, group, 15)) == more
        checker = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                   enable_auto_commit=False)
        await checker.start()
        try:
            assert await checker.committed(TopicPartition(topic, 2)) == 15
        finally:
            await checker.stop()


async def test_aiokafka_two_members_split_then_one_takes_over(
        topic_name: Callable[[str], str]) -> None:
    from aiokafka import AIOKafkaConsumer

    topic = topic_name("aio-pair")
    async with MockCluster(brokers=3) as mock:
        mock.cluster.create_topic(topic, PARTITIONS)
        conf: dict[str, Any] = {"bootstrap_servers": mock.bootstrap_servers,
                                "group_id": f"{topic}-g"}
        first = AIOKafkaConsumer(topic, **conf)
        second = AIOKafkaConsumer(topic, **conf)
        await first.start()
        try:
            await second.start()
            try:
                deadline = time.monotonic() + TIMEOUT
                while time.monotonic() < deadline:
                    one = {tp.partition for tp in first.assignment()}
                    two = {tp.partition for tp in second.assignment()}
                    if one and two and one | two == set(range(PARTITIONS)) and not one & two:
                        break
                    await asyncio.sleep(0.1)
                assert one and two and one | two == set(range(PARTITIONS)) and not one & two
            finally:
                await second.stop()  # LeaveGroup
            deadline = time.monotonic() + TIMEOUT
            while len(first.assignment()) < PARTITIONS and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert {tp.partition for tp in first.assignment()} == set(range(PARTITIONS))
        finally:
            await first.stop()


# -- kcat -----------------------------------------------------------------------------------

def test_kcat_balanced_consumer_commits_and_resumes(
        mock: MockClusterThread, topic_name: Callable[[str], str], kcat_path: str) -> None:
    topic = topic_name("kcat")
    group = f"{topic}-g"
    expected = _setup(mock, topic, 30)

    def run() -> list[bytes]:
        out = subprocess.run(
            [kcat_path, "-b", mock.bootstrap_servers, "-G", group, "-X",
             "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", topic],
            capture_output=True, timeout=TIMEOUT, check=True)
        return out.stdout.split()

    assert sorted(run()) == expected
    offsets = mock.call(mock.cluster.groups.fetch_offsets, group, None)
    assert sorted((f.partition, f.offset) for f in offsets) == [(p, 10) for p in range(3)]
    assert run() == []  # resumes at the committed offsets: nothing left to read


# -- raw codec client: committed leader epochs ----------------------------------------------

async def test_committed_leader_epoch_round_trip_on_the_wire(
        topic_name: Callable[[str], str]) -> None:
    topic = topic_name("raw")
    group = f"{topic}-g"
    async with MockCluster(brokers=3) as mock:
        mock.cluster.create_topic(topic, PARTITIONS)
        owner = mock.cluster.coordinator_for(0, group)
        assert owner is not None
        async with await connect_broker(mock, owner) as client:
            commit = await client.request(8, 6, {
                "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                "topics": [{"name": topic, "partitions": [
                    {"partition_index": 0, "committed_offset": 42,
                     "committed_leader_epoch": 3, "committed_metadata": "meta"}]}]})
            assert commit.topics[0].partitions[0].error_code == ErrorCode.NONE
            wanted = [{"name": topic, "partition_indexes": [0, 1]}]
            v5 = await client.request(9, 5, {"group_id": group, "topics": wanted})
            parts = v5.topics[0].partitions
            assert [(p.committed_offset, p.committed_leader_epoch, p.metadata)
                    for p in parts] == [(42, 3, "meta"), (-1, -1, "")]
            v8 = await client.request(9, 8, {"groups": [
                {"group_id": group, "topics": None}], "require_stable": True})
            p = v8.groups[0].topics[0].partitions[0]
            assert (p.committed_offset, p.committed_leader_epoch) == (42, 3)
            v4 = await client.request(9, 4, {"group_id": group, "topics": wanted})
            assert v4.topics[0].partitions[0].committed_offset == 42  # no epoch before v5
        other = next(b for b in range(3) if b != owner)
        async with await connect_broker(mock, other) as client:
            wrong = await client.request(9, 5, {"group_id": group, "topics": None})
            assert wrong.error_code == ErrorCode.NOT_COORDINATOR
        await asyncio.sleep(0)
