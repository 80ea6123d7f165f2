"""Which broker may serve a partition: leader-epoch fencing, then leadership.

Kafka's order, on the receiving broker's own (possibly stale) metadata image: the request's
CurrentLeaderEpoch first (older -> FENCED_LEADER_EPOCH, newer -> UNKNOWN_LEADER_EPOCH, -1 ->
no check, KIP-320/KIP-359), then whether this broker leads the partition
(NOT_LEADER_OR_FOLLOWER). Produce, Fetch, ListOffsets and OffsetForLeaderEpoch all decide
this way, so the decision lives here once. A consumer's Fetch v11+ may be served by any
replica (KIP-392, `leader_only=False`): the same epoch checks against this broker's image,
then NOT_LEADER_OR_FOLLOWER only when it holds no replica of the partition.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import NamedTuple

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.kraft.metadata_log import MetadataImage, PartitionImage, TopicImage
from mockbroker.cluster.log.partition import PartitionLog

NO_EPOCH_CHECK = -1

LogLookup = Callable[[uuid.UUID, int], PartitionLog | None]


class LeaderCheck(NamedTuple):
    error: ErrorCode
    topic: TopicImage | None
    partition: PartitionImage | None
    log: PartitionLog | None


def check_leader(image: MetadataImage, broker_id: int, topic_name: str, index: int,
                 logs: LogLookup, current_leader_epoch: int = NO_EPOCH_CHECK,
                 topic: TopicImage | None = None, *, leader_only: bool = True) -> LeaderCheck:
    """Resolve a partition as broker `broker_id` sees it and apply fencing and leadership
    (with `leader_only=False`, any replica of it passes)."""
    if topic is None:
        topic = image.topics.get(topic_name)
    part = topic.partitions.get(index) if topic is not None else None
    if topic is None or part is None:
        return LeaderCheck(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic, None, None)
    if current_leader_epoch != NO_EPOCH_CHECK:
        if current_leader_epoch < part.leader_epoch:
            return LeaderCheck(ErrorCode.FENCED_LEADER_EPOCH, topic, part, None)
        if current_leader_epoch > part.leader_epoch:
            return LeaderCheck(ErrorCode.UNKNOWN_LEADER_EPOCH, topic, part, None)
    if part.leader != broker_id and (leader_only or broker_id not in part.replicas):
        return LeaderCheck(ErrorCode.NOT_LEADER_OR_FOLLOWER, topic, part, None)
    log = logs(topic.topic_id, index)
    if log is None:
        error = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if part.leader == broker_id
                 else ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return LeaderCheck(error, topic, part, None)
    return LeaderCheck(ErrorCode.NONE, topic, part, log)
