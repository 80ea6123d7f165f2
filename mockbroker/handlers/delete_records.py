"""DeleteRecords (key 21), v0-2: advance a partition's log start offset.

Where admin requests are handled: any broker accepts admin requests and applies cluster-wide
changes through the controller; DeleteRecords, however, is a partition-level request that
Kafka answers on the partition leader (clients send it there), so this handler runs on the
receiving broker and requires leadership in its own metadata image
(NOT_LEADER_OR_FOLLOWER otherwise; unknown partitions UNKNOWN_TOPIC_OR_PARTITION).

Per partition, as kafka.cluster.Partition.deleteRecordsOnLeader does: a topic whose
cleanup.policy lacks "delete" refuses (POLICY_VIOLATION); offset -1 means the high watermark;
a negative offset or one beyond the high watermark is OFFSET_OUT_OF_RANGE. The answer is the
new low watermark (log start offset), which never moves backwards; replication is perfect in
mockbroker, so every replica's log start moves at once and no purgatory wait is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.handlers.common import check_leader
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.delete_records import DeleteRecordsRequest

HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1


@handler(21, 0, 2)
def handle_delete_records(req: DeleteRecordsRequest, ctx: RequestContext) -> dict[str, Any]:
    # Kafka maps the request by partition: a partition named twice is one entry, the last
    # offset asked for it, answered where it first appears
    wanted: dict[tuple[str, int], int] = {}
    for topic in req.topics:
        for p in topic.partitions:
            wanted[(topic.name, p.partition_index)] = p.offset
    topics = []
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            key = (topic.name, p.partition_index)
            if key in wanted:
                parts.append(_delete(ctx, topic.name, p.partition_index, wanted.pop(key)))
        topics.append({"name": topic.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


def _delete(ctx: RequestContext, topic: str, index: int, offset: int) -> dict[str, Any]:
    def result(error: ErrorCode, low: int = INVALID_LOW_WATERMARK) -> dict[str, Any]:
        return {"partition_index": index, "low_watermark": low, "error_code": error}

    check = check_leader(ctx, topic, index)
    if check.error != ErrorCode.NONE or check.log is None:
        return result(check.error)
    policy = ctx.cluster.topic_config(topic, ctx.image, ctx.broker_id)["cleanup.policy"]
    if "delete" not in [p.strip() for p in policy.split(",")]:
        return result(ErrorCode.POLICY_VIOLATION)
    log = check.log
    target = log.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0 or target > log.high_watermark:
        return result(ErrorCode.OFFSET_OUT_OF_RANGE)
    return result(ErrorCode.NONE, log.delete_records_before(target))
