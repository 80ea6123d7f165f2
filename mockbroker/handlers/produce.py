"""Produce (key 0): advertised 0-12, handled from v3 (magic-2 record batches); v0-2 close
the connection, as a Kafka 4 broker that advertises them (KAFKA-18659) but cannot read them.

The decisions about a produced batch are the cluster's (`Cluster.produce`, see
mockbroker.cluster.log.produce_path for Kafka's order of checks: fencing and leadership, min ISR for
acks=all, batch format, CRC and size, transaction verification, idempotent sequences and
duplicates, the append and the last stable offset). This handler reads the wire shape, asks
the cluster once per partition, and writes each AppendResult as a response entry. acks=0 gets
no response when every partition succeeded, and a closed connection when any failed
(handlers.acks.produce_answer, which the dispatcher applies after authorization and quota
recording, so a partition refused by an ACL counts as well). With acks=all the answer waits
until replication covers every batch (mockbroker.handlers.acks).

From v10 (KIP-951) a partition refused with NOT_LEADER_OR_FOLLOWER carries CurrentLeader (the
leader and epoch in this broker's image) and the response lists those leaders'
NodeEndpoints, so the producer can send to the new leader without a Metadata request.
A transactional batch is verified with the transaction coordinator (KIP-890 part 1): a
partition outside the producer's transaction is INVALID_TXN_STATE before v11 and
TRANSACTION_ABORTABLE from v11; v12 (same body as v11) is transactions v2: the partition is
added to the transaction instead (mockbroker.cluster.producers.txn_coordinator).

Clients cannot write to the internal topics (`__consumer_offsets`, `__transaction_state`):
INVALID_TOPIC_EXCEPTION before any other check, as Kafka refuses appends to them.

Two opt-in extensions (tagged fields of Produce v9+, registered in
mockbroker.cluster.wire_extensions, documented in docs/extensions.md) come first:
- per topic, PartitionCount (KIP-253): when set and different from the number of
  partitions in this broker's image, every partition of the topic gets INVALID_PARTITIONS
  (37), with a message saying which side is behind;
- per partition, CurrentLeaderEpoch (KIP-359): checked against this broker's view
  before leadership, as on Fetch: older -> FENCED_LEADER_EPOCH, newer ->
  UNKNOWN_LEADER_EPOCH. Absent (-1): no check, as real clients expect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import AppendResult
from mockbroker.cluster.internal_topics import INTERNAL_TOPICS
from mockbroker.cluster.log.produce_path import ZSTD_FROM_PRODUCE_VERSION
from mockbroker.cluster.producers.txn_coordinator import ProduceVerification
from mockbroker.cluster.wire_extensions import NO_CHECK
from mockbroker.handlers.acks import Pending, answer_when_replicated
from mockbroker.handlers.common import current_leader, leader_endpoints, nested_partition_shape
from mockbroker.handlers.context import CloseAfterRequest, RequestContext
from mockbroker.handlers.registry import TopicPartition, handler, partition_shape

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.produce import ProduceRequest

FIRST_HANDLED_VERSION = 3
LEADER_HINTS_FROM_VERSION = 10  # KIP-951
LAST_VERSION = 12


# Produce version -> what a transactional batch asks of the coordinator (KIP-890)
VERIFICATION = tuple(ProduceVerification.for_produce_version(v)
                     for v in range(LAST_VERSION + 1))


def _partition_result(index: int, error: int, base_offset: int = -1,
                      log_append_time: int = -1, log_start: int = -1,
                      message: str | None = None,
                      record_errors: tuple[tuple[int, str], ...] = ()) -> dict[str, Any]:
    return {"index": index, "error_code": error, "base_offset": base_offset,
            "log_append_time_ms": log_append_time, "log_start_offset": log_start,
            "record_errors": [{"batch_index": i, "batch_index_error_message": why}
                              for i, why in record_errors] if record_errors else [],
            "error_message": message}


TRANSACTIONAL_ATTRIBUTE = 0x10
ATTRIBUTES_OFFSET, MAGIC_OFFSET = 21, 16


def carries_transactional_batch(req: ProduceRequest) -> bool:
    """Whether any partition's records start with a transactional batch (Kafka's
    RequestUtils.hasTransactionalRecords)."""
    for topic in req.topic_data:
        for partition in topic.partition_data:
            records = partition.records
            if records is not None and len(records) > ATTRIBUTES_OFFSET + 1 \
                    and records[MAGIC_OFFSET] == 2 \
                    and records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_ATTRIBUTE:
                return True
    return False


@handler(0, 0, LAST_VERSION)
def handle_produce(req: ProduceRequest, ctx: RequestContext) -> Any:
    responses: list[dict[str, Any]] = []
    pending: Pending = []
    acks = req.acks
    if ctx.api_version < FIRST_HANDLED_VERSION:
        # advertised for old librdkafka (KAFKA-18659), but Kafka 4 cannot read them
        raise CloseAfterRequest("Produce v0-2 (message format v0/v1) is not supported")
    if req.transactional_id is None \
            and carries_transactional_batch(req):
        # KafkaApis: transactional records need an authorized transactional id, and a null
        # one never is (with or without an authorizer)
        return {"responses": [
            {"name": topic.name, "partition_responses": [
                _partition_result(p.index, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
                for p in topic.partition_data]}
            for topic in req.topic_data], "throttle_time_ms": 0}
    _keep_last_of_each_partition(req)
    for topic in req.topic_data:
        name = topic.name
        count = topic.partition_count
        stale = None if count == NO_CHECK else _partition_count_error(ctx, name, count)
        if stale is not None:
            results = [_partition_result(p.index, ErrorCode.INVALID_PARTITIONS, message=stale)
                       for p in topic.partition_data]
        else:
            results = [produce_partition(ctx, name, p.index, p.records, acks,
                                         p.current_leader_epoch, pending)
                       for p in topic.partition_data]
        responses.append({"name": name, "partition_responses": results})
    response: dict[str, Any] = {"responses": responses, "throttle_time_ms": 0}
    if ctx.api_version >= LEADER_HINTS_FROM_VERSION:
        response["node_endpoints"] = leader_endpoints(
            ctx, (p for t in responses for p in t["partition_responses"]))
    if pending:
        return answer_when_replicated(ctx, response, pending, req.timeout_ms)
    return response


def _keep_last_of_each_partition(req: ProduceRequest) -> None:
    """Kafka reads a Produce request into a map by partition: a partition named twice is
    written once, with its last records, answered where it first appears."""
    topics = req.topic_data
    if len(topics) == 1 and len(topics[0].partition_data) < 2:
        return  # one partition (the usual request of a single batch): nothing named twice
    last: dict[tuple[str, int], Any] = {}
    for topic in topics:
        for p in topic.partition_data:
            last[(topic.name, p.index)] = p
    if len(last) == sum(len(t.partition_data) for t in topics):
        return  # no partition named twice: the request stays as it is
    for topic in req.topic_data:
        kept = []
        for p in topic.partition_data:
            chosen = last.pop((topic.name, p.index), None)
            if chosen is not None:
                kept.append(chosen)
        topic.partition_data = kept
    req.topic_data = [t for t in req.topic_data if t.partition_data]


def _partition_count_error(ctx: RequestContext, topic: str, count: int) -> str | None:
    """KIP-253: the producer's partition count against this broker's (None: no mismatch)."""
    if count == NO_CHECK:
        return None
    known = ctx.image.topics.get(topic)
    if known is None or len(known.partitions) == count:
        return None
    side = "the producer's metadata is stale" if count < len(known.partitions) \
        else "this broker's metadata is behind"
    return (f"Partition count {count} does not match the {len(known.partitions)} partitions "
            f"of topic '{topic}' on broker {ctx.broker_id}: {side}")


def produce_partition(ctx: RequestContext, topic: str, index: int,
                      records: bytes | memoryview | None,
                      acks: int, current_leader_epoch: int = NO_CHECK,
                      pending: Pending | None = None) -> dict[str, Any]:
    version = ctx.api_version
    if topic in INTERNAL_TOPICS:  # only the coordinators write there
        # ReplicaManager throws a plain InvalidTopicException: no message in the answer
        return _partition_result(index, ErrorCode.INVALID_TOPIC_EXCEPTION)
    cluster = ctx.cluster
    result: AppendResult = cluster.produce(
        ctx.broker, topic, index, records, acks=acks, current_leader_epoch=current_leader_epoch,
        zstd_allowed=version >= ZSTD_FROM_PRODUCE_VERSION,
        verification=VERIFICATION[version])
    error = result.error
    # a refused append's log start offset is the model's to say (cluster/log/produce_path.py: the
    # partition's after a log-layer refusal, -1 after the others, as Kafka's ReplicaManager)
    entry = _partition_result(index, error, result.base_offset,
                              result.log_append_time_ms, result.log_start_offset,
                              result.message, result.record_errors)
    if version >= LEADER_HINTS_FROM_VERSION and error == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        entry["current_leader"] = current_leader(ctx.image.partition(topic, index))
    if acks == -1 and pending is not None:
        wait = cluster.replication_wait(ctx.broker, topic, index, result)
        if wait is not None:
            pending.append((entry, wait))
    return entry


# -- per-partition errors from above (the fault injector) -----------------------------------

def _withhold(body: ProduceRequest, errored: set[TopicPartition]) -> None:
    """Errored partitions are taken out of the request: nothing is written for them."""
    for topic in body.topic_data:
        topic.partition_data = [p for p in topic.partition_data
                                if (topic.name, p.index) not in errored]
    body.topic_data = [t for t in body.topic_data if t.partition_data]


partition_shape(0, nested_partition_shape(
    ("topic_data", "name", "partition_data", "index"),
    ("responses", "name", "partition_responses", "index"), _partition_result,
    withhold=_withhold))
