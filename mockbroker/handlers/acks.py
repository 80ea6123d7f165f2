"""What a Produce answer becomes by its acks. acks=0: no answer, unless a partition failed,
which closes the connection instead (`produce_answer`). acks=all: the answer parked until
replication covers its batches (Kafka's produce purgatory, DelayedProduce).

For acks=all the cluster decides (`Cluster.replication_wait` right after the append,
`Cluster.ack_status` at every re-check); this module only parks. Each waiting partition entry
is re-checked whenever its leader's log changes (an append, the high watermark moving) or
metadata changes (the ISR shrinking, leadership moving); the request's timeout_ms, in
event-loop time like a parked fetch's max_wait_ms, answers REQUEST_TIMED_OUT for the
partitions still waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.log.replicas import ReplicationWait
from mockbroker.handlers.context import CloseAfterRequest, RequestContext

Pending = list[tuple[dict[str, Any], ReplicationWait]]


def produce_answer(request: Mapping[str, Any],
                   response: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """What a Produce sends for its handled (authorized, recorded) `response`: the response,
    except with acks=0: nothing when every partition succeeded, else the connection closes
    (CloseAfterRequest), as Kafka's handleProduceRequest closes it on any partition error."""
    if request["acks"] != 0 or response is None:
        return response
    failed = [f"{topic['name']}-{p['index']}: {ErrorCode(p['error_code']).name}"
              for topic in response.get("responses", ())
              for p in topic["partition_responses"] if p["error_code"]]
    if failed:
        raise CloseAfterRequest(_acks_zero_reason(failed))
    return None


def _acks_zero_reason(failed: Iterable[str]) -> str:
    return "error in a Produce with acks=0 (" + ", ".join(failed) + ")"


def _settle(ctx: RequestContext, pending: Pending) -> Pending:
    """Write the decided entries' error codes; return those still waiting."""
    waiting = []
    for entry, wait in pending:
        status = ctx.cluster.ack_status(wait)
        if status is None:
            waiting.append((entry, wait))
        elif status != ErrorCode.NONE:
            entry["error_code"] = status
    return waiting


async def answer_when_replicated(ctx: RequestContext, response: dict[str, Any],
                                 pending: Pending, timeout_ms: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout_ms, 0) / 1000
    woken = asyncio.Event()
    logs = {id(wait.log): wait.log for _, wait in pending}
    for log in logs.values():
        log.add_listener(woken.set)
    ctx.cluster.add_metadata_listener(woken.set)
    try:
        while (pending := _settle(ctx, pending)) and (remaining := deadline - loop.time()) > 0:
            woken.clear()
            try:
                await asyncio.wait_for(woken.wait(), remaining)
            except TimeoutError:
                break
        for entry, _ in pending:
            entry["error_code"] = ErrorCode.REQUEST_TIMED_OUT
    finally:
        for log in logs.values():
            log.remove_listener(woken.set)
        ctx.cluster.remove_metadata_listener(woken.set)
    return response
