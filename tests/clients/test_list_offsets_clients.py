"""ListOffsets through real admin clients: max timestamp (KIP-734) with confluent-kafka's
`list_offsets(OffsetSpec.max_timestamp())`, and every special timestamp through kafka-python's
`list_partition_offsets`, which sends ListOffsets v10 to a default mockbroker (earliest local,
KIP-405; latest tiered, KIP-1005)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import OffsetSpec as ConfluentSpec
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, OffsetSpec

from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

TOPIC = "stamped"
# CreateTime timestamps out of order, the largest twice: max timestamp is the first 9000
TIMESTAMPS = [1_000, 9_000, 5_000, 9_000, 2_000]


@pytest.fixture
def stamped() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3, trace_buffer=2000) as mock:
        mock.control.create_topic(TOPIC, partitions=1)
        producer = Producer({"bootstrap.servers": mock.bootstrap_servers, "linger.ms": 0})
        for index, timestamp in enumerate(TIMESTAMPS):
            producer.produce(TOPIC, b"v%d" % index, timestamp=timestamp)
            assert producer.flush(10) == 0  # one batch each
        yield mock


def _list_offsets_versions(mock: MockClusterThread) -> set[int]:
    return {r["version"] for r in mock.control.trace(None, api="ListOffsets")["requests"]}


def test_confluent_max_timestamp(stamped: MockClusterThread) -> None:
    admin = AdminClient({"bootstrap.servers": stamped.bootstrap_servers})
    partition = ConfluentPartition(TOPIC, 0)
    got = {}
    for name, spec in [("max", ConfluentSpec.max_timestamp()),
                       ("earliest", ConfluentSpec.earliest()),
                       ("latest", ConfluentSpec.latest()),
                       ("at 4000", ConfluentSpec.for_timestamp(4_000))]:
        result = admin.list_offsets({partition: spec})[partition].result(10)
        got[name] = (result.offset, result.timestamp, result.leader_epoch)
    assert got == {"max": (1, 9_000, 0), "earliest": (0, -1, 0), "latest": (5, -1, 0),
                   "at 4000": (1, 9_000, 0)}
    assert _list_offsets_versions(stamped) == {7}  # librdkafka's newest


def test_kafka_python_every_special_timestamp(stamped: MockClusterThread) -> None:
    admin = KafkaAdminClient(bootstrap_servers=stamped.bootstrap_servers)
    partition = TopicPartition(TOPIC, 0)
    try:
        got = {spec.name: admin.list_partition_offsets({partition: spec})[partition]
               for spec in OffsetSpec}
    finally:
        admin.close()
    assert {name: (o.offset, o.timestamp, o.leader_epoch) for name, o in got.items()} == {
        "LATEST": (5, -1, 0), "EARLIEST": (0, -1, 0), "MAX_TIMESTAMP": (1, 9_000, 0),
        "EARLIEST_LOCAL": (0, -1, 0),  # the whole log is local
        "LATEST_TIERED": (-1, -1, None)}  # nothing is tiered (epoch -1 reads as None)
    assert _list_offsets_versions(stamped) == {10}
