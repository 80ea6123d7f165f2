"""A cluster restarted on its data directory comes back with everything it held.

The model only (no sockets): one Cluster writes to a directory, is closed, and a second
Cluster built on the same directory must show the same topics, configs, records, committed
offsets, leader epochs and producer state.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.cluster.persistence.data_dir import StorageError
from mockbroker.cluster.security.authorizer import (
    AclFilter,
    AclOperation,
    ResourceType,
    make_binding,
)
from mockbroker.cluster.security.scram_control import Upsertion


def _start(data_dir: Path, **config: object) -> Cluster:
    cluster = Cluster(ClusterConfig(brokers=3, data_dir=str(data_dir), **config),  # type: ignore[arg-type]
                      ManualClock(1_700_000_000_000))
    for broker in range(3):
        cluster.start_broker(broker, "127.0.0.1", 9092 + broker)
    return cluster


def _batch(*values: bytes, producer_id: int = -1, epoch: int = -1, sequence: int = -1) -> bytes:
    return bytes(build_batch([RecordSpec(key=b"k", value=v, timestamp=1000 + i)
                              for i, v in enumerate(values)], producer_id=producer_id,
                             producer_epoch=epoch, base_sequence=sequence))


def _produce(cluster: Cluster, topic: str, records: bytes, partition: int = 0):
    part = cluster.image.partition(topic, partition)
    assert part is not None
    return cluster.produce(cluster.brokers[part.leader], topic, partition, records, acks=-1)


def _values(cluster: Cluster, topic: str, partition: int, broker: int | None = None) -> list[bytes]:
    topic_id = cluster.image.topics[topic].topic_id
    log = cluster.log(topic_id, partition) if broker is None else cluster.replica_log(
        topic_id, partition, broker)
    assert log is not None
    return [r.value or b"" for b in log.batches for r in decode_batch(b.data).records
            if r.offset >= log.log_start_offset]


def test_topics_configs_records_offsets_and_epochs_survive_a_restart(tmp_path: Path) -> None:
    first = _start(tmp_path)
    first.create_topic("orders", 2, 3, configs={"retention.ms": "12345"})
    first.create_topic("plain", 1, 1)
    assert _produce(first, "orders", _batch(b"a", b"b")).ok
    first.elect_leader("orders", 0)  # epoch 1 starts at offset 2
    assert _produce(first, "orders", _batch(b"c")).ok
    assert _produce(first, "orders", _batch(b"x"), partition=1).ok
    assert _produce(first, "plain", _batch(b"p")).ok
    first.groups.offsets.commit("g", "orders", 0, 3, leader_epoch=1, metadata="m")
    first.groups.offsets.commit("g", "orders", 1, 1)
    first.groups.offsets.delete("g", "orders", 1)
    before_image = first.image.partition("orders", 0)
    topic_id = first.image.topics["orders"].topic_id
    leader_log = first.log(topic_id, 0)
    assert before_image is not None and leader_log is not None
    before_epochs = list(leader_log.epoch_cache)
    cluster_id = first.config.cluster_id
    first.close_storage()

    second = _start(tmp_path)
    assert second.config.cluster_id == cluster_id
    assert sorted(second.image.topics) == ["orders", "plain"]
    assert second.image.topics["orders"].topic_id == topic_id
    assert second.topic_config("orders")["retention.ms"] == "12345"
    after = second.image.partition("orders", 0)
    assert after is not None
    assert (after.leader, after.leader_epoch, after.replicas) == (
        before_image.leader, before_image.leader_epoch, before_image.replicas)
    for broker in before_image.replicas:
        assert _values(second, "orders", 0, broker) == [b"a", b"b", b"c"]
    assert _values(second, "orders", 1) == [b"x"]
    assert _values(second, "plain", 0) == [b"p"]
    restored_log = second.log(topic_id, 0)
    assert restored_log is not None
    assert restored_log.epoch_cache == before_epochs == [(0, 0), (1, 2)]
    assert restored_log.high_watermark == restored_log.log_end_offset == 3
    committed = second.groups.offsets.get("g", "orders", 0)
    assert committed is not None and (committed.offset, committed.leader_epoch,
                                      committed.metadata) == (3, 1, "m")
    assert second.groups.offsets.get("g", "orders", 1) is None
    # appends continue after the restored log end, in the current epoch
    result = _produce(second, "orders", _batch(b"d"))
    assert (result.error, result.base_offset) == (ErrorCode.NONE, 3)
    second.close_storage()


def test_an_idempotent_producer_continues_its_sequence(tmp_path: Path) -> None:
    first = _start(tmp_path)
    first.create_topic("t", 1, 3)
    pid = first.allocate_producer_id()
    assert _produce(first, "t", _batch(b"a", b"b", producer_id=pid, epoch=0, sequence=0)).ok
    first.close_storage()

    second = _start(tmp_path)
    duplicate = _produce(second, "t", _batch(b"a", b"b", producer_id=pid, epoch=0, sequence=0))
    assert (duplicate.error, duplicate.base_offset) == (ErrorCode.NONE, 0)
    gap = _produce(second, "t", _batch(b"z", producer_id=pid, epoch=0, sequence=5))
    assert gap.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    nxt = _produce(second, "t", _batch(b"c", producer_id=pid, epoch=0, sequence=2))
    assert (nxt.error, nxt.base_offset) == (ErrorCode.NONE, 2)
    assert _values(second, "t", 0) == [b"a", b"b", b"c"]
    assert second.allocate_producer_id() > pid  # producer ids are never handed out twice
    second.close_storage()


def test_deleted_records_and_topics_stay_deleted(tmp_path: Path) -> None:
    first = _start(tmp_path)
    first.create_topic("keep", 1, 3)
    first.create_topic("gone", 1, 3)
    for value in (b"a", b"b", b"c"):
        assert _produce(first, "keep", _batch(value)).ok
    log = first.log(first.image.topics["keep"].topic_id, 0)
    assert log is not None
    log.delete_records_before(2)
    first.delete_topic("gone")
    assert not list(tmp_path.glob("broker-*/gone-0"))
    first.close_storage()

    second = _start(tmp_path)
    assert sorted(second.image.topics) == ["keep"]
    restored = second.log(second.image.topics["keep"].topic_id, 0)
    assert restored is not None
    assert (restored.log_start_offset, restored.log_end_offset) == (2, 3)
    assert _values(second, "keep", 0) == [b"c"]
    second.create_topic("gone", 1, 3)  # the name can be used again, empty
    assert _values(second, "gone", 0) == []
    second.close_storage()


def test_a_torn_segment_tail_is_truncated_at_load(tmp_path: Path) -> None:
    first = _start(tmp_path)
    first.create_topic("t", 1, 1)
    for value in (b"one", b"two"):
        assert _produce(first, "t", _batch(value)).ok
    first.close_storage()
    segments = list(tmp_path.glob("broker-*/t-0/*.log"))
    assert len(segments) == 1
    whole = segments[0].read_bytes()
    segments[0].write_bytes(whole[:-5])  # the second batch loses its last bytes

    second = _start(tmp_path)
    assert _values(second, "t", 0) == [b"one"]
    assert segments[0].stat().st_size < len(whole) - 5
    assert _produce(second, "t", _batch(b"three")).base_offset == 1
    second.close_storage()


def test_an_explicit_other_cluster_id_is_refused(tmp_path: Path) -> None:
    _start(tmp_path, cluster_id="first-cluster").close_storage()
    with pytest.raises(StorageError, match="first-cluster"):
        Cluster(ClusterConfig(brokers=3, data_dir=str(tmp_path), cluster_id="other"))
    again = Cluster(ClusterConfig(brokers=3, data_dir=str(tmp_path)))  # no id given: adopted
    assert again.config.cluster_id == "first-cluster"
    again.close_storage()


def test_brokers_register_again_with_new_epochs(tmp_path: Path) -> None:
    first = _start(tmp_path)
    epoch = first.controller.broker_epoch(0)
    first.close_storage()
    second = _start(tmp_path)
    assert second.controller.broker_epoch(0) == epoch + 1
    assert second.image.brokers[0].epoch == epoch + 1
    second.close_storage()


def test_scram_users_survive_a_restart_through_the_metadata_log(tmp_path: Path) -> None:
    first = _start(tmp_path)
    first.credentials.add_user("alice", "secret")
    first.credentials.add_user("gone", "pw")
    assert first.credentials.delete_user("gone")
    first.credentials.alter([], [Upsertion("carl", "SCRAM-SHA-256", 4096, b"salt",
                                           hashlib.pbkdf2_hmac("sha256", b"c", b"salt", 4096))])
    first.close_storage()
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == [
        "consumer-offsets.log", "meta.properties", "metadata.log",
        "transaction-state.log"]  # no file of their own
    second = _start(tmp_path)
    for image in [second.image, *(n.image for n in second.brokers.values())]:
        assert image.scram.verify_plain("alice", "secret")
        assert not image.scram.verify_plain("alice", "wrong")
        assert image.scram.scram_credential("alice", "SCRAM-SHA-512") is not None
        assert image.scram.users() == ["alice", "carl"]
        assert image.scram.scram_credential("carl", "SCRAM-SHA-256") == \
            first.credentials.scram_credential("carl", "SCRAM-SHA-256")
    # the same users given again at start-up write nothing: the log does not grow
    end = second.controller.log.end_offset
    second.credentials.add_user("alice", "secret")
    assert second.controller.log.end_offset == end
    second.close_storage()


def test_acls_survive_a_restart_through_the_metadata_log(tmp_path: Path) -> None:
    first = _start(tmp_path, authorizer=True)
    kept = make_binding(2, "orders", 3, "User:alice", "*", int(AclOperation.READ), 3)
    dropped = make_binding(3, "g", 4, "User:bob", "*", int(AclOperation.READ), 3)
    assert first.acl_control.create([kept, dropped]) == [True, True]
    assert first.acl_control.delete([AclFilter(principal="User:bob")]) == [[dropped]]
    ids = dict(first.image.acls.by_id)
    first.close_storage()
    second = _start(tmp_path, authorizer=True)
    assert second.image.acls.by_id == ids  # the same binding under the same Uuid
    for node in second.brokers.values():
        assert node.image.acls.bindings() == [kept]
        assert second.acls.authorize(node.image.acls, "User:alice", "h", AclOperation.READ,
                                     ResourceType.TOPIC, "orders")
    assert not second.acls.authorize(second.image.acls, "User:bob", "h", AclOperation.READ,
                                     ResourceType.GROUP, "g1")
    second.close_storage()


def test_reset_empties_the_stored_data(tmp_path: Path) -> None:
    first = _start(tmp_path)
    first.create_topic("t", 1, 3)
    assert _produce(first, "t", _batch(b"a")).ok
    first.groups.offsets.commit("g", "t", 0, 1)
    first.reset()
    assert not list(tmp_path.glob("broker-*/t-0"))
    first.close_storage()
    second = _start(tmp_path)
    assert "t" not in second.image.topics
    assert second.groups.offsets.get("g", "t", 0) is None
    second.close_storage()


def test_groups_with_offsets_come_back_empty(tmp_path: Path) -> None:
    first = _start(tmp_path)
    first.create_topic("t", 1, 3)
    first.groups.offsets.commit("billing", "t", 0, 7)
    first.close_storage()
    second = _start(tmp_path)
    group = second.groups.get("billing")
    assert group is not None and not group.members
    fetched = second.groups.fetch_offsets("billing", [("t", 0)])
    assert [(f.offset, f.error) for f in fetched] == [(7, ErrorCode.NONE)]
    second.close_storage()


def test_a_transaction_left_open_is_aborted_at_restart(tmp_path: Path) -> None:
    first = _start(tmp_path)
    first.create_topic("t", 1, 3)
    pid = first.allocate_producer_id()
    assert _produce(first, "t", _batch(b"plain")).ok
    log = first.log(first.image.topics["t"].topic_id, 0)
    assert log is not None
    transactional = bytes(build_batch([RecordSpec(value=b"open", timestamp=1)],
                                      producer_id=pid, producer_epoch=0, base_sequence=0,
                                      transactional=True))
    log.append(transactional, 0)  # written, as a coordinator crash would leave it
    log.refresh_last_stable_offset()
    first.close_storage()

    second = _start(tmp_path)
    restored = second.log(second.image.topics["t"].topic_id, 0)
    assert restored is not None
    assert restored.batches[-1].is_control  # the abort marker
    assert restored.aborted_index == [(pid, 1, 2)]
    assert restored.last_stable_offset == restored.log_end_offset == 3
    second.close_storage()


def test_fewer_brokers_than_the_directory_holds_is_refused(tmp_path: Path) -> None:
    _start(tmp_path).close_storage()
    with pytest.raises(StorageError, match="start at least 3 brokers, not 1"):
        Cluster(ClusterConfig(brokers=1, data_dir=str(tmp_path)))


def test_a_topic_torn_from_the_metadata_log_is_gone_whole(tmp_path: Path) -> None:
    first = _start(tmp_path)
    first.create_topic("whole", 2, 3)
    first.create_topic("torn", 3, 3, configs={"retention.ms": "1"})
    first.close_storage()
    metadata = tmp_path / "metadata.log"
    metadata.write_bytes(metadata.read_bytes()[:-3])  # the last frame: all of "torn"

    stray = tmp_path / "broker-0" / "torn-0" / "00000000000000000000.log"
    stray.write_bytes(_batch(b"stray"))  # its data reached the disk, its metadata did not

    second = _start(tmp_path)
    assert sorted(second.image.topics) == ["whole"]
    assert len(second.image.topics["whole"].partitions) == 2
    assert second.image.topic_config("torn") == {}
    assert not stray.parent.exists()  # a stray log is deleted at start-up
    second.create_topic("torn", 1, 3)  # nothing of it is left to conflict with
    assert _produce(second, "torn", _batch(b"new")).base_offset == 0
    assert _values(second, "torn", 0) == [b"new"]
    second.close_storage()


def test_a_broker_stopped_before_the_restart_rejoins_the_isr(tmp_path: Path) -> None:
    first = _start(tmp_path)
    first.create_topic("t", 1, 3)
    first.brokers[2].up = False
    first.fence_broker(2)  # stopped: out of every ISR
    assert _produce(first, "t", _batch(b"a")).ok
    part = first.image.partition("t", 0)
    assert part is not None and 2 not in part.isr
    first.close_storage()

    second = _start(tmp_path)
    after = second.image.partition("t", 0)
    assert after is not None and sorted(after.isr) == [0, 1, 2]
    assert _values(second, "t", 0, broker=2) == [b"a"]  # it caught up from the leader
    second.close_storage()


def test_a_credentials_file_of_an_older_version_is_named_not_read(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "credentials.json").write_text('{"scram": {}, "plain": {}}')
    with caplog.at_level("WARNING", logger="mockbroker.cluster.persistence.data_dir"):
        cluster = _start(tmp_path)
    assert "credentials.json" in caplog.text and "no longer read" in caplog.text
    assert cluster.image.scram.users() == []
    cluster.close_storage()
