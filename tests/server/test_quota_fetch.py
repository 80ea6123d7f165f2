"""A consumer's Fetch under consumer_byte_rate, as Kafka's handleFetchRequest meters it,
over the raw codec on a manual clock: max_bytes is capped at what the quota allows in one
window (quota * 10 s), a fetch that would go over the quota is answered empty with
throttle_time_ms and its bytes are not counted (so the fetch after the throttle gets the
records), a throttled full fetch opens no session while an incremental one keeps its
session, and a follower's Fetch is not subject to client quotas.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import ManualClock
from mockbroker.embedded import MockCluster
from tests.support.rawclient import RawClient, connect_broker

# quota sample windows are aligned to the clock: a start on a window boundary keeps the
# expected throttle times exact
WINDOW_ALIGNED_START_MS = 1_700_000_000_000

PRODUCE, FETCH = 0, 1
TOPIC = "metered-reads"
VALUES = [f"reading-{i}".encode().ljust(1000, b".") for i in range(3)]


@pytest.fixture
async def cluster() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=1, clock=ManualClock(WINDOW_ALIGNED_START_MS)) as mc:
        mc.cluster.create_topic(TOPIC, 1, 1)
        yield mc


def _fetch(offset: int | None, *, session_id: int = 0, epoch: int = -1,
           replica_id: int = -1) -> dict[str, Any]:
    """A Fetch v12 body; offset None names no partition (an incremental fetch with none
    changed)."""
    partitions = [] if offset is None else [
        {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
         "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}]
    return {"replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 24,
            "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
            "topics": [{"topic": TOPIC, "partitions": partitions}] if partitions else [],
            "forgotten_topics_data": [], "rack_id": ""}


def _values(answer: Struct) -> list[bytes]:
    return [record.value for topic in answer.responses for part in topic.partitions
            for batch in split_batches(bytes(part.records or b""))
            for record in decode_batch(batch).records]


async def _produce_each(client: RawClient) -> int:
    """One batch per value; returns the size of one batch (all are the same size)."""
    sizes = set()
    for value in VALUES:
        batch = build_batch([RecordSpec(value=value)], base_timestamp=1)
        sizes.add(len(batch))
        answer = await client.request(PRODUCE, 9, {
            "transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
                {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
        assert answer.responses[0].partition_responses[0].error_code == 0
    [size] = sizes
    return size


async def _recorded(cluster: MockCluster) -> float:
    return float((await cluster.control.quotas())["recorded"]["consumer_byte_rate"])


async def test_throttled_fetch_is_empty_and_its_bytes_unrecorded(cluster: MockCluster) -> None:
    client = await connect_broker(cluster, 0)  # client id "rawclient"
    size = await _produce_each(client)
    # window cap = quota * 10 s = 3 batches / 1.02: two batches fit, three do not
    quota = 3 * size / 10 / 1.02
    await cluster.control.set_quota({"client-id": "rawclient"}, {"consumer_byte_rate": quota})

    first = await client.request(FETCH, 12, _fetch(0, epoch=0))  # opens a session
    assert first.throttle_time_ms == 0 and first.error_code == 0
    assert _values(first) == VALUES[:2]  # max_bytes 16 MiB, capped to the window
    session_id = first.session_id
    assert session_id > 0 and await _recorded(cluster) == 2 * size

    # the third batch would make 3 batches in the 10 s window: over the quota by 2 %
    second = await client.request(FETCH, 12, _fetch(2, session_id=session_id, epoch=1))
    expected = int((3 * size / 10 - quota) / quota * 10_000)
    assert 195 <= expected <= 200
    assert (second.error_code, second.session_id, second.throttle_time_ms) == (
        0, session_id, expected)
    assert second.responses == []
    assert await _recorded(cluster) == 2 * size  # taken back: nothing was sent
    state = await cluster.control.quotas()
    assert state["throttled_responses"]["consumer_byte_rate"] == 1
    assert [(t["broker"], t["quota"], t["throttle_time_ms"]) for t in state["throttles"]] == [
        (0, "consumer_byte_rate", expected)]

    # once the first fetch's sample leaves the 11 s window, the session's partition (still
    # at offset 2, never marked sent) comes with the third record
    cluster.cluster.clock.advance(12_000)
    third = await client.request(FETCH, 12, _fetch(None, session_id=session_id, epoch=2),
                                 timeout=expected / 1000 + 5)
    assert (third.error_code, third.session_id, third.throttle_time_ms) == (
        0, session_id, 0)
    assert _values(third) == VALUES[2:]
    assert await _recorded(cluster) == 3 * size


async def test_throttled_full_fetch_opens_no_session(cluster: MockCluster) -> None:
    client = await connect_broker(cluster, 0)
    size = await _produce_each(client)
    quota = 3 * size / 10 / 1.02
    await cluster.control.set_quota({"client-id": "rawclient"}, {"consumer_byte_rate": quota})
    first = await client.request(FETCH, 12, _fetch(0))  # sessionless
    assert _values(first) == VALUES[:2] and first.session_id == 0
    sessions = cluster.cluster.brokers[0].fetch_sessions.sessions
    assert sessions == {}

    other = await connect_broker(cluster, 0)  # same client id, another connection
    throttled = await other.request(FETCH, 12, _fetch(2, epoch=0))
    assert throttled.throttle_time_ms > 0 and throttled.responses == []
    assert throttled.session_id == 0 and sessions == {}  # Kafka's INVALID_SESSION_ID


@pytest.fixture
async def replicated() -> AsyncIterator[MockCluster]:
    """Broker 0 leads the partition, broker 1 follows it (a follower fetch must come from a
    replica: Kafka answers any other replica id NOT_LEADER_OR_FOLLOWER)."""
    async with MockCluster(brokers=2, clock=ManualClock()) as mc:
        mc.cluster.create_topic(TOPIC, 1, 2, assignments=[[0, 1]])
        yield mc


async def test_follower_fetch_is_not_subject_to_client_quotas(replicated: MockCluster) -> None:
    cluster = replicated
    client = await connect_broker(cluster, 0)
    size = await _produce_each(client)
    await cluster.control.set_quota({"client-id": "rawclient"},
                                    {"consumer_byte_rate": size / 100})
    follower = await client.request(FETCH, 12, _fetch(0, replica_id=1))
    assert follower.throttle_time_ms == 0
    assert _values(follower) == VALUES  # not capped to the window (size / 10)
    assert await _recorded(cluster) == 0
    # a consumer with the same client id is capped to size / 10: the first batch still goes
    # out (KIP-74) but alone makes the rate 10x the quota, so the answer is throttled, empty
    consumer = await client.request(FETCH, 12, _fetch(0))
    assert consumer.throttle_time_ms == 11_000  # 90 s, capped at the 11 s window
    assert _values(consumer) == [] and await _recorded(cluster) == 0


async def test_a_request_quota_throttle_empties_the_fetch_too(cluster: MockCluster) -> None:
    """As in Kafka, a Fetch over request_percentage (not over its byte rate) is answered
    empty too, its bytes taken back from consumer_byte_rate's measurement."""
    client = await connect_broker(cluster, 0)
    size = await _produce_each(client)
    await cluster.control.set_quota({"client-id": "rawclient"},
                                    {"request_percentage": 1e-9, "consumer_byte_rate": size})
    throttled = await client.request(FETCH, 12, _fetch(0))
    assert throttled.throttle_time_ms == 11_000 and throttled.responses == []
    state = await cluster.control.quotas()
    assert state["recorded"]["consumer_byte_rate"] == 0
    assert state["throttled_responses"]["consumer_byte_rate"] == 0
    assert state["throttled_responses"]["request_percentage"] == 1
