"""OffsetCommit (8) v0-9 and OffsetFetch (9) v0-9: committed offsets with leader epochs.

Theory of operation: both check that this broker coordinates the group. OffsetCommit drops
partitions this broker's metadata does not know (UNKNOWN_TOPIC_OR_PARTITION, answered first,
as Kafka's response builder orders them), then lets the
GroupCoordinator check the generation and member (a generation < 0 on an Empty or unknown
group is a simple commit, accepted) and store offset, committed leader epoch (v6+, KIP-232),
metadata and timestamp (the request's in v1, else now). v9 belongs to the new consumer
protocol: for a consumer group (KIP-848) the member id and epoch are checked by the
ConsumerGroupCoordinator (STALE_MEMBER_EPOCH); for a classic group
generation_id_or_member_epoch is the generation. OffsetFetch v9 carries the member id and
epoch of a consumer-group member, checked the same way.

OffsetFetch answers one group (v0-7) or several (v8+). A null topic list means every
committed offset of the group. Unknown partitions get offset -1; the committed leader epoch
is returned from v5; require_stable (v7+) turns a partition with a pending transactional
offset into UNSTABLE_OFFSET_COMMIT. A group-level error goes into every partition for v0-1,
at the top level for v2-7, and per group for v8+.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.groups.offset_store import FetchedOffset, OffsetCommitEntry
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.find_coordinator import group_error
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.offset_commit import OffsetCommitRequest
    from kafka_protocol_codec.generated.offset_fetch import OffsetFetchRequest


def partition_known(ctx: RequestContext, topic: str, partition: int) -> bool:
    image = ctx.image.topics.get(topic)
    return image is not None and partition in image.partitions


@handler(8, 0, 9)
def handle_offset_commit(req: OffsetCommitRequest, ctx: RequestContext) -> dict[str, Any]:
    version = ctx.api_version
    error = group_error(ctx, req.group_id, require_id=False)
    entries: list[OffsetCommitEntry] = []
    codes: dict[tuple[str, int], ErrorCode] = {}
    for topic in req.topics:
        for p in topic.partitions:
            key = (topic.name, p.partition_index)
            if error != ErrorCode.NONE:
                codes[key] = error
            elif not partition_known(ctx, topic.name, p.partition_index):
                codes[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                entries.append(OffsetCommitEntry(
                    topic.name, p.partition_index, p.committed_offset,
                    p.committed_leader_epoch if version >= 6 else -1, p.committed_metadata,
                    p.commit_timestamp if version == 1 else -1))
    if entries:
        generation = req.generation_id_or_member_epoch if version >= 1 else -1
        member_id = req.member_id if version >= 1 else ""
        instance_id = req.group_instance_id if version >= 7 else None
        results = ctx.cluster.consumer_groups.commit_offsets(
            req.group_id, member_id, generation, version, entries)
        if results is None and version >= 9 and generation >= 0 \
                and ctx.cluster.groups.get(req.group_id) is None:
            # from v9 Kafka answers an unknown group so, for both protocols
            results = [ErrorCode.GROUP_ID_NOT_FOUND] * len(entries)
        if results is None:  # a classic group
            results = ctx.cluster.groups.commit_offsets(req.group_id, member_id, instance_id,
                                                        generation, entries)
        for entry, code in zip(entries, results, strict=True):
            codes[(entry.topic, entry.partition)] = code
    early = [key for key, code in codes.items()
             if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and error == ErrorCode.NONE]
    late = [(e.topic, e.partition) for e in entries]
    if error != ErrorCode.NONE:
        early, late = [], list(codes)
    return {"throttle_time_ms": 0, "topics": builder_order(early, late, codes)}


def builder_order(early: list[tuple[str, int]], late: list[tuple[str, int]],
                  codes: dict[tuple[str, int], ErrorCode]) -> list[dict[str, Any]]:
    """Partitions answered as Kafka's OffsetCommit/OffsetDelete response builders order
    them: the ones refused before the coordinator (unknown topics and partitions) first,
    then the coordinator's answers merged in (a topic's partitions joining its entry)."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for name, index in [*early, *late]:
        topics.setdefault(name, []).append({"partition_index": index,
                                            "error_code": codes[(name, index)]})
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]


def _fetch(ctx: RequestContext, group_id: str,
           topics: list[OffsetFetchRequest.OffsetFetchRequestTopic]
           | list[OffsetFetchRequest.OffsetFetchRequestGroup.OffsetFetchRequestTopics] | None,
           require_stable: bool, member: tuple[str | None, int] = (None, -1)
           ) -> tuple[ErrorCode, list[FetchedOffset]]:
    error = group_error(ctx, group_id, require_id=False)
    if error == ErrorCode.NONE:
        error = ctx.cluster.consumer_groups.validate_offset_fetch(group_id, *member)
    if error != ErrorCode.NONE:
        return error, []
    wanted = None if topics is None else [
        (t.name, index) for t in topics for index in t.partition_indexes]
    return ErrorCode.NONE, ctx.cluster.groups.fetch_offsets(group_id, wanted, require_stable)


def _by_topic(found: list[FetchedOffset], version: int) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for f in found:
        topics.setdefault(f.topic, []).append({
            "partition_index": f.partition, "committed_offset": f.offset,
            "committed_leader_epoch": f.leader_epoch if version >= 5 else -1,
            "metadata": f.metadata, "error_code": f.error})
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]


@handler(9, 0, 9)
def handle_offset_fetch(req: OffsetFetchRequest, ctx: RequestContext) -> dict[str, Any]:
    version = ctx.api_version
    require_stable = bool(req.require_stable) if version >= 7 else False
    if version >= 8:
        groups = []
        for group in req.groups:
            member = (group.member_id, group.member_epoch) if version >= 9 else (None, -1)
            error, found = _fetch(ctx, group.group_id, group.topics, require_stable, member)
            groups.append({"group_id": group.group_id, "error_code": error,
                           "topics": _by_topic(found, version)})
        return {"throttle_time_ms": 0, "groups": groups}
    topics = req.topics
    if version < 2 and topics is None:
        topics = []
    error, found = _fetch(ctx, req.group_id, topics, require_stable)
    if error != ErrorCode.NONE and version < 2:
        # no top-level error before v2: every requested partition carries it
        found = [FetchedOffset(t.name, index, -1, -1, "", error)
                 for t in topics or [] for index in t.partition_indexes]
        error = ErrorCode.NONE
    return {"throttle_time_ms": 0, "error_code": error, "topics": _by_topic(found, version)}
