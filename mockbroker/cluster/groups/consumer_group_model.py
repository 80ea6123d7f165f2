"""The data of a KIP-848 consumer group: members, epochs, target and current assignments.

Theory of operation: a `ConsumerGroup` is a passive record that the ConsumerGroupCoordinator
(consumer_groups.py) changes. It holds what Kafka's ConsumerGroup holds:

- the group epoch (raised by every change of membership, subscriptions, assignor or the
  subscribed topics' partitions), the assignment epoch (the group epoch the current target
  assignment was computed for) and the target assignment per member;
- per member its epoch and previous epoch, the partitions it may use now (`assigned`), the
  partitions it must give up before its epoch moves on (`pending_revocation`), and its
  reconciliation state (Kafka's MemberState: STABLE, UNREVOKED_PARTITIONS,
  UNRELEASED_PARTITIONS);
- `owners`: which member holds each partition (assigned or pending revocation), so that a
  partition goes to a new member only once its previous owner has released it.

A member joined through the classic protocol (JoinGroup/SyncGroup, Kafka 4.0's mixed groups,
group_migration.py) also carries `classic`: its session timeout, the protocols it sent, and
the deadlines of its JoinGroup and SyncGroup round trips.

Partitions are (topic id, partition), as Kafka keys them: a topic deleted and created again
is another topic. The group state is derived: Empty without members, Assigning while the
target lags the group epoch, Reconciling while a member has not reached the target, else
Stable.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field

from mockbroker.cluster.groups.consumer_assignors import TopicIdPartition

GROUP_TYPE_CONSUMER = "consumer"
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class ClassicMemberMetadata:
    """What a member speaking the classic protocol adds to a consumer-group member."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]  # (assignor name, ConsumerProtocol subscription)
    sync_deadline_ms: int | None = None  # answered a JoinGroup: SyncGroup expected by then
    join_deadline_ms: int | None = None  # told to rejoin: JoinGroup expected by then

    @property
    def protocol_name(self) -> str:
        """The protocol it is told in JoinGroup and must name in SyncGroup: its first."""
        return self.protocols[0][0] if self.protocols else ""


@dataclass
class ConsumerMember:
    """One member of a KIP-848 group: its subscription, its epoch and the assignment being
    reconciled with it."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    deadline_ms: int
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: frozenset[TopicIdPartition] = frozenset()
    pending_revocation: frozenset[TopicIdPartition] = frozenset()
    revocation_deadline_ms: int | None = None
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    @property
    def member_type(self) -> str:
        return "classic" if self.classic is not None else "consumer"

    def is_late(self, now: int) -> bool:
        """Its session, revocation, or (classic) JoinGroup/SyncGroup deadline passed."""
        deadlines = [self.deadline_ms, self.revocation_deadline_ms]
        if self.classic is not None:
            deadlines += [self.classic.sync_deadline_ms, self.classic.join_deadline_ms]
        return any(d is not None and d <= now for d in deadlines)


@dataclass
class ConsumerGroup:
    """A KIP-848 consumer group as its coordinator keeps it: epochs, members, the target
    assignment and who owns each partition."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, frozenset[TopicIdPartition]] = field(default_factory=dict)
    owners: dict[TopicIdPartition, str] = field(default_factory=dict)
    # the subscribed topics as the target last saw them: name -> (topic id, partitions)
    subscribed_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    assignor_name: str = ""
    coordinator: int | None = None

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch != self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch != self.assignment_epoch \
                    or member.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def release(self, member: ConsumerMember, partitions: frozenset[TopicIdPartition]) -> None:
        for tp in partitions:
            if self.owners.get(tp) == member.member_id:
                del self.owners[tp]

    def take(self, member: ConsumerMember, partitions: frozenset[TopicIdPartition]) -> None:
        for tp in partitions:
            self.owners[tp] = member.member_id

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self.release(member, member.assigned | member.pending_revocation)
        self.target.pop(member_id, None)
        if member.instance_id is not None \
                and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        return member


@dataclass(frozen=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat, version differences resolved by the handler. None fields
    did not change since the member's previous heartbeat."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: frozenset[TopicIdPartition] | None = None
    client_id: str = ""
    client_host: str = ""
    member_id_from_client: bool = False  # v1+: the client generates the member id


@dataclass(frozen=True)
class HeartbeatResult:
    """The coordinator's answer to one ConsumerGroupHeartbeat, before the handler shapes it
    into a response."""

    error: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0  # an error answer's, as Kafka's (the schema's default)
    heartbeat_interval_ms: int = 0
    assignment: frozenset[TopicIdPartition] | None = None


@dataclass(frozen=True)
class MemberDescription:
    """One member as ConsumerGroupDescribe answers it: a snapshot."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: frozenset[TopicIdPartition]
    target_assignment: frozenset[TopicIdPartition]
    state: str
    member_type: str = "consumer"  # "classic" for a JoinGroup/SyncGroup member


@dataclass(frozen=True)
class GroupDescription:
    """A KIP-848 group as ConsumerGroupDescribe answers it: a snapshot, not the live
    group."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[MemberDescription, ...]
