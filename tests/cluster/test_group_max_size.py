"""group.max.size and group.consumer.max.size as Kafka 4.0's GroupMetadataManager applies them
to JoinGroup, on a ManualClock: acceptJoiningMember for classic groups, and
throwIfConsumerGroupIsFull for classic members joining a KIP-848 consumer group."""

from __future__ import annotations

import pytest
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.cluster.configs.broker_properties import BrokerPropertyError
from mockbroker.cluster.groups.classic_group_model import (
    GroupState,
    JoinRequest,
    JoinResult,
    SyncResult,
)
from tests.cluster.test_consumer_groups import Member
from tests.cluster.test_group_migration import SESSION, Classic, subscription


def _cluster(**properties: str) -> Cluster:
    c = Cluster(ClusterConfig(brokers=1, broker_properties=dict(properties),
                              group_initial_rebalance_delay_ms=0), ManualClock())
    c.start_broker(0, "127.0.0.1", 9092)
    c.create_topic("t", 4)
    return c


def _join(c: Cluster, member_id: str = "") -> list[JoinResult]:
    """A classic JoinGroup (v4+: a new member is first told MEMBER_ID_REQUIRED); the
    answers so far (a join waiting for the rebalance has none yet)."""
    answers: list[JoinResult] = []
    c.groups.join(JoinRequest("g", member_id, None, "cl", "/h", SESSION, 60_000, "consumer",
                              (("range", subscription("t")),)), answers.append)
    return answers


def _new_member(c: Cluster) -> list[JoinResult]:
    [asked] = _join(c)
    assert asked.error == ErrorCode.MEMBER_ID_REQUIRED
    return _join(c, asked.member_id)


def test_group_max_size_is_a_broker_property_with_kafkas_default_and_bound() -> None:
    assert _cluster().groups.max_size == 2**31 - 1
    assert _cluster().broker_config(0)["group.max.size"] == "2147483647"
    c = _cluster(**{"group.max.size": "3", "group.consumer.max.size": "2"})
    assert (c.groups.max_size, c.consumer_groups.config.max_size) == (3, 2)
    assert c.broker_config(0)["group.max.size"] == "3"
    for key in ("group.max.size", "group.consumer.max.size"):
        with pytest.raises(BrokerPropertyError) as refused:
            _cluster(**{key: "0"})
        assert str(refused.value) == (f"Invalid value 0 for configuration {key}: "
                                      "Value must be at least 1")


def test_full_classic_group_refuses_new_members_and_keeps_its_own() -> None:
    """Stable (or CompletingRebalance): a member is accepted, a newcomer only while the
    group has fewer than group.max.size members; refused with no member id."""
    c = _cluster(**{"group.max.size": "1"})
    [first] = _new_member(c)  # an Empty group takes anyone; delay 0: answered at once
    assert first.error == ErrorCode.NONE
    group = c.groups.get("g")
    assert group is not None and group.state is GroupState.COMPLETING_REBALANCE
    assert _join(c) == [JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")]
    assert list(group.members) == [first.member_id] and not group.pending_members
    rejoined = _join(c, first.member_id)  # the member itself: accepted, rebalances
    assert [r.error for r in rejoined] == [ErrorCode.NONE]


def test_preparing_rebalance_keeps_the_first_rejoiners_and_drops_the_last() -> None:
    """PreparingRebalance counts the members waiting in the join: once group.max.size of
    them wait, a member that rejoins too late is refused and removed (Kafka's
    acceptJoiningMember 'kick out the last rejoining members')."""
    c = _cluster(**{"group.max.size": "2"})
    [m1] = _new_member(c)
    assert _new_member(c) == []  # m2 joins: m1 must rejoin
    [m1_again] = _join(c, m1.member_id)
    group = c.groups.get("g")
    assert group is not None and group.state is GroupState.COMPLETING_REBALANCE
    assert m1_again.error == ErrorCode.NONE and len(group.members) == 2
    leader = group.leader_id
    assert leader is not None
    other = next(m for m in group.members if m != leader)
    synced: list[SyncResult] = []
    c.groups.sync("g", m1_again.generation_id, leader, None, "consumer", "range", [],
                  synced.append)
    assert synced[0].error == ErrorCode.NONE and group.state is GroupState.STABLE
    assert _join(c) == [JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")]
    assert _join(c, leader) == []  # the leader rejoins: PreparingRebalance, 1 of 2 waits
    assert group.state is GroupState.PREPARING_REBALANCE
    [asked] = _join(c)  # a newcomer: 1 waiting < 2, told its member id
    assert asked.error == ErrorCode.MEMBER_ID_REQUIRED
    assert _join(c, asked.member_id) == []  # accepted: 2 members wait
    assert _join(c, other) == [JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")]
    assert other not in group.members
    assert set(group.members) == {leader, asked.member_id}


def test_classic_member_joining_a_full_consumer_group_is_refused() -> None:
    """group.consumer.max.size bounds a consumer group's classic members too; the refusal
    keeps the member id the request sent."""
    c = _cluster(**{"group.consumer.max.size": "1"})
    a = Member(c)
    a.joined()
    newcomer = Classic(c)
    refused = newcomer.join_request()
    assert (refused.error, refused.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    group = c.consumer_groups.get("g")
    assert group is not None and list(group.members) == [a.member_id]
