"""ShareGroupHeartbeat (76) v0 and ShareGroupDescribe (77) v0: KIP-932 share group membership.

Theory of operation: both run on the group coordinator (the broker FindCoordinator names for
the group id, key type 0, as for consumer groups), so each first checks the coordinator.
The heartbeat is one call into the cluster's ShareGroupCoordinator; this layer only turns
the assignment's topic names into topic ids (the wire speaks ids) and back. Describe lists
members with their subscriptions and assignments; a group id that is unknown, or that
belongs to a classic/consumer group, is GROUP_ID_NOT_FOUND, as in Kafka.

Advertising and serving are two settings, as in Kafka 4.0: unstable.api.versions.enable
advertises these APIs (versions.py), and unless "share" is among
group.coordinator.rebalance.protocols every share API answers UNSUPPORTED_VERSION in its
error fields (KafkaApis' isShareGroupProtocolEnabled check, before authorization).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.configs.broker_properties import share_groups_enabled
from mockbroker.cluster.internal_topics import GROUP_KEY_TYPE
from mockbroker.cluster.kraft.metadata_log import MetadataImage
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.find_coordinator import group_error
from mockbroker.handlers.group_membership import client_host
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.share_group_describe import ShareGroupDescribeRequest
    from kafka_protocol_codec.generated.share_group_heartbeat import ShareGroupHeartbeatRequest

if TYPE_CHECKING:  # share groups load with their first request (Cluster.share_groups)
    from mockbroker.cluster.groups.share_group_coordinator import ShareGroup

UNKNOWN_AUTHORIZED_OPERATIONS = -2147483648
GROUP_TYPE_SHARE = "share"
SHARE_PROTOCOL_TYPE = "share"


def _topic_partitions(image: MetadataImage, assignment: dict[str, list[int]],
                      with_names: bool) -> list[dict[str, Any]]:
    out = []
    for name in sorted(assignment):
        topic = image.topics.get(name)
        if topic is None:
            continue
        entry: dict[str, Any] = {"topic_id": topic.topic_id,
                                 "partitions": sorted(assignment[name])}
        if with_names:
            entry["topic_name"] = name
        out.append(entry)
    return out


def share_protocol_disabled(ctx: RequestContext) -> bool:
    """No "share" among group.coordinator.rebalance.protocols: the share APIs answer
    UNSUPPORTED_VERSION (Kafka's KafkaApis)."""
    return not share_groups_enabled(ctx.cluster.config.broker_properties)


@handler(76, 0, 0)
def handle_share_group_heartbeat(req: ShareGroupHeartbeatRequest, ctx: RequestContext) -> dict[str, Any]:
    error = ErrorCode.UNSUPPORTED_VERSION if share_protocol_disabled(ctx) \
        else group_error(ctx, req.group_id, require_id=False)
    if error != ErrorCode.NONE:
        return {"throttle_time_ms": 0, "error_code": error, "error_message": None,
                "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0,
                "assignment": None}
    subscribed = list(req.subscribed_topic_names) \
        if req.subscribed_topic_names is not None else None
    result = ctx.cluster.share_groups.heartbeat(
        req.group_id, req.member_id, req.member_epoch, req.rack_id, subscribed,
        client_id=ctx.client_id or "", client_host=client_host(ctx))
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": _topic_partitions(ctx.image, result.assignment,
                                                            with_names=False)}
    return {"throttle_time_ms": 0, "error_code": result.error,
            "error_message": result.message, "member_id": result.member_id,
            "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms, "assignment": assignment}


def _described_base(group_id: str) -> dict[str, Any]:
    return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id,
            "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
            "members": [], "authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS}


def _described(ctx: RequestContext, group_id: str) -> dict[str, Any]:
    base = _described_base(group_id)
    error = group_error(ctx, group_id)
    if error != ErrorCode.NONE:
        base["error_code"] = error
        return base
    group: ShareGroup | None = ctx.cluster.share_groups.groups.get(group_id)
    if group is None:
        base.update(error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {group_id} not found.")
        return base
    from mockbroker.cluster.groups.share_group_coordinator import ASSIGNOR_NAME

    base.update(group_state=group.state.value, group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch, assignor_name=ASSIGNOR_NAME)
    base["members"] = [
        {"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
         "client_id": m.client_id, "client_host": m.client_host,
         "subscribed_topic_names": sorted(m.subscribed),
         "assignment": {"topic_partitions": _topic_partitions(ctx.image, m.assignment,
                                                              with_names=True)}}
        for m in sorted(group.members.values(), key=lambda m: m.member_id)]
    return base


@handler(77, 0, 0)
def handle_share_group_describe(req: ShareGroupDescribeRequest, ctx: RequestContext) -> dict[str, Any]:
    if share_protocol_disabled(ctx):  # every group answered so, as Kafka's error response
        return {"throttle_time_ms": 0, "groups": [
            {**_described_base(group_id), "error_code": ErrorCode.UNSUPPORTED_VERSION}
            for group_id in req.group_ids]}
    return {"throttle_time_ms": 0,
            "groups": [_described(ctx, group_id) for group_id in req.group_ids]}


def listed_share_groups(ctx: RequestContext, states: set[str],
                        image: MetadataImage | None) -> list[dict[str, Any]]:
    """ListGroups entries for the share groups this broker coordinates (type "share")."""
    listed = []
    for group_id, group in sorted(ctx.cluster.share_groups.groups.items()):
        if ctx.cluster.coordinator_for(GROUP_KEY_TYPE, group_id, image) != ctx.broker_id:
            continue
        if states and group.state.value.lower() not in states:
            continue
        listed.append({"group_id": group_id, "protocol_type": SHARE_PROTOCOL_TYPE,
                       "group_state": group.state.value, "group_type": GROUP_TYPE_SHARE})
    return listed
