"""Committed offsets: OffsetCommit (simple consumers, group members, the errors of a wrong
generation, an unknown member, too much metadata, unknown topics, denials), OffsetFetch
(single and batched groups, all partitions, require_stable with an open transaction) and
OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC and the rest)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.conformance.cases.group_support import (
    JOIN_GROUP,
    LEAVE_GROUP,
    call_sorted,
    consumer_member,
    coordinator_ready,
    extra,
    grant,
    join_body,
    stable_member,
    wait_acl,
    wait_state,
)
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
OFFSET_DELETE = 47
GROUP_RESOURCE = 3
TOPIC_RESOURCE = 2
READ = 3


def commit_body(group: str, topic: str, offsets: Sequence[int] = (5,), *,
                generation: int = -1, member_id: str = "", metadata: str | None = "meta",
                instance_id: str | None = None) -> dict[str, Any]:
    return {"group_id": group, "generation_id_or_member_epoch": generation,
            "member_id": member_id, "group_instance_id": instance_id,
            "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": i, "committed_offset": offset,
                 "committed_leader_epoch": -1, "commit_timestamp": -1,
                 "committed_metadata": metadata} for i, offset in enumerate(offsets)]}]}


def fetch_body(version: int, group: str, topics: dict[str, list[int]] | None,
               *, require_stable: bool = False) -> dict[str, Any]:
    wanted = None if topics is None else [
        {"name": t, "partition_indexes": p} for t, p in topics.items()]
    if version >= 8:
        return {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1,
                            "topics": wanted}], "require_stable": require_stable}
    return {"group_id": group, "topics": wanted, "require_stable": require_stable}


async def topic_and_group(s: Session, partitions: int = 2) -> tuple[str, str]:
    topic, group = s.name("t"), s.name("g")
    await s.create_topic(topic, partitions)
    await coordinator_ready(s, group)
    return topic, group


@cases("offsets/commit-simple-consumer", range(2, 10), api=OFFSET_COMMIT)
async def commit_simple(s: Session, version: int) -> None:
    """A simple consumer (generation -1, no member id) commits to a group that does not
    exist yet; a fetch reads the offsets and metadata back."""
    topic, group = await topic_and_group(s)
    await s.call(OFFSET_COMMIT, version, commit_body(group, topic, (5, 7)))
    await s.call(OFFSET_FETCH, min(version, 9),
                 fetch_body(min(version, 9), group, {topic: [0, 1]}))


@cases("offsets/commit-null-metadata", [2, 9], api=OFFSET_COMMIT)
async def commit_null_metadata(s: Session, version: int) -> None:
    """Null committed metadata reads back as the empty string."""
    topic, group = await topic_and_group(s, 1)
    await s.call(OFFSET_COMMIT, version, commit_body(group, topic, metadata=None))
    await s.call(OFFSET_FETCH, 5, fetch_body(5, group, {topic: [0]}))


@cases("offsets/commit-metadata-too-large", [4096, 4097], api=OFFSET_COMMIT)
async def commit_metadata_size(s: Session, size: int) -> None:
    """offset.metadata.max.bytes (4096): one byte more is OFFSET_METADATA_TOO_LARGE (12)."""
    topic, group = await topic_and_group(s, 1)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, metadata="m" * size))
    await s.call(OFFSET_FETCH, 9, fetch_body(9, group, {topic: [0]}))


@cases("offsets/commit-unknown-topic", [2, 9], api=OFFSET_COMMIT)
async def commit_unknown_topic(s: Session, version: int) -> None:
    """An unknown topic and a partition beyond an existing topic's:
    UNKNOWN_TOPIC_OR_PARTITION (3)."""
    topic, group = await topic_and_group(s, 1)
    await s.call(OFFSET_COMMIT, version, commit_body(group, s.name("missing")))
    await s.call(OFFSET_COMMIT, version, commit_body(group, topic, (1, 2, 3)),
                 label="partition out of range")


@case("offsets/commit-negative-offset", api=OFFSET_COMMIT)
async def commit_negative(s: Session) -> None:
    topic, group = await topic_and_group(s, 1)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, (-1,)))
    await s.call(OFFSET_FETCH, 9, fetch_body(9, group, {topic: [0]}))


@cases("offsets/commit-member", [2, 6, 9], api=OFFSET_COMMIT)
async def commit_member(s: Session, version: int) -> None:
    """The member of a stable classic group commits with its generation."""
    topic, group = await topic_and_group(s, 1)
    member, generation = await stable_member(s, group, topic)
    await s.call(OFFSET_COMMIT, version, commit_body(group, topic, generation=generation,
                                                     member_id=member))


@cases("offsets/commit-member-errors", ["generation", "unknown-member", "simple-on-active",
                                        "empty-member", "unknown-instance"], api=OFFSET_COMMIT)
async def commit_member_errors(s: Session, which: str) -> None:
    """A stable group: a wrong generation (ILLEGAL_GENERATION 22), an unknown member (25),
    a simple consumer's commit (generation -1) while the group has members, and a
    generation with an empty member id."""
    topic, group = await topic_and_group(s, 1)
    member, generation = await stable_member(s, group, topic)
    body = commit_body(group, topic, generation=generation, member_id=member)
    if which == "generation":
        body["generation_id_or_member_epoch"] = generation + 3
    elif which == "unknown-member":
        body["member_id"] = "someone-else"
    elif which == "simple-on-active":
        body["generation_id_or_member_epoch"] = -1
        body["member_id"] = ""
    elif which == "unknown-instance":
        body["group_instance_id"] = "instance-b"
    else:
        body["member_id"] = ""
    await s.call(OFFSET_COMMIT, 9, body)


@case("offsets/commit-during-rebalance", api=OFFSET_COMMIT)
async def commit_rebalancing(s: Session) -> None:
    """A second member is joining: the first member's commit with its generation answers
    REBALANCE_IN_PROGRESS (27)."""
    topic, group = await topic_and_group(s, 1)
    member, generation = await stable_member(s, group, topic)
    other = await extra(s, "second")
    required = await s.call(JOIN_GROUP, 9, join_body(group, topics=[topic]), user=other,
                            record=False)
    assert required is not None
    raw = s._connections[other]
    await raw.send(JOIN_GROUP, 9, join_body(group, required.member_id, topics=[topic]))
    await wait_state(s, group, "PreparingRebalance")
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, generation=generation,
                                               member_id=member))
    await s.call(LEAVE_GROUP, 5, {"group_id": group, "members": [
        {"member_id": member, "group_instance_id": None, "reason": None}]}, record=False)


@case("offsets/commit-consumer-group", api=OFFSET_COMMIT)
async def commit_consumer_group(s: Session) -> None:
    """A KIP-848 member commits with its epoch (v9); a stale epoch: STALE_MEMBER_EPOCH
    (113); a newer one: FENCED_MEMBER_EPOCH (110); an unknown member (25)."""
    topic, group = await topic_and_group(s, 1)
    member, epoch = await consumer_member(s, group, [topic])
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, generation=epoch,
                                               member_id=member))
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, generation=epoch - 1,
                                               member_id=member), label="stale")
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, generation=epoch + 1,
                                               member_id=member), label="newer")
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, generation=epoch,
                                               member_id="unknown"), label="unknown member")
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic), label="simple consumer")


@case("offsets/commit-denied", api=OFFSET_COMMIT)
async def commit_denied(s: Session) -> None:
    """alice: without READ on the group GROUP_AUTHORIZATION_FAILED (30); with it but
    without READ on the topic TOPIC_AUTHORIZATION_FAILED (29)."""
    topic, group = await topic_and_group(s, 1)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic), user="alice")
    await grant(s, GROUP_RESOURCE, group, READ)

    async def applied() -> bool:
        answer = await s.call(OFFSET_COMMIT, 9, commit_body(group, topic), user="alice",
                              record=False)
        return answer is not None and all(
            p.error_code != 30 for t in answer.topics for p in t.partitions)
    await wait_acl(s, applied)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic), user="alice", label="granted")


@case("offsets/commit-invalid-group", api=OFFSET_COMMIT)
async def commit_invalid_group(s: Session) -> None:
    topic, _ = await topic_and_group(s, 1)
    await s.call(OFFSET_COMMIT, 9, commit_body("", topic))


@cases("offsets/fetch", range(1, 10), api=OFFSET_FETCH)
async def fetch(s: Session, version: int) -> None:
    """Committed partitions, a partition never committed, an unknown topic."""
    topic, group = await topic_and_group(s)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, (3,)), record=False)
    await s.call(OFFSET_FETCH, version, fetch_body(version, group, {
        topic: [0, 1], s.name("missing"): [0]}))


@cases("offsets/fetch-all-partitions", [2, 7, 8, 9], api=OFFSET_FETCH)
async def fetch_all(s: Session, version: int) -> None:
    """topics null: every committed partition of the group (compared sorted: Kafka lists
    them in its offsets table's hash order)."""
    topic, group = await topic_and_group(s, 3)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, (3, 4, 5)), record=False)
    await call_sorted(s, OFFSET_FETCH, version, fetch_body(version, group, None))


@cases("offsets/fetch-unknown-group", [1, 5, 9], api=OFFSET_FETCH)
async def fetch_unknown_group(s: Session, version: int) -> None:
    topic, group = await topic_and_group(s, 1)
    await s.call(OFFSET_FETCH, version, fetch_body(version, group, {topic: [0]}))
    if version >= 2:
        await s.call(OFFSET_FETCH, version, fetch_body(version, group, None), label="all")


@cases("offsets/fetch-batched", [8, 9], api=OFFSET_FETCH)
async def fetch_batched(s: Session, version: int) -> None:
    """Several groups in one request (v8+), one denied to alice."""
    topic, group = await topic_and_group(s, 1)
    second = s.name("g2")
    await coordinator_ready(s, second)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, (3,)), record=False)
    await s.call(OFFSET_COMMIT, 9, commit_body(second, topic, (9,)), record=False)
    body = {"groups": [
        {"group_id": group, "member_id": None, "member_epoch": -1,
         "topics": [{"name": topic, "partition_indexes": [0]}]},
        {"group_id": second, "member_id": None, "member_epoch": -1, "topics": None},
        {"group_id": s.name("none"), "member_id": None, "member_epoch": -1,
         "topics": None}], "require_stable": False}
    await call_sorted(s, OFFSET_FETCH, version, body)
    await call_sorted(s, OFFSET_FETCH, version, body, user="alice", label="as alice")


@case("offsets/fetch-consumer-member", api=OFFSET_FETCH)
async def fetch_consumer_member(s: Session) -> None:
    """OffsetFetch v9 with a KIP-848 member's id and epoch; a stale epoch:
    STALE_MEMBER_EPOCH; an unknown member: UNKNOWN_MEMBER_ID."""
    topic, group = await topic_and_group(s, 1)
    member, epoch = await consumer_member(s, group, [topic])
    for label, member_id, member_epoch in (("member", member, epoch),
                                           ("stale", member, epoch + 5),
                                           ("unknown", "nobody", epoch)):
        await s.call(OFFSET_FETCH, 9, {"groups": [
            {"group_id": group, "member_id": member_id, "member_epoch": member_epoch,
             "topics": None}], "require_stable": False}, label=label)


@case("offsets/fetch-denied", api=OFFSET_FETCH)
async def fetch_denied(s: Session) -> None:
    """alice with DESCRIBE on the group but not the topic: the topic's partitions are left
    out (v8: TOPIC_AUTHORIZATION_FAILED per partition when named)."""
    topic, group = await topic_and_group(s, 1)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, (3,)), record=False)
    await s.call(OFFSET_FETCH, 7, fetch_body(7, group, {topic: [0]}), user="alice")
    await grant(s, GROUP_RESOURCE, group, 8)

    async def applied() -> bool:
        answer = await s.call(OFFSET_FETCH, 7, fetch_body(7, group, None), user="alice",
                              record=False)
        return answer is not None and answer.error_code != 30
    await wait_acl(s, applied)
    await s.call(OFFSET_FETCH, 7, fetch_body(7, group, {topic: [0]}), user="alice",
                 label="named")
    await s.call(OFFSET_FETCH, 7, fetch_body(7, group, None), user="alice", label="all")
    await s.call(OFFSET_FETCH, 9, fetch_body(9, group, {topic: [0]}), user="alice",
                 label="v9")


@cases("offsets/delete", ["empty-group", "unknown-group", "subscribed", "unsubscribed",
                          "non-consumer", "unknown-topic"], api=OFFSET_DELETE)
async def offset_delete(s: Session, which: str) -> None:
    """OffsetDelete: offsets of an empty group go; a group that does not exist:
    GROUP_ID_NOT_FOUND (69); a topic the members subscribe to: GROUP_SUBSCRIBED_TO_TOPIC
    (86); one they do not: deleted; a non-consumer group with members: NON_EMPTY_GROUP."""
    topic, group = await topic_and_group(s, 2)
    other = s.name("other")
    await s.create_topic(other, 1)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, (1, 2)), record=False)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, other, (4,)), record=False)
    target = topic
    if which == "unknown-group":
        group = s.name("missing")
    elif which in ("subscribed", "unsubscribed"):
        await stable_member(s, group, topic)
        target = topic if which == "subscribed" else other
    elif which == "non-consumer":
        joined = await s.call(JOIN_GROUP, 5, join_body(group, instance_id="i",
                                                       protocol_type="other"), record=False)
        assert joined is not None and joined.error_code == 0, joined
    elif which == "unknown-topic":
        target = s.name("missing")
    await s.call(OFFSET_DELETE, 0, {"group_id": group, "topics": [
        {"name": target, "partitions": [{"partition_index": 0}, {"partition_index": 1}]}]})
    await call_sorted(s, OFFSET_FETCH, 9, fetch_body(9, group, None), label="after")


@case("offsets/delete-consumer-group", api=OFFSET_DELETE)
async def offset_delete_consumer(s: Session) -> None:
    """A KIP-848 group: the subscribed topic is GROUP_SUBSCRIBED_TO_TOPIC, another topic's
    offsets go."""
    topic, group = await topic_and_group(s, 1)
    other = s.name("other")
    await s.create_topic(other, 1)
    await consumer_member(s, group, [topic])
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, (1,)), record=False)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, other, (4,)), record=False)
    await s.call(OFFSET_DELETE, 0, {"group_id": group, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0}]},
        {"name": other, "partitions": [{"partition_index": 0}]}]})


@case("offsets/delete-denied", api=OFFSET_DELETE)
async def offset_delete_denied(s: Session) -> None:
    topic, group = await topic_and_group(s, 1)
    await s.call(OFFSET_COMMIT, 9, commit_body(group, topic, (1,)), record=False)
    await s.call(OFFSET_DELETE, 0, {"group_id": group, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0}]}]}, user="alice")


@cases("offsets/commit-leader-epoch", [6, 9], api=OFFSET_COMMIT)
async def commit_leader_epoch(s: Session, version: int) -> None:
    """The committed leader epoch (v6+) reads back from OffsetFetch v5+, not before."""
    topic, group = await topic_and_group(s, 1)
    body = commit_body(group, topic, (11,))
    body["topics"][0]["partitions"][0]["committed_leader_epoch"] = 7
    await s.call(OFFSET_COMMIT, version, body)
    await s.call(OFFSET_FETCH, 5, fetch_body(5, group, {topic: [0]}), label="v5")
    await s.call(OFFSET_FETCH, 4, fetch_body(4, group, {topic: [0]}), label="v4")


@case("offsets/commit-retention-time", api=OFFSET_COMMIT)
async def commit_retention(s: Session) -> None:
    """v2-4's retention time is accepted (and not visible in the fetch)."""
    topic, group = await topic_and_group(s, 1)
    body = commit_body(group, topic, (4,))
    body["retention_time_ms"] = 1000
    await s.call(OFFSET_COMMIT, 2, body)
    await s.call(OFFSET_FETCH, 9, fetch_body(9, group, {topic: [0]}))
