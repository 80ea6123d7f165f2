"""Finding and administering groups: FindCoordinator (single and batched keys, both key
types, unknown types, denials), DescribeGroups, ListGroups (state and type filters, only
this case's groups compared: the real Kafka is shared) and DeleteGroups."""

from __future__ import annotations

from typing import Any

from tests.conformance.cases.group_support import (
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    GROUP,
    LEAVE_GROUP,
    TRANSACTION,
    consumer_member,
    coordinator_ready,
    grant,
    join,
    stable_member,
    wait_acl,
)
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases

LIST_GROUPS = 16
DELETE_GROUPS = 42
GROUP_RESOURCE = 3
DESCRIBE = 8
DELETE = 6


def find_body(version: int, keys: list[str], key_type: int = GROUP) -> dict[str, Any]:
    if version >= 4:
        return {"key_type": key_type, "coordinator_keys": keys}
    return {"key": keys[0], "key_type": key_type}


@cases("groups/find-coordinator-group", range(0, 7), api=FIND_COORDINATOR)
async def find_group(s: Session, version: int) -> None:
    group = s.name()
    await coordinator_ready(s, group)
    await s.call(FIND_COORDINATOR, version, find_body(version, [group]))


@cases("groups/find-coordinator-transaction", [1, 3, 4, 6], api=FIND_COORDINATOR)
async def find_transaction(s: Session, version: int) -> None:
    txn = s.name()
    await coordinator_ready(s, txn, TRANSACTION)
    await s.call(FIND_COORDINATOR, version, find_body(version, [txn], TRANSACTION))


@cases("groups/find-coordinator-batched", [4, 6], api=FIND_COORDINATOR)
async def find_batched(s: Session, version: int) -> None:
    """Several keys in one request, each answered in order."""
    keys = [s.name("a"), s.name("b"), s.name("c")]
    await coordinator_ready(s, keys[0])
    await s.call(FIND_COORDINATOR, version, find_body(version, keys))
    await coordinator_ready(s, keys[0], TRANSACTION)
    await s.call(FIND_COORDINATOR, version, find_body(version, keys, TRANSACTION),
                 label="transactions")


@cases("groups/find-coordinator-unknown-type", [1, 3, 4, 6], api=FIND_COORDINATOR)
async def find_unknown_type(s: Session, version: int) -> None:
    """A key type Kafka does not know (7): INVALID_REQUEST (42)."""
    await coordinator_ready(s, s.name())
    await s.call(FIND_COORDINATOR, version, find_body(version, [s.name()], 7))


@cases("groups/find-coordinator-empty-key", ["group", "transaction"], api=FIND_COORDINATOR)
async def find_empty_key(s: Session, which: str) -> None:
    """An empty group id or transactional id."""
    await coordinator_ready(s, s.name())
    key_type = GROUP if which == "group" else TRANSACTION
    await s.call(FIND_COORDINATOR, 3, find_body(3, [""], key_type))
    await s.call(FIND_COORDINATOR, 4, find_body(4, ["", s.name()], key_type))


@cases("groups/find-coordinator-denied", [0, 3, 4], api=FIND_COORDINATOR)
async def find_denied(s: Session, version: int) -> None:
    """alice may not describe the group or transactional id: GROUP_AUTHORIZATION_FAILED
    (30) / TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53)."""
    await coordinator_ready(s, s.name())
    await coordinator_ready(s, s.name(), TRANSACTION)
    await s.call(FIND_COORDINATOR, version, find_body(version, [s.name()]), user="alice")
    if version >= 1:
        await s.call(FIND_COORDINATOR, version,
                     find_body(version, [s.name("txn")], TRANSACTION), user="alice",
                     label="transaction")


@case("groups/find-coordinator-granted", api=FIND_COORDINATOR)
async def find_granted(s: Session) -> None:
    """With DESCRIBE on one group (a literal ACL), alice finds that group's coordinator and
    is still refused the other key of the batch."""
    group = s.name("mine")
    await coordinator_ready(s, group)
    await grant(s, GROUP_RESOURCE, group, DESCRIBE)

    async def applied() -> bool:
        answer = await s.call(FIND_COORDINATOR, 4, find_body(4, [group]), user="alice",
                              record=False)
        return answer is not None and answer.coordinators[0].error_code == 0
    await wait_acl(s, applied)
    await s.call(FIND_COORDINATOR, 4, find_body(4, [group, s.name("other")]), user="alice")


@cases("groups/describe-stable", [0, 3, 5], api=DESCRIBE_GROUPS)
async def describe_stable(s: Session, version: int) -> None:
    """A stable group with one member, its metadata and assignment."""
    group = s.name()
    await stable_member(s, group)
    await s.call(DESCRIBE_GROUPS, version, {"groups": [group],
                                            "include_authorized_operations": version >= 3})


@case("groups/describe-static-member", api=DESCRIBE_GROUPS)
async def describe_static(s: Session) -> None:
    group = s.name()
    await stable_member(s, group, instance_id="instance-a")
    await s.call(DESCRIBE_GROUPS, 5, {"groups": [group],
                                      "include_authorized_operations": False})


@case("groups/describe-empty-and-missing", api=DESCRIBE_GROUPS)
async def describe_empty(s: Session) -> None:
    """A group whose member left (Empty, keeps its protocol type) and one that never
    existed (Dead at v5, GROUP_ID_NOT_FOUND at v6 where the target has it)."""
    group = s.name()
    member, _ = await stable_member(s, group)
    await s.call(LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": member, "group_instance_id": None, "reason": None}]}, record=False)
    await s.call(DESCRIBE_GROUPS, 5, {"groups": [group, s.name("missing")],
                                      "include_authorized_operations": True})


@case("groups/describe-preparing-rebalance", api=DESCRIBE_GROUPS)
async def describe_completing(s: Session) -> None:
    """After a join that is not followed by a sync: CompletingRebalance, members listed
    without assignments."""
    group = s.name()
    await coordinator_ready(s, group)
    await join(s, group, record=False)
    await s.call(DESCRIBE_GROUPS, 5, {"groups": [group],
                                      "include_authorized_operations": False})


@case("groups/describe-denied", api=DESCRIBE_GROUPS)
async def describe_denied(s: Session) -> None:
    """alice without DESCRIBE: the group answers GROUP_AUTHORIZATION_FAILED (30)."""
    group = s.name()
    await stable_member(s, group)
    await s.call(DESCRIBE_GROUPS, 5, {"groups": [group, s.name("missing")],
                                      "include_authorized_operations": True}, user="alice")


@case("groups/describe-invalid-id", api=DESCRIBE_GROUPS)
async def describe_invalid(s: Session) -> None:
    await coordinator_ready(s, s.name())
    await s.call(DESCRIBE_GROUPS, 5, {"groups": [""],
                                      "include_authorized_operations": False})


async def listed(s: Session, version: int, body: dict[str, Any], label: str,
                 user: str | None = None) -> None:
    """ListGroups, recording only this case's groups (sorted) and the top-level error."""
    answer = await s.call(LIST_GROUPS, version, body, record=False, user=user)
    assert answer is not None
    mine = sorted((dict(g) for g in answer.groups if g.group_id.startswith(s.name())),
                  key=lambda g: str(g["group_id"]))
    s.observe(label, {"error": answer.error_code, "groups": mine})


@cases("groups/list", [0, 3, 4, 5], api=LIST_GROUPS)
async def list_groups(s: Session, version: int) -> None:
    """A stable group and an empty one, listed without filters."""
    await stable_member(s, s.name("stable"))
    member, _ = await stable_member(s, s.name("empty"))
    await s.call(LEAVE_GROUP, 5, {"group_id": s.name("empty"), "members": [
        {"member_id": member, "group_instance_id": None, "reason": None}]}, record=False)
    body: dict[str, Any] = {}
    if version >= 4:
        body["states_filter"] = []
    if version >= 5:
        body["types_filter"] = []
    await listed(s, version, body, "all")


@cases("groups/list-state-filter", ["Stable", "Empty", "stable", "Dead"], api=LIST_GROUPS)
async def list_state_filter(s: Session, state: str) -> None:
    """ListGroups v4 filtered by state (the filter is case-insensitive in Kafka)."""
    await stable_member(s, s.name("stable"))
    member, _ = await stable_member(s, s.name("empty"))
    await s.call(LEAVE_GROUP, 5, {"group_id": s.name("empty"), "members": [
        {"member_id": member, "group_instance_id": None, "reason": None}]}, record=False)
    await listed(s, 4, {"states_filter": [state]}, state)


@cases("groups/list-type-filter", ["classic", "consumer", "Classic", "share"],
       api=LIST_GROUPS)
async def list_type_filter(s: Session, group_type: str) -> None:
    """ListGroups v5 filtered by group type: a classic group and a consumer group."""
    await stable_member(s, s.name("classic"))
    await consumer_member(s, s.name("consumer"))
    await listed(s, 5, {"states_filter": [], "types_filter": [group_type]}, group_type)


@case("groups/list-denied", api=LIST_GROUPS)
async def list_denied(s: Session) -> None:
    """alice lists no group she may not describe; with DESCRIBE on one, that one."""
    await stable_member(s, s.name("a"))
    await stable_member(s, s.name("b"))
    await listed(s, 5, {"states_filter": [], "types_filter": []}, "none", user="alice")
    await grant(s, GROUP_RESOURCE, s.name("a"), DESCRIBE)

    async def applied() -> bool:
        answer = await s.call(LIST_GROUPS, 5, {}, record=False, user="alice")
        return answer is not None and any(g.group_id == s.name("a") for g in answer.groups)
    await wait_acl(s, applied)
    await listed(s, 5, {"states_filter": [], "types_filter": []}, "granted", user="alice")


@cases("groups/delete", [0, 2], api=DELETE_GROUPS)
async def delete_groups(s: Session, version: int) -> None:
    """An empty group is deleted; a group with a member: NON_EMPTY_GROUP (68); a group that
    does not exist: GROUP_ID_NOT_FOUND (69); an empty id: INVALID_GROUP_ID (24)."""
    empty, busy = s.name("empty"), s.name("busy")
    member, _ = await stable_member(s, empty)
    await stable_member(s, busy)
    await s.call(LEAVE_GROUP, 5, {"group_id": empty, "members": [
        {"member_id": member, "group_instance_id": None, "reason": None}]}, record=False)
    await s.call(DELETE_GROUPS, version, {"groups_names": [empty, busy, s.name("missing")]})
    await s.call(DELETE_GROUPS, version, {"groups_names": [empty]}, label="again")
    await s.call(DESCRIBE_GROUPS, 5, {"groups": [empty],
                                      "include_authorized_operations": False})


@case("groups/delete-invalid-id", api=DELETE_GROUPS)
async def delete_invalid(s: Session) -> None:
    await coordinator_ready(s, s.name())
    await s.call(DELETE_GROUPS, 2, {"groups_names": [""]})


@case("groups/delete-denied", api=DELETE_GROUPS)
async def delete_denied(s: Session) -> None:
    """alice without DELETE: GROUP_AUTHORIZATION_FAILED (30); with DELETE granted on one
    group by a prefixed ACL, that one goes."""
    group = s.name("x")
    member, _ = await stable_member(s, group)
    await s.call(LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": member, "group_instance_id": None, "reason": None}]}, record=False)
    await s.call(DELETE_GROUPS, 2, {"groups_names": [group]}, user="alice")
    await grant(s, GROUP_RESOURCE, s.name(), DELETE, pattern_type=4)

    async def applied() -> bool:
        answer = await s.call(DELETE_GROUPS, 2, {"groups_names": [s.name("probe")]},
                              user="alice", record=False)
        return answer is not None and answer.results[0].error_code != 30
    await wait_acl(s, applied)
    await s.call(DELETE_GROUPS, 2, {"groups_names": [group]}, user="alice", label="granted")


@case("groups/describe-consumer-group", api=DESCRIBE_GROUPS)
async def describe_consumer_group(s: Session) -> None:
    """DescribeGroups v5 of a KIP-848 consumer group (ConsumerGroupDescribe's business)."""
    group = s.name()
    await consumer_member(s, group)
    await s.call(DESCRIBE_GROUPS, 5, {"groups": [group],
                                      "include_authorized_operations": False})


@case("groups/delete-consumer-group", api=DELETE_GROUPS)
async def delete_consumer_group(s: Session) -> None:
    """A KIP-848 group with a member: NON_EMPTY_GROUP; once its member left, deleted."""
    group = s.name()
    member, _ = await consumer_member(s, group)
    await s.call(DELETE_GROUPS, 2, {"groups_names": [group]})
    await s.call(68, 1, {"group_id": group, "member_id": member, "member_epoch": -1,
                         "instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1,
                         "subscribed_topic_names": None, "subscribed_topic_regex": None,
                         "server_assignor": None, "topic_partitions": None}, record=False)
    await s.call(DELETE_GROUPS, 2, {"groups_names": [group]}, label="after leaving")


@case("groups/describe-operations-as-alice", api=DESCRIBE_GROUPS)
async def describe_operations_alice(s: Session) -> None:
    """alice with DESCRIBE on a group: the authorized operations are what her ACLs give."""
    group = s.name()
    await stable_member(s, group)
    await grant(s, GROUP_RESOURCE, group, DESCRIBE)

    async def applied() -> bool:
        answer = await s.call(DESCRIBE_GROUPS, 5, {"groups": [group],
                                                   "include_authorized_operations": True},
                              user="alice", record=False)
        return answer is not None and answer.groups[0].error_code == 0
    await wait_acl(s, applied)
    await s.call(DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": True},
                 user="alice")


BATCH = ["a", "b", "c", "d", "e", "f", "g", "h"]


@case("groups/batch-order", api=DELETE_GROUPS)
async def batch_order(s: Session) -> None:
    """Batches of groups answered in the order of Kafka's coordinator (by the hash order of
    their __consumer_offsets partitions): DescribeGroups, ConsumerGroupDescribe and
    DeleteGroups (whose refused groups come first within a partition)."""
    names = [s.name(suffix) for suffix in BATCH]
    for name in names[:3]:
        await stable_member(s, name)
    for name in names[3:5]:
        member, _ = await stable_member(s, name)
        await s.call(LEAVE_GROUP, 5, {"group_id": name, "members": [
            {"member_id": member, "group_instance_id": None, "reason": None}]}, record=False)
    await consumer_member(s, names[5])
    answer = await s.call(DESCRIBE_GROUPS, 5, {"groups": names,
                                               "include_authorized_operations": False},
                          record=False)
    assert answer is not None
    s.observe("describe", [(g.group_id, g.group_state) for g in answer.groups])
    described = await s.call(69, 0, {"group_ids": names,
                                     "include_authorized_operations": False}, record=False)
    assert described is not None
    s.observe("consumer describe", [(g.group_id, g.error_code) for g in described.groups])
    await s.call(DELETE_GROUPS, 2, {"groups_names": names})


@case("groups/duplicate-names", api=DELETE_GROUPS)
async def duplicate_names(s: Session) -> None:
    """A group named twice: DescribeGroups answers it twice, DeleteGroups once (Kafka takes
    the distinct names)."""
    group = s.name()
    member, _ = await stable_member(s, group)
    await s.call(DESCRIBE_GROUPS, 5, {"groups": [group, group],
                                      "include_authorized_operations": False})
    await s.call(LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": member, "group_instance_id": None, "reason": None}]}, record=False)
    await s.call(DELETE_GROUPS, 2, {"groups_names": [group, group]})


@case("groups/delete-denied-duplicate", api=DELETE_GROUPS)
async def delete_denied_duplicate(s: Session) -> None:
    """alice deleting a group she may not, named twice: one GROUP_AUTHORIZATION_FAILED."""
    group = s.name()
    await stable_member(s, group)
    await s.call(DELETE_GROUPS, 2, {"groups_names": [group, group]}, user="alice")
