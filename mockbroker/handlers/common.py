"""Checks shared by the partition-level APIs: existence, leader-epoch fencing, leadership.

Kafka's order, on the receiving broker's own view: the request's CurrentLeaderEpoch first
(older -> FENCED_LEADER_EPOCH, newer -> UNKNOWN_LEADER_EPOCH, -1 -> no check), then whether
this broker leads the partition (NOT_LEADER_OR_FOLLOWER).
"""

from __future__ import annotations

from typing import NamedTuple

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import PartitionImage, PartitionLog, TopicImage
from mockbroker.handlers.context import RequestContext

NO_EPOCH_CHECK = -1


class PartitionCheck(NamedTuple):
    error: ErrorCode
    topic: TopicImage | None
    partition: PartitionImage | None
    log: PartitionLog | None


def check_leader(ctx: RequestContext, topic_name: str, index: int,
                 current_leader_epoch: int = NO_EPOCH_CHECK,
                 topic: TopicImage | None = None) -> PartitionCheck:
    """Resolve a partition on this broker and apply fencing and leadership checks."""
    if topic is None:
        topic = ctx.image.topics.get(topic_name)
    part = topic.partitions.get(index) if topic is not None else None
    if topic is None or part is None:
        return PartitionCheck(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic, None, None)
    if current_leader_epoch != NO_EPOCH_CHECK:
        if current_leader_epoch < part.leader_epoch:
            return PartitionCheck(ErrorCode.FENCED_LEADER_EPOCH, topic, part, None)
        if current_leader_epoch > part.leader_epoch:
            return PartitionCheck(ErrorCode.UNKNOWN_LEADER_EPOCH, topic, part, None)
    if part.leader != ctx.broker_id:
        return PartitionCheck(ErrorCode.NOT_LEADER_OR_FOLLOWER, topic, part, None)
    log = ctx.cluster.log(topic.topic_id, index)
    if log is None:
        return PartitionCheck(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic, part, None)
    return PartitionCheck(ErrorCode.NONE, topic, part, log)


def epoch_for_offset(log: PartitionLog, offset: int) -> int:
    """The leader epoch in which `offset` was written (-1 if unknown)."""
    epoch = -1
    for e, start in log.epoch_cache:
        if start <= offset:
            epoch = e
        else:
            break
    return epoch
