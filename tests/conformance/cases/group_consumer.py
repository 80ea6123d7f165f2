"""KIP-848 consumer groups: ConsumerGroupHeartbeat (joining with epoch 0, the assignment,
fencing, leaving with -1 and -2, the validation of a request's fields) and
ConsumerGroupDescribe."""

from __future__ import annotations

import uuid

from tests.conformance.cases.group_support import (
    CONSUMER_GROUP_HEARTBEAT,
    consumer_member,
    coordinator_ready,
    heartbeat_body,
    stable_member,
)
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases

DESCRIBE = 69
KIP_1263 = ("Kafka 4.3+ (KIP-1263, KAFKA-20268) starts a consumer group at epoch 1 with an "
            "empty assignment and computes assignments in batches (group.consumer."
            "assignment.interval.ms, 1 s) off the heartbeat: a joining member's first answer "
            "is epoch 2 with no partitions, which come at a later heartbeat; mockbroker "
            "follows Kafka 4.0, whose first answer is epoch 1 with the assignment "
            "(cluster/groups/consumer_groups.py)")


async def topic_group(s: Session, partitions: int = 2) -> tuple[str, str]:
    topic, group = s.name("t"), s.name("g")
    await s.create_topic(topic, partitions)
    await coordinator_ready(s, group)
    return topic, group


@case("groups/consumer-join-v0", api=CONSUMER_GROUP_HEARTBEAT, known=KIP_1263)
async def join_v0(s: Session) -> None:
    """v0: the coordinator gives the member id; epoch 1 and the topic's partitions."""
    topic, group = await topic_group(s)
    await s.call(CONSUMER_GROUP_HEARTBEAT, 0, heartbeat_body(group, "", topics=[topic]))


@case("groups/consumer-join-v1", api=CONSUMER_GROUP_HEARTBEAT, known=KIP_1263)
async def join_v1(s: Session) -> None:
    """v1: the client chooses its member id; then a heartbeat with the epoch it got (no
    change: no assignment repeated) and one with the owned partitions."""
    topic, group = await topic_group(s)
    member = str(uuid.uuid4())
    joined = await s.call(CONSUMER_GROUP_HEARTBEAT, 1,
                          heartbeat_body(group, member, topics=[topic]))
    assert joined is not None
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, member, joined.member_epoch, topics=None, rebalance_timeout_ms=-1),
        label="heartbeat")
    owned = [{"topic_id": await s.topic_id(topic), "partitions": [0, 1]}]
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, member, joined.member_epoch, topics=None, rebalance_timeout_ms=-1,
        owned=owned), label="owned")


@case("groups/consumer-join-v1-empty-member-id", api=CONSUMER_GROUP_HEARTBEAT)
async def join_v1_without_id(s: Session) -> None:
    """v1 requires the client's member id: INVALID_REQUEST (42) without one."""
    topic, group = await topic_group(s)
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(group, "", topics=[topic]))


@case("groups/consumer-two-members", api=CONSUMER_GROUP_HEARTBEAT, known=KIP_1263)
async def two_members(s: Session) -> None:
    """A second member joins: it gets nothing until the first gives partitions up; the
    first learns its new (smaller) assignment on its next heartbeat."""
    topic, group = await topic_group(s, 2)
    first, epoch = await consumer_member(s, group, [topic])
    second = str(uuid.uuid4())
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(group, second, topics=[topic]),
                 label="second joins")
    answer = await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, first, epoch, topics=None, rebalance_timeout_ms=-1), record=False)
    assert answer is not None
    s.observe("first", {"error": answer.error_code, "epoch": answer.member_epoch,
                        "partitions": None if answer.assignment is None else sorted(
                            p for t in answer.assignment.topic_partitions
                            for p in t.partitions)})


@case("groups/consumer-unknown-topic", api=CONSUMER_GROUP_HEARTBEAT, known=KIP_1263)
async def unknown_topic(s: Session) -> None:
    """Subscribed to a topic that does not exist: joined, with nothing assigned."""
    _, group = await topic_group(s)
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, str(uuid.uuid4()), topics=[s.name("missing")]))


@cases("groups/consumer-fenced-epoch", ["ahead", "behind"], api=CONSUMER_GROUP_HEARTBEAT,
       known=lambda which: KIP_1263 + "; so one epoch behind is a rejoin (epoch 0) on "
       "mockbroker" if which == "behind" else None)
async def fenced_epoch(s: Session, which: str) -> None:
    """An epoch the member does not have: FENCED_MEMBER_EPOCH (110)."""
    topic, group = await topic_group(s)
    member, epoch = await consumer_member(s, group, [topic])
    wrong = epoch + 3 if which == "ahead" else epoch - 1
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, member, wrong, topics=None, rebalance_timeout_ms=-1))


@cases("groups/consumer-unknown-member", ["epoch-1", "leave", "unknown-group"],
       api=CONSUMER_GROUP_HEARTBEAT)
async def unknown_member(s: Session, which: str) -> None:
    """A member id the group does not know, with an epoch: UNKNOWN_MEMBER_ID (25); or in a
    group that does not exist."""
    topic, group = await topic_group(s)
    await consumer_member(s, group, [topic])
    target = group if which != "unknown-group" else s.name("missing")
    await coordinator_ready(s, target)
    epoch = -1 if which == "leave" else 1
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        target, str(uuid.uuid4()), epoch, topics=None, rebalance_timeout_ms=-1))


@case("groups/consumer-leave", api=CONSUMER_GROUP_HEARTBEAT, known=KIP_1263)
async def leave(s: Session) -> None:
    """Leaving with epoch -1: the answer carries -1; the group is then empty; a heartbeat
    after leaving: UNKNOWN_MEMBER_ID."""
    topic, group = await topic_group(s)
    member, epoch = await consumer_member(s, group, [topic])
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, member, -1, topics=None, rebalance_timeout_ms=-1))
    await s.call(DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, member, epoch, topics=None, rebalance_timeout_ms=-1), label="after")


@case("groups/consumer-static-leave", api=CONSUMER_GROUP_HEARTBEAT, known=KIP_1263)
async def static_leave(s: Session) -> None:
    """A static member leaves temporarily with -2; rejoining with the same instance id and
    a new member id takes its place back (epoch kept)."""
    topic, group = await topic_group(s)
    member, _ = await consumer_member(s, group, [topic], instance_id="instance-a")
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, member, -2, topics=None, instance_id="instance-a", rebalance_timeout_ms=-1))
    await s.call(DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False},
                 label="described")
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, str(uuid.uuid4()), 0, topics=[topic], instance_id="instance-a"),
        label="rejoin")


@case("groups/consumer-static-duplicate", api=CONSUMER_GROUP_HEARTBEAT)
async def static_duplicate(s: Session) -> None:
    """A second member with an instance id in use: UNRELEASED_INSTANCE_ID (111)."""
    topic, group = await topic_group(s)
    await consumer_member(s, group, [topic], instance_id="instance-a")
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, str(uuid.uuid4()), 0, topics=[topic], instance_id="instance-a"))


@cases("groups/consumer-invalid", ["empty-group", "no-rebalance-timeout", "no-topics",
                                   "negative-epoch", "unknown-assignor", "leave-static-as-1",
                                   "owned-not-empty-at-join", "bad-regex"],
       api=CONSUMER_GROUP_HEARTBEAT)
async def invalid(s: Session, which: str) -> None:
    """The request's fields checked before anything: INVALID_REQUEST (42),
    UNSUPPORTED_ASSIGNOR (112), INVALID_REGULAR_EXPRESSION."""
    topic, group = await topic_group(s)
    body = heartbeat_body(group, str(uuid.uuid4()), topics=[topic])
    if which == "empty-group":
        body["group_id"] = ""
    elif which == "no-rebalance-timeout":
        body["rebalance_timeout_ms"] = -1
    elif which == "no-topics":
        body["subscribed_topic_names"] = None
    elif which == "negative-epoch":
        body["member_epoch"] = -5
    elif which == "unknown-assignor":
        body["server_assignor"] = "nope"
    elif which == "leave-static-as-1":
        body["member_epoch"] = -2
        body["instance_id"] = None
    elif which == "owned-not-empty-at-join":
        body["topic_partitions"] = [{"topic_id": uuid.uuid4(), "partitions": [0]}]
    else:
        body["subscribed_topic_names"] = None
        body["subscribed_topic_regex"] = "(unclosed"
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, body)


@case("groups/consumer-assignors", api=CONSUMER_GROUP_HEARTBEAT, known=KIP_1263)
async def assignors(s: Session) -> None:
    """The two server assignors Kafka ships, by name."""
    topic, _ = await topic_group(s, 3)
    for name in ("uniform", "range"):
        await coordinator_ready(s, s.name(name))
        await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
            s.name(name), str(uuid.uuid4()), topics=[topic], assignor=name), label=name)


@case("groups/consumer-regex", api=CONSUMER_GROUP_HEARTBEAT)
async def regex(s: Session) -> None:
    """A subscription by regular expression (v1) is accepted. (When its topics arrive is
    not compared: Kafka resolves the expression off the heartbeat, against its group
    coordinator's metadata image, which may not hold a topic created just before.)"""
    _, group = await topic_group(s, 1)
    body = heartbeat_body(group, str(uuid.uuid4()), topics=None)
    body["subscribed_topic_regex"] = s.name("t") + ".*"
    joined = await s.call(CONSUMER_GROUP_HEARTBEAT, 1, body, record=False)
    assert joined is not None
    s.observe("joined", {"error": joined.error_code, "member": joined.member_id is not None,
                         "interval": joined.heartbeat_interval_ms})


@case("groups/consumer-classic-group-exists", api=CONSUMER_GROUP_HEARTBEAT)
async def classic_exists(s: Session) -> None:
    """Heartbeating into a classic group that has members: GROUP_ID_NOT_FOUND or an
    upgrade, as Kafka's migration policy decides."""
    topic, group = await topic_group(s)
    await stable_member(s, group, topic)
    answer = await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, str(uuid.uuid4()), topics=[topic]), record=False)
    assert answer is not None
    # the first answer's assignment is not compared: Kafka 4.3+ computes it off the
    # heartbeat (KIP-1263), so whether it is there yet is a race
    s.observe("joined", {"error": answer.error_code, "member": answer.member_id is not None})


@case("groups/consumer-denied", api=CONSUMER_GROUP_HEARTBEAT)
async def denied(s: Session) -> None:
    topic, group = await topic_group(s)
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, str(uuid.uuid4()), topics=[topic]), user="alice")


@cases("groups/consumer-describe", [0], api=DESCRIBE, known=KIP_1263)
async def describe(s: Session, version: int) -> None:
    """A consumer group with a member; a group that does not exist (GROUP_ID_NOT_FOUND)."""
    topic, group = await topic_group(s)
    await consumer_member(s, group, [topic])
    await s.call(DESCRIBE, version, {"group_ids": [group, s.name("missing")],
                                     "include_authorized_operations": True})


@case("groups/consumer-describe-classic", api=DESCRIBE)
async def describe_classic(s: Session) -> None:
    """ConsumerGroupDescribe of a classic group: GROUP_ID_NOT_FOUND (69)."""
    topic, group = await topic_group(s)
    await stable_member(s, group, topic)
    await s.call(DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})


@case("groups/consumer-describe-denied", api=DESCRIBE)
async def describe_denied(s: Session) -> None:
    topic, group = await topic_group(s)
    await consumer_member(s, group, [topic])
    await s.call(DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False},
                 user="alice")


@case("groups/consumer-rejoin-same-id", api=CONSUMER_GROUP_HEARTBEAT)
async def rejoin_same_id(s: Session) -> None:
    """A member that rejoins with epoch 0 and its own member id (after an error, KIP-848)
    stays the group's one member."""
    topic, group = await topic_group(s)
    member, _ = await consumer_member(s, group, [topic])
    answer = await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        group, member, 0, topics=[topic]), record=False)
    assert answer is not None
    s.observe("rejoined", {"error": answer.error_code, "same id": answer.member_id == member})
    described = await s.call(DESCRIBE, 0, {"group_ids": [group],
                                          "include_authorized_operations": False},
                             record=False)
    assert described is not None
    s.observe("members", len(described.groups[0].members))


@cases("groups/consumer-list-states", ["Stable", "Empty"], api=16)
async def list_states(s: Session, state: str) -> None:
    """ListGroups v5 by state for consumer groups: one with a member, one whose member
    left."""
    topic, group = await topic_group(s)
    await consumer_member(s, group, [topic])
    empty = s.name("empty")
    member, _ = await consumer_member(s, empty, [topic])
    await s.call(CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_body(
        empty, member, -1, topics=None, rebalance_timeout_ms=-1), record=False)
    answer = await s.call(16, 5, {"states_filter": [state], "types_filter": []},
                          record=False)
    assert answer is not None
    s.observe(state, sorted((g.group_id, g.group_state, g.group_type)
                            for g in answer.groups if g.group_id.startswith(s.name())))


@case("groups/consumer-describe-operations", api=DESCRIBE)
async def describe_operations(s: Session) -> None:
    """ConsumerGroupDescribe's authorized operations and errors, for a group and a missing
    one (the epochs, which KIP-1263 changed, are not compared here)."""
    topic, group = await topic_group(s)
    await consumer_member(s, group, [topic])
    answer = await s.call(DESCRIBE, 0, {"group_ids": [group, s.name("missing")],
                                        "include_authorized_operations": True},
                          record=False)
    assert answer is not None
    s.observe("groups", [(g.error_code, g.group_state, g.authorized_operations,
                          len(g.members)) for g in answer.groups])
