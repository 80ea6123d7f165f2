"""DescribeClientQuotas and AlterClientQuotas (KIP-546), and the enforcement of produce,
fetch and request quotas (mockbroker.cluster.quotas.quota_manager).

AlterClientQuotas goes to the controller, as a KRaft broker forwards it: each entry's
changed keys become ClientQuotaRecords in the metadata log (validate_only writes nothing).
DescribeClientQuotas answers from the receiving broker's image, so a broker whose metadata
lags shows, and applies, the quotas it has applied so far.

As Kafka answers them: a refused filter (EXACT without a match, DEFAULT with one, an unknown
match type: INVALID_REQUEST; an unknown entity type: UNSUPPORTED_VERSION) has no entries
(null); a success carries Errors.NONE's message "". An AlterClientQuotas entry refused while
its entity is read (bad combination, an `ip` that is no IP) echoes the entity as sent; past
that, entries name their entity in the order of Kafka's ClientQuotaEntity HashMap
(client-id before user). Whole-number keys refuse fractional or too large values and a key
named twice refuses the entry (INVALID_REQUEST).

Enforcement (`apply_quotas`, run by the dispatcher around every handler): a Produce records
the bytes of its records, a Fetch the bytes it answers, every request its handling time; each
against its (user, client-id)'s resolved quota. Over the quota the response carries
throttle_time_ms, and the RequestContext's `throttle_ms` tells the connection to mute itself
for that long (KIP-219: the answer goes out at once, the next request is read only after the
throttle; for Produce < v6 and Fetch < v8, clients from before KIP-219, the answer itself is
held for the throttle time, as Kafka delays it). Each broker measures its own traffic. A
broker whose image holds no quota entity cannot throttle: it only adds to its recorded totals
(what `quotas` and state show), without resolving the user and client id.

A consumer's Fetch is metered by the Fetch handler itself, as Kafka's handleFetchRequest does
(`consumer_fetch_cap`, `throttle_consumer_fetch`): its max_bytes is capped at what the quota
allows in one window (quota * (samples - 1) * sample seconds, Kafka's
getMaxValueInQuotaWindow), so one fetch is never throttled for its size alone; once read, its
bytes and request time are recorded, and if either throttles, the bytes are taken back and
the answer is empty but for throttle_time_ms (Kafka's FetchContext.getThrottledResponse). A
follower's Fetch is not subject to client quotas.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.java_order import java_hash_order
from mockbroker.cluster.quotas.quota_manager import (
    ENTITY_TYPES,
    FETCH,
    PRODUCE,
    REQUEST,
    QuotaError,
    check_wire_ops,
    make_entity,
    sorted_entities,
)
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.alter_client_quotas import AlterClientQuotasRequest
    from kafka_protocol_codec.generated.describe_client_quotas import DescribeClientQuotasRequest
    from kafka_protocol_codec.generated.produce import ProduceRequest

EXACT, DEFAULT, ANY = 0, 1, 2
KIP_219_VERSIONS = {0: 6, 1: 8}  # Produce, Fetch: the first version muting instead of delaying


def quota_user(principal: str) -> str:
    """The user a quota applies to: the principal's name (User:alice -> alice)."""
    return principal.split(":", 1)[1] if ":" in principal else principal


@handler(48, 0, 1)
def handle_describe_client_quotas(req: DescribeClientQuotasRequest, ctx: RequestContext) -> dict[str, Any]:
    components = []
    for c in req.components:  # Kafka's checks, in its order (ClientQuotaFilterComponent)
        if c.match_type == EXACT and c.match is None:
            return _describe_error("Request specified MATCH_TYPE_EXACT, but set match "
                                   "string to null.")
        if c.match_type == DEFAULT and c.match is not None:
            return _describe_error("Request specified MATCH_TYPE_DEFAULT, but also "
                                   "specified a match string.")
        if c.match_type not in (EXACT, DEFAULT, ANY):
            return _describe_error(f"Unexpected match type: {c.match_type}")
        components.append((c.entity_type, c.match_type, c.match))
    for entity_type, _, _ in components:
        if entity_type not in ENTITY_TYPES:
            return _describe_error(f"Unsupported entity type {entity_type}",
                                   ErrorCode.UNSUPPORTED_VERSION)
    if len({t for t, _, _ in components}) != len(components):
        return _describe_error("Duplicate entity type in the filter")
    entries = []
    # answered from the receiving broker's image, as a KRaft broker answers from its cache
    for entity, values in sorted_entities(ctx.read_image.client_quotas).items():
        parts = dict(entity)
        if not all(_component_matches(parts, c) for c in components):
            continue
        if req.strict and set(parts) != {t for t, _, _ in components}:
            continue
        entries.append({"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                        "values": [{"key": k, "value": v} for k, v in sorted(values.items())]})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": "",
            "entries": entries}  # Errors.NONE's message, as Kafka


def _component_matches(parts: Mapping[str, str | None],
                       component: tuple[str, int, str | None]) -> bool:
    entity_type, match_type, match = component
    if entity_type not in parts:
        return False
    if match_type == EXACT:
        return parts[entity_type] == match
    if match_type == DEFAULT:
        return parts[entity_type] is None
    return True


def _describe_error(message: str, code: int = ErrorCode.INVALID_REQUEST) -> dict[str, Any]:
    """A refused filter: Kafka answers it without entries (null)."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "entries": None}


@handler(49, 0, 1)
def handle_alter_client_quotas(req: AlterClientQuotasRequest, ctx: RequestContext) -> dict[str, Any]:
    results = []
    for entry in req.entries:
        as_sent = [{"entity_type": e.entity_type, "entity_name": e.entity_name}
                   for e in entry.entity]
        try:
            parts = {e.entity_type: e.entity_name for e in entry.entity}
            if len(parts) != len(entry.entity):
                raise QuotaError("Duplicate entity type in the quota entity")
            entity = make_entity(parts)
        except QuotaError as exc:  # refused as sent, before Kafka builds its entity
            results.append({"error_code": ErrorCode.INVALID_REQUEST,
                            "error_message": str(exc), "entity": as_sent})
            continue
        # past that, Kafka answers with its ClientQuotaEntity's HashMap of the parts
        built = [{"entity_type": t, "entity_name": parts[t]} for t in java_hash_order(parts)]
        try:
            ops = [(op.key, None if op.remove else float(op.value)) for op in entry.ops]
            check_wire_ops(entity, ops)
            ctx.cluster.quotas.alter(entity, ops, validate_only=bool(req.validate_only))
        except QuotaError as exc:
            results.append({"error_code": ErrorCode.INVALID_REQUEST,
                            "error_message": str(exc), "entity": built})
            continue
        results.append({"error_code": ErrorCode.NONE, "error_message": None,
                        "entity": built})
    return {"throttle_time_ms": 0, "entries": results}


# -- enforcement ------------------------------------------------------------------------------

def produced_bytes(body: ProduceRequest) -> int:
    total = 0
    for topic in body.topic_data or ():
        for partition in topic.partition_data:
            records = partition.records
            if records:
                total += len(records)
    return total


def apply_quotas(ctx: RequestContext, produced: int, started: float,
                 result: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """Record this request against its quotas; a throttle goes into the response and
    into ctx.throttle_ms for the connection."""
    if ctx.quotas_recorded:  # a Fetch that did it itself (throttle_consumer_fetch)
        return result
    quotas = ctx.cluster.quotas.broker(ctx.broker.broker_id)  # each broker measures its own
    if not quotas.enforcing():  # no quota in its image: the totals move, nothing throttles
        if ctx.api_key == 0:
            quotas.record_unlimited(PRODUCE, produced)
        quotas.record_unlimited(REQUEST, (time.perf_counter() - started) * 1000 / 10)
        return result
    user, client_id = quota_user(ctx.principal), ctx.client_id or ""
    throttle = 0
    if ctx.api_key == 0:
        throttle = quotas.record(user, client_id, PRODUCE, produced)
    handling_ms = (time.perf_counter() - started) * 1000
    # request_percentage: percent of one thread, i.e. handling ms per second / 10
    throttle = max(throttle, quotas.record(user, client_id, REQUEST, handling_ms / 10))
    if throttle <= 0 or result is None or "throttle_time_ms" not in result:
        return result
    _mute(ctx, throttle)
    return dict(result, throttle_time_ms=max(throttle, int(result["throttle_time_ms"])))


def _mute(ctx: RequestContext, throttle_ms: int) -> None:
    """KIP-219: mute the connection after the answer; before it, hold the answer. A longer
    throttle already set (a controller mutation quota's) stays."""
    if throttle_ms <= ctx.throttle_ms:
        return
    ctx.throttle_ms = throttle_ms
    ctx.delay_response = ctx.api_version < KIP_219_VERSIONS.get(ctx.api_key, 0)


def consumer_fetch_cap(ctx: RequestContext) -> int | None:
    """The most a consumer's Fetch may answer without a certain throttle: its
    consumer_byte_rate times the window before the last sample (None: no quota)."""
    cap = ctx.cluster.quotas.broker(ctx.broker_id).max_value_in_window(
        quota_user(ctx.principal), ctx.client_id or "", FETCH)
    return None if cap is None else int(cap)


def throttle_consumer_fetch(ctx: RequestContext, response_bytes: int,
                            handling_ms: float) -> int:
    """Record a consumer Fetch's bytes and request time (the time it was handled, not
    parked); the throttle time if either quota is exceeded, the bytes then taken back as
    Kafka's unrecordQuotaSensor does, since the answer will be empty."""
    ctx.quotas_recorded = True
    meter = ctx.cluster.quotas.broker(ctx.broker_id)
    user, client_id = quota_user(ctx.principal), ctx.client_id or ""
    bandwidth = meter.record(user, client_id, FETCH, response_bytes)
    request = meter.record(user, client_id, REQUEST, handling_ms / 10)
    throttle = max(bandwidth, request)
    if throttle > 0:
        meter.unrecord(user, client_id, FETCH, response_bytes)
        _mute(ctx, throttle)
    return throttle


def skip_quotas(ctx: RequestContext) -> None:
    """A follower's Fetch: client quotas do not apply (Kafka exempts replication)."""
    ctx.quotas_recorded = True
