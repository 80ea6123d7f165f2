"""Leader-epoch fencing over the wire (KIP-320), with a raw codec client.

The receiving broker compares the request's CurrentLeaderEpoch with its own view first
(older: FENCED_LEADER_EPOCH 74, newer: UNKNOWN_LEADER_EPOCH 75, -1: no check) and only then
whether it leads the partition (NOT_LEADER_OR_FOLLOWER 6). Checked for Fetch v12, ListOffsets
v7 and OffsetForLeaderEpoch v4; elections raise the epoch by one and Metadata v12 shows it;
a Fetch holding an errored partition answers at once instead of long-polling; and
OffsetForLeaderEpoch answers the end offset of each epoch across several elections.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import BatchHeader, RecordSpec, build_batch, split_batches

from mockbroker.embedded import MockCluster
from tests.support.rawclient import RawClient, connect_broker

TOPIC = "fencing"
FETCH, LIST_OFFSETS, METADATA, PRODUCE, OFFSET_FOR_LEADER_EPOCH = 1, 2, 3, 0, 23
NONE = ErrorCode.NONE
FENCED = ErrorCode.FENCED_LEADER_EPOCH
UNKNOWN_EPOCH = ErrorCode.UNKNOWN_LEADER_EPOCH
NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER
NO_CHECK = -1
LONG_POLL_MS = 10_000
CALL_TIMEOUT = 5.0  # fail instead of hanging if the broker long-polls an errored fetch

assert (int(FENCED), int(UNKNOWN_EPOCH), int(NOT_LEADER)) == (74, 75, 6)


# -- fixtures and request helpers -------------------------------------------------------------

class Brokers:
    """One RawClient connection per broker, opened on first use."""

    def __init__(self, mc: MockCluster) -> None:
        self.mc = mc
        self._clients: dict[int, RawClient] = {}

    async def request(self, broker: int, api_key: int, version: int, body: dict[str, Any],
                      timeout: float = CALL_TIMEOUT) -> Struct:
        if broker not in self._clients:
            self._clients[broker] = await connect_broker(self.mc, broker,
                                                         client_id="test-fencing")
        return await self._clients[broker].request(api_key, version, body, timeout=timeout)

    async def close(self) -> None:
        for raw in self._clients.values():
            await raw.close()
        self._clients.clear()


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=3) as cluster:
        yield cluster


@pytest.fixture
async def client(mc: MockCluster) -> AsyncIterator[Brokers]:
    brokers = Brokers(mc)
    try:
        yield brokers
    finally:
        await brokers.close()


def leader_and_epoch(mc: MockCluster, partition: int = 0,
                     topic: str = TOPIC) -> tuple[int, int]:
    p = mc.cluster.image.partition(topic, partition)
    assert p is not None
    return p.leader, p.leader_epoch


async def produce(client: Brokers, mc: MockCluster, count: int, partition: int = 0,
                  topic: str = TOPIC, tag: str = "r") -> int:
    """Write `count` records in one batch to the current leader; returns the base offset."""
    leader, _ = leader_and_epoch(mc, partition, topic)
    batch = build_batch([RecordSpec(value=f"{tag}-{i}".encode(), key=b"k")
                         for i in range(count)])
    body = await client.request(leader, PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [
            {"index": partition, "records": batch}]}]})
    part = body.responses[0].partition_responses[0]
    assert part.error_code == NONE, part
    return int(part.base_offset)


def fetch_partition(partition: int, epoch: int, offset: int = 0) -> dict[str, Any]:
    return {"partition": partition, "current_leader_epoch": epoch, "fetch_offset": offset,
            "last_fetched_epoch": -1, "log_start_offset": -1,
            "partition_max_bytes": 1 << 20}


async def fetch(client: Brokers, broker: int, partitions: list[dict[str, Any]],
                max_wait_ms: int = 0, topic: str = TOPIC) -> dict[int, Struct]:
    body = await client.request(broker, FETCH, 12, {
        "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 24,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": partitions}],
        "forgotten_topics_data": [], "rack_id": ""}, timeout=CALL_TIMEOUT)
    assert body.error_code == NONE
    assert [t.topic for t in body.responses] == [topic]
    return {p.partition_index: p for p in body.responses[0].partitions}


async def list_offsets(client: Brokers, broker: int, epoch: int, timestamp: int = -1,
                       partition: int = 0) -> Struct:
    body = await client.request(broker, LIST_OFFSETS, 7, {
        "replica_id": -1, "isolation_level": 0,
        "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": partition, "current_leader_epoch": epoch,
             "timestamp": timestamp}]}]})
    assert [t.name for t in body.topics] == [TOPIC]
    [part] = body.topics[0].partitions
    assert part.partition_index == partition
    return part


async def offset_for_leader_epoch(client: Brokers, broker: int, epoch: int,
                                  leader_epoch: int = 0, partition: int = 0) -> Struct:
    body = await client.request(broker, OFFSET_FOR_LEADER_EPOCH, 4, {
        "replica_id": -1,
        "topics": [{"topic": TOPIC, "partitions": [
            {"partition": partition, "current_leader_epoch": epoch,
             "leader_epoch": leader_epoch}]}]})
    assert [t.topic for t in body.topics] == [TOPIC]
    [part] = body.topics[0].partitions
    assert part.partition == partition
    return part


async def metadata(client: Brokers, broker: int) -> Struct:
    body = await client.request(broker, METADATA, 12, {
        "topics": [{"topic_id": uuid.UUID(int=0), "name": TOPIC}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    [topic] = body.topics
    assert topic.error_code == NONE and topic.name == TOPIC
    return topic


# One call per API, returning the partition's error code.
async def _fetch_error(client: Brokers, broker: int, epoch: int) -> int:
    parts = await fetch(client, broker, [fetch_partition(0, epoch)])
    return int(parts[0].error_code)


async def _list_offsets_error(client: Brokers, broker: int, epoch: int) -> int:
    return int((await list_offsets(client, broker, epoch)).error_code)


async def _ofle_error(client: Brokers, broker: int, epoch: int) -> int:
    return int((await offset_for_leader_epoch(client, broker, epoch)).error_code)


ErrorCall = Callable[[Brokers, int, int], Awaitable[int]]
APIS: dict[str, ErrorCall] = {
    "fetch-v12": _fetch_error,
    "list_offsets-v7": _list_offsets_error,
    "offset_for_leader_epoch-v4": _ofle_error,
}


async def _topic_at_epoch_one(mc: MockCluster, client: Brokers) -> tuple[int, int]:
    """One partition with some data, after one election: epoch 1, so 0 is older."""
    mc.cluster.create_topic(TOPIC, 1)
    await produce(client, mc, 3)
    mc.cluster.elect_leader(TOPIC, 0)
    leader, epoch = leader_and_epoch(mc)
    assert epoch == 1
    return leader, epoch


# -- epoch checks -----------------------------------------------------------------------------

@pytest.mark.parametrize("api", list(APIS))
async def test_leader_checks_current_leader_epoch(mc: MockCluster, client: Brokers,
                                                  api: str) -> None:
    call = APIS[api]
    leader, epoch = await _topic_at_epoch_one(mc, client)
    assert await call(client, leader, epoch - 1) == FENCED
    assert await call(client, leader, epoch + 1) == UNKNOWN_EPOCH
    assert await call(client, leader, epoch + 10) == UNKNOWN_EPOCH
    assert await call(client, leader, NO_CHECK) == NONE
    assert await call(client, leader, epoch) == NONE


@pytest.mark.parametrize("api", list(APIS))
async def test_follower_checks_epoch_before_leadership(mc: MockCluster, client: Brokers,
                                                       api: str) -> None:
    call = APIS[api]
    leader, epoch = await _topic_at_epoch_one(mc, client)
    followers = [b for b in mc.cluster.brokers if b != leader]
    assert len(followers) == 2
    for follower in followers:
        assert await call(client, follower, epoch - 1) == FENCED
        assert await call(client, follower, epoch + 1) == UNKNOWN_EPOCH
        assert await call(client, follower, epoch) == NOT_LEADER
        assert await call(client, follower, NO_CHECK) == NOT_LEADER


async def test_election_raises_epoch_and_metadata_shows_it(mc: MockCluster,
                                                           client: Brokers) -> None:
    mc.cluster.create_topic(TOPIC, 1)
    old_leader, old_epoch = leader_and_epoch(mc)
    assert old_epoch == 0
    for broker in mc.cluster.brokers:
        [p] = (await metadata(client, broker)).partitions
        assert (p.leader_id, p.leader_epoch) == (old_leader, 0)

    for round_ in range(1, 4):
        new_leader = mc.cluster.elect_leader(TOPIC, 0)
        assert new_leader != old_leader
        assert leader_and_epoch(mc) == (new_leader, old_epoch + 1)
        for broker in mc.cluster.brokers:  # every broker's own image caught up
            [p] = (await metadata(client, broker)).partitions
            assert (p.partition_index, p.error_code) == (0, NONE)
            assert (p.leader_id, p.leader_epoch) == (new_leader, round_)
        for name, call in APIS.items():
            assert await call(client, new_leader, old_epoch) == FENCED, name
            assert await call(client, new_leader, old_epoch + 1) == NONE, name
            assert await call(client, new_leader, old_epoch + 2) == UNKNOWN_EPOCH, name
            # the old leader now knows the new epoch and that it is a follower
            assert await call(client, old_leader, old_epoch + 1) == NOT_LEADER, name
            assert await call(client, old_leader, old_epoch) == FENCED, name
        old_leader, old_epoch = new_leader, old_epoch + 1


# -- an errored partition makes a Fetch answer at once ----------------------------------------

ERRORED_CASES = {
    # name: (partition to add, its current_leader_epoch relative to the real one, error)
    "fenced-epoch": (1, -1, FENCED),
    "unknown-epoch": (1, +1, UNKNOWN_EPOCH),
    "not-leader": (2, 0, NOT_LEADER),
    "unknown-partition": (99, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
}


@pytest.mark.parametrize("case", list(ERRORED_CASES))
async def test_fetch_with_errored_partition_answers_at_once(mc: MockCluster,
                                                            client: Brokers,
                                                            case: str) -> None:
    # Partitions 0 and 1 led by broker 0, partition 2 by broker 1; one election on
    # partition 1 (broker 0 again) so it has epoch 1 and an older epoch exists.
    mc.cluster.create_topic(TOPIC, assignments=[[0, 1, 2], [0, 1, 2], [1, 2, 0]])
    assert mc.cluster.elect_leader(TOPIC, 1, 0) == 0
    for p in range(3):
        await produce(client, mc, 2, partition=p)
    partition, delta, error = ERRORED_CASES[case]
    _, epoch = leader_and_epoch(mc, partition) if partition < 3 else (0, 0)

    # Partition 0 is healthy but fetched at its end: alone it would wait for max_wait_ms.
    end = 2
    wanted = [fetch_partition(0, 0, offset=end),
              fetch_partition(partition, epoch + delta if delta else epoch)]
    parts = await asyncio.wait_for(fetch(client, 0, wanted, max_wait_ms=LONG_POLL_MS),
                                   CALL_TIMEOUT)
    assert sorted(parts) == sorted({0, partition})
    assert parts[partition].error_code == error
    assert parts[partition].records in (None, b"")
    assert parts[0].error_code == NONE
    assert parts[0].high_watermark == end
    assert parts[0].records in (None, b"")

    # The same errored partition alone answers at once too.
    alone = await asyncio.wait_for(
        fetch(client, 0, [wanted[1]], max_wait_ms=LONG_POLL_MS), CALL_TIMEOUT)
    assert alone[partition].error_code == error


async def test_fetch_long_poll_wakes_on_election(mc: MockCluster, client: Brokers) -> None:
    """A parked fetch re-checks its partitions when metadata changes: after the election
    the old leader answers at once, and as the request's epoch is now older than the
    broker's, with FENCED_LEADER_EPOCH (the epoch check comes before leadership)."""
    mc.cluster.create_topic(TOPIC, 1)
    await produce(client, mc, 2)
    leader, epoch = leader_and_epoch(mc)
    parked = asyncio.ensure_future(
        fetch(client, leader, [fetch_partition(0, epoch, offset=2)], max_wait_ms=LONG_POLL_MS))
    await asyncio.sleep(0.05)  # let the fetch park on the broker
    assert not parked.done()
    mc.cluster.elect_leader(TOPIC, 0)
    parts = await asyncio.wait_for(parked, CALL_TIMEOUT)
    assert parts[0].error_code == FENCED


# -- OffsetForLeaderEpoch across elections ----------------------------------------------------

async def test_offset_for_leader_epoch_across_elections(mc: MockCluster,
                                                        client: Brokers) -> None:
    mc.cluster.create_topic(TOPIC, 1)
    await produce(client, mc, 5, tag="e0")  # epoch 0: offsets 0-4
    await produce(client, mc, 2, tag="e0")  # epoch 0: offsets 5-6
    mc.cluster.elect_leader(TOPIC, 0)
    await produce(client, mc, 4, tag="e1")  # epoch 1: offsets 7-10
    mc.cluster.elect_leader(TOPIC, 0)       # epoch 2: no writes
    mc.cluster.elect_leader(TOPIC, 0)
    await produce(client, mc, 3, tag="e3")  # epoch 3: offsets 11-13
    mc.cluster.elect_leader(TOPIC, 0)
    await produce(client, mc, 1, tag="e4")  # epoch 4: offset 14
    leader, epoch = leader_and_epoch(mc)
    assert epoch == 4

    # Kafka's leader-epoch cache: the largest epoch <= the one asked for, and the start
    # offset of the next epoch (or the log end for the current one). Epoch 2 wrote nothing,
    # so its entry was replaced by epoch 3's at the same start offset.
    expected = {
        0: (0, 7),
        1: (1, 11),
        2: (1, 11),
        3: (3, 14),
        4: (4, 15),
        5: (-1, -1),  # newer than any epoch the partition has had
    }
    for check in (epoch, NO_CHECK):
        for asked, (answer_epoch, end_offset) in expected.items():
            part = await offset_for_leader_epoch(client, leader, check, leader_epoch=asked)
            assert part.error_code == NONE
            assert (part.leader_epoch, part.end_offset) == (answer_epoch, end_offset), asked
    for follower in (b for b in mc.cluster.brokers if b != leader):
        part = await offset_for_leader_epoch(client, follower, epoch, leader_epoch=1)
        assert part.error_code == NOT_LEADER

    # ListOffsets agrees: the log end in the current epoch, offset 0 written in epoch 0.
    latest = await list_offsets(client, leader, epoch, timestamp=-1)
    assert (latest.error_code, latest.offset, latest.leader_epoch) == (NONE, 15, 4)
    earliest = await list_offsets(client, leader, epoch, timestamp=-2)
    assert (earliest.error_code, earliest.offset, earliest.leader_epoch) == (NONE, 0, 0)

    # And the stored batches carry the epoch they were written in.
    parts = await fetch(client, leader, [fetch_partition(0, epoch)])
    assert parts[0].error_code == NONE and parts[0].high_watermark == 15
    headers = [BatchHeader.parse(b) for b in split_batches(parts[0].records)]
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [
        (0, 0), (5, 0), (7, 1), (11, 3), (14, 4)]
