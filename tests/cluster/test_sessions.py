"""Failure detection as KRaft, on a ManualClock: a broker silent for broker.session.timeout.ms
is fenced (leaders move, ISRs shrink); a crashed broker is noticed only then; an isolated
leader keeps answering clients as a zombie whose writes the epochs reject and replication
truncates."""

from __future__ import annotations

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock, broker_sessions

SESSION_MS = 9000


def _cluster() -> tuple[Cluster, ManualClock]:
    clock = ManualClock()
    c = Cluster(ClusterConfig(brokers=3, broker_session_timeout_ms=SESSION_MS,
                              heartbeat_interval_ms=2000), clock)
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    c.create_topic("t", 1, 3)
    return c, clock


def _part(c: Cluster) -> tuple[int, int, list[int]]:
    part = c.image.partition("t", 0)
    assert part is not None
    return part.leader, part.leader_epoch, list(part.isr)


def _produce(c: Cluster, broker: int, value: bytes, epoch: int = -1) -> ErrorCode:
    return c.produce(c.brokers[broker], "t", 0, bytes(build_batch([RecordSpec(value=value)])),
                     acks=1, current_leader_epoch=epoch).error


def _advance(c: Cluster, clock: ManualClock, ms: int, step: int = 500) -> None:
    for _ in range(ms // step):
        clock.advance(step)
        c.tick()


def test_a_crashed_leader_is_fenced_only_when_its_session_times_out() -> None:
    c, clock = _cluster()
    leader, epoch, _ = _part(c)
    broker_sessions.crash(c, leader)
    _advance(c, clock, SESSION_MS - 1000)
    assert _part(c)[0] == leader and not c.image.brokers[leader].fenced
    _advance(c, clock, 2500)
    new_leader, new_epoch, isr = _part(c)
    assert c.image.brokers[leader].fenced
    assert new_leader != leader and new_epoch == epoch + 1 and leader not in isr


def test_an_isolated_leader_becomes_a_zombie_whose_writes_are_lost() -> None:
    c, clock = _cluster()
    assert _produce(c, _part(c)[0], b"kept") == ErrorCode.NONE
    zombie, epoch, _ = _part(c)
    broker_sessions.isolate(c, zombie)
    assert _produce(c, zombie, b"zombie-0") == ErrorCode.NONE  # acks=1: acknowledged
    _advance(c, clock, SESSION_MS + 1000)
    leader, new_epoch, isr = _part(c)
    assert leader != zombie and new_epoch == epoch + 1 and zombie not in isr
    # the zombie's own image still says it leads at the old epoch
    assert _produce(c, zombie, b"zombie-1") == ErrorCode.NONE
    assert _produce(c, zombie, b"refused", epoch=new_epoch) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert _produce(c, leader, b"after") == ErrorCode.NONE
    broker_sessions.heal(c, zombie)
    replica_set = c.replicas("t", 0)
    assert replica_set is not None
    for log in replica_set.logs.values():
        assert [r.value for b in log.batches for r in decode_batch(b.data).records] == [
            b"kept", b"after"]
    assert zombie in _part(c)[2] and not c.image.brokers[zombie].fenced


def test_an_isolated_leader_cannot_move_its_high_watermark() -> None:
    c, _ = _cluster()
    leader = _part(c)[0]
    broker_sessions.isolate(c, leader)
    node = c.brokers[leader]
    result = c.produce(node, "t", 0, bytes(build_batch([RecordSpec(value=b"v")])), acks=-1)
    wait = c.replication_wait(node, "t", 0, result)
    assert wait is not None and c.ack_status(wait) is None
