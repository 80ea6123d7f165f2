"""Transaction inspection for admin clients (KIP-664): DescribeProducers (key 61) v0,
DescribeTransactions (65) v0 and ListTransactions (66) 0-1.

DescribeProducers goes to a partition's leader and lists the producer state it keeps for
that partition (epoch, last sequence, last timestamp of a batch or marker, the open
transaction's first offset). The other two
are answered from the transaction coordinator: DescribeTransactions per transactional.id by
its coordinator (NOT_COORDINATOR elsewhere; the partitions of topics the principal may not
describe left out), ListTransactions by every broker for the ids it
coordinates, so an admin client that asks all brokers sees each transaction once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.producers.txn_coordinator import TxnState
from mockbroker.cluster.security.authorizer import AclOperation, ResourceType
from mockbroker.handlers.authorization_checks import allowed
from mockbroker.handlers.common import UNKNOWN_TOPIC_MESSAGE, check_leader
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler
from mockbroker.handlers.txn_common import TRANSACTION_KEY_TYPE, coordinator_error

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.describe_producers import DescribeProducersRequest
    from kafka_protocol_codec.generated.describe_transactions import DescribeTransactionsRequest
    from kafka_protocol_codec.generated.list_transactions import ListTransactionsRequest

# Kafka's state names, including two this coordinator never reports
KNOWN_STATES = {s.value for s in TxnState} | {"PrepareEpochFence", "Dead"}


@handler(61, 0, 0)
def handle_describe_producers(req: DescribeProducersRequest, ctx: RequestContext) -> dict[str, Any]:
    """KafkaApis answers a topic it does not know with ApiError's default message; the
    replica manager's partition errors carry none."""
    topics = []
    for topic in req.topics:
        parts = []
        known = topic.name in ctx.image.topics
        for index in topic.partition_indexes:
            check = check_leader(ctx, topic.name, index)
            entry: dict[str, Any] = {"partition_index": index, "error_code": check.error,
                                     "error_message": None if known else UNKNOWN_TOPIC_MESSAGE,
                                     "active_producers": []}
            if check.error == ErrorCode.NONE and check.log is not None:
                for pid, state in sorted(check.log.producer_states.items()):
                    txn_start = state.current_txn_first_offset
                    entry["active_producers"].append({
                        "producer_id": pid, "producer_epoch": state.epoch,
                        "last_sequence": state.last_seq,
                        "last_timestamp": -1 if state.last_timestamp is None
                        else state.last_timestamp,
                        "coordinator_epoch": state.coordinator_epoch,
                        "current_txn_start_offset": -1 if txn_start is None else txn_start})
            parts.append(entry)
        topics.append({"name": topic.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


# Kafka's default messages of the errors DescribeProducers answers per topic (ApiError)
TOPIC_DENIED_MESSAGE = "Topic authorization failed."


@handler(65, 0, 0)
def handle_describe_transactions(req: DescribeTransactionsRequest, ctx: RequestContext) -> dict[str, Any]:
    states = []
    for txn_id in req.transactional_ids:
        # an error entry keeps the schema's defaults (zeros), as Kafka's does
        entry: dict[str, Any] = {"error_code": ErrorCode.NONE, "transactional_id": txn_id,
                                 "transaction_state": "", "transaction_timeout_ms": 0,
                                 "transaction_start_time_ms": 0, "producer_id": 0,
                                 "producer_epoch": 0, "topics": []}
        error = ErrorCode.INVALID_REQUEST if not txn_id \
            else coordinator_error(ctx, TRANSACTION_KEY_TYPE, txn_id)
        meta = ctx.cluster.transactions.get(txn_id) if error == ErrorCode.NONE else None
        if error == ErrorCode.NONE and meta is None:
            error = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        entry["error_code"] = error
        if meta is not None:
            topics: dict[str, list[int]] = {}
            for topic, partition in meta.sorted_partitions():
                # only the topics the principal may describe, as Kafka's KafkaApis filters
                if allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic):
                    topics.setdefault(topic, []).append(partition)
            entry.update(transaction_state=meta.state.value,
                         transaction_timeout_ms=meta.timeout_ms,
                         transaction_start_time_ms=meta.start_ms,
                         producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
                         topics=[{"topic": t, "partitions": ps} for t, ps in topics.items()])
        states.append(entry)
    return {"throttle_time_ms": 0, "transaction_states": states}


@handler(66, 0, 1)
def handle_list_transactions(req: ListTransactionsRequest, ctx: RequestContext) -> dict[str, Any]:
    wanted = set(req.state_filters)
    unknown = sorted(wanted - KNOWN_STATES)
    duration = req.duration_filter if ctx.api_version >= 1 else -1
    found = ctx.cluster.transactions.list_transactions(wanted, set(req.producer_id_filters),
                                                      duration)
    mine = [m for m in found
            if ctx.cluster.coordinator_for(TRANSACTION_KEY_TYPE, m.transactional_id)
            == ctx.broker_id]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "unknown_state_filters": unknown,
            "transaction_states": [{"transactional_id": m.transactional_id,
                                    "producer_id": m.producer_id,
                                    "transaction_state": m.state.value} for m in mine]}
