"""The KIP-848 consumer group coordinator: ConsumerGroupHeartbeat on an injected clock.

Theory of operation (this follows Kafka's GroupMetadataManager and CurrentAssignmentBuilder):

- One request drives everything. A member joins with epoch 0 (v0: the coordinator assigns
  a member id; v1+: the client brings its own), heartbeats with its current epoch, leaves
  with -1, or, static (with an instance id), leaves for a restart with -2 and keeps its
  assignment until its session ends; a new member id joining with that instance id then
  takes the place and assignment over. Another live member with the same instance id gets
  UNRELEASED_INSTANCE_ID; a heartbeat of a replaced one FENCED_INSTANCE_ID. A group id no
  consumer group has is GROUP_ID_NOT_FOUND unless the request joins (epoch 0).
- Epochs. Every change of membership, of a member's subscription (topic names, or a regex
  matched with Python's re.fullmatch as an approximation of RE2/J) or assignor, or of the
  partitions of subscribed topics (checked at every heartbeat and tick) raises the group
  epoch; the chosen server assignor (the member's ServerAssignor, else the first of
  group.consumer.assignors) then computes the target assignment, whose assignment epoch is
  the group epoch.
- Reconciliation, member by member at its heartbeats. A member behind the target first
  loses what the target no longer gives it: those partitions are returned as no longer
  assigned and stay owned ("pending revocation") until a heartbeat reports it does not own
  them any more; only then does the member reach the target epoch. A partition the target
  gives to a member is handed over only once no other member owns it (until then the member
  is in UNRELEASED_PARTITIONS and gets it at a later heartbeat). So a partition is never
  owned by two members at once.
- Fencing. An epoch above the member's, or below it other than its previous epoch with owned
  partitions within its assignment, is FENCED_MEMBER_EPOCH; an unknown member id
  UNKNOWN_MEMBER_ID; a new member beyond group.consumer.max.size GROUP_MAX_SIZE_REACHED.
  The answer carries the assignment when it changed, and to every full request (a join, or
  one with rebalance timeout, subscription and owned partitions), as Kafka's does.
- Liveness. Each heartbeat pushes the member's deadline to now + the session timeout
  (group.consumer.session.timeout.ms); a member pending revocation longer than its rebalance
  timeout is removed too. `tick(now)`, run by Cluster.tick, removes the late ones. When the
  group's coordinator broker changes (a broker stopped), every deadline restarts, as Kafka's
  new coordinator does when it loads the group from __consumer_offsets: the group's state
  itself lives here, so it survives the move.
- Offsets. Commits (OffsetCommit v9+) carry the member id and epoch: an unknown member is
  UNKNOWN_MEMBER_ID, an older OffsetCommit version UNSUPPORTED_VERSION, another epoch
  STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for TxnOffsetCommit); epoch -1 is accepted while
  the group is empty.
- Classic groups share the group id space (GroupCoordinator, classic_groups.py): an empty group
  changes type when a member of the other protocol joins. Kafka 4.0's mixed groups live in
  group_migration.py (`classic_members`): classic members inside a consumer group, the
  online upgrade of a classic group with members when a consumer-protocol member joins, and
  the downgrade when the last consumer-protocol member goes (`_remove`), as
  group.consumer.migration.policy allows (GROUP_ID_NOT_FOUND when it refuses an upgrade).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.groups.classic_groups import GroupCoordinator
from mockbroker.cluster.groups.consumer_assignors import (
    ASSIGNORS,
    RANGE,
    UNIFORM,
    MemberSubscription,
    TopicIdPartition,
)
from mockbroker.cluster.groups.consumer_group_model import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    ConsumerGroupState,
    ConsumerMember,
    GroupDescription,
    HeartbeatRequest,
    HeartbeatResult,
    MemberDescription,
    MemberState,
)
from mockbroker.cluster.groups.group_migration import ClassicMembers, MigrationPolicy
from mockbroker.cluster.groups.offset_store import OffsetCommitEntry
from mockbroker.cluster.kafka_uuid import random_id

# name -> (topic id, partition count) of every topic, as the controller's metadata has them
TopicsView = Callable[[], Mapping[str, tuple[uuid.UUID, int]]]
CONSUMER_PROTOCOL_MIN_COMMIT_VERSION = 9


@dataclass(frozen=True)
class ConsumerGroupConfig:
    """Kafka's group.consumer.* settings (heartbeat and session timeouts, assignors, max
    size, migration policy)."""

    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    assignors: tuple[str, ...] = (UNIFORM, RANGE)
    max_size: int = 2**31 - 1
    migration_policy: str = MigrationPolicy.BIDIRECTIONAL.value  # Kafka 4.0's default


class ConsumerGroupCoordinator:
    """Every KIP-848 consumer group of the cluster; offsets live in the classic
    coordinator's OffsetStore, shared by both kinds of group."""

    def __init__(self, clock: Clock, topics: TopicsView, classic: GroupCoordinator,
                 config: ConsumerGroupConfig | None = None,
                 coordinator_of: Callable[[str], int | None] | None = None) -> None:
        self.clock = clock
        self.topics = topics
        self.classic = classic
        self.config = config or ConsumerGroupConfig()
        self.coordinator_of = coordinator_of
        self.groups: dict[str, ConsumerGroup] = {}
        self.next_cleanup_ms = clock.now_ms() + classic.cleanup_interval_ms
        MigrationPolicy.parse(self.config.migration_policy)  # a bad value fails here
        self.classic_members = ClassicMembers(self)

    def _now(self) -> int:
        return self.clock.now_ms()

    def reset(self) -> None:
        self.groups.clear()

    def get(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    # -- ConsumerGroupHeartbeat -------------------------------------------------------------

    def validate(self, req: HeartbeatRequest) -> HeartbeatResult | None:
        """The checks Kafka runs before it looks for the group's coordinator: the error
        answer, or None when the request is well formed."""
        invalid = self._invalid_request(req)
        if invalid is not None:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, invalid)
        if req.server_assignor is not None and req.server_assignor not in self.config.assignors:
            return HeartbeatResult(ErrorCode.UNSUPPORTED_ASSIGNOR,
                                   f"ServerAssignor {req.server_assignor} is not supported.")
        if req.subscribed_topic_regex is not None:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as exc:
                return HeartbeatResult(ErrorCode.INVALID_REGULAR_EXPRESSION, str(exc))
        return None

    def heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        invalid = self.validate(req)
        if invalid is not None:
            return invalid
        group = self.groups.get(req.group_id)
        if group is None and req.member_epoch != JOIN_EPOCH:
            return HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND,
                                   f"Consumer group {req.group_id} not found.")
        if group is not None and req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group, req)
        created = group is None
        if group is None:
            classic = self.classic.get(req.group_id)
            if classic is not None and classic.members:  # an online upgrade, if allowed
                upgraded = self.classic_members.upgrade(classic)
                if isinstance(upgraded, str):
                    return HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, upgraded)
                group, created = upgraded, False
            else:
                if classic is not None:  # an empty classic group becomes a consumer group
                    del self.classic.groups[req.group_id]
                group = self.groups[req.group_id] = ConsumerGroup(req.group_id)
                group.coordinator = self._coordinator(req.group_id)
        is_new = False
        if req.member_epoch == JOIN_EPOCH:
            joined = self._join(group, req)
            if isinstance(joined, HeartbeatResult):
                if created:  # a failed first join leaves no group behind
                    del self.groups[group.group_id]
                return joined
            member, is_new = joined
        else:
            found = self._known_member(group, req)
            if isinstance(found, HeartbeatResult):
                return found
            member = found
            if not self._epoch_valid(member, req):
                return HeartbeatResult(ErrorCode.FENCED_MEMBER_EPOCH,
                                       f"The consumer group member has a smaller or larger "
                                       f"member epoch ({req.member_epoch}) than the one known "
                                       f"by the group coordinator ({member.member_epoch}).")
        changed = self._update_member(member, req) or is_new
        member.deadline_ms = self._now() + self.config.session_timeout_ms
        self._refresh(group, force=changed)
        previous = member.assigned
        self._reconcile(group, member, req.owned)
        full_request = req.member_epoch == JOIN_EPOCH or (
            req.rebalance_timeout_ms != -1 and req.subscribed_topic_names is not None
            and req.owned is not None)
        send = full_request or previous != member.assigned
        return HeartbeatResult(ErrorCode.NONE, None, member.member_id, member.member_epoch,
                               self.config.heartbeat_interval_ms,
                               member.assigned if send else None)

    def _known_member(self, group: ConsumerGroup, req: HeartbeatRequest
                      ) -> ConsumerMember | HeartbeatResult:
        """The member a heartbeat or leave names: by instance id for a static member (another
        member id holding it is FENCED_INSTANCE_ID), else by member id."""
        if req.instance_id is not None:
            current_id = group.static_members.get(req.instance_id)
            if current_id is None or current_id not in group.members:
                return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID,
                                       f"Instance id {req.instance_id} is unknown.")
            if current_id != req.member_id:
                return HeartbeatResult(ErrorCode.FENCED_INSTANCE_ID,
                                       f"Static member {req.member_id} with instance id "
                                       f"{req.instance_id} was fenced by {current_id}.")
            return group.members[current_id]
        found = group.members.get(req.member_id)
        if found is None:
            return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID,
                                   f"Member {req.member_id} is not a member of the group.")
        return found

    def _invalid_request(self, req: HeartbeatRequest) -> str | None:
        """Kafka's validation of a ConsumerGroupHeartbeat (INVALID_REQUEST)."""
        if not req.group_id:
            return "GroupId can't be empty."
        if req.instance_id == "":
            return "InstanceId can't be empty."
        if req.rack_id == "":
            return "RackId can't be empty."
        if req.member_id_from_client and not req.member_id:
            return "MemberId can't be empty."
        if req.member_epoch > 0 or req.member_epoch == LEAVE_EPOCH:
            if not req.member_id:
                return "MemberId can't be empty."
        elif req.member_epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                return "RebalanceTimeoutMs must be provided in first request."
            if req.owned is None or req.owned:
                return "TopicPartitions must be empty when (re-)joining."
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                return "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
        elif req.member_epoch == STATIC_LEAVE_EPOCH:
            if not req.member_id:
                return "MemberId can't be empty."
            if req.instance_id is None:
                return "InstanceId can't be null."
        else:
            return f"MemberEpoch is invalid: {req.member_epoch}."
        return None

    def _join(self, group: ConsumerGroup, req: HeartbeatRequest
              ) -> tuple[ConsumerMember, bool] | HeartbeatResult:
        """The joining member and whether it is new to the group, or the error."""
        if len(group.members) >= self.config.max_size and (
                not req.member_id or req.member_id not in group.members):
            return HeartbeatResult(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                   f"The consumer group has reached its maximum capacity of "
                                   f"{self.config.max_size} members.")
        member_id = req.member_id or random_id()  # Kafka: Uuid.randomUuid().toString()
        if req.instance_id is not None:
            current_id = group.static_members.get(req.instance_id)
            current = group.members.get(current_id) if current_id is not None else None
            if current is not None and current.member_id != member_id:
                if current.member_epoch != STATIC_LEAVE_EPOCH:
                    return HeartbeatResult(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {current.member_id} with instance id "
                        f"{req.instance_id} is not released.")
                return self._replace_static_member(group, current, member_id), False
        existing = group.members.get(member_id)
        if existing is not None:
            # a rejoin after an error (as KIP-848 has it; Kafka before KAFKA-19233 fenced
            # it): the member gave up everything it owned
            group.release(existing, existing.assigned | existing.pending_revocation)
            existing.assigned = existing.pending_revocation = frozenset()
            existing.member_epoch, existing.state = JOIN_EPOCH, MemberState.STABLE
            existing.revocation_deadline_ms = None
            return existing, False
        member = ConsumerMember(
            member_id, req.instance_id, req.rack_id, req.client_id, req.client_host,
            req.rebalance_timeout_ms, (), None, None,
            self._now() + self.config.session_timeout_ms)
        group.members[member_id] = member
        if req.instance_id is not None:
            group.static_members[req.instance_id] = member_id
        return member, True

    def _replace_static_member(self, group: ConsumerGroup, old: ConsumerMember,
                               new_id: str) -> ConsumerMember:
        """The restarted static member takes the departed one's assignment, at epoch 0 (the
        reconciliation then brings it to the target epoch)."""
        del group.members[old.member_id]
        member = ConsumerMember(
            new_id, old.instance_id, old.rack_id, old.client_id, old.client_host,
            old.rebalance_timeout_ms, old.subscribed_topic_names, old.subscribed_topic_regex,
            old.server_assignor, old.deadline_ms, JOIN_EPOCH, JOIN_EPOCH, old.state,
            old.assigned, old.pending_revocation, old.revocation_deadline_ms)
        group.members[new_id] = member
        if member.instance_id is not None:
            group.static_members[member.instance_id] = new_id
        group.take(member, member.assigned | member.pending_revocation)
        if old.member_id in group.target:
            group.target[new_id] = group.target.pop(old.member_id)
        return member

    def _epoch_valid(self, member: ConsumerMember, req: HeartbeatRequest) -> bool:
        received = req.member_epoch
        if received > member.member_epoch:
            return False
        if received < member.member_epoch:
            return received == member.previous_member_epoch and req.owned is not None \
                and req.owned <= member.assigned
        return True

    def _update_member(self, member: ConsumerMember, req: HeartbeatRequest) -> bool:
        """Apply what changed; True when the group epoch must move (subscription or
        assignor)."""
        changed = False
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.client_id:
            member.client_id, member.client_host = req.client_id, req.client_host
        if req.subscribed_topic_names is not None \
                and req.subscribed_topic_names != member.subscribed_topic_names:
            member.subscribed_topic_names = req.subscribed_topic_names
            changed = True
        if req.subscribed_topic_regex is not None:
            regex = req.subscribed_topic_regex or None  # "" clears the regex
            if regex != member.subscribed_topic_regex:
                member.subscribed_topic_regex = regex
                changed = True
        if req.server_assignor is not None and req.server_assignor != member.server_assignor:
            member.server_assignor = req.server_assignor
            changed = True
        return changed

    def _leave(self, group: ConsumerGroup, req: HeartbeatRequest) -> HeartbeatResult:
        found = self._known_member(group, req)
        if isinstance(found, HeartbeatResult):
            return found
        member = found
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # a static member restarting: keeps its place and assignment until its session ends
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = STATIC_LEAVE_EPOCH
            return HeartbeatResult(ErrorCode.NONE, None, member.member_id, STATIC_LEAVE_EPOCH)
        self._remove(group, member)
        return HeartbeatResult(ErrorCode.NONE, None, member.member_id, req.member_epoch)

    def _remove(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        group.remove(member.member_id)
        if not self.classic_members.maybe_downgrade(group, member):
            self._bump(group)

    # -- target assignment ------------------------------------------------------------------

    def _coordinator(self, group_id: str) -> int | None:
        return self.coordinator_of(group_id) if self.coordinator_of is not None else None

    def subscribed_topics(self, group: ConsumerGroup) -> set[str]:
        names = set(self.topics())
        out: set[str] = set()
        for member in group.members.values():
            out.update(n for n in member.subscribed_topic_names if n in names)
            if member.subscribed_topic_regex:
                pattern = re.compile(member.subscribed_topic_regex)
                out.update(n for n in names if pattern.fullmatch(n))
        return out

    def _member_topics(self, member: ConsumerMember,
                       topics: Mapping[str, tuple[uuid.UUID, int]]) -> frozenset[uuid.UUID]:
        ids = {topics[n][0] for n in member.subscribed_topic_names if n in topics}
        if member.subscribed_topic_regex:
            pattern = re.compile(member.subscribed_topic_regex)
            ids.update(tid for n, (tid, _) in topics.items() if pattern.fullmatch(n))
        return frozenset(ids)

    def _refresh(self, group: ConsumerGroup, force: bool = False) -> None:
        """Raise the group epoch when the subscribed topics changed, then bring the target
        assignment up to the group epoch."""
        topics = self.topics()
        current = {name: topics[name] for name in self.subscribed_topics(group)}
        if force or current != group.subscribed_metadata:
            group.group_epoch += 1
        if group.group_epoch != group.assignment_epoch:
            self._compute_target(group, topics)

    def _bump(self, group: ConsumerGroup) -> None:
        group.group_epoch += 1
        self._compute_target(group, self.topics())

    def _assignor_name(self, group: ConsumerGroup) -> str:
        chosen = [m.server_assignor for m in group.members.values() if m.server_assignor]
        if chosen:  # the most chosen one, ties to the configured order
            return max(sorted(set(chosen), key=self.config.assignors.index),
                       key=chosen.count)
        return self.config.assignors[0]

    def _compute_target(self, group: ConsumerGroup,
                        topics: Mapping[str, tuple[uuid.UUID, int]]) -> None:
        group.subscribed_metadata = {name: topics[name] for name in self.subscribed_topics(group)}
        group.assignor_name = self._assignor_name(group)
        subscriptions = {m.member_id: MemberSubscription(self._member_topics(m, topics),
                                                         group.target.get(m.member_id,
                                                                          frozenset()))
                         for m in group.members.values()}
        partitions = {tid: count for tid, count in group.subscribed_metadata.values()}
        group.target = ASSIGNORS[group.assignor_name](subscriptions, partitions)
        group.assignment_epoch = group.group_epoch

    # -- reconciliation ---------------------------------------------------------------------

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember,
                   owned: frozenset[TopicIdPartition] | None) -> None:
        """Move the member toward the target (Kafka's CurrentAssignmentBuilder)."""
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if owned is None or owned & member.pending_revocation:
                return  # still owns partitions it must give up
            group.release(member, member.pending_revocation)
            member.pending_revocation = frozenset()
            member.revocation_deadline_ms = None
            member.state = MemberState.STABLE
            self._advance(group, member, force=True)
            return
        if member.state is MemberState.STABLE \
                and member.member_epoch == group.assignment_epoch:
            return
        self._advance(group, member)

    def _advance(self, group: ConsumerGroup, member: ConsumerMember, force: bool = False
                 ) -> None:
        target = group.target.get(member.member_id, frozenset())
        revoke = member.assigned - target
        if revoke:
            member.assigned = member.assigned & target
            member.pending_revocation = revoke
            member.state = MemberState.UNREVOKED_PARTITIONS
            member.revocation_deadline_ms = self._now() + member.rebalance_timeout_ms
            return
        free = frozenset(tp for tp in target - member.assigned
                         if group.owners.get(tp, member.member_id) == member.member_id)
        group.take(member, free)
        member.assigned = member.assigned | free
        if member.member_epoch != group.assignment_epoch or force:
            if member.member_epoch != group.assignment_epoch:
                member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
        member.state = MemberState.UNRELEASED_PARTITIONS if target - member.assigned \
            else MemberState.STABLE

    # -- deadlines --------------------------------------------------------------------------

    def tick(self, now: int) -> None:
        """Remove members whose session or revocation deadline passed; notice new
        partitions of subscribed topics; restart sessions after a coordinator move."""
        for group in list(self.groups.values()):
            coordinator = self._coordinator(group.group_id)
            if coordinator != group.coordinator:
                group.coordinator = coordinator
                for member in group.members.values():
                    member.deadline_ms = now + self._session_timeout(member)
            for member in list(group.members.values()):
                if self.groups.get(group.group_id) is not group:
                    break  # converted to a classic group by a removal (group_migration.py)
                if member.is_late(now):
                    self._remove(group, member)
            if group.members and self.groups.get(group.group_id) is group:
                self._refresh(group)
        if now >= self.next_cleanup_ms:
            self.next_cleanup_ms = now + self.classic.cleanup_interval_ms
            self.remove_unused_groups()

    def remove_unused_groups(self) -> list[str]:
        """Remove the groups left without members or offsets, at the classic coordinator's
        cleanup interval (Kafka's offsets.retention.check.interval.ms), as Kafka deletes
        an empty consumer group that has no offsets."""
        gone = [group_id for group_id, group in self.groups.items()
                if not group.members and self.classic.unused(group_id)]
        for group_id in gone:
            del self.groups[group_id]
        return gone

    def _session_timeout(self, member: ConsumerMember) -> int:
        """A classic member's own session timeout, else group.consumer.session.timeout.ms."""
        if member.classic is not None:
            return member.classic.session_timeout_ms
        return self.config.session_timeout_ms

    # -- ConsumerGroupDescribe, ListGroups, DeleteGroups ------------------------------------

    def describe(self, group_id: str) -> GroupDescription | None:
        group = self.groups.get(group_id)
        if group is None:
            return None
        return GroupDescription(
            group.group_id, group.state.value, group.group_epoch, group.assignment_epoch,
            group.assignor_name, tuple(MemberDescription(
                m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id,
                m.client_host, m.subscribed_topic_names, m.subscribed_topic_regex,
                m.assigned, group.target.get(m.member_id, frozenset()), m.state.value,
                m.member_type) for m in group.members.values()))

    def delete_group(self, group_id: str) -> ErrorCode | None:
        """None when `group_id` is no consumer group (the classic coordinator decides)."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        self.classic.offsets.delete_group(group_id)
        return ErrorCode.NONE

    # -- offsets ----------------------------------------------------------------------------

    def commit_offsets(self, group_id: str, member_id: str, member_epoch: int,
                       api_version: int, entries: Sequence[OffsetCommitEntry]
                       ) -> list[ErrorCode] | None:
        """Check a commit against the consumer group and store it; None when `group_id` is
        no consumer group."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        error = self._offset_member_error(group, member_id, member_epoch, api_version)
        if error is not None:
            return [error] * len(entries)
        return self.classic.offsets.commit_entries(group_id, entries)

    def validate_offset_fetch(self, group_id: str, member_id: str | None,
                              member_epoch: int) -> ErrorCode:
        """OffsetFetch v9 with a member id and epoch; anything else is accepted."""
        group = self.groups.get(group_id)
        if group is None or (member_id is None and member_epoch < 0):
            return ErrorCode.NONE
        return self._offset_member_error(group, member_id or "", member_epoch) \
            or ErrorCode.NONE

    def validate_txn_offset_commit(self, group_id: str, member_id: str,
                                   member_epoch: int) -> ErrorCode | None:
        """TxnOffsetCommit against a consumer group (None: no consumer group of that id). A
        transactional client knows no STALE_MEMBER_EPOCH: it gets ILLEGAL_GENERATION."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if member_epoch < 0 and not group.members:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def _offset_member_error(self, group: ConsumerGroup, member_id: str, member_epoch: int,
                             commit_version: int | None = None) -> ErrorCode | None:
        """Kafka's order: the member, the OffsetCommit version, then the epoch."""
        if member_epoch < 0 and not group.members:
            return None  # the admin client, or a consumer outside group management
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.classic is not None:  # a classic member: its generation, any version
            return ErrorCode.ILLEGAL_GENERATION if member_epoch != member.member_epoch \
                else None
        if commit_version is not None \
                and commit_version < CONSUMER_PROTOCOL_MIN_COMMIT_VERSION:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    def is_subscribed_to(self, group_id: str, topic: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and topic in self.subscribed_topics(group)


__all__ = ["ConsumerGroupConfig", "ConsumerGroupCoordinator", "ConsumerGroupState",
           "HeartbeatRequest", "HeartbeatResult"]
