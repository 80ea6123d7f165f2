"""The transactional producer's APIs: AddPartitionsToTxn (key 24) 0-5, AddOffsetsToTxn (25)
0-4, EndTxn (26) 0-5 and TxnOffsetCommit (28) 0-5.

Theory of operation: each handler checks that this broker coordinates the request's key
(the transactional.id; for TxnOffsetCommit the group), resolves what only the broker can
resolve (whether the partitions exist), and hands the rest to the cluster's transaction
coordinator, which owns the state machine. Errors that name PRODUCER_FENCED are sent as
INVALID_PRODUCER_EPOCH to versions before KIP-588 (v2 here); TxnOffsetCommit answers
INVALID_PRODUCER_EPOCH at every version, as Kafka's verification does.

KIP-890 versions: AddPartitionsToTxn v4+ is the broker-to-coordinator form (a batch of
transactions, each VerifyOnly -- part 1's verification, TRANSACTION_ABORTABLE for a partition
outside the transaction -- or an add, as a Kafka 4.0 leader sends for Produce v12); v5 of it,
AddOffsetsToTxn v4, EndTxn v4 and TxnOffsetCommit v4 only let the client read
TRANSACTION_ABORTABLE. Transactions v2 (part 2): EndTxn v5 bumps the epoch and answers the
producer id and epoch to use next; TxnOffsetCommit v5 (same body as v4) adds the group to the
transaction itself.

TxnOffsetCommit stores its offsets as pending in the group offsets store under the producer
id; EndTxn makes them visible (commit) or drops them (abort).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.producers.txn_coordinator import (
    TRANSACTION_VERSION_1,
    TRANSACTION_VERSION_2,
)
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler
from mockbroker.handlers.txn_common import (
    GROUP_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
    coordinator_error,
    fenced_for_version,
)

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.add_offsets_to_txn import AddOffsetsToTxnRequest
    from kafka_protocol_codec.generated.add_partitions_to_txn import AddPartitionsToTxnRequest
    from kafka_protocol_codec.generated.end_txn import EndTxnRequest
    from kafka_protocol_codec.generated.txn_offset_commit import TxnOffsetCommitRequest

FENCED_FROM = 2  # AddPartitionsToTxn, AddOffsetsToTxn, EndTxn
BROKER_FORM_FROM = 4  # AddPartitionsToTxn: batched transactions, VerifyOnly
END_TXN_BUMP_FROM = 5  # EndTxn: transactions v2
TXN_OFFSET_COMMIT_ABORTABLE_FROM = 4
TXN_OFFSET_COMMIT_ADDS_GROUP_FROM = 5  # transactions v2


def _partition_exists(ctx: RequestContext, topic: str, partition: int) -> bool:
    image = ctx.image.topics.get(topic)
    return image is not None and partition in image.partitions


# -- AddPartitionsToTxn ---------------------------------------------------------------------

@handler(24, 0, 5)
def handle_add_partitions_to_txn(req: AddPartitionsToTxnRequest, ctx: RequestContext) -> dict[str, Any]:
    if ctx.api_version >= BROKER_FORM_FROM:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "results_by_transaction": [_one_transaction(ctx, txn)
                                           for txn in req.transactions]}
    errors = _add_partitions_errors(
        ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
        req.v3_and_below_producer_epoch, req.v3_and_below_topics, verify_only=False)
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(errors)}


def _one_transaction(ctx: RequestContext,
                     txn: AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction) -> dict[str, Any]:
    errors = _add_partitions_errors(ctx, txn.transactional_id, txn.producer_id,
                                    txn.producer_epoch, txn.topics, txn.verify_only)
    return {"transactional_id": txn.transactional_id, "topic_results": _topic_results(errors)}


def _add_partitions_errors(ctx: RequestContext, transactional_id: str, producer_id: int,
                           epoch: int, topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic]
                           | list[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
                                  .AddPartitionsToTxnTopic],
                           verify_only: bool) -> dict[tuple[str, int], ErrorCode]:
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    unknown = {tp for tp in wanted if not _partition_exists(ctx, *tp)}
    if unknown:
        return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
    error = coordinator_error(ctx, TRANSACTION_KEY_TYPE, transactional_id)
    coordinator = ctx.cluster.transactions
    if error == ErrorCode.NONE and verify_only:
        return coordinator.verify_partitions(transactional_id, producer_id, epoch, wanted)
    if error == ErrorCode.NONE:
        # the broker form adds for a leader serving Produce v12 (transactions v2)
        version = TRANSACTION_VERSION_2 if ctx.api_version >= BROKER_FORM_FROM \
            else TRANSACTION_VERSION_1
        error = coordinator.add_partitions(transactional_id, producer_id, epoch, wanted,
                                           version)
    return dict.fromkeys(wanted, fenced_for_version(error, ctx.api_version, FENCED_FROM))


def _topic_results(errors: dict[tuple[str, int], ErrorCode]) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), code in errors.items():
        topics.setdefault(topic, []).append({"partition_index": partition,
                                             "partition_error_code": code})
    return [{"name": name, "results_by_partition": parts} for name, parts in topics.items()]


# -- AddOffsetsToTxn ------------------------------------------------------------------------

@handler(25, 0, 4)
def handle_add_offsets_to_txn(req: AddOffsetsToTxnRequest, ctx: RequestContext) -> dict[str, Any]:
    error = coordinator_error(ctx, TRANSACTION_KEY_TYPE, req.transactional_id)
    if error == ErrorCode.NONE:
        error = ctx.cluster.transactions.add_offsets(
            req.transactional_id, req.producer_id, req.producer_epoch, req.group_id)
    return {"throttle_time_ms": 0,
            "error_code": fenced_for_version(error, ctx.api_version, FENCED_FROM)}


# -- EndTxn ---------------------------------------------------------------------------------

@handler(26, 0, 5)
def handle_end_txn(req: EndTxnRequest, ctx: RequestContext) -> dict[str, Any]:
    error = coordinator_error(ctx, TRANSACTION_KEY_TYPE, req.transactional_id)
    producer_id, epoch = -1, -1
    if error == ErrorCode.NONE:
        version = TRANSACTION_VERSION_2 if ctx.api_version >= END_TXN_BUMP_FROM \
            else TRANSACTION_VERSION_1
        result = ctx.cluster.transactions.end_txn_result(
            req.transactional_id, req.producer_id, req.producer_epoch, bool(req.committed),
            version)
        error, producer_id, epoch = result.error, result.producer_id, result.producer_epoch
    return {"throttle_time_ms": 0,
            "error_code": fenced_for_version(error, ctx.api_version, FENCED_FROM),
            "producer_id": producer_id, "producer_epoch": epoch}


# -- TxnOffsetCommit ------------------------------------------------------------------------

def _group_member_error(ctx: RequestContext, req: TxnOffsetCommitRequest) -> ErrorCode:
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


@handler(28, 0, 5)
def handle_txn_offset_commit(req: TxnOffsetCommitRequest, ctx: RequestContext) -> dict[str, Any]:
    error = coordinator_error(ctx, GROUP_KEY_TYPE, req.group_id)
    store = ctx.cluster.groups.offsets
    if error == ErrorCode.NONE:
        error = _group_member_error(ctx, req)
    if error == ErrorCode.NONE:
        error = ctx.cluster.transactions.check_offset_commit(
            req.transactional_id, req.group_id, req.producer_id, req.producer_epoch,
            add_group=ctx.api_version >= TXN_OFFSET_COMMIT_ADDS_GROUP_FROM,
            not_in_transaction=ErrorCode.TRANSACTION_ABORTABLE
            if ctx.api_version >= TXN_OFFSET_COMMIT_ABORTABLE_FROM
            else ErrorCode.INVALID_TXN_STATE)
    if error == ErrorCode.PRODUCER_FENCED:
        # Kafka checks the producer through the transaction verification, whose answer
        # turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH (AddPartitionsToTxnManager)
        error = ErrorCode.INVALID_PRODUCER_EPOCH
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
