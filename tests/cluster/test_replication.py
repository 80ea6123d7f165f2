"""Replication in the model, on a ManualClock: a log per replica, followers fetching from the
leader (KIP-101/279 truncation by leader epoch, KIP-320 diverging epochs), the high
watermark over the ISR, the ISR by replica.lag.time.max.ms, and what a leader failure costs
acks=1 and acks=all writes."""

from __future__ import annotations

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock, PartitionLog
from mockbroker.cluster.log.replicas import (
    DivergingEpoch,
    FetchedBatches,
    PartitionReplicas,
    apply_fetch,
    follower_fetch,
)

LAG_MS = 10_000


def _cluster(min_isr: int = 1) -> tuple[Cluster, ManualClock]:
    clock = ManualClock()
    c = Cluster(ClusterConfig(brokers=3, replica_lag_time_max_ms=LAG_MS,
                              min_insync_replicas=min_isr), clock)
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    c.create_topic("t", 1, 3)
    return c, clock


def _replicas(c: Cluster) -> PartitionReplicas:
    replica_set = c.replicas("t", 0)
    assert replica_set is not None
    return replica_set


def _leader(c: Cluster) -> int:
    part = c.image.partition("t", 0)
    assert part is not None
    return part.leader


def _produce(c: Cluster, *values: bytes, acks: int = 1) -> int:
    result = c.produce(c.brokers[_leader(c)], "t", 0,
                       bytes(build_batch([RecordSpec(value=v) for v in values])), acks=acks)
    assert result.error == ErrorCode.NONE
    return result.base_offset


def _values(log: PartitionLog, upto: int | None = None) -> list[bytes | None]:
    end = log.high_watermark if upto is None else upto
    return [r.value for b in log.batches for r in decode_batch(b.data).records if r.offset < end]


def _ends(c: Cluster) -> dict[int, tuple[int, int]]:
    return {b: (log.log_end_offset, log.high_watermark) for b, log in _replicas(c).logs.items()}


def _isr(c: Cluster) -> list[int]:
    part = c.image.partition("t", 0)
    assert part is not None
    return list(part.isr)


def test_followers_hold_the_leaders_batches_themselves_and_the_high_watermark_follows() -> None:
    c, _ = _cluster()
    _produce(c, b"a", b"b")
    _produce(c, b"c")
    replica_set = _replicas(c)
    leader = replica_set.logs[_leader(c)]
    for log in replica_set.logs.values():
        assert log.log_end_offset == 3
        assert all(mine is theirs for mine, theirs in zip(log.batches, leader.batches,
                                                            strict=True))
        assert log.epoch_cache == [(0, 0)]
    assert leader.high_watermark == 3
    assert _values(leader) == [b"a", b"b", b"c"]


def test_follower_fetch_answers_batches_or_the_diverging_epoch() -> None:
    c, _ = _cluster()
    _produce(c, b"a", b"b")
    c.elect_leader("t", 0)
    _produce(c, b"c")
    leader = _replicas(c).logs[_leader(c)]
    fetched = follower_fetch(leader, 2, 1)
    assert isinstance(fetched, FetchedBatches)
    assert ([b.base_offset for b in fetched.batches], fetched.high_watermark) == ([2], 3)
    # a fetcher that wrote offsets 2-4 in epoch 0 must truncate to 2, where epoch 0 ends
    assert follower_fetch(leader, 5, 0) == DivergingEpoch(0, 2)


def test_apply_fetch_in_the_leaders_epoch_takes_what_follower_fetch_answers() -> None:
    """The steady state, taken without building the answer: a follower in the leader's
    current epoch and behind it gets exactly what follower_fetch answers (the leader's own
    batch objects, its log start, its high watermark), truncates nothing and is caught up."""
    c, _ = _cluster()
    replica_set = _replicas(c)
    leader_id = _leader(c)
    follower_id = next(b for b in replica_set.logs if b != leader_id)
    leader, follower = replica_set.logs[leader_id], replica_set.logs[follower_id]
    _produce(c, b"a")
    _produce(c, b"b")
    assert follower.log_end_offset == 2 and follower.epoch_cache == leader.epoch_cache
    c.replication.pause(broker_id=follower_id)
    _produce(c, b"c", b"d")
    _produce(c, b"e")
    leader.delete_records_before(1)  # the answer's log start moves the follower's
    kept = list(follower.batches)
    answer = follower_fetch(leader, follower.log_end_offset, follower.epoch_cache[-1][0])
    assert isinstance(answer, FetchedBatches) and len(answer.batches) == 2
    assert apply_fetch(follower, leader) is True
    assert follower.batches[-2:] == answer.batches
    assert all(mine is theirs for mine, theirs in zip(follower.batches[-2:], answer.batches,
                                                        strict=True))
    assert [b for b in kept if b.last_offset >= 1] == follower.batches[:-2]  # none truncated
    assert (follower.log_start_offset, follower.log_end_offset, follower.high_watermark) == (
        answer.log_start_offset, answer.log_end_offset,
        min(answer.high_watermark, follower.log_end_offset))


def test_a_paused_follower_holds_the_high_watermark_until_it_leaves_the_isr() -> None:
    c, clock = _cluster()
    _produce(c, b"a")
    follower = next(b for b in (0, 1, 2) if b != _leader(c))
    before = c.image.partition("t", 0)
    assert before is not None
    c.replication.pause(broker_id=follower)
    _produce(c, b"b")
    leader_log = _replicas(c).logs[_leader(c)]
    assert (leader_log.log_end_offset, leader_log.high_watermark) == (2, 1)
    assert _replicas(c).logs[follower].log_end_offset == 1
    clock.advance(LAG_MS)
    c.tick()
    assert follower in _isr(c)  # not yet: behind for exactly the lag time
    clock.advance(1)
    c.tick()
    after = c.image.partition("t", 0)
    assert after is not None and follower not in after.isr
    # KRaft: an ISR change bumps the partition epoch, never the leader epoch
    assert after.leader_epoch == before.leader_epoch
    assert after.partition_epoch == before.partition_epoch + 1
    assert leader_log.high_watermark == 2
    c.replication.resume(broker_id=follower)
    rejoined = c.image.partition("t", 0)
    assert rejoined is not None and follower in rejoined.isr
    assert rejoined.partition_epoch == before.partition_epoch + 2
    assert _replicas(c).logs[follower].log_end_offset == 2


def test_a_paused_follower_with_nothing_to_fetch_stays_in_the_isr() -> None:
    c, clock = _cluster()
    _produce(c, b"a")
    c.replication.pause(partition=("t", 0))
    clock.advance(LAG_MS * 3)
    c.tick()
    assert _isr(c) == [0, 1, 2]


def test_acks_all_waits_for_the_high_watermark_and_reports_a_shrunk_isr() -> None:
    c, clock = _cluster(min_isr=2)
    leader = _leader(c)
    node = c.brokers[leader]
    c.replication.pause(partition=("t", 0))
    result = c.produce(node, "t", 0, bytes(build_batch([RecordSpec(value=b"x")])), acks=-1)
    wait = c.replication_wait(node, "t", 0, result)
    assert wait is not None and c.ack_status(wait) is None
    clock.advance(LAG_MS + 1)
    c.tick()
    assert _isr(c) == [leader]
    # the high watermark passed the batch, but with the ISR below min.insync.replicas
    assert c.ack_status(wait) == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    c.replication.resume(partition=("t", 0))
    assert len(_isr(c)) == 3 and c.ack_status(wait) == ErrorCode.NONE


def test_acks_1_writes_only_the_leader_held_are_lost_when_it_fails() -> None:
    c, _ = _cluster()
    _produce(c, b"kept-0", b"kept-1")
    old = _leader(c)
    followers = [b for b in (0, 1, 2) if b != old]
    for b in followers:
        c.replication.pause(broker_id=b)
    _produce(c, b"lost-0")
    _produce(c, b"lost-1")
    assert _replicas(c).logs[old].log_end_offset == 4
    c.fence_broker(old)  # the leader fails before its followers fetched
    c.replication.resume()
    new = _leader(c)
    assert new in followers
    new_log = _replicas(c).logs[new]
    assert _values(new_log, new_log.log_end_offset) == [b"kept-0", b"kept-1"]
    _produce(c, b"after")
    c.start_broker(old, "127.0.0.1", 9092 + old)
    c.rejoin_broker(old)
    old_log = _replicas(c).logs[old]
    # the old leader truncated its epoch-0 tail (offsets 2-3) and copied the new epoch
    assert _values(old_log, old_log.log_end_offset) == [b"kept-0", b"kept-1", b"after"]
    assert old_log.epoch_cache == new_log.epoch_cache == [(0, 0), (1, 2)]
    assert old in _isr(c)


def test_unclean_election_keeps_the_out_of_sync_replicas_log() -> None:
    c, clock = _cluster()
    _produce(c, b"a")
    leader = _leader(c)
    laggard = next(b for b in (0, 1, 2) if b != leader)
    c.replication.pause(broker_id=laggard)
    _produce(c, b"b")
    _produce(c, b"c")
    clock.advance(LAG_MS + 1)
    c.tick()
    assert laggard not in _isr(c)
    result = c.unclean_elect("t", 0, laggard)
    assert (result.leader, result.log_end_offset, result.truncated_records) == (laggard, 1, 2)
    log = _replicas(c).logs[laggard]
    # OffsetForLeaderEpoch from the new leader: epoch 0 ends at 1, its real end
    assert log.end_offset_for_epoch(0) == (0, 1)
    c.replication.resume()
    for b, other in _replicas(c).logs.items():
        if c.brokers[b].up:
            assert other.log_end_offset == 1, b


def test_acks_all_data_survives_repeated_leader_failures() -> None:
    c, _ = _cluster(min_isr=2)
    acknowledged: list[bytes] = []
    for round_ in range(4):
        value = f"v{round_}".encode()
        node = c.brokers[_leader(c)]
        result = c.produce(node, "t", 0, bytes(build_batch([RecordSpec(value=value)])),
                           acks=-1)
        wait = c.replication_wait(node, "t", 0, result)
        if result.error == ErrorCode.NONE and (wait is None or c.ack_status(wait)
                                               == ErrorCode.NONE):
            acknowledged.append(value)
        old = _leader(c)
        c.fence_broker(old)
        c.start_broker(old, "127.0.0.1", 9092 + old)
        c.rejoin_broker(old)
    leader_log = _replicas(c).logs[_leader(c)]
    assert acknowledged == [b"v0", b"v1", b"v2", b"v3"]
    assert _values(leader_log) == acknowledged


def test_set_isr_keeps_a_caught_up_follower_out_until_resumed() -> None:
    c, clock = _cluster()
    _produce(c, b"a")
    leader = _leader(c)
    c.set_isr("t", 0, [leader])
    _produce(c, b"b")
    clock.advance(LAG_MS * 2)
    c.tick()
    assert _isr(c) == [leader]  # the lag rule does not undo the verb
    assert all(log.log_end_offset == 2 for log in _replicas(c).logs.values())
    c.replication.resume()
    assert sorted(_isr(c)) == [0, 1, 2]


def _acks_all(c: Cluster, broker: int, value: bytes) -> tuple[ErrorCode, object]:
    node = c.brokers[broker]
    result = c.produce(node, "t", 0, bytes(build_batch([RecordSpec(value=value)])), acks=-1)
    return result.error, c.replication_wait(node, "t", 0, result)


def test_a_deposed_leader_with_paused_metadata_neither_follows_nor_acknowledges() -> None:
    """Kafka's broker is never leader and follower of one partition at once. A leader whose
    metadata is paused when another in-sync replica is elected still believes it leads: it
    appends its clients' writes in the old epoch, but nobody fetches from it, so its high
    watermark stays where it was and its acks=all answers wait; it does not fetch from the
    new leader either (it does not know of it). Once it learns of the change it truncates
    its old-epoch tail at the new leader's epoch boundary and copies the new leader's log."""
    c, clock = _cluster(min_isr=2)
    assert _produce(c, b"a", acks=-1) == 0
    stale = _leader(c)
    c.pause_metadata(stale)
    new = c.elect_leader("t", 0, next(b for b in _isr(c) if b != stale))
    assert new != stale and stale in _isr(c)
    error, new_wait = _acks_all(c, new, b"b")
    assert error == ErrorCode.NONE
    # the stale broker still takes writes as leader of epoch 0 ...
    error, zombie_wait = _acks_all(c, stale, b"zombie")
    assert error == ErrorCode.NONE and zombie_wait is not None
    _produce_to(c, new, b"c")
    _produce_to(c, new, b"d")
    stale_log, new_log = _replicas(c).logs[stale], _replicas(c).logs[new]
    for _ in range(3):
        clock.advance(LAG_MS // 4)
        c.tick()
        # ... but never acknowledges them nor serves them below its high watermark
        assert c.ack_status(zombie_wait) is None
        assert stale_log.high_watermark == 1
        assert b"zombie" not in _values(stale_log)
        assert b"zombie" not in _values(new_log, new_log.log_end_offset)
        assert new_log.epoch_cache[-1][0] > stale_log.epoch_cache[-1][0]  # it did not fetch
    # the new leader's acks=all answer waits for the deposed leader to leave the ISR
    assert new_wait is not None and c.ack_status(new_wait) is None
    clock.advance(LAG_MS)
    c.tick()
    assert stale not in _isr(c)
    assert c.ack_status(new_wait) == ErrorCode.NONE
    assert _values(new_log) == [b"a", b"b", b"c", b"d"]
    c.resume_metadata(stale)
    c.tick()
    assert c.ack_status(zombie_wait) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    for broker, log in _replicas(c).logs.items():
        assert _values(log, log.log_end_offset) == [b"a", b"b", b"c", b"d"], broker
        assert log.epoch_cache == new_log.epoch_cache, broker
    clock.advance(1)
    c.tick()
    assert sorted(_isr(c)) == [0, 1, 2]


def _produce_to(c: Cluster, broker: int, value: bytes) -> None:
    result = c.produce(c.brokers[broker], "t", 0, bytes(build_batch([RecordSpec(value=value)])),
                       acks=1)
    assert result.error == ErrorCode.NONE
