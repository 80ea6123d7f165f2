"""DescribeGroups (15) v0-5, ListGroups (16) v0-5, DeleteGroups (42) v0-2, OffsetDelete (47) v0.

Theory of operation: every group answer comes from the broker that coordinates the group;
another broker answers NOT_COORDINATOR for that group. ListGroups is asked of every broker by
admin clients, so each broker lists only the groups it coordinates (with v4 state and v5
type filters, both case-insensitive; a group is "classic", KIP-848 "consumer", or KIP-932
"share"). Which broker coordinates a group is decided by the broker registrations of the receiving broker's read
image (RequestContext.read_image): in consistent-read mode every broker decides by the same
metadata offset. Groups themselves are not metadata-log state. DescribeGroups
reports an unknown group, and a KIP-848 consumer group (which ConsumerGroupDescribe
describes), as Dead with no error, as Kafka's coordinator does before v6, and
shows member metadata and assignments only for a Stable group. DeleteGroups removes an Empty
group and its offsets (NON_EMPTY_GROUP while members remain, GROUP_ID_NOT_FOUND if unknown).
Batches of groups are answered in the order of Kafka's coordinator (group_order.py).
OffsetDelete refuses, per partition, topics an active consumer group subscribes to
(GROUP_SUBSCRIBED_TO_TOPIC), read from the members' embedded subscriptions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.groups.classic_group_model import CONSUMER_PROTOCOL_TYPE, GROUP_TYPE_CLASSIC
from mockbroker.cluster.groups.consumer_group_model import GROUP_TYPE_CONSUMER
from mockbroker.cluster.internal_topics import GROUP_KEY_TYPE
from mockbroker.cluster.security.authorizer import (
    SUPPORTED_OPERATIONS,
    UNSET_OPERATIONS,
    ResourceType,
)
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.find_coordinator import group_error
from mockbroker.handlers.group_offsets import builder_order, partition_known
from mockbroker.handlers.group_order import kafka_order
from mockbroker.handlers.registry import handler
from mockbroker.handlers.share_groups import GROUP_TYPE_SHARE, listed_share_groups

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.delete_groups import DeleteGroupsRequest
    from kafka_protocol_codec.generated.describe_groups import DescribeGroupsRequest
    from kafka_protocol_codec.generated.list_groups import ListGroupsRequest
    from kafka_protocol_codec.generated.offset_delete import OffsetDeleteRequest

# every ACL operation a group supports (all of them are allowed without an authorizer)
GROUP_OPERATIONS = sum(1 << int(op) for op in SUPPORTED_OPERATIONS[ResourceType.GROUP])


@handler(15, 0, 5)
def handle_describe_groups(req: DescribeGroupsRequest, ctx: RequestContext) -> dict[str, Any]:
    include_ops = ctx.api_version >= 3 and bool(req.include_authorized_operations)
    groups = []
    for group_id in req.groups:
        error = group_error(ctx, group_id, require_id=False)
        entry: dict[str, Any] = {
            "error_code": error, "group_id": group_id, "group_state": "",
            "protocol_type": "", "protocol_data": "", "members": [],
            "authorized_operations": GROUP_OPERATIONS if include_ops else UNSET_OPERATIONS}
        if error == ErrorCode.NONE and ctx.cluster.consumer_groups.get(group_id) is not None:
            # not a classic group: Dead with no error before v6 (KIP-1043), as for an
            # unknown group; ConsumerGroupDescribe describes it
            entry["group_state"] = "Dead"
        elif error == ErrorCode.NONE:
            summary = ctx.cluster.groups.describe(group_id)
            entry.update({
                "group_state": summary.state, "protocol_type": summary.protocol_type,
                "protocol_data": summary.protocol_name,
                "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "member_metadata": m.metadata, "member_assignment": m.assignment}
                            for m in summary.members]})
        groups.append(entry)
    order = kafka_order(req.groups, ctx.cluster.config.offsets_topic_partitions)
    return {"throttle_time_ms": 0, "groups": [groups[i] for i in order]}


@handler(16, 0, 5)
def handle_list_groups(req: ListGroupsRequest, ctx: RequestContext) -> dict[str, Any]:
    version = ctx.api_version
    states = {s.lower() for s in req.states_filter} if version >= 4 else set()
    types = {t.lower() for t in req.types_filter} if version >= 5 else set()
    listed = []
    image = ctx.read_image if ctx.cluster.config.consistent_metadata else None
    if not types or GROUP_TYPE_CLASSIC in types:
        for group_id, group in sorted(ctx.cluster.groups.groups.items()):
            if ctx.cluster.coordinator_for(GROUP_KEY_TYPE, group_id, image) != ctx.broker_id:
                continue
            if states and group.state.value.lower() not in states:
                continue
            listed.append({"group_id": group_id, "protocol_type": group.protocol_type or "",
                           "group_state": group.state.value, "group_type": GROUP_TYPE_CLASSIC})
    if not types or GROUP_TYPE_CONSUMER in types:
        for group_id, consumer in ctx.cluster.consumer_groups.groups.items():
            if ctx.cluster.coordinator_for(GROUP_KEY_TYPE, group_id, image) != ctx.broker_id:
                continue
            state = consumer.state.value
            if states and state.lower() not in states:
                continue
            listed.append({"group_id": group_id, "protocol_type": CONSUMER_PROTOCOL_TYPE,
                           "group_state": state, "group_type": GROUP_TYPE_CONSUMER})
    if not types or GROUP_TYPE_SHARE in types:  # KIP-932
        listed += listed_share_groups(ctx, states, image)
    listed.sort(key=lambda g: g["group_id"])
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": listed}


@handler(42, 0, 2)
def handle_delete_groups(req: DeleteGroupsRequest, ctx: RequestContext) -> dict[str, Any]:
    results = []
    names = list(dict.fromkeys(req.groups_names))  # Kafka takes each name once
    for group_id in names:
        error = group_error(ctx, group_id, require_id=False)
        if error == ErrorCode.NONE:
            consumer = ctx.cluster.consumer_groups.delete_group(group_id)
            error = consumer if consumer is not None else ctx.cluster.groups.delete_group(group_id)
        results.append({"group_id": group_id, "error_code": error})
    failed = {i for i, r in enumerate(results) if r["error_code"] != ErrorCode.NONE}
    order = kafka_order(names, ctx.cluster.config.offsets_topic_partitions, failed)
    return {"throttle_time_ms": 0, "results": [results[i] for i in order]}


@handler(47, 0, 0)
def handle_offset_delete(req: OffsetDeleteRequest, ctx: RequestContext) -> dict[str, Any]:
    error = group_error(ctx, req.group_id, require_id=False)
    codes: dict[tuple[str, int], ErrorCode] = {}
    known = []
    for topic in req.topics:
        for p in topic.partitions:
            if partition_known(ctx, topic.name, p.partition_index):
                known.append((topic.name, p.partition_index))
            else:
                codes[(topic.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    consumer_group = ctx.cluster.consumer_groups.get(req.group_id)
    if error == ErrorCode.NONE and consumer_group is not None:
        results = []
        for name, partition in known:
            if consumer_group.members and ctx.cluster.consumer_groups.is_subscribed_to(
                    req.group_id, name):
                results.append(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
            else:
                ctx.cluster.groups.offsets.delete(req.group_id, name, partition)
                results.append(ErrorCode.NONE)
        codes.update(zip(known, results, strict=True))
    elif error == ErrorCode.NONE:
        error, results = ctx.cluster.groups.delete_offsets(req.group_id, known)
        codes.update(zip(known, results, strict=False))
    if error != ErrorCode.NONE:
        return {"error_code": error, "throttle_time_ms": 0, "topics": []}
    early = [key for key in codes if key not in set(known)]
    return {"error_code": ErrorCode.NONE, "throttle_time_ms": 0,
            "topics": builder_order(early, known, codes)}
