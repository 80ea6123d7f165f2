"""KIP-778 ApiVersions renegotiation on a ManualClock: after a metadata.version upgrade each
broker keeps the level of its own image (a paused one the old level) and decides to close its
client connections only once the lowest acknowledged metadata offset its heartbeat reports
has reached the FeatureLevelRecord, once per broker and change."""

from __future__ import annotations

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.cluster.kraft.controller import METADATA_VERSION
from mockbroker.cluster.kraft.feature_renegotiation import Renegotiation

OLDER = METADATA_VERSION - 1
HEARTBEAT_MS = 500


def _cluster() -> tuple[Cluster, ManualClock, list[Renegotiation]]:
    clock = ManualClock(1_700_000_000_000)
    c = Cluster(ClusterConfig(brokers=3, metadata_version=OLDER,
                              heartbeat_interval_ms=HEARTBEAT_MS), clock)
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    seen: list[Renegotiation] = []

    def close(event: Renegotiation) -> int:
        seen.append(event)
        return 10 + event.broker_id  # as if the server closed that many connections
    c.renegotiation.add_listener(close)
    return c, clock, seen


def _heartbeat_interval(c: Cluster, clock: ManualClock) -> None:
    clock.advance(HEARTBEAT_MS)
    c.tick()


def _levels(c: Cluster) -> list[int]:
    return [c.brokers[b].image.features["metadata.version"] for b in range(3)]


def test_bootstrap_level_needs_no_renegotiation() -> None:
    c, clock, seen = _cluster()
    for _ in range(3):
        _heartbeat_interval(c, clock)
    assert (seen, c.renegotiation.events) == ([], [])
    assert _levels(c) == [OLDER] * 3


def test_paused_broker_holds_back_every_close_until_it_applies_the_record() -> None:
    c, clock, seen = _cluster()
    _heartbeat_interval(c, clock)
    c.pause_metadata(2)
    c.controller.set_feature_level("metadata.version", METADATA_VERSION)
    record = c.controller.log.end_offset - 1
    c.propagate()
    assert _levels(c) == [METADATA_VERSION, METADATA_VERSION, OLDER]
    for _ in range(4):  # broker 2 acknowledges an older offset: nobody closes
        _heartbeat_interval(c, clock)
        assert c.lowest_acknowledged_offset == record - 1
        assert seen == []
    assert [c.renegotiation.pending(b) for b in range(3)] == [record] * 3
    assert _levels(c) == [METADATA_VERSION, METADATA_VERSION, OLDER]

    c.resume_metadata(2)  # applies the record at once; the close waits for the heartbeat
    assert _levels(c) == [METADATA_VERSION] * 3
    assert seen == []
    _heartbeat_interval(c, clock)
    assert c.lowest_acknowledged_offset == record
    assert [(e.broker_id, e.level, e.record_offset, e.lowest_acknowledged_offset)
            for e in seen] == [(b, METADATA_VERSION, record, record) for b in range(3)]
    assert [e.closed_connections for e in c.renegotiation.events] == [10, 11, 12]
    assert [c.renegotiation.pending(b) for b in range(3)] == [None] * 3
    for _ in range(3):  # decided once: later heartbeats close nothing again
        _heartbeat_interval(c, clock)
    assert len(seen) == 3


def test_delayed_broker_closes_only_after_the_lowest_offset_passes() -> None:
    c, clock, seen = _cluster()
    _heartbeat_interval(c, clock)
    c.delay_metadata(1, 3 * HEARTBEAT_MS)
    c.controller.set_feature_level("metadata.version", METADATA_VERSION)
    record = c.controller.log.end_offset - 1
    c.propagate()
    steps = 0
    while c.brokers[1].image.features["metadata.version"] == OLDER and steps < 20:
        _heartbeat_interval(c, clock)
        assert seen == []  # broker 1 still advertises the old level
        steps += 1
    assert 0 < steps < 20
    _heartbeat_interval(c, clock)
    assert c.lowest_acknowledged_offset >= record
    assert sorted(e.broker_id for e in seen) == [0, 1, 2]


def test_broker_down_at_decision_time_never_closes_for_that_change() -> None:
    c, clock, seen = _cluster()
    _heartbeat_interval(c, clock)
    c.brokers[0].up = False  # crashed: no connections, no heartbeats
    c.fence_broker(0)
    c.controller.set_feature_level("metadata.version", METADATA_VERSION)
    c.propagate()
    _heartbeat_interval(c, clock)
    assert sorted(e.broker_id for e in seen) == [1, 2]
    assert c.renegotiation.pending(0) is None
    c.brokers[0].up = True
    c.rejoin_broker(0)
    for _ in range(3):
        _heartbeat_interval(c, clock)
    assert sorted(e.broker_id for e in seen) == [1, 2]
