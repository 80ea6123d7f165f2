"""ConsumerGroupHeartbeat (68) v0-1 and ConsumerGroupDescribe (69) v0: KIP-848 groups.

Theory of operation: both check that this broker coordinates the group (a heartbeat is
first checked for well-formedness, INVALID_REQUEST even from the wrong broker), then call the
cluster's ConsumerGroupCoordinator (cluster/groups/consumer_groups.py), which decides everything.
This layer only translates: topic ids in requests and answers, resolved with the receiving
broker's metadata image (ConsumerGroupDescribe also names the topics), and version
differences (v1 adds SubscribedTopicRegex and makes the client generate its member id, as
KIP-1082 has it). A heartbeat never waits: the coordinator answers at once, and a member
learns about a new assignment at its next heartbeat.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.groups.consumer_assignors import TopicIdPartition
from mockbroker.cluster.groups.consumer_group_model import HeartbeatRequest, HeartbeatResult
from mockbroker.cluster.security.authorizer import UNSET_OPERATIONS
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.find_coordinator import group_error
from mockbroker.handlers.group_admin import GROUP_OPERATIONS
from mockbroker.handlers.group_membership import client_host
from mockbroker.handlers.group_order import kafka_order
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.consumer_group_describe import ConsumerGroupDescribeRequest
    from kafka_protocol_codec.generated.consumer_group_heartbeat import (
        ConsumerGroupHeartbeatRequest,
    )


def _by_topic(partitions: frozenset[TopicIdPartition]) -> dict[uuid.UUID, list[int]]:
    out: dict[uuid.UUID, list[int]] = {}
    for topic_id, index in sorted(partitions, key=lambda tp: (str(tp[0]), tp[1])):
        out.setdefault(topic_id, []).append(index)
    return out


def _heartbeat_response(result: HeartbeatResult) -> dict[str, Any]:
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [
            {"topic_id": topic_id, "partitions": parts}
            for topic_id, parts in _by_topic(result.assignment).items()]}
    return {"throttle_time_ms": 0, "error_code": result.error,
            "error_message": result.error_message, "member_id": result.member_id,
            "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms, "assignment": assignment}


@handler(68, 0, 1)
def handle_consumer_group_heartbeat(req: ConsumerGroupHeartbeatRequest, ctx: RequestContext) -> dict[str, Any]:
    version = ctx.api_version
    owned = None
    if req.topic_partitions is not None:
        owned = frozenset((t.topic_id, index) for t in req.topic_partitions
                          for index in t.partitions)
    names = tuple(req.subscribed_topic_names) \
        if req.subscribed_topic_names is not None else None
    request = HeartbeatRequest(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
        instance_id=req.instance_id, rack_id=req.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms, subscribed_topic_names=names,
        subscribed_topic_regex=req.subscribed_topic_regex if version >= 1 else None,
        server_assignor=req.server_assignor, owned=owned, client_id=ctx.client_id or "",
        client_host=client_host(ctx), member_id_from_client=version >= 1)
    coordinator = ctx.cluster.consumer_groups
    invalid = coordinator.validate(request)  # before the coordinator check, as in Kafka
    if invalid is not None:
        return _heartbeat_response(invalid)
    error = group_error(ctx, req.group_id, require_id=False)
    if error != ErrorCode.NONE:
        return _heartbeat_response(HeartbeatResult(error))
    return _heartbeat_response(coordinator.heartbeat(request))


def _described_assignment(ctx: RequestContext, partitions: frozenset[TopicIdPartition]
                          ) -> dict[str, Any]:
    topics = []
    for topic_id, parts in _by_topic(partitions).items():
        image = ctx.image.topics_by_id.get(topic_id)
        topics.append({"topic_id": topic_id, "topic_name": image.name if image else "",
                       "partitions": parts})
    return {"topic_partitions": topics}


@handler(69, 0, 0)
def handle_consumer_group_describe(req: ConsumerGroupDescribeRequest, ctx: RequestContext) -> dict[str, Any]:
    include_ops = bool(req.include_authorized_operations)
    groups = []
    for group_id in req.group_ids:
        error = group_error(ctx, group_id)
        entry: dict[str, Any] = {
            "error_code": error, "error_message": None, "group_id": group_id,
            "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
            "members": [],
            "authorized_operations": GROUP_OPERATIONS if include_ops else UNSET_OPERATIONS}
        described = ctx.cluster.consumer_groups.describe(group_id) \
            if error == ErrorCode.NONE else None
        if error == ErrorCode.NONE and described is None:
            entry.update(error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                         error_message=f"Group {group_id} not found.",
                         authorized_operations=UNSET_OPERATIONS)
            if ctx.cluster.groups.get(group_id) is not None:
                entry["error_message"] = f"Group {group_id} is not a consumer group."
        elif described is not None:
            entry.update({
                "group_state": described.state, "group_epoch": described.group_epoch,
                "assignment_epoch": described.assignment_epoch,
                "assignor_name": described.assignor_name,
                "members": [{
                    "member_id": m.member_id, "instance_id": m.instance_id,
                    "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                    "client_id": m.client_id, "client_host": m.client_host,
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                    "subscribed_topic_regex": m.subscribed_topic_regex,
                    "assignment": _described_assignment(ctx, m.assignment),
                    "target_assignment": _described_assignment(ctx, m.target_assignment)}
                    for m in described.members]})
        groups.append(entry)
    order = kafka_order(req.group_ids, ctx.cluster.config.offsets_topic_partitions)
    return {"throttle_time_ms": 0, "groups": [groups[i] for i in order]}
