"""FindCoordinator (key 10), v0-6: which broker coordinates a group or a transactional id.

Theory of operation: the cluster picks the coordinator (`Cluster.coordinator_for`): a stable
hash of the key over the live brokers, or none while that broker is down and not yet fenced,
which clients see as COORDINATOR_NOT_AVAILABLE and retry. v0 asks for one group; v1-3 add
the key type (0 group, 1 transaction); v4 batches keys (`coordinator_keys`) and answers one
entry per key. v5 only allows TRANSACTION_ABORTABLE (KIP-890), never needed here. v6 adds
the share-group key type 2 (KIP-932): share groups are not enabled, so such a key is
INVALID_REQUEST, as a Kafka broker without share groups answers it; so is any other type.

The first lookup of a group or transaction coordinator creates Kafka's internal topic for
it (`__consumer_offsets`, `__transaction_state`; mockbroker.cluster.internal_topics), as a
Kafka broker does. Kafka answers that first lookup COORDINATOR_NOT_AVAILABLE while the topic
is created; mockbroker's controller creates it at once, so the lookup answers directly.

`coordinator_error` is the check every group API runs first: a request for a key this broker
does not coordinate is answered NOT_COORDINATOR, so the client looks the coordinator up again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.internal_topics import GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.find_coordinator import FindCoordinatorRequest

SHARE_KEY_TYPE = 2
BATCHED_FROM_VERSION = 4


def coordinator_error(ctx: RequestContext, key_type: int, key: str) -> ErrorCode:
    """NONE when this broker coordinates `key`, else the error to answer with."""
    owner = ctx.cluster.coordinator_for(key_type, key)
    if owner is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if owner != ctx.broker_id:
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.NONE


def group_error(ctx: RequestContext, group_id: str, require_id: bool = True) -> ErrorCode:
    """Kafka's order for group requests: a valid group id first, then the coordinator."""
    if require_id and not group_id:
        return ErrorCode.INVALID_GROUP_ID
    return coordinator_error(ctx, GROUP_KEY_TYPE, group_id)


def _lookup(ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    if key_type == SHARE_KEY_TYPE:
        error, owner = ErrorCode.INVALID_REQUEST, None
        message: str | None = "Share groups are not enabled on this cluster"
    elif key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        error, owner = ErrorCode.INVALID_REQUEST, None
        message = f"Unknown coordinator type: {key_type}"
    else:
        ctx.cluster.ensure_internal_topic(key_type)
        owner = ctx.cluster.coordinator_for(key_type, key)
        error = ErrorCode.NONE if owner is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE
        message = "NONE" if owner is not None else \
            "The coordinator is not available."
    node = ctx.image.brokers.get(owner) if owner is not None else None
    if owner is not None and node is None:  # this broker's image does not know it yet
        error, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available."
    if error != ErrorCode.NONE or node is None:
        return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": error,
                "error_message": message}
    host, port = ctx.endpoint(node.broker_id, node.host, node.port)  # the request's listener
    return {"key": key, "node_id": node.broker_id, "host": host, "port": port,
            "error_code": ErrorCode.NONE, "error_message": message}


@handler(10, 0, 6)
def handle_find_coordinator(req: FindCoordinatorRequest, ctx: RequestContext) -> dict[str, Any]:
    if ctx.api_version >= BATCHED_FROM_VERSION:
        return {"throttle_time_ms": 0,
                "coordinators": [_lookup(ctx, req.key_type, key)
                                 for key in req.coordinator_keys]}
    key_type = req.key_type if ctx.api_version >= 1 else GROUP_KEY_TYPE
    found = _lookup(ctx, key_type, req.key)
    return {"throttle_time_ms": 0, "error_code": found["error_code"],
            "error_message": found["error_message"], "node_id": found["node_id"],
            "host": found["host"], "port": found["port"]}
