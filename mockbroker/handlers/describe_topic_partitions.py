"""DescribeTopicPartitions (key 75, KIP-966), v0: topics and their partitions, paginated.

Theory of operation, as Kafka's broker answers it from its metadata image (the receiving
broker's read image here, as for Metadata): the topics are the named ones, or every topic
when none is named, in name order, starting at the cursor's topic (and, in that topic, at
the cursor's partition). Partitions are added until min(ResponsePartitionLimit, 2000) have
been given; a topic cut short sets NextCursor to its next partition, and a limit reached
exactly at the end of a topic sets NextCursor to the next topic's partition 0 (whether or
not that topic exists, as Kafka does). A named topic that does not exist is an entry with
UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name); when listing
every topic there are none. A cursor naming a topic outside the named list, or a negative
partition, is INVALID_REQUEST for every named topic (Kafka's error response).

Eligible leader replicas (KIP-966's ELR) are off, as on a Kafka cluster without
eligible.leader.replicas.version: both ELR lists are empty. Nothing is auto-created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import ClusterError, TopicImage
from mockbroker.cluster.internal_topics import INTERNAL_TOPICS
from mockbroker.cluster.kafka_uuid import ZERO_UUID
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.metadata import ALL_TOPIC_OPERATIONS
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.describe_topic_partitions import (
        DescribeTopicPartitionsRequest,
    )

BROKER_PARTITION_LIMIT = 2000  # Kafka's max.request.partition.size.limit default


def _partition(ctx: RequestContext, topic: TopicImage, index: int,
               live: frozenset[int]) -> dict[str, Any]:
    p = topic.partitions[index]
    return {"error_code": ErrorCode.NONE if p.leader in live else ErrorCode.LEADER_NOT_AVAILABLE,
            "partition_index": index, "leader_id": p.leader, "leader_epoch": p.leader_epoch,
            "replica_nodes": list(p.replicas), "isr_nodes": list(p.isr),
            "eligible_leader_replicas": [], "last_known_elr": [],
            "offline_replicas": [r for r in p.replicas if r not in live]}


def _missing(ctx: RequestContext, name: str) -> dict[str, Any]:
    try:
        ctx.cluster.validate_topic_name(name)
        error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    except ClusterError:
        error = ErrorCode.INVALID_TOPIC_EXCEPTION
    return {"error_code": error, "name": name, "topic_id": ZERO_UUID,
            "is_internal": name in INTERNAL_TOPICS, "partitions": [],
            "topic_authorized_operations": ALL_TOPIC_OPERATIONS}


def _refused(req: DescribeTopicPartitionsRequest, error: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "next_cursor": None,
            "topics": [{"error_code": error, "name": t.name, "topic_id": ZERO_UUID,
                        "is_internal": False, "partitions": []} for t in req.topics]}


@handler(75, 0, 0)
def handle_describe_topic_partitions(req: DescribeTopicPartitionsRequest, ctx: RequestContext) -> dict[str, Any]:
    image = ctx.read_image
    cursor = req.cursor
    every_topic = not req.topics
    names = sorted(image.topics) if every_topic else sorted({t.name for t in req.topics})
    if cursor is not None:
        if cursor.partition_index < 0 or (not every_topic and cursor.topic_name not in names):
            return _refused(req, ErrorCode.INVALID_REQUEST)
        names = [n for n in names if n >= cursor.topic_name]
    live = frozenset(b.broker_id for b in image.live_brokers())
    remaining = min(req.response_partition_limit, BROKER_PARTITION_LIMIT)
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in names:
        if remaining <= 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = image.topics.get(name)
        if topic is None:
            topics.append(_missing(ctx, name))
            continue
        first = cursor.partition_index if cursor is not None and cursor.topic_name == name \
            else 0
        indexes = sorted(i for i in topic.partitions if i >= first)
        given = indexes[:remaining]
        topics.append({"error_code": ErrorCode.NONE, "name": name, "topic_id": topic.topic_id,
                       "is_internal": name in INTERNAL_TOPICS,
                       "partitions": [_partition(ctx, topic, i, live) for i in given],
                       "topic_authorized_operations": ALL_TOPIC_OPERATIONS})
        if len(given) < len(indexes):
            next_cursor = {"topic_name": name, "partition_index": indexes[len(given)]}
            break
        remaining -= len(given)
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}
