"""DescribeLogDirs and AlterReplicaLogDirs: each broker's logical log directories (log.dirs),
the partitions each holds with their stored bytes, and replicas moved between directories
through the metadata log; over the raw codec (every version) and with kafka-python."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.cluster.kraft.metadata_log import PARTITION_CHANGE
from mockbroker.cluster.log.log_dir_ids import TOTAL_BYTES, log_dir_ids
from mockbroker.embedded import MockCluster, MockClusterThread
from tests.support.admin import create_topic, leader_client, produce, running_cluster
from tests.support.rawclient import connect_broker

DESCRIBE_LOG_DIRS, ALTER_REPLICA_LOG_DIRS = 35, 34
DIRS = ("/data/a", "/data/b")


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with running_cluster(log_dirs=DIRS, kafka_version="all") as cluster:  # v0 too
        yield cluster


def _summary(response: object) -> dict[str, dict[str, list[tuple[int, int]]]]:
    out: dict[str, dict[str, list[tuple[int, int]]]] = {}
    for result in response.results:  # type: ignore[attr-defined]
        assert result.error_code == E.NONE
        out[result.log_dir] = {t.name: [(p.partition_index, p.partition_size)
                                        for p in t.partitions] for t in result.topics}
        for topic in result.topics:
            assert all((p.offset_lag, p.is_future_key) == (0, False) for p in topic.partitions)
    return out


async def test_describe_every_version(mc: MockCluster) -> None:
    async with await connect_broker(mc, 0) as client:
        await create_topic(client, "t", partitions=4, rf=3)
    async with await leader_client(mc, "t", 1) as leader:
        assert (await produce(leader, "t", 1, [b"x" * 100])).error_code == E.NONE
    size = mc.cluster.log(mc.cluster.image.topics["t"].topic_id, 1).size_bytes  # type: ignore
    assert size > 100
    async with await connect_broker(mc, 2) as client:
        for version in range(5):
            response = await client.request(DESCRIBE_LOG_DIRS, version, {"topics": None})
            # replicas of partitions 0 and 2 in the first directory, 1 and 3 in the second
            assert _summary(response) == {"/data/a": {"t": [(0, 0), (2, 0)]},
                                          "/data/b": {"t": [(1, size), (3, 0)]}}
            if version >= 4:
                assert [(r.total_bytes, r.usable_bytes) for r in response.results] == [
                    (TOTAL_BYTES, TOTAL_BYTES), (TOTAL_BYTES, TOTAL_BYTES - size)]
        filtered = await client.request(DESCRIBE_LOG_DIRS, 4, {"topics": [
            {"topic": "t", "partitions": [1, 2]}, {"topic": "nope", "partitions": [0]}]})
        assert _summary(filtered) == {"/data/a": {"t": [(2, 0)]}, "/data/b": {"t": [(1, size)]}}


async def test_alter_replica_log_dir(mc: MockCluster) -> None:
    async with await connect_broker(mc, 1) as client:
        await create_topic(client, "t", partitions=2, rf=2)
        replicas = mc.cluster.image.partition("t", 0).replicas  # type: ignore[union-attr]
        assert (replicas, mc.cluster.image.partition("t", 1).replicas) == (  # type: ignore
            (0, 1), (1, 2))
        outsider = 2
        epoch_before = mc.cluster.image.partition("t", 0).leader_epoch  # type: ignore
        broker = replicas[1]
        async with await connect_broker(mc, broker) as owner:
            response = await owner.request(ALTER_REPLICA_LOG_DIRS, 2, {"dirs": [
                {"path": "/data/b", "topics": [{"name": "t", "partitions": [0]}]},
                {"path": "/elsewhere", "topics": [{"name": "t", "partitions": [1]}]}]})
            assert [(r.topic_name, [(p.partition_index, p.error_code) for p in r.partitions])
                    for r in response.results] == [
                ("t", [(0, E.NONE), (1, E.LOG_DIR_NOT_FOUND)])]
            described = _summary(await owner.request(DESCRIBE_LOG_DIRS, 4, {"topics": None}))
            # partition 1 was placed in /data/b; partition 0 moved there from /data/a
            assert described == {"/data/a": {}, "/data/b": {"t": [(0, 0), (1, 0)]}}
        record = mc.cluster.controller.log.records[-1]
        ids = log_dir_ids(mc.cluster.config.cluster_id, broker, DIRS)
        assert record.record_type == PARTITION_CHANGE
        assert record.data["directories"][list(replicas).index(broker)] == ids["/data/b"]
        part = mc.cluster.image.partition("t", 0)
        assert part is not None and part.leader_epoch == epoch_before  # no epoch bump
        async with await connect_broker(mc, outsider) as other:
            response = await other.request(ALTER_REPLICA_LOG_DIRS, 1, {"dirs": [
                {"path": "/data/a", "topics": [{"name": "t", "partitions": [0]},
                                               {"name": "nope", "partitions": [0]}]}]})
            assert [(r.topic_name, [(p.partition_index, p.error_code) for p in r.partitions])
                    for r in response.results] == [
                ("t", [(0, E.REPLICA_NOT_AVAILABLE)]), ("nope", [(0, E.REPLICA_NOT_AVAILABLE)])]


@pytest.fixture
def threaded() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=2, log_dirs=DIRS) as mock:
        yield mock


@pytest.mark.clients
def test_kafka_python_log_dirs(threaded: MockClusterThread) -> None:
    from kafka import TopicPartitionReplica
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=threaded.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("k", num_partitions=1, replication_factor=2)])
        before = admin.describe_log_dirs(brokers=[1])
        admin.alter_replica_log_dirs({TopicPartitionReplica("k", 0, 1): "/data/b"})
        after = admin.describe_log_dirs(brokers=[1])
    finally:
        admin.close()

    def expected(holder: str) -> list[dict[str, object]]:
        partition = {"partition_index": 0, "partition_size": 0, "offset_lag": 0,
                     "is_future_key": False}
        return [{"broker": 1, "log_dirs": [
            {"error_code": 0, "log_dir": path, "total_bytes": TOTAL_BYTES,
             "usable_bytes": TOTAL_BYTES,
             "topics": [{"name": "k", "partitions": [partition]}] if path == holder else []}
            for path in DIRS]}]
    assert (before, after) == (expected("/data/a"), expected("/data/b"))


async def test_sizes_shrink_when_retention_deletes_segments(mc: MockCluster) -> None:
    await mc.control.create_topic("r", partitions=1, replication_factor=1,
                                  configs={"internal.segment.bytes": 150, "retention.ms": -1})
    async with await leader_client(mc, "r", 0) as leader:  # (the records are from 1970)
        for value in (b"a" * 40, b"b" * 40, b"c" * 40):  # one batch, one segment each
            assert (await produce(leader, "r", 0, [value])).error_code == E.NONE
        log = mc.cluster.log(mc.cluster.image.topics["r"].topic_id, 0)
        assert log is not None and len(log.segments) == 3
        full = log.size_bytes
        mc.cluster.set_configs([(2, "r", "retention.bytes", str(full // 3))])
        await mc.control.run_log_cleaner(topic="r")
        assert log.log_start_offset == 2 and log.size_bytes == full // 3
        described = _summary(await leader.request(DESCRIBE_LOG_DIRS, 4, {"topics": [
            {"topic": "r", "partitions": [0]}]}))
        assert sorted(p for d in described.values() for p in d.get("r", [])) == [
            (0, full // 3)]
