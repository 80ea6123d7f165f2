"""The data of a classic consumer group: members, protocols, and what the coordinator answers.

Theory of operation: a `Group` is a passive record that the GroupCoordinator (classic_groups.py)
moves through Kafka's classic states (Empty, PreparingRebalance, CompletingRebalance,
Stable, Dead). It knows the facts Kafka's GroupMetadata knows: members in join order, the
leader, the static-member map (group.instance.id -> member id), members that were told
MEMBER_ID_REQUIRED and have not joined yet, members that have not sent SyncGroup for the
current generation, and the deadlines of the running rebalance. Protocol choice follows
Kafka: the candidates are the protocols every member supports; each member votes for the
first candidate in its own preference order; the most voted wins (ties go to the leader's
preference order, so the choice is deterministic).

Members waiting for a JoinGroup or SyncGroup answer hold plain callbacks: this layer has
no asyncio. The handler turns a callback into a future.

`pick_coordinator` maps a group or transactional id to a broker: a CRC-32 of the key over
the live broker ids, stable for a given set of brokers.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kafka_protocol_codec import CodecError, codec_for, data_type
from kafka_protocol_codec.error_codes import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"
GROUP_TYPE_CLASSIC = "classic"


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


def pick_coordinator(key: str, live_broker_ids: Sequence[int]) -> int | None:
    """The broker that coordinates `key`: a stable hash of the key over the live brokers."""
    if not live_broker_ids:
        return None
    ids = sorted(live_broker_ids)
    return ids[zlib.crc32(key.encode("utf-8")) % len(ids)]


@dataclass(frozen=True)
class JoinedMember:
    """One entry of the leader's JoinGroup member list."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    """What a JoinGroup is answered with once its rebalance completes or fails (the leader
    also gets the members)."""

    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True)
class SyncResult:
    """What a SyncGroup is answered with: the member's assignment, or an error."""

    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass(frozen=True)
class JoinRequest:
    """What a JoinGroup asks, version differences already resolved by the handler."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    require_known_member_id: bool = True  # JoinGroup v4+
    supports_skip_assignment: bool = False  # JoinGroup v9+
    reason: str | None = None


@dataclass
class Member:
    """One member of a classic group: its protocols, timeouts and session deadline, and the
    assignment SyncGroup gave it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    deadline_ms: int
    assignment: bytes = b""
    is_new: bool = False
    join_callback: JoinCallback | None = None
    sync_callback: SyncCallback | None = None

    @property
    def awaiting_join(self) -> bool:
        return self.join_callback is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def keep_alive(self) -> bool:
        """Members waiting for a rebalance answer do not need to heartbeat (the rebalance
        timeout bounds them), except new members, which expire at their join deadline."""
        if self.is_new:
            return False
        return self.join_callback is not None or self.sync_callback is not None


@dataclass(frozen=True)
class MemberSummary:
    """One member as DescribeGroups answers it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupSummary:
    """A classic group as DescribeGroups answers it: a snapshot."""

    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    members: tuple[MemberSummary, ...]


@dataclass
class Group:
    """A classic group (JoinGroup/SyncGroup) as its coordinator keeps it: state,
    generation, leader, members and pending joins."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> deadline
    pending_sync: set[str] = field(default_factory=set)
    subscribed_topics: set[str] | None = None
    join_deadline_ms: int | None = None
    initial_join: bool = False  # the running join is the delayed first one (from Empty)
    initial_remaining_ms: int = 0
    new_member_added: bool = False
    sync_deadline_ms: int | None = None

    # -- membership -------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        """A known group.instance.id whose current member id is another one."""
        if instance_id is None:
            return False
        current = self.static_members.get(instance_id)
        return current is not None and current != member_id

    def static_member_error(self, instance_id: str | None, member_id: str) -> ErrorCode | None:
        """Kafka's ClassicGroup.validateMember for a request naming a group.instance.id: an
        instance the group does not know is UNKNOWN_MEMBER_ID, one held by another member
        id FENCED_INSTANCE_ID."""
        if instance_id is None:
            return None
        current = self.static_members.get(instance_id)
        if current is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.FENCED_INSTANCE_ID if current != member_id else None

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if self.leader_id is None:
            self.leader_id = member.member_id
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self.pending_sync.discard(member_id)
        if member.group_instance_id is not None and \
                self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """Give a static member a new member id, keeping its place, timeouts and assignment.
        The old id's waiting requests are answered FENCED_INSTANCE_ID."""
        member = self.members.pop(old_id)
        if member.join_callback is not None:
            callback, member.join_callback = member.join_callback, None
            callback(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        if member.sync_callback is not None:
            sync, member.sync_callback = member.sync_callback, None
            sync(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def all_members_joined(self) -> bool:
        return self.awaiting_join_count() == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else promote any member that did. False when no
        member rejoined (only static members that have not come back remain)."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    # -- protocols --------------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        common = set(members[0].protocol_names())
        for member in members[1:]:
            common &= set(member.protocol_names())
        return common

    def supports_protocols(self, protocol_type: str, names: Sequence[str]) -> bool:
        """Kafka's check before a join: an empty group takes any non-empty protocol set; a
        non-empty one needs the same protocol type and a protocol in common with all."""
        if not protocol_type or not names:
            return False
        if not self.members:
            return True
        return protocol_type == self.protocol_type and bool(
            self.candidate_protocols() & set(names))

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id} has no protocol common to all members")
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        leader = self.members.get(self.leader_id or "")
        order = leader.protocol_names() if leader is not None else sorted(votes)
        order = order + sorted(votes)
        return next(name for name in order if votes.get(name) == best)

    def current_member_metadata(self) -> tuple[JoinedMember, ...]:
        return tuple(JoinedMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                     for m in self.members.values())

    def compute_subscribed_topics(self) -> set[str] | None:
        """The topics the members subscribe to, when the group runs the consumer protocol
        and every member's metadata decodes; None means unknown (treated as subscribed)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            decoded = decode_subscription(member.metadata(self.protocol_name))
            if decoded is None:
                return None
            topics.update(decoded)
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        return self.subscribed_topics is None or topic in self.subscribed_topics

    # -- answers ----------------------------------------------------------------------------

    def join_result(self, member: Member, with_members: bool, leader_id: str | None = None,
                    skip_assignment: bool = False) -> JoinResult:
        return JoinResult(
            ErrorCode.NONE, member.member_id, self.generation_id, self.protocol_type,
            self.protocol_name, (self.leader_id or "") if leader_id is None else leader_id,
            self.current_member_metadata() if with_members else (), skip_assignment)

    def summary(self) -> GroupSummary:
        stable = self.state is GroupState.STABLE
        protocol = self.protocol_name or "" if stable else ""
        members = tuple(MemberSummary(
            m.member_id, m.group_instance_id, m.client_id, m.client_host,
            m.metadata(self.protocol_name) if stable else b"",
            m.assignment if stable else b"") for m in self.members.values())
        return GroupSummary(self.group_id, self.state.value, self.protocol_type or "",
                            protocol, members)


def decode_subscription(data: bytes) -> list[str] | None:
    """The topics of an embedded ConsumerProtocolSubscription, None if it does not decode."""
    if len(data) < 2:
        return None
    version = int.from_bytes(data[:2], "big", signed=True)
    if version < 0:
        return None
    schema = data_type("ConsumerProtocolSubscription")
    highest = schema.versions.stop - 1
    try:  # newer versions only append fields: read them at the highest version known
        decoded = codec_for(schema, min(version, highest)).decode(data[2:])
    except CodecError:
        return None
    topics = decoded.get("topics")
    return list(topics) if topics is not None else None
