"""DescribeTopicPartitions (KIP-966) through kafka-python's admin `describe_topic_partitions`,
paging with its cursor until the broker sends none."""

from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient

from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients


def test_kafka_python_pages_through_every_partition() -> None:
    with MockClusterThread(brokers=3, trace_buffer=1000) as mock:
        mock.control.create_topic("beta", partitions=3)
        mock.control.create_topic("alpha", partitions=2)
        state = mock.control.state()["topics"]
        admin = KafkaAdminClient(bootstrap_servers=mock.bootstrap_servers)
        try:
            seen: list[tuple[str | None, int]] = []
            cursors = []
            cursor = None
            for _ in range(10):  # 5 partitions, 2 per page: 3 pages
                page = admin.describe_topic_partitions(
                    ["alpha", "beta", "missing"], response_partition_limit=2, cursor=cursor)
                for topic in page["topics"]:
                    if topic["name"] == "missing":
                        assert (topic["error_code"], topic["partitions"]) == (3, [])
                        continue
                    assert topic["error_code"] == 0 and topic["is_internal"] is False
                    assert str(topic["topic_id"]) == state[topic["name"]]["topic_id"]
                    for part in topic["partitions"]:
                        want = state[topic["name"]]["partitions"][part["partition_index"]]
                        assert (part["leader_id"], part["leader_epoch"], part["replica_nodes"],
                                part["isr_nodes"], part["offline_replicas"]) == (
                            want["leader"], want["leader_epoch"], want["replicas"],
                            want["isr"], [])
                        assert part["eligible_leader_replicas"] is None  # empty: ELR is off
                        seen.append((topic["name"], part["partition_index"]))
                cursor = page["next_cursor"]
                cursors.append(cursor)
                if cursor is None:
                    break
        finally:
            admin.close()
        assert seen == [("alpha", 0), ("alpha", 1), ("beta", 0), ("beta", 1), ("beta", 2)]
        assert cursors == [{"topic_name": "beta", "partition_index": 0},
                           {"topic_name": "beta", "partition_index": 2}, None]
        versions = {r["version"] for r in mock.control.trace(
            None, api="DescribeTopicPartitions")["requests"]}
        assert versions == {0}
