"""The controller-owned metadata log in the cluster model, without sockets (ManualClock,
explicit ticks).

Metadata propagation: brokers fetch the controller's log on their own (a broker left behind
catches up on the next tick); the cluster id comes from the log. Broker heartbeats and the
lowest acknowledged metadata offset: heartbeats as BrokerHeartbeat v1 frames, the lowest
offset every unfenced broker acknowledged, images at past offsets for consistent reads.
KIP-253: partition expansion bumps existing leader epochs and records the prior epochs.
ACLs as AccessControlEntryRecords, which each broker authorizes by from its own image.
"""

from __future__ import annotations

from kafka_protocol_codec import codec_for, decode_response, metadata_record
from kafka_protocol_codec.api import generated_messages
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.cluster.kraft.heartbeat_rounds import (
    BROKER_HEARTBEAT,
    HeartbeatRequest,
    answer_heartbeats,
    encode_heartbeat,
)
from mockbroker.cluster.kraft.image_history import ImageHistory
from mockbroker.cluster.kraft.metadata_log import PARTITION, PARTITION_CHANGE, MetadataImage
from mockbroker.cluster.security.authorizer import (
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    AclFilter,
    AclOperation,
    ResourceType,
    make_binding,
)

INTERVAL = 500


def _cluster(brokers: int = 3, **config: object) -> tuple[Cluster, ManualClock]:
    clock = ManualClock()
    c = Cluster(ClusterConfig(brokers=brokers, heartbeat_interval_ms=INTERVAL,
                              **config), clock)  # type: ignore[arg-type]
    for b in range(brokers):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    return c, clock


def _next_round(c: Cluster, clock: ManualClock) -> None:
    clock.advance(INTERVAL)
    c.tick()


def _end(c: Cluster) -> int:
    return c.controller.log.end_offset - 1


# -- brokers fetch the controller's metadata log ----------------------------------------------

def test_cluster_id_comes_from_the_log_into_every_image() -> None:
    c, _ = _cluster()
    assert c.controller.log.cluster_id == c.config.cluster_id
    for node in c.brokers.values():
        assert node.image.cluster_id == c.config.cluster_id
    assert MetadataImage().cluster_id is None  # a broker that never fetched knows none


def test_a_broker_left_behind_catches_up_on_the_next_tick() -> None:
    c, clock = _cluster()
    before = c.brokers[0].applied_offset
    c.controller.allocate_producer_ids(0, 5000)  # written without propagate()
    assert c.brokers[0].applied_offset == before
    c.tick()
    assert all(n.applied_offset == _end(c) for n in c.brokers.values())
    # a paused broker stays behind on ticks; lifting the pause lets the next tick catch it up
    c.brokers[1].paused = True
    c.create_topic("t", 1)
    c.tick()
    assert c.brokers[1].applied_offset < _end(c) == c.brokers[0].applied_offset
    c.brokers[1].paused = False
    clock.advance(50)
    c.tick()
    assert c.brokers[1].applied_offset == _end(c)


# -- broker heartbeats: the lowest acknowledged metadata offset -------------------------------

def test_heartbeats_acknowledge_applied_offsets_at_the_interval() -> None:
    c, clock = _cluster()
    assert c.lowest_acknowledged_offset == _end(c)  # registration heartbeats
    c.brokers[2].paused = True
    c.create_topic("t", 1)
    stale = c.brokers[2].applied_offset
    clock.advance(INTERVAL - 1)
    c.tick()  # not yet due
    assert c.controller.acknowledged_offsets[0] < _end(c)
    clock.advance(1)
    c.tick()
    assert c.controller.acknowledged_offsets == {0: _end(c), 1: _end(c), 2: stale}
    assert c.controller.lowest_acknowledged_offset == stale
    assert [n.lowest_acknowledged_offset for n in c.brokers.values()] == [stale] * 3
    assert [n.acknowledged_offset for n in c.brokers.values()] == [_end(c), _end(c), stale]
    assert all(n.last_heartbeat_ms == clock.now_ms() for n in c.brokers.values())
    c.brokers[2].paused = False
    _next_round(c, clock)
    assert c.lowest_acknowledged_offset == _end(c)


def test_fenced_brokers_do_not_hold_the_lowest_offset_back() -> None:
    c, clock = _cluster()
    c.brokers[2].paused = True
    c.brokers[2].up = False  # stopped: no more heartbeats
    c.controller.fence_broker(2)
    c.propagate()
    c.create_topic("t", 1, replication_factor=2)
    _next_round(c, clock)
    assert c.lowest_acknowledged_offset == _end(c)


def test_the_lowest_offset_never_moves_back() -> None:
    c, clock = _cluster()
    c.brokers[2].up = False
    c.controller.fence_broker(2)
    c.propagate()
    c.create_topic("t", 1, replication_factor=2)
    _next_round(c, clock)
    high = c.lowest_acknowledged_offset
    c.brokers[2].paused = True  # comes back behind: unfenced, but not caught up
    c.start_broker(2, "127.0.0.1", 9094)
    _next_round(c, clock)
    assert c.lowest_acknowledged_offset == high


def test_heartbeat_frames_are_broker_heartbeat_v1() -> None:
    c, _ = _cluster()
    node = c.brokers[1]
    epoch = c.controller.broker_epoch(1)
    frame = encode_heartbeat(HeartbeatRequest(1, epoch, node.applied_offset), 42)
    [answer] = answer_heartbeats(c.controller, [frame])
    response = decode_response(BROKER_HEARTBEAT, 1, answer)
    assert response.correlation_id == 42
    body = response.body
    assert (body.error_code, body.is_fenced, body.is_caught_up) == (0, False, True)
    assert body.lowest_acknowledged_offset == c.lowest_acknowledged_offset
    # the extension is a tagged field: Kafka's own v1 schema reads the body and skips it
    plain = codec_for(generated_messages(BROKER_HEARTBEAT)[1], 1).decode(answer[5:])
    assert "lowest_acknowledged_offset" not in plain and plain.error_code == 0
    # a stale broker epoch or an unknown broker is refused and acknowledges nothing
    bad = [encode_heartbeat(HeartbeatRequest(1, epoch - 1, 999), 1),
           encode_heartbeat(HeartbeatRequest(7, 1, 999), 2)]
    errors = [decode_response(BROKER_HEARTBEAT, 1, a).body.error_code
              for a in answer_heartbeats(c.controller, bad)]
    assert errors == [ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED]
    assert c.controller.acknowledged_offsets[1] == node.applied_offset


def test_images_at_past_offsets_equal_a_replay_of_the_log() -> None:
    c, _ = _cluster()
    c.create_topic("a", 2)
    c.set_isr("a", 0, [0, 1])
    c.acl_control.create([make_binding(2, "a", 3, "User:x", "*", int(AclOperation.READ), 3)])
    c.create_topic("b", 1)
    c.credentials.add_user("u", "pw")
    c.elect_leader("a", 1)
    c.acl_control.delete([AclFilter()])
    c.delete_topic("b")
    history = ImageHistory(cache_size=3)
    log = c.controller.log
    for offset in [*range(-1, _end(c) + 1), 5, 3, _end(c)]:
        replay = MetadataImage(cluster_id=log.cluster_id)
        for record in log.records[:offset + 1]:
            replay.apply(record)
        replay.offset = offset
        got = history.image_at(log, offset, [n.image for n in c.brokers.values()])
        assert got.offset == offset
        assert (got.brokers, got.configs, got.features, got.cluster_id) == (
            replay.brokers, replay.configs, replay.features, replay.cluster_id)
        assert {n: (t.topic_id, t.partitions) for n, t in got.topics.items()} == {
            n: (t.topic_id, t.partitions) for n, t in replay.topics.items()}
        assert (got.acls.by_id, got.scram.scram, got.scram.plain) == (
            replay.acls.by_id, replay.scram.scram, replay.scram.plain)


def test_consistent_reads_use_the_lowest_acknowledged_offset() -> None:
    c, clock = _cluster(consistent_metadata=True)
    c.brokers[2].paused = True
    c.create_topic("t", 1)
    _next_round(c, clock)
    stale = c.brokers[2].applied_offset
    for node in c.brokers.values():
        view = c.read_image(node)
        assert view.offset == stale and "t" not in view.topics
    assert "t" in c.brokers[0].image.topics  # the broker itself has applied it
    c.config.consistent_metadata = False
    assert c.read_image(c.brokers[0]) is c.brokers[0].image
    c.config.consistent_metadata = True
    c.brokers[2].paused = False
    _next_round(c, clock)
    assert all("t" in c.read_image(n).topics for n in c.brokers.values())


# -- KIP-253: partition expansion --------------------------------------------------------------

def test_expansion_bumps_existing_epochs_and_records_prior_epochs() -> None:
    c, _ = _cluster()
    c.create_topic("t", 2)
    c.elect_leader("t", 1)  # partition 1 now at epoch 1
    mark = c.controller.log.end_offset
    c.create_partitions("t", 4)
    records = c.controller.log.records[mark:]
    assert [r.record_type for r in records] == [PARTITION_CHANGE] * 2 + [PARTITION] * 2
    topic = c.image.topics["t"]
    assert [topic.partitions[i].leader_epoch for i in range(4)] == [1, 2, 0, 0]
    assert topic.partitions[0].leader == c.image.topics["t"].partitions[0].leader
    for index in (2, 3):
        assert dict(topic.partitions[index].prior_leader_epochs) == {0: 0, 1: 1}
    assert topic.partitions[0].prior_leader_epochs == ()
    for node in c.brokers.values():  # every broker's image carries it, from the log
        assert node.image.topics["t"].partitions[3].prior_leader_epochs == ((0, 0), (1, 1))
    # the extension is in the encoded record, and Kafka's PartitionRecord schema skips it
    new = records[-1]
    assert codec_for(metadata_record(PARTITION), new.version).decode(new.encoded)[
        "prior_leader_epochs"] == [{"partition_id": 0, "leader_epoch": 0},
                                   {"partition_id": 1, "leader_epoch": 1}]
    # the leader-epoch caches of the old partitions start the new epochs
    log = c.log(topic.topic_id, 1)
    assert log is not None and log.epoch_cache[-1][0] == 2


# -- ACLs: AccessControlEntryRecord / RemoveAccessControlEntryRecord --------------------------

def test_acls_are_records_and_each_broker_authorizes_by_its_own_image() -> None:
    c, _ = _cluster(authorizer=True)
    read = make_binding(2, "orders", 3, "User:alice", "*", int(AclOperation.READ), 3)
    start = _end(c)
    assert c.acl_control.create([read, read]) == [True, False]  # one record, not two
    assert c.acl_control.create([read]) == [False]  # already there: nothing written
    records = c.controller.log.since(start)
    assert [r.record_type for r in records] == [ACCESS_CONTROL_ENTRY_RECORD]
    acl_id = records[0].data["id"]
    assert c.image.acls.by_id == {acl_id: read}

    def allowed(broker: int) -> bool:
        return c.acls.authorize(c.brokers[broker].image.acls, "User:alice", "h",
                                AclOperation.READ, ResourceType.TOPIC, "orders")

    assert allowed(0) and allowed(1)
    c.pause_metadata(1)  # broker 1 keeps the ACLs it has applied
    assert c.acl_control.delete([AclFilter(resource_type=ResourceType.TOPIC)]) == [[read]]
    assert [(r.record_type, r.data) for r in c.controller.log.since(start + 1)] == [
        (REMOVE_ACCESS_CONTROL_ENTRY_RECORD, {"id": acl_id})]
    assert not allowed(0)
    assert allowed(1)
    c.resume_metadata(1)
    assert not allowed(1)


def test_overlapping_delete_filters_each_report_and_remove_once() -> None:
    c, _ = _cluster(authorizer=True)
    a = make_binding(2, "t", 3, "User:a", "*", int(AclOperation.READ), 3)
    b = make_binding(2, "t", 3, "User:b", "*", int(AclOperation.READ), 3)
    c.acl_control.create([a, b])
    start = _end(c)
    matched = c.acl_control.delete([AclFilter(principal="User:a"),
                                    AclFilter(resource_name="t")])
    assert matched == [[a], [a, b]]
    removed = [r.data["id"] for r in c.controller.log.since(start)]
    assert sorted(removed) == sorted({c.controller.log.records[start - 1].data["id"],
                                      c.controller.log.records[start].data["id"]})
    assert len(c.image.acls) == 0
