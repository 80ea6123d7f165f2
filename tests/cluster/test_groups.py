"""The classic group coordinator and the offsets store on a ManualClock, without sockets."""

from __future__ import annotations

from kafka_protocol_codec import codec_for, data_type
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.cluster.groups.classic_group_model import (
    GroupState,
    JoinRequest,
    JoinResult,
    SyncResult,
    pick_coordinator,
)
from mockbroker.cluster.groups.offset_store import OffsetCommitEntry

SESSION = 10_000
REBALANCE = 30_000


def _cluster(**kwargs: int) -> tuple[Cluster, ManualClock]:
    clock = ManualClock()
    c = Cluster(ClusterConfig(brokers=3, **kwargs), clock)
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    return c, clock


def subscription(*topics: str) -> bytes:
    body = codec_for(data_type("ConsumerProtocolSubscription"), 1).encode(
        {"topics": list(topics), "user_data": None, "owned_partitions": []})
    return (1).to_bytes(2, "big") + body


class Join:
    """A JoinGroup in flight: `result` is set when the coordinator answers."""

    def __init__(self, c: Cluster, group: str, member_id: str = "", *,
                 instance: str | None = None, protocols: tuple[tuple[str, bytes], ...] = (
                     ("range", b"r"),), session: int = SESSION, rebalance: int = REBALANCE,
                 require_known: bool = True, skip: bool = False,
                 protocol_type: str = "consumer") -> None:
        self.result: JoinResult | None = None
        c.groups.join(JoinRequest(group, member_id, instance, "client", "/127.0.0.1", session,
                                  rebalance, protocol_type, protocols, require_known, skip),
                      self._done)

    def _done(self, result: JoinResult) -> None:
        assert self.result is None, "answered twice"
        self.result = result

    @property
    def r(self) -> JoinResult:
        assert self.result is not None, "not answered yet"
        return self.result


class Sync:
    def __init__(self, c: Cluster, group: str, generation: int, member_id: str,
                 assignments: list[tuple[str, bytes]] | None = None,
                 instance: str | None = None) -> None:
        self.result: SyncResult | None = None
        c.groups.sync(group, generation, member_id, instance, None, None, assignments or [],
                      self._done)

    def _done(self, result: SyncResult) -> None:
        self.result = result


def full_join(c: Cluster, group: str, **kwargs: object) -> str:
    """Join through MEMBER_ID_REQUIRED; returns the member id (answer may still be pending)."""
    first = Join(c, group, **kwargs)  # type: ignore[arg-type]
    assert first.r.error == ErrorCode.MEMBER_ID_REQUIRED
    return first.r.member_id


def stable_single(c: Cluster, group: str = "g") -> tuple[str, int]:
    member = full_join(c, group)
    j = Join(c, group, member)
    assert j.r.error == ErrorCode.NONE and j.r.leader_id == member
    s = Sync(c, group, j.r.generation_id, member, [(member, b"assign-a")])
    assert s.result == SyncResult(ErrorCode.NONE, b"assign-a", "consumer", "range")
    return member, j.r.generation_id


def test_first_join_requires_member_id_then_completes_at_once_with_zero_delay():
    c, _ = _cluster()
    member, generation = stable_single(c)
    group = c.groups.get("g")
    assert group is not None and group.state is GroupState.STABLE and generation == 1
    assert c.groups.heartbeat("g", 1, member) == ErrorCode.NONE
    assert c.groups.heartbeat("g", 0, member) == ErrorCode.ILLEGAL_GENERATION
    assert c.groups.heartbeat("g", 1, "nobody") == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.groups.heartbeat("other", 1, member) == ErrorCode.UNKNOWN_MEMBER_ID


def test_second_member_triggers_rebalance_and_leader_gets_members():
    c, _ = _cluster()
    a, gen = stable_single(c)
    b = full_join(c, "g")
    jb = Join(c, "g", b)
    assert jb.result is None  # waits for a to rejoin
    assert c.groups.heartbeat("g", gen, a) == ErrorCode.REBALANCE_IN_PROGRESS
    ja = Join(c, "g", a)
    assert ja.r.error == jb.r.error == ErrorCode.NONE
    assert ja.r.generation_id == jb.r.generation_id == gen + 1
    assert ja.r.leader_id == jb.r.leader_id == a
    assert {m.member_id for m in ja.r.members} == {a, b} and jb.r.members == ()
    sb = Sync(c, "g", gen + 1, b)
    assert sb.result is None  # the follower waits for the leader's assignment
    sa = Sync(c, "g", gen + 1, a, [(a, b"A"), (b, b"B"), ("ghost", b"X")])
    assert sa.result is not None and sa.result.assignment == b"A"
    assert sb.result is not None and sb.result.assignment == b"B"
    summary = c.groups.describe("g")
    assert summary.state == "Stable" and summary.protocol_name == "range"
    assert {m.member_id: m.assignment for m in summary.members} == {a: b"A", b: b"B"}


# What kafka-python 3.0.12 sends when it drops a JoinGroup/SyncGroup result that finished
# between two polls (tests/clients/test_groups_clients.py has the client side): it joins
# again with the same member id and protocols. Kafka's classic coordinator answers a
# follower at once with the current generation, and rebalances for the leader.

def _stable_pair(c: Cluster) -> tuple[str, str, int]:
    a, gen = stable_single(c)
    b = full_join(c, "g")
    jb = Join(c, "g", b)
    Join(c, "g", a)
    assert jb.r.generation_id == gen + 1
    Sync(c, "g", gen + 1, b)
    Sync(c, "g", gen + 1, a, [(a, b"A"), (b, b"B")])
    return a, b, gen + 1


def test_a_follower_joining_again_in_a_stable_group_gets_the_current_generation():
    c, _ = _cluster()
    a, b, gen = _stable_pair(c)
    for _ in range(3):
        again = Join(c, "g", b)
        assert again.r == JoinResult(ErrorCode.NONE, b, gen, "consumer", "range", a, ())
        sync = Sync(c, "g", gen, b)
        assert sync.result == SyncResult(ErrorCode.NONE, b"B", "consumer", "range")
        assert c.groups.heartbeat("g", gen, a) == ErrorCode.NONE  # no rebalance
    group = c.groups.get("g")
    assert group is not None and group.state is GroupState.STABLE
    # the leader joining again forces a rebalance; the follower hears of it in its heartbeat
    lead = Join(c, "g", a)
    assert lead.result is None
    assert c.groups.heartbeat("g", gen, b) == ErrorCode.REBALANCE_IN_PROGRESS
    follow = Join(c, "g", b)
    assert lead.r.generation_id == follow.r.generation_id == gen + 1
    assert {m.member_id for m in lead.r.members} == {a, b} and follow.r.members == ()


def test_slow_heartbeats_bring_the_first_member_into_the_rebalance():
    """A loaded first member learns of the newcomer late and rejoins late: the coordinator
    waits (up to the rebalance timeout) and keeps it, as Kafka does."""
    c, clock = _cluster()
    a, gen = stable_single(c)
    b = full_join(c, "g")
    jb = Join(c, "g", b)
    for _ in range(2):  # 8 s between heartbeats, inside the 10 s session
        clock.advance(8_000)
        c.tick()
        assert c.groups.heartbeat("g", gen, a) == ErrorCode.REBALANCE_IN_PROGRESS
        assert jb.result is None
    clock.advance(8_000)
    c.tick()  # 24 s after b joined: past a session timeout, inside the rebalance timeout
    ja = Join(c, "g", a)
    assert ja.r.generation_id == jb.r.generation_id == gen + 1
    assert ja.r.leader_id == a and {m.member_id for m in ja.r.members} == {a, b}


def test_a_member_that_stops_heartbeating_holds_a_newcomer_until_its_session_expires():
    """kafka-python stops heartbeating for the join it sends; if it never reads that join's
    answer, it never heartbeats again. Such a member stays in the group until its session
    times out, and a newcomer's JoinGroup waits until then; then the newcomer completes the
    join alone and the silent member only hears UNKNOWN_MEMBER_ID when it speaks again."""
    c, clock = _cluster()
    a, gen = stable_single(c)
    clock.advance(3_000)
    assert c.groups.heartbeat("g", gen, a) == ErrorCode.NONE  # a's last heartbeat
    b = full_join(c, "g")
    jb = Join(c, "g", b)
    clock.advance(SESSION - 1)
    c.tick()
    group = c.groups.get("g")
    assert group is not None and a in group.members and jb.result is None
    clock.advance(1)
    c.tick()
    assert jb.r.error == ErrorCode.NONE and jb.r.generation_id == gen + 1
    assert jb.r.leader_id == b and [m.member_id for m in jb.r.members] == [b]
    assert c.groups.heartbeat("g", gen, a) == ErrorCode.UNKNOWN_MEMBER_ID


def test_protocol_selection_votes_and_inconsistent_protocol():
    c, _ = _cluster()
    a = full_join(c, "g", protocols=(("roundrobin", b"1"), ("range", b"1")))
    Join(c, "g", a, protocols=(("roundrobin", b"1"), ("range", b"1")))
    b = full_join(c, "g", protocols=(("range", b"2"), ("roundrobin", b"2")))
    jb = Join(c, "g", b, protocols=(("range", b"2"), ("roundrobin", b"2")))
    c3 = full_join(c, "g", protocols=(("range", b"3"), ("sticky", b"3")))
    j3 = Join(c, "g", c3, protocols=(("range", b"3"), ("sticky", b"3")))
    ja = Join(c, "g", a, protocols=(("roundrobin", b"1"), ("range", b"1")))
    # candidates are {range}: sticky and roundrobin are not supported by every member
    assert ja.r.protocol_name == jb.r.protocol_name == j3.r.protocol_name == "range"
    leader = next(m for m in ja.r.members if m.member_id == a)
    assert leader.metadata == b"1"  # the metadata of the selected protocol
    bad = Join(c, "g", protocols=(("cooperative-sticky", b""),))
    assert bad.r.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    other_type = Join(c, "g", protocol_type="connect")
    assert other_type.r.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    empty = Join(c, "fresh", protocols=())
    assert empty.r.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert c.groups.get("fresh") is None  # a failed first join leaves no group


def test_session_timeout_bounds():
    c, _ = _cluster()
    assert Join(c, "g", session=5_999).r.error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert Join(c, "g", session=1_800_001).r.error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert Join(c, "g", session=6_000).r.error == ErrorCode.MEMBER_ID_REQUIRED


def test_session_expiry_removes_member_and_rebalances():
    c, clock = _cluster()
    a, gen = stable_single(c)
    b = full_join(c, "g")
    jb = Join(c, "g", b)
    ja = Join(c, "g", a)
    Sync(c, "g", gen + 1, b)
    Sync(c, "g", gen + 1, a, [(a, b"A"), (b, b"B")])
    group = c.groups.get("g")
    assert group is not None
    for _ in range(2):  # b heartbeats, a goes silent
        assert c.groups.heartbeat("g", gen + 1, b) == ErrorCode.NONE
        clock.advance(SESSION // 2)
        c.tick()
    assert group is not None and a not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE
    assert c.groups.heartbeat("g", gen + 1, b) == ErrorCode.REBALANCE_IN_PROGRESS
    again = Join(c, "g", b)
    assert again.r.error == ErrorCode.NONE and again.r.leader_id == b
    assert again.r.generation_id == gen + 2 and [m.member_id for m in again.r.members] == [b]
    assert ja.r.error == jb.r.error == ErrorCode.NONE


def test_rebalance_timeout_drops_members_that_do_not_rejoin():
    c, clock = _cluster()
    a, gen = stable_single(c)
    b = full_join(c, "g")
    jb = Join(c, "g", b, rebalance=20_000)
    # a keeps heartbeating (getting REBALANCE_IN_PROGRESS) but never rejoins
    for _ in range(int(REBALANCE / 5_000) + 1):
        clock.advance(5_000)
        c.groups.heartbeat("g", gen, a)
        c.tick()
        if jb.result is not None:
            break
    assert jb.r.error == ErrorCode.NONE and jb.r.leader_id == b
    assert [m.member_id for m in jb.r.members] == [b]
    assert c.groups.heartbeat("g", gen, a) == ErrorCode.UNKNOWN_MEMBER_ID


def test_pending_member_expires_and_sync_timeout_removes_laggards():
    c, clock = _cluster()
    a, gen = stable_single(c)
    b = full_join(c, "g")  # told MEMBER_ID_REQUIRED, never comes back
    clock.advance(SESSION)
    assert c.groups.heartbeat("g", gen, a) == ErrorCode.NONE
    c.tick()
    assert b not in c.groups.get("g").pending_members  # type: ignore[union-attr]
    # a follower that never sends SyncGroup is removed after the rebalance timeout
    d = full_join(c, "g")
    jd = Join(c, "g", d)
    Join(c, "g", a)
    assert jd.r.generation_id == gen + 1
    Sync(c, "g", gen + 1, a, [(a, b"A"), (d, b"D")])
    for _ in range(REBALANCE // 5_000):
        clock.advance(5_000)
        c.groups.heartbeat("g", gen + 1, a)
        c.tick()
    group = c.groups.get("g")
    assert group is not None and d not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE


def test_leave_and_empty_group_generation():
    c, _ = _cluster()
    a, gen = stable_single(c)
    top, errors = c.groups.leave("g", [(a, None), ("nobody", None)])
    assert top == ErrorCode.NONE
    assert errors == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    group = c.groups.get("g")
    assert group is not None and group.state is GroupState.EMPTY
    assert group.generation_id == gen + 1 and not group.members
    assert c.groups.leave("missing", [("x", None)]) == (ErrorCode.NONE,
                                                        [ErrorCode.UNKNOWN_MEMBER_ID])


def test_static_member_rejoin_replaces_member_id_without_rebalance():
    c, clock = _cluster()
    ja = Join(c, "g", instance="inst-a")  # static members need no MEMBER_ID_REQUIRED
    a = ja.r.member_id
    assert ja.r.error == ErrorCode.NONE and a.startswith("inst-a-")
    Sync(c, "g", ja.r.generation_id, a, [(a, b"A")])
    jb = Join(c, "g", instance="inst-b")
    jb_again = Join(c, "g", a, instance="inst-a")
    b = jb.r.member_id
    gen = jb.r.generation_id
    Sync(c, "g", gen, b)
    Sync(c, "g", gen, a, [(a, b"A2"), (b, b"B2")], instance="inst-a")
    assert jb_again.r.leader_id == a
    # b restarts: same instance id, no member id -> new member id, same generation, no
    # rebalance, and the old id is fenced
    clock.advance(1_000)
    restarted = Join(c, "g", instance="inst-b")
    new_b = restarted.r.member_id
    assert restarted.r.error == ErrorCode.NONE and new_b != b
    assert restarted.r.generation_id == gen and restarted.r.members == ()
    group = c.groups.get("g")
    assert group is not None and group.state is GroupState.STABLE
    s = Sync(c, "g", gen, new_b, instance="inst-b")
    assert s.result is not None and s.result.assignment == b"B2"
    assert c.groups.heartbeat("g", gen, b, "inst-b") == ErrorCode.FENCED_INSTANCE_ID
    assert c.groups.heartbeat("g", gen, new_b, "inst-b") == ErrorCode.NONE
    stale_commit = c.groups.commit_offsets("g", b, "inst-b", gen,
                                           [OffsetCommitEntry("t", 0, 5)])
    assert stale_commit == [ErrorCode.FENCED_INSTANCE_ID]
    # admin removal by instance id
    top, errors = c.groups.leave("g", [("", "inst-b")])
    assert (top, errors) == (ErrorCode.NONE, [ErrorCode.NONE])
    assert new_b not in group.members and group.state is GroupState.PREPARING_REBALANCE


def test_static_leader_rejoin_v9_gets_skip_assignment():
    c, _ = _cluster()
    ja = Join(c, "g", instance="lead", skip=True)
    a = ja.r.member_id
    Sync(c, "g", ja.r.generation_id, a, [(a, b"A")])
    again = Join(c, "g", instance="lead", skip=True)
    assert again.r.error == ErrorCode.NONE and again.r.skip_assignment
    assert again.r.leader_id == again.r.member_id
    assert [m.member_id for m in again.r.members] == [again.r.member_id]


def test_static_member_survives_rebalance_without_rejoining_until_session_expiry():
    c, clock = _cluster()
    ja = Join(c, "g", instance="s1")
    a = ja.r.member_id
    Sync(c, "g", 1, a, [(a, b"A")])
    d = full_join(c, "g")
    jd = Join(c, "g", d)
    for _ in range(REBALANCE // 5_000):  # a heartbeats but never rejoins
        clock.advance(5_000)
        c.groups.heartbeat("g", 1, a, "s1")
        c.tick()
    # the rebalance timeout passed: a dynamic member would be dropped, static a stays
    assert jd.r.error == ErrorCode.NONE and jd.r.generation_id == 2
    assert jd.r.leader_id == d and {m.member_id for m in jd.r.members} == {a, d}
    group = c.groups.get("g")
    assert group is not None and a in group.members
    clock.advance(SESSION)
    c.groups.heartbeat("g", 2, d)
    c.tick()  # now a's session expires
    assert a not in group.members and group.static_members == {}


def test_sync_and_join_errors():
    c, _ = _cluster()
    a, gen = stable_single(c)
    s = Sync(c, "g", gen + 5, a)
    assert s.result is not None and s.result.error == ErrorCode.ILLEGAL_GENERATION
    s = Sync(c, "g", gen, "ghost")
    assert s.result is not None and s.result.error == ErrorCode.UNKNOWN_MEMBER_ID
    s = Sync(c, "nope", gen, a)
    assert s.result is not None and s.result.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert Join(c, "g", "ghost").r.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert Join(c, "nope", "ghost").r.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert Join(c, "").r.error == ErrorCode.INVALID_GROUP_ID
    # v0-3 joins get a member id at once
    old = Join(c, "legacy", require_known=False)
    assert old.r.error == ErrorCode.NONE and old.r.member_id


def test_initial_rebalance_delay_waits_and_gathers_members():
    c, clock = _cluster(group_initial_rebalance_delay_ms=3_000)
    a = full_join(c, "g")
    ja = Join(c, "g", a)
    assert ja.result is None
    clock.advance(1_000)
    b = full_join(c, "g")
    jb = Join(c, "g", b)
    clock.advance(2_000)
    c.tick()  # b arrived during the delay: the delay is extended once
    assert ja.result is None
    clock.advance(3_000)
    c.tick()
    assert ja.r.generation_id == jb.r.generation_id == 1
    assert len(ja.r.members) == 2
    assert c.broker_config(0)["group.initial.rebalance.delay.ms"] == "3000"


def test_offsets_with_leader_epochs_and_generation_checks():
    c, _ = _cluster()
    c.create_topic("t", 2)
    # simple commits (generation -1) to an unknown group create it, Empty
    assert c.groups.commit_offsets("simple", "", None, -1, [
        OffsetCommitEntry("t", 0, 42, 3, "meta")]) == [ErrorCode.NONE]
    fetched = c.groups.fetch_offsets("simple", [("t", 0), ("t", 1)])
    assert [(f.offset, f.leader_epoch, f.metadata) for f in fetched] == [
        (42, 3, "meta"), (-1, -1, "")]
    assert c.groups.get("simple").state is GroupState.EMPTY  # type: ignore[union-attr]
    assert c.groups.commit_offsets("unknown", "m", None, 3, [
        OffsetCommitEntry("t", 0, 1)]) == [ErrorCode.ILLEGAL_GENERATION]
    a, gen = stable_single(c)
    assert c.groups.commit_offsets("g", a, None, gen, [
        OffsetCommitEntry("t", 0, 7, 5), OffsetCommitEntry("t", 1, 8, 5, "x" * 4097)]) == [
        ErrorCode.NONE, ErrorCode.OFFSET_METADATA_TOO_LARGE]
    assert c.groups.commit_offsets("g", a, None, gen + 1, [OffsetCommitEntry("t", 0, 9)]) \
        == [ErrorCode.ILLEGAL_GENERATION]
    assert c.groups.commit_offsets("g", "x", None, gen, [OffsetCommitEntry("t", 0, 9)]) \
        == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert c.groups.commit_offsets("g", "", None, -1, [OffsetCommitEntry("t", 0, 9)]) \
        == [ErrorCode.UNKNOWN_MEMBER_ID]  # a simple commit to an active group
    every = c.groups.fetch_offsets("g", None)
    assert [(f.topic, f.partition, f.offset, f.leader_epoch) for f in every] == [("t", 0, 7, 5)]


def test_pending_transactional_offsets_and_require_stable():
    c, _ = _cluster()
    store = c.groups.offsets
    store.commit("g", "t", 0, 10, 1)
    store.add_pending("g", 77, "t", 0, 20, 2, "txn")
    assert c.groups.get("g") is not None and store.has_pending("g", "t", 0)
    stable = c.groups.fetch_offsets("g", [("t", 0)], require_stable=True)
    assert stable[0].error == ErrorCode.UNSTABLE_OFFSET_COMMIT
    assert c.groups.fetch_offsets("g", [("t", 0)])[0].offset == 10
    store.complete_pending(77, commit=False)
    assert c.groups.fetch_offsets("g", [("t", 0)], require_stable=True)[0].offset == 10
    store.add_pending("g", 78, "t", 0, 30, 4, None)
    store.complete_pending(78, commit=True)
    got = c.groups.fetch_offsets("g", [("t", 0)], require_stable=True)[0]
    assert (got.offset, got.leader_epoch, got.error) == (30, 4, ErrorCode.NONE)


def test_delete_groups_and_offsets():
    c, _ = _cluster()
    a, gen = stable_single(c)
    group = c.groups.get("g")
    assert group is not None
    group.members[a].protocols = (("range", subscription("t")),)
    group.subscribed_topics = group.compute_subscribed_topics()
    assert group.subscribed_topics == {"t"}
    c.groups.commit_offsets("g", a, None, gen, [OffsetCommitEntry("t", 0, 1),
                                                 OffsetCommitEntry("u", 0, 2)])
    assert c.groups.delete_group("g") == ErrorCode.NON_EMPTY_GROUP
    assert c.groups.delete_group("missing") == ErrorCode.GROUP_ID_NOT_FOUND
    top, errors = c.groups.delete_offsets("g", [("t", 0), ("u", 0)])
    assert (top, errors) == (ErrorCode.NONE, [ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
                                             ErrorCode.NONE])
    assert [f.offset for f in c.groups.fetch_offsets("g", [("t", 0), ("u", 0)])] == [1, -1]
    c.groups.leave("g", [(a, None)])
    assert c.groups.delete_group("g") == ErrorCode.NONE
    assert c.groups.get("g") is None and c.groups.fetch_offsets("g", None) == []
    assert c.groups.describe("g").state == "Dead"


def test_coordinator_is_stable_and_moves_off_fenced_brokers():
    c, _ = _cluster()
    owners = {key: c.coordinator_for(0, key) for key in (f"group-{i}" for i in range(30))}
    assert set(owners.values()) == {0, 1, 2}  # spread over the brokers
    assert all(c.coordinator_for(0, k) == v for k, v in owners.items())  # deterministic
    assert pick_coordinator("x", [2, 0, 1]) == pick_coordinator("x", [0, 1, 2])
    down = next(k for k, v in owners.items() if v == 1)
    c.brokers[1].up = False
    assert c.coordinator_for(0, down) is None  # COORDINATOR_NOT_AVAILABLE until moved
    c.controller.fence_broker(1)
    c.propagate()
    assert c.coordinator_for(0, down) in (0, 2)
