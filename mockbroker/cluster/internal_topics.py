"""Kafka's internal topics: `__consumer_offsets` and `__transaction_state`.

Theory of operation: Kafka creates each on first use, when a client first looks up a group
coordinator (FindCoordinator key type 0) or a transaction coordinator (key type 1), with the
coordinator's fixed settings: offsets.topic.num.partitions (50) or
transaction.state.log.num.partitions (50) partitions, a replication factor of
offsets.topic.replication.factor / transaction.state.log.replication.factor (3; here
min(3, brokers), as a small cluster's test configuration sets it), and the topic configs the
coordinators pass (compacted, 100 MiB segments; the transaction log uncompressed, without
unclean elections, min.insync.replicas transaction.state.log.min.isr = 2, capped at the
replication factor). `ensure_internal_topic` creates the topic once through the controller (also when
a Metadata request auto-creates it by name),
so it appears in Metadata (IsInternal) and DescribeConfigs like any topic; reset removes it
with the rest.

mockbroker keeps group offsets and transaction state in memory, not in these logs, and picks
coordinators by hashing the key over the brokers (mockbroker.cluster.groups.classic_group_model),
not as the leader of the key's partition: the topics are there for what clients observe of them.
Clients may read them, but not write to them (Produce answers INVALID_TOPIC_EXCEPTION, as
Kafka answers appends to internal topics from outside the coordinators).
"""

from __future__ import annotations

from dataclasses import dataclass

METADATA_TOPIC = "__cluster_metadata"  # the KRaft metadata log's topic (not a client topic)
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_TOPIC})
COORDINATOR_SEGMENT_BYTES = "104857600"  # offsets.topic.segment.bytes, its txn counterpart
TRANSACTION_LOG_MIN_ISR = 2  # transaction.state.log.min.isr

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
# the coordinator key type whose state each internal topic holds
COORDINATOR_KEY_TYPES = {OFFSETS_TOPIC: GROUP_KEY_TYPE, TRANSACTION_TOPIC: TRANSACTION_KEY_TYPE}


@dataclass(frozen=True)
class InternalTopic:
    """A coordinator's internal topic (__consumer_offsets, __transaction_state) as it is
    created on first use."""

    name: str
    partitions: int
    configs: dict[str, str]


def internal_topic_for(key_type: int, replication_factor: int, offsets_partitions: int,
                       transaction_partitions: int) -> InternalTopic | None:
    """The topic a coordinator of `key_type` keeps its state in (None for other types)."""
    if key_type == GROUP_KEY_TYPE:
        return InternalTopic(OFFSETS_TOPIC, offsets_partitions, {
            "cleanup.policy": "compact", "segment.bytes": COORDINATOR_SEGMENT_BYTES,
            "compression.type": "producer"})
    if key_type == TRANSACTION_KEY_TYPE:
        return InternalTopic(TRANSACTION_TOPIC, transaction_partitions, {
            "cleanup.policy": "compact", "segment.bytes": COORDINATOR_SEGMENT_BYTES,
            "compression.type": "uncompressed", "unclean.leader.election.enable": "false",
            "min.insync.replicas": str(min(TRANSACTION_LOG_MIN_ISR, replication_factor))})
    return None
