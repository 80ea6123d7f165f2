"""Client quota entities live in the metadata log as ClientQuotaRecords: the controller
writes one record per changed key, each broker applies them to its own image (a broker
whose metadata is paused keeps applying the old quota), and a cluster restarted on its data
directory comes back with them."""

from __future__ import annotations

from pathlib import Path

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.cluster.quotas.quota_records import CLIENT_QUOTA

ALICE = (("user", "alice"),)
READERS = (("client-id", "readers"), ("user", None))


def _start(brokers: int = 2, data_dir: Path | None = None) -> Cluster:
    cluster = Cluster(ClusterConfig(brokers=brokers,
                                    data_dir=None if data_dir is None else str(data_dir)),
                      ManualClock(1_700_000_000_000))
    for broker in range(brokers):
        cluster.start_broker(broker, "127.0.0.1", 9092 + broker)
    return cluster


def _quota_records(cluster: Cluster) -> list[tuple[list[tuple[str, str | None]], str, float,
                                                   bool]]:
    return [([(e["entity_type"], e["entity_name"]) for e in r.data["entity"]],
             r.data["key"], r.data["value"], r.data["remove"])
            for r in cluster.controller.log.records if r.record_type == CLIENT_QUOTA]


def test_only_changed_keys_are_written_and_every_broker_applies_them() -> None:
    cluster = _start()
    cluster.quotas.alter(ALICE, [("producer_byte_rate", 1024.0),
                                 ("consumer_byte_rate", 2048.0)])
    cluster.quotas.alter(ALICE, [("producer_byte_rate", 1024.0),  # unchanged: no record
                                 ("request_percentage", None)])  # not set: no record
    cluster.quotas.alter(READERS, [("consumer_byte_rate", 10.0)], validate_only=True)
    assert _quota_records(cluster) == [
        ([("user", "alice")], "producer_byte_rate", 1024.0, False),
        ([("user", "alice")], "consumer_byte_rate", 2048.0, False)]
    cluster.quotas.alter(ALICE, [("producer_byte_rate", None)])
    assert _quota_records(cluster)[-1] == ([("user", "alice")], "producer_byte_rate", 0.0,
                                           True)
    expected = {ALICE: {"consumer_byte_rate": 2048.0}}
    assert cluster.quotas.entities() == expected
    for node in cluster.brokers.values():
        assert node.image.client_quotas == expected
        assert cluster.quotas.broker(node.broker_id).quota(
            "alice", "any", "consumer_byte_rate") == 2048.0
    cluster.quotas.alter(ALICE, [("consumer_byte_rate", None)])  # the entity goes with it
    assert cluster.quotas.entities() == {}
    assert cluster.brokers[1].image.client_quotas == {}


def test_a_paused_broker_applies_the_old_quota_until_it_catches_up() -> None:
    cluster = _start()
    cluster.quotas.alter(READERS, [("consumer_byte_rate", 100.0)])
    cluster.pause_metadata(1)
    cluster.quotas.alter(READERS, [("consumer_byte_rate", 500.0)])
    assert cluster.quotas.quota("bob", "readers", "consumer_byte_rate") == 500.0  # log end
    assert cluster.quotas.broker(0).quota("bob", "readers", "consumer_byte_rate") == 500.0
    assert cluster.quotas.broker(1).quota("bob", "readers", "consumer_byte_rate") == 100.0
    # the window cap of a consumer's fetch follows the broker's own quota too
    assert cluster.quotas.broker(1).max_value_in_window(
        "bob", "readers", "consumer_byte_rate") == 100.0 * 10
    cluster.resume_metadata(1)
    assert cluster.quotas.broker(1).quota("bob", "readers", "consumer_byte_rate") == 500.0


def test_reset_removes_the_entities_through_the_log() -> None:
    cluster = _start()
    cluster.quotas.alter(ALICE, [("producer_byte_rate", 1.0)])
    cluster.quotas.alter((("ip", None),), [("connection_creation_rate", 3.0)])
    cluster.reset()
    assert cluster.quotas.entities() == {}
    assert [node.image.client_quotas for node in cluster.brokers.values()] == [{}, {}]
    assert [(key, remove) for _, key, _, remove in _quota_records(cluster)][-2:] == [
        ("producer_byte_rate", True), ("connection_creation_rate", True)]


def test_quotas_survive_a_restart_on_the_data_directory(tmp_path: Path) -> None:
    first = _start(data_dir=tmp_path)
    first.quotas.alter(ALICE, [("producer_byte_rate", 1024.0)])
    first.quotas.alter(READERS, [("consumer_byte_rate", 500.0)])
    first.quotas.alter(ALICE, [("producer_byte_rate", 4096.0)])
    first.close_storage()

    second = _start(data_dir=tmp_path)
    expected = {ALICE: {"producer_byte_rate": 4096.0}, READERS: {"consumer_byte_rate": 500.0}}
    assert second.quotas.entities() == expected
    for node in second.brokers.values():
        assert node.image.client_quotas == expected
    assert second.quotas.broker(1).quota("alice", "readers", "producer_byte_rate") == 4096.0
    assert second.quotas.broker(1).quota("bob", "readers", "consumer_byte_rate") == 500.0
