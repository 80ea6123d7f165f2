"""Kafka 4.0's mixed groups with real clients: classic and consumer-protocol members in one
group, and rolling upgrades/downgrades between the protocols (group_migration.py).

confluent-kafka (librdkafka) consumers run with `group.protocol=classic` (the default) or
`consumer`, otherwise at default settings; kafka-python joins a group led by the consumer
protocol. Each phase produces a batch, polls until every record of it has been read,
commits, and only then changes the membership, so a record read twice or never shows up
as a wrong multiset of values. Every loop is bounded by a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mockbroker.cluster.groups.consumer_groups import ConsumerGroupConfig
from mockbroker.embedded import MockClusterThread
from tests.clients.test_consumer_protocol_clients import (
    PARTITIONS,
    TIMEOUT,
    _commit,
    _partitions,
    _produce,
    _values,
)

pytestmark = pytest.mark.clients


@pytest.fixture
def mock() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3, consumer_group=ConsumerGroupConfig()) as m:
        yield m


def _confluent(mock: MockClusterThread, group: str, protocol: str,
               **settings: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": mock.bootstrap_servers, "group.id": group,
                     "group.protocol": protocol, "auto.offset.reset": "earliest", **settings})


def _settled(mock: MockClusterThread, group: str, consumers: list[Any]) -> Callable[[], bool]:
    """Every consumer holds partitions, none twice, all of them covered, and the group
    (either type) agrees: each member's assignment is what the coordinator gave it."""
    def check() -> bool:
        owned = [_partitions(c) for c in consumers]
        if not all(owned) or sum(len(o) for o in owned) != PARTITIONS:
            return False
        if set().union(*owned) != set(range(PARTITIONS)):
            return False
        state = mock.control.state()["groups"].get(group, {})
        if state.get("type") == "consumer":
            return state["state"] == "Stable" and len(state["members"]) == len(consumers)
        return state.get("state") == "Stable" and len(state.get("members", ())) == len(consumers)
    return check


def _read_batch(mock: MockClusterThread, group: str, topic: str, consumers: list[Any],
                values: list[bytes]) -> list[bytes]:
    """Let the group settle, produce `values`, poll every consumer until as many records
    arrived (or the deadline), commit each consumer; returns what was read."""
    settled = _settled(mock, group, consumers)
    deadline = time.monotonic() + TIMEOUT
    early: list[bytes] = []
    while not settled() and time.monotonic() < deadline:
        for consumer in consumers:
            msg = consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                early.append(msg.value())
    assert settled(), ([_partitions(c) for c in consumers],
                       mock.control.state()["groups"].get(group))
    assert early == []  # everything before was read and committed
    _produce(mock.bootstrap_servers, topic, values)
    got: list[bytes] = []
    owners: dict[int, int] = {}
    deadline = time.monotonic() + TIMEOUT
    while len(got) < len(values) and time.monotonic() < deadline:
        for index, consumer in enumerate(consumers):
            msg = consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
                assert owners.setdefault(msg.partition(), index) == index  # one reader each
    for consumer in consumers:
        _commit(consumer)
    return sorted(got)


def _committed(mock: MockClusterThread, group: str, topic: str) -> dict[str, int]:
    offsets = mock.control.state()["groups"][group]["offsets"][topic]
    return {p: entry["offset"] for p, entry in offsets.items()}


def _member_types(mock: MockClusterThread, group: str) -> tuple[str, list[str]]:
    state = mock.control.state()["groups"][group]
    return state["type"], sorted(m["member_type"] for m in state["members"])


@pytest.mark.parametrize(("strategy", "first"), [
    ("default", "consumer"), ("default", "classic"), ("cooperative-sticky", "classic")])
def test_classic_and_consumer_protocol_consumers_share_one_group(
        mock: MockClusterThread, topic_name: Callable[[str], str], strategy: str,
        first: str) -> None:
    """The classic consumer at its default (eager range,roundrobin) or cooperative, joining
    a consumer group, or alone first (then the consumer-protocol member upgrades the group
    and the classic one gives partitions up: all at once when eager; keeping the rest when
    cooperative, which reports what it owns when it rejoins)."""
    topic = topic_name("mixed")
    group = f"{topic}-g"
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    modern = _confluent(mock, group, "consumer")
    extra = {} if strategy == "default" else {"partition.assignment.strategy": strategy}
    classic = _confluent(mock, group, "classic", **extra)
    try:
        leader, follower = (modern, classic) if first == "consumer" else (classic, modern)
        leader.subscribe([topic])
        alone = _values(30)
        assert _read_batch(mock, group, topic, [leader], alone) == alone
        assert _member_types(mock, group) == (first, [first])
        follower.subscribe([topic])
        batch = _values(90, start=30)
        assert _read_batch(mock, group, topic, [modern, classic], batch) == batch
        assert _member_types(mock, group) == ("consumer", ["classic", "consumer"])
        assert _committed(mock, group, topic) == {str(p): 40 for p in range(PARTITIONS)}
        second = _values(30, start=120)
        assert _read_batch(mock, group, topic, [modern, classic], second) == second
    finally:
        classic.close()
        modern.close()


def test_rolling_upgrade_and_downgrade_keep_every_record_and_offset(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    """Two classic consumers are replaced one by one by consumer-protocol ones (the first
    replacement upgrades the group online), then back (the last consumer-protocol member
    leaving downgrades it)."""
    topic = topic_name("rolling")
    group = f"{topic}-g"
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    members = [_confluent(mock, group, "classic"), _confluent(mock, group, "classic")]
    expected_types = [("classic", ["classic", "classic"]),
                      ("consumer", ["classic", "consumer"]),
                      ("consumer", ["consumer", "consumer"]),
                      ("consumer", ["classic", "consumer"]),
                      ("classic", ["classic", "classic"])]
    steps = ["consumer", "consumer", "classic", "classic"]
    produced = 0
    try:
        for member in members:
            member.subscribe([topic])
        for step, wanted in enumerate(expected_types):
            batch = _values(30, start=produced)
            produced += len(batch)
            assert _read_batch(mock, group, topic, members, batch) == batch, step
            assert _member_types(mock, group) == wanted, step
            assert _committed(mock, group, topic) == {
                str(p): produced // PARTITIONS for p in range(PARTITIONS)}, step
            if step < len(steps):  # replace the oldest member by one of the next protocol
                members.pop(0).close()
                replacement = _confluent(mock, group, steps[step])
                replacement.subscribe([topic])
                members.append(replacement)
    finally:
        for member in members:
            member.close()


def test_kafka_python_classic_consumer_joins_a_consumer_protocol_group(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    from kafka import KafkaConsumer

    topic = topic_name("kp-mixed")
    group = f"{topic}-g"
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    modern = _confluent(mock, group, "consumer")
    modern.subscribe([topic])
    old = KafkaConsumer(topic, bootstrap_servers=mock.bootstrap_servers, group_id=group,
                        auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        settled = False
        deadline = time.monotonic() + TIMEOUT
        while not settled and time.monotonic() < deadline:
            modern.poll(0.05)
            old.poll(timeout_ms=50)
            theirs = {tp.partition for tp in old.assignment()}
            settled = bool(theirs) and bool(_partitions(modern)) \
                and theirs | _partitions(modern) == set(range(PARTITIONS)) \
                and not theirs & _partitions(modern)
        assert settled, (old.assignment(), _partitions(modern))
        assert _member_types(mock, group) == ("consumer", ["classic", "consumer"])
        values = _values(60)
        _produce(mock.bootstrap_servers, topic, values)
        got: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < len(values) and time.monotonic() < deadline:
            msg = modern.poll(0.05)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            for records in old.poll(timeout_ms=50).values():
                got.extend(r.value for r in records)
        assert sorted(got) == values
        old.commit()
        _commit(modern)
        assert _committed(mock, group, topic) == {str(p): 20 for p in range(PARTITIONS)}
    finally:
        old.close()
        modern.close()


def test_classic_static_member_replacing_the_consumer_member_downgrades_without_rebalance(
        mock: MockClusterThread, topic_name: Callable[[str], str]) -> None:
    """A consumer-protocol static member (group.instance.id) shares a group with a classic
    one, closes (a static leave keeps its place) and restarts as a classic consumer with
    the same instance id: as in Kafka 4.0 the group becomes classic during that JoinGroup,
    at the same generation and without a rebalance, the restarted member getting exactly the
    partitions it had and the other member keeping its own (it is never asked to revoke)."""
    topic = topic_name("static-downgrade")
    group = f"{topic}-g"
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    modern = _confluent(mock, group, "consumer", **{"group.instance.id": "a"})
    classic = _confluent(mock, group, "classic")
    revoked: list[list[int]] = []
    restarted = None
    try:
        modern.subscribe([topic])
        classic.subscribe([topic], on_revoke=lambda _c, parts: revoked.append(
            sorted(p.partition for p in parts)))
        batch = _values(60)
        assert _read_batch(mock, group, topic, [modern, classic], batch) == batch
        assert _member_types(mock, group) == ("consumer", ["classic", "consumer"])
        epoch = mock.control.state()["groups"][group]["group_epoch"]
        modern_parts, classic_parts = _partitions(modern), _partitions(classic)
        revoked.clear()  # the revocations of settling in, before the replacement
        modern.close()
        assert _member_types(mock, group) == ("consumer", ["classic", "consumer"])
        restarted = _confluent(mock, group, "classic", **{"group.instance.id": "a"})
        restarted.subscribe([topic])
        second = _values(60, start=60)
        assert _read_batch(mock, group, topic, [restarted, classic], second) == second
        assert _member_types(mock, group) == ("classic", ["classic", "classic"])
        state = mock.control.state()["groups"][group]
        assert (state["state"], state["generation"]) == ("Stable", epoch)
        assert (_partitions(restarted), _partitions(classic)) == (modern_parts, classic_parts)
        assert revoked == []
        assert _committed(mock, group, topic) == {str(p): 40 for p in range(PARTITIONS)}
    finally:
        classic.close()
        if restarted is not None:
            restarted.close()
