"""Fetch from follower (KIP-392) through the Fetch handler and the codec: a leader sends a
consumer whose rack matches a follower's there (PreferredReadReplica, no records), the
follower serves its own log up to its own high watermark, a paused follower serves less
than the leader, and one out of the ISR is no longer preferred. Racks in Metadata and
DescribeConfigs; ListOffsets stays with the leader."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster.log.read_replicas import RACK_AWARE_SELECTOR
from tests.support.handlers import HandlerHarness

PRODUCE, FETCH, LIST_OFFSETS, METADATA, DESCRIBE_CONFIGS = 0, 1, 2, 3, 32
TOPIC = "ffollow"
LAG_MS = 10_000
LONG_POLL_MS = 10_000  # never reached: the handler is woken or answers at once
BROKER_RESOURCE = 4
LEADER = 0


@pytest.fixture
def harness() -> HandlerHarness:
    h = HandlerHarness(brokers=3, broker_racks=("r0", "r1", "r2"),
                       replica_selector_class=RACK_AWARE_SELECTOR,
                       replica_lag_time_max_ms=LAG_MS)
    h.cluster.create_topic(TOPIC, assignments=[[LEADER, 1, 2]])
    return h


async def produce(h: HandlerHarness, *values: str) -> None:
    batch = build_batch([RecordSpec(value=v.encode()) for v in values])
    body = await h.call(LEADER, PRODUCE, 9, {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
    assert body is not None
    assert body.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def fetch_body(offset: int, rack: str = "", epoch: int = -1,
               max_wait_ms: int = 0) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1,
            "max_bytes": 1 << 24, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": 0, "current_leader_epoch": epoch, "fetch_offset": offset,
                 "last_fetched_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": rack}


def only_partition(body: Struct | None) -> Struct:
    assert body is not None and body.error_code == ErrorCode.NONE
    [topic] = body.responses
    [part] = topic.partitions
    return part


async def fetch(h: HandlerHarness, broker: int, offset: int, rack: str = "",
                version: int = 12, epoch: int = -1) -> Struct:
    return only_partition(await h.call(broker, FETCH, version, fetch_body(offset, rack, epoch)))


def values(records: Any) -> list[str]:
    return [r.value.decode() for b in split_batches(bytes(records or b""))
            for r in decode_batch(b).records]


async def test_a_consumer_in_a_followers_rack_is_sent_to_that_follower(
        harness: HandlerHarness) -> None:
    await produce(harness, "a", "b", "c")
    for rack, follower in (("r1", 1), ("r2", 2)):
        # answered at once despite max_wait_ms: nothing to wait for, the client moves on
        part = only_partition(harness.call_now(LEADER, FETCH, 11, fetch_body(
            0, rack, max_wait_ms=LONG_POLL_MS)))
        assert (part.error_code, part.preferred_read_replica, part.high_watermark,
                part.log_start_offset) == (ErrorCode.NONE, follower, 3, 0)
        assert values(part.records) == []
        replica_set = harness.cluster.replicas(TOPIC, 0)
        assert replica_set is not None and replica_set.last_preferred_read_replica == follower
    # the leader's rack, an unknown rack, no rack, a v10 request: read from the leader
    for rack, version in (("r0", 12), ("elsewhere", 12), ("", 12), ("r1", 10)):
        body = fetch_body(0, rack)
        if version < 11:
            del body["rack_id"]
        part = only_partition(await harness.call(LEADER, FETCH, version, body))
        assert (part.error_code, part.preferred_read_replica) == (ErrorCode.NONE, -1)
        assert values(part.records) == ["a", "b", "c"]


async def test_kafkas_default_selector_never_redirects() -> None:
    h = HandlerHarness(brokers=3, broker_racks=("r0", "r1", "r2"))
    h.cluster.create_topic(TOPIC, assignments=[[LEADER, 1, 2]])
    await produce(h, "a")
    part = await fetch(h, LEADER, 0, rack="r1")
    assert (part.preferred_read_replica, values(part.records)) == (-1, ["a"])


async def test_the_follower_serves_its_own_log_up_to_its_high_watermark(
        harness: HandlerHarness) -> None:
    await produce(harness, "a", "b")
    await produce(harness, "c")
    part = await fetch(harness, 1, 0, rack="r1", version=11)
    assert (part.error_code, part.high_watermark, part.preferred_read_replica) == (
        ErrorCode.NONE, 3, -1)
    assert values(part.records) == ["a", "b", "c"]
    assert values((await fetch(harness, 1, 2, rack="r1")).records) == ["c"]
    at_end = await fetch(harness, 1, 3, rack="r1")
    assert (at_end.error_code, values(at_end.records)) == (ErrorCode.NONE, [])
    beyond = await fetch(harness, 1, 4, rack="r1")
    assert beyond.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    # the epoch checks against what the follower knows
    epoch = harness.leader_epoch(TOPIC)
    assert (await fetch(harness, 1, 0, epoch=epoch)).error_code == ErrorCode.NONE
    harness.cluster.elect_leader(TOPIC, 0, LEADER)
    assert (await fetch(harness, 1, 0, epoch=epoch)).error_code == \
        ErrorCode.FENCED_LEADER_EPOCH
    assert (await fetch(harness, 1, 0, epoch=epoch + 2)).error_code == \
        ErrorCode.UNKNOWN_LEADER_EPOCH
    # ListOffsets stays with the leader
    listed = await harness.call(1, LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0,
                                "topics": [{"name": TOPIC, "partitions": [
                                    {"partition_index": 0, "current_leader_epoch": -1,
                                     "timestamp": -1}]}]})
    assert listed is not None
    assert listed.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_a_paused_follower_serves_less_and_out_of_the_isr_is_not_preferred(
        harness: HandlerHarness) -> None:
    await produce(harness, "a", "b")
    harness.cluster.replication.pause(broker_id=1)
    await produce(harness, "c", "d", "e")
    harness.clock.advance(LAG_MS + 1)
    harness.cluster.tick()
    assert harness.cluster.image.partition(TOPIC, 0).isr == (0, 2)  # type: ignore[union-attr]
    from_follower = await fetch(harness, 1, 0, rack="r1")
    assert (from_follower.high_watermark, values(from_follower.records)) == (2, ["a", "b"])
    assert (await fetch(harness, 1, 3, rack="r1")).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    # the leader no longer sends rack r1 anywhere: it serves everything itself
    from_leader = await fetch(harness, LEADER, 0, rack="r1")
    assert (from_leader.preferred_read_replica, from_leader.high_watermark) == (-1, 5)
    assert values(from_leader.records) == ["a", "b", "c", "d", "e"]
    assert (await fetch(harness, LEADER, 0, rack="r2")).preferred_read_replica == 2
    # back in the ISR: preferred again, and it serves everything
    harness.cluster.replication.resume(broker_id=1)
    assert (await fetch(harness, LEADER, 0, rack="r1")).preferred_read_replica == 1
    assert values((await fetch(harness, 1, 0, rack="r1")).records) == [
        "a", "b", "c", "d", "e"]


async def test_a_long_poll_on_a_follower_wakes_when_its_high_watermark_moves(
        harness: HandlerHarness) -> None:
    await produce(harness, "a")
    parked = asyncio.ensure_future(harness.call(1, FETCH, 12, fetch_body(
        1, "r1", max_wait_ms=LONG_POLL_MS)))
    assert not await harness.settle(parked)
    await produce(harness, "b")
    assert await harness.settle(parked)
    part = only_partition(parked.result())
    assert (part.high_watermark, values(part.records)) == (2, ["b"])


async def test_racks_in_metadata_and_describe_configs(harness: HandlerHarness) -> None:
    body = await harness.call(2, METADATA, 12, {"topics": None,
                                                "allow_auto_topic_creation": False,
                                                "include_topic_authorized_operations": False})
    assert body is not None
    assert {b.node_id: b.rack for b in body.brokers} == {0: "r0", 1: "r1", 2: "r2"}
    described = await harness.call(0, DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": BROKER_RESOURCE, "resource_name": "1",
                       "configuration_keys": ["broker.rack", "replica.selector.class"]}],
        "include_synonyms": False, "include_documentation": False})
    assert described is not None
    [result] = described.results
    assert {c.name: (c.value, c.read_only) for c in result.configs} == {
        "broker.rack": ("r1", True), "replica.selector.class": (RACK_AWARE_SELECTOR, True)}
