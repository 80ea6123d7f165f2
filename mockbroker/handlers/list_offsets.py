"""ListOffsets (key 2), v0-10: earliest, latest, by timestamp, max timestamp (v7), earliest
local (v8) and latest tiered (v9).

Fencing applies from v4 (CurrentLeaderEpoch). Latest is the high watermark, or the last
stable offset for read_committed (v2+). The leader epoch returned (v4+) is the epoch in
which the returned offset was written, from the leader-epoch cache.

The special timestamps, as Kafka's log answers them:
- -3 MAX_TIMESTAMP (KIP-734, v7): the offset and timestamp of the record with the largest
  timestamp (the first such record on ties); nothing (offset -1) for an empty log;
- -4 EARLIEST_LOCAL_TIMESTAMP (KIP-405, v8): the local log start offset, which without
  tiered storage is the log start offset, with its leader epoch;
- -5 LATEST_TIERED_TIMESTAMP (KIP-1005, v9): the highest offset in remote storage; with no
  tiered storage Kafka answers offset -1, leader epoch -1 and no error.
A timestamp lookup (MAX_TIMESTAMP included) that lands at or past the last fetchable
offset (the last stable offset for read_committed, else the high watermark; the log end for
a request with a replica id, which has no isolation level) finds nothing,
as Kafka's Partition.fetchOffsetForTimestamp. A partition named twice is answered once,
INVALID_REQUEST.
v10 (KIP-1075) adds TimeoutMs for remote lookups; every answer here is immediate. A special
timestamp below the version that defines it is UNSUPPORTED_VERSION for its partition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import PartitionLog
from mockbroker.handlers.common import (
    CONSUMER_REPLICA_ID,
    READ_COMMITTED,
    check_leader,
    epoch_for_offset,
    nested_partition_shape,
)
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler, partition_shape

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.list_offsets import ListOffsetsRequest

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_LOCAL_FROM_VERSION = 8
LATEST_TIERED_FROM_VERSION = 9
_LOG_END = -1  # no isolation: a request with a replica id (a follower, -2 a debugger)


@handler(2, 0, 10)
def handle_list_offsets(req: ListOffsetsRequest, ctx: RequestContext) -> dict[str, Any]:
    client = req.replica_id == CONSUMER_REPLICA_ID
    isolation = req.isolation_level if ctx.api_version >= 2 else 0
    if client and isolation not in (0, READ_COMMITTED):
        # IsolationLevel.forId throws: every partition UNKNOWN_SERVER_ERROR
        return {"throttle_time_ms": 0, "topics": [
            {"name": topic.name, "partitions": [
                _partition_entry(p.partition_index, ErrorCode.UNKNOWN_SERVER_ERROR)
                for p in topic.partitions]} for topic in req.topics]}
    bound = isolation if client else _LOG_END  # a replica's (or debugger's) reads: the log end
    seen: dict[tuple[str, int], int] = {}
    for topic in req.topics:
        for p in topic.partitions:
            key = (topic.name, p.partition_index)
            seen[key] = seen.get(key, 0) + 1
    topics = []
    answered: set[tuple[str, int]] = set()
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            key = (topic.name, p.partition_index)
            if seen[key] > 1:  # Kafka answers a partition asked twice once, INVALID_REQUEST
                if key not in answered:
                    answered.add(key)
                    parts.append(_partition_entry(p.partition_index, ErrorCode.INVALID_REQUEST))
                continue
            parts.append(_one(ctx, topic.name, p, bound))
        topics.append({"name": topic.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


def _partition_entry(index: int, error: int) -> dict[str, Any]:
    return {"partition_index": index, "error_code": error, "old_style_offsets": [],
            "timestamp": -1, "offset": -1, "leader_epoch": -1}


def _fetchable(log: PartitionLog, isolation: int) -> int:
    """Where a client's reads end (Partition.fetchOffsetForTimestamp's lastFetchableOffset):
    the last stable offset, the high watermark, or for a replica id the log end."""
    if isolation == _LOG_END:
        return log.log_end_offset
    return log.last_stable_offset if isolation == READ_COMMITTED else log.high_watermark


def _one(ctx: RequestContext, topic: str, p: ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition,
         isolation: int) -> dict[str, Any]:
    epoch_check = p.current_leader_epoch if ctx.api_version >= 4 else -1
    check = check_leader(ctx, topic, p.partition_index, epoch_check)
    out = _partition_entry(p.partition_index, check.error)
    if check.error != ErrorCode.NONE or check.log is None or check.partition is None:
        return out
    log = check.log
    found: tuple[int, int] | None
    fetchable = _fetchable(log, isolation)
    if p.timestamp == LATEST:
        found = (fetchable, -1)
        out["leader_epoch"] = check.partition.leader_epoch
    elif p.timestamp == EARLIEST or (p.timestamp == EARLIEST_LOCAL
                                     and ctx.api_version >= EARLIEST_LOCAL_FROM_VERSION):
        found = (log.log_start_offset, -1)  # all of the log is local
        out["leader_epoch"] = epoch_for_offset(log, log.log_start_offset, check.partition)
    elif p.timestamp == LATEST_TIERED and ctx.api_version >= LATEST_TIERED_FROM_VERSION:
        return out  # nothing is tiered: offset -1, leader epoch -1, no error
    elif p.timestamp == MAX_TIMESTAMP and ctx.api_version >= 7:
        found = log.max_timestamp_offset()
    elif p.timestamp < 0:
        out["error_code"] = ErrorCode.UNSUPPORTED_VERSION
        return out
    else:
        found = log.offset_for_timestamp(p.timestamp)
    if found is None:
        return out
    offset, timestamp = found
    if p.timestamp not in (LATEST, EARLIEST, EARLIEST_LOCAL) and offset >= fetchable:
        return out  # Partition.fetchOffsetForTimestamp: only within the fetchable range
    out["offset"], out["timestamp"] = offset, timestamp
    if p.timestamp >= 0 or p.timestamp == MAX_TIMESTAMP:
        out["leader_epoch"] = epoch_for_offset(log, offset)
    if ctx.api_version == 0:
        out["old_style_offsets"] = [offset] if p.max_num_offsets > 0 else []
    return out


# -- per-partition errors from above (the fault injector) -----------------------------------

partition_shape(2, nested_partition_shape(
    ("topics", "name", "partitions", "partition_index"),
    ("topics", "name", "partitions", "partition_index"), _partition_entry))
