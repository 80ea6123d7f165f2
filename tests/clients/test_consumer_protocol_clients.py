"""KIP-848 consumer groups with confluent-kafka (librdkafka) and `group.protocol=consumer`.

The client finds the coordinator, joins with ConsumerGroupHeartbeat, and gets its partitions
from the broker's assignor; these tests check what it reads, exactly: one consumer reads
every message once; a second one joins and the partitions are split (a partition moves only
after its old owner released it, from the committed offset, so nothing is read twice); one
leaves and the other takes every partition over; the coordinator's broker stops and the
group, kept by the cluster, carries on at the next coordinator.

The heartbeat interval is shortened to 500 ms (Kafka's default is 5 s) so that the
reassignment steps, each a heartbeat apart, take a few seconds. Every loop is bounded by a
deadline and stops as soon as its condition holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mockbroker.cluster import ManualClock
from mockbroker.cluster.groups.consumer_groups import ConsumerGroupConfig
from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

PARTITIONS = 3
TIMEOUT = 45.0  # seconds; a bound, normally reached far sooner


@pytest.fixture
def mock() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3,
                           consumer_group=ConsumerGroupConfig(heartbeat_interval_ms=500)) as m:
        yield m


def _values(n: int, start: int = 0) -> list[bytes]:
    return [b"v%05d" % i for i in range(start, start + n)]


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    failed: list[object] = []

    def delivered(error: object, _msg: object) -> None:
        if error is not None:
            failed.append(error)

    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % PARTITIONS, on_delivery=delivered)
    assert producer.flush(TIMEOUT) == 0
    assert failed == []


def _consumer(mock: MockClusterThread, group: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": mock.bootstrap_servers, "group.id": group,
                     "group.protocol": "consumer", "auto.offset.reset": "earliest"})


Received = dict[str, list[tuple[int, bytes]]]


def _poll_until(consumers: dict[str, Any], done: Callable[[Received], bool]) -> Received:
    """Poll every consumer in turn until `done(received)` or the deadline."""
    received: Received = {name: [] for name in consumers}
    deadline = time.monotonic() + TIMEOUT
    while not done(received) and time.monotonic() < deadline:
        for name, consumer in consumers.items():
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                received[name].append((msg.partition(), msg.value()))
    return received


def _commit(consumer: Any) -> None:
    from confluent_kafka import KafkaError, KafkaException

    try:
        consumer.commit(asynchronous=False)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError._NO_OFFSET:
            raise


def _partitions(consumer: Any) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def test_consumer_protocol_reads_splits_and_takes_over_exactly(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    from confluent_kafka import TopicPartition

    topic = topic_name("kip848")
    group = f"{topic}-g"
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    first_batch = _values(300)
    _produce(mock.bootstrap_servers, topic, first_batch)
    first, second = _consumer(mock, group), None
    try:
        first.subscribe([topic])
        got = _poll_until({"a": first}, lambda r: len(r["a"]) >= len(first_batch))
        assert sorted(v for _, v in got["a"]) == first_batch  # every message once
        assert _partitions(first) == set(range(PARTITIONS))
        _commit(first)
        wanted = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        committed = first.committed(wanted, timeout=TIMEOUT)
        assert {tp.partition: tp.offset for tp in committed} == {p: 100 for p in range(3)}
        state = mock.control.state()["groups"][group]
        assert state["type"] == "consumer" and state["state"] == "Stable"
        assert [m["assigned"] for m in state["members"]] == [{topic: [0, 1, 2]}]

        # a second member joins: the partitions are split, nothing is read again
        second = _consumer(mock, group)
        second.subscribe([topic])
        consumers = {"a": first, "b": second}

        def split(_: object) -> bool:
            one, two = _partitions(first), _partitions(second)
            return bool(one and two) and one | two == set(range(PARTITIONS)) \
                and not one & two
        nothing = _poll_until(consumers, split)
        assert split(None), (_partitions(first), _partitions(second))
        assert nothing == {"a": [], "b": []}
        stable = mock.control.wait_group_stable(group=group, members=2, timeout_ms=30_000)
        assert stable["observed"]["members"] == 2
        one, two = _partitions(first), _partitions(second)

        more = _values(60, start=300)
        _produce(mock.bootstrap_servers, topic, more)
        got = _poll_until(consumers, lambda r: len(r["a"]) + len(r["b"]) >= len(more))
        assert sorted(v for rows in got.values() for _, v in rows) == more
        assert {p for p, _ in got["a"]} <= one and {p for p, _ in got["b"]} <= two
        for consumer in (first, second):
            _commit(consumer)

        # the second leaves: the first takes every partition over from the commit point
        second.close()
        second = None
        rest = _values(30, start=360)
        _produce(mock.bootstrap_servers, topic, rest)
        got = _poll_until({"a": first}, lambda r: len(r["a"]) >= len(rest)
                          and _partitions(first) == set(range(PARTITIONS)))
        assert _partitions(first) == set(range(PARTITIONS))
        assert sorted(v for _, v in got["a"]) == rest
        members = mock.control.state()["groups"][group]["members"]
        assert len(members) == 1 and members[0]["assigned"] == {topic: [0, 1, 2]}
    finally:
        first.close()
        if second is not None:
            second.close()


def test_consumer_protocol_survives_its_coordinator_stopping(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    topic = topic_name("kip848-move")
    group = f"{topic}-g"
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    before = _values(30)
    _produce(mock.bootstrap_servers, topic, before)
    consumer = _consumer(mock, group)
    try:
        consumer.subscribe([topic])
        got = _poll_until({"a": consumer}, lambda r: len(r["a"]) >= len(before))
        assert sorted(v for _, v in got["a"]) == before
        _commit(consumer)
        old = mock.call(mock.cluster.coordinator_for, 0, group)
        epoch = mock.control.state()["groups"][group]["members"][0]["member_epoch"]
        mock.control.stop_broker(broker=old)
        new = mock.call(mock.cluster.coordinator_for, 0, group)
        assert new is not None and new != old

        after = _values(30, start=30)
        _produce(mock.bootstrap_servers, topic, after)
        got = _poll_until({"a": consumer}, lambda r: len(r["a"]) >= len(after))
        assert sorted(v for _, v in got["a"]) == after  # none lost, none twice
        _commit(consumer)
        state = mock.control.state()["groups"][group]
        assert state["coordinator"] == new and len(state["members"]) == 1
        assert state["members"][0]["member_epoch"] == epoch  # the same membership
        offsets = {p: entry["offset"] for p, entry in state["offsets"][topic].items()}
        assert offsets == {str(p): 20 for p in range(PARTITIONS)}
    finally:
        consumer.close()


def test_consumer_protocol_regex_and_static_member_restart(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    """A regex subscription picks up a topic created later; a static member (instance id)
    that restarts gets its partitions back without a new group epoch and resumes from its
    committed offsets."""
    from confluent_kafka import Consumer

    prefix = topic_name("kip848-re")
    group = f"{prefix}-g"
    first_topic, later_topic = f"{prefix}-a", f"{prefix}-b"
    mock.call(mock.cluster.create_topic, first_topic, PARTITIONS)
    mock.call(mock.cluster.create_topic, f"x{prefix}-a", PARTITIONS)  # no full match
    conf = {"bootstrap.servers": mock.bootstrap_servers, "group.id": group,
            "group.protocol": "consumer", "auto.offset.reset": "earliest",
            "group.instance.id": "static-1"}
    values = _values(12)
    _produce(mock.bootstrap_servers, first_topic, values)
    _produce(mock.bootstrap_servers, f"x{prefix}-a", _values(3, start=900))
    consumer = Consumer(conf)
    try:
        consumer.subscribe([f"^{prefix}-.*"])
        got = _poll_until({"a": consumer}, lambda r: len(r["a"]) >= len(values))
        assert sorted(v for _, v in got["a"]) == values
        mock.call(mock.cluster.create_topic, later_topic, PARTITIONS)
        later = _values(6, start=100)
        _produce(mock.bootstrap_servers, later_topic, later)
        got = _poll_until({"a": consumer}, lambda r: len(r["a"]) >= len(later))
        assert sorted(v for _, v in got["a"]) == later
        _commit(consumer)
        member = mock.control.state()["groups"][group]["members"][0]
        assert member["group_instance_id"] == "static-1"
        assert member["assigned"] == {first_topic: [0, 1, 2], later_topic: [0, 1, 2]}
        group_epoch = mock.control.state()["groups"][group]["group_epoch"]
    finally:
        consumer.close()
    state = mock.control.state()["groups"][group]
    assert [m["member_epoch"] for m in state["members"]] == [-2]  # left for a restart

    more = _values(6, start=200)
    _produce(mock.bootstrap_servers, first_topic, more)
    restarted = Consumer(conf)
    try:
        restarted.subscribe([f"^{prefix}-.*"])
        got = _poll_until({"a": restarted}, lambda r: len(r["a"]) >= len(more))
        assert sorted(v for _, v in got["a"]) == more  # from the committed offsets
        state = mock.control.state()["groups"][group]
        assert state["group_epoch"] == group_epoch  # no rebalance for a static restart
        [member] = state["members"]
        assert member["member_epoch"] == group_epoch and member["group_instance_id"] == "static-1"
    finally:
        restarted.close()


def test_admin_lists_and_describes_a_consumer_group(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    """librdkafka's admin client: ListGroups v5 with the group type, ConsumerGroupDescribe."""
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    topic = topic_name("kip848-admin")
    group = f"{topic}-g"
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    consumer = _consumer(mock, group)
    try:
        consumer.subscribe([topic])
        _poll_until({"a": consumer}, lambda _: len(_partitions(consumer)) == PARTITIONS)
        mock.control.wait_group_stable(group=group, members=1, timeout_ms=30_000)
        admin = AdminClient({"bootstrap.servers": mock.bootstrap_servers})
        listed = admin.list_consumer_groups().result(TIMEOUT)
        assert [(g.group_id, g.type, g.state) for g in listed.valid] == [
            (group, ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE)]
        described = admin.describe_consumer_groups([group])[group].result(TIMEOUT)
        assert described.type == ConsumerGroupType.CONSUMER
        assert described.state == ConsumerGroupState.STABLE
        assert described.partition_assignor == "uniform"
        [member] = described.members
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1, 2]
        assert {tp.topic for tp in member.assignment.topic_partitions} == {topic}
    finally:
        consumer.close()


@pytest.fixture
def migration_disabled() -> Iterator[MockClusterThread]:
    config = ConsumerGroupConfig(heartbeat_interval_ms=500, migration_policy="disabled")
    with MockClusterThread(brokers=3, consumer_group=config) as m:
        yield m


def test_classic_group_upgrades_to_the_consumer_protocol_once_empty(
        migration_disabled: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    """With group.consumer.migration.policy=disabled, while a classic member is in the
    group a consumer-protocol member is refused (GROUP_ID_NOT_FOUND, fatal for librdkafka);
    once the classic group is empty, the new protocol takes the group over and resumes from
    the offsets the classic member committed."""
    from confluent_kafka import Consumer, KafkaError

    mock = migration_disabled
    topic = topic_name("kip848-upgrade")
    group = f"{topic}-g"
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    first = _values(9)
    _produce(mock.bootstrap_servers, topic, first)
    classic = Consumer({"bootstrap.servers": mock.bootstrap_servers, "group.id": group,
                        "auto.offset.reset": "earliest"})
    try:
        classic.subscribe([topic])
        got = _poll_until({"a": classic}, lambda r: len(r["a"]) >= len(first))
        assert sorted(v for _, v in got["a"]) == first
        _commit(classic)
        refused = _consumer(mock, group)
        try:
            refused.subscribe([topic])
            errors: list[Any] = []
            deadline = time.monotonic() + TIMEOUT
            while not errors and time.monotonic() < deadline:
                msg = refused.poll(0.1)
                if msg is not None and msg.error() is not None \
                        and msg.error().code() == KafkaError._FATAL:
                    errors.append(msg.error())
            assert errors and "The group id does not exist" in errors[0].str()
            assert mock.call(mock.cluster.consumer_groups.get, group) is None
        finally:
            refused.close()
    finally:
        classic.close()
    assert mock.control.state()["groups"][group]["type"] == "classic"

    second = _values(6, start=100)
    _produce(mock.bootstrap_servers, topic, second)
    upgraded = _consumer(mock, group)
    try:
        upgraded.subscribe([topic])
        got = _poll_until({"a": upgraded}, lambda r: len(r["a"]) >= len(second))
        assert sorted(v for _, v in got["a"]) == second  # resumes after the classic commits
        assert mock.control.state()["groups"][group]["type"] == "consumer"
    finally:
        upgraded.close()


def test_departed_static_member_expires_on_the_manual_clock(
        topic_name: Callable[[str], str]) -> None:
    """A static member that left for a restart (epoch -2) keeps its partitions until its
    session (group.consumer.session.timeout.ms) ends on the injected clock; then the member
    still heartbeating takes every partition over."""
    from confluent_kafka import Consumer

    clock = ManualClock()
    config = ConsumerGroupConfig(heartbeat_interval_ms=500, session_timeout_ms=45_000)
    with MockClusterThread(brokers=3, clock=clock, consumer_group=config) as mock:
        topic = topic_name("kip848-expiry")
        group = f"{topic}-g"
        mock.call(mock.cluster.create_topic, topic, PARTITIONS)
        base = {"bootstrap.servers": mock.bootstrap_servers, "group.id": group,
                "group.protocol": "consumer"}
        static = Consumer({**base, "group.instance.id": "a"})
        dynamic = Consumer(base)
        try:
            static.subscribe([topic])
            dynamic.subscribe([topic])

            def members() -> dict[str | None, dict[str, Any]]:
                state = mock.control.state()["groups"].get(group, {"members": []})
                return {m["group_instance_id"]: m for m in state["members"]}

            def split(_: object) -> bool:
                return len(_partitions(static)) + len(_partitions(dynamic)) == PARTITIONS \
                    and bool(_partitions(static)) and bool(_partitions(dynamic))
            _poll_until({"a": static, "b": dynamic}, split)
            assert split(None)
            kept = members()["a"]["assigned"]
        finally:
            static.close()
        assert members()["a"]["member_epoch"] == -2 and members()["a"]["assigned"] == kept
        try:
            dynamic_id = members()[None]["member_id"]
            deadline_before = mock.call(
                lambda: mock.cluster.consumer_groups.groups[group].members[dynamic_id]
                .deadline_ms)
            mock.call(clock.advance, 22_500)
            mock.call(mock.cluster.tick)
            assert set(members()) == {"a", None}  # nobody has expired yet

            def heartbeat_seen(_: object) -> bool:
                return mock.call(lambda: mock.cluster.consumer_groups.groups[group]
                                 .members[dynamic_id].deadline_ms) > deadline_before
            _poll_until({"b": dynamic}, heartbeat_seen)
            assert heartbeat_seen(None)
            mock.call(clock.advance, 22_501)
            mock.call(mock.cluster.tick)
            assert set(members()) == {None}  # the static member's session ran out
            _poll_until({"b": dynamic}, lambda _: _partitions(dynamic) == set(range(PARTITIONS)))
            assert _partitions(dynamic) == set(range(PARTITIONS))
        finally:
            dynamic.close()
