"""Kafka 4.0's mixed groups in the cluster model, on a ManualClock: classic members inside
KIP-848 consumer groups, and the online upgrade/downgrade of group.consumer.migration.policy.

Classic members are driven as a classic consumer would (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup through `classic_members`, the handlers' entry point); consumer-protocol members
with ConsumerGroupHeartbeat requests (tests/cluster/test_consumer_groups.Member).
"""

from __future__ import annotations

import pytest
from kafka_protocol_codec import codec_for, data_type
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.cluster.configs.broker_properties import BrokerPropertyError
from mockbroker.cluster.groups.classic_group_model import (
    GroupState,
    JoinRequest,
    JoinResult,
    SyncResult,
)
from mockbroker.cluster.groups.consumer_groups import ConsumerGroupConfig
from mockbroker.cluster.groups.group_migration import (
    MigrationPolicy,
    decode_assignment,
    encode_assignment,
)
from mockbroker.cluster.groups.offset_store import OffsetCommitEntry
from tests.cluster.test_consumer_groups import Member

SESSION = 10_000
REBALANCE = 30_000


def _cluster(policy: str = "bidirectional", **config_fields: int
             ) -> tuple[Cluster, ManualClock]:
    clock = ManualClock()
    config = ClusterConfig(brokers=1, consumer_group=ConsumerGroupConfig(
        migration_policy=policy), group_initial_rebalance_delay_ms=0, **config_fields)
    c = Cluster(config, clock)
    c.start_broker(0, "127.0.0.1", 9092)
    return c, clock


def subscription(*topics: str, owned: tuple[tuple[str, int], ...] = ()) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, index in owned:
        by_topic.setdefault(topic, []).append(index)
    body = codec_for(data_type("ConsumerProtocolSubscription"), 1).encode(
        {"topics": list(topics), "user_data": None,
         "owned_partitions": [{"topic": t, "partitions": p} for t, p in by_topic.items()]})
    return (1).to_bytes(2, "big") + body


class Classic:
    """A classic consumer (protocol type "consumer", eager unless it reports what it owns):
    it owns what its last SyncGroup gave it."""

    def __init__(self, c: Cluster, group: str = "g", topics: tuple[str, ...] = ("t",),
                 protocol: str = "range", instance: str | None = None) -> None:
        self.c, self.group, self.topics, self.protocol = c, group, topics, protocol
        self.instance = instance
        self.member_id, self.generation = "", -1
        self.owned: tuple[tuple[str, int], ...] = ()

    def join_request(self, owned: tuple[tuple[str, int], ...] = ()) -> JoinResult:
        answers: list[JoinResult] = []
        self.c.consumer_groups.classic_members.join(JoinRequest(
            self.group, self.member_id, self.instance, "classic-client", "/127.0.0.1", SESSION,
            REBALANCE, "consumer", ((self.protocol, subscription(*self.topics, owned=owned)),)),
            answers.append)
        assert len(answers) == 1, "a join to a consumer group is answered at once"
        return answers[0]

    def join(self, keep_owned: bool = False) -> JoinResult:
        """Join (asking for a member id first if needed), as an eager client that gave
        up everything, or a cooperative one that reports what it owns."""
        result = self.join_request(self.owned if keep_owned else ())
        if result.error == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = result.member_id
            result = self.join_request(self.owned if keep_owned else ())
        assert result.error == ErrorCode.NONE, result
        self.member_id, self.generation = result.member_id, result.generation_id
        return result

    def sync(self) -> SyncResult:
        answers: list[SyncResult] = []
        self.c.consumer_groups.classic_members.sync(
            self.group, self.generation, self.member_id, self.instance, "consumer",
            self.protocol, [],
            answers.append)
        assert len(answers) == 1
        result = answers[0]
        if result.error == ErrorCode.NONE:
            decoded = decode_assignment(result.assignment)
            assert decoded is not None
            self.owned = decoded
        return result

    def heartbeat(self) -> ErrorCode:
        return self.c.consumer_groups.classic_members.heartbeat(
            self.group, self.generation, self.member_id, self.instance)

    def rejoin_until_stable(self, rounds: int = 5) -> None:
        """What a classic client does on REBALANCE_IN_PROGRESS: rejoin and sync, until
        a heartbeat answers NONE (bounded)."""
        for _ in range(rounds):
            if self.heartbeat() == ErrorCode.NONE:
                return
            self.join()
            assert self.sync().error == ErrorCode.NONE
        raise AssertionError(f"{self.member_id} did not settle in {rounds} rounds")


def test_assignment_round_trips_through_the_consumer_protocol() -> None:
    encoded = encode_assignment([("b", 0), ("a", 1), ("a", 0)], 1)
    assert int.from_bytes(encoded[:2], "big") == 1
    assert decode_assignment(encoded) == (("a", 0), ("a", 1), ("b", 0))
    assert decode_assignment(b"") == ()


def test_classic_member_joins_a_consumer_group_and_gets_a_server_side_assignment() -> None:
    c, _ = _cluster()
    c.create_topic("t", 4)
    a = Member(c)
    a.joined()
    b = Classic(c)
    asked = b.join_request()
    assert asked.error == ErrorCode.MEMBER_ID_REQUIRED and asked.member_id
    joined = b.join()
    group = c.consumer_groups.get("g")
    assert group is not None and c.groups.get("g") is None
    assert joined.generation_id == group.group_epoch == 2
    assert joined.protocol_type == "consumer" and joined.protocol_name == "range"
    assert joined.leader_id == "" and joined.members == ()
    assert group.members[b.member_id].member_type == "classic"
    # a still owns the partitions the target moves to b: b gets none of them yet
    first = b.sync()
    assert first.error == ErrorCode.NONE and first.protocol_name == "range"
    assert b.owned == ()
    a.beat()  # told to give up half
    a.beat()  # acknowledges: they are free
    # b's heartbeat tells it to rejoin for the now free partitions
    assert b.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    b.rejoin_until_stable()
    a_names = {("t", index) for _, index in a.owned}
    assert len(b.owned) == 2 and a_names.isdisjoint(b.owned)
    assert a_names | set(b.owned) == {("t", i) for i in range(4)}
    assert group.state.value == "Stable"


def test_new_member_makes_the_classic_member_rejoin_and_give_up_partitions() -> None:
    c, _ = _cluster()
    c.create_topic("t", 4)
    a = Member(c)
    a.joined()
    b = Classic(c)
    b.join()
    b.sync()
    a.beat()
    a.beat()
    b.rejoin_until_stable()
    c_member = Member(c)
    c_member.joined()  # the group epoch moves on: b must rejoin
    assert b.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    before = set(b.owned)
    # the eager client gave up everything, rejoins and is given back what it keeps
    b.join()
    assert b.sync().error == ErrorCode.NONE
    assert set(b.owned) <= before
    b.rejoin_until_stable()
    for _ in range(3):
        a.beat()
        c_member.beat()
    group = c.consumer_groups.get("g")
    assert group is not None
    owners = [set(b.owned), {("t", i) for _, i in a.owned},
              {("t", i) for _, i in c_member.owned}]
    assert sum(len(o) for o in owners) == 4 and set().union(*owners) == {
        ("t", i) for i in range(4)}


def test_classic_member_checks_generation_protocol_and_membership() -> None:
    c, _ = _cluster()
    c.create_topic("t", 2)
    Member(c).joined()
    b = Classic(c)
    b.join()
    members = c.consumer_groups.classic_members
    assert members.heartbeat("g", b.generation + 5, b.member_id) == ErrorCode.ILLEGAL_GENERATION
    assert members.heartbeat("g", b.generation, "nobody") == ErrorCode.UNKNOWN_MEMBER_ID
    answers: list[SyncResult] = []
    members.sync("g", b.generation, b.member_id, None, "consumer", "roundrobin", [],
                 answers.append)
    assert answers[0].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # another protocol type, or no protocol in common with the classic members
    other: list[JoinResult] = []
    members.join(JoinRequest("g", "", None, "x", "/h", SESSION, REBALANCE, "connect",
                             (("range", b""),)), other.append)
    assert other[0].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    sticky = Classic(c, protocol="cooperative-sticky")
    assert sticky.join_request().error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # commits: generation = member epoch, ILLEGAL_GENERATION otherwise, at any version
    commit = c.consumer_groups.commit_offsets
    entry = [OffsetCommitEntry("t", 0, 5)]
    assert commit("g", b.member_id, b.generation, 7, entry) == [ErrorCode.NONE]
    assert commit("g", b.member_id, b.generation - 1, 7, entry) == [
        ErrorCode.ILLEGAL_GENERATION]


def test_classic_member_session_and_sync_timeouts_remove_it() -> None:
    c, clock = _cluster()
    c.create_topic("t", 2)
    a = Member(c)
    a.joined()
    b = Classic(c)
    b.join()
    group = c.consumer_groups.get("g")
    assert group is not None
    # no SyncGroup within the rebalance timeout: removed
    clock.advance(REBALANCE - 1)
    a.beat()
    b.heartbeat()
    c.tick()
    assert b.member_id in group.members
    clock.advance(1)
    c.tick()
    assert b.member_id not in group.members
    # a synced member that stops heartbeating goes after its own session timeout
    d = Classic(c)
    d.join()
    d.sync()
    clock.advance(SESSION - 1)
    a.beat()
    c.tick()
    assert d.member_id in group.members
    clock.advance(1)
    a.beat()
    c.tick()
    assert d.member_id not in group.members and a.member_id in group.members


def test_leave_group_removes_a_classic_member() -> None:
    c, _ = _cluster()
    c.create_topic("t", 2)
    a = Member(c)
    a.joined()
    b = Classic(c)
    b.join()
    error, per_member = c.consumer_groups.classic_members.leave(
        "g", [(b.member_id, None), ("nobody", None)])
    assert error == ErrorCode.NONE
    assert per_member == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    group = c.consumer_groups.get("g")
    assert group is not None and list(group.members) == [a.member_id]


def _stable_classic_group(c: Cluster, n: int) -> list[Classic]:
    """n classic members in a Stable classic group, the leader assigning round robin."""
    members = [Classic(c) for _ in range(n)]

    def join(m: Classic) -> None:
        def answered(result: JoinResult) -> None:
            assert result.error == ErrorCode.NONE, result
            m.member_id, m.generation = result.member_id, result.generation_id

        c.groups.join(JoinRequest("g", m.member_id, None, "cl", "/h", SESSION, REBALANCE,
                                  "consumer", (("range", subscription("t")),),
                                  require_known_member_id=False), answered)

    for i, newcomer in enumerate(members):  # each newcomer rebalances: the others rejoin
        join(newcomer)
        for earlier in members[:i]:
            join(earlier)
    group = c.groups.get("g")
    assert group is not None and group.state is GroupState.COMPLETING_REBALANCE
    assert {m.generation for m in members} == {group.generation_id}
    leader = next(m for m in members if group.is_leader(m.member_id))
    given = {m.member_id: encode_assignment(
        [("t", p) for p in range(4) if p % n == i], 1) for i, m in enumerate(members)}
    synced: list[SyncResult] = []
    c.groups.sync("g", leader.generation, leader.member_id, None, "consumer", "range",
                  list(given.items()), synced.append)
    assert synced[0].error == ErrorCode.NONE and group.state is GroupState.STABLE
    for m in members:
        m.owned = decode_assignment(given[m.member_id]) or ()
    return members


def test_consumer_protocol_member_upgrades_a_classic_group_online() -> None:
    c, _ = _cluster()
    c.create_topic("t", 4)
    b1, b2 = _stable_classic_group(c, 2)
    generation = b1.generation
    a = Member(c)
    joined = a.joined()
    group = c.consumer_groups.get("g")
    assert group is not None and c.groups.get("g") is None
    assert joined.member_epoch == generation + 1 == group.group_epoch
    kept = group.members[b1.member_id]
    assert kept.member_type == "classic" and kept.member_epoch == generation
    assert {("t", i) for _, i in kept.assigned} == set(b1.owned)
    # the classic members hear of the new epoch and rejoin; everyone ends disjoint
    assert b1.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    for _ in range(4):
        for m in (b1, b2):
            if m.heartbeat() != ErrorCode.NONE:
                m.join()
                m.sync()
        a.beat()
    owned = [set(b1.owned), set(b2.owned), {("t", i) for _, i in a.owned}]
    assert all(owned) and sum(len(o) for o in owned) == 4
    assert set().union(*owned) == {("t", i) for i in range(4)}
    assert group.state.value == "Stable"


def test_upgrade_refused_by_the_policy_is_group_id_not_found() -> None:
    for policy in ("disabled", "downgrade"):
        c, _ = _cluster(policy)
        c.create_topic("t", 2)
        _stable_classic_group(c, 1)
        refused = Member(c)
        result = refused.send(refused.join)
        assert result.error == ErrorCode.GROUP_ID_NOT_FOUND, policy
        assert c.groups.get("g") is not None and c.consumer_groups.get("g") is None


def test_last_consumer_protocol_member_leaving_downgrades_the_group() -> None:
    c, _ = _cluster()
    c.create_topic("t", 4)
    b1, b2 = _stable_classic_group(c, 2)
    a = Member(c)
    a.joined()
    consumer_group = c.consumer_groups.get("g")
    assert consumer_group is not None
    epoch = consumer_group.group_epoch
    targets = {m.member_id: sorted(("t", index) for _, index in
                                   consumer_group.target[m.member_id]) for m in (b1, b2)}
    a.leave()
    assert c.consumer_groups.get("g") is None
    classic = c.groups.get("g")
    assert classic is not None and classic.state is GroupState.PREPARING_REBALANCE
    assert set(classic.members) == {b1.member_id, b2.member_id}
    # the members hold their target assignments, as ClassicGroup.fromConsumerGroup gives
    assert {m: list(decode_assignment(classic.members[m].assignment) or ())
            for m in targets} == targets
    assert classic.generation_id == epoch and classic.protocol_name == "range"
    # the classic members rejoin and the group completes a classic rebalance
    answers: list[JoinResult] = []
    for m in (b1, b2):
        assert c.groups.heartbeat("g", m.generation, m.member_id) in (
            ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION)
        c.groups.join(JoinRequest("g", m.member_id, None, "cl", "/h", SESSION, REBALANCE,
                                  "consumer", (("range", subscription("t")),)), answers.append)
    assert [r.error for r in answers] == [ErrorCode.NONE, ErrorCode.NONE]
    assert classic.state is GroupState.COMPLETING_REBALANCE
    assert classic.generation_id == epoch + 1


def test_downgrade_refused_by_the_policy_keeps_the_consumer_group() -> None:
    c, _ = _cluster("upgrade")
    c.create_topic("t", 2)
    b = _stable_classic_group(c, 1)[0]
    a = Member(c)
    a.joined()
    a.leave()
    group = c.consumer_groups.get("g")
    assert group is not None and list(group.members) == [b.member_id]
    assert c.groups.get("g") is None


def test_expired_consumer_protocol_member_downgrades_the_group_too() -> None:
    c, clock = _cluster()
    c.create_topic("t", 2)
    b = _stable_classic_group(c, 1)[0]
    Member(c).joined()
    for _ in range(6):  # the classic member keeps heartbeating, the other goes silent
        if c.consumer_groups.get("g") is None:
            break
        clock.advance(9_000)
        if b.heartbeat() != ErrorCode.NONE:  # rejoins as a classic client does
            b.join()
            b.sync()
        c.tick()
    classic = c.groups.get("g")
    assert classic is not None and list(classic.members) == [b.member_id]
    assert c.consumer_groups.get("g") is None


def _mixed_group_with_static_consumer_member(c: Cluster) -> tuple[Member, Classic]:
    """A consumer group of a consumer-protocol static member (instance "a") and a classic
    member, both reconciled, then "a" gone for a restart (a static leave, epoch -2, keeps
    its place and assignment)."""
    c.create_topic("t", 4)
    a = Member(c, instance="a")
    a.joined()
    b = Classic(c)
    b.join()
    b.sync()
    for _ in range(3):  # a gives up half, b rejoins for it
        a.beat()
        b.rejoin_until_stable()
    a.leave(epoch=-2)
    group = c.consumer_groups.get("g")
    assert group is not None and len(group.members) == 2
    assert group.members[b.member_id].member_epoch == group.group_epoch
    assert group.members[a.member_id].member_epoch == -2  # kept, gone for a restart
    return a, b


def test_classic_static_member_replacing_the_last_consumer_member_downgrades_at_once() -> None:
    """Kafka's validateOnlineDowngradeWithReplacedMemberId: a classic JoinGroup with the
    instance id of the last consumer-protocol member converts the group to a Stable classic
    group at generation = group epoch, without a rebalance: the joining member gets the
    replaced member's target assignment, the other keeps its own."""
    c, _ = _cluster()
    a, b = _mixed_group_with_static_consumer_member(c)
    consumer_group = c.consumer_groups.get("g")
    assert consumer_group is not None
    epoch, a_id = consumer_group.group_epoch, a.member_id
    a_parts = sorted(("t", index) for _, index in a.owned)
    assert len(a_parts) == 2 and set(a_parts).isdisjoint(b.owned)

    restarted = Classic(c, instance="a")
    joined = restarted.join()
    assert c.consumer_groups.get("g") is None
    classic = c.groups.get("g")
    assert classic is not None and classic.state is GroupState.STABLE
    assert joined.member_id != a_id and joined.generation_id == epoch
    assert (joined.protocol_type, joined.protocol_name, joined.leader_id) == (
        "consumer", "range", "")
    assert classic.generation_id == epoch and classic.protocol_name == "range"
    assert list(classic.members) == [b.member_id, restarted.member_id]
    assert classic.leader_id == b.member_id
    assert classic.static_members == {"a": restarted.member_id}
    synced = restarted.sync()  # reaches the classic group, which answers at once
    assert synced.error == ErrorCode.NONE
    assert sorted(restarted.owned) == a_parts
    # no rebalance: the other member's generation and partitions still stand
    assert b.heartbeat() == ErrorCode.NONE
    assert decode_assignment(classic.members[b.member_id].assignment) == tuple(sorted(b.owned))


def test_static_replacement_keeps_the_consumer_group_when_downgrade_is_not_allowed() -> None:
    """No downgrade under policy upgrade, nor when the members would exceed group.max.size:
    the classic member just takes the consumer-protocol member's place."""
    for policy, max_size in (("upgrade", 2**31 - 1), ("bidirectional", 1)):
        c, _ = _cluster(policy, group_max_size=max_size)
        a, b = _mixed_group_with_static_consumer_member(c)
        restarted = Classic(c, instance="a")
        joined = restarted.join()
        group = c.consumer_groups.get("g")
        assert group is not None and c.groups.get("g") is None
        assert joined.generation_id == group.group_epoch
        assert set(group.members) == {b.member_id, restarted.member_id}
        assert group.members[restarted.member_id].member_type == "classic"
        restarted.sync()
        assert sorted(restarted.owned) == sorted(("t", index) for _, index in a.owned)


def test_downgrade_on_leave_needs_the_members_to_fit_in_group_max_size() -> None:
    """Kafka's validateOnlineDowngradeWithFencedMember: members left > group.max.size keeps
    the consumer group."""
    c, _ = _cluster(group_max_size=1)
    c.create_topic("t", 4)
    a = Member(c)
    a.joined()
    for b in (Classic(c), Classic(c)):  # group.max.size does not bound consumer groups
        b.join()
    a.leave()
    group = c.consumer_groups.get("g")
    assert group is not None and len(group.members) == 2
    assert c.groups.get("g") is None


def test_migration_policy_is_the_broker_property_group_consumer_migration_policy() -> None:
    clock = ManualClock()
    config = ClusterConfig(brokers=1, broker_properties={
        "group.consumer.migration.policy": "upgrade"})
    c = Cluster(config, clock)
    c.start_broker(0, "127.0.0.1", 9092)
    assert c.consumer_groups.classic_members.policy is MigrationPolicy.UPGRADE
    assert c.broker_config(0)["group.consumer.migration.policy"] == "upgrade"
    default, _ = _cluster()
    assert default.consumer_groups.classic_members.policy is MigrationPolicy.BIDIRECTIONAL
    assert default.broker_config(0)["group.consumer.migration.policy"] == "bidirectional"
    with pytest.raises(BrokerPropertyError):
        Cluster(ClusterConfig(brokers=1, broker_properties={
            "group.consumer.migration.policy": "sideways"}), clock)


def test_migration_policy_is_case_insensitive_and_other_choices_are_not_as_in_kafka() -> None:
    """Kafka defines group.consumer.migration.policy with CaseInsensitiveValidString and
    parses it lower-cased (ConsumerGroupMigrationPolicy.parse); the other configs with a
    list of choices use ValidString/ValidList, which compare exactly (ValidList element by
    element, naming the element it refuses)."""
    clock = ManualClock()
    c = Cluster(ClusterConfig(brokers=1, broker_properties={
        "group.consumer.migration.policy": " DownGrade "}), clock)
    assert c.consumer_groups.classic_members.policy is MigrationPolicy.DOWNGRADE
    with pytest.raises(BrokerPropertyError) as refused:
        Cluster(ClusterConfig(brokers=1, broker_properties={
            "group.consumer.migration.policy": "sideways"}), clock)
    assert str(refused.value) == (
        "Invalid value sideways for configuration group.consumer.migration.policy: String "
        "must be one of (case insensitive): DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL")
    for key, value, refused_value, choices in (
            ("group.coordinator.rebalance.protocols", "classic, CONSUMER", "CONSUMER",
             "classic, consumer, share"),
            ("compression.type", "GZIP", "GZIP",
             "uncompressed, zstd, lz4, snappy, gzip, producer"),
            ("log.cleanup.policy", "Delete", "Delete", "compact, delete")):
        with pytest.raises(BrokerPropertyError) as refused:
            Cluster(ClusterConfig(brokers=1, broker_properties={key: value}), clock)
        assert str(refused.value) == (f"Invalid value {refused_value} for configuration "
                                      f"{key}: String must be one of: {choices}")
