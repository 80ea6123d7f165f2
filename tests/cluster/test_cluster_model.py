"""The cluster model on its own: metadata log, images, elections, partition logs."""

from __future__ import annotations

import pytest
from kafka_protocol_codec import codec_for, metadata_record
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import Cluster, ClusterConfig, ClusterError, ManualClock
from mockbroker.cluster.kraft.metadata_log import PARTITION_CHANGE, TOPIC
from mockbroker.cluster.log.fetch_sessions import FetchSessionCache
from mockbroker.cluster.producers.producer_state import (
    BatchMeta,
    ProducerEntry,
    check_batch,
    record_batch,
)


def _cluster(brokers: int = 3) -> Cluster:
    c = Cluster(ClusterConfig(brokers=brokers), ManualClock())
    for b in range(brokers):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    return c


def test_metadata_log_records_are_kraft_shaped_and_offsets_are_positions():
    c = _cluster()
    topic = c.create_topic("orders", 2)
    assert topic is not None
    records = c.controller.log.records
    assert [r.offset for r in records] == list(range(len(records)))
    topic_records = [r for r in records if r.record_type == TOPIC]
    assert topic_records[-1].data["name"] == "orders"
    for r in records:  # each record decodes with Kafka's own schema back to the same data
        schema = metadata_record(r.record_type)
        assert codec_for(schema, r.version).decode(r.encoded) == r.data
    for node in c.brokers.values():
        assert node.applied_offset == c.controller.log.end_offset - 1


def test_replication_factor_defaults_to_min_3_and_replicas_spread():
    c = _cluster(4)
    t = c.create_topic("spread", 4)
    assert t is not None
    leaders = [p.leader for p in t.partitions.values()]
    assert sorted(leaders) == [0, 1, 2, 3]
    assert all(len(p.replicas) == 3 and p.isr == p.replicas for p in t.partitions.values())
    assert all(p.leader_epoch == 0 for p in t.partitions.values())


def test_election_bumps_epoch_and_moves_leader_in_every_image():
    c = _cluster()
    c.create_topic("t", 1)
    before = c.image.partition("t", 0)
    assert before is not None
    new = c.elect_leader("t", 0)
    after = c.image.partition("t", 0)
    assert after is not None and new != before.leader
    assert after.leader == new and after.leader_epoch == before.leader_epoch + 1
    assert [r.record_type for r in c.controller.log.records][-1] == PARTITION_CHANGE
    for node in c.brokers.values():
        mine = node.image.partition("t", 0)
        assert mine is not None and mine.leader_epoch == after.leader_epoch
    again = c.elect_leader("t", 0, broker=new)  # re-electing the same leader still bumps
    assert again == new
    assert c.image.partition("t", 0).leader_epoch == before.leader_epoch + 2  # type: ignore[union-attr]


def test_paused_broker_keeps_its_stale_image():
    c = _cluster()
    c.create_topic("t", 1)
    c.brokers[2].paused = True
    c.elect_leader("t", 0)
    assert c.brokers[2].image.partition("t", 0).leader_epoch == 0  # type: ignore[union-attr]
    assert c.brokers[0].image.partition("t", 0).leader_epoch == 1  # type: ignore[union-attr]
    c.brokers[2].paused = False
    c.propagate()
    assert c.brokers[2].image.partition("t", 0).leader_epoch == 1  # type: ignore[union-attr]


def test_topic_validation_errors():
    c = _cluster()
    with pytest.raises(ClusterError) as bad:
        c.create_topic("bad name!")
    assert bad.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION
    c.create_topic("x", 1)
    with pytest.raises(ClusterError) as dup:
        c.create_topic("x", 1)
    assert dup.value.code == ErrorCode.TOPIC_ALREADY_EXISTS
    with pytest.raises(ClusterError) as rf:
        c.create_topic("y", 1, 4)
    assert rf.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
    with pytest.raises(ClusterError) as parts:
        c.create_partitions("x", 1)
    assert parts.value.code == ErrorCode.INVALID_PARTITIONS


def _batch(n: int, ts: int = 1000) -> bytes:
    return build_batch([RecordSpec(key=b"k%d" % i, value=b"v%d" % i, timestamp=ts + i)
                        for i in range(n)])


def test_partition_log_offsets_epoch_cache_and_reads():
    c = _cluster()
    t = c.create_topic("t", 1)
    assert t is not None
    log = c.log(t.topic_id, 0)
    assert log is not None
    s1 = log.append(_batch(3), leader_epoch=0)
    s2 = log.append(_batch(2, ts=5000), leader_epoch=0)
    assert (s1.base_offset, s1.last_offset, s2.base_offset) == (0, 2, 3)
    assert log.high_watermark == 5
    decoded = decode_batch(log.read(3, 10_000)[0])
    assert decoded.header.base_offset == 3 and decoded.header.partition_leader_epoch == 0
    assert [r.offset for r in decoded.records] == [3, 4]
    c.elect_leader("t", 0)
    log.append(_batch(1), leader_epoch=1)
    assert log.epoch_cache == [(0, 0), (1, 5)]
    assert log.end_offset_for_epoch(0) == (0, 5)
    assert log.end_offset_for_epoch(1) == (1, 6)
    assert log.end_offset_for_epoch(7) == (-1, -1)
    assert log.offset_for_timestamp(5001) == (4, 5001)
    assert log.max_timestamp_offset() == (4, 5001)
    # KIP-74: an oversized first batch still comes back so consumers make progress
    assert len(log.read(0, 1)) == 1
    assert log.read(0, 1, force_first=False) == []


def test_truncation_shows_through_offset_for_leader_epoch():
    c = _cluster()
    t = c.create_topic("t", 1)
    assert t is not None
    log = c.log(t.topic_id, 0)
    assert log is not None
    log.append(_batch(5), 0)
    c.elect_leader("t", 0)
    log.append(_batch(5), 1)
    log.truncate_to(5)
    assert log.log_end_offset == 5
    assert log.end_offset_for_epoch(0) == (0, 5)


def test_idempotent_sequence_rules():
    states: dict[int, ProducerEntry] = {}
    assert check_batch(None, 0, 17, 20).error == ErrorCode.NONE  # unknown producer
    record_batch(states, 1, 0, BatchMeta(0, 4, 0, 4, 1))
    entry = states[1]
    assert check_batch(entry, 0, 0, 4).duplicate_of is not None
    assert check_batch(entry, 0, 6, 9).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert check_batch(entry, 0, 5, 9).error == ErrorCode.NONE
    assert check_batch(entry, -1, 5, 9).error == ErrorCode.INVALID_PRODUCER_EPOCH
    record_batch(states, 1, 2, BatchMeta(0, 0, 5, 5, 1))
    assert check_batch(states[1], 1, 1, 1).error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert check_batch(states[1], 3, 4, 4).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    for i in range(1, 7):  # only the last five batches are remembered
        record_batch(states, 1, 2, BatchMeta(i, i, 5 + i, 5 + i, 1))
    assert check_batch(states[1], 2, 1, 1).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert check_batch(states[1], 2, 2, 2).duplicate_of is not None


def test_fetch_session_lifecycle():
    cache = FetchSessionCache()
    new = cache.resolve(0, 0)
    assert new.full and new.session is not None and new.response_session_id > 0
    sid = new.response_session_id
    assert cache.resolve(sid, 1).error == ErrorCode.NONE
    assert cache.resolve(sid, 5).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert cache.resolve(sid + 100, 1).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    closed = cache.resolve(sid, -1)
    assert closed.full and closed.response_session_id == 0 and sid not in cache.sessions
    assert cache.resolve(0, -1).response_session_id == 0  # sessionless
