"""WriteTxnMarkers (key 27) v1 (Kafka 4 refuses v0): transaction markers written on a partition leader's
request, as Kafka's transaction coordinator sends them to brokers and as admin clients send
them to abort a hanging transaction (KIP-664: kafka-transactions abort).

Each partition named for each marker is answered on its own, as Kafka's KafkaApis does:
- the usual leadership checks of this broker (UNKNOWN_TOPIC_OR_PARTITION,
  NOT_LEADER_OR_FOLLOWER);
- NOT_ENOUGH_REPLICAS when the ISR is below min.insync.replicas (markers are appended with
  acks=all);
- the producer state checks of Kafka's ProducerStateManager: a marker whose producer epoch
  is older than the one the partition last saw is INVALID_PRODUCER_EPOCH, one whose
  coordinator epoch is older than the last marker's is TRANSACTION_COORDINATOR_FENCED;
- otherwise the COMMIT or ABORT control batch is appended (PartitionLog.append_marker: the
  producer's open transaction on the partition closes, an abort enters the aborted index,
  the last stable offset moves). A marker on __consumer_offsets also completes the
  producer's pending transactional offset commits, as Kafka's group coordinator does when
  its partition gets the marker (mockbroker keeps those per producer, not per partition).
The answer is sent once the marker is on the leader; replication to the followers follows
as for any append.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.internal_topics import OFFSETS_TOPIC
from mockbroker.handlers.common import check_leader
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.write_txn_markers import WriteTxnMarkersRequest


@handler(27, 1, 1)
def handle_write_txn_markers(req: WriteTxnMarkersRequest, ctx: RequestContext) -> dict[str, Any]:
    markers = []
    for marker in req.markers:
        topics = [{"name": topic.name, "partitions": [
            {"partition_index": index, "error_code": _write_marker(ctx, marker, topic.name, index)}
            for index in topic.partition_indexes]} for topic in marker.topics]
        markers.append({"producer_id": marker.producer_id, "topics": topics})
    return {"markers": markers}


def _write_marker(ctx: RequestContext, marker: WriteTxnMarkersRequest.WritableTxnMarker,
                  topic: str, index: int) -> ErrorCode:
    check = check_leader(ctx, topic, index)
    if check.error != ErrorCode.NONE:
        return check.error
    log, partition = check.log, check.partition
    if log is None or partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if len(partition.isr) < int(ctx.cluster.topic_config(topic)["min.insync.replicas"]):
        return ErrorCode.NOT_ENOUGH_REPLICAS
    entry = log.producer_states.get(marker.producer_id)
    if entry is not None and marker.producer_epoch < entry.epoch:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if entry is not None and marker.coordinator_epoch < entry.coordinator_epoch:
        return ErrorCode.TRANSACTION_COORDINATOR_FENCED
    log.append_marker(marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                      bool(marker.transaction_result), partition.leader_epoch, ctx.now_ms())
    if topic == OFFSETS_TOPIC:
        ctx.cluster.transactions.offsets.complete_pending(marker.producer_id,
                                                          bool(marker.transaction_result))
    return ErrorCode.NONE
