"""WriteTxnMarkers (key 27) v1: transaction markers written by whoever sends them.

In Kafka the transaction coordinator sends this to partition leaders; a client holding
CLUSTER_ACTION (or ALTER) on the cluster may send it too, and the leader appends a COMMIT or
ABORT control batch for the producer, as for the coordinator's own (the coordinator of this
cluster writes its markers directly: cluster/transactions.py). Each partition answers
UNKNOWN_TOPIC_OR_PARTITION when this broker does not know it, NOT_LEADER_OR_FOLLOWER when it
does not lead it. A marker for the offsets topic ends the producer's pending transactional
offset commits, as Kafka's group coordinator does when its marker arrives.
"""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.internal_topics import OFFSETS_TOPIC
from mockbroker.handlers.common import check_leader
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler


def _write(ctx: RequestContext, marker: Struct, topic: str, index: int) -> ErrorCode:
    check = check_leader(ctx, topic, index)
    if check.error != ErrorCode.NONE or check.log is None or check.partition is None:
        return check.error if check.error != ErrorCode.NONE \
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    commit = bool(marker.transaction_result)
    check.log.append_marker(marker.producer_id, marker.producer_epoch,
                            marker.coordinator_epoch, commit, check.partition.leader_epoch,
                            ctx.cluster.clock.now_ms())
    if topic == OFFSETS_TOPIC:
        ctx.cluster.groups.offsets.complete_pending(marker.producer_id, commit)
    return ErrorCode.NONE


@handler(27, 1, 1)
def handle_write_txn_markers(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    markers = []
    for marker in req.markers:
        topics = []
        for topic in marker.topics:
            topics.append({"name": topic.name, "partitions": [
                {"partition_index": index, "error_code": _write(ctx, marker, topic.name, index)}
                for index in topic.partition_indexes]})
        markers.append({"producer_id": marker.producer_id, "topics": topics})
    return {"markers": markers}
