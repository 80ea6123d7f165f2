"""ListClientMetricsResources (key 74) v0: the names of the client metrics resources
(KIP-714), which in mockbroker are the telemetry subscriptions (cluster/telemetry.py).

Kafka 4.0 answers it from its client-metrics configs, sorted by nothing in particular; here
the names come sorted. It needs DESCRIBE_CONFIGS on the cluster (authorization.py: the
top-level CLUSTER_AUTHORIZATION_FAILED otherwise). Kafka 4.1 renamed the API
ListConfigResources and gave it a v1 that lists other config resource types too; the Java
client 4.1+ still lists client metrics resources through v0 when the broker offers only it.
"""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler


@handler(74, 0, 0)
def handle_list_client_metrics_resources(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    del req
    names = sorted(ctx.cluster.telemetry.subscriptions)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "client_metrics_resources": [{"name": name} for name in names]}
