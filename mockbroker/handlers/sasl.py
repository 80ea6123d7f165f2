"""SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2) outside authentication.

On a SASL listener the connection's SaslSession (mockbroker.server.sasl) answers these
while a client authenticates or re-authenticates. A request that gets here arrived where
no authentication is in progress: on a PLAINTEXT or SSL listener, or on an authenticated
connection that cannot re-authenticate. Kafka's request handler (KafkaApis) answers both
with ILLEGAL_SASL_STATE, and so does this.

`illegal_sasl_state_response` is the answer Kafka's SaslServerAuthenticator sends (before
closing) to any other request that arrives while a SaslAuthenticate is expected.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec import api, api_name, default_struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.schema import in_range

from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.sasl_authenticate import SaslAuthenticateRequest
    from kafka_protocol_codec.generated.sasl_handshake import SaslHandshakeRequest

PRODUCE, FETCH, METADATA = 0, 1, 3


@handler(17, 0, 1)
def handle_sasl_handshake(req: SaslHandshakeRequest, ctx: RequestContext) -> dict[str, Any]:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}


@handler(36, 0, 2)
def handle_sasl_authenticate(req: SaslAuthenticateRequest, ctx: RequestContext) -> dict[str, Any]:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful "
                             "authentication",
            "auth_bytes": b"", "session_lifetime_ms": 0}


def kafka_api_constant(key: int) -> str:
    """Kafka's ApiKeys constant of an API (SaslHandshake -> SASL_HANDSHAKE), the way its
    SASL errors name a request."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", api_name(key)).upper()


def illegal_sasl_state_response(api_key: int, version: int, body: Any,
                                message: str) -> dict[str, Any] | None:
    """The request's error response with ILLEGAL_SASL_STATE, as Kafka's AbstractRequest
    getErrorResponse builds it, for a request that arrives while a SASL authentication is
    in progress: the top-level error code where the response has one, Metadata's, Produce's
    and Fetch's per-topic and per-partition errors mirroring the request. None for the other
    APIs (their per-item shapes are not built here): the connection closes without one."""
    code = ErrorCode.ILLEGAL_SASL_STATE
    schema = api(api_key).response
    top_level = any(f.name == "error_code" and in_range(version, f.versions)
                    for f in schema.fields)
    if api_key == METADATA:
        answer: dict[str, Any] = {"throttle_time_ms": 0, "brokers": [], "topics": [
            {"name": t.name or "", "topic_id": getattr(t, "topic_id", None), "error_code": code,
             "is_internal": False, "partitions": []} for t in body.topics or []]}
        if top_level:  # Metadata v13+
            answer["error_code"] = code
        return answer
    if api_key == PRODUCE:
        return {"throttle_time_ms": 0, "responses": [
            {"name": t.name, "partition_responses": [
                {"index": p.index, "error_code": code, "base_offset": -1,
                 "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [],
                 "error_message": message} for p in t.partition_data]}
            for t in body.topic_data]}
    if api_key == FETCH:
        return _fetch_error_response(version, body, top_level)
    if not top_level:
        return None
    response: dict[str, Any] = default_struct(schema.fields)
    response["error_code"] = code
    if "error_message" in response:
        response["error_message"] = message
    return response


def _fetch_error_response(version: int, body: Any, top_level: bool) -> dict[str, Any]:
    """Kafka's FetchRequest.getErrorResponse: below v13 every requested partition carries the
    error (high watermark -1, the other fields their defaults: no aborted transactions, null
    records), from v7 beside the top-level code; from v13 only the top-level code, no
    partitions. The session id is the request's (v7+)."""
    code = ErrorCode.ILLEGAL_SASL_STATE
    topics = [] if version >= 13 else [
        {"topic": t.topic, "partitions": [
            {"partition_index": p.partition, "error_code": code, "high_watermark": -1,
             "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": [],
             "preferred_read_replica": -1, "records": None} for p in t.partitions]}
        for t in body.topics]
    answer: dict[str, Any] = {"throttle_time_ms": 0, "responses": topics}
    if top_level:  # v7+
        answer.update(error_code=code, session_id=body.session_id)
    return answer
