"""The classic group protocol: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, from the first
join (MEMBER_ID_REQUIRED) through static members, rebalances and the errors a member meets
(wrong generation, unknown member, inconsistent protocols, invalid session timeouts)."""

from __future__ import annotations

import asyncio

from tests.conformance.cases.api_versions import TABLE_REASON
from tests.conformance.cases.group_support import (
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    SYNC_GROUP,
    assignment,
    coordinator_ready,
    extra,
    join,
    join_body,
    second_member_joining,
    stable_member,
    sync_body,
)
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases


@cases("groups/join-member-id-required", [4, 5, 7, 9], api=JOIN_GROUP)
async def join_member_id_required(s: Session, version: int) -> None:
    """A new member without an id: MEMBER_ID_REQUIRED (79) with the id to use; joining with
    it makes the member the leader of generation 1."""
    group = s.name()
    await coordinator_ready(s, group)
    first = await s.call(JOIN_GROUP, version, join_body(group))
    assert first is not None
    await s.call(JOIN_GROUP, version, join_body(group, first.member_id))


@cases("groups/join-without-member-id-round", [2, 3], api=JOIN_GROUP)
async def join_old_versions(s: Session, version: int) -> None:
    """Before v4 the coordinator assigns the id and completes the join at once."""
    group = s.name()
    await coordinator_ready(s, group)
    await s.call(JOIN_GROUP, version, join_body(group))


@cases("groups/join-static-member", [5, 9], api=JOIN_GROUP)
async def join_static(s: Session, version: int) -> None:
    """A static member (group_instance_id) joins without the MEMBER_ID_REQUIRED round."""
    group = s.name()
    await coordinator_ready(s, group)
    await s.call(JOIN_GROUP, version, join_body(group, instance_id="instance-a"))


@case("groups/static-member-replaced-is-fenced", api=JOIN_GROUP)
async def static_replaced(s: Session) -> None:
    """A static member that rejoins without its id gets a new one; the old id is fenced:
    FENCED_INSTANCE_ID (82) on heartbeat and sync."""
    group = s.name()
    old_id, generation = await stable_member(s, group, instance_id="instance-a")
    await s.call(JOIN_GROUP, 9, join_body(group, instance_id="instance-a"))
    await s.call(HEARTBEAT, 4, {"group_id": group, "generation_id": generation,
                                "member_id": old_id, "group_instance_id": "instance-a"})
    await s.call(SYNC_GROUP, 5, sync_body(group, generation, old_id, instance_id="instance-a"))


@case("groups/static-member-unknown-id", api=JOIN_GROUP)
async def static_unknown_id(s: Session) -> None:
    """A static member joining with a member id the group never gave:
    FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID as Kafka decides."""
    group = s.name()
    await stable_member(s, group, instance_id="instance-a")
    await s.call(JOIN_GROUP, 9, join_body(group, "made-up-id", instance_id="instance-a"))


@case("groups/join-inconsistent-protocol-type", api=JOIN_GROUP)
async def inconsistent_type(s: Session) -> None:
    """A second member with another protocol type: INCONSISTENT_GROUP_PROTOCOL (23)."""
    group = s.name()
    await stable_member(s, group)
    await s.call(JOIN_GROUP, 9, join_body(group, protocol_type="other"))
    await s.call(JOIN_GROUP, 9, join_body(group, "x", protocol_type="other"),
                 label="with an id")


@case("groups/join-no-common-protocol", api=JOIN_GROUP)
async def no_common_protocol(s: Session) -> None:
    """A second member whose protocols share no name with the group's:
    INCONSISTENT_GROUP_PROTOCOL (23)."""
    group = s.name()
    await stable_member(s, group)
    await s.call(JOIN_GROUP, 9, join_body(group, protocols=["roundrobin"]))


@cases("groups/join-empty-protocols", ["no-type", "no-protocols"], api=JOIN_GROUP)
async def empty_protocols(s: Session, which: str) -> None:
    """An empty protocol type or no protocols at all: INCONSISTENT_GROUP_PROTOCOL (23)."""
    group = s.name()
    await coordinator_ready(s, group)
    body = join_body(group, protocol_type="" if which == "no-type" else "consumer")
    if which == "no-protocols":
        body["protocols"] = []
    await s.call(JOIN_GROUP, 9, body)


@cases("groups/join-session-timeout", [1, 5999, 1800001], api=JOIN_GROUP)
async def session_timeout(s: Session, timeout_ms: int) -> None:
    """A session timeout outside group.min/max.session.timeout.ms (6 s .. 30 min):
    INVALID_SESSION_TIMEOUT (26)."""
    group = s.name()
    await coordinator_ready(s, group)
    await s.call(JOIN_GROUP, 9, join_body(group, session_timeout_ms=timeout_ms))


@case("groups/join-unknown-member-id", api=JOIN_GROUP)
async def join_unknown_member(s: Session) -> None:
    """Joining a new group with an id it never gave: UNKNOWN_MEMBER_ID (25)."""
    group = s.name()
    await coordinator_ready(s, group)
    await s.call(JOIN_GROUP, 9, join_body(group, "never-given"))


@cases("groups/join-invalid-group-id", [2, 9], api=JOIN_GROUP)
async def join_invalid_group(s: Session, version: int) -> None:
    """An empty group id: INVALID_GROUP_ID (24)."""
    await s.call(JOIN_GROUP, version, join_body(""))


@case("groups/join-denied", api=JOIN_GROUP)
async def join_denied(s: Session) -> None:
    """alice, without READ on the group: GROUP_AUTHORIZATION_FAILED (30)."""
    group = s.name()
    await coordinator_ready(s, group)
    await s.call(JOIN_GROUP, 9, join_body(group), user="alice")


@case("groups/join-existing-member-rejoins", api=JOIN_GROUP)
async def rejoin_stable(s: Session) -> None:
    """The only member of a stable group rejoins with the same protocols: the same
    generation comes back (no rebalance), then sync returns its assignment."""
    group = s.name()
    member, _ = await stable_member(s, group)
    joined = await s.call(JOIN_GROUP, 9, join_body(group, member))
    assert joined is not None
    await s.call(SYNC_GROUP, 5, sync_body(group, joined.generation_id, member))


@case("groups/join-leader-changes-protocols", api=JOIN_GROUP)
async def rejoin_new_metadata(s: Session) -> None:
    """The leader rejoins with new subscription metadata: a new generation."""
    group = s.name()
    member, _ = await stable_member(s, group)
    await s.call(JOIN_GROUP, 9, join_body(group, member, topics=["t", "u"]))


@cases("groups/sync-leader-assignment", [0, 3, 4, 5], api=SYNC_GROUP)
async def sync_assignment(s: Session, version: int) -> None:
    """The leader syncs with its assignment and gets it back."""
    group = s.name()
    await coordinator_ready(s, group)
    joined = await join(s, group, version=5 if version >= 3 else 2)
    body = sync_body(group, joined.generation_id, joined.member_id,
                     {joined.member_id: assignment({"t": [0, 1]})})
    await s.call(SYNC_GROUP, version, body)


@cases("groups/sync-errors", ["unknown-member", "generation", "protocol-type",
                              "protocol-name", "unknown-group"], api=SYNC_GROUP)
async def sync_errors(s: Session, which: str) -> None:
    """SyncGroup with an unknown member (25), a wrong generation (22), a protocol type or
    name the group does not use (23), or for a group that does not exist."""
    group = s.name()
    member, generation = await stable_member(s, group)
    body = sync_body(group, generation, member)
    if which == "unknown-member":
        body["member_id"] = "someone-else"
    elif which == "generation":
        body["generation_id"] = generation + 7
    elif which == "protocol-type":
        body["protocol_type"] = "other"
    elif which == "protocol-name":
        body["protocol_name"] = "roundrobin"
    else:
        body["group_id"] = s.name("missing")
    await s.call(SYNC_GROUP, 5, body)


@cases("groups/heartbeat-stable", [0, 3, 4], api=HEARTBEAT)
async def heartbeat_ok(s: Session, version: int) -> None:
    group = s.name()
    member, generation = await stable_member(s, group)
    await s.call(HEARTBEAT, version, {"group_id": group, "generation_id": generation,
                                      "member_id": member, "group_instance_id": None})


@cases("groups/heartbeat-errors", ["generation", "unknown-member", "unknown-group",
                                   "empty-group-id"], api=HEARTBEAT)
async def heartbeat_errors(s: Session, which: str) -> None:
    """ILLEGAL_GENERATION (22), UNKNOWN_MEMBER_ID (25), a group that does not exist, an
    empty group id."""
    group = s.name()
    member, generation = await stable_member(s, group)
    body = {"group_id": group, "generation_id": generation, "member_id": member,
            "group_instance_id": None}
    if which == "generation":
        body["generation_id"] = generation + 1
    elif which == "unknown-member":
        body["member_id"] = "someone-else"
    elif which == "unknown-group":
        body["group_id"] = s.name("missing")
    else:
        body["group_id"] = ""
    await s.call(HEARTBEAT, 4, body)


@case("groups/heartbeat-denied", api=HEARTBEAT)
async def heartbeat_denied(s: Session) -> None:
    group = s.name()
    member, generation = await stable_member(s, group)
    await s.call(HEARTBEAT, 4, {"group_id": group, "generation_id": generation,
                                "member_id": member, "group_instance_id": None},
                 user="alice")


@case("groups/rebalance-in-progress", api=HEARTBEAT)
async def rebalance_in_progress(s: Session) -> None:
    """A second member joins a stable group: the first one's heartbeat answers
    REBALANCE_IN_PROGRESS (27); once it rejoins, both get generation 2, one leader; its
    sync with the old generation is ILLEGAL_GENERATION, with the new one it completes."""
    group = s.name()
    first, generation = await stable_member(s, group)
    _, second_join = await second_member_joining(s, group)
    await s.call(HEARTBEAT, 4, {"group_id": group, "generation_id": generation,
                                "member_id": first, "group_instance_id": None})
    rejoined = await s.call(JOIN_GROUP, 9, join_body(group, first), record=False)
    joined_second = await second_join
    assert rejoined is not None and joined_second is not None
    s.observe("rejoin", {"error": rejoined.error_code, "generation": rejoined.generation_id,
                         "leader-is-first": rejoined.leader == first,
                         "members": len(rejoined.members)})
    s.observe("second", {"error": joined_second.error_code,
                         "generation": joined_second.generation_id,
                         "members": len(joined_second.members)})
    await s.call(SYNC_GROUP, 5, sync_body(group, generation, first), label="old generation")
    await s.call(HEARTBEAT, 4, {"group_id": group, "generation_id": rejoined.generation_id,
                                "member_id": first, "group_instance_id": None},
                 label="heartbeat while syncing")


@cases("groups/leave-single", [0, 2], api=LEAVE_GROUP)
async def leave_single(s: Session, version: int) -> None:
    """LeaveGroup v0-v2 (one member id): the group is then Empty."""
    group = s.name()
    member, _ = await stable_member(s, group)
    await s.call(LEAVE_GROUP, version, {"group_id": group, "member_id": member})
    await s.call(LEAVE_GROUP, version, {"group_id": group, "member_id": member},
                 label="again")


@cases("groups/leave-batch", [3, 4, 5], api=LEAVE_GROUP)
async def leave_batch(s: Session, version: int) -> None:
    """LeaveGroup v3+: a member by id, an unknown member id (25) and an unknown instance
    (UNKNOWN_MEMBER_ID), each answered in `members`."""
    group = s.name()
    member, _ = await stable_member(s, group)
    members = [{"member_id": member, "group_instance_id": None, "reason": "done"},
               {"member_id": "nobody", "group_instance_id": None, "reason": None},
               {"member_id": "", "group_instance_id": "nowhere", "reason": None}]
    await s.call(LEAVE_GROUP, version, {"group_id": group, "members": members})


@case("groups/leave-static-member", api=LEAVE_GROUP)
async def leave_static(s: Session) -> None:
    """A static member leaves by instance id (member id unknown to the caller), then a
    stale member id with that instance id."""
    group = s.name()
    member, _ = await stable_member(s, group, instance_id="instance-a")
    await s.call(LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": "", "group_instance_id": "instance-a", "reason": None}]})
    await s.call(LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": member, "group_instance_id": "instance-a", "reason": None}]},
        label="again")


@cases("groups/leave-errors", ["unknown-group", "denied", "fenced-instance",
                               "unknown-instance"], api=LEAVE_GROUP)
async def leave_errors(s: Session, which: str) -> None:
    group = s.name()
    member, _ = await stable_member(s, group, instance_id="instance-a")
    if which == "unknown-group":
        await s.call(LEAVE_GROUP, 5, {"group_id": s.name("missing"), "members": [
            {"member_id": member, "group_instance_id": None, "reason": None}]})
    elif which == "denied":
        await s.call(LEAVE_GROUP, 5, {"group_id": group, "members": [
            {"member_id": member, "group_instance_id": None, "reason": None}]},
            user="alice")
    elif which == "fenced-instance":
        await s.call(LEAVE_GROUP, 5, {"group_id": group, "members": [
            {"member_id": "other-id", "group_instance_id": "instance-a", "reason": None}]})
    else:
        await s.call(LEAVE_GROUP, 5, {"group_id": group, "members": [
            {"member_id": member, "group_instance_id": "instance-b", "reason": None}]})


@cases("groups/removed-versions", ["8v0", "8v1", "11v0", "11v1", "9v0", "20v0"],
       api=JOIN_GROUP, known=lambda which: TABLE_REASON if which.startswith("11") else None)
async def removed_versions(s: Session, which: str) -> None:
    """Versions Kafka 4 removed (KIP-896: OffsetCommit v0-1, JoinGroup v0-1, OffsetFetch v0,
    DeleteTopics v0): the broker closes the connection."""
    api_key, version = (int(part) for part in which.split("v"))
    group = s.name()
    await coordinator_ready(s, group)
    bodies = {8: {"group_id": group, "topics": []}, 9: {"group_id": group, "topics": []},
              11: join_body(group), 20: {"topic_names": [], "timeout_ms": 1000}}
    await s.call(api_key, version, bodies[api_key])


@case("groups/sync-follower-waits-for-leader", api=SYNC_GROUP)
async def sync_follower(s: Session) -> None:
    """Two members after a rebalance: the follower's SyncGroup waits until the leader sent
    the assignment, then each gets its own part."""
    group = s.name()
    first, _ = await stable_member(s, group)
    other, second_join = await second_member_joining(s, group)
    leader = await s.call(JOIN_GROUP, 9, join_body(group, first), record=False)
    follower = await second_join
    assert leader is not None and follower is not None
    s.observe("roles", {"first leads": leader.leader == first, "members": len(leader.members),
                        "follower members": len(follower.members)})
    waiting = asyncio.create_task(s.call(SYNC_GROUP, 5, sync_body(
        group, follower.generation_id, follower.member_id), user=other, record=False))
    await asyncio.sleep(0.2)
    s.observe("follower answered before the leader", waiting.done())
    await s.call(SYNC_GROUP, 5, sync_body(group, leader.generation_id, first, {
        first: assignment({"t": [0]}), follower.member_id: assignment({"t": [1]})}),
        label="leader")
    answered = await waiting
    assert answered is not None
    s.observe("follower", {"error": answered.error_code,
                           "assignment": answered.assignment == assignment({"t": [1]})})


@case("groups/heartbeat-static-wrong-instance", api=HEARTBEAT)
async def heartbeat_wrong_instance(s: Session) -> None:
    """A static member's heartbeat naming another instance id: FENCED_INSTANCE_ID or
    UNKNOWN_MEMBER_ID, as Kafka decides."""
    group = s.name()
    member, generation = await stable_member(s, group, instance_id="instance-a")
    await s.call(HEARTBEAT, 4, {"group_id": group, "generation_id": generation,
                                "member_id": member, "group_instance_id": "instance-b"})
    await s.call(HEARTBEAT, 4, {"group_id": group, "generation_id": generation,
                                "member_id": "other", "group_instance_id": "instance-a"},
                 label="other member id")


@case("groups/rebalance-timeout-drops-member", api=JOIN_GROUP)
async def rebalance_timeout(s: Session) -> None:
    """A member that does not rejoin within its rebalance timeout (0.5 s) is removed: the
    joining member completes the generation alone, and the old member's heartbeat is
    UNKNOWN_MEMBER_ID."""
    group = s.name()
    await coordinator_ready(s, group)
    joined = await join(s, group, record=False, rebalance_timeout_ms=500)
    first = joined.member_id
    synced = await s.call(SYNC_GROUP, 5, sync_body(group, joined.generation_id, first, {
        first: assignment({"t": [0]})}), record=False)
    assert synced is not None and synced.error_code == 0
    other = await extra(s, "second")
    required = await s.call(JOIN_GROUP, 9, join_body(group, rebalance_timeout_ms=500),
                            user=other, record=False)
    assert required is not None and required.error_code == 79
    second = await s.call(JOIN_GROUP, 9, join_body(group, required.member_id,
                                                    rebalance_timeout_ms=500), user=other,
                          record=False)
    assert second is not None
    s.observe("second", {"error": second.error_code, "generation": second.generation_id,
                         "leads": second.leader == second.member_id,
                         "members": len(second.members)})
    await s.call(HEARTBEAT, 4, {"group_id": group, "generation_id": joined.generation_id,
                                "member_id": first, "group_instance_id": None},
                 label="dropped member")


@case("groups/leader-leaves-while-completing", api=LEAVE_GROUP)
async def leader_leaves(s: Session) -> None:
    """The leader of a generation leaves before its SyncGroup: the group rebalances, the
    follower's pending sync answers REBALANCE_IN_PROGRESS."""
    group = s.name()
    first, _ = await stable_member(s, group)
    other, second_join = await second_member_joining(s, group)
    leader = await s.call(JOIN_GROUP, 9, join_body(group, first), record=False)
    follower = await second_join
    assert leader is not None and follower is not None
    waiting = asyncio.create_task(s.call(SYNC_GROUP, 5, sync_body(
        group, follower.generation_id, follower.member_id), user=other, record=False))
    await asyncio.sleep(0.1)
    await s.call(LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": first, "group_instance_id": None, "reason": None}]})
    answered = await waiting
    assert answered is not None
    s.observe("follower sync", answered.error_code)
