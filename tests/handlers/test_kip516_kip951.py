"""Fetch v13-17 and Produce v10-11 in-process: topics by id (KIP-516), UNKNOWN_TOPIC_ID,
sessions keyed by topic id, ReplicaState (Fetch v15) and the KIP-951 leader hints."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from tests.handlers.test_produce_fetch import FIRST, SECOND, batches, produce
from tests.support.handlers import HandlerHarness

FETCH = 1
TOPIC = "events"


def partition_request(partition: int, offset: int, epoch: int = -1) -> dict[str, Any]:
    return {"partition": partition, "current_leader_epoch": epoch, "fetch_offset": offset,
            "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}


def fetch_by_id(topic_id: uuid.UUID, offset: int = 0, *, partitions: tuple[int, ...] = (0,),
                session_id: int = 0, session_epoch: int = -1, epoch: int = -1,
                forgotten: list[dict[str, Any]] | None = None,
                replica_id: int = -1, isolation_level: int = 0) -> dict[str, Any]:
    return {"replica_state": {"replica_id": replica_id, "replica_epoch": -1},
            "replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 1,
            "max_bytes": 1 << 24, "isolation_level": isolation_level,
            "session_id": session_id, "session_epoch": session_epoch,
            "topics": [{"topic_id": topic_id,
                        "partitions": [partition_request(p, offset, epoch) for p in partitions]}],
            "forgotten_topics_data": forgotten or [], "rack_id": ""}


def topic_id(harness: HandlerHarness, name: str = TOPIC) -> uuid.UUID:
    return harness.cluster.image.topics[name].topic_id


async def call_fetch(harness: HandlerHarness, broker: int, version: int,
                     body: dict[str, Any]) -> Struct:
    response = harness.call_now(broker, FETCH, version, body)
    assert response is not None
    return response


@pytest.mark.parametrize("version", [13, 14, 15, 16, 17])
async def test_fetch_by_topic_id_returns_the_records(harness: HandlerHarness,
                                                     version: int) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    leader = harness.leader(TOPIC)
    await produce(harness, leader, build_batch(FIRST))
    await produce(harness, leader, build_batch(SECOND))
    response = await call_fetch(harness, leader, version, fetch_by_id(topic_id(harness)))
    [topic] = response.responses
    assert topic.topic_id == topic_id(harness)
    assert topic.topic == ""  # names are not on the wire from v13
    [part] = topic.partitions
    assert (part.error_code, part.high_watermark, part.log_start_offset) == (
        ErrorCode.NONE, 5, 0)
    assert [r.value for b in batches(part.records) for r in b.records] == [
        b"v0", b"v1", None, b"v3", b"v4"]


async def test_unknown_topic_id(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    unknown = uuid.uuid4()
    response = await call_fetch(harness, 0, 13, fetch_by_id(unknown, partitions=(0, 1)))
    [topic] = response.responses
    assert topic.topic_id == unknown
    assert [(p.partition_index, p.error_code, p.high_watermark) for p in topic.partitions] == [
        (0, ErrorCode.UNKNOWN_TOPIC_ID, -1), (1, ErrorCode.UNKNOWN_TOPIC_ID, -1)]
    # a known id with a partition it does not have is an unknown partition, as before
    leader = harness.leader(TOPIC)
    response = await call_fetch(harness, leader, 13,
                                fetch_by_id(topic_id(harness), partitions=(7,)))
    assert response.responses[0].partitions[0].error_code == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_session_keyed_by_topic_id_survives_recreation_as_a_new_topic(
        harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1, assignments=[[0]])
    old_id = topic_id(harness)
    await produce(harness, 0, build_batch(FIRST))
    opened = await call_fetch(harness, 0, 13, fetch_by_id(old_id, session_epoch=0))
    assert opened.session_id > 0 and opened.responses[0].partitions[0].high_watermark == 3
    # incremental, the position moved past the records and nothing new: an empty answer
    quiet = await call_fetch(harness, 0, 13, fetch_by_id(old_id, 3, session_id=opened.session_id,
                                                         session_epoch=1))
    assert (quiet.error_code, quiet.responses) == (ErrorCode.NONE, [])
    # the topic is deleted and created again under the same name: the session's id is gone
    harness.cluster.delete_topic(TOPIC)
    harness.cluster.create_topic(TOPIC, 1, assignments=[[0]])
    assert topic_id(harness) != old_id
    after = await call_fetch(harness, 0, 13, {**fetch_by_id(old_id, session_id=opened.session_id,
                                                            session_epoch=2), "topics": []})
    [topic] = after.responses
    assert topic.topic_id == old_id
    assert topic.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    # forgetting the old id by id leaves the session empty
    forgot = await call_fetch(harness, 0, 13, {
        **fetch_by_id(old_id, session_id=opened.session_id, session_epoch=3,
                      forgotten=[{"topic_id": old_id, "partitions": [0]}]), "topics": []})
    assert (forgot.error_code, forgot.responses) == (ErrorCode.NONE, [])
    assert harness.cluster.brokers[0].fetch_sessions.sessions[opened.session_id].partitions == {}


async def test_session_cannot_switch_between_names_and_ids(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1, assignments=[[0]])
    by_name = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
               "isolation_level": 0, "session_id": 0, "session_epoch": 0,
               "topics": [{"topic": TOPIC, "partitions": [partition_request(0, 0)]}],
               "forgotten_topics_data": [], "rack_id": ""}
    opened = await call_fetch(harness, 0, 12, by_name)
    assert opened.session_id > 0
    switched = await call_fetch(harness, 0, 13, fetch_by_id(
        topic_id(harness), session_id=opened.session_id, session_epoch=1))
    assert (switched.error_code, switched.responses) == (
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, [])


async def test_leader_hints_from_v16(harness: HandlerHarness) -> None:
    # one replica: the other brokers hold none (a follower would serve the read, KIP-392)
    harness.cluster.create_topic(TOPIC, 1, assignments=[[1]])
    leader = harness.leader(TOPIC)
    follower = next(b for b in harness.cluster.brokers if b != leader)
    response = await call_fetch(harness, follower, 16, fetch_by_id(topic_id(harness)))
    [part] = response.responses[0].partitions
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert dict(part.current_leader) == {"leader_id": leader, "leader_epoch": 0}
    assert [dict(n) for n in response.node_endpoints] == [
        {"node_id": leader, "host": "127.0.0.1", "port": 19092 + leader, "rack": None}]
    # v15 has no hints: the tagged field stays at its default
    older = await call_fetch(harness, follower, 15, fetch_by_id(topic_id(harness)))
    [part] = older.responses[0].partitions
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert dict(part.current_leader) == {"leader_id": -1, "leader_epoch": -1}


async def test_fenced_leader_epoch_names_the_new_leader(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    old_leader = harness.leader(TOPIC)
    new_leader = harness.cluster.elect_leader(
        TOPIC, 0, next(b for b in harness.cluster.brokers if b != old_leader))
    response = await call_fetch(harness, old_leader, 17,
                                fetch_by_id(topic_id(harness), epoch=0))
    [part] = response.responses[0].partitions
    assert part.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert dict(part.current_leader) == {"leader_id": new_leader, "leader_epoch": 1}
    assert [n.node_id for n in response.node_endpoints] == [new_leader]
    # fetching from the hinted leader with the hinted epoch works
    moved = await call_fetch(harness, new_leader, 17, fetch_by_id(topic_id(harness), epoch=1))
    assert moved.responses[0].partitions[0].error_code == ErrorCode.NONE
    assert list(moved.node_endpoints) == []


async def test_follower_fetch_reads_to_the_log_end_past_the_lso(
        harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1, assignments=[[0, 1]])
    txn = harness.cluster.transactions
    started = txn.init_producer_id("t1", 10_000)
    pid, epoch = started.producer_id, started.producer_epoch
    assert txn.add_partitions("t1", pid, epoch, [(TOPIC, 0)]) == ErrorCode.NONE
    await produce(harness, 0, build_batch([RecordSpec(value=b"open")], producer_id=pid,
                                          producer_epoch=epoch, base_sequence=0,
                                          transactional=True), transactional_id="t1")
    consumer = await call_fetch(harness, 0, 15,
                                fetch_by_id(topic_id(harness), isolation_level=1))
    [part] = consumer.responses[0].partitions
    assert (part.high_watermark, part.last_stable_offset, batches(part.records)) == (1, 0, [])
    # replica id 1 in ReplicaState (v15): a follower, which reads past the LSO
    follower = await call_fetch(harness, 0, 15, fetch_by_id(
        topic_id(harness), isolation_level=1, replica_id=1))
    [part] = follower.responses[0].partitions
    assert [r.value for b in batches(part.records) for r in b.records] == [b"open"]


# -- Produce v10-11: the same hints on NOT_LEADER_OR_FOLLOWER (KIP-951) ----------------------

PRODUCE = 0


@pytest.mark.parametrize("version", [10, 11])
async def test_produce_names_the_leader_from_v10(harness: HandlerHarness, version: int) -> None:
    harness.cluster.create_topic(TOPIC, 2)
    leader = harness.leader(TOPIC)
    follower = next(b for b in harness.cluster.brokers if b != leader)
    harness.cluster.elect_leader(TOPIC, 0, leader)  # epoch 1, same leader
    response = await harness.call(follower, PRODUCE, version, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [
            {"index": 0, "records": build_batch(FIRST)}]}]})
    assert response is not None
    [part] = response.responses[0].partition_responses
    assert (part.error_code, part.base_offset) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
    assert dict(part.current_leader) == {"leader_id": leader, "leader_epoch": 1}
    assert [dict(n) for n in response.node_endpoints] == [
        {"node_id": leader, "host": "127.0.0.1", "port": 19092 + leader, "rack": None}]
    accepted = await produce(harness, leader, build_batch(FIRST), version=version)
    assert (accepted.error_code, accepted.base_offset) == (ErrorCode.NONE, 0)
    assert dict(accepted.current_leader) == {"leader_id": -1, "leader_epoch": -1}


async def test_produce_v9_has_no_hints(harness: HandlerHarness) -> None:
    harness.cluster.create_topic(TOPIC, 1)
    follower = next(b for b in harness.cluster.brokers if b != harness.leader(TOPIC))
    refused = await produce(harness, follower, build_batch(FIRST), version=9)
    assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert dict(refused.current_leader) == {"leader_id": -1, "leader_epoch": -1}
