"""DescribeCluster (key 60), v0-1: live brokers, cluster id and the controller id.

Where admin requests are handled: any broker accepts admin requests; this read is answered
by the receiving broker from its own metadata image (a broker with paused metadata reports
the brokers it knows of), as Kafka brokers answer it locally; in consistent-read mode from
the image at the lowest acknowledged offset (RequestContext.read_image). The cluster id and
the controller id come from that image, i.e. from the metadata log (see cluster.metadata). Changes go through the
controller (see admin_topics, alter_configs).

As in KRaft mode, the controller id reported to clients is a live broker
(Cluster.controller_id), because clients send admin requests to it and brokers forward them.
cluster_authorized_operations is Kafka's "not requested" value (INT32_MIN) unless asked
for; then every operation on the CLUSTER resource is allowed (no authorizer). Only the
BROKERS endpoint type (1) is served: an unknown type gets UNSUPPORTED_ENDPOINT_TYPE and the
controllers type MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST for both in v0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.security.authorizer import UNSET_OPERATIONS
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.describe_cluster import DescribeClusterRequest

ENDPOINT_BROKERS = 1
ENDPOINT_CONTROLLERS = 2
# AclOperation codes Kafka supports on the CLUSTER resource: CREATE 5, ALTER 7, DESCRIBE 8,
# CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


@handler(60, 0, 1)
def handle_describe_cluster(req: DescribeClusterRequest, ctx: RequestContext) -> dict[str, Any]:
    wanted = req.endpoint_type if ctx.api_version >= 1 else ENDPOINT_BROKERS
    if wanted != ENDPOINT_BROKERS:
        if wanted == ENDPOINT_CONTROLLERS:
            error = ErrorCode.MISMATCHED_ENDPOINT_TYPE
            message = ("The request was sent to an endpoint of type BROKER, but we wanted an "
                       "endpoint of type CONTROLLER")
        else:
            error = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
            message = f"Unsupported endpoint type {wanted}"
        return {"throttle_time_ms": 0, "error_code": error, "error_message": message,
                "endpoint_type": ENDPOINT_BROKERS, "cluster_id": "", "controller_id": -1,
                "brokers": [], "cluster_authorized_operations": UNSET_OPERATIONS}
    image = ctx.read_image
    brokers = []
    for b in image.live_brokers():
        host, port = ctx.endpoint(b.broker_id, b.host, b.port)  # the request's listener
        brokers.append({"broker_id": b.broker_id, "host": host, "port": port,
                        "rack": b.rack})
    operations = CLUSTER_OPERATIONS if req.include_cluster_authorized_operations \
        else UNSET_OPERATIONS
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "endpoint_type": ENDPOINT_BROKERS, "cluster_id": image.cluster_id or "",
            "controller_id": ctx.cluster.controller_id(image), "brokers": brokers,
            "cluster_authorized_operations": operations}
