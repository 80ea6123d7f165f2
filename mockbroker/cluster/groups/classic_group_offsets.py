"""The offset side of the classic group coordinator: who may commit, fetch and delete offsets.

Theory of operation: committed offsets live in the OffsetStore (offset_store.py); a classic group
decides who may write them. An OffsetCommit is checked against the group as Kafka's
GroupCoordinator checks it (a dead group, a fenced static member, an unknown member, a stale
generation, a rebalance in progress), except that a commit with generation < 0 to an Empty
or unknown group is a "simple" commit and is accepted; a committing member's session is
refreshed as a heartbeat would. TxnOffsetCommit gets the lighter checks of its v3 fields
(the pending commit creates an unknown group). OffsetFetch answers -1 for partitions without
a commit and UNSTABLE_OFFSET_COMMIT for a pending transactional one when the caller requires
stable offsets. OffsetDelete empties an Empty group's offsets, and keeps an active consumer
group's offsets of the topics its members subscribe to. Retention (offsets.retention.minutes)
runs from the coordinator's tick; a group left with neither members nor offsets is removed.

GroupCoordinator (classic_groups.py) inherits these methods: they read its group table and its
store.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.groups.classic_group_model import (
    CONSUMER_PROTOCOL_TYPE,
    Group,
    GroupState,
    Member,
)
from mockbroker.cluster.groups.offset_store import (
    CommittedOffset,
    FetchedOffset,
    OffsetCommitEntry,
    OffsetStore,
)

TopicPartition = tuple[str, int]


class ClassicGroupOffsets:
    """OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete and offset retention for
    classic groups (mixed into GroupCoordinator)."""

    groups: dict[str, Group]
    offsets: OffsetStore
    offsets_retention_ms: int

    def get_or_create(self, group_id: str) -> Group:
        """The group, created Empty if unknown (GroupCoordinator's)."""
        raise NotImplementedError

    def _heartbeat(self, member: Member) -> None:
        """Refresh a member's session deadline (GroupCoordinator's)."""
        raise NotImplementedError

    def _expire_offsets(self, now: int) -> None:
        """offsets.retention.minutes (OffsetStore.expire); a group left with neither members
        nor offsets is removed, as Kafka removes it."""
        def has_members(group_id: str) -> bool:
            group = self.groups.get(group_id)
            return group is not None and bool(group.members)

        for group_id in self.offsets.expire(now, self.offsets_retention_ms, has_members):
            group = self.groups.get(group_id)
            if group is not None and group.state is GroupState.EMPTY:
                del self.groups[group_id]

    def commit_offsets(self, group_id: str, member_id: str, instance_id: str | None,
                       generation_id: int, entries: Sequence[OffsetCommitEntry]
                       ) -> list[ErrorCode]:
        """Kafka's OffsetCommit checks, then store; one error per entry."""
        error = self._commit_error(group_id, member_id, instance_id, generation_id)
        if error is not ErrorCode.NONE:
            return [error] * len(entries)
        return self.offsets.commit_entries(group_id, entries)

    def _commit_error(self, group_id: str, member_id: str, instance_id: str | None,
                      generation_id: int) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return ErrorCode.ILLEGAL_GENERATION
            self.get_or_create(group_id)  # a simple (non-group-managed) commit
            return ErrorCode.NONE
        error = self._validate_offset_commit(group, member_id, instance_id, generation_id,
                                             transactional=False)
        if error != ErrorCode.NONE:
            return error
        member = group.members.get(member_id)
        if member is not None:
            self._heartbeat(member)
        return ErrorCode.NONE

    @staticmethod
    def _validate_offset_commit(group: Group, member_id: str, instance_id: str | None,
                                generation_id: int, *, transactional: bool) -> ErrorCode:
        """Kafka's ClassicGroup.validateOffsetCommit, in its order: a generation < 0 on an
        Empty group is a simple commit; anything naming a member, an instance or a
        generation must name a current member (validateMember) and the generation."""
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.state is GroupState.EMPTY:
            return ErrorCode.NONE
        if generation_id >= 0 or member_id or instance_id is not None:
            static = group.static_member_error(instance_id, member_id)
            if static is not None:
                return static
            if not group.has(member_id):
                return ErrorCode.UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional and group.state is not GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and group.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def validate_txn_offset_commit(self, group_id: str, member_id: str,
                                   instance_id: str | None, generation_id: int) -> ErrorCode:
        """Kafka's TxnOffsetCommit checks (v3 carries the member and generation); an unknown
        group is fine (the pending commit creates it)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE
        return self._validate_offset_commit(group, member_id, instance_id, generation_id,
                                            transactional=True)

    def fetch_offsets(self, group_id: str, partitions: Sequence[TopicPartition] | None,
                      require_stable: bool = False) -> list[FetchedOffset]:
        """Committed offsets for the given partitions (None: every committed one). Unknown
        partitions give offset -1; a pending transactional offset gives
        UNSTABLE_OFFSET_COMMIT when the caller requires stable offsets."""
        committed = self.offsets.all(group_id)
        wanted = list(committed) if partitions is None else list(partitions)
        out = []
        for topic, partition in wanted:
            if require_stable and self.offsets.has_pending(group_id, topic, partition):
                out.append(FetchedOffset(topic, partition, -1, -1, "",
                                         ErrorCode.UNSTABLE_OFFSET_COMMIT))
                continue
            entry: CommittedOffset | None = committed.get((topic, partition))
            if entry is None:
                out.append(FetchedOffset(topic, partition, -1, -1, "", ErrorCode.NONE))
            else:
                out.append(FetchedOffset(topic, partition, entry.offset, entry.leader_epoch,
                                         entry.metadata, ErrorCode.NONE))
        return out

    def delete_offsets(self, group_id: str, partitions: Sequence[TopicPartition]
                       ) -> tuple[ErrorCode, list[ErrorCode]]:
        """OffsetDelete: an Empty group loses the offsets; an active consumer group keeps the
        offsets of topics its members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC)."""
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        if group.state is not GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.NON_EMPTY_GROUP, []
        errors = []
        for topic, partition in partitions:
            if group.state is not GroupState.EMPTY and group.is_subscribed_to(topic):
                errors.append(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
            else:
                self.offsets.delete(group_id, topic, partition)
                errors.append(ErrorCode.NONE)
        return ErrorCode.NONE, errors
