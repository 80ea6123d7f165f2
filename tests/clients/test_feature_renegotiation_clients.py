"""KIP-778 ApiVersions renegotiation with real clients: kafka-python's KafkaAdminClient upgrades
metadata.version while a librdkafka producer keeps producing. Once every broker applied the
FeatureLevelRecord the brokers close their client connections; the producer reconnects (the
trace shows ApiVersions from it on new connections, to brokers that all advertise the new
level) and every message is delivered exactly once, in order per partition."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.cluster.kraft.controller import METADATA_VERSION
from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

OLDER = METADATA_VERSION - 1
TOPIC = "mv-upgrade"
PARTITIONS = 3
CLIENT_ID = "mv-producer"
DEADLINE_S = 30.0


@pytest.fixture
def mock() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3, metadata_version=OLDER) as cluster:
        yield cluster


def _producer_peers(mock: MockClusterThread, since: int = 0) -> list[dict[str, Any]]:
    return [r for r in mock.control.trace(n=None, api="ApiVersions", since=since)["requests"]
            if r["client_id"] == CLIENT_ID]


def _consume_all(boot: str, expected: int) -> dict[int, list[bytes]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=boot, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        partitions = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + DEADLINE_S
        while sum(map(len, got.values())) < expected and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=200).items():
                got[tp.partition].extend(r.value for r in records)
        return got
    finally:
        consumer.close()


def test_upgrade_while_producing_reconnects_and_delivers_exactly_once(
        mock: MockClusterThread) -> None:
    from confluent_kafka import Producer
    from kafka.admin import KafkaAdminClient

    mock.call(lambda: mock.cluster.create_topic(TOPIC, PARTITIONS, 3))
    mock.control.start_trace(buffer=100_000)
    producer = Producer({"bootstrap.servers": mock.bootstrap_servers, "client.id": CLIENT_ID,
                         "acks": "all", "linger.ms": 5})
    holder = [producer]  # produce() reads it from here: `producer` is deleted at the end
    sent: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    failures: list[Any] = []

    def produce(n: int) -> None:
        """Queue `n` more numbered messages, round-robin over the partitions."""
        for _ in range(n):
            index = sum(map(len, sent.values()))
            partition = index % PARTITIONS
            value = b"v%06d" % index
            sent[partition].append(value)
            holder[0].produce(TOPIC, value=value, partition=partition,
                             on_delivery=lambda err, _msg: err and failures.append(err))
        holder[0].poll(0)

    try:
        produce(100)
        assert producer.flush(DEADLINE_S) == 0
        before = _producer_peers(mock)
        old_peers = {(r["broker"], r["peer"]) for r in before}
        assert old_peers, "the producer negotiated ApiVersions before the upgrade"
        seq = mock.control.trace(n=1)["last_seq"]
        open_before = {c["id"] for c in mock.control.state()["connections"]
                       if c["client_id"] == CLIENT_ID}
        assert open_before

        admin = KafkaAdminClient(bootstrap_servers=mock.bootstrap_servers)
        try:
            admin.update_features({"metadata.version": METADATA_VERSION})
        finally:
            admin.close()

        # keep producing until every broker has closed its connections and the producer
        # has negotiated again on a new connection (bounded in count and time)
        deadline = time.monotonic() + DEADLINE_S
        renegotiated: list[dict[str, Any]] = []
        for _ in range(1000):
            produce(5)
            producer.poll(0.02)
            events = mock.control.state()["controller"]["apiversions_renegotiations"]
            renegotiated = [r for r in _producer_peers(mock, seq)
                            if (r["broker"], r["peer"]) not in old_peers]
            if (len(events) == 3 and renegotiated) or time.monotonic() > deadline:
                break
        assert sorted(e["broker"] for e in events) == [0, 1, 2]
        assert sum(e["closed_connections"] for e in events) >= len(open_before)
        still_open = {c["id"] for c in mock.control.state()["connections"]}
        assert open_before.isdisjoint(still_open)
        assert renegotiated, "the producer negotiated ApiVersions again on a new connection"
        produce(100)
        assert producer.flush(DEADLINE_S) == 0
        assert failures == []
    finally:
        holder.clear()
        del producer
        gc.collect()

    state = mock.control.state()
    assert [b["metadata_version"] for b in state["brokers"]] == [METADATA_VERSION] * 3
    got = _consume_all(mock.bootstrap_servers, sum(map(len, sent.values())))
    assert got == sent
