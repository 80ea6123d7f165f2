"""KIP-951 with librdkafka: a leader move answered with CurrentLeader hints (Produce v10+,
Fetch v16+) lets the producer go to the new leader before any Metadata request; against an
emulated 3.6 broker (Produce v9, Fetch v15, no hints) it must ask Metadata first.

What the clients sent is read from the request trace: for each client, the requests after
the leader election, in order. Most runs have no Metadata request at all with hints, but
librdkafka 2.16 sometimes still sends one (its leader query races with the hint; the
consumer, after FENCED_LEADER_EPOCH, does so often), so the test checks the order, not the
absence.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import close_confluent

pytestmark = pytest.mark.clients

TOPIC = "hinted"
POLLS = 80  # bounded: at 0.25 s each, 20 s at most
METADATA_HELD_MS = 3000


def _consume(consumer: Consumer, want: int, got: list[bytes]) -> None:
    for _ in range(POLLS):
        if len(got) >= want:
            return
        msg = consumer.poll(0.25)
        if msg is not None and msg.error() is None:
            got.append(msg.value())


def _after(trace: list[dict[str, Any]], client: str) -> list[tuple[int, str, int, Any]]:
    return [(r["broker"], r["api"], r["version"], r["errors"]) for r in trace
            if r["client_id"] == client]


@pytest.mark.parametrize(("release", "hinted"), [(None, True), ("3.6", False)])
def test_leader_move_without_metadata_refresh(release: str | None, hinted: bool) -> None:
    with MockClusterThread(brokers=3, kafka_version=release, trace_buffer=5000) as mock:
        mock.control.create_topic(TOPIC, partitions=1)
        quiet = {"bootstrap.servers": mock.bootstrap_servers,
                 "topic.metadata.refresh.interval.ms": 600_000}
        producer = Producer({**quiet, "client.id": "producer", "linger.ms": 0})
        consumer = Consumer({**quiet, "client.id": "consumer", "group.id": "hints",
                             "enable.auto.commit": False})
        try:
            producer.produce(TOPIC, b"before")
            assert producer.flush(15) == 0
            consumer.assign([TopicPartition(TOPIC, 0, 0)])
            got: list[bytes] = []
            _consume(consumer, 1, got)
            assert got == [b"before"]
            old = mock.control.state()["topics"][TOPIC]["partitions"][0]["leader"]
            since = mock.control.trace(1)["last_seq"]
            # every Metadata answer from here on is held back for 3 s: a producer that moves
            # on the refusal's hint reaches the new leader before any of them, one that needs
            # Metadata to find the leader cannot (librdkafka also asks for Metadata on the
            # refusal, on the connection it already has, while it connects to the new leader)
            mock.control.inject_latency("Metadata", METADATA_HELD_MS)
            moved = mock.control.elect_leader(TOPIC, 0, broker=(old + 1) % 3)
            new = moved["leader"]
            producer.produce(TOPIC, b"after")
            assert producer.flush(15) == 0
            _consume(consumer, 2, got)
            assert got == [b"before", b"after"]
            trace = mock.control.trace(None, since=since)["requests"]
        finally:
            close_confluent(consumer)
    produced = _after(trace, "producer")
    fetched = _after(trace, "consumer")
    # the first request to the old leader is refused either way
    produce_version, fetch_version = (10, 16) if hinted else (9, 15)
    # (the consumer may open its group coordinator connection meanwhile: look at its Fetches)
    assert next(r for r in produced if r[1] == "Produce") == \
        (old, "Produce", produce_version, {"NOT_LEADER_OR_FOLLOWER": 1})
    assert next(r for r in fetched if r[1] == "Fetch") == \
        (old, "Fetch", fetch_version, {"FENCED_LEADER_EPOCH": 1})
    # then the new leader takes the record and serves it
    assert (new, "Produce", produce_version, {}) in produced
    assert (new, "Fetch", fetch_version, {}) in fetched
    # the producer's record reaches the new leader before any Metadata answer only when the
    # refusal named the leader; without hints Metadata is how it learns of it
    to_new_leader = next(i for i, r in enumerate(produced) if r[0] == new)
    metadata = next((i for i, r in enumerate(produced) if r[1] == "Metadata"), len(produced))
    if hinted:
        assert to_new_leader < metadata, produced
    else:
        assert metadata < to_new_leader, produced
