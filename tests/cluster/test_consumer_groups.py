"""KIP-848 consumer groups in the cluster model, on a ManualClock, without sockets.

Members are driven by ConsumerGroupHeartbeat requests built by hand, as a client would send
them: join with epoch 0, heartbeat with the epoch and the owned partitions, leave with -1
(or -2 for a static member). Partitions are (topic id, index); `parts` names them.
"""

from __future__ import annotations

import uuid

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.cluster.groups.classic_group_model import JoinRequest, JoinResult
from mockbroker.cluster.groups.consumer_assignors import (
    MemberSubscription,
    assign_range,
    assign_uniform,
)
from mockbroker.cluster.groups.consumer_group_model import HeartbeatRequest, HeartbeatResult
from mockbroker.cluster.groups.consumer_groups import ConsumerGroupConfig
from mockbroker.cluster.groups.offset_store import OffsetCommitEntry

TP = tuple[uuid.UUID, int]
SESSION = 45_000


def _cluster(**kwargs: int) -> tuple[Cluster, ManualClock]:
    clock = ManualClock()
    config = ClusterConfig(brokers=3, consumer_group=ConsumerGroupConfig(**kwargs))
    c = Cluster(config, clock)
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    return c, clock


def parts(c: Cluster, topic: str, *indexes: int) -> frozenset[TP]:
    topic_id = c.image.topics[topic].topic_id
    return frozenset((topic_id, i) for i in indexes)


class Member:
    """A consumer-protocol member as a client drives it: it owns what it was last given."""

    def __init__(self, c: Cluster, group: str = "g", topics: tuple[str, ...] = ("t",), *,
                 regex: str | None = None, member_id: str = "", instance: str | None = None,
                 assignor: str | None = None, rebalance_timeout_ms: int = 60_000) -> None:
        self.c, self.group = c, group
        self.member_id, self.epoch = member_id, 0
        self.owned: frozenset[TP] = frozenset()
        self.last: HeartbeatResult | None = None
        self.join = HeartbeatRequest(
            group, member_id, 0, instance_id=instance, rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=None if regex is not None else topics,
            subscribed_topic_regex=regex, server_assignor=assignor, owned=frozenset())

    def send(self, req: HeartbeatRequest) -> HeartbeatResult:
        result = self.c.consumer_groups.heartbeat(req)
        self.last = result
        if result.error == ErrorCode.NONE:
            self.member_id = result.member_id or self.member_id
            self.epoch = result.member_epoch
            if result.assignment is not None:
                self.owned = result.assignment
        return result

    def joined(self) -> HeartbeatResult:
        result = self.send(self.join)
        assert result.error == ErrorCode.NONE, result
        return result

    def beat(self, **changes: object) -> HeartbeatResult:
        fields: dict[str, object] = {"owned": self.owned}
        fields.update(changes)
        return self.send(HeartbeatRequest(self.group, self.member_id, self.epoch,
                                          **fields))  # type: ignore[arg-type]

    def leave(self, epoch: int = -1) -> HeartbeatResult:
        return self.send(HeartbeatRequest(self.group, self.member_id, epoch,
                                          instance_id=self.join.instance_id))


def test_first_member_gets_every_partition_at_group_epoch_one() -> None:
    c, _ = _cluster()
    c.create_topic("t", 3)
    a = Member(c)
    result = a.joined()
    assert result.member_id and result.member_epoch == 1
    assert result.heartbeat_interval_ms == 5000
    assert a.owned == parts(c, "t", 0, 1, 2)
    group = c.consumer_groups.get("g")
    assert group is not None and group.state.value == "Stable"
    # a heartbeat with nothing new answers without an assignment, a full one with it
    again = a.beat()
    assert again.error == ErrorCode.NONE and again.assignment is None and again.member_epoch == 1
    full = a.beat(rebalance_timeout_ms=60_000, subscribed_topic_names=("t",))
    assert full.assignment == parts(c, "t", 0, 1, 2) and full.member_epoch == 1


def test_v1_keeps_the_client_generated_member_id() -> None:
    c, _ = _cluster()
    c.create_topic("t", 1)
    a = Member(c, member_id="client-made-id")
    assert a.joined().member_id == "client-made-id"


def test_partition_is_revoked_from_its_owner_before_the_new_member_gets_it() -> None:
    c, _ = _cluster()
    c.create_topic("t", 4)
    a, b = Member(c), Member(c)
    a.joined()
    joined = b.joined()
    # the target gives b two partitions, but a still owns them: b gets nothing yet
    assert joined.member_epoch == 2 and b.owned == frozenset()
    group = c.consumer_groups.get("g")
    assert group is not None and group.state.value == "Reconciling"
    assert b.beat().assignment is None  # still unreleased
    # a is told to keep only its half, at its old epoch
    shrink = a.beat()
    assert shrink.member_epoch == 1 and shrink.assignment is not None
    assert len(a.owned) == 2
    b_target = group.target[b.member_id]
    assert a.owned.isdisjoint(b_target)
    # a's acknowledgement (it owns only its half now) moves it to epoch 2 and frees the rest
    assert a.beat().member_epoch == 2
    given = b.beat()
    assert given.assignment == b_target and b.epoch == 2
    assert a.owned | b.owned == parts(c, "t", 0, 1, 2, 3) and not a.owned & b.owned
    assert group.state.value == "Stable"


def test_revocation_waits_until_the_owner_no_longer_reports_the_partitions() -> None:
    c, _ = _cluster()
    c.create_topic("t", 2)
    a, b = Member(c), Member(c)
    a.joined()
    b.joined()
    old = a.owned
    a.beat(owned=old)  # told to give one up, not acknowledged yet
    assert a.owned != old
    # still reporting both: the revoked partition stays a's
    a.send(HeartbeatRequest("g", a.member_id, a.epoch, owned=old))
    assert b.beat().assignment is None
    a.beat()  # now reports only what it kept
    assert len(b.beat().assignment or ()) == 1


def test_leave_moves_the_partitions_to_the_remaining_member() -> None:
    c, _ = _cluster()
    c.create_topic("t", 3)
    a, b = Member(c), Member(c)
    a.joined()
    b.joined()
    for _ in range(3):
        a.beat()
        b.beat()
    assert a.owned and b.owned
    assert b.leave().member_epoch == -1
    taken = a.beat()
    assert taken.assignment == parts(c, "t", 0, 1, 2)
    group = c.consumer_groups.get("g")
    assert group is not None and list(group.members) == [a.member_id]


def test_session_timeout_on_the_clock_removes_a_silent_member() -> None:
    c, clock = _cluster(session_timeout_ms=10_000)
    c.create_topic("t", 2)
    a, b = Member(c), Member(c)
    a.joined()
    b.joined()
    clock.advance(9_000)
    a.beat()
    c.tick()
    group = c.consumer_groups.get("g")
    assert group is not None and len(group.members) == 2
    clock.advance(1_000)  # b's session (10 s) ends; a heartbeat 1 s ago
    c.tick()
    assert list(group.members) == [a.member_id]
    assert b.beat().error == ErrorCode.UNKNOWN_MEMBER_ID


def test_member_pending_revocation_beyond_its_rebalance_timeout_is_removed() -> None:
    c, clock = _cluster()
    c.create_topic("t", 2)
    a = Member(c, rebalance_timeout_ms=5_000)
    b = Member(c)
    a.joined()
    b.joined()
    a.send(HeartbeatRequest("g", a.member_id, a.epoch, owned=a.owned))  # never acknowledges
    for _ in range(3):
        clock.advance(2_000)
        a.send(HeartbeatRequest("g", a.member_id, a.epoch, owned=parts(c, "t", 0, 1)))
        c.tick()
    group = c.consumer_groups.get("g")
    assert group is not None and a.member_id not in group.members
    assert b.beat().assignment == parts(c, "t", 0, 1)


def test_fencing_of_wrong_epochs_and_unknown_members() -> None:
    c, _ = _cluster()
    c.create_topic("t", 2)
    a = Member(c)
    a.joined()
    ahead = c.consumer_groups.heartbeat(HeartbeatRequest("g", a.member_id, a.epoch + 1,
                                                         owned=a.owned))
    assert ahead.error == ErrorCode.FENCED_MEMBER_EPOCH
    unknown = c.consumer_groups.heartbeat(HeartbeatRequest("g", "nobody", 1, owned=frozenset()))
    assert unknown.error == ErrorCode.UNKNOWN_MEMBER_ID
    no_group = c.consumer_groups.heartbeat(HeartbeatRequest("none", "x", 1, owned=frozenset()))
    assert no_group.error == ErrorCode.GROUP_ID_NOT_FOUND
    assert c.consumer_groups.get("none") is None
    b = Member(c)
    b.joined()
    a.beat()
    a.beat()
    assert a.epoch == 2
    # the previous epoch is still accepted with owned partitions within the assignment
    previous = c.consumer_groups.heartbeat(HeartbeatRequest("g", a.member_id, 1, owned=a.owned))
    assert previous.error == ErrorCode.NONE
    stale = c.consumer_groups.heartbeat(HeartbeatRequest("g", a.member_id, 1,
                                                         owned=parts(c, "t", 0, 1)))
    assert stale.error == ErrorCode.FENCED_MEMBER_EPOCH
    # a fenced member rejoins with epoch 0 and its member id
    rejoin = a.send(HeartbeatRequest("g", a.member_id, 0, rebalance_timeout_ms=60_000,
                                     subscribed_topic_names=("t",), owned=frozenset()))
    assert rejoin.error == ErrorCode.NONE and rejoin.member_id == a.member_id


def test_invalid_requests_and_unsupported_assignor() -> None:
    c, _ = _cluster()
    hb = c.consumer_groups.heartbeat
    assert hb(HeartbeatRequest("g", "", 0, owned=frozenset(), subscribed_topic_names=("t",))
              ).error == ErrorCode.INVALID_REQUEST  # no rebalance timeout on join
    assert hb(HeartbeatRequest("g", "", 0, rebalance_timeout_ms=1, owned=frozenset())
              ).error == ErrorCode.INVALID_REQUEST  # no subscription on join
    assert hb(HeartbeatRequest("g", "m", 0, rebalance_timeout_ms=1, owned=frozenset(),
                               subscribed_topic_names=("t",), server_assignor="sticky")
              ).error == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert hb(HeartbeatRequest("g", "m", 0, rebalance_timeout_ms=1, owned=frozenset(),
                               subscribed_topic_regex="(")
              ).error == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert hb(HeartbeatRequest("g", "", 1, member_id_from_client=True)
              ).error == ErrorCode.INVALID_REQUEST


def test_group_max_size() -> None:
    c, _ = _cluster(max_size=1)
    c.create_topic("t", 1)
    first = Member(c)
    first.joined()
    extra = Member(c)
    assert extra.send(extra.join).error == ErrorCode.GROUP_MAX_SIZE_REACHED
    # the member already in the group may rejoin
    again = first.send(HeartbeatRequest("g", first.member_id, 0, rebalance_timeout_ms=1,
                                        subscribed_topic_names=("t",), owned=frozenset()))
    assert again.error == ErrorCode.NONE


def test_static_member_restart_keeps_its_assignment_and_fences_a_duplicate() -> None:
    c, clock = _cluster()
    c.create_topic("t", 2)
    a = Member(c, instance="i-1")
    b = Member(c, instance="i-2")
    a.joined()
    b.joined()
    for _ in range(3):
        a.beat()
        b.beat()
    kept, epoch = a.owned, a.epoch
    duplicate = Member(c, instance="i-1", member_id="other")
    assert duplicate.send(duplicate.join).error == ErrorCode.UNRELEASED_INSTANCE_ID
    assert a.leave(-2).member_epoch == -2
    group = c.consumer_groups.get("g")
    assert group is not None and len(group.members) == 2  # its place is kept
    restarted = Member(c, instance="i-1", member_id="restarted")
    result = restarted.joined()
    assert result.member_id == "restarted" and result.member_epoch == epoch
    assert restarted.owned == kept
    a.epoch = epoch
    assert a.beat().error == ErrorCode.UNKNOWN_MEMBER_ID  # the old id is gone ...
    assert a.beat(instance_id="i-1").error == ErrorCode.FENCED_INSTANCE_ID  # ... replaced
    # a static member that leaves for a restart and never comes back expires
    assert b.leave(-2).member_epoch == -2
    clock.advance(SESSION)
    restarted.beat()
    c.tick()
    assert list(group.members) == ["restarted"]
    assert restarted.beat().assignment == parts(c, "t", 0, 1)


def test_regex_subscription_follows_new_topics_and_partitions() -> None:
    c, _ = _cluster()
    c.create_topic("orders-eu", 1)
    c.create_topic("audit", 1)
    a = Member(c, regex=r"orders-.*")
    a.joined()
    assert a.owned == parts(c, "orders-eu", 0)
    c.create_topic("orders-us", 1)
    c.create_topic("xorders-us", 1)  # fullmatch: not a match
    assert a.beat().assignment == parts(c, "orders-eu", 0) | parts(c, "orders-us", 0)
    c.create_partitions("orders-us", 2)
    assert a.beat().assignment == parts(c, "orders-eu", 0) | parts(c, "orders-us", 0, 1)
    assert a.epoch == 3


def test_range_assignor_chosen_by_the_member() -> None:
    c, _ = _cluster()
    c.create_topic("t", 4)
    a, b = Member(c, member_id="a", assignor="range"), Member(c, member_id="b", assignor="range")
    a.joined()
    b.joined()
    group = c.consumer_groups.get("g")
    assert group is not None and group.assignor_name == "range"
    assert group.target == {"a": parts(c, "t", 0, 1), "b": parts(c, "t", 2, 3)}


def test_assignors_balance_and_stickiness() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    both = frozenset({t1, t2})
    counts = {t1: 3, t2: 2}
    first = assign_uniform({"a": MemberSubscription(both)}, counts)
    assert len(first["a"]) == 5
    second = assign_uniform({"a": MemberSubscription(both, first["a"]),
                             "b": MemberSubscription(both)}, counts)
    assert {len(second["a"]), len(second["b"])} == {2, 3}
    assert second["a"] <= first["a"]  # a keeps what it had, gives up only the excess
    only_t2 = assign_uniform({"a": MemberSubscription(frozenset({t1})),
                              "b": MemberSubscription(frozenset({t2}))}, counts)
    assert only_t2 == {"a": frozenset((t1, i) for i in range(3)),
                       "b": frozenset((t2, i) for i in range(2))}
    ranged = assign_range({"a": MemberSubscription(both), "b": MemberSubscription(both)},
                          counts)
    assert ranged["a"] == {(t1, 0), (t1, 1), (t2, 0)}
    assert ranged["b"] == {(t1, 2), (t2, 1)}


def test_offset_commit_checks_member_epoch() -> None:
    c, _ = _cluster()
    c.create_topic("t", 1)
    a = Member(c)
    a.joined()
    entry = [OffsetCommitEntry("t", 0, 42)]
    commit = c.consumer_groups.commit_offsets
    assert commit("g", a.member_id, a.epoch, 9, entry) == [ErrorCode.NONE]
    assert commit("g", a.member_id, a.epoch + 1, 9, entry) == [ErrorCode.STALE_MEMBER_EPOCH]
    assert commit("g", "nobody", a.epoch, 9, entry) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert commit("g", a.member_id, a.epoch, 8, entry) == [ErrorCode.UNSUPPORTED_VERSION]
    assert commit("g", "", -1, 9, entry) == [ErrorCode.UNKNOWN_MEMBER_ID]  # not empty
    assert commit("classic-or-unknown", "", -1, 9, entry) is None
    assert commit("g", "nobody", 99, 8, entry) == [ErrorCode.UNKNOWN_MEMBER_ID]  # member first
    txn = c.consumer_groups.validate_txn_offset_commit
    assert txn("g", a.member_id, a.epoch) == ErrorCode.NONE
    assert txn("g", a.member_id, a.epoch + 1) == ErrorCode.ILLEGAL_GENERATION
    assert txn("g", "", -1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert txn("not-a-consumer-group", "", -1) is None
    fetch = c.consumer_groups.validate_offset_fetch
    assert fetch("g", a.member_id, a.epoch) == ErrorCode.NONE
    assert fetch("g", a.member_id, a.epoch - 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert fetch("g", None, -1) == ErrorCode.NONE
    a.leave()
    assert commit("g", "", -1, 9, [OffsetCommitEntry("t", 0, 50)]) == [ErrorCode.NONE]
    assert c.groups.fetch_offsets("g", [("t", 0)])[0].offset == 50


def test_classic_and_consumer_groups_share_the_id_space() -> None:
    c, _ = _cluster()
    c.create_topic("t", 1)
    answers: list[JoinResult] = []
    c.groups.join(JoinRequest("classic", "", None, "cli", "/h", 10_000, 10_000, "consumer",
                              (("range", b""),), require_known_member_id=False),
                  answers.append)
    assert answers and answers[0].error == ErrorCode.NONE
    refused = Member(c, group="classic")  # no upgrade: its member's metadata does not decode
    assert refused.send(refused.join).error == ErrorCode.GROUP_ID_NOT_FOUND
    # a consumer group with members takes classic members in (group_migration.py) but not
    # another protocol type; once empty it becomes a classic group
    a = Member(c, group="kip848")
    a.joined()
    other_type: list[JoinResult] = []
    c.consumer_groups.classic_members.join(JoinRequest(
        "kip848", "", None, "cli", "/h", 10_000, 10_000, "connect", (("range", b""),)),
        other_type.append)
    assert other_type[0].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    a.leave()
    after: list[JoinResult] = []
    c.consumer_groups.classic_members.join(JoinRequest(
        "kip848", "", None, "cli", "/h", 10_000, 10_000, "connect", (("range", b""),),
        require_known_member_id=False), after.append)
    assert after[0].error == ErrorCode.NONE
    assert c.consumer_groups.get("kip848") is None and c.groups.get("kip848") is not None
    # an empty classic group becomes a consumer group
    c.groups.leave("classic", [(answers[0].member_id, None)])
    Member(c, group="classic").joined()
    assert c.groups.get("classic") is None and c.consumer_groups.get("classic") is not None


def test_coordinator_move_restarts_sessions_and_keeps_the_group() -> None:
    c, clock = _cluster()
    c.create_topic("t", 1)
    a = Member(c)
    a.joined()
    old = c.coordinator_for(0, "g")
    assert old is not None
    clock.advance(SESSION - 1_000)
    c.brokers[old].up = False
    c.fence_broker(old)
    c.tick()
    assert c.coordinator_for(0, "g") != old
    clock.advance(5_000)  # past the old deadline, within the restarted one
    c.tick()
    group = c.consumer_groups.get("g")
    assert group is not None and a.member_id in group.members
    assert a.beat().error == ErrorCode.NONE and a.epoch == 1
