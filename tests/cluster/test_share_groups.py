"""Share groups (KIP-932) in the cluster model, on a ManualClock: share-partition record
states, acquisition locks, delivery counts, the SPSO, membership and share sessions."""

from __future__ import annotations

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import BatchHeader
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock, PartitionLog
from mockbroker.cluster.groups.share_group_coordinator import (
    ShareGroupCoordinator,
    ShareMember,
    simple_assign,
)
from mockbroker.cluster.groups.share_partitions import (
    ACK_ACCEPT,
    ACK_REJECT,
    ACK_RELEASE,
    AckBatch,
    AcquiredRange,
    RecordState,
    SharePartition,
)

NOW = 1_700_000_000_000


def _cluster(partitions: int = 1) -> tuple[Cluster, ManualClock]:
    clock = ManualClock(NOW)
    c = Cluster(ClusterConfig(brokers=1), clock)
    c.start_broker(0, "127.0.0.1", 9092)
    c.create_topic("t", partitions, 1)
    return c, clock


def _log(c: Cluster, partition: int = 0) -> PartitionLog:
    log = c.log(c.image.topics["t"].topic_id, partition)
    assert log is not None
    return log


def _produce(c: Cluster, *values: bytes, partition: int = 0) -> None:
    batch = bytes(build_batch([RecordSpec(key=None, value=v, timestamp=1000 + i)
                               for i, v in enumerate(values)]))
    result = c.produce(c.brokers[0], "t", partition, batch, acks=-1)
    assert result.error == ErrorCode.NONE


def _earliest(c: Cluster, **limits: int) -> SharePartition:
    return SharePartition.start(_log(c), "earliest", **limits)


def test_acquire_locks_records_and_accept_advances_the_spso() -> None:
    c, _ = _cluster()
    _produce(c, b"a", b"b", b"c")
    share = _earliest(c)
    log = _log(c)
    assert share.acquire("m1", log, log.high_watermark, NOW) == [AcquiredRange(0, 2, 1)]
    assert (share.spso, share.speo) == (0, 3)
    assert share.acquire("m2", log, log.high_watermark, NOW) == []  # all held by m1
    assert share.acknowledge("m1", [AckBatch(0, 1, (ACK_ACCEPT,))]) == ErrorCode.NONE
    assert (share.spso, share.speo) == (2, 3)
    assert share.records[2].state is RecordState.ACQUIRED


def test_latest_starts_at_the_log_end() -> None:
    c, _ = _cluster()
    _produce(c, b"old")
    share = SharePartition.start(_log(c), "latest")
    _produce(c, b"new")
    log = _log(c)
    assert share.acquire("m1", log, log.high_watermark, NOW) == [AcquiredRange(1, 1, 1)]


def test_lock_expiry_redelivers_with_delivery_count_two() -> None:
    c, clock = _cluster()
    _produce(c, b"a", b"b")
    share = _earliest(c, lock_duration_ms=30_000)
    log = _log(c)
    share.acquire("m1", log, log.high_watermark, clock.now_ms())
    clock.advance(29_999)
    assert share.expire_locks(clock.now_ms()) == 0
    clock.advance(1)
    assert share.expire_locks(clock.now_ms()) == 2
    assert share.records[0].state is RecordState.AVAILABLE
    assert share.acquire("m2", log, log.high_watermark, clock.now_ms()) == \
        [AcquiredRange(0, 1, 2)]
    # the old holder can no longer acknowledge
    assert share.acknowledge("m1", [AckBatch(0, 1, (ACK_ACCEPT,))]) == \
        ErrorCode.INVALID_RECORD_STATE
    assert share.acknowledge("m2", [AckBatch(0, 1, (ACK_ACCEPT,))]) == ErrorCode.NONE
    assert share.spso == 2 and share.records == {}


def test_reject_archives_and_release_makes_available() -> None:
    c, _ = _cluster()
    _produce(c, b"a", b"b", b"c")
    share = _earliest(c)
    log = _log(c)
    share.acquire("m1", log, log.high_watermark, NOW)
    assert share.acknowledge("m1", [AckBatch(0, 2, (ACK_REJECT, ACK_RELEASE, ACK_ACCEPT))]) \
        == ErrorCode.NONE
    assert share.spso == 1  # 0 archived: done; 1 available again
    assert share.records[1].state is RecordState.AVAILABLE
    assert share.records[2].state is RecordState.ACKNOWLEDGED
    assert share.acquire("m2", log, log.high_watermark, NOW) == [AcquiredRange(1, 1, 2)]


def test_delivery_limit_archives() -> None:
    c, _ = _cluster()
    _produce(c, b"poison", b"fine")
    share = _earliest(c, delivery_limit=3)
    log = _log(c)
    for delivery in range(1, 4):
        ranges = share.acquire("m1", log, log.high_watermark, NOW)
        assert ranges == [AcquiredRange(0, 1 if delivery == 1 else 0, delivery)]
        types = (ACK_RELEASE, ACK_ACCEPT) if delivery == 1 else (ACK_RELEASE,)
        last = 1 if delivery == 1 else 0
        assert share.acknowledge("m1", [AckBatch(0, last, types)]) == ErrorCode.NONE
    assert share.spso == 2 and share.records == {}  # archived after the third delivery
    assert share.acquire("m1", log, log.high_watermark, NOW) == []


def test_max_in_flight_bounds_new_acquisitions() -> None:
    c, _ = _cluster()
    for value in (b"a", b"b", b"c"):
        _produce(c, value)  # three batches of one record
    share = _earliest(c, max_in_flight=2)
    log = _log(c)
    assert share.acquire("m1", log, log.high_watermark, NOW) == [AcquiredRange(0, 1, 1)]
    assert not share.has_available(log, log.high_watermark)
    share.acknowledge("m1", [AckBatch(0, 0, (ACK_ACCEPT,))])
    assert share.has_available(log, log.high_watermark)
    assert share.acquire("m2", log, log.high_watermark, NOW) == [AcquiredRange(2, 2, 1)]


def test_invalid_acknowledgement_changes_nothing() -> None:
    c, _ = _cluster()
    _produce(c, b"a", b"b")
    share = _earliest(c)
    log = _log(c)
    share.acquire("m1", log, log.high_watermark, NOW)
    assert share.acknowledge("m1", [AckBatch(0, 0, (ACK_ACCEPT,)), AckBatch(1, 5, (1,))]) \
        == ErrorCode.INVALID_RECORD_STATE
    assert share.acknowledge("m1", [AckBatch(0, 1, (7,))]) == ErrorCode.INVALID_REQUEST
    assert all(r.state is RecordState.ACQUIRED for r in share.records.values())


def test_simple_assignor_spreads_and_shares() -> None:
    def member(name: str) -> ShareMember:
        return ShareMember(name, 0, "", "", None, ["t"], 0)
    two = simple_assign([member("a"), member("b")], {"t": 3})
    assert two == {"a": {"t": [0, 2]}, "b": {"t": [1]}}
    three = simple_assign([member("a"), member("b"), member("c")], {"t": 2})
    assert three == {"a": {"t": [0]}, "b": {"t": [1]}, "c": {"t": [0]}}


def test_membership_epochs_fencing_and_session_timeout() -> None:
    c, clock = _cluster(partitions=2)
    sg: ShareGroupCoordinator = c.share_groups
    first = sg.heartbeat("g", "", 0, None, ["t"])
    assert first.error == ErrorCode.NONE and first.member_epoch == 1
    assert first.assignment == {"t": [0, 1]} and first.heartbeat_interval_ms == 5000
    assert first.member_id
    m1 = first.member_id
    assert sg.heartbeat("g", m1, 7, None, None).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert sg.heartbeat("g", "nobody", 1, None, None).error == ErrorCode.UNKNOWN_MEMBER_ID
    second = sg.heartbeat("g", "m2", 0, None, ["t"])
    # the assignor takes the members in member id order; m1's is random (Kafka's form)
    lower, higher = sorted([m1, "m2"])
    expected = {lower: {"t": [0]}, higher: {"t": [1]}}
    assert second.member_epoch == 2 and second.assignment == expected["m2"]
    again = sg.heartbeat("g", m1, 1, None, None)  # moves to the new assignment
    assert again.member_epoch == 2 and again.assignment == expected[m1]
    assert sg.heartbeat("g", m1, 2, None, None).assignment is None  # unchanged: not resent
    clock.advance(44_000)
    sg.heartbeat("g", m1, 2, None, None)
    clock.advance(1_000)
    c.tick()  # m2 missed its session timeout (45 s)
    assert set(sg.groups["g"].members) == {m1}
    assert sg.heartbeat("g", m1, 2, None, None).assignment == {"t": [0, 1]}
    leave = sg.heartbeat("g", m1, -1, None, None)
    assert leave.member_epoch == -1 and not sg.groups["g"].members


def test_leaving_releases_the_members_records_and_classic_ids_are_refused() -> None:
    c, _ = _cluster()
    _produce(c, b"a")
    sg = c.share_groups
    sg.set_group_config("g", "share.auto.offset.reset", "earliest")
    member = sg.heartbeat("g", "m1", 0, None, ["t"])
    log = _log(c)
    share = sg.share_partition("g", c.image.topics["t"].topic_id, log)
    assert share.acquire("m1", log, log.high_watermark, NOW) == [AcquiredRange(0, 0, 1)]
    sg.heartbeat("g", "m1", -1, None, None)
    assert member.error == ErrorCode.NONE
    assert share.records[0].state is RecordState.AVAILABLE
    c.groups.get_or_create("classic-group")
    refused = sg.heartbeat("classic-group", "", 0, None, ["t"])
    assert refused.error == ErrorCode.GROUP_ID_NOT_FOUND


def test_share_sessions_epochs() -> None:
    c, _ = _cluster()
    sg = c.share_groups
    assert sg.open_session(0, "g", "m", 1)[0] == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert sg.open_session(0, "g", "m", 0)[0] == ErrorCode.NONE
    assert sg.open_session(0, "g", "m", 2)[0] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert sg.open_session(0, "g", "m", 1)[0] == ErrorCode.NONE
    assert sg.open_session(0, "g", "m", 2)[0] == ErrorCode.NONE
    sg.close_session(0, "g", "m")
    assert sg.open_session(0, "g", "m", 3)[0] == ErrorCode.SHARE_SESSION_NOT_FOUND
    c.reset()
    assert not sg.groups and not sg.sessions


def _transactional(log: PartitionLog, pid: int, sequence: int, value: bytes) -> None:
    batch = bytes(build_batch([RecordSpec(key=None, value=value, timestamp=1)],
                              producer_id=pid, producer_epoch=0, base_sequence=sequence,
                              transactional=True))
    result = log.append_producer_batch(batch, BatchHeader.parse(batch), 0,
                                       verify_transaction=lambda p, e: ErrorCode.NONE)
    assert result.error == ErrorCode.NONE


def test_read_committed_stops_at_the_lso_and_archives_aborted_records() -> None:
    log = PartitionLog("t", 0)
    share = SharePartition.start(log, "earliest")
    _transactional(log, 7, 0, b"aborted")
    _transactional(log, 8, 0, b"open")  # offset 1: keeps the LSO at 1 until it ends
    log.append_marker(7, 0, 0, commit=False, leader_epoch=0, timestamp_ms=1)  # offset 2
    assert log.last_stable_offset == 1
    assert share.acquire("m", log, log.last_stable_offset, NOW, read_committed=True) == []
    assert (share.spso, share.speo) == (1, 1)  # offset 0 aborted: archived, never delivered
    log.append_marker(8, 0, 0, commit=True, leader_epoch=0, timestamp_ms=1)  # offset 3
    assert share.acquire("m", log, log.last_stable_offset, NOW, read_committed=True) == \
        [AcquiredRange(1, 1, 1)]
    assert share.acknowledge("m", [AckBatch(1, 1, (ACK_ACCEPT,))]) == ErrorCode.NONE
    assert (share.spso, share.speo) == (4, 4)  # both markers archived too


def test_a_stopped_broker_forgets_its_share_sessions_and_their_acquisitions() -> None:
    c, _ = _cluster()
    _produce(c, b"a")
    sg = c.share_groups
    sg.set_group_config("g", "share.auto.offset.reset", "earliest")
    topic_id = c.image.topics["t"].topic_id
    error, session = sg.open_session(0, "g", "m1", 0)
    assert error == ErrorCode.NONE and session is not None
    session.partitions.add((topic_id, 0))
    log = _log(c)
    share = sg.share_partition("g", topic_id, log)
    assert share.acquire("m1", log, log.high_watermark, NOW) == [AcquiredRange(0, 0, 1)]
    c.fence_broker(0)
    assert sg.sessions == {}
    assert share.records[0].state is RecordState.AVAILABLE
