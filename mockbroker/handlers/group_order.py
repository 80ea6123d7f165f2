"""The order in which Kafka's group coordinator answers a batch of groups.

Kafka's GroupCoordinatorService answers DescribeGroups, ConsumerGroupDescribe and
DeleteGroups per __consumer_offsets partition: it groups the requested ids in a
java.util.HashMap keyed by the partition each id hashes to (Utils.abs(id.hashCode()) %
offsets.topic.num.partitions), asks each partition's shard in that map's iteration order, and
concatenates the answers; within a partition the ids keep the request's order, except for
DeleteGroups, which first checks every group of a partition into a HashMap keyed by group id
and answers from that map's iteration: the refused groups first, then the deleted ones, each
in the map's order. A HashMap
iterates its keys by bucket (the TopicPartition's hash, spread, masked by the table size,
which doubles past three quarters full), colliding keys in insertion order. `kafka_order`
reproduces that order so a batch is answered as Kafka answers it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from mockbroker.cluster.internal_topics import OFFSETS_TOPIC
from mockbroker.cluster.java_order import hash_map_capacity, spread
from mockbroker.cluster.java_order import java_string_hash as unsigned_string_hash


def java_string_hash(text: str) -> int:
    """String.hashCode, signed as a Java int."""
    h = unsigned_string_hash(text)
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition(group_id: str, partitions: int) -> int:
    """Kafka's partitionFor: Utils.abs(hashCode) % partitions (abs(MIN_VALUE) is 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def _bucket_hash(partition: int) -> int:
    """HashMap.hash of TopicPartition(__consumer_offsets, partition)."""
    return spread(31 * (31 + partition) + java_string_hash(OFFSETS_TOPIC))


def hash_map_order(keys: Sequence[str]) -> list[int]:
    """The indexes of `keys` in the iteration order of a HashMap they were put into."""
    mask = hash_map_capacity(len(keys)) - 1
    return sorted(range(len(keys)), key=lambda i: spread(java_string_hash(keys[i])) & mask)


def kafka_order(group_ids: Sequence[str], partitions: int,
                failed: Collection[int] | None = None) -> list[int]:
    """The indexes of `group_ids` in the order Kafka answers them. With `failed` (the
    indexes DeleteGroups refuses), each partition's groups come in its check map's order,
    the failed ones first."""
    by_partition: dict[int, list[int]] = {}
    for index, group_id in enumerate(group_ids):
        by_partition.setdefault(offsets_partition(group_id, partitions), []).append(index)
    if failed is not None:
        for p, indexes in by_partition.items():
            mapped = [indexes[i] for i in hash_map_order([group_ids[j] for j in indexes])]
            by_partition[p] = sorted(mapped, key=lambda i: i not in failed)
    mask = hash_map_capacity(len(by_partition)) - 1
    keys = list(by_partition)  # insertion order breaks ties within a bucket
    keys.sort(key=lambda p: _bucket_hash(p) & mask)
    return [index for p in keys for index in by_partition[p]]


__all__ = ["hash_map_order", "java_string_hash", "kafka_order", "offsets_partition"]
