"""Fetch (key 1): advertised 0-17, handled from v4; fetch sessions (KIP-227) from v7.

Theory of operation: resolve the fetch session, work out the partitions to answer (all of
them for a full fetch, the session's for an incremental one), and check each with Kafka's
fencing order. If any partition is in error the answer goes out at once; otherwise, when
less than min_bytes is available, the handler parks on the partitions' append events and on
metadata changes, as Kafka's fetch purgatory does: every wake-up re-checks the request, and
the answer goes out once min_bytes are available or a partition is in error (an election,
a deleted topic), else the handler parks again for what is left of max_wait_ms. The deadline
is in event-loop time, like the wait itself (never a sleep loop), so a test's ManualClock
cannot stretch or stall it. Records are the stored batches, unchanged and uncopied (a
BufferList that the connection writes out by reference), bounded by
partition_max_bytes and max_bytes, with the first batch always allowed through (KIP-74).
read_committed reads stop at the last stable offset.

Client quotas (handlers.client_quotas), as Kafka's handleFetchRequest applies them to a
consumer's Fetch: max_bytes is capped at what consumer_byte_rate allows in one quota window;
after the read, its bytes and request time are recorded, and a throttled answer is empty
(the bytes are taken back, the fetch session keeps its partitions unsent) with
throttle_time_ms. A follower's Fetch is not subject to client quotas.

Newer versions:
- v11 (KIP-392) adds the consumer's RackId: a consumer's read may then be served by any
  replica (a follower reads its own log up to its own high watermark), and a leader may
  answer a partition with PreferredReadReplica and no records, sending the consumer to a
  follower in its rack (replica.selector.class; the decision is mockbroker.cluster's
  read_replicas.py). Such an answer goes out at once, as Kafka's does.
- v13 (KIP-516) names topics by id in requests, forgotten topics and responses; an id this
  broker's image does not know is UNKNOWN_TOPIC_ID for each of its partitions, and the
  fetch session is keyed by topic id (mockbroker.cluster.log.fetch_sessions). v14 only adds an
  error for tiered storage, which mockbroker does not have.
- v15 moves ReplicaId into the tagged ReplicaState (with ReplicaEpoch). A request with a
  replica id >= 0 is a follower's: it reads up to the log end offset whatever its isolation
  level (Kafka's FetchLogEnd); mockbroker has no follower fetchers of its own.
- v16 (KIP-951): a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries
  CurrentLeader (leader id and epoch as this broker knows them), and the response lists the
  NodeEndpoints of those leaders on the request's listener, so the client can move to the
  new leader without a Metadata request. v17 adds a follower's directory id, ignored.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.framing import BufferList

from mockbroker.cluster import BrokerNode, LeaderCheck, PartitionImage, PartitionLog
from mockbroker.cluster.kafka_uuid import ZERO_UUID
from mockbroker.cluster.log.fetch_sessions import FetchSession, SessionKey, SessionPartition
from mockbroker.cluster.log.leadership import NO_EPOCH_CHECK
from mockbroker.cluster.log.partition import UNDEFINED_EPOCH
from mockbroker.cluster.log.read_replicas import FIRST_RACK_AWARE_FETCH_VERSION
from mockbroker.handlers.client_quotas import (
    consumer_fetch_cap,
    skip_quotas,
    throttle_consumer_fetch,
)
from mockbroker.handlers.common import (
    CONSUMER_REPLICA_ID,
    READ_COMMITTED,
    check_leader,
    current_leader,
    end_offset_for_epoch,
    leader_endpoints,
    nested_partition_shape,
)
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import TopicPartition, handler, partition_shape

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.fetch import FetchRequest

FIRST_HANDLED_VERSION = 4
TOPIC_IDS_FROM_VERSION = 13  # KIP-516
REPLICA_STATE_FROM_VERSION = 15
LEADER_HINTS_FROM_VERSION = 16  # KIP-951
_HINTED_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})
# The partitions the fault injector's withhold step will fail, by request (id(request) ->
# (request, partitions): the entry holds the request, so its id is not reused while there),
# so that an incremental answer lists them (with their topic id) even without news. The
# handler takes its request's entry first thing; at most _INJECTED_MAX wait (oldest dropped).
_INJECTED: dict[int, tuple[FetchRequest, frozenset[TopicPartition]]] = {}
_INJECTED_MAX = 1024


class ReadParams(NamedTuple):
    """How this request reads: its upper bound (isolation, or a follower's log end), and
    for a consumer's v11+ fetch, that any replica may serve it and the client's rack; for a
    follower, its replica id."""

    isolation: int
    any_replica: bool = False
    rack: str | None = None
    follower: int = CONSUMER_REPLICA_ID


@dataclass
class Wanted:
    """One partition a Fetch asks for, with its fetch session state (named by topic, or by
    topic id from v13)."""

    topic: str  # "" for a topic id this broker does not know
    topic_id: uuid.UUID
    partition: int
    state: SessionPartition
    by_id: bool = False  # named by topic id (Fetch v13+)

    @property
    def key(self) -> SessionKey:
        return (self.topic_id if self.by_id else self.topic), self.partition


# errors KafkaApis answers before the replica manager reads (FetchResponse.partitionResponse:
# an empty aborted transactions list); the replica manager's own errors carry none (null)
_REQUEST_LEVEL_ERRORS = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED})


def _error_partition(index: int, error: int) -> dict[str, Any]:
    return {"partition_index": index, "error_code": error, "high_watermark": -1,
            "last_stable_offset": -1, "log_start_offset": -1,
            "aborted_transactions": [] if error in _REQUEST_LEVEL_ERRORS else None,
            "preferred_read_replica": -1, "records": b""}


def _wanted(ctx: RequestContext, topic_key: str | uuid.UUID, partition: int,
            state: SessionPartition) -> Wanted:
    """A partition the request is about, its topic resolved on this broker's image."""
    if isinstance(topic_key, uuid.UUID):
        by_id = ctx.image.topics_by_id.get(topic_key)
        return Wanted(by_id.name if by_id else "", topic_key, partition, state, True)
    by_name = ctx.image.topics.get(topic_key)
    return Wanted(topic_key, by_name.topic_id if by_name else ZERO_UUID, partition, state)


def _requested(ctx: RequestContext, req: FetchRequest) -> list[Wanted]:
    """The partitions asked for, each once: as Kafka's FetchRequest.fetchData (a linked
    hash map) a partition named twice keeps its first place and its last fetch state."""
    by_id = ctx.api_version >= TOPIC_IDS_FROM_VERSION
    out: dict[SessionKey, Wanted] = {}
    for topic in req.topics:
        for p in topic.partitions:
            wanted = _wanted(ctx, topic.topic_id if by_id else topic.topic, p.partition,
                             SessionPartition(p.fetch_offset, p.partition_max_bytes,
                                              p.current_leader_epoch, p.last_fetched_epoch))
            out[wanted.key] = wanted
    return list(out.values())


def _apply_to_session(ctx: RequestContext, session: FetchSession, req: FetchRequest, full: bool,
                      requested: list[Wanted]) -> list[Wanted]:
    if full:
        session.partitions = {w.key: w.state for w in requested}
    else:
        for w in requested:
            old = session.partitions.get(w.key)
            if old is not None:
                w.state.sent_high_watermark = old.sent_high_watermark
                w.state.sent_last_stable_offset = old.sent_last_stable_offset
                w.state.sent_log_start_offset = old.sent_log_start_offset
            session.partitions[w.key] = w.state
        for forgotten in req.forgotten_topics_data:
            topic_key = forgotten.topic_id if session.uses_topic_ids else forgotten.topic
            for index in forgotten.partitions:
                session.partitions.pop((topic_key, index), None)
    return [_wanted(ctx, t, p, s) for (t, p), s in session.partitions.items()]


def _replica_id(req: FetchRequest, version: int) -> int:
    if version >= REPLICA_STATE_FROM_VERSION:
        return int(req.replica_state.replica_id)
    return int(req.replica_id)


@handler(1, 0, 17)
async def handle_fetch(req: FetchRequest, ctx: RequestContext) -> dict[str, Any]:
    started = time.perf_counter()
    injected = _INJECTED.pop(id(req), (req, frozenset[TopicPartition]()))[1] if _INJECTED \
        else frozenset[TopicPartition]()
    requested = _requested(ctx, req)
    if ctx.api_version < FIRST_HANDLED_VERSION:
        return _group(ctx, [(w, _error_partition(w.partition, ErrorCode.UNSUPPORTED_VERSION))
                            for w in requested], 0, ErrorCode.NONE)
    if ctx.api_version >= 4 and req.isolation_level not in ISOLATION_LEVELS:
        return _unknown_isolation_level(ctx, req)
    session: FetchSession | None = None
    full = True
    session_id = 0
    if ctx.api_version >= 7:
        lookup = ctx.broker.fetch_sessions.resolve(
            req.session_id, req.session_epoch, ctx.api_version >= TOPIC_IDS_FROM_VERSION)
        if lookup.error != ErrorCode.NONE:
            return _group(ctx, [], 0, lookup.error)
        session, full, session_id = lookup.session, lookup.full, lookup.response_session_id
    wanted = _apply_to_session(ctx, session, req, full, requested) if session else requested
    follower = _replica_id(req, ctx.api_version) != CONSUMER_REPLICA_ID
    if follower:
        params = ReadParams(_LOG_END, follower=_replica_id(req, ctx.api_version))
        skip_quotas(ctx)
    else:
        params = (ReadParams(req.isolation_level, True, req.rack_id)
                  if ctx.api_version >= FIRST_RACK_AWARE_FETCH_VERSION
                  else ReadParams(req.isolation_level))
        _cap_to_quota_window(ctx, req)
    parked = 0.0
    # a fetch that wants no partition is answered at once, as Kafka's ReplicaManager does
    # ("the fetch request does not require any data")
    if req.max_wait_ms > 0 and wanted and not _ready(ctx, wanted, req, params):
        parked = time.perf_counter()
        await _wait_until_ready(ctx, wanted, req, params)
        parked = time.perf_counter() - parked
    reads = _read_all(ctx, wanted, req, params)
    if session is not None:
        session.epoch = (req.session_epoch + 1) if req.session_epoch > 0 else 1
    if not follower:
        handling_ms = (time.perf_counter() - started - parked) * 1000
        throttle = throttle_consumer_fetch(ctx, sum(size for _, _, size in reads), handling_ms)
        if throttle > 0:
            return _throttled(ctx, session, full, session_id, throttle)
    answers = _session_answers(reads, full, injected)
    return _group(ctx, answers, session_id, ErrorCode.NONE)


ISOLATION_LEVELS = (0, 1)  # READ_UNCOMMITTED, READ_COMMITTED


def _unknown_isolation_level(ctx: RequestContext, req: FetchRequest) -> dict[str, Any]:
    """Kafka's IsolationLevel.forId throws for any other id: the request fails as a whole
    with UNKNOWN_SERVER_ERROR (FetchRequest.getErrorResponse: the request's session id, and
    below v13 every partition it names with the error)."""
    error = ErrorCode.UNKNOWN_SERVER_ERROR
    responses = [] if ctx.api_version >= TOPIC_IDS_FROM_VERSION else [
        {"topic": topic.topic, "topic_id": topic.topic_id, "partitions": [
            dict(_error_partition(p.partition, error), aborted_transactions=[])
            for p in topic.partitions]}
        for topic in req.topics]
    return {"throttle_time_ms": 0, "error_code": error, "session_id": req.session_id,
            "responses": responses}


def _cap_to_quota_window(ctx: RequestContext, req: FetchRequest) -> None:
    """A consumer's max_bytes (and min_bytes with it) is capped at what its
    consumer_byte_rate allows in one quota window, as Kafka's handleFetchRequest caps
    fetchMaxBytes: a larger answer would be throttled for sure, and emptied, forever."""
    cap = consumer_fetch_cap(ctx)
    if cap is not None and cap < req.max_bytes:
        req.max_bytes = cap
        req.min_bytes = min(req.min_bytes, cap)


def _throttled(ctx: RequestContext, session: FetchSession | None, full: bool,
               session_id: int, throttle_ms: int) -> dict[str, Any]:
    """Kafka's FetchContext.getThrottledResponse: no partitions; an incremental fetch keeps
    its session (epoch already advanced, nothing marked as sent), a full fetch gets no
    session (the one opened for it is dropped; the consumer opens it again)."""
    if full and session is not None:
        ctx.broker.fetch_sessions.forget(session.session_id)
        session_id = 0
    answer = _group(ctx, [], session_id, ErrorCode.NONE)
    answer["throttle_time_ms"] = throttle_ms
    return answer


def _group(ctx: RequestContext, answers: list[tuple[Wanted, dict[str, Any]]], session_id: int,
           error: ErrorCode) -> dict[str, Any]:
    """The response: partitions under their topic (name up to v12, id from v13; both are
    set, the codec writes the version's), and from v16 the endpoints of hinted leaders."""
    topics: dict[tuple[str, uuid.UUID], list[dict[str, Any]]] = {}
    for w, part in answers:
        topics.setdefault((w.topic, w.topic_id), []).append(part)
    out: dict[str, Any] = {
        "throttle_time_ms": 0, "error_code": error, "session_id": session_id,
        "responses": [{"topic": name, "topic_id": topic_id, "partitions": ps}
                      for (name, topic_id), ps in topics.items()]}
    if ctx.api_version >= LEADER_HINTS_FROM_VERSION:
        out["node_endpoints"] = leader_endpoints(ctx, (part for _, part in answers))
    return out


_LOG_END = -1  # a follower's reads are bounded by the log end offset, not HW or LSO


def _upper_bound(log: PartitionLog, isolation: int) -> int:
    if isolation == _LOG_END:
        return log.log_end_offset
    return log.last_stable_offset if isolation == READ_COMMITTED else log.high_watermark


def _check(ctx: RequestContext, w: Wanted, params: ReadParams) -> LeaderCheck:
    """Kafka's fencing and leadership checks (any replica for a consumer's v11+ read); a
    topic id this broker does not know is UNKNOWN_TOPIC_ID (v13+). A negative current
    leader epoch is no epoch (FetchRequest.optionalEpoch); a follower that is no remote replica
    of the partition is NOT_LEADER_OR_FOLLOWER (Partition.followerReplicaOrThrow)."""
    topic = ctx.image.topics_by_id.get(w.topic_id) if w.by_id else None
    if w.by_id and topic is None:
        return LeaderCheck(ErrorCode.UNKNOWN_TOPIC_ID, None, None, None)
    epoch = max(w.state.current_leader_epoch, NO_EPOCH_CHECK)
    if params.any_replica:
        return ctx.cluster.check_leader(ctx.broker, w.topic, w.partition, epoch, topic,
                                        leader_only=False)
    check = check_leader(ctx, w.topic, w.partition, epoch, topic)
    if params.follower != CONSUMER_REPLICA_ID and check.partition is not None \
            and check.error == ErrorCode.NONE \
            and (params.follower not in check.partition.replicas
                 or params.follower == ctx.broker.broker_id):
        return LeaderCheck(ErrorCode.NOT_LEADER_OR_FOLLOWER, check.topic, check.partition,
                           None)
    return check


def _redirect(ctx: RequestContext, w: Wanted, check: LeaderCheck, params: ReadParams) -> int:
    """KIP-392: the follower this leader sends the consumer to (-1: read here)."""
    if not params.any_replica or check.topic is None or check.partition is None \
            or check.partition.leader != ctx.broker.broker_id:
        return -1
    return ctx.cluster.preferred_read_replica(ctx.broker, check.topic, check.partition,
                                              params.rack, w.state.fetch_offset)


def _ready(ctx: RequestContext, wanted: list[Wanted], req: FetchRequest, params: ReadParams) -> bool:
    """True when the answer should go out now: an error, or min_bytes available. Like
    Kafka, a partition counts for at most its partition_max_bytes."""
    available = 0
    for w in wanted:
        check = _check(ctx, w, params)
        if check.error != ErrorCode.NONE or check.log is None:
            return True
        if _redirect(ctx, w, check, params) >= 0:
            return True  # a preferred read replica is answered at once
        log = check.log
        offset = w.state.fetch_offset
        if offset < log.log_start_offset or offset > log.log_end_offset:
            return True
        if ctx.api_version >= 12 and _diverging(log, check.partition, w.state) is not None:
            return True  # a diverging epoch is answered at once, as an error would be
        bound = _upper_bound(log, params.isolation)
        in_partition = 0
        for batch in log.batches_from(offset):
            if batch.base_offset >= bound or in_partition >= w.state.partition_max_bytes:
                break
            in_partition += batch.size
        available += min(in_partition, w.state.partition_max_bytes)
        if available >= req.min_bytes:
            return True
    return bool(available >= req.min_bytes)


def _diverging(log: PartitionLog, partition: PartitionImage | None,
               state: SessionPartition) -> tuple[int, int] | None:
    """KIP-320: (epoch, end offset) when the fetcher's last fetched epoch ends before its
    fetch offset on this log (it must truncate), else None."""
    if state.last_fetched_epoch < 0:
        return None
    epoch, end = end_offset_for_epoch(log, partition, state.last_fetched_epoch)
    if end < state.fetch_offset or epoch < state.last_fetched_epoch:
        return epoch, end
    return None


def _partition_logs(ctx: RequestContext, wanted: list[Wanted]) -> list[PartitionLog]:
    """This broker's own replicas of the wanted partitions (a follower's for a KIP-392
    read: its high watermark moves when it learns the leader's)."""
    logs = []
    for w in wanted:
        topic = ctx.image.topics.get(w.topic)
        log = ctx.cluster.replica_log(topic.topic_id, w.partition,
                                      ctx.broker.broker_id) if topic else None
        if log is not None:
            logs.append(log)
    return logs


async def _wait_until_ready(ctx: RequestContext, wanted: list[Wanted], req: FetchRequest,
                           params: ReadParams) -> None:
    """Park until `_ready` or until max_wait_ms has passed, re-checking at every append to
    a wanted partition and every metadata change. The logs listened to are looked up again
    after each wake-up, since a metadata change may have replaced one (topic recreated)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + req.max_wait_ms / 1000
    woken = asyncio.Event()
    logs = _partition_logs(ctx, wanted)
    for log in logs:
        log.add_listener(woken.set)
    ctx.cluster.add_metadata_listener(woken.set)
    try:
        while (remaining := deadline - loop.time()) > 0:
            woken.clear()
            try:
                await asyncio.wait_for(woken.wait(), remaining)
            except TimeoutError:
                return
            if _ready(ctx, wanted, req, params):
                return
            current = _partition_logs(ctx, wanted)
            if current != logs:
                for log in logs:
                    log.remove_listener(woken.set)
                logs = current
                for log in logs:
                    log.add_listener(woken.set)
    finally:
        for log in logs:
            log.remove_listener(woken.set)
        ctx.cluster.remove_metadata_listener(woken.set)


def _read_all(ctx: RequestContext, wanted: list[Wanted], req: FetchRequest, params: ReadParams
              ) -> list[tuple[Wanted, dict[str, Any], int]]:
    """Every wanted partition's answer and its size in bytes, within max_bytes (the first
    partition with data may exceed it, KIP-74); the session is not touched yet."""
    budget = req.max_bytes if ctx.api_version >= 3 else 0x7FFFFFFF
    reads = []
    any_data = False
    for w in wanted:
        part, size = _read_one(ctx, w, budget, not any_data, params)
        budget -= size
        any_data = any_data or size > 0
        reads.append((w, part, size))
    return reads


def _session_answers(reads: list[tuple[Wanted, dict[str, Any], int]], full: bool,
                     injected: frozenset[TopicPartition]
                     ) -> list[tuple[Wanted, dict[str, Any]]]:
    """Mark what is sent in the session; an incremental answer lists only partitions with
    news (KIP-227)."""
    answers = []
    for w, part, size in reads:
        state = w.state
        changed = (part["error_code"] != ErrorCode.NONE or size > 0
                   or state.sent_high_watermark != part["high_watermark"]
                   or state.sent_last_stable_offset != part["last_stable_offset"]
                   or state.sent_log_start_offset != part["log_start_offset"]
                   or "diverging_epoch" in part)
        state.sent_high_watermark = part["high_watermark"]
        state.sent_last_stable_offset = part["last_stable_offset"]
        state.sent_log_start_offset = part["log_start_offset"]
        if full or changed or (w.topic, w.partition) in injected:
            answers.append((w, part))
    return answers


def _read_one(ctx: RequestContext, w: Wanted, budget: int, force_first: bool,
              params: ReadParams) -> tuple[dict[str, Any], int]:
    state = w.state
    isolation = params.isolation
    check = _check(ctx, w, params)
    if check.error != ErrorCode.NONE or check.log is None:
        failed = _error_partition(w.partition, check.error)
        if (ctx.api_version >= LEADER_HINTS_FROM_VERSION and check.error in _HINTED_ERRORS
                and check.partition is not None):
            failed["current_leader"] = current_leader(check.partition)
        return failed, 0
    log = check.log
    offset = state.fetch_offset
    base: dict[str, Any] = {"partition_index": w.partition, "error_code": ErrorCode.NONE,
            "high_watermark": log.high_watermark, "last_stable_offset": log.last_stable_offset,
            "log_start_offset": log.log_start_offset, "preferred_read_replica": -1,
            "aborted_transactions": [] if isolation == READ_COMMITTED else None,
            "records": b""}
    preferred = _redirect(ctx, w, check, params)
    if preferred >= 0:  # KIP-392: no records, the consumer reads from `preferred`
        base["preferred_read_replica"] = preferred
        return base, 0
    diverging = _diverging(log, check.partition, state) if ctx.api_version >= 12 else None
    if diverging is not None and UNDEFINED_EPOCH in diverging:
        # Partition.fetchRecords: the last fetched epoch has no end offset here (newer
        # than this log's epochs): OffsetOutOfRangeException
        return _error_partition(w.partition, ErrorCode.OFFSET_OUT_OF_RANGE), 0
    if diverging is not None:
        base["diverging_epoch"] = {"epoch": diverging[0], "end_offset": diverging[1]}
        return base, 0
    if offset < log.log_start_offset or offset > log.log_end_offset:
        base.update(error_code=ErrorCode.OFFSET_OUT_OF_RANGE, high_watermark=-1,
                    last_stable_offset=-1, log_start_offset=-1)
        return base, 0
    limit = min(state.partition_max_bytes, max(budget, 0))
    bound = _upper_bound(log, isolation)
    chunks = log.read(offset, limit, bound, force_first=force_first)
    if isolation == READ_COMMITTED:
        base["aborted_transactions"] = ctx.cluster.aborted_transactions(log, offset, bound)
    records = BufferList(chunks)  # the stored batches, written out by reference, not joined
    base["records"] = records
    return base, records.nbytes


# -- per-partition errors from above (the fault injector) -----------------------------------

def _requested_partitions(node: BrokerNode, version: int,
                          body: FetchRequest) -> list[TopicPartition]:
    """The request's partitions, and within a fetch session (v7+) the session's too, by
    topic name (ids this broker does not know are left out)."""
    by_id = version >= TOPIC_IDS_FROM_VERSION
    keys: set[SessionKey] = {(t.topic_id if by_id else t.topic, p.partition)
                             for t in body.topics for p in t.partitions}
    if version >= 7 and body.session_id and body.session_epoch > 0:
        session = node.fetch_sessions.sessions.get(body.session_id)
        if session is not None:
            keys |= set(session.partitions)
    found = set()
    for topic_key, index in keys:
        if isinstance(topic_key, uuid.UUID):
            topic = node.image.topics_by_id.get(topic_key)
            if topic is not None:
                found.add((topic.name, index))
        else:
            found.add((topic_key, index))
    return sorted(found)


def _answer_at_once(body: FetchRequest, errored: set[TopicPartition]) -> None:
    """A fetch with an errored partition is answered at once, as Kafka does, and lists the
    errored partitions even in an incremental answer (v13+ needs their topic ids there)."""
    body.max_wait_ms = 0
    while len(_INJECTED) >= _INJECTED_MAX:
        del _INJECTED[next(iter(_INJECTED))]
    _INJECTED[id(body)] = (body, frozenset(errored))


partition_shape(1, nested_partition_shape(
    ("topics", "topic", "partitions", "partition"),
    ("responses", "topic", "partitions", "partition_index"), _error_partition,
    requested=_requested_partitions, withhold=_answer_at_once))
