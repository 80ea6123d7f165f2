"""Admin APIs driven by real clients with their default settings (no api_version pinning):
kafka-python's KafkaAdminClient and confluent-kafka's AdminClient (librdkafka). The brokers run
on a background thread (MockClusterThread) because these clients block."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients
TIMEOUT = 10.0


@pytest.fixture
def cluster() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3) as mock:
        yield mock


def _partitions(cluster: MockClusterThread, topic: str) -> list[tuple[int, ...]]:
    def read() -> list[tuple[int, ...]]:
        found = cluster.cluster.image.topics.get(topic)
        return [] if found is None else [p.replicas for p in found.partitions.values()]
    return cluster.call(read)


def _overrides(cluster: MockClusterThread, topic: str) -> dict[str, str]:
    return cluster.call(lambda: dict(cluster.cluster.image.topic_config(topic)))


# -- kafka-python ----------------------------------------------------------------------------

def test_kafka_python_admin(cluster: MockClusterThread) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("kp", num_partitions=3, replication_factor=3)])
        assert _partitions(cluster, "kp") == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("kp", num_partitions=1, replication_factor=1)])

        admin.create_partitions({"kp": 5})
        assert len(_partitions(cluster, "kp")) == 5

        # default: IncrementalAlterConfigs
        result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp",
                                                     {"retention.ms": "1000"})])
        assert result == {"topic": {"kp": "OK"}}
        assert _overrides(cluster, "kp") == {"retention.ms": "1000"}
        # legacy AlterConfigs keeps the other overrides by sending them along
        result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp",
                                                     {"cleanup.policy": "compact"})],
                                     incremental=False)
        assert result == {"topic": {"kp": "OK"}}
        assert _overrides(cluster, "kp") == {"retention.ms": "1000", "cleanup.policy": "compact"}

        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp")])
        modified = described["topic"]["kp"]
        assert {name: c["value"] for name, c in modified.items()} == {
            "retention.ms": "1000", "cleanup.policy": "compact"}
        assert {c["config_source"] for c in modified.values()} == {"DYNAMIC_TOPIC_CONFIG"}
        everything = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
        assert everything["broker"]["1"]["broker.id"]["value"] == "1"

        admin.delete_topics(["kp"])
        assert _partitions(cluster, "kp") == []
    finally:
        admin.close()


def test_kafka_python_records_and_cluster(cluster: MockClusterThread) -> None:
    from kafka import KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics({"recs": {"num_partitions": 1, "replication_factor": 3}})
        for i in range(4):
            producer.send("recs", b"v%d" % i, partition=0).get(timeout=TIMEOUT)
        deleted = admin.delete_records({TopicPartition("recs", 0): 3})
        assert deleted[TopicPartition("recs", 0)]["low_watermark"] == 3
        described = admin.describe_cluster()
        assert described["cluster_id"] == cluster.cluster.config.cluster_id
        assert sorted(b["broker_id"] for b in described["brokers"]) == [0, 1, 2]
    finally:
        producer.close(timeout=TIMEOUT)
        admin.close()


# -- confluent-kafka -------------------------------------------------------------------------

def test_confluent_admin(cluster: MockClusterThread) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for future in admin.create_topics([NewTopic("ck", 3, 3)]).values():
        future.result(timeout=TIMEOUT)
    assert _partitions(cluster, "ck") == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    with pytest.raises(KafkaException) as failed:
        admin.create_topics([NewTopic("ck", 1, 1)])["ck"].result(timeout=TIMEOUT)
    assert failed.value.args[0].name() == "TOPIC_ALREADY_EXISTS"

    for future in admin.create_partitions([NewPartitions("ck", 4)]).values():
        future.result(timeout=TIMEOUT)
    assert len(_partitions(cluster, "ck")) == 4

    resource = ConfigResource(ResourceType.TOPIC, "ck", incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=TIMEOUT)
    assert _overrides(cluster, "ck") == {"retention.ms": "1000",
                                         "cleanup.policy": "delete,compact"}

    [described] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "ck")]).values()
    configs = described.result(timeout=TIMEOUT)
    assert configs["retention.ms"].value == "1000"
    assert configs["retention.ms"].source == 1  # DYNAMIC_TOPIC_CONFIG
    assert configs["segment.bytes"].is_default
    [broker] = admin.describe_configs([ConfigResource(ResourceType.BROKER, "2")]).values()
    assert broker.result(timeout=TIMEOUT)["node.id"].value == "2"

    description = admin.describe_cluster().result(timeout=TIMEOUT)
    assert description.cluster_id == cluster.cluster.config.cluster_id
    assert sorted(node.id for node in description.nodes) == [0, 1, 2]
    assert description.controller.id == 0

    for future in admin.delete_topics(["ck"]).values():
        future.result(timeout=TIMEOUT)
    assert _partitions(cluster, "ck") == []


def test_confluent_delete_records(cluster: MockClusterThread) -> None:
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for future in admin.create_topics([NewTopic("dr", 1, 3)]).values():
        future.result(timeout=TIMEOUT)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(5):
        producer.produce("dr", b"v%d" % i, partition=0)
    assert producer.flush(TIMEOUT) == 0
    futures = admin.delete_records([TopicPartition("dr", 0, 2)])
    [deleted] = futures.values()
    assert deleted.result(timeout=TIMEOUT).low_watermark == 2
    log = cluster.call(lambda: cluster.cluster.log(
        cluster.cluster.image.topics["dr"].topic_id, 0))
    assert log is not None and log.log_start_offset == 2


def test_elect_leaders_with_clients(cluster: MockClusterThread) -> None:
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka.admin import KafkaAdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for future in admin.create_topics([NewTopic("el", 2, 3)]).values():
        future.result(timeout=TIMEOUT)

    def leaders() -> list[int]:
        return cluster.call(lambda: [p.leader for p in
                                     cluster.cluster.image.topics["el"].partitions.values()])

    cluster.call(cluster.cluster.elect_leader, "el", 0, 2)
    assert leaders() == [2, 1]
    results = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("el", 0)]).result(
        timeout=TIMEOUT)
    assert results == {TopicPartition("el", 0): None}
    assert leaders() == [0, 1]

    cluster.call(cluster.cluster.elect_leader, "el", 1, 0)
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        response = kp.elect_leaders(0, {"el": [0, 1]})  # ELECTION_NOT_NEEDED is ignored
        assert {(t.topic, p.partition_id): p.error_code
                for t in response.replica_election_results for p in t.partition_result} == {
            ("el", 0): 84, ("el", 1): 0}
    finally:
        kp.close()
    assert leaders() == [0, 1]
