"""Kafka 4.0's mixed groups: classic-protocol members inside KIP-848 consumer groups, and the
online conversions between the two kinds of group (KIP-848 "Upgrade/Downgrade",
group.consumer.migration.policy).

Theory of operation (this follows Kafka 4.0's GroupMetadataManager):

- Routing. JoinGroup, SyncGroup, Heartbeat and LeaveGroup go through `ClassicMembers`: for a
  group id that is a consumer group (a JoinGroup: one with members; an empty one becomes a
  classic group, as before) they are answered here, else by the classic GroupCoordinator.
- Classic members of a consumer group. A JoinGroup (protocol type "consumer", a protocol in
  common with the other classic members, else INCONSISTENT_GROUP_PROTOCOL) does not start a
  classic rebalance. A dynamic member without id is first told MEMBER_ID_REQUIRED (v4+); then
  the member becomes a consumer-group member whose subscription (topics, rack, and the
  partitions it still owns) is read from the ConsumerProtocol metadata of its first protocol.
  A changed subscription raises the group epoch, the server-side assignor computes the
  target, and the member is reconciled against the partitions it reports owning exactly as
  a consumer-protocol member at a heartbeat (consumer_groups.py). The JoinGroup is answered
  at once: generation = member epoch, its first protocol, no leader ("" : every classic
  member is a follower). SyncGroup (same generation and protocol, else ILLEGAL_GENERATION /
  INCONSISTENT_GROUP_PROTOCOL; REBALANCE_IN_PROGRESS if the group epoch moved on and it has
  nothing to revoke) answers its current assignment as a ConsumerProtocolAssignment, at the
  version of its subscription.
- Rejoining. A classic member learns of a new assignment only by rejoining: its Heartbeat
  answers REBALANCE_IN_PROGRESS when the group epoch passed its epoch, when it must revoke
  partitions, or when partitions it waits for have been released; from then it has its
  rebalance timeout to rejoin. An eager client gives up everything before rejoining, a
  cooperative one reports what it keeps; partitions to revoke stay held (pending revocation)
  until a join no longer reports them, so no partition is ever owned by two members.
- Liveness: the member's own session timeout (from JoinGroup), the rebalance timeout between
  a JoinGroup answer and its SyncGroup, and between REBALANCE_IN_PROGRESS and the rejoin
  (ClassicMemberMetadata deadlines, checked by ConsumerGroupCoordinator.tick). OffsetCommit
  checks the generation against the member epoch (ILLEGAL_GENERATION), at any version.
- Upgrade. A ConsumerGroupHeartbeat joining a classic group with members converts it when
  the policy is upgrade or bidirectional, the group runs protocol type "consumer", and it
  has at most group.consumer.max.size members; otherwise (or when a member's metadata does
  not decode) GROUP_ID_NOT_FOUND. Every member keeps its id, subscription and last
  assignment, at member epoch = group epoch = the classic generation, the target being the
  current assignments; JoinGroup/SyncGroup requests parked in a rebalance are answered
  REBALANCE_IN_PROGRESS. The joining member then raises the epoch, and the classic members
  hear REBALANCE_IN_PROGRESS at their next heartbeat.
- Downgrade. When a consumer-protocol member leaves or expires and only classic members
  remain (at least one), policy downgrade or bidirectional converts the group back: a
  classic group at generation = group epoch, Stable, with the members' protocols, timeouts
  and target assignments, the first member leader, which then rebalances at once, so every
  member rejoins as in any classic rebalance (ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS).
  A classic static member replacing the last consumer-protocol member (a JoinGroup with
  its group.instance.id and no member id) converts the group too, as part of that join and
  without a rebalance: the classic group is Stable at generation = group epoch, each member
  holding its target assignment (the joining member the replaced one's), and the JoinGroup
  is answered as in a consumer group (generation = its member epoch), so its SyncGroup
  reaches the classic group. Neither conversion happens when the members would exceed
  group.max.size.
- Empty groups change type in either direction whatever the policy.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kafka_protocol_codec import CodecError, codec_for, data_type
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.groups.classic_group_model import (
    CONSUMER_PROTOCOL_TYPE,
    Group,
    GroupState,
    JoinCallback,
    JoinRequest,
    JoinResult,
    Member,
    SyncCallback,
    SyncResult,
)
from mockbroker.cluster.groups.classic_groups import GroupCoordinator
from mockbroker.cluster.groups.consumer_assignors import TopicIdPartition
from mockbroker.cluster.groups.consumer_group_model import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from mockbroker.cluster.kafka_uuid import random_id

TopicPartition = tuple[str, int]


class MigrationSettings(Protocol):
    """The group.consumer.* settings read here (consumer_groups.ConsumerGroupConfig)."""

    @property
    def migration_policy(self) -> str: ...

    @property
    def max_size(self) -> int: ...


class ConsumerGroupHost(Protocol):
    """What ClassicMembers uses of the ConsumerGroupCoordinator that owns it (named as a
    protocol so that this module does not import consumer_groups.py, which imports it)."""

    clock: Clock
    classic: GroupCoordinator
    groups: dict[str, ConsumerGroup]
    topics: Callable[[], Mapping[str, tuple[uuid.UUID, int]]]

    @property
    def config(self) -> MigrationSettings: ...

    def subscribed_topics(self, group: ConsumerGroup) -> set[str]: ...

    def _refresh(self, group: ConsumerGroup, force: bool = False) -> None: ...

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember,
                   owned: frozenset[TopicIdPartition] | None) -> None: ...

    def _replace_static_member(self, group: ConsumerGroup, old: ConsumerMember,
                               new_id: str) -> ConsumerMember: ...

    def _remove(self, group: ConsumerGroup, member: ConsumerMember) -> None: ...

    def _assignor_name(self, group: ConsumerGroup) -> str: ...

    def _coordinator(self, group_id: str) -> int | None: ...


class MigrationPolicy(enum.Enum):
    """group.consumer.migration.policy: which online conversions of non-empty groups run."""

    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @classmethod
    def parse(cls, text: str) -> MigrationPolicy:
        return cls(text.strip().lower())  # Kafka compares case-insensitively

    @property
    def upgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)


# -- the embedded ConsumerProtocol ------------------------------------------------------------

@dataclass(frozen=True)
class Subscription:
    """A decoded ConsumerProtocolSubscription (any version)."""

    version: int
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...]
    rack_id: str | None


def _decode(name: str, data: bytes) -> tuple[int, Any] | None:
    """(version, decoded body) of an embedded ConsumerProtocol message, None if it does not
    decode."""
    if len(data) < 2:
        return None
    version = int.from_bytes(data[:2], "big", signed=True)
    if version < 0:
        return None
    schema = data_type(name)
    highest = schema.versions.stop - 1
    try:  # newer versions only append fields: read them at the highest version known
        return version, codec_for(schema, min(version, highest)).decode(data[2:])
    except CodecError:
        return None


def _partitions(entries: Any) -> tuple[TopicPartition, ...]:
    """(topic, partition) pairs of a decoded [TopicPartition] array (None: none)."""
    return tuple((entry["topic"], index) for entry in entries or ()
                 for index in entry["partitions"])


def decode_subscription(data: bytes) -> Subscription | None:
    decoded = _decode("ConsumerProtocolSubscription", data)
    if decoded is None:
        return None
    version, body = decoded
    rack = body.get("rack_id")
    return Subscription(version, tuple(body.get("topics") or ()),
                        _partitions(body.get("owned_partitions")),
                        rack if isinstance(rack, str) else None)


def decode_assignment(data: bytes) -> tuple[TopicPartition, ...] | None:
    """The partitions of a ConsumerProtocolAssignment; no bytes is no partition."""
    if not data:
        return ()
    decoded = _decode("ConsumerProtocolAssignment", data)
    if decoded is None:
        return None
    return _partitions(decoded[1].get("assigned_partitions"))


def encode_assignment(partitions: Iterable[TopicPartition], version: int) -> bytes:
    schema = data_type("ConsumerProtocolAssignment")
    version = max(0, min(version, schema.versions.stop - 1))
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(partitions):
        by_topic.setdefault(topic, []).append(index)
    body = codec_for(schema, version).encode({
        "assigned_partitions": [{"topic": t, "partitions": p} for t, p in by_topic.items()],
        "user_data": None})
    return version.to_bytes(2, "big") + body


# -- classic requests to consumer groups ------------------------------------------------------

class ClassicMembers:
    """The classic protocol's requests for consumer groups, and the group conversions."""

    def __init__(self, coordinator: ConsumerGroupHost) -> None:
        self.coordinator = coordinator

    @property
    def policy(self) -> MigrationPolicy:
        return MigrationPolicy.parse(self.coordinator.config.migration_policy)

    def _now(self) -> int:
        return self.coordinator.clock.now_ms()

    def _named(self, partitions: Iterable[TopicIdPartition]) -> list[TopicPartition]:
        names = {tid: name for name, (tid, _) in self.coordinator.topics().items()}
        return [(names[tid], index) for tid, index in partitions if tid in names]

    def _ids(self, partitions: Iterable[TopicPartition]) -> frozenset[TopicIdPartition]:
        topics = self.coordinator.topics()
        return frozenset((topics[t][0], p) for t, p in partitions
                         if t in topics and 0 <= p < topics[t][1])

    def _member(self, group: ConsumerGroup, member_id: str, instance_id: str | None
                ) -> ConsumerMember | ErrorCode:
        """Kafka's validateConsumerGroupMember, then: only a classic member may use the
        classic requests (UNKNOWN_MEMBER_ID)."""
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None or current not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None or member.classic is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return member

    # -- JoinGroup --------------------------------------------------------------------------

    def join(self, req: JoinRequest, callback: JoinCallback) -> None:
        classic = self.coordinator.classic
        group = self.coordinator.groups.get(req.group_id)
        session_ok = classic.min_session_timeout_ms <= req.session_timeout_ms \
            <= classic.max_session_timeout_ms
        if group is None or not group.members or not req.group_id or not session_ok:
            if group is not None and not group.members:
                del self.coordinator.groups[req.group_id]  # an empty one becomes classic
            classic.join(req, callback)
            return
        callback(self._join_consumer_group(group, req))

    def _supports(self, group: ConsumerGroup, req: JoinRequest) -> bool:
        """Kafka's supportsClassicProtocols: type "consumer" and a protocol every other
        classic member also supports."""
        names = {name for name, _ in req.protocols}
        if req.protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
            return False
        for member in group.members.values():
            if member.classic is not None and member.member_id != req.member_id:
                names &= {name for name, _ in member.classic.protocols}
        return bool(names)

    def _join_consumer_group(self, group: ConsumerGroup, req: JoinRequest) -> JoinResult:
        coordinator = self.coordinator
        member_id = req.member_id or random_id()  # Kafka: Uuid.randomUuid().toString()
        if len(group.members) >= coordinator.config.max_size \
                and member_id not in group.members:
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, req.member_id)
        if not self._supports(group, req):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        if not req.member_id and req.require_known_member_id and req.group_instance_id is None:
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        subscription = decode_subscription(req.protocols[0][1])
        if subscription is None:  # no subscription to read: the protocol is not "consumer"
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        # the member holding the instance id before this join (Kafka's staticMemberId)
        replaced = group.static_members.get(req.group_instance_id) \
            if req.group_instance_id is not None else None
        if replaced not in group.members:
            replaced = None
        found = self._joining_member(group, req, member_id)
        if isinstance(found, ErrorCode):
            return JoinResult(found, req.member_id)
        member, is_new = found
        now = self._now()
        changed = is_new or member.subscribed_topic_names != subscription.topics \
            or member.subscribed_topic_regex is not None or member.server_assignor is not None
        member.subscribed_topic_names = subscription.topics
        member.subscribed_topic_regex = member.server_assignor = None
        if subscription.rack_id is not None:
            member.rack_id = subscription.rack_id
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.client_id, member.client_host = req.client_id, req.client_host
        member.classic = ClassicMemberMetadata(
            req.session_timeout_ms, req.protocols,
            sync_deadline_ms=now + req.rebalance_timeout_ms)
        member.deadline_ms = now + req.session_timeout_ms
        coordinator._refresh(group, force=changed)
        coordinator._reconcile(group, member, self._ids(subscription.owned))
        protocol_name = member.classic.protocol_name
        if replaced is not None:
            self._maybe_downgrade_after_replacement(group)
        return JoinResult(ErrorCode.NONE, member.member_id, member.member_epoch,
                          CONSUMER_PROTOCOL_TYPE, protocol_name, "")

    def _joining_member(self, group: ConsumerGroup, req: JoinRequest, member_id: str
                        ) -> tuple[ConsumerMember, bool] | ErrorCode:
        """Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember for a classic
        join: a static member without member id replaces the holder of its instance id at
        once; a known id must be a classic member; an unknown one is created."""
        instance_id = req.group_instance_id
        if instance_id is not None:
            current_id = group.static_members.get(instance_id)
            current = group.members.get(current_id) if current_id is not None else None
            if current is not None and not req.member_id:
                return self.coordinator._replace_static_member(group, current, member_id), False
            if current is not None and current.member_id != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
            if current is None and req.member_id:
                return ErrorCode.UNKNOWN_MEMBER_ID
        existing = group.members.get(member_id)
        if existing is not None:
            if existing.classic is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            return existing, False
        member = ConsumerMember(member_id, instance_id, None, req.client_id, req.client_host,
                                req.rebalance_timeout_ms, (), None, None,
                                self._now() + req.session_timeout_ms)
        group.members[member_id] = member
        if instance_id is not None:
            group.static_members[instance_id] = member_id
        return member, True

    # -- SyncGroup, Heartbeat, LeaveGroup ---------------------------------------------------

    def sync(self, group_id: str, generation_id: int, member_id: str,
             instance_id: str | None, protocol_type: str | None, protocol_name: str | None,
             assignments: Sequence[tuple[str, bytes]], callback: SyncCallback) -> None:
        group = self.coordinator.groups.get(group_id)
        if group is None or not group_id:
            self.coordinator.classic.sync(group_id, generation_id, member_id, instance_id,
                                          protocol_type, protocol_name, assignments, callback)
            return
        callback(self._sync(group, generation_id, member_id, instance_id, protocol_type,
                            protocol_name))

    def _sync(self, group: ConsumerGroup, generation_id: int, member_id: str,
              instance_id: str | None, protocol_type: str | None,
              protocol_name: str | None) -> SyncResult:
        found = self._member(group, member_id, instance_id)
        if isinstance(found, ErrorCode):
            return SyncResult(found)
        member = found
        classic = member.classic
        assert classic is not None  # _member answers only classic members
        if generation_id != member.member_epoch:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
                protocol_name is not None and protocol_name != classic.protocol_name):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.group_epoch > member.member_epoch \
                and member.state is not MemberState.UNREVOKED_PARTITIONS:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        classic.sync_deadline_ms = None
        member.deadline_ms = self._now() + classic.session_timeout_ms
        subscription = decode_subscription(classic.protocols[0][1]) if classic.protocols \
            else None
        version = subscription.version if subscription is not None else 0
        return SyncResult(ErrorCode.NONE,
                          encode_assignment(self._named(member.assigned), version),
                          protocol_type, protocol_name)

    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  instance_id: str | None = None) -> ErrorCode:
        group = self.coordinator.groups.get(group_id)
        if group is None or not group_id:
            return self.coordinator.classic.heartbeat(group_id, generation_id, member_id,
                                                      instance_id)
        found = self._member(group, member_id, instance_id)
        if isinstance(found, ErrorCode):
            return found
        member = found
        classic = member.classic
        assert classic is not None
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        now = self._now()
        member.deadline_ms = now + classic.session_timeout_ms
        if member.member_epoch < group.group_epoch \
                or member.state is MemberState.UNREVOKED_PARTITIONS \
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not self._waiting_on_unreleased(group, member)):
            if classic.join_deadline_ms is None:
                classic.join_deadline_ms = now + member.rebalance_timeout_ms
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    @staticmethod
    def _waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
        target = group.target.get(member.member_id, frozenset())
        return any(group.owners.get(tp, member.member_id) != member.member_id
                   for tp in target - member.assigned)

    def leave(self, group_id: str, leaving: Iterable[tuple[str, str | None]]
              ) -> tuple[ErrorCode, list[ErrorCode]]:
        group = self.coordinator.groups.get(group_id)
        if group is None or not group_id:
            return self.coordinator.classic.leave(group_id, leaving)
        errors = []
        for member_id, instance_id in leaving:
            errors.append(self._leave_one(group, member_id, instance_id))
        return ErrorCode.NONE, errors

    def _leave_one(self, group: ConsumerGroup, member_id: str,
                   instance_id: str | None) -> ErrorCode:
        """A classic member leaving, or an admin removing any member (by instance id)."""
        if self.coordinator.groups.get(group.group_id) is not group:
            return ErrorCode.UNKNOWN_MEMBER_ID  # converted by an earlier member's leave
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None or current not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member_id and current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
            member_id = current
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.coordinator._remove(group, member)
        return ErrorCode.NONE

    # -- conversions ------------------------------------------------------------------------

    def upgrade(self, classic: Group) -> ConsumerGroup | str:
        """The consumer group converted from a classic group with members (Kafka's
        ConsumerGroup.fromClassicGroup), or why it cannot be converted."""
        group_id = classic.group_id
        refusal = f"Group {group_id} is not a consumer group."
        if not self.policy.upgrade_enabled or classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return refusal
        if len(classic.members) > self.coordinator.config.max_size:
            return refusal
        decoded: dict[str, tuple[Subscription, tuple[TopicPartition, ...]]] = {}
        for member in classic.members.values():
            protocol = classic.protocol_name or (member.protocols[0][0]
                                                 if member.protocols else None)
            subscription = decode_subscription(member.metadata(protocol))
            assignment = decode_assignment(member.assignment)
            if subscription is None or assignment is None:
                return (f"Cannot upgrade the classic group {group_id} to consumer group "
                        "because the embedded consumer protocol is malformed.")
            decoded[member.member_id] = (subscription, assignment)
        self._answer_parked(classic)
        now = self._now()
        epoch = classic.generation_id
        group = ConsumerGroup(group_id, group_epoch=epoch, assignment_epoch=epoch)
        for member in classic.members.values():
            subscription, assignment = decoded[member.member_id]
            assigned = frozenset(tp for tp in self._ids(assignment) if tp not in group.owners)
            converted = ConsumerMember(
                member.member_id, member.group_instance_id, subscription.rack_id,
                member.client_id, member.client_host, member.rebalance_timeout_ms,
                subscription.topics, None, None, now + member.session_timeout_ms,
                member_epoch=epoch, previous_member_epoch=epoch, assigned=assigned,
                classic=ClassicMemberMetadata(member.session_timeout_ms, member.protocols))
            group.members[member.member_id] = converted
            if member.group_instance_id is not None:
                group.static_members[member.group_instance_id] = member.member_id
            group.target[member.member_id] = assigned
            group.take(converted, assigned)
        topics = self.coordinator.topics()
        group.subscribed_metadata = {name: topics[name]
                                     for name in self.coordinator.subscribed_topics(group)}
        group.assignor_name = self.coordinator._assignor_name(group)
        group.coordinator = self.coordinator._coordinator(group_id)
        del self.coordinator.classic.groups[group_id]
        self.coordinator.groups[group_id] = group
        return group

    @staticmethod
    def _answer_parked(classic: Group) -> None:
        """JoinGroup/SyncGroup requests waiting on the classic rebalance: another one is
        starting (REBALANCE_IN_PROGRESS), they rejoin into the consumer group."""
        for member in classic.members.values():
            join, sync = member.join_callback, member.sync_callback
            member.join_callback = member.sync_callback = None
            if join is not None:
                join(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
            if sync is not None:
                sync(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))

    def maybe_downgrade(self, group: ConsumerGroup, departed: ConsumerMember) -> bool:
        """After a consumer-protocol member left or expired: convert the group to a classic
        one (Kafka's ClassicGroup.fromConsumerGroup) and rebalance it, when only classic
        members remain, the policy allows and they fit in group.max.size (Kafka's
        validateOnlineDowngradeWithFencedMember). True when converted."""
        if departed.classic is not None or not self._may_downgrade(group):
            return False
        classic = self._classic_group(group, self._targets(group))
        if classic is None:
            return False
        del self.coordinator.groups[group.group_id]
        self.coordinator.classic.adopt_and_rebalance(classic)
        return True

    @staticmethod
    def _targets(group: ConsumerGroup) -> dict[str, frozenset[TopicIdPartition]]:
        """Each member's target assignment: what ClassicGroup.fromConsumerGroup serializes
        as the classic members' assignments."""
        return {member_id: group.target.get(member_id, frozenset())
                for member_id in group.members}

    def _may_downgrade(self, group: ConsumerGroup) -> bool:
        return bool(group.members) and self.policy.downgrade_enabled \
            and all(m.classic is not None for m in group.members.values()) \
            and len(group.members) <= self.coordinator.classic.max_size

    def _maybe_downgrade_after_replacement(self, group: ConsumerGroup) -> None:
        """A classic static member took the place of the group's last consumer-protocol
        member (same group.instance.id): Kafka's validateOnlineDowngradeWithReplacedMemberId
        then converts the group at once, without a rebalance: a Stable classic group at
        generation = group epoch where every member, the joining one taking the replaced
        member's, holds its target assignment."""
        if not self._may_downgrade(group):
            return
        classic = self._classic_group(group, self._targets(group))
        if classic is None:
            return
        del self.coordinator.groups[group.group_id]
        self.coordinator.classic.adopt(classic)

    def _classic_group(self, group: ConsumerGroup,
                       assignments: Mapping[str, frozenset[TopicIdPartition]]) -> Group | None:
        """The classic group made of a consumer group whose members are all classic, each
        given its assignment from `assignments`; None when they share no protocol."""
        now = self._now()
        classic = Group(group.group_id, state=GroupState.STABLE,
                        generation_id=group.group_epoch, protocol_type=CONSUMER_PROTOCOL_TYPE)
        for member in group.members.values():
            info = member.classic
            assert info is not None
            subscription = decode_subscription(info.protocols[0][1]) if info.protocols \
                else None
            version = subscription.version if subscription is not None else 0
            classic.add(Member(
                member.member_id, member.instance_id, member.client_id, member.client_host,
                member.rebalance_timeout_ms, info.session_timeout_ms, CONSUMER_PROTOCOL_TYPE,
                info.protocols, now + info.session_timeout_ms,
                assignment=encode_assignment(self._named(assignments[member.member_id]),
                                             version)))
        if not classic.candidate_protocols():
            return None  # no protocol in common: the members could not form a classic group
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        return classic


__all__ = ["ClassicMembers", "MigrationPolicy", "decode_assignment", "decode_subscription",
           "encode_assignment"]
