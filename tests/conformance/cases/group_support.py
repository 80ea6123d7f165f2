"""Helpers shared by the group, offset and transaction cases: the consumer protocol's
subscription and assignment bytes, extra connections (a JoinGroup that waits for a rebalance
holds its connection, as Kafka mutes a connection until it answered), and the setup steps
(coordinator ready, a classic group with one stable member) every such case starts from.
Nothing here records unless a case asks for it."""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Sequence
from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.api import api

from tests.conformance.harness import Session
from tests.conformance.normalize import at_version
from tests.support.rawclient import RawClient

FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
DESCRIBE_GROUPS = 15
CONSUMER_GROUP_HEARTBEAT = 68
GROUP = 0
TRANSACTION = 1
SESSION_TIMEOUT_MS = 10000
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
NOT_READY = (14, 15, 16)
REBALANCE_TIMEOUT_MS = 10000


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def subscription(topics: Sequence[str]) -> bytes:
    """ConsumerProtocolSubscription v0: the topics, no user data."""
    return (struct.pack(">hi", 0, len(topics)) + b"".join(_string(t) for t in topics)
            + struct.pack(">i", -1))


def assignment(partitions: dict[str, Sequence[int]]) -> bytes:
    """ConsumerProtocolAssignment v0: topic -> partitions, no user data."""
    out = struct.pack(">hi", 0, len(partitions))
    for topic, indexes in partitions.items():
        out += _string(topic) + struct.pack(">i", len(indexes))
        out += b"".join(struct.pack(">i", i) for i in indexes)
    return out + struct.pack(">i", -1)


async def extra(s: Session, key: str) -> str:
    """A second PLAINTEXT connection of the session, used as `user=key` in `s.call`."""
    if key not in s._connections:
        s._connections[key] = await RawClient.connect(s.target.port, client_id="conformance")
    return key


async def coordinator_ready(s: Session, key: str, key_type: int = GROUP) -> None:
    """Poll until the coordinator of `key` is known and has loaded its partition (the
    internal topics are created on first use, and a coordinator answers
    NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS until it loaded; unrecorded)."""
    async def found() -> bool:
        answer = await s.call(FIND_COORDINATOR, 4, {"key_type": key_type,
                                                    "coordinator_keys": [key]}, record=False)
        assert answer is not None
        return bool(answer.coordinators[0].error_code == 0)
    await s.until(found, what=f"the coordinator of {key}")

    async def loaded() -> bool:
        if key_type == GROUP:
            answer = await s.call(9, 8, {"groups": [{"group_id": key, "topics": None}],
                                         "require_stable": False}, record=False)
            assert answer is not None
            error = answer.groups[0].error_code
        else:
            answer = await s.call(65, 0, {"transactional_ids": [key]}, record=False)
            assert answer is not None
            error = answer.transaction_states[0].error_code
        return error not in NOT_READY
    await s.until(loaded, what=f"the coordinator of {key} loaded")


def join_body(group: str, member_id: str = "", *, topics: Sequence[str] = ("t",),
              instance_id: str | None = None, protocol_type: str = "consumer",
              protocols: Sequence[str] = ("range",),
              session_timeout_ms: int = SESSION_TIMEOUT_MS,
              rebalance_timeout_ms: int = REBALANCE_TIMEOUT_MS) -> dict[str, Any]:
    return {"group_id": group, "session_timeout_ms": session_timeout_ms,
            "rebalance_timeout_ms": rebalance_timeout_ms, "member_id": member_id,
            "group_instance_id": instance_id, "protocol_type": protocol_type,
            "protocols": [{"name": p, "metadata": subscription(topics)} for p in protocols],
            "reason": None}


async def join(s: Session, group: str, version: int = 9, *, record: bool = True,
               user: str | None = None, **options: Any) -> Struct:
    """JoinGroup as a new member: at v4+ the MEMBER_ID_REQUIRED round trip first (not
    recorded), then the join with the id; returns the join response."""
    member_id = options.pop("member_id", "")
    if version >= 4 and not member_id and options.get("instance_id") is None:
        first = await s.call(JOIN_GROUP, version, join_body(group, **options), user=user,
                             record=False)
        assert first is not None and first.error_code == 79, first
        member_id = first.member_id
    answer = await s.call(JOIN_GROUP, version, join_body(group, member_id, **options),
                          user=user, record=record)
    assert answer is not None
    return answer


def sync_body(group: str, generation: int, member_id: str,
              assignments: dict[str, bytes] | None = None, *,
              instance_id: str | None = None, protocol_type: str | None = "consumer",
              protocol_name: str | None = "range") -> dict[str, Any]:
    return {"group_id": group, "generation_id": generation, "member_id": member_id,
            "group_instance_id": instance_id, "protocol_type": protocol_type,
            "protocol_name": protocol_name,
            "assignments": [{"member_id": m, "assignment": a}
                            for m, a in (assignments or {}).items()]}


async def stable_member(s: Session, group: str, topic: str = "t", *,
                        instance_id: str | None = None, record: bool = False
                        ) -> tuple[str, int]:
    """A classic consumer group with one member that joined and synced (its leader):
    returns (member id, generation)."""
    await coordinator_ready(s, group)
    joined = await join(s, group, topics=[topic], instance_id=instance_id, record=record)
    assert joined.error_code == 0, joined
    synced = await s.call(SYNC_GROUP, 5, sync_body(
        group, joined.generation_id, joined.member_id,
        {joined.member_id: assignment({topic: [0]})}, instance_id=instance_id),
        record=record)
    assert synced is not None and synced.error_code == 0, synced
    return joined.member_id, joined.generation_id


async def group_state(s: Session, group: str) -> str:
    answer = await s.call(DESCRIBE_GROUPS, 5, {"groups": [group],
                                               "include_authorized_operations": False},
                          record=False)
    assert answer is not None
    return str(answer.groups[0].group_state)


async def wait_state(s: Session, group: str, state: str) -> None:
    async def reached() -> bool:
        return await group_state(s, group) == state
    await s.until(reached, timeout=10.0, what=f"{group} in state {state}")


async def second_member_joining(s: Session, group: str
                                ) -> tuple[str, asyncio.Task[Struct | None]]:
    """A second member (a connection of its own) joins a stable group: after the
    MEMBER_ID_REQUIRED round trip its JoinGroup waits in the rebalance it started, which the
    group is in on return. Returns that member's connection key and its pending join."""
    other = await extra(s, "second")
    required = await s.call(JOIN_GROUP, 9, join_body(group), user=other, record=False)
    assert required is not None and required.error_code == 79
    pending = asyncio.create_task(s.call(
        JOIN_GROUP, 9, join_body(group, required.member_id), user=other, record=False))
    await wait_state(s, group, "PreparingRebalance")
    return other, pending


def heartbeat_body(group: str, member_id: str, epoch: int = 0, *,
                   topics: Sequence[str] | None = ("t",), instance_id: str | None = None,
                   rebalance_timeout_ms: int = 30000, assignor: str | None = None,
                   owned: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """ConsumerGroupHeartbeat (KIP-848); a join (epoch 0) sends everything."""
    return {"group_id": group, "member_id": member_id, "member_epoch": epoch,
            "instance_id": instance_id, "rack_id": None,
            "rebalance_timeout_ms": rebalance_timeout_ms, "subscribed_topic_names": topics,
            "subscribed_topic_regex": None, "server_assignor": assignor,
            "topic_partitions": owned if owned is not None else ([] if epoch == 0 else None)}


async def consumer_member(s: Session, group: str, topics: Sequence[str] = ("t",), *,
                          record: bool = False, instance_id: str | None = None
                          ) -> tuple[str, int]:
    """A KIP-848 consumer group with one member (v1, the id chosen by the client): returns
    (member id, epoch)."""
    await coordinator_ready(s, group)
    member_id = str(uuid.uuid4())
    answer = await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, member_id, topics=topics, instance_id=instance_id), record=record)
    assert answer is not None and answer.error_code == 0, answer
    epoch: int = answer.member_epoch

    async def stable() -> bool:
        # Kafka 4.3+ computes the assignment off the heartbeat (KIP-1263): heartbeat until
        # the group is Stable, so what follows does not race it
        nonlocal epoch
        beat = await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
            group, member_id, epoch, topics=None, instance_id=instance_id,
            rebalance_timeout_ms=-1), record=False)
        assert beat is not None and beat.error_code == 0, beat
        epoch = beat.member_epoch
        described = await s.call(69, 0, {"group_ids": [group],
                                        "include_authorized_operations": False},
                                 record=False)
        assert described is not None
        return str(described.groups[0].group_state) == "Stable"
    await s.until(stable, timeout=10.0, what=f"{group} stable")
    return member_id, epoch


def sorted_answer(value: Any) -> Any:
    """A response with every list of named or indexed entries sorted by name and index: for
    answers whose order Kafka takes from a hash table (a group's committed offsets, the
    groups of a DeleteGroups, the partitions of an AddPartitionsToTxn), which is no part of
    the protocol."""
    if isinstance(value, dict):
        return {k: sorted_answer(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [sorted_answer(v) for v in value]
        if items and all(isinstance(v, dict) for v in items):
            def key(item: dict[str, Any]) -> tuple[str, int]:
                name = item.get("name", item.get("group_id", item.get("topic", "")))
                index = item.get("partition_index", item.get("partition", 0))
                return str(name), int(index) if isinstance(index, int) else 0
            items.sort(key=key)
        return items
    return value


async def call_sorted(s: Session, api_key: int, version: int, body: dict[str, Any],
                      label: str | None = None, user: str | None = None) -> Any:
    """`s.call`, the answer recorded with its entries sorted (`sorted_answer`)."""
    answer = await s.call(api_key, version, body, record=False, user=user)
    s.observe(label or f"{api_key}v{version}",
              None if answer is None else sorted_answer(at_version(
                  api(api_key).response.fields, version, answer)))
    return answer


async def grant(s: Session, resource_type: int, name: str, operation: int,
                principal: str = "User:alice", pattern_type: int = 3) -> None:
    """CreateAcls v3: allow `principal` `operation` on a resource (literal pattern)."""
    answer = await s.call(30, 3, {"creations": [{
        "resource_type": resource_type, "resource_name": name,
        "resource_pattern_type": pattern_type, "principal": principal, "host": "*",
        "operation": operation, "permission_type": 3}]}, record=False)
    assert answer is not None and answer.results[0].error_code == 0, answer


async def wait_acl(s: Session, check: Any) -> None:
    """ACLs reach the authorizer asynchronously on Kafka: poll `check()` (bounded)."""
    await s.until(check, timeout=10.0, what="the ACL to apply")


__all__ = [
    "CONSUMER_GROUP_HEARTBEAT",
    "DESCRIBE_GROUPS",
    "FIND_COORDINATOR",
    "GROUP",
    "HEARTBEAT",
    "JOIN_GROUP",
    "LEAVE_GROUP",
    "REBALANCE_TIMEOUT_MS",
    "SESSION_TIMEOUT_MS",
    "SYNC_GROUP",
    "TRANSACTION",
    "assignment",
    "call_sorted",
    "consumer_member",
    "coordinator_ready",
    "extra",
    "grant",
    "group_state",
    "heartbeat_body",
    "join",
    "join_body",
    "sorted_answer",
    "stable_member",
    "subscription",
    "sync_body",
    "wait_acl",
    "wait_state",
]
