"""The transactional producer's APIs: AddPartitionsToTxn (key 24) 0-3, AddOffsetsToTxn (25)
0-3, EndTxn (26) 0-3 and TxnOffsetCommit (28) 0-3.

Theory of operation: each handler checks that this broker coordinates the request's key
(the transactional.id; for TxnOffsetCommit the group), resolves what only the broker can
resolve (whether the partitions exist), and hands the rest to the cluster's transaction
coordinator, which owns the state machine. AddPartitionsToTxn v4+ is the broker-to-broker
verification form (KIP-890) and is not advertised; the v4 forms of the others belong to
transaction protocol version 2, which this broker does not offer either. Errors that name
PRODUCER_FENCED are sent as INVALID_PRODUCER_EPOCH to versions before KIP-588 (v2 here, v3
for TxnOffsetCommit).

TxnOffsetCommit stores its offsets as pending in the group offsets store under the producer
id; EndTxn makes them visible (commit) or drops them (abort).
"""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler
from mockbroker.handlers.txn_common import (
    GROUP_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
    coordinator_error,
    fenced_for_version,
)

FENCED_FROM = 2  # AddPartitionsToTxn, AddOffsetsToTxn, EndTxn
TXN_OFFSET_COMMIT_FENCED_FROM = 3


def _partition_exists(ctx: RequestContext, topic: str, partition: int) -> bool:
    image = ctx.image.topics.get(topic)
    return image is not None and partition in image.partitions


# -- AddPartitionsToTxn ---------------------------------------------------------------------

@handler(24, 0, 3)
def handle_add_partitions_to_txn(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    wanted = [(t.name, p) for t in req.v3_and_below_topics for p in t.partitions]
    unknown = {tp for tp in wanted if not _partition_exists(ctx, *tp)}
    if unknown:
        errors = {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                  else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
    else:
        error = coordinator_error(ctx, TRANSACTION_KEY_TYPE, req.v3_and_below_transactional_id)
        if error == ErrorCode.NONE:
            error = ctx.cluster.transactions.add_partitions(
                req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                req.v3_and_below_producer_epoch, wanted)
        error = fenced_for_version(error, ctx.api_version, FENCED_FROM)
        errors = dict.fromkeys(wanted, error)
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), code in errors.items():
        topics.setdefault(topic, []).append({"partition_index": partition,
                                             "partition_error_code": code})
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        {"name": name, "results_by_partition": parts} for name, parts in topics.items()]}


# -- AddOffsetsToTxn ------------------------------------------------------------------------

@handler(25, 0, 3)
def handle_add_offsets_to_txn(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    error = coordinator_error(ctx, TRANSACTION_KEY_TYPE, req.transactional_id)
    if error == ErrorCode.NONE:
        error = ctx.cluster.transactions.add_offsets(
            req.transactional_id, req.producer_id, req.producer_epoch, req.group_id)
    return {"throttle_time_ms": 0,
            "error_code": fenced_for_version(error, ctx.api_version, FENCED_FROM)}


# -- EndTxn ---------------------------------------------------------------------------------

@handler(26, 0, 3)
def handle_end_txn(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    error = coordinator_error(ctx, TRANSACTION_KEY_TYPE, req.transactional_id)
    if error == ErrorCode.NONE:
        error = ctx.cluster.transactions.end_txn(
            req.transactional_id, req.producer_id, req.producer_epoch, bool(req.committed))
    return {"throttle_time_ms": 0,
            "error_code": fenced_for_version(error, ctx.api_version, FENCED_FROM)}


# -- TxnOffsetCommit ------------------------------------------------------------------------

def _group_member_error(ctx: RequestContext, req: Struct) -> ErrorCode:
    """The group's checks (v3 carries member, instance and generation; for a KIP-848
    consumer group the generation is the member epoch)."""
    groups = ctx.cluster.groups
    member_id, epoch = (req.member_id, req.generation_id) if ctx.api_version >= 3 else ("", -1)
    consumer = ctx.cluster.consumer_groups.validate_txn_offset_commit(req.group_id, member_id,
                                                                      epoch)
    if consumer is not None:
        return consumer
    if ctx.api_version < 3:
        return ErrorCode(groups.validate_txn_offset_commit(req.group_id, "", None, -1))
    return ErrorCode(groups.validate_txn_offset_commit(req.group_id, req.member_id,
                                                       req.group_instance_id,
                                                       req.generation_id))


@handler(28, 0, 3)
def handle_txn_offset_commit(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    error = coordinator_error(ctx, GROUP_KEY_TYPE, req.group_id)
    store = ctx.cluster.groups.offsets
    if error == ErrorCode.NONE:
        error = _group_member_error(ctx, req)
    if error == ErrorCode.NONE:
        error = ctx.cluster.transactions.check_offset_commit(
            req.transactional_id, req.group_id, req.producer_id, req.producer_epoch)
    error = fenced_for_version(error, ctx.api_version, TXN_OFFSET_COMMIT_FENCED_FROM)
    topics = []
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            code = error
            if code == ErrorCode.NONE and not _partition_exists(ctx, topic.name,
                                                                p.partition_index):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if code == ErrorCode.NONE:
                leader_epoch = p.committed_leader_epoch if ctx.api_version >= 2 else -1
                store.add_pending(req.group_id, req.producer_id, topic.name,
                                  p.partition_index, p.committed_offset, leader_epoch,
                                  p.committed_metadata)
            parts.append({"partition_index": p.partition_index, "error_code": code})
        topics.append({"name": topic.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
