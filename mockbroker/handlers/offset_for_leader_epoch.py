"""OffsetForLeaderEpoch (key 23), v0-4: the end offset of a leader epoch (KIP-101/KIP-320).

Consumers use it after a leader change to detect log truncation: the leader answers the
largest epoch <= the one asked for and where it ends, from its leader-epoch cache. Fencing
on CurrentLeaderEpoch applies from v2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.handlers.common import (
    check_leader,
    end_offset_for_epoch,
    nested_partition_shape,
)
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler, partition_shape

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.offset_for_leader_epoch import OffsetForLeaderEpochRequest


def _partition_entry(index: int, error: int) -> dict[str, Any]:
    return {"error_code": error, "partition": index, "leader_epoch": -1, "end_offset": -1}


@handler(23, 0, 4)
def handle_offset_for_leader_epoch(req: OffsetForLeaderEpochRequest, ctx: RequestContext) -> dict[str, Any]:
    topics = []
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            epoch_check = p.current_leader_epoch if ctx.api_version >= 2 else -1
            check = check_leader(ctx, topic.topic, p.partition, epoch_check)
            entry = _partition_entry(p.partition, check.error)
            if check.error == ErrorCode.NONE and check.log is not None:
                epoch, end = end_offset_for_epoch(check.log, check.partition, p.leader_epoch)
                entry["leader_epoch"], entry["end_offset"] = epoch, end
            parts.append(entry)
        topics.append({"topic": topic.topic, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


# -- per-partition errors from above (the fault injector) -----------------------------------

partition_shape(23, nested_partition_shape(
    ("topics", "topic", "partitions", "partition"),
    ("topics", "topic", "partitions", "partition"), _partition_entry))
