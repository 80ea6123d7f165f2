"""ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge (KIP-932) through the
codec, in-process on a ManualClock."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.handlers.find_coordinator import GROUP_KEY_TYPE
from tests.support.handlers import HandlerHarness
from tests.support.share import (
    ACCEPT,
    RELEASE,
    SHARE_GROUP_DESCRIBE,
    ShareMemberClient,
    delivered,
    heartbeat_body,
    share_groups_enabled,
)

TOPIC = "jobs"
GROUP = "workers"
LIST_GROUPS = 16


@pytest.fixture
def harness() -> HandlerHarness:
    """The handlers serve share groups only with "share" among the rebalance protocols."""
    return HandlerHarness(brokers=3, broker_properties=share_groups_enabled())


def _setup(harness: HandlerHarness, partitions: int = 1) -> uuid.UUID:
    harness.cluster.create_topic(TOPIC, partitions, 1)
    harness.cluster.share_groups.set_group_config(GROUP, "share.auto.offset.reset", "earliest")
    return harness.cluster.image.topics[TOPIC].topic_id


def _produce(harness: HandlerHarness, *values: bytes, partition: int = 0) -> None:
    batch = bytes(build_batch([RecordSpec(key=None, value=v, timestamp=1_000)
                               for v in values]))
    leader = harness.cluster.brokers[harness.leader(TOPIC, partition)]
    assert harness.cluster.produce(leader, TOPIC, partition, batch, acks=-1).error == 0


def _member(harness: HandlerHarness, partition: int = 0) -> ShareMemberClient:
    coordinator = harness.cluster.coordinator_for(GROUP_KEY_TYPE, GROUP)
    assert coordinator is not None
    return ShareMemberClient(harness.client(coordinator),
                             harness.client(harness.leader(TOPIC, partition)), GROUP)


async def test_heartbeat_join_assignment_and_errors(harness: HandlerHarness) -> None:
    topic_id = _setup(harness, partitions=2)
    member = _member(harness)
    joined = await member.join([TOPIC])
    assert joined.error_code == ErrorCode.NONE and joined.member_epoch == 1
    assert joined.heartbeat_interval_ms == 5000
    [assigned] = joined.assignment.topic_partitions
    assert (assigned.topic_id, list(assigned.partitions)) == (topic_id, [0, 1])
    fenced = await member.coordinator.request(
        76, 0, heartbeat_body(GROUP, member.member_id, 9))
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    unknown = await member.coordinator.request(76, 0, heartbeat_body(GROUP, "ghost", 1))
    assert unknown.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    no_topics = await member.coordinator.request(76, 0, heartbeat_body(GROUP, "", 0))
    assert no_topics.error_code == ErrorCode.INVALID_REQUEST
    other = (harness.cluster.coordinator_for(GROUP_KEY_TYPE, GROUP) + 1) % 3
    wrong = await harness.call(other, 76, 0, heartbeat_body(GROUP, "", 0, [TOPIC]))
    assert wrong is not None and wrong.error_code == ErrorCode.NOT_COORDINATOR


async def test_describe_and_list_groups(harness: HandlerHarness) -> None:
    _setup(harness)
    member = _member(harness)
    await member.join([TOPIC])
    described = await member.coordinator.request(
        SHARE_GROUP_DESCRIBE, 0, {"group_ids": [GROUP], "include_authorized_operations": False})
    [group] = described.groups
    assert (group.error_code, group.group_state, group.assignor_name) == (0, "Stable", "simple")
    [desc_member] = group.members
    assert desc_member.member_id == member.member_id
    assert list(desc_member.subscribed_topic_names) == [TOPIC]
    [tp] = desc_member.assignment.topic_partitions
    assert (tp.topic_name, list(tp.partitions)) == (TOPIC, [0])
    harness.cluster.groups.get_or_create("classic")
    coordinator = harness.cluster.coordinator_for(GROUP_KEY_TYPE, "classic")
    assert coordinator is not None
    missing = await harness.call(coordinator, SHARE_GROUP_DESCRIBE, 0,
                                 {"group_ids": ["classic"],
                                  "include_authorized_operations": False})
    assert missing is not None and missing.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    listed = await member.coordinator.request(
        LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})
    assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == \
        [(GROUP, "share", "Stable")]


async def test_fetch_acknowledge_and_lock_expiry(harness: HandlerHarness) -> None:
    topic_id = _setup(harness)
    _produce(harness, b"a", b"b", b"c")
    member = _member(harness)
    await member.join([TOPIC])
    first = await member.fetch(topic_id)
    got = delivered(first)
    assert got.values == {0: b"a", 1: b"b", 2: b"c"}
    assert set(got.delivery_counts.values()) == {1}
    # accept 0, release 1 (piggy-backed), leave 2 to its lock
    second = await member.fetch(topic_id, acks=[(0, 0, ACCEPT), (1, 1, RELEASE)])
    [part] = second.responses[0].partitions
    assert part.acknowledge_error_code == ErrorCode.NONE
    assert delivered(second).values == {1: b"b"} and \
        delivered(second).delivery_counts == {1: 2}
    harness.clock.advance(30_000)
    harness.cluster.tick()
    third = await member.fetch(topic_id)
    assert delivered(third).delivery_counts == {1: 3, 2: 2}
    acked = await member.acknowledge(topic_id, 0, [(1, 2, ACCEPT)])
    assert acked.responses[0].partitions[0].error_code == ErrorCode.NONE
    share = harness.cluster.share_groups.groups[GROUP].partitions[(topic_id, 0)]
    assert (share.spso, share.speo) == (3, 3)
    again = await member.acknowledge(topic_id, 0, [(1, 1, ACCEPT)])
    assert again.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE


async def test_share_session_epochs(harness: HandlerHarness) -> None:
    topic_id = _setup(harness)
    member = _member(harness)
    await member.join([TOPIC])
    member.session_epoch = 3
    assert (await member.fetch(topic_id)).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    member.session_epoch = 0
    assert (await member.fetch(topic_id)).error_code == ErrorCode.NONE
    member.session_epoch = 5
    assert (await member.fetch(topic_id)).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    member.session_epoch = 0
    with_acks = await member.fetch(topic_id, acks=[(0, 0, ACCEPT)])
    assert with_acks.error_code == ErrorCode.INVALID_REQUEST


async def test_share_fetch_long_polls_until_a_record_arrives(harness: HandlerHarness) -> None:
    topic_id = _setup(harness)
    member = _member(harness)
    await member.join([TOPIC])
    await member.fetch(topic_id)  # opens the session, nothing to acquire
    parked = asyncio.ensure_future(member.fetch(topic_id, max_wait_ms=60_000))
    assert not await harness.settle(parked)
    _produce(harness, b"late")
    assert await harness.settle(parked)
    assert delivered(parked.result()).values == {0: b"late"}


async def test_leave_releases_records_to_another_member(harness: HandlerHarness) -> None:
    topic_id = _setup(harness)
    _produce(harness, b"x")
    first, second = _member(harness), _member(harness)
    await first.join([TOPIC])
    await second.join([TOPIC])
    assert delivered(await first.fetch(topic_id)).values == {0: b"x"}
    assert delivered(await second.fetch(topic_id)).values == {}
    assert (await first.leave()).member_epoch == -1
    redelivered = delivered(await second.fetch(topic_id))
    assert redelivered.values == {0: b"x"} and redelivered.delivery_counts == {0: 2}


async def test_lock_expiry_wakes_a_parked_share_fetch(harness: HandlerHarness) -> None:
    topic_id = _setup(harness)
    _produce(harness, b"slow")
    holder, waiter = _member(harness), _member(harness)
    await holder.join([TOPIC])
    await waiter.join([TOPIC])
    assert delivered(await holder.fetch(topic_id)).values == {0: b"slow"}
    await waiter.fetch(topic_id)  # opens its session; everything is held by `holder`
    parked = asyncio.ensure_future(waiter.fetch(topic_id, max_wait_ms=60_000))
    assert not await harness.settle(parked)
    harness.clock.advance(29_999)
    harness.cluster.tick()
    assert not await harness.settle(parked)
    harness.clock.advance(1)
    harness.cluster.tick()  # the lock expires: the record is released and the fetch wakes
    assert await harness.settle(parked)
    assert delivered(parked.result()).delivery_counts == {0: 2}


async def test_share_fetch_on_a_follower_names_the_leader(harness: HandlerHarness) -> None:
    topic_id = _setup(harness)
    harness.cluster.create_topic("replicated", 1, 3)
    replicated = harness.cluster.image.topics["replicated"].topic_id
    leader = harness.leader("replicated")
    follower = (leader + 1) % 3
    member = _member(harness)
    member.leader = harness.client(follower)
    await member.join([TOPIC, "replicated"])
    response = await member.fetch(replicated)
    [part] = response.responses[0].partitions
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == \
        (leader, harness.leader_epoch("replicated"))
    assert [(n.node_id, n.port) for n in response.node_endpoints] == [(leader, 19092 + leader)]
    missing = uuid.uuid4()
    unknown = await member.fetch(missing)
    errors = {t.topic_id: t.partitions[0].error_code for t in unknown.responses}
    assert errors == {missing: ErrorCode.UNKNOWN_TOPIC_ID,
                      replicated: ErrorCode.NOT_LEADER_OR_FOLLOWER}  # the session keeps both
    assert topic_id not in errors  # never fetched by this member
