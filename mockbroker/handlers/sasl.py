"""SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2) outside authentication.

On a SASL listener the connection's SaslSession (mockbroker.server.sasl) answers these
while a client authenticates or re-authenticates. A request that gets here arrived where
no authentication is in progress: on a PLAINTEXT or SSL listener, or on an authenticated
connection that cannot re-authenticate. Kafka's request handler (KafkaApis) answers both
with ILLEGAL_SASL_STATE, and so does this.
"""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler


@handler(17, 0, 1)
def handle_sasl_handshake(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}


@handler(36, 0, 2)
def handle_sasl_authenticate(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful "
                             "authentication",
            "auth_bytes": b"", "session_lifetime_ms": 0}
