"""JoinGroup (11) v0-9, SyncGroup (14) v0-5, Heartbeat (12) v0-4, LeaveGroup (13) v0-5.

Theory of operation: each handler checks that this broker coordinates the group, resolves
version differences (v0 JoinGroup has no rebalance timeout and uses the session timeout;
v4+ requires a known member id; v9 can skip the leader's assignment; v5 SyncGroup names the
protocol; v3+ LeaveGroup takes a member list), and calls the consumer-group coordinator's
`classic_members` (cluster/groups/group_migration.py), which answers for KIP-848 consumer groups
(Kafka 4.0's classic members inside them) and hands every other group to the classic
GroupCoordinator.
JoinGroup and SyncGroup wait for the rebalance: the coordinator takes a plain callback, which
this layer turns into an asyncio future to await. While a JoinGroup waits, its connection
reads no further requests, as in Kafka.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.groups.classic_group_model import JoinRequest, JoinResult, SyncResult
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.find_coordinator import group_error
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.heartbeat import HeartbeatRequest
    from kafka_protocol_codec.generated.join_group import JoinGroupRequest
    from kafka_protocol_codec.generated.leave_group import LeaveGroupRequest
    from kafka_protocol_codec.generated.sync_group import SyncGroupRequest


def client_host(ctx: RequestContext) -> str:
    """The member's host as Kafka shows it (an InetAddress string: "/127.0.0.1")."""
    host = ctx.client_address.rsplit(":", 1)[0] if ctx.client_address else ""
    return "/" + host.strip("[]")


def _join_response(result: JoinResult, version: int) -> dict[str, Any]:
    protocol_name = result.protocol_name
    if version < 7 and protocol_name is None:
        protocol_name = ""
    return {
        "throttle_time_ms": 0, "error_code": result.error,
        "generation_id": result.generation_id, "protocol_type": result.protocol_type,
        "protocol_name": protocol_name, "leader": result.leader_id,
        "skip_assignment": result.skip_assignment, "member_id": result.member_id,
        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                     "metadata": m.metadata} for m in result.members],
    }


@handler(11, 0, 9)
async def handle_join_group(req: JoinGroupRequest, ctx: RequestContext) -> dict[str, Any]:
    version = ctx.api_version
    error = group_error(ctx, req.group_id)
    if error != ErrorCode.NONE:
        return _join_response(JoinResult(error, req.member_id), version)
    rebalance_timeout = req.rebalance_timeout_ms if version >= 1 else req.session_timeout_ms
    join = JoinRequest(
        group_id=req.group_id, member_id=req.member_id,
        group_instance_id=req.group_instance_id if version >= 5 else None,
        client_id=ctx.client_id or "", client_host=client_host(ctx),
        session_timeout_ms=req.session_timeout_ms, rebalance_timeout_ms=rebalance_timeout,
        protocol_type=req.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
        require_known_member_id=version >= 4, supports_skip_assignment=version >= 9,
        reason=req.reason if version >= 8 else None)
    future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()

    def done(result: JoinResult) -> None:
        if not future.done():
            future.set_result(result)

    ctx.cluster.consumer_groups.classic_members.join(join, done)
    return _join_response(await future, version)


@handler(14, 0, 5)
async def handle_sync_group(req: SyncGroupRequest, ctx: RequestContext) -> dict[str, Any]:
    version = ctx.api_version
    error = group_error(ctx, req.group_id)
    if error != ErrorCode.NONE:
        return _sync_response(SyncResult(error))
    future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()

    def done(result: SyncResult) -> None:
        if not future.done():
            future.set_result(result)

    ctx.cluster.consumer_groups.classic_members.sync(
        req.group_id, req.generation_id, req.member_id,
        req.group_instance_id if version >= 3 else None,
        req.protocol_type if version >= 5 else None,
        req.protocol_name if version >= 5 else None,
        [(a.member_id, bytes(a.assignment)) for a in req.assignments], done)
    return _sync_response(await future)


def _sync_response(result: SyncResult) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": result.error,
            "protocol_type": result.protocol_type, "protocol_name": result.protocol_name,
            "assignment": result.assignment}


@handler(12, 0, 4)
def handle_heartbeat(req: HeartbeatRequest, ctx: RequestContext) -> dict[str, Any]:
    error = group_error(ctx, req.group_id)
    if error == ErrorCode.NONE:
        error = ctx.cluster.consumer_groups.classic_members.heartbeat(
            req.group_id, req.generation_id, req.member_id,
            req.group_instance_id if ctx.api_version >= 3 else None)
    return {"throttle_time_ms": 0, "error_code": error}


@handler(13, 0, 5)
def handle_leave_group(req: LeaveGroupRequest, ctx: RequestContext) -> dict[str, Any]:
    version = ctx.api_version
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in req.members]
    else:
        leaving = [(req.member_id, None)]
    error = group_error(ctx, req.group_id)
    member_errors: list[ErrorCode] = []
    if error == ErrorCode.NONE:
        error, member_errors = ctx.cluster.consumer_groups.classic_members.leave(
            req.group_id, leaving)
    if version < 3:
        # one member, one error: Kafka reports the member's error at the top level
        if error == ErrorCode.NONE and member_errors:
            error = member_errors[0]
        return {"throttle_time_ms": 0, "error_code": error, "members": []}
    members = [] if error != ErrorCode.NONE else [
        {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
        for (member_id, instance_id), code in zip(leaving, member_errors, strict=True)]
    return {"throttle_time_ms": 0, "error_code": error, "members": members}
