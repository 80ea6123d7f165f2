"""InitProducerId (key 22), v0-4: producer ids for idempotent producers.

Without a transactional id every call gets a fresh producer id at epoch 0, as Kafka's
coordinator does (the KIP-360 fields v3+ are ignored for idempotent producers because a new
id already resets all sequence state). Transactional ids are the transaction coordinator's
business and answered there when transactions are enabled.
"""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler


@handler(22, 0, 4)
def handle_init_producer_id(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    if req.transactional_id is not None:
        txn = getattr(ctx.cluster, "transactions", None)
        if txn is None:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    "producer_id": -1, "producer_epoch": -1}
        return txn.init_producer_id(req, ctx)  # type: ignore[no-any-return]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "producer_id": ctx.cluster.allocate_producer_id(), "producer_epoch": 0}
