"""UnregisterBroker (key 64), v0: remove a broker's registration from the metadata log.

As KRaft brokers forward it to the controller: a broker id that is not registered is
BROKER_ID_NOT_REGISTERED ("Broker ID <id> is not currently registered"); a registered one is
fenced and unregistered (Cluster.unregister_broker), and a broker that is still running
registers again at once with a new epoch, as a Kafka broker refused at its next heartbeat
does. Needs ALTER on the cluster (the authorization table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.unregister_broker import UnregisterBrokerRequest


@handler(64, 0, 0)
def handle_unregister_broker(req: UnregisterBrokerRequest, ctx: RequestContext) -> dict[str, Any]:
    cluster = ctx.cluster
    broker_id = req.broker_id
    if broker_id not in cluster.image.brokers:  # the controller's view
        return {"throttle_time_ms": 0, "error_code": ErrorCode.BROKER_ID_NOT_REGISTERED,
                "error_message": f"Broker ID {broker_id} is not currently registered"}
    cluster.unregister_broker(broker_id)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None}
