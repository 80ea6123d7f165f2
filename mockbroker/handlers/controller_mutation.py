"""The handlers' side of controller mutation quotas (KIP-599,
mockbroker.cluster.quotas.mutation_quota).

CreateTopics, CreatePartitions and DeleteTopics open one quota per request with
`open_mutation_quota` (strict from the version Kafka made strict, permissive before), charge
it once per topic that passed every other check (a refused topic answers
THROTTLING_QUOTA_EXCEEDED, `THROTTLED`), and pass their response through `with_throttle`,
which puts the quota's throttle time into throttle_time_ms and mutes the connection for it
(KIP-219; the versions from before it get the response held back instead, as the produce
and fetch quotas do).
"""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.quotas.mutation_quota import STRICT_SINCE, THROTTLING_MESSAGE, MutationQuota
from mockbroker.handlers.client_quotas import quota_user
from mockbroker.handlers.context import RequestContext

THROTTLED = (ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLING_MESSAGE)
# the first version whose client throttles itself (Kafka's shouldClientThrottle)
KIP_219_VERSIONS = {19: 3, 20: 2, 37: 1}


def open_mutation_quota(ctx: RequestContext) -> MutationQuota:
    strict = ctx.api_version >= STRICT_SINCE[ctx.api_key]
    return ctx.cluster.mutation_quotas.open(quota_user(ctx.principal), ctx.client_id or "",
                                            strict)


def with_throttle(ctx: RequestContext, quota: MutationQuota,
                  response: dict[str, Any]) -> dict[str, Any]:
    throttle = quota.throttle_time_ms()
    if throttle <= 0:
        return response
    ctx.cluster.mutation_quotas.throttled_responses += 1
    ctx.throttle_ms = max(ctx.throttle_ms, throttle)
    ctx.delay_response = ctx.api_version < KIP_219_VERSIONS[ctx.api_key]
    response["throttle_time_ms"] = max(throttle, int(response.get("throttle_time_ms", 0)))
    return response
