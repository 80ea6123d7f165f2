"""Leader-epoch fencing (KIP-320), in-process through the handlers.

The receiving broker compares the request's CurrentLeaderEpoch with its own view first
(older: FENCED_LEADER_EPOCH 74, newer: UNKNOWN_LEADER_EPOCH 75, -1: no check) and only then
whether it leads the partition (NOT_LEADER_OR_FOLLOWER 6). Checked for Fetch v12, ListOffsets
v7 and OffsetForLeaderEpoch v4; elections raise the epoch by one and Metadata v12 shows it;
a Fetch holding an errored partition answers without suspending instead of long-polling, a
parked Fetch wakes when metadata changes; and OffsetForLeaderEpoch answers the end offset of
each epoch across several elections.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import BatchHeader, split_batches
from kafka_protocol_codec.records import RecordSpec, build_batch

from tests.support.handlers import HandlerHarness

TOPIC = "fencing"
FETCH, LIST_OFFSETS, METADATA, PRODUCE, OFFSET_FOR_LEADER_EPOCH = 1, 2, 3, 0, 23
NONE = ErrorCode.NONE
FENCED = ErrorCode.FENCED_LEADER_EPOCH
UNKNOWN_EPOCH = ErrorCode.UNKNOWN_LEADER_EPOCH
NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER
NO_CHECK = -1
LONG_POLL_MS = 10_000  # never reached: the tests check the handler does not wait for it

assert (int(FENCED), int(UNKNOWN_EPOCH), int(NOT_LEADER)) == (74, 75, 6)


# -- request helpers --------------------------------------------------------------------------

async def request(h: HandlerHarness, broker: int, api_key: int, version: int,
                  body: dict[str, Any]) -> Struct:
    response = await h.call(broker, api_key, version, body)
    assert response is not None
    return response


def leader_and_epoch(h: HandlerHarness, partition: int = 0,
                     topic: str = TOPIC) -> tuple[int, int]:
    return h.leader(topic, partition), h.leader_epoch(topic, partition)


async def produce(h: HandlerHarness, count: int, partition: int = 0,
                  topic: str = TOPIC, tag: str = "r") -> int:
    """Write `count` records in one batch to the current leader; returns the base offset."""
    leader, _ = leader_and_epoch(h, partition, topic)
    batch = build_batch([RecordSpec(value=f"{tag}-{i}".encode(), key=b"k")
                         for i in range(count)])
    body = await request(h, leader, PRODUCE, 9, {
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


def fetch_body(partitions: list[dict[str, Any]], max_wait_ms: int = 0,
               topic: str = TOPIC) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 24,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": partitions}],
            "forgotten_topics_data": [], "rack_id": ""}


def fetch_partitions(body: Struct | None, topic: str = TOPIC) -> dict[int, Struct]:
    assert body is not None and body.error_code == NONE
    assert [t.topic for t in body.responses] == [topic]
    return {p.partition_index: p for p in body.responses[0].partitions}


async def fetch(h: HandlerHarness, broker: int, partitions: list[dict[str, Any]],
                topic: str = TOPIC, version: int = 12) -> dict[int, Struct]:
    return fetch_partitions(
        await h.call(broker, FETCH, version, fetch_body(partitions, 0, topic)), topic)


def fetch_at_once(h: HandlerHarness, broker: int, partitions: list[dict[str, Any]],
                  max_wait_ms: int) -> dict[int, Struct]:
    """A Fetch that must be answered without the handler suspending (HandlerParked if not)."""
    return fetch_partitions(h.call_now(broker, FETCH, 12, fetch_body(partitions, max_wait_ms)))


async def list_offsets(h: HandlerHarness, broker: int, epoch: int, timestamp: int = -1,
                       partition: int = 0) -> Struct:
    body = await request(h, broker, LIST_OFFSETS, 7, {
        "replica_id": -1, "isolation_level": 0,
        "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": partition, "current_leader_epoch": epoch,
             "timestamp": timestamp}]}]})
    assert [t.name for t in body.topics] == [TOPIC]
    [part] = body.topics[0].partitions
    assert part.partition_index == partition
    return part


async def offset_for_leader_epoch(h: HandlerHarness, broker: int, epoch: int,
                                  leader_epoch: int = 0, partition: int = 0) -> Struct:
    body = await request(h, broker, OFFSET_FOR_LEADER_EPOCH, 4, {
        "replica_id": -1,
        "topics": [{"topic": TOPIC, "partitions": [
            {"partition": partition, "current_leader_epoch": epoch,
             "leader_epoch": leader_epoch}]}]})
    assert [t.topic for t in body.topics] == [TOPIC]
    [part] = body.topics[0].partitions
    assert part.partition == partition
    return part


async def metadata(h: HandlerHarness, broker: int) -> Struct:
    body = await request(h, broker, METADATA, 12, {
        "topics": [{"topic_id": uuid.UUID(int=0), "name": TOPIC}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    [topic] = body.topics
    assert topic.error_code == NONE and topic.name == TOPIC
    return topic


# One call per API, returning the partition's error code.
async def _fetch_error(h: HandlerHarness, broker: int, epoch: int) -> int:
    parts = await fetch(h, broker, [fetch_partition(0, epoch)])
    return int(parts[0].error_code)


async def _fetch_v10_error(h: HandlerHarness, broker: int, epoch: int) -> int:
    parts = await fetch(h, broker, [fetch_partition(0, epoch)], version=10)
    return int(parts[0].error_code)


async def _list_offsets_error(h: HandlerHarness, broker: int, epoch: int) -> int:
    return int((await list_offsets(h, broker, epoch)).error_code)


async def _ofle_error(h: HandlerHarness, broker: int, epoch: int) -> int:
    return int((await offset_for_leader_epoch(h, broker, epoch)).error_code)


ErrorCall = Callable[[HandlerHarness, int, int], Awaitable[int]]
APIS: dict[str, ErrorCall] = {
    "fetch-v12": _fetch_error,
    "fetch-v10": _fetch_v10_error,
    "list_offsets-v7": _list_offsets_error,
    "offset_for_leader_epoch-v4": _ofle_error,
}


FOLLOWERS_SERVE = frozenset({"fetch-v12"})


async def _topic_at_epoch_one(harness: HandlerHarness) -> tuple[int, int]:
    """One partition with some data, after one election: epoch 1, so 0 is older."""
    harness.cluster.create_topic(TOPIC, 1)
    await produce(harness, 3)
    harness.cluster.elect_leader(TOPIC, 0)
    leader, epoch = leader_and_epoch(harness)
    assert epoch == 1
    return leader, epoch


# -- epoch checks -----------------------------------------------------------------------------

@pytest.mark.parametrize("api", list(APIS))
async def test_leader_checks_current_leader_epoch(harness: HandlerHarness, api: str) -> None:
    call = APIS[api]
    leader, epoch = await _topic_at_epoch_one(harness)
    assert await call(harness, leader, epoch - 1) == FENCED
    assert await call(harness, leader, epoch + 1) == UNKNOWN_EPOCH
    assert await call(harness, leader, epoch + 10) == UNKNOWN_EPOCH
    assert await call(harness, leader, NO_CHECK) == NONE
    assert await call(harness, leader, epoch) == NONE


@pytest.mark.parametrize("api", list(APIS))
async def test_follower_checks_epoch_before_leadership(harness: HandlerHarness, api: str) -> None:
    call = APIS[api]
    leader, epoch = await _topic_at_epoch_one(harness)
    followers = [b for b in harness.cluster.brokers if b != leader]
    assert len(followers) == 2
    for follower in followers:
        assert await call(harness, follower, epoch - 1) == FENCED
        assert await call(harness, follower, epoch + 1) == UNKNOWN_EPOCH
        # KIP-392: a consumer's Fetch v11+ is served by any replica; older ones, and the
        # other APIs, by the leader only
        served = NONE if api in FOLLOWERS_SERVE else NOT_LEADER
        assert await call(harness, follower, epoch) == served
        assert await call(harness, follower, NO_CHECK) == served


async def test_election_raises_epoch_and_metadata_shows_it(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    old_leader, old_epoch = leader_and_epoch(harness)
    assert old_epoch == 0
    for broker in harness.cluster.brokers:
        [p] = (await metadata(harness, broker)).partitions
        assert (p.leader_id, p.leader_epoch) == (old_leader, 0)

    for round_ in range(1, 4):
        new_leader = harness.cluster.elect_leader(TOPIC, 0)
        assert new_leader != old_leader
        assert leader_and_epoch(harness) == (new_leader, old_epoch + 1)
        for broker in harness.cluster.brokers:  # every broker's own image caught up
            [p] = (await metadata(harness, broker)).partitions
            assert (p.partition_index, p.error_code) == (0, NONE)
            assert (p.leader_id, p.leader_epoch) == (new_leader, round_)
        for name, call in APIS.items():
            assert await call(harness, new_leader, old_epoch) == FENCED, name
            assert await call(harness, new_leader, old_epoch + 1) == NONE, name
            assert await call(harness, new_leader, old_epoch + 2) == UNKNOWN_EPOCH, name
            # the old leader now knows the new epoch and that it is a follower (which serves
            # a consumer's Fetch v11+, KIP-392)
            served = NONE if name in FOLLOWERS_SERVE else NOT_LEADER
            assert await call(harness, old_leader, old_epoch + 1) == served, name
            assert await call(harness, old_leader, old_epoch) == FENCED, name
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
async def test_fetch_with_errored_partition_answers_at_once(harness: HandlerHarness,
                                                            case: str) -> None:
    # Partitions 0 and 1 led by broker 0, partition 2 by broker 1 and not on broker 0 (a
    # follower would serve it, KIP-392); one election on partition 1 (broker 0 again) so it
    # has epoch 1 and an older epoch exists.
    harness.cluster.create_topic(TOPIC, assignments=[[0, 1, 2], [0, 1, 2], [1, 2]])
    assert harness.cluster.elect_leader(TOPIC, 1, 0) == 0
    for p in range(3):
        await produce(harness, 2, partition=p)
    partition, delta, error = ERRORED_CASES[case]
    _, epoch = leader_and_epoch(harness, partition) if partition < 3 else (0, 0)

    # Partition 0 is healthy but fetched at its end: alone it would wait for max_wait_ms.
    end = 2
    wanted = [fetch_partition(0, 0, offset=end),
              fetch_partition(partition, epoch + delta if delta else epoch)]
    parts = fetch_at_once(harness, 0, wanted, max_wait_ms=LONG_POLL_MS)
    assert sorted(parts) == sorted({0, partition})
    assert parts[partition].error_code == error
    assert parts[partition].records in (None, b"")
    assert parts[0].error_code == NONE
    assert parts[0].high_watermark == end
    assert parts[0].records in (None, b"")

    # The same errored partition alone answers at once too.
    alone = fetch_at_once(harness, 0, [wanted[1]], max_wait_ms=LONG_POLL_MS)
    assert alone[partition].error_code == error


async def test_fetch_long_poll_wakes_on_election(harness: HandlerHarness) -> None:
    """A parked fetch re-checks its partitions when metadata changes: after the election
    the old leader answers at once, and as the request's epoch is now older than the
    broker's, with FENCED_LEADER_EPOCH (the epoch check comes before leadership)."""
    harness.cluster.create_topic(TOPIC, 1)
    await produce(harness, 2)
    leader, epoch = leader_and_epoch(harness)
    parked = asyncio.ensure_future(harness.call(
        leader, FETCH, 12, fetch_body([fetch_partition(0, epoch, offset=2)], LONG_POLL_MS)))
    assert not await harness.settle(parked)  # nothing to read: the handler waits
    harness.cluster.elect_leader(TOPIC, 0)
    assert await harness.settle(parked)  # woken by the metadata change, not by its timeout
    parts = fetch_partitions(parked.result())
    assert parts[0].error_code == FENCED


async def test_fetch_with_a_diverging_epoch_answers_at_once(harness: HandlerHarness) -> None:
    """KIP-320: a fetcher whose last fetched epoch ended before its fetch offset must
    truncate; the leader tells it at once (diverging_epoch) instead of long-polling."""
    harness.cluster.create_topic(TOPIC, 1)
    await produce(harness, 3)  # offsets 0-2 in epoch 0
    leader, _ = leader_and_epoch(harness)
    harness.cluster.elect_leader(TOPIC, 0, leader)  # epoch 1 starts at offset 3
    await produce(harness, 2)  # offsets 3-4 in epoch 1
    _, epoch = leader_and_epoch(harness)
    stale = dict(fetch_partition(0, epoch, offset=5), last_fetched_epoch=0)
    parts = fetch_at_once(harness, leader, [stale], max_wait_ms=LONG_POLL_MS)
    assert parts[0].error_code == NONE
    assert dict(parts[0].diverging_epoch) == {"epoch": 0, "end_offset": 3}
    assert parts[0].records in (None, b"")
    # in step with the log (epoch 1 up to its end), the same fetch parks for data
    current = dict(fetch_partition(0, epoch, offset=5), last_fetched_epoch=1)
    parked = asyncio.ensure_future(harness.call(
        leader, FETCH, 12, fetch_body([current], LONG_POLL_MS)))
    assert not await harness.settle(parked)
    parked.cancel()


# -- OffsetForLeaderEpoch across elections ----------------------------------------------------

async def test_offset_for_leader_epoch_across_elections(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    await produce(harness, 5, tag="e0")  # epoch 0: offsets 0-4
    await produce(harness, 2, tag="e0")  # epoch 0: offsets 5-6
    harness.cluster.elect_leader(TOPIC, 0)
    await produce(harness, 4, tag="e1")  # epoch 1: offsets 7-10
    harness.cluster.elect_leader(TOPIC, 0)       # epoch 2: no writes
    harness.cluster.elect_leader(TOPIC, 0)
    await produce(harness, 3, tag="e3")  # epoch 3: offsets 11-13
    harness.cluster.elect_leader(TOPIC, 0)
    await produce(harness, 1, tag="e4")  # epoch 4: offset 14
    leader, epoch = leader_and_epoch(harness)
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
            part = await offset_for_leader_epoch(harness, leader, check, leader_epoch=asked)
            assert part.error_code == NONE
            assert (part.leader_epoch, part.end_offset) == (answer_epoch, end_offset), asked
    for follower in (b for b in harness.cluster.brokers if b != leader):
        part = await offset_for_leader_epoch(harness, follower, epoch, leader_epoch=1)
        assert part.error_code == NOT_LEADER

    # ListOffsets agrees: the log end in the current epoch, offset 0 written in epoch 0.
    latest = await list_offsets(harness, leader, epoch, timestamp=-1)
    assert (latest.error_code, latest.offset, latest.leader_epoch) == (NONE, 15, 4)
    earliest = await list_offsets(harness, leader, epoch, timestamp=-2)
    assert (earliest.error_code, earliest.offset, earliest.leader_epoch) == (NONE, 0, 0)

    # And the stored batches carry the epoch they were written in.
    parts = await fetch(harness, leader, [fetch_partition(0, epoch)])
    assert parts[0].error_code == NONE and parts[0].high_watermark == 15
    headers = [BatchHeader.parse(b) for b in split_batches(parts[0].records)]
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [
        (0, 0), (5, 0), (7, 1), (11, 3), (14, 4)]


async def test_offset_for_leader_epoch_before_v2_has_no_epoch_check(
        harness: HandlerHarness) -> None:
    """v0-1 carry no CurrentLeaderEpoch, so only leadership is checked; v0 answers the end
    offset alone, v1 adds the epoch found."""
    harness.cluster.create_topic(TOPIC, 1)
    await produce(harness, 3)                # epoch 0: offsets 0-2
    harness.cluster.elect_leader(TOPIC, 0)
    await produce(harness, 2)                # epoch 1: offsets 3-4
    leader, epoch = leader_and_epoch(harness)
    assert epoch == 1

    def body(*partitions: tuple[str, int, int]) -> dict[str, Any]:
        return {"topics": [{"topic": t, "partitions": [{"partition": p, "leader_epoch": e}]}
                           for t, p, e in partitions]}

    v1 = await request(harness, leader, OFFSET_FOR_LEADER_EPOCH, 1,
                       body((TOPIC, 0, 0), (TOPIC, 0, 1), (TOPIC, 7, 0), ("nope", 0, 0)))
    assert [(t.topic, [(p.partition, p.error_code, p.leader_epoch, p.end_offset)
                       for p in t.partitions]) for t in v1.topics] == [
        (TOPIC, [(0, NONE, 0, 3)]), (TOPIC, [(0, NONE, 1, 5)]),
        (TOPIC, [(7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]),
        ("nope", [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)])]
    v0 = await request(harness, leader, OFFSET_FOR_LEADER_EPOCH, 0, body((TOPIC, 0, 0)))
    [[p0]] = [t.partitions for t in v0.topics]
    assert (p0.error_code, p0.end_offset) == (NONE, 3)
    follower = next(b for b in harness.cluster.brokers if b != leader)
    refused = await request(harness, follower, OFFSET_FOR_LEADER_EPOCH, 1, body((TOPIC, 0, 0)))
    assert refused.topics[0].partitions[0].error_code == NOT_LEADER
