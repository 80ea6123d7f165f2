"""Log management in the model, on a ManualClock: segments rolled by segment.bytes and
segment.ms on every replica, retention by retention.ms and retention.bytes (never past the
high watermark), and compaction (the latest record per key with offset gaps, tombstones kept
for delete.retention.ms after their first cleaning as KIP-534 does, min.compaction.lag.ms,
aborted transactions, compact,delete)."""

from __future__ import annotations

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import BatchHeader, verify_crc
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock, PartitionLog
from mockbroker.cluster.log.log_cleaner import LogConfig, clean_log

START_MS = 1_700_000_000_000
CHECK_MS = 1_000


def _cluster(**configs: str) -> tuple[Cluster, ManualClock]:
    clock = ManualClock(START_MS)
    c = Cluster(ClusterConfig(brokers=3, broker_properties={
        "log.retention.check.interval.ms": str(CHECK_MS), "log.cleaner.backoff.ms": "500"}),
        clock)
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    c.create_topic("t", 1, 3, configs=configs)
    return c, clock


def _leader_log(c: Cluster) -> PartitionLog:
    replica_set = c.replicas("t", 0)
    assert replica_set is not None
    return replica_set.leader_log()


def _logs(c: Cluster) -> dict[int, PartitionLog]:
    replica_set = c.replicas("t", 0)
    assert replica_set is not None
    return replica_set.logs


def _produce(c: Cluster, clock: ManualClock, *records: tuple[bytes | None, bytes | None]) -> int:
    part = c.image.partition("t", 0)
    assert part is not None
    batch = build_batch([RecordSpec(key=k, value=v, timestamp=clock.now_ms())
                         for k, v in records])
    result = c.produce(c.brokers[part.leader], "t", 0, batch, acks=-1)
    assert result.error == ErrorCode.NONE, result
    return result.base_offset


def _records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in log.batches
            for r in decode_batch(b.data).records]


# -- segments -------------------------------------------------------------------------------

def test_segments_roll_by_size_on_every_replica() -> None:
    c, clock = _cluster(**{"internal.segment.bytes": "300"})
    for i in range(6):
        _produce(c, clock, (b"k", b"v%d" % i))
    log = _leader_log(c)
    batch_size = log.batches[0].size
    per_segment = 300 // batch_size
    assert per_segment >= 1
    assert [s.base_offset for s in log.segments] == list(range(0, 6, per_segment))
    assert all(s.size_bytes <= 300 for s in log.segments)
    for replica in _logs(c).values():  # each replica rolled its own, at the same offsets
        assert [s.base_offset for s in replica.segments] == [s.base_offset for s in log.segments]
        assert replica.segments is not log.segments or replica is log


def test_segments_roll_by_age() -> None:
    c, clock = _cluster(**{"segment.ms": "10000"})
    _produce(c, clock, (b"a", b"1"))
    clock.advance(9_999)
    _produce(c, clock, (b"a", b"2"))
    assert len(_leader_log(c).segments) == 1
    clock.advance(1)  # 10 s after the segment's first append
    _produce(c, clock, (b"a", b"3"))
    assert [s.base_offset for s in _leader_log(c).segments] == [0, 2]


# -- retention ------------------------------------------------------------------------------

def test_time_retention_deletes_expired_segments_at_the_retention_check() -> None:
    c, clock = _cluster(**{"retention.ms": "60000", "internal.segment.bytes": "100"})
    for i in range(3):
        _produce(c, clock, (None, b"old%d" % i))
    clock.advance(30_000)
    _produce(c, clock, (None, b"new"))
    log = _leader_log(c)
    assert log.log_start_offset == 0 and len(log.segments) == 4
    size_before = log.size_bytes
    clock.advance(30_001)  # the first three are 60.001 s old, the last 30.001 s
    c.tick()
    for replica in _logs(c).values():
        assert replica.log_start_offset == 3
        assert [v for _, _, v in _records(replica)] == [b"new"]
    assert log.size_bytes < size_before
    clock.advance(30_000)  # the active segment expires too: a new empty one at the log end
    c.tick()
    assert log.log_start_offset == log.log_end_offset == 4
    assert log.batches == [] and log.size_bytes == 0 and len(log.segments) == 1
    assert _produce(c, clock, (None, b"after")) == 4


def test_retention_waits_for_the_retention_check_interval() -> None:
    c, clock = _cluster(**{"retention.ms": "100", "internal.segment.bytes": "100"})
    _produce(c, clock, (None, b"a"))
    _produce(c, clock, (None, b"b"))
    clock.advance(200)
    c.tick()  # 200 ms: the first check is due at 1000 ms
    assert _leader_log(c).log_start_offset == 0
    clock.advance(CHECK_MS)
    c.tick()
    assert _leader_log(c).log_start_offset == 2


def test_retention_never_passes_the_high_watermark() -> None:
    c, clock = _cluster(**{"retention.ms": "1000", "internal.segment.bytes": "100"})
    _produce(c, clock, (None, b"a"))
    part = c.image.partition("t", 0)
    assert part is not None
    for follower in (b for b in part.replicas if b != part.leader):
        c.replication.pause(broker_id=follower)
    leader = c.brokers[part.leader]
    for value in (b"b", b"c"):  # acks=1: the high watermark stays at 1
        assert c.produce(leader, "t", 0, build_batch(
            [RecordSpec(value=value, timestamp=clock.now_ms())]), acks=1).ok
    log = _leader_log(c)
    assert log.high_watermark == 1
    clock.advance(5_000)
    c.log_manager.run("t")
    assert log.log_start_offset == 1  # only the segment below the high watermark went
    c.replication.resume()
    c.log_manager.run("t")
    assert log.high_watermark == 3 and log.log_start_offset == 3


def test_size_retention_deletes_the_oldest_segments_above_retention_bytes() -> None:
    c, clock = _cluster(**{"internal.segment.bytes": "100"})
    for i in range(5):
        _produce(c, clock, (None, b"v%d" % i))
    log = _leader_log(c)
    batch_size = log.batches[0].size
    c.set_configs([(2, "t", "retention.bytes", str(2 * batch_size + 1))])
    part = c.image.partition("t", 0)
    assert part is not None
    result = c.log_manager.run("t")
    # the leader's deletion moves its followers' log start at once (as their next fetch
    # would); they then have nothing of their own to delete
    assert [(r.broker, r.segments_deleted) for r in result] == [(part.leader, 2)]
    assert {r.log_start_offset for r in _logs(c).values()} == {2}
    # three segments are 3 * size > retention.bytes, but deleting one more would go below
    assert log.log_start_offset == 2 and log.size_bytes == 3 * batch_size
    assert [v for _, _, v in _records(log)] == [b"v2", b"v3", b"v4"]


def _segment_figures(log: PartitionLog) -> list[tuple[int, int, int, int]]:
    """(base offset, bytes, batches, max timestamp) of each segment, counted here from the
    batches each one holds (those from its base offset to the next one's)."""
    bases = [s.base_offset for s in log.segments]
    figures = []
    for index, base in enumerate(bases):
        end = bases[index + 1] if index + 1 < len(bases) else log.log_end_offset
        held = [b for b in log.batches if base <= b.last_offset and b.base_offset < end]
        figures.append((base, sum(len(b.data) for b in held), len(held),
                        max((b.max_timestamp for b in held), default=-1)))
    return figures


def test_segment_figures_stay_exact_through_deletions_at_and_inside_segments() -> None:
    # retention deletes whole segments and DeleteRecords cuts into one: each time the
    # segments' sizes, batch counts and timestamps are what their remaining batches hold
    c, clock = _cluster(**{"internal.segment.bytes": "300"})
    for i in range(12):
        _produce(c, clock, (None, b"v%d" % i), (None, b"w%d" % i))
        clock.advance(7)
    log = _leader_log(c)
    assert len(log.segments) >= 4 and log.segments[1].base_offset >= 4
    cut = log.segments[1].base_offset + 2  # inside the second segment, after its first batch
    second_before = log.segments[1].batch_count
    assert log.delete_records_before(cut) == cut
    assert log.segments[0].base_offset < cut < log.segments[1].base_offset
    kept = [b for b in log.batches if b.last_offset >= cut]
    assert log.batches == kept and log.size_bytes == sum(len(b.data) for b in kept)
    assert log.segments[0].batch_count == second_before - 1  # it lost its first batch
    assert [(s.base_offset, s.size_bytes, s.batch_count, s.max_timestamp)
            for s in log.segments] == _segment_figures(log)
    c.set_configs([(2, "t", "retention.bytes",
                    str(log.size_bytes - log.segments[0].size_bytes))])
    part = c.image.partition("t", 0)
    assert part is not None
    result = c.log_manager.run("t")
    assert [(r.broker, r.segments_deleted) for r in result] == [(part.leader, 1)]
    for replica in _logs(c).values():
        assert [(s.base_offset, s.size_bytes, s.batch_count, s.max_timestamp)
                for s in replica.segments] == _segment_figures(replica)
        assert sum(s.size_bytes for s in replica.segments) == replica.size_bytes


# -- compaction -----------------------------------------------------------------------------

COMPACT = {"cleanup.policy": "compact", "internal.segment.bytes": "100",
           "min.cleanable.dirty.ratio": "0.01"}


def test_compaction_keeps_the_latest_record_per_key_with_offset_gaps() -> None:
    c, clock = _cluster(**COMPACT)
    _produce(c, clock, (b"a", b"a1"), (b"b", b"b1"))  # one batch of two records: 0, 1
    _produce(c, clock, (b"a", b"a2"))  # 2
    _produce(c, clock, (b"c", b"c1"))  # 3
    _produce(c, clock, (b"b", b"b2"))  # 4
    _produce(c, clock, (b"a", b"a3"))  # 5: the active segment, never cleaned
    log = _leader_log(c)
    assert log.segments[-1].base_offset == 5
    result = c.log_manager.run("t")
    assert len(result) == 3 and all(r.cleaned and r.records_removed == 2 for r in result)
    for replica in _logs(c).values():  # a2 stays: a3 is in the active segment
        assert _records(replica) == [(2, b"a", b"a2"), (3, b"c", b"c1"), (4, b"b", b"b2"),
                                     (5, b"a", b"a3")]
        assert replica.log_end_offset == 6 and replica.log_start_offset == 0
    assert log.cleaner_checkpoint == 5 and log.cleaner_last_run_ms == clock.now_ms()
    # the emptied first segment joined the next: segments within segment.bytes merge
    assert [s.base_offset for s in log.segments] == [0, 3, 4, 5]
    assert [s.batch_count for s in log.segments] == [1, 1, 1, 1]
    # a second pass finds nothing dirty
    assert c.log_manager.run("t") == []


def test_rewritten_batches_keep_their_offsets_and_a_valid_crc() -> None:
    c, clock = _cluster(**COMPACT)
    _produce(c, clock, (b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (b"c", b"4"))  # 0-3
    clock.advance(10)
    _produce(c, clock, (b"x", b"active"))
    c.log_manager.run("t")
    log = _leader_log(c)
    header = BatchHeader.parse(log.batches[0].data)
    assert header.base_offset == 0 and header.last_offset_delta == 3
    assert header.record_count == 3 and verify_crc(log.batches[0].data)
    assert [(r.offset, r.key) for r in decode_batch(log.batches[0].data).records] == [
        (1, b"b"), (2, b"a"), (3, b"c")]
    # the replicas share the cleaned batch instead of holding one copy each
    assert all(r.batches[0] is log.batches[0] for r in _logs(c).values())


def test_tombstones_live_for_delete_retention_ms_after_their_first_cleaning() -> None:
    c, clock = _cluster(**{**COMPACT, "delete.retention.ms": "5000"})
    _produce(c, clock, (b"a", b"1"))
    _produce(c, clock, (b"a", None))  # tombstone for a at 1
    _produce(c, clock, (b"b", b"1"))
    _produce(c, clock, (b"z", b"active"))
    log = _leader_log(c)
    c.log_manager.run("t")
    assert _records(log)[:2] == [(1, b"a", None), (2, b"b", b"1")]
    stamped = BatchHeader.parse(log.batches[0].data)
    assert stamped.has_delete_horizon and stamped.base_timestamp == clock.now_ms() + 5000
    clock.advance(4_999)
    c.log_manager.run("t", force=True)
    assert (1, b"a", None) in _records(log)
    clock.advance(1)
    c.log_manager.run("t")  # a passed delete horizon makes the log cleanable by itself
    assert [k for _, k, _ in _records(log)] == [b"b", b"z"]


def test_min_compaction_lag_keeps_young_segments_dirty() -> None:
    c, clock = _cluster(**{**COMPACT, "min.compaction.lag.ms": "60000"})
    _produce(c, clock, (b"a", b"1"))
    _produce(c, clock, (b"a", b"2"))
    _produce(c, clock, (b"a", b"3"))
    assert c.log_manager.run("t", force=True) == []
    log = _leader_log(c)
    assert len(_records(log)) == 3
    clock.advance(60_001)
    _produce(c, clock, (b"a", b"4"))  # young: its own segment is beyond the lag bound
    c.log_manager.run("t")
    assert _records(log) == [(2, b"a", b"3"), (3, b"a", b"4")]


def test_dirty_ratio_below_the_minimum_waits() -> None:
    c, clock = _cluster(**{**COMPACT, "min.cleanable.dirty.ratio": "0.9"})
    for i in range(4):
        _produce(c, clock, (b"a", b"%d" % i))
    c.log_manager.run("t", force=True)  # cleaned once: offsets 0-2 -> 2
    log = _leader_log(c)
    _produce(c, clock, (b"a", b"4"))  # segments: clean [2], dirty [3], active [4]
    state = c.log_manager.log_state("t", log)
    assert 0 < state["dirty_ratio"] < 0.9
    assert c.log_manager.run("t") == []
    assert c.log_manager.run("t", force=True) != []
    assert _records(log) == [(3, b"a", b"3"), (4, b"a", b"4")]


def test_the_cleaner_runs_from_the_tick_every_backoff() -> None:
    c, clock = _cluster(**COMPACT)
    for i in range(3):
        _produce(c, clock, (b"a", b"%d" % i))
    clock.advance(500)
    c.tick()
    assert _records(_leader_log(c)) == [(1, b"a", b"1"), (2, b"a", b"2")]


def test_compact_delete_both_compacts_and_retires() -> None:
    c, clock = _cluster(**{**COMPACT, "cleanup.policy": "compact,delete",
                           "retention.ms": "10000"})
    _produce(c, clock, (b"a", b"1"))
    _produce(c, clock, (b"a", b"2"))
    clock.advance(5_000)
    _produce(c, clock, (b"b", b"1"))
    _produce(c, clock, (b"b", b"2"))  # the active segment
    c.log_manager.run("t")
    log = _leader_log(c)
    assert _records(log) == [(1, b"a", b"2"), (2, b"b", b"1"), (3, b"b", b"2")]
    clock.advance(5_001)  # a's segments are 10.001 s old (the emptied one too)
    c.log_manager.run("t")
    assert log.log_start_offset == 2
    assert _records(log) == [(2, b"b", b"1"), (3, b"b", b"2")]


def test_a_null_key_on_a_compacted_topic_is_invalid_record() -> None:
    c, _clock = _cluster(**COMPACT)
    part = c.image.partition("t", 0)
    assert part is not None
    result = c.produce(c.brokers[part.leader], "t", 0, build_batch(
        [RecordSpec(key=b"k", value=b"1"), RecordSpec(key=None, value=b"2")],
        base_timestamp=START_MS), acks=1)
    assert result.error == ErrorCode.INVALID_RECORD
    assert result.record_errors == ((1, "Compacted topic cannot accept message without key "
                                        "in topic partition t-0."),)
    assert result.message is not None and "RecordError(batchIndex=1" in result.message
    assert _leader_log(c).log_end_offset == 0


# -- transactions (a standalone log) --------------------------------------------------------

class _Policy:
    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock

    def limits(self) -> tuple[int, int]:
        return 1, 10**12  # every batch its own segment

    def now_ms(self) -> int:
        return self.clock.now_ms()


def _txn_batch(pid: int, seq: int, key: bytes, value: bytes) -> bytes:
    return build_batch([RecordSpec(key=key, value=value, timestamp=START_MS)], producer_id=pid,
                       producer_epoch=0, base_sequence=seq, transactional=True)


def test_compaction_removes_aborted_records_and_keeps_markers() -> None:
    clock = ManualClock(START_MS)
    log = PartitionLog("t", 0)
    log.segment_policy = _Policy(clock)

    def ok(_pid: int, _epoch: int) -> ErrorCode:
        return ErrorCode.NONE

    def append(data: bytes) -> None:
        assert log.append_producer_batch(data, BatchHeader.parse(data), 0,
                                         verify_transaction=ok).ok

    append(_txn_batch(7, 0, b"a", b"committed"))  # 0
    log.append_marker(7, 0, 0, commit=True, leader_epoch=0, timestamp_ms=START_MS)  # 1
    append(_txn_batch(8, 0, b"a", b"aborted"))  # 2
    log.append_marker(8, 0, 0, commit=False, leader_epoch=0, timestamp_ms=START_MS)  # 3
    log.append(build_batch([RecordSpec(key=b"z", value=b"active")]), 0)  # 4
    config = LogConfig.of({"cleanup.policy": "compact", "retention.ms": "-1",
                           "retention.bytes": "-1", "delete.retention.ms": "1000",
                           "min.compaction.lag.ms": "0", "min.cleanable.dirty.ratio": "0.5",
                           "segment.bytes": "1"})
    result = clean_log(log, config, clock.now_ms())
    assert result is not None and result.records_removed == 1
    assert [(b.base_offset, b.is_control) for b in log.batches] == [
        (0, False), (1, True), (3, True), (4, False)]
    assert decode_batch(log.batches[0].data).records[0].value == b"committed"


def test_a_follower_behind_the_leaders_new_log_start_starts_over_there() -> None:
    c, clock = _cluster(**{"retention.ms": "1000", "internal.segment.bytes": "100"})
    part = c.image.partition("t", 0)
    assert part is not None
    follower = next(b for b in part.replicas if b != part.leader)
    _produce(c, clock, (None, b"a"))
    c.replication.pause(broker_id=follower)
    for value in (b"b", b"c"):
        assert c.produce(c.brokers[part.leader], "t", 0, build_batch(
            [RecordSpec(value=value, timestamp=clock.now_ms())]), acks=1).ok
    clock.advance(31_000)  # past replica.lag.time.max.ms: the follower leaves the ISR
    c.tick()  # the high watermark reaches 3; every segment expired: empty from 3
    image = c.image.partition("t", 0)
    assert image is not None and follower not in image.isr
    leader = _leader_log(c)
    assert leader.log_start_offset == leader.log_end_offset == 3
    lagging = _logs(c)[follower]
    assert lagging.log_end_offset == 1
    c.replication.resume()
    assert (lagging.log_start_offset, lagging.log_end_offset) == (3, 3)
    assert _produce(c, clock, (None, b"d")) == 3
    assert _records(lagging) == [(3, None, b"d")]


def test_broker_properties_are_the_topics_log_defaults() -> None:
    c = Cluster(ClusterConfig(brokers=1, broker_properties={
        "log.roll.hours": "2", "log.retention.minutes": "30", "log.segment.bytes": "2097152",
        "log.cleaner.backoff.ms": "250"}), ManualClock(START_MS))
    c.start_broker(0, "127.0.0.1", 9092)
    c.create_topic("t", 1, 1)
    config = c.topic_config("t")
    assert (config["segment.ms"], config["retention.ms"], config["segment.bytes"]) == (
        "7200000", "1800000", "2097152")
    assert c.log_manager.cleaner_backoff_ms == 250
    assert c.log_manager.retention_check_ms == 300_000  # Kafka's default


def test_the_cleaner_backoff_is_a_dynamic_broker_config() -> None:
    """Kafka's log cleaner reconfigures log.cleaner.backoff.ms at run time (a per-broker or
    cluster-wide dynamic config); deleting the override brings back the static value."""
    from mockbroker.cluster.configs.config_defs import broker_config_definition
    from mockbroker.cluster.kraft.metadata_log import RESOURCE_BROKER

    definition = broker_config_definition("log.cleaner.backoff.ms")
    assert definition is not None and not definition.read_only
    c, clock = _cluster()
    assert c.log_manager.cleaner_backoff_ms == 500
    c.set_configs([(RESOURCE_BROKER, "", "log.cleaner.backoff.ms", "4000")])
    c.log_manager.tick(clock.now_ms() + 600)
    assert c.log_manager.cleaner_backoff_ms == 4000
    assert c.log_manager.next_cleaning_ms == clock.now_ms() + 600 + 4000
    c.set_configs([(RESOURCE_BROKER, "0", "log.cleaner.backoff.ms", "2000")])
    c.log_manager.tick(clock.now_ms() + 5000)
    assert c.log_manager.cleaner_backoff_ms == 2000
    c.set_configs([(RESOURCE_BROKER, "0", "log.cleaner.backoff.ms", None),
                   (RESOURCE_BROKER, "", "log.cleaner.backoff.ms", None)])
    c.log_manager.tick(clock.now_ms() + 8000)
    assert c.log_manager.cleaner_backoff_ms == 500


def test_a_dynamic_log_cleaner_backoff_spaces_the_next_cleanings() -> None:
    """log.cleaner.backoff.ms is a dynamic broker config in Kafka (kafka-configs --alter
    --entity-type brokers --entity-default): the cleaner's next waits follow the change."""
    c, clock = _cluster(**COMPACT)
    c.set_configs([(4, "", "log.cleaner.backoff.ms", "2000")])
    clock.advance(500)
    c.tick()  # due at the old backoff, nothing to clean; the next one waits 2000 ms
    for i in range(3):
        _produce(c, clock, (b"a", b"%d" % i))
    clock.advance(500)
    c.tick()
    assert len(_records(_leader_log(c))) == 3
    clock.advance(1500)
    c.tick()
    assert _records(_leader_log(c)) == [(1, b"a", b"1"), (2, b"a", b"2")]
