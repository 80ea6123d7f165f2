"""The classic group coordinator: Kafka's JoinGroup/SyncGroup state machine on an injected clock.

Theory of operation (this follows Kafka's classic GroupCoordinator):

- States. A group starts Empty. A join moves it to PreparingRebalance; once every known
  member has rejoined (and no member told MEMBER_ID_REQUIRED is still outstanding), or the
  rebalance timeout (the largest of the members' rebalance timeouts) passes, the join
  completes: dynamic members that did not rejoin are dropped, a leader is chosen among those
  that did, the generation rises, a protocol is selected, and every waiting JoinGroup is
  answered (the leader gets the member list). The group is then CompletingRebalance until the
  leader's SyncGroup brings the assignments, which answers every waiting SyncGroup and makes
  the group Stable. A member that does not send SyncGroup within the rebalance timeout is
  removed and the group rebalances again. Losing the last member makes the group Empty (the
  generation still rises). A deleted group is Dead and forgotten.
- First rebalance. Leaving Empty waits group.initial.rebalance.delay.ms (extended while new
  members keep arriving, bounded by the rebalance timeout), as Kafka's InitialDelayedJoin;
  with a delay of 0 the join completes at once.
- Liveness. Every member has a deadline: the session timeout after its last heartbeat (or
  join/sync/commit), or 5 minutes for a new member still waiting for its first join answer.
  Members waiting for a rebalance answer are kept alive; the rebalance timeout bounds them.
  `tick(now)`, run by Cluster.tick, expires members, pending members and rebalance deadlines.
- Static membership. A join with a known group.instance.id and no member id replaces the old
  member id (the old one is fenced: FENCED_INSTANCE_ID) and, in a Stable group whose protocol
  would not change, answers with the current generation without a rebalance.
- Size. group.max.size (`max_size`) bounds a group as Kafka's acceptJoiningMember does: an
  Empty group takes anyone; PreparingRebalance a member already waiting in the join, or
  anyone while fewer than max_size members wait; CompletingRebalance/Stable a member, or
  anyone while it has fewer than max_size members. Others get GROUP_MAX_SIZE_REACHED with
  no member id, and a member so refused is removed.
- Offsets. Commits are checked against the group (generation, member, fencing) and written to
  the OffsetStore; a commit with generation < 0 to an Empty or unknown group is a "simple"
  commit and is accepted, as Kafka does. Those checks, OffsetFetch, OffsetDelete and offset
  retention are classic_group_offsets.py, which GroupCoordinator inherits.

Waiting requests are plain callbacks (JoinCallback, SyncCallback), completed synchronously
from whatever call resolves them; the handler layer turns them into futures.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from functools import partial

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.groups.classic_group_model import (
    Group,
    GroupState,
    GroupSummary,
    JoinCallback,
    JoinRequest,
    JoinResult,
    Member,
    SyncCallback,
    SyncResult,
)
from mockbroker.cluster.groups.classic_group_offsets import ClassicGroupOffsets
from mockbroker.cluster.groups.offset_store import OffsetStore

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
DEFAULT_MIN_SESSION_TIMEOUT_MS = 6_000
DEFAULT_MAX_SESSION_TIMEOUT_MS = 1_800_000
DEFAULT_OFFSETS_RETENTION_MS = 7 * 24 * 3_600_000  # offsets.retention.minutes = 10080
DEFAULT_MAX_SIZE = 2**31 - 1  # group.max.size: Integer.MAX_VALUE
# offsets.retention.check.interval.ms: how often empty groups without offsets are removed
DEFAULT_CLEANUP_INTERVAL_MS = 600_000


class GroupCoordinator(ClassicGroupOffsets):
    """Every classic group of the cluster, and their committed offsets."""

    def __init__(self, clock: Clock, initial_rebalance_delay_ms: int = 0,
                 min_session_timeout_ms: int = DEFAULT_MIN_SESSION_TIMEOUT_MS,
                 max_session_timeout_ms: int = DEFAULT_MAX_SESSION_TIMEOUT_MS,
                 offsets_retention_ms: int = DEFAULT_OFFSETS_RETENTION_MS,
                 max_size: int = DEFAULT_MAX_SIZE,
                 cleanup_interval_ms: int = DEFAULT_CLEANUP_INTERVAL_MS) -> None:
        self.clock = clock
        self.max_size = max_size
        self.offsets_retention_ms = offsets_retention_ms
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore(clock, on_group_used=self._group_used)
        # group ids that belong to KIP-848 consumer groups (set by the Cluster)
        self.owned_elsewhere: Callable[[str], bool] = lambda _group_id: False
        self.cleanup_interval_ms = cleanup_interval_ms
        self.next_cleanup_ms = clock.now_ms() + self.cleanup_interval_ms

    def _group_used(self, group_id: str) -> None:
        """A transactional offset commit creates its (classic) group unless the id is a
        consumer group's."""
        if not self.owned_elsewhere(group_id):
            self.get_or_create(group_id)

    def _now(self) -> int:
        return self.clock.now_ms()

    def reset(self) -> None:
        """Drop every group and committed offset (the control API's reset). Members parked
        in a JoinGroup or SyncGroup are answered NOT_COORDINATOR, so no connection hangs."""
        waiting: list[Callable[[], None]] = []
        for group in self.groups.values():
            for member in group.members.values():
                join, sync = member.join_callback, member.sync_callback
                member.join_callback = member.sync_callback = None
                if join is not None:
                    waiting.append(partial(join, JoinResult(ErrorCode.NOT_COORDINATOR,
                                                            member.member_id)))
                if sync is not None:
                    waiting.append(partial(sync, SyncResult(ErrorCode.NOT_COORDINATOR)))
        self.groups.clear()
        self.offsets.reset()
        for answer in waiting:
            answer()

    def get(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def get_or_create(self, group_id: str) -> Group:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id)
        return group

    def adopt(self, group: Group) -> None:
        """Take over a group converted from a consumer group (group_migration.py) as it
        is: Kafka's downgrade on a static member's replacement does not rebalance."""
        self.groups[group.group_id] = group

    def adopt_and_rebalance(self, group: Group) -> None:
        """Take over a group converted from a consumer group (group_migration.py) and
        rebalance it at once, as Kafka does after an online downgrade."""
        self.groups[group.group_id] = group
        self._prepare_rebalance(group)
        self._try_complete_join(group)

    # -- JoinGroup --------------------------------------------------------------------------

    def join(self, req: JoinRequest, callback: JoinCallback) -> None:
        """Handle a JoinGroup; `callback` is called once, now or when the rebalance ends."""

        def fail(error: ErrorCode, member_id: str = req.member_id) -> None:
            callback(JoinResult(error, member_id))

        if not req.group_id:
            return fail(ErrorCode.INVALID_GROUP_ID)
        if not self.min_session_timeout_ms <= req.session_timeout_ms \
                <= self.max_session_timeout_ms:
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        group = self.groups.get(req.group_id)
        created = group is None
        if group is None:
            if req.member_id:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID)
            group = self.get_or_create(req.group_id)
        if not self._accepts_joining_member(group, req.member_id):
            refused = group.members.get(req.member_id)
            if refused is not None:
                self._remove_member(group, refused)
            return fail(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        if group.state is GroupState.DEAD:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        elif not req.member_id:
            self._join_unknown_member(group, req, callback)
        else:
            self._join_known_member(group, req, callback)
        if created and group.state is GroupState.EMPTY and not group.members \
                and not group.pending_members and not self.offsets.has_offsets(group.group_id):
            del self.groups[group.group_id]  # a failed first join leaves no group behind

    def _accepts_joining_member(self, group: Group, member_id: str) -> bool:
        """Kafka's acceptJoiningMember: room for this join under group.max.size."""
        if group.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        member = group.members.get(member_id)
        if group.state is GroupState.PREPARING_REBALANCE:
            return (member is not None and member.awaiting_join) \
                or group.awaiting_join_count() < self.max_size
        return member is not None or len(group.members) < self.max_size

    def _join_unknown_member(self, group: Group, req: JoinRequest,
                             callback: JoinCallback) -> None:
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        new_id = f"{prefix}-{uuid.uuid4()}"
        if req.group_instance_id is not None:
            old_id = group.static_members.get(req.group_instance_id)
            if old_id is not None and old_id in group.members:
                self._rejoin_static_member(group, req, old_id, new_id, callback)
            else:
                self._add_member_and_rebalance(group, req, new_id, callback)
        elif req.require_known_member_id:
            group.pending_members[new_id] = self._now() + req.session_timeout_ms
            callback(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, req, new_id, callback)

    def _join_known_member(self, group: Group, req: JoinRequest,
                           callback: JoinCallback) -> None:
        member_id, instance_id = req.member_id, req.group_instance_id
        if member_id in group.pending_members:
            if group.is_static_member_fenced(instance_id, member_id):
                callback(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
                return
            del group.pending_members[member_id]
            self._add_member_and_rebalance(group, req, member_id, callback)
            return
        if group.is_static_member_fenced(instance_id, member_id):
            callback(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
            return
        member = group.members.get(member_id)
        if member is None or (instance_id is not None
                              and instance_id not in group.static_members):
            callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, req, callback)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.protocols == req.protocols:  # a resend: answer the same again
                self._heartbeat(member)
                callback(group.join_result(member, group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, req, callback)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or member.protocols != req.protocols:
                self._update_member_and_rebalance(group, member, req, callback)
            else:
                self._heartbeat(member)
                callback(group.join_result(member, False))
        else:
            callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _add_member_and_rebalance(self, group: Group, req: JoinRequest, member_id: str,
                                  callback: JoinCallback) -> None:
        member = Member(member_id, req.group_instance_id, req.client_id, req.client_host,
                        req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type,
                        req.protocols, self._now() + NEW_MEMBER_JOIN_TIMEOUT_MS, is_new=True,
                        join_callback=callback)
        if group.state is GroupState.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._maybe_prepare_rebalance(group)
        self._try_complete_join(group)

    def _update_member_and_rebalance(self, group: Group, member: Member, req: JoinRequest,
                                     callback: JoinCallback) -> None:
        if member.join_callback is not None:  # superseded by this request
            old, member.join_callback = member.join_callback, None
            old(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_callback = callback
        self._maybe_prepare_rebalance(group)
        self._try_complete_join(group)

    def _rejoin_static_member(self, group: Group, req: JoinRequest, old_id: str, new_id: str,
                              callback: JoinCallback) -> None:
        previous_leader = group.leader_id
        member = group.replace_static_member(req.group_instance_id or "", old_id, new_id)
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.client_id, member.client_host = req.client_id, req.client_host
        self._heartbeat(member)
        if group.state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                # No rebalance: the member keeps its assignment under its new id. From v9 the
                # leader is told so (skip_assignment); before, it hears the old leader id and
                # acts as a follower, as Kafka answers.
                is_leader = group.is_leader(new_id)
                if req.supports_skip_assignment:
                    callback(group.join_result(member, is_leader, skip_assignment=True))
                else:
                    callback(group.join_result(member, False, leader_id=previous_leader or ""))
                return
            member.join_callback = callback
            self._maybe_prepare_rebalance(group)
        else:
            member.join_callback = callback
            if group.state is GroupState.COMPLETING_REBALANCE:
                self._prepare_rebalance(group)
        self._try_complete_join(group)

    # -- rebalance --------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                           GroupState.EMPTY):
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: Group) -> None:
        now = self._now()
        if group.state is GroupState.COMPLETING_REBALANCE:
            self._propagate_sync_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        group.sync_deadline_ms = None
        group.pending_sync.clear()
        timeout = group.rebalance_timeout_ms()
        if group.state is GroupState.EMPTY:
            delay = min(self.initial_rebalance_delay_ms, timeout)
            group.initial_join = True
            group.initial_remaining_ms = max(timeout - self.initial_rebalance_delay_ms, 0)
            group.new_member_added = False
            group.join_deadline_ms = now + delay
        else:
            group.initial_join = False
            group.join_deadline_ms = now + timeout
        group.state = GroupState.PREPARING_REBALANCE

    def _propagate_sync_error(self, group: Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
            if member.sync_callback is not None:
                callback, member.sync_callback = member.sync_callback, None
                self._heartbeat(member)  # Kafka reschedules the session after answering
                callback(SyncResult(error))

    def _try_complete_join(self, group: Group) -> None:
        """Complete the running join if it can complete now (Kafka's DelayedJoin check)."""
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        if group.initial_join:
            deadline = group.join_deadline_ms
            if deadline is not None and deadline <= self._now():
                self._initial_delay_expired(group)
        elif group.all_members_joined():
            self._complete_join(group)

    def _initial_delay_expired(self, group: Group) -> None:
        if group.new_member_added and group.initial_remaining_ms > 0:
            delay = min(self.initial_rebalance_delay_ms, group.initial_remaining_ms)
            group.new_member_added = False
            group.initial_remaining_ms = max(group.initial_remaining_ms - delay, 0)
            group.join_deadline_ms = self._now() + delay
            if delay > 0:
                return
        self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        now = self._now()
        for member in list(group.members.values()):
            if not member.awaiting_join and member.group_instance_id is None:
                self._remove_member(group, member)
        if group.members and not group.elect_joined_leader():
            # Only static members that have not rejoined remain: wait another round for
            # them to rejoin or to expire.
            group.initial_join = False
            group.join_deadline_ms = now + group.rebalance_timeout_ms()
            return
        group.generation_id += 1
        group.join_deadline_ms = None
        group.initial_join = False
        if not group.members:
            group.protocol_name = None
            group.subscribed_topics = None
            group.state = GroupState.EMPTY
            return
        group.protocol_name = group.select_protocol()
        group.subscribed_topics = group.compute_subscribed_topics()
        group.state = GroupState.COMPLETING_REBALANCE
        group.pending_sync = set(group.members)
        group.sync_deadline_ms = now + group.rebalance_timeout_ms()
        for member in list(group.members.values()):
            callback = member.join_callback
            if callback is None:
                continue
            member.join_callback = None
            member.is_new = False
            member.deadline_ms = now + member.session_timeout_ms
            callback(group.join_result(member, group.is_leader(member.member_id)))

    def _remove_member(self, group: Group, member: Member) -> None:
        group.remove(member.member_id)
        if member.join_callback is not None:
            callback, member.join_callback = member.join_callback, None
            callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        if member.sync_callback is not None:
            sync, member.sync_callback = member.sync_callback, None
            sync(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))

    def _remove_member_and_update(self, group: Group, member: Member) -> None:
        self._remove_member(group, member)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group)
        self._try_complete_join(group)

    def _heartbeat(self, member: Member) -> None:
        member.deadline_ms = self._now() + member.session_timeout_ms

    # -- SyncGroup, Heartbeat, LeaveGroup ---------------------------------------------------

    def sync(self, group_id: str, generation_id: int, member_id: str,
             instance_id: str | None, protocol_type: str | None, protocol_name: str | None,
             assignments: Sequence[tuple[str, bytes]], callback: SyncCallback) -> None:
        """Handle a SyncGroup; `callback` is called once, now or when the leader syncs."""
        group = self.groups.get(group_id)
        error = self._member_error(group, generation_id, member_id, instance_id,
                                   empty_group_id=not group_id)
        if error is None and group is not None:
            if (protocol_type is not None and protocol_type != group.protocol_type) or (
                    protocol_name is not None and protocol_name != group.protocol_name):
                error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
            elif group.state is GroupState.EMPTY:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            elif group.state is GroupState.PREPARING_REBALANCE:
                error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None or group is None:
            callback(SyncResult(error or ErrorCode.UNKNOWN_MEMBER_ID))
            return
        member = group.members[member_id]
        self._heartbeat(member)
        group.pending_sync.discard(member_id)
        if group.state is GroupState.STABLE:
            callback(SyncResult(ErrorCode.NONE, member.assignment, group.protocol_type,
                                group.protocol_name))
            return
        if member.sync_callback is not None:  # superseded by this request
            old, member.sync_callback = member.sync_callback, None
            old(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_callback = callback
        if not group.is_leader(member_id):
            return
        given = dict(assignments)  # unknown member ids are ignored; missing ones get b""
        for each in group.members.values():
            each.assignment = given.get(each.member_id, b"")
        group.state = GroupState.STABLE
        for each in group.members.values():
            if each.sync_callback is not None:
                done, each.sync_callback = each.sync_callback, None
                self._heartbeat(each)  # Kafka reschedules the session after answering
                done(SyncResult(ErrorCode.NONE, each.assignment, group.protocol_type,
                                group.protocol_name))

    def _member_error(self, group: Group | None, generation_id: int, member_id: str,
                      instance_id: str | None, empty_group_id: bool) -> ErrorCode | None:
        """Kafka's common checks of SyncGroup and Heartbeat, in its order."""
        if empty_group_id:
            return ErrorCode.INVALID_GROUP_ID
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        static = group.static_member_error(instance_id, member_id)
        if static is not None:
            return static
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  instance_id: str | None = None) -> ErrorCode:
        group = self.groups.get(group_id)
        error = self._member_error(group, generation_id, member_id, instance_id,
                                   empty_group_id=not group_id)
        if error is not None or group is None:
            return error or ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._heartbeat(group.members[member_id])
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, group_id: str, leaving: Iterable[tuple[str, str | None]]
              ) -> tuple[ErrorCode, list[ErrorCode]]:
        """Remove members given as (member id, group instance id); an empty member id with an
        instance id removes that static member (admin removal). Returns the group error and
        one error per leaving member."""
        leaving = list(leaving)
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(leaving)
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        errors = []
        for member_id, instance_id in leaving:
            errors.append(self._leave_one(group, member_id, instance_id))
        return ErrorCode.NONE, errors

    def _leave_one(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
        if not member_id:
            current = group.static_members.get(instance_id) if instance_id is not None \
                else None
            if current is None or current not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_member_and_update(group, group.members[current])
            return ErrorCode.NONE
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            self._try_complete_join(group)
            return ErrorCode.NONE
        static = group.static_member_error(instance_id, member_id)
        if static is not None:
            return static
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._remove_member_and_update(group, member)
        return ErrorCode.NONE

    # -- deadlines --------------------------------------------------------------------------

    def tick(self, now: int) -> None:
        """Expire members and rebalance deadlines that have passed (run by Cluster.tick)."""
        for group in list(self.groups.values()):
            self._tick_group(group, now)
        self._expire_offsets(now)
        if now >= self.next_cleanup_ms:
            self.next_cleanup_ms = now + self.cleanup_interval_ms
            self.remove_unused_groups()

    def unused(self, group_id: str) -> bool:
        """No offsets committed for the group, none pending in a transaction."""
        return not self.offsets.has_offsets(group_id) \
            and not self.offsets.has_pending_for_group(group_id)

    def remove_unused_groups(self) -> list[str]:
        """Remove the Empty groups without offsets, as Kafka's group metadata cleanup does
        every offsets.retention.check.interval.ms: a group whose members left or expired
        is kept for its offsets only, so one joined under a made-up id goes."""
        gone = [group_id for group_id, group in self.groups.items()
                if group.state is GroupState.EMPTY and not group.members
                and not group.pending_members and self.unused(group_id)]
        for group_id in gone:
            self.groups.pop(group_id).state = GroupState.DEAD
        return gone

    def _tick_group(self, group: Group, now: int) -> None:
        for member_id, deadline in list(group.pending_members.items()):
            if deadline <= now:
                del group.pending_members[member_id]
                self._try_complete_join(group)
        for member in list(group.members.values()):
            if member.deadline_ms <= now and not member.keep_alive() \
                    and group.members.get(member.member_id) is member:
                self._remove_member_and_update(group, member)
        if group.state is GroupState.PREPARING_REBALANCE and group.join_deadline_ms is not None \
                and group.join_deadline_ms <= now:
            if group.initial_join:
                self._initial_delay_expired(group)
            else:
                self._complete_join(group)
        if group.sync_deadline_ms is not None and group.sync_deadline_ms <= now:
            group.sync_deadline_ms = None
            if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) \
                    and group.pending_sync:
                for member_id in list(group.pending_sync):
                    lagging = group.members.get(member_id)
                    if lagging is not None:
                        self._remove_member(group, lagging)
                self._prepare_rebalance(group)
                self._try_complete_join(group)

    # -- admin ------------------------------------------------------------------------------

    def describe(self, group_id: str) -> GroupSummary:
        group = self.groups.get(group_id)
        if group is None:
            return GroupSummary(group_id, GroupState.DEAD.value, "", "", ())
        return group.summary()

    def delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state is not GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        for member_id in list(group.pending_members):
            del group.pending_members[member_id]
        group.state = GroupState.DEAD
        del self.groups[group_id]
        self.offsets.delete_group(group_id)
        return ErrorCode.NONE
