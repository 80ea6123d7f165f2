"""A Fetch stays parked until min_bytes are available or max_wait_ms passes, as in Kafka's
fetch purgatory, however often it is woken before that.

Every wake-up (an append, a metadata change) re-checks the request: not enough data and no
partition in error means it goes back to waiting for the time that is left. Nothing here
measures durations. The ordering argument instead: the cluster runs on the test's loop, so by
the time a request made on another connection has been answered, the parked Fetch has
already run whatever its wake-up triggered; its listener on the partition still being there
then shows it went back to waiting rather than answering.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import PartitionLog
from mockbroker.embedded import MockCluster
from tests.support.rawclient import RawClient, connect_broker

FETCH, PRODUCE, METADATA = 1, 0, 3
TOPIC = "min-bytes"
VALUE_SIZE = 1000  # one record with this value makes a batch of a little more
LONG_POLL_MS = 60_000  # far beyond every bounded wait here: only data or an error end it
# for the case that must end at its deadline: ample for two produce round trips on loopback
MODERATE_WAIT_MS = 1000
CALL_TIMEOUT = 10.0


class Clients:
    def __init__(self, producer: RawClient, consumer: RawClient, other: RawClient) -> None:
        self.producer = producer
        self.consumer = consumer  # only ever holds the parked Fetch
        self.other = other  # round trips that let the parked Fetch run first


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=1) as cluster:
        cluster.cluster.create_topic(TOPIC, 1)
        yield cluster


@pytest.fixture
async def clients(mc: MockCluster) -> AsyncIterator[Clients]:
    raws = [await connect_broker(mc, 0, client_id=name)
            for name in ("producer", "consumer", "other")]
    try:
        yield Clients(*raws)
    finally:
        for raw in raws:
            await raw.close()


def _log(mc: MockCluster) -> PartitionLog:
    topic = mc.cluster.image.topics[TOPIC]
    log = mc.cluster.log(topic.topic_id, 0)
    assert log is not None
    return log


def _parked(log: PartitionLog) -> bool:
    """A Fetch is waiting on this partition (the log exposes no count: private list)."""
    return log.listener_count > 0


def _fetch_body(min_bytes: int, max_wait_ms: int, epoch: int = -1) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": 1 << 24, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": 0, "current_leader_epoch": epoch, "fetch_offset": 0,
                 "last_fetched_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


async def _produce(raw: RawClient, tag: str) -> int:
    """One batch of one record; returns the batch's size in bytes."""
    batch = build_batch([RecordSpec(value=tag.encode().ljust(VALUE_SIZE, b"."))])
    body = await raw.request(PRODUCE, 9, {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
    assert body.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    return len(batch)


async def _round_trip(raw: RawClient) -> None:
    """A request on another connection: once answered, every task woken before it ran."""
    await raw.request(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False})


async def _park(mc: MockCluster, clients: Clients, min_bytes: int, max_wait_ms: int,
                epoch: int = -1) -> asyncio.Future[Struct]:
    correlation_id = await clients.consumer.send(FETCH, 12, _fetch_body(min_bytes, max_wait_ms,
                                                                        epoch))
    answer = asyncio.ensure_future(clients.consumer.receive(FETCH, 12, correlation_id,
                                                            timeout=CALL_TIMEOUT))
    log = _log(mc)
    for _ in range(500):  # bounded: until the broker has parked the Fetch
        if _parked(log) or answer.done():
            break
        await asyncio.sleep(0.01)
    assert _parked(log) and not answer.done(), "the Fetch should be parked"
    return answer


def _values(response: Struct) -> list[bytes]:
    [topic] = response.body.responses
    [part] = topic.partitions
    assert part.error_code == ErrorCode.NONE
    return [(record.value or b"").rstrip(b".")
            for batch in split_batches(bytes(part.records or b""))
            for record in decode_batch(batch).records]


async def test_small_append_does_not_end_the_wait(mc: MockCluster, clients: Clients) -> None:
    """The first append wakes the Fetch with too little data: it keeps waiting, and the
    answer goes out once a second append passes min_bytes, holding both batches."""
    first_size = len(build_batch([RecordSpec(value=b"x" * VALUE_SIZE)]))
    answer = await _park(mc, clients, min_bytes=first_size + 1, max_wait_ms=LONG_POLL_MS)
    await _produce(clients.producer, "first")
    await _round_trip(clients.other)
    assert _parked(_log(mc)) and not answer.done(), \
        "woken by an append below min_bytes, the Fetch must go back to waiting"
    await _produce(clients.producer, "second")
    response = await answer
    assert _values(response) == [b"first", b"second"]
    assert not _parked(_log(mc))


async def test_deadline_answers_with_what_there_is(mc: MockCluster, clients: Clients) -> None:
    """min_bytes is never reached: the answer goes out at max_wait_ms with what there is
    then, which includes a batch appended after the first wake-up (answering at that
    wake-up would have held only the first)."""
    answer = await _park(mc, clients, min_bytes=1 << 20, max_wait_ms=MODERATE_WAIT_MS)
    await _produce(clients.producer, "first")
    await _round_trip(clients.other)
    await _produce(clients.producer, "second")
    response = await answer
    assert _values(response) == [b"first", b"second"]
    assert not _parked(_log(mc))


async def test_unrelated_metadata_change_does_not_end_the_wait(mc: MockCluster,
                                                              clients: Clients) -> None:
    answer = await _park(mc, clients, min_bytes=1, max_wait_ms=LONG_POLL_MS)
    mc.cluster.create_topic("elsewhere", 1)  # wakes every parked Fetch
    await _round_trip(clients.other)
    assert _parked(_log(mc)) and not answer.done()
    await _produce(clients.producer, "data")
    assert _values(await answer) == [b"data"]


async def test_leadership_change_answers_at_once(mc: MockCluster, clients: Clients) -> None:
    """An election while the Fetch waits for more data ends the wait with the partition's
    error (the request's epoch is now fenced), long before max_wait_ms."""
    partition = mc.cluster.image.partition(TOPIC, 0)
    assert partition is not None
    answer = await _park(mc, clients, min_bytes=1 << 20, max_wait_ms=LONG_POLL_MS,
                         epoch=partition.leader_epoch)
    await _produce(clients.producer, "some")
    await _round_trip(clients.other)
    assert not answer.done()
    mc.cluster.elect_leader(TOPIC, 0)
    response = await answer
    [part] = response.body.responses[0].partitions
    assert part.error_code == ErrorCode.FENCED_LEADER_EPOCH
