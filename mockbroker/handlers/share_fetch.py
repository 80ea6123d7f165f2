"""ShareFetch (78) v0 and ShareAcknowledge (79) v0: KIP-932 record delivery to share groups.

Theory of operation: both go to the partitions' leaders (the share-partition leader is the
partition leader). A request first resolves its share session (ShareGroupCoordinator:
epoch 0 opens, -1 closes, else the session's next epoch), then applies the piggy-backed
AcknowledgementBatches partition by partition (an acknowledgement error is per partition
and changes nothing in that partition). ShareFetch then acquires records for the member on
every partition of its session (share_partitions.py: redeliveries first, then new whole
batches below the high watermark, or the LSO when the group's share.isolation.level is
read_committed) and answers with the stored batches holding them plus the AcquiredRecords
ranges with their delivery counts. When fewer than MinBytes were acquired it parks, like
Fetch, on the partitions' listeners (woken by appends, and by the coordinator when records
are released or locks expire) and on metadata changes, then acquires again, until MinBytes
or MaxWaitMs (event-loop time). Closing the session (-1) acknowledges, then releases what
the member still holds; a closing ShareFetch fetches nothing. Without "share" among
group.coordinator.rebalance.protocols both answer a top-level UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.framing import BufferList

from mockbroker.cluster import PartitionLog
from mockbroker.handlers.common import check_leader
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler
from mockbroker.handlers.share_groups import share_protocol_disabled

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.share_acknowledge import ShareAcknowledgeRequest
    from kafka_protocol_codec.generated.share_fetch import ShareFetchRequest

if TYPE_CHECKING:  # share groups load with their first request (Cluster.share_groups)
    from mockbroker.cluster.groups.share_group_coordinator import ShareSession
    from mockbroker.cluster.groups.share_partitions import AckBatch, AcquiredRange

TopicPartitionId = tuple[uuid.UUID, int]
DEFAULT_PARTITION_MAX_BYTES = 1 << 20


@dataclass
class PartitionAnswer:
    """One partition of a ShareFetch response being built: its errors, the acquired records
    and the leader to point at."""

    error: ErrorCode = ErrorCode.NONE
    ack_error: ErrorCode | None = None
    ranges: list[AcquiredRange] = field(default_factory=list)
    leader: tuple[int, int] = (-1, -1)


def _ack_batches(partition: ShareFetchRequest.FetchTopic.FetchPartition
                 | ShareAcknowledgeRequest.AcknowledgeTopic.AcknowledgePartition) -> list[AckBatch]:
    from mockbroker.cluster.groups.share_partitions import AckBatch

    return [AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
            for b in partition.acknowledgement_batches]


def _resolve(ctx: RequestContext, key: TopicPartitionId,
             answer: PartitionAnswer) -> tuple[str, PartitionLog] | None:
    """The partition's topic name and log when this broker leads it, else sets the error."""
    topic = ctx.image.topics_by_id.get(key[0])
    if topic is None:
        answer.error = ErrorCode.UNKNOWN_TOPIC_ID
        return None
    check = check_leader(ctx, topic.name, key[1], topic=topic)
    if check.partition is not None:
        answer.leader = (check.partition.leader, check.partition.leader_epoch)
    if check.error != ErrorCode.NONE or check.log is None:
        answer.error = check.error
        return None
    return topic.name, check.log


def _acknowledge(ctx: RequestContext, group_id: str, member_id: str,
                 acks: dict[TopicPartitionId, list[AckBatch]],
                 answers: dict[TopicPartitionId, PartitionAnswer]) -> None:
    for key, batches in acks.items():
        answer = answers.setdefault(key, PartitionAnswer())
        resolved = _resolve(ctx, key, answer)
        if resolved is None:
            answer.ack_error = answer.error
            continue
        share = ctx.cluster.share_groups.share_partition(group_id, key[0], resolved[1])
        answer.ack_error = share.acknowledge(member_id, batches)
        resolved[1].wake_listeners()  # released records may satisfy a parked ShareFetch


def _session(ctx: RequestContext, req: ShareFetchRequest | ShareAcknowledgeRequest
             ) -> tuple[ErrorCode, ShareSession | None]:
    if not req.group_id or not req.member_id:
        return ErrorCode.INVALID_REQUEST, None
    return ctx.cluster.share_groups.open_session(ctx.broker_id, req.group_id, req.member_id,
                                                 req.share_session_epoch)


def _member(req: ShareFetchRequest | ShareAcknowledgeRequest) -> tuple[str, str]:
    """The group and member ids of a request `_session` accepted (neither null nor empty)."""
    return req.group_id or "", req.member_id or ""


def _top_level(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message,
            "responses": [], "node_endpoints": []}


@handler(78, 0, 0)
async def handle_share_fetch(req: ShareFetchRequest, ctx: RequestContext) -> dict[str, Any]:
    if share_protocol_disabled(ctx):
        return _top_level(ErrorCode.UNSUPPORTED_VERSION)
    from mockbroker.cluster.groups.share_group_coordinator import (
        CLOSE_SESSION_EPOCH,
        OPEN_SESSION_EPOCH,
    )

    acks = {(t.topic_id, p.partition_index): _ack_batches(p)
            for t in req.topics for p in t.partitions if p.acknowledgement_batches}
    if req.share_session_epoch == OPEN_SESSION_EPOCH and acks:
        return _top_level(ErrorCode.INVALID_REQUEST,
                          "Acknowledge data present on initial fetch request")
    error, session = _session(ctx, req)
    if error != ErrorCode.NONE or session is None:
        return _top_level(error)
    group_id, member_id = _member(req)
    answers: dict[TopicPartitionId, PartitionAnswer] = {}
    _acknowledge(ctx, group_id, member_id, acks, answers)
    if req.share_session_epoch == CLOSE_SESSION_EPOCH:
        ctx.cluster.share_groups.close_session(ctx.broker_id, group_id, member_id)
        return _respond(ctx, answers, {})
    for t in req.topics:
        for p in t.partitions:
            session.partitions.add((t.topic_id, p.partition_index))
    for forgotten in req.forgotten_topics_data:
        for index in forgotten.partitions:
            session.partitions.discard((forgotten.topic_id, index))
    limits = {(t.topic_id, p.partition_index): p.partition_max_bytes
              for t in req.topics for p in t.partitions}
    wanted = sorted(session.partitions, key=lambda k: (str(k[0]), k[1]))
    records: dict[TopicPartitionId, list[bytes | memoryview]] = {}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(req.max_wait_ms, 0) / 1000
    while True:
        acquired = _acquire_all(ctx, req, wanted, limits, answers, records)
        errored = any(answers[k].error != ErrorCode.NONE for k in wanted)
        if acquired >= req.min_bytes or errored or loop.time() >= deadline:
            break
        if not await _wait_for_change(ctx, wanted, deadline - loop.time()):
            _acquire_all(ctx, req, wanted, limits, answers, records)
            break
    return _respond(ctx, answers, records)


def _acquire_all(ctx: RequestContext, req: ShareFetchRequest, wanted: list[TopicPartitionId],
                 limits: dict[TopicPartitionId, int],
                 answers: dict[TopicPartitionId, PartitionAnswer],
                 records: dict[TopicPartitionId, list[bytes | memoryview]]) -> int:
    """Acquire on every wanted partition; returns the bytes acquired so far in total."""
    from mockbroker.cluster.groups.share_partitions import batches_for

    coordinator = ctx.cluster.share_groups
    group_id, member_id = _member(req)
    read_committed = coordinator.read_committed(group_id)
    budget = req.max_bytes - sum(len(b) for bs in records.values() for b in bs)
    for key in wanted:
        answer = answers.setdefault(key, PartitionAnswer())
        answer.error = ErrorCode.NONE
        resolved = _resolve(ctx, key, answer)
        if resolved is None:
            continue
        log = resolved[1]
        share = coordinator.share_partition(group_id, key[0], log)
        bound = log.last_stable_offset if read_committed else log.high_watermark
        limit = limits.get(key, DEFAULT_PARTITION_MAX_BYTES)
        if limit <= 0 or (budget <= 0 and records):
            continue  # acknowledgement only, or the response is full
        ranges = share.acquire(member_id, log, bound, ctx.now_ms(),
                               max_bytes=min(limit, max(budget, 1)),
                               read_committed=read_committed)
        if ranges:
            answer.ranges.extend(ranges)
            data = [b.data for b in batches_for(log, ranges)]
            records.setdefault(key, []).extend(data)
            budget -= sum(len(b) for b in data)
    return sum(len(b) for bs in records.values() for b in bs)


async def _wait_for_change(ctx: RequestContext, wanted: list[TopicPartitionId],
                           timeout: float) -> bool:
    """Park until an append or release on a wanted partition, or a metadata change;
    False when the wait timed out."""
    if timeout <= 0:
        return False
    woken = asyncio.Event()
    logs = [log for topic_id, index in wanted
            if (log := ctx.cluster.log(topic_id, index)) is not None]
    for log in logs:
        log.add_listener(woken.set)
    ctx.cluster.add_metadata_listener(woken.set)
    try:
        await asyncio.wait_for(woken.wait(), timeout)
        return True
    except TimeoutError:
        return False
    finally:
        for log in logs:
            log.remove_listener(woken.set)
        ctx.cluster.remove_metadata_listener(woken.set)


def _respond(ctx: RequestContext, answers: dict[TopicPartitionId, PartitionAnswer],
             records: dict[TopicPartitionId, list[bytes | memoryview]]) -> dict[str, Any]:
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for key in sorted(answers, key=lambda k: (str(k[0]), k[1])):
        answer = answers[key]
        ack_error = answer.ack_error if answer.ack_error is not None else ErrorCode.NONE
        topics.setdefault(key[0], []).append({
            "partition_index": key[1], "error_code": answer.error, "error_message": None,
            "acknowledge_error_code": ack_error, "acknowledge_error_message": None,
            "current_leader": {"leader_id": answer.leader[0],
                               "leader_epoch": answer.leader[1]},
            "records": BufferList(records.get(key, [])),
            "acquired_records": [{"first_offset": r.first_offset, "last_offset": r.last_offset,
                                  "delivery_count": r.delivery_count}
                                 for r in answer.ranges]})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "responses": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
            "node_endpoints": _endpoints(ctx, answers)}


def _endpoints(ctx: RequestContext,
               answers: dict[TopicPartitionId, PartitionAnswer]) -> list[dict[str, Any]]:
    """The leaders of partitions answered NOT_LEADER_OR_FOLLOWER, so clients move there."""
    leaders = {a.leader[0] for a in answers.values()
               if ErrorCode.NOT_LEADER_OR_FOLLOWER in (a.error, a.ack_error)
               and a.leader[0] >= 0}
    out = []
    for broker_id in sorted(leaders):
        node = ctx.image.brokers.get(broker_id)
        if node is not None:
            host, port = ctx.endpoint(broker_id, node.host, node.port)
            out.append({"node_id": broker_id, "host": host, "port": port, "rack": None})
    return out


@handler(79, 0, 0)
def handle_share_acknowledge(req: ShareAcknowledgeRequest, ctx: RequestContext) -> dict[str, Any]:
    if share_protocol_disabled(ctx):
        return _top_level(ErrorCode.UNSUPPORTED_VERSION)
    from mockbroker.cluster.groups.share_group_coordinator import (
        CLOSE_SESSION_EPOCH,
        OPEN_SESSION_EPOCH,
    )

    if req.share_session_epoch == OPEN_SESSION_EPOCH:
        return _top_level(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    error, session = _session(ctx, req)
    if error != ErrorCode.NONE or session is None:
        return _top_level(error)
    acks = {(t.topic_id, p.partition_index): _ack_batches(p)
            for t in req.topics for p in t.partitions}
    group_id, member_id = _member(req)
    answers: dict[TopicPartitionId, PartitionAnswer] = {}
    _acknowledge(ctx, group_id, member_id, acks, answers)
    if req.share_session_epoch == CLOSE_SESSION_EPOCH:
        ctx.cluster.share_groups.close_session(ctx.broker_id, group_id, member_id)
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for key, answer in answers.items():
        topics.setdefault(key[0], []).append({
            "partition_index": key[1], "error_code": answer.ack_error or ErrorCode.NONE,
            "error_message": None,
            "current_leader": {"leader_id": answer.leader[0],
                               "leader_epoch": answer.leader[1]}})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "responses": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
            "node_endpoints": _endpoints(ctx, answers)}
