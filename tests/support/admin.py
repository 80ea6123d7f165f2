"""Raw-request steps shared by the admin, metadata and produce tests, and their API keys."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import Cluster
from mockbroker.embedded import MockCluster
from tests.support.rawclient import RawClient, Requester, connect_broker

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
DESCRIBE_CLUSTER, DELETE_RECORDS, ELECT_LEADERS = 60, 21, 43
PRODUCE, LIST_OFFSETS, API_VERSIONS = 0, 2, 18
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


@asynccontextmanager
async def running_cluster(**kwargs: Any) -> AsyncIterator[MockCluster]:
    """A 3-broker MockCluster (test modules wrap this in their own fixture)."""
    async with MockCluster(**{"brokers": 3, **kwargs}) as cluster:
        yield cluster


def topic_spec(name: str, partitions: int = -1, rf: int = -1,
               configs: Mapping[str, str | None] | None = None,
               assignments: Mapping[int, Sequence[int]] | None = None) -> dict[str, Any]:
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": [{"partition_index": p, "broker_ids": list(b)}
                            for p, b in (assignments or {}).items()],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}


async def create_topics(client: Requester, *specs: dict[str, Any], version: int = 7,
                        validate_only: bool = False) -> list[Struct]:
    body = {"topics": list(specs), "timeout_ms": 5000, "validate_only": validate_only}
    response = await client.request(CREATE_TOPICS, version, body)
    return list(response.topics)


async def create_topic(client: Requester, name: str, partitions: int = -1, rf: int = -1,
                       configs: Mapping[str, str] | None = None) -> Struct:
    [result] = await create_topics(client, topic_spec(name, partitions, rf, configs))
    assert result.error_code == 0, result
    return result


async def leader_client(mc: MockCluster, topic: str, partition: int) -> RawClient:
    part = mc.cluster.image.partition(topic, partition)
    assert part is not None
    return await connect_broker(mc, part.leader)


async def produce(client: Requester, topic: str, partition: int, values: Sequence[bytes],
                  *, timestamp: int = 1_000, version: int = 9) -> Struct:
    batch = build_batch([RecordSpec(value=v) for v in values], base_timestamp=timestamp)
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": batch}]}]}
    response = await client.request(PRODUCE, version, body)
    return response.responses[0].partition_responses[0]


def fence(cluster: Cluster, broker_id: int) -> None:
    """Take a broker out of the live set (as a missed heartbeat would) and propagate."""
    cluster.controller.fence_broker(broker_id)
    cluster.propagate()


def by_name(items: Sequence[Struct], key: str = "name") -> dict[Any, Struct]:
    return {item[key]: item for item in items}
