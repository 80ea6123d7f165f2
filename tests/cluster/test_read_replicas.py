"""Fetch from follower (KIP-392) in the model, on a ManualClock: broker racks, the
rack-aware replica selector's choice (in-sync followers only, the most caught up first),
and followers' high watermarks as their fetches teach them."""

from __future__ import annotations

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock, PartitionLog
from mockbroker.cluster.configs.broker_properties import BrokerPropertyError
from mockbroker.cluster.log.read_replicas import RACK_AWARE_SELECTOR, parse_racks

LAG_MS = 10_000
TOPIC = "t"


def _cluster(racks: tuple[str, ...] = ("r0", "r1", "r2"), selector: str = RACK_AWARE_SELECTOR,
             **config: object) -> tuple[Cluster, ManualClock]:
    clock = ManualClock()
    c = Cluster(ClusterConfig(brokers=3, replica_lag_time_max_ms=LAG_MS, broker_racks=racks,
                              replica_selector_class=selector, **config), clock)  # type: ignore[arg-type]
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    c.create_topic(TOPIC, assignments=[[0, 1, 2]])
    return c, clock


def _produce(c: Cluster, count: int) -> None:
    batch = bytes(build_batch([RecordSpec(value=f"v{i}".encode()) for i in range(count)]))
    assert c.produce(c.brokers[0], TOPIC, 0, batch, acks=1).error == ErrorCode.NONE


def _preferred(c: Cluster, rack: str | None, offset: int = 0) -> int:
    topic = c.image.topics[TOPIC]
    return c.preferred_read_replica(c.brokers[0], topic, topic.partitions[0], rack, offset)


def _log(c: Cluster, broker: int) -> PartitionLog:
    replica_set = c.replicas(TOPIC, 0)
    assert replica_set is not None
    return replica_set.logs[broker]


def _isr(c: Cluster) -> list[int]:
    part = c.image.partition(TOPIC, 0)
    assert part is not None
    return list(part.isr)


def test_racks_are_registered_and_reported_as_broker_rack() -> None:
    c, _ = _cluster()
    assert {b: c.image.brokers[b].rack for b in range(3)} == {0: "r0", 1: "r1", 2: "r2"}
    assert [c.static_broker_config(b)["broker.rack"] for b in range(3)] == ["r0", "r1", "r2"]
    assert c.static_broker_config(0)["replica.selector.class"] == RACK_AWARE_SELECTOR


def test_the_broker_rack_property_is_every_brokers_rack_unless_given_its_own() -> None:
    c, _ = _cluster(racks=("", "east"), broker_properties={"broker.rack": "west"})
    assert {b: c.image.brokers[b].rack for b in range(3)} == {0: "west", 1: "east", 2: "west"}
    assert c.static_broker_config(1)["broker.rack"] == "east"
    assert c.static_broker_config(2)["broker.rack"] == "west"


def test_no_racks_no_broker_rack() -> None:
    c, _ = _cluster(racks=())
    assert all(c.image.brokers[b].rack is None for b in range(3))
    assert "broker.rack" not in c.static_broker_config(0)


def test_bad_rack_lists_and_selector_classes_are_refused() -> None:
    assert parse_racks("r0, r1,,r3") == ("r0", "r1", "", "r3")
    assert parse_racks("") == ()
    with pytest.raises(ValueError, match="4 broker racks given for 3 brokers"):
        Cluster(ClusterConfig(brokers=3, broker_racks=("a", "b", "c", "d")))
    with pytest.raises(BrokerPropertyError, match=r"Class com\.example\.Nope could not be found"):
        Cluster(ClusterConfig(broker_properties={"replica.selector.class": "com.example.Nope"}))
    by_property = Cluster(ClusterConfig(
        broker_properties={"replica.selector.class": RACK_AWARE_SELECTOR}))
    assert by_property.config.replica_selector_class == RACK_AWARE_SELECTOR


def test_rack_aware_selector_sends_a_consumer_to_the_follower_in_its_rack() -> None:
    c, _ = _cluster()
    _produce(c, 3)
    replica_set = c.replicas(TOPIC, 0)
    assert replica_set is not None and replica_set.last_preferred_read_replica is None
    assert _preferred(c, "r1") == 1
    assert replica_set.last_preferred_read_replica == 1
    assert _preferred(c, "r2", offset=3) == 2
    assert _preferred(c, "r0") == -1  # the leader's own rack: read from the leader
    assert replica_set.last_preferred_read_replica == 0
    assert _preferred(c, "r9") == -1  # no replica in that rack
    assert _preferred(c, "") == -1 and _preferred(c, None) == -1
    assert _preferred(c, "r1", offset=4) == -1  # past the follower's log end


def test_kafkas_default_selector_keeps_reads_on_the_leader() -> None:
    c, _ = _cluster(selector="")
    _produce(c, 3)
    assert _preferred(c, "r1") == -1
    replica_set = c.replicas(TOPIC, 0)
    assert replica_set is not None and replica_set.last_preferred_read_replica is None


def test_among_followers_in_the_rack_the_one_with_the_highest_log_end_wins() -> None:
    c, clock = _cluster(racks=("r0", "r1", "r1"))
    _produce(c, 2)
    assert _preferred(c, "r1") == 1  # equal: the lowest id
    c.replication.pause(broker_id=1)
    _produce(c, 2)
    assert (_log(c, 1).log_end_offset, _log(c, 2).log_end_offset) == (2, 4)
    assert _isr(c) == [0, 1, 2]  # behind, but not yet for replica.lag.time.max.ms
    assert _preferred(c, "r1") == 2
    c.replication.resume(broker_id=1)
    c.replication.pause(broker_id=2)
    _produce(c, 1)
    clock.advance(1)
    c.tick()
    assert (_log(c, 1).log_end_offset, _log(c, 2).log_end_offset) == (5, 4)
    assert _preferred(c, "r1") == 1


def test_a_follower_out_of_the_isr_or_fenced_is_no_longer_preferred() -> None:
    c, clock = _cluster()
    _produce(c, 2)
    assert _preferred(c, "r1") == 1 and _preferred(c, "r2") == 2
    c.replication.pause(broker_id=1)
    _produce(c, 2)
    clock.advance(LAG_MS + 1)
    c.tick()
    assert _isr(c) == [0, 2]
    assert _preferred(c, "r1") == -1
    c.fence_broker(2)
    assert _isr(c) == [0]
    assert _preferred(c, "r2") == -1
    # back in sync: preferred again
    c.replication.resume(broker_id=1)
    assert _isr(c) == [0, 1]
    assert _preferred(c, "r1") == 1


def test_followers_learn_the_high_watermark_from_their_fetches() -> None:
    c, clock = _cluster()
    _produce(c, 3)
    assert [(_log(c, b).log_end_offset, _log(c, b).high_watermark) for b in range(3)] == [
        (3, 3)] * 3  # healthy followers learn it at once (their next fetch)
    # a paused follower keeps what it learnt; once out of the ISR the leader moves on
    c.replication.pause(broker_id=1)
    _produce(c, 2)
    assert _log(c, 0).high_watermark == 3  # the paused follower is still in the ISR
    clock.advance(LAG_MS + 1)
    c.tick()
    assert _isr(c) == [0, 2]
    assert (_log(c, 0).high_watermark, _log(c, 2).high_watermark) == (5, 5)
    assert (_log(c, 1).log_end_offset, _log(c, 1).high_watermark) == (3, 3)
    c.replication.resume(broker_id=1)
    assert (_log(c, 1).log_end_offset, _log(c, 1).high_watermark) == (5, 5)


def test_a_delayed_follower_learns_the_high_watermark_at_its_next_fetch() -> None:
    c, clock = _cluster()
    c.replication.delay(500, broker_id=2)
    _produce(c, 3)
    assert (_log(c, 2).log_end_offset, _log(c, 2).high_watermark) == (0, 0)
    c.tick()  # its first fetch: the data, and the high watermark the leader had (0)
    assert _log(c, 0).high_watermark == 3
    assert (_log(c, 2).log_end_offset, _log(c, 2).high_watermark) == (3, 0)
    clock.advance(499)
    c.tick()
    assert _log(c, 2).high_watermark == 0
    clock.advance(1)
    c.tick()  # the next fetch tells it 3
    assert _log(c, 2).high_watermark == 3
    assert c.replication.watched_count == 0
