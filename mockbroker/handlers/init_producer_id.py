"""InitProducerId (key 22), v0-5: producer ids and epochs for idempotent and transactional
producers.

Without a transactional id every call gets a fresh producer id at epoch 0, as Kafka does:
a new id resets all sequence state, so the KIP-360 fields (v3+) are ignored there. With a
transactional id the request belongs to that id's transaction coordinator (another broker
answers NOT_COORDINATOR) and the coordinator state machine decides: a new epoch fences the
previous producer, an ongoing transaction is aborted first (CONCURRENT_TRANSACTIONS, the
client retries), and v3+ requests carrying the producer id and epoch recover by bumping the
epoch (KIP-360). PRODUCER_FENCED exists from v4 (KIP-588); older versions get
INVALID_PRODUCER_EPOCH instead. v5 (KIP-890) only lets the client read TRANSACTION_ABORTABLE,
which InitProducerId never answers here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler
from mockbroker.handlers.txn_common import (
    TRANSACTION_KEY_TYPE,
    coordinator_error,
    fenced_for_version,
)

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.init_producer_id import InitProducerIdRequest

FIRST_KIP360_VERSION = 3
FIRST_PRODUCER_FENCED_VERSION = 4


def _answer(error: ErrorCode, producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "producer_id": producer_id,
            "producer_epoch": epoch}


@handler(22, 0, 5)
def handle_init_producer_id(req: InitProducerIdRequest, ctx: RequestContext) -> dict[str, Any]:
    txn_id = req.transactional_id
    if txn_id is None:
        return _answer(ErrorCode.NONE, ctx.cluster.allocate_producer_id(), 0)
    if txn_id == "":
        return _answer(ErrorCode.INVALID_REQUEST)
    error = coordinator_error(ctx, TRANSACTION_KEY_TYPE, txn_id)
    if error != ErrorCode.NONE:
        return _answer(error)
    expected_id, expected_epoch = -1, -1
    if ctx.api_version >= FIRST_KIP360_VERSION:
        expected_id, expected_epoch = req.producer_id, req.producer_epoch
    result = ctx.cluster.transactions.init_producer_id(
        txn_id, req.transaction_timeout_ms, expected_id, expected_epoch)
    error = fenced_for_version(result.error, ctx.api_version, FIRST_PRODUCER_FENCED_VERSION)
    if error != ErrorCode.NONE:
        return _answer(error)
    return _answer(error, result.producer_id, result.producer_epoch)
