"""GetTelemetrySubscriptions (key 71) and PushTelemetry (key 72), v0: client metrics (KIP-714).

The decisions (instance ids, subscription ids, throttling, size and compression checks,
decoding the OTLP payload) are the cluster's ClientTelemetry
(cluster/client_telemetry/telemetry_receiver.py); these handlers translate requests and answers. A
client is identified to the model by its client id and connection address (whose ApiVersions
announced the software name and version). Both APIs are advertised only while client telemetry is
enabled (api_versions.py), as Kafka advertises them only with a client-telemetry metrics reporter; a
request that arrives anyway is answered, as Kafka's broker answers it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.client_telemetry.telemetry_receiver import ACCEPTED_COMPRESSION
from mockbroker.cluster.kafka_uuid import ZERO_UUID
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.get_telemetry_subscriptions import (
        GetTelemetrySubscriptionsRequest,
    )
    from kafka_protocol_codec.generated.push_telemetry import PushTelemetryRequest

GET_TELEMETRY_SUBSCRIPTIONS = 71
PUSH_TELEMETRY = 72
TELEMETRY_APIS = frozenset((GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY))


@handler(GET_TELEMETRY_SUBSCRIPTIONS, 0, 0)
def handle_get_telemetry_subscriptions(req: GetTelemetrySubscriptionsRequest, ctx: RequestContext) -> dict[str, Any]:
    telemetry = ctx.cluster.telemetry
    answer = telemetry.get_subscriptions(ctx.broker_id, req.client_instance_id,
                                         ctx.client_id, ctx.client_address)
    instance = answer.instance
    if instance is None:
        return {"throttle_time_ms": 0, "error_code": answer.error_code,
                "client_instance_id": ZERO_UUID, "subscription_id": 0,
                "accepted_compression_types": [], "push_interval_ms": 0,
                "telemetry_max_bytes": 0, "delta_temporality": False, "requested_metrics": []}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "client_instance_id": answer.client_instance_id,
            "subscription_id": instance.subscription_id,
            "accepted_compression_types": [int(c) for c in ACCEPTED_COMPRESSION],
            "push_interval_ms": instance.push_interval_ms,
            "telemetry_max_bytes": telemetry.max_bytes,
            "delta_temporality": True,  # as Kafka's brokers ask
            "requested_metrics": list(instance.metrics)}


@handler(PUSH_TELEMETRY, 0, 0)
def handle_push_telemetry(req: PushTelemetryRequest, ctx: RequestContext) -> dict[str, Any]:
    error = ctx.cluster.telemetry.push(ctx.broker_id, req.client_instance_id,
                                       req.subscription_id, req.terminating,
                                       req.compression_type, bytes(req.metrics or b""),
                                       ctx.client_id, ctx.client_address)
    return {"throttle_time_ms": 0, "error_code": error}
