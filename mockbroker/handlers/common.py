"""Checks shared by the partition-level APIs, as the receiving broker sees them.

The decision (leader-epoch fencing, then leadership) is the cluster's
(mockbroker.cluster.log.leadership); this is its handler-side spelling with a RequestContext.
The KIP-951 leader hints (Produce v10+, Fetch v16+) are built here too: a CurrentLeader per
refused partition, and the NodeEndpoints of the leaders so named.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka_protocol_codec import TypedStruct

from mockbroker.cluster import BrokerNode, LeaderCheck, PartitionImage, PartitionLog, TopicImage
from mockbroker.cluster.log.leadership import NO_EPOCH_CHECK
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import PartitionShape, TopicPartition

CONSUMER_REPLICA_ID = -1  # the replica id of a consumer's Fetch and ListOffsets
READ_COMMITTED = 1  # IsolationLevel of Fetch and ListOffsets
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."


def check_leader(ctx: RequestContext, topic_name: str, index: int,
                 current_leader_epoch: int = NO_EPOCH_CHECK,
                 topic: TopicImage | None = None) -> LeaderCheck:
    """Resolve a partition on this broker and apply fencing and leadership checks."""
    return ctx.cluster.check_leader(ctx.broker, topic_name, index, current_leader_epoch, topic)


def current_leader(partition: PartitionImage | None) -> dict[str, int]:
    """KIP-951 CurrentLeader: the leader and leader epoch in this broker's image."""
    if partition is None:
        return {"leader_id": -1, "leader_epoch": -1}
    return {"leader_id": partition.leader, "leader_epoch": partition.leader_epoch}


def leader_endpoints(ctx: RequestContext,
                     parts: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """KIP-951 NodeEndpoints: each leader that a partition's CurrentLeader names, once, with
    its endpoint on the request's listener and its rack."""
    endpoints = {}
    for part in parts:
        leader = part.get("current_leader", {}).get("leader_id", -1)
        node = ctx.image.brokers.get(leader) if leader >= 0 else None
        if node is not None and leader not in endpoints:
            host, port = ctx.endpoint(node.broker_id, node.host, node.port)
            endpoints[leader] = {"node_id": leader, "host": host, "port": port,
                                 "rack": node.rack}
    return [endpoints[k] for k in sorted(endpoints)]


def leader_epoch_cache(log: PartitionLog, partition: PartitionImage | None
                       ) -> list[tuple[int, int]]:
    """The leader's epoch cache as Kafka's leader has it: a partition that never had a
    batch nor a leader change has no entry in mockbroker, where Kafka's Partition.makeLeader
    gave its first leader's epoch one at the log start."""
    if log.epoch_cache or partition is None:
        return log.epoch_cache
    return [(partition.leader_epoch, log.log_start_offset)]


def end_offset_for_epoch(log: PartitionLog, partition: PartitionImage | None,
                         requested: int) -> tuple[int, int]:
    """PartitionLog.end_offset_for_epoch over `leader_epoch_cache` (Kafka's
    LeaderEpochFileCache.endOffsetFor)."""
    if log.epoch_cache or partition is None:
        return log.end_offset_for_epoch(requested)
    [(epoch, start)] = leader_epoch_cache(log, partition)
    if requested == epoch:
        return epoch, log.log_end_offset
    if requested < 0 or requested > epoch:
        return -1, -1
    return requested, start


def epoch_for_offset(log: PartitionLog, offset: int,
                     partition: PartitionImage | None = None) -> int:
    """The leader epoch in which `offset` was written (-1 if unknown); with the partition,
    over `leader_epoch_cache`."""
    cache = log.epoch_cache if partition is None else leader_epoch_cache(log, partition)
    epoch = -1
    for e, start in cache:
        if start <= offset:
            epoch = e
        else:
            break
    return epoch


def replace_partition_entries(response: Mapping[str, Any], topics_key: str, name_key: str,
                              parts_key: str, index_key: str,
                              errors: Mapping[tuple[str, int], int],
                              error_entry: Callable[[int, int], dict[str, Any]]
                              ) -> dict[str, Any]:
    """A copy of a topics -> partitions response in which the partitions in `errors` are
    replaced (or added) by `error_entry(index, code)`, partitions kept in index order."""
    out = dict(response)
    topics = [dict(t) for t in out.get(topics_key) or []]
    by_name = {t[name_key]: t for t in topics}
    for (topic, index), code in sorted(errors.items()):
        entry = by_name.get(topic)
        if entry is None:
            entry = by_name[topic] = {name_key: topic, parts_key: []}
            topics.append(entry)
        parts = [p for p in entry[parts_key] if p[index_key] != index]
        parts.append(error_entry(index, code))
        entry[parts_key] = sorted(parts, key=lambda p: p[index_key])
    out[topics_key] = topics
    return out


# (topics key, topic name key, partitions key, partition index key) of a nested message
NestedPath = tuple[str, str, str, str]


def nested_partition_shape(request: NestedPath, response: NestedPath,
                           error_entry: Callable[[int, int], dict[str, Any]], *,
                           requested: Callable[[BrokerNode, int, Any],
                                               list[TopicPartition]] | None = None,
                           withhold: Callable[[Any, set[TopicPartition]], None] | None = None
                           ) -> PartitionShape:
    """The PartitionShape of an API whose request and response both nest partitions under
    topics: partitions are read from `request` (unless `requested` says otherwise) and
    errors replace entries under `response`, built by `error_entry(index, code)`."""
    topics_key, name_key, parts_key, index_key = request

    def from_request(node: BrokerNode, version: int, body: TypedStruct) -> list[TopicPartition]:
        del node, version
        return [(t[name_key], p[index_key]) for t in body[topics_key] for p in t[parts_key]]

    def with_errors(out: Mapping[str, Any], errors: Mapping[TopicPartition, int],
                    topic_errors: Mapping[str, int]) -> dict[str, Any]:
        del topic_errors
        return replace_partition_entries(out, *response, errors, error_entry)

    return PartitionShape(requested or from_request, with_errors, withhold)
