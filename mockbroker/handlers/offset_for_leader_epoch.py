"""OffsetForLeaderEpoch (key 23), v0-4: the end offset of a leader epoch (KIP-101/KIP-320).

Consumers use it after a leader change to detect log truncation: the leader answers the
largest epoch <= the one asked for and where it ends, from its leader-epoch cache. Fencing
on CurrentLeaderEpoch applies from v2.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import BrokerNode
from mockbroker.handlers.common import check_leader, replace_partition_entries
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import PartitionShape, TopicPartition, handler, partition_shape


def _partition_entry(index: int, error: int) -> dict[str, Any]:
    return {"error_code": error, "partition": index, "leader_epoch": -1, "end_offset": -1}


@handler(23, 0, 4)
def handle_offset_for_leader_epoch(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    topics = []
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            epoch_check = p.current_leader_epoch if ctx.api_version >= 2 else -1
            check = check_leader(ctx, topic.topic, p.partition, epoch_check)
            entry = _partition_entry(p.partition, check.error)
            if check.error == ErrorCode.NONE and check.log is not None:
                epoch, end = check.log.end_offset_for_epoch(p.leader_epoch)
                entry["leader_epoch"], entry["end_offset"] = epoch, end
            parts.append(entry)
        topics.append({"topic": topic.topic, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


# -- per-partition errors from above (the fault injector) -----------------------------------

def _requested(node: BrokerNode, version: int, body: Struct) -> list[TopicPartition]:
    del node, version
    return [(t.topic, p.partition) for t in body.topics for p in t.partitions]


def _with_errors(response: Mapping[str, Any], errors: Mapping[TopicPartition, int],
                 topic_errors: Mapping[str, int]) -> dict[str, Any]:
    del topic_errors
    return replace_partition_entries(response, "topics", "topic", "partitions", "partition",
                                     errors, _partition_entry)


partition_shape(23, PartitionShape(_requested, _with_errors))
