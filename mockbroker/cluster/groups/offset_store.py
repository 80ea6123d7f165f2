"""Committed offsets per consumer group, and transactional offsets waiting for their outcome.

Theory of operation: Kafka keeps a group's committed offsets in the group's state (backed by
__consumer_offsets); here they live in one store keyed by group id, then (topic, partition).
An entry holds what OffsetFetch gives back: the offset, the committed leader epoch (KIP-232,
OffsetCommit v6+ / OffsetFetch v5+; -1 when the client sent none), the metadata string and
the commit timestamp.

Transactional commits (TxnOffsetCommit) are held apart, per producer id, until the
transaction ends: `complete_pending(producer_id, commit=True)` moves them into the committed
map, `commit=False` drops them. While one is pending for a partition, `has_pending` is true
and an OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for it, as Kafka does.

With a data directory every change of a committed offset is also handed to the `journal`
(data_dir.FileStorage appends it, like a record of __consumer_offsets, a deletion as a
tombstone), and so are pending transactional offsets and the end of their transaction (as
Kafka writes a TxnOffsetCommit to __consumer_offsets with its producer id, and the
transaction's marker there later makes it visible or drops it), so that a transaction
kept open or completed across a restart still commits its offsets (restore.py).

The store never validates group membership or generations: the GroupCoordinator does that
before it writes here. It only enforces the metadata length bound (offset.metadata.max.bytes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.clock import Clock

OFFSET_METADATA_MAX_BYTES = 4096  # Kafka's offset.metadata.max.bytes default
NO_LEADER_EPOCH = -1
NO_OFFSET = -1

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class CommittedOffset:
    """A group's committed offset for one partition, with the leader epoch and metadata
    OffsetFetch returns."""

    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp_ms: int = -1


@dataclass(frozen=True)
class OffsetCommitEntry:
    """One partition of an OffsetCommit, as the coordinator checks and stores it."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None
    timestamp_ms: int = -1


@dataclass(frozen=True)
class FetchedOffset:
    """One partition of an OffsetFetch answer."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error: ErrorCode


def metadata_too_large(metadata: str | None) -> bool:
    """Kafka compares the metadata string's length with offset.metadata.max.bytes."""
    return metadata is not None and len(metadata) > OFFSET_METADATA_MAX_BYTES


class OffsetJournal(Protocol):
    """Where committed offsets are persisted (data_dir.py); None entry: deleted."""

    def committed(self, group: str, topic: str, partition: int,
                  entry: CommittedOffset | None) -> None: ...

    def offsets_cleared(self) -> None: ...

    def pending(self, group: str, topic: str, partition: int, producer_id: int,
                entry: CommittedOffset | None) -> None: ...

    def pending_completed(self, producer_id: int, commit: bool, timestamp_ms: int) -> None: ...


class OffsetStore:
    """Committed and pending (transactional) offsets for every group."""

    def __init__(self, clock: Clock,
                 on_group_used: Callable[[str], Any] | None = None) -> None:
        self._clock = clock
        self._on_group_used = on_group_used
        self._committed: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        # producer id -> (group, topic, partition) -> offset waiting for the txn outcome
        self._pending: dict[int, dict[tuple[str, str, int], CommittedOffset]] = {}
        # a lower bound of every committed offset's timestamp (None: no offsets), so that
        # `expire` scans only when something may have expired
        self._earliest_commit_ms: int | None = None
        self.journal: OffsetJournal | None = None

    def _journal(self, group: str, topic: str, partition: int,
                 entry: CommittedOffset | None) -> None:
        if self.journal is not None:
            self.journal.committed(group, topic, partition, entry)

    def reset(self) -> None:
        """Forget every committed and pending offset (the control API's reset)."""
        self._committed.clear()
        self._pending.clear()
        self._earliest_commit_ms = None
        if self.journal is not None:
            self.journal.offsets_cleared()

    # -- committed offsets -------------------------------------------------------------------

    def commit(self, group: str, topic: str, partition: int, offset: int,
               leader_epoch: int = NO_LEADER_EPOCH, metadata: str | None = None,
               timestamp_ms: int | None = None) -> CommittedOffset:
        entry = CommittedOffset(
            offset, leader_epoch, metadata or "",
            self._clock.now_ms() if timestamp_ms is None or timestamp_ms < 0 else timestamp_ms)
        self._committed.setdefault(group, {})[(topic, partition)] = entry
        self._note_commit_time(entry.commit_timestamp_ms)
        self._journal(group, topic, partition, entry)
        return entry

    def commit_entries(self, group: str, entries: Sequence[OffsetCommitEntry]
                       ) -> list[ErrorCode]:
        """Store the entries of an OffsetCommit the group's coordinator has accepted; one
        error per entry (OFFSET_METADATA_TOO_LARGE refuses that entry alone)."""
        out = []
        for entry in entries:
            if metadata_too_large(entry.metadata):
                out.append(ErrorCode.OFFSET_METADATA_TOO_LARGE)
                continue
            self.commit(group, entry.topic, entry.partition, entry.offset, entry.leader_epoch,
                        entry.metadata, entry.timestamp_ms)
            out.append(ErrorCode.NONE)
        return out

    def get(self, group: str, topic: str, partition: int) -> CommittedOffset | None:
        return self._committed.get(group, {}).get((topic, partition))

    def all(self, group: str) -> dict[TopicPartition, CommittedOffset]:
        """Every committed offset of the group (a copy), in commit order."""
        return dict(self._committed.get(group, {}))

    def delete(self, group: str, topic: str, partition: int) -> None:
        offsets = self._committed.get(group)
        if offsets is not None:
            if offsets.pop((topic, partition), None) is not None:
                self._journal(group, topic, partition, None)
            if not offsets:
                del self._committed[group]

    def delete_group(self, group: str) -> None:
        for topic, partition in self._committed.pop(group, {}):
            self._journal(group, topic, partition, None)
        for producer_id, pending in self._pending.items():
            for key in [k for k in pending if k[0] == group]:
                del pending[key]
                if self.journal is not None:
                    self.journal.pending(*key, producer_id, None)

    def has_offsets(self, group: str) -> bool:
        return bool(self._committed.get(group))

    def expire(self, now: int, retention_ms: int,
               has_members: Callable[[str], bool]) -> list[str]:
        """offsets.retention.minutes: a group without members (and no pending transactional
        offsets) loses each committed offset once `retention_ms` has passed since its
        commit, as KIP-211 expires only offsets of empty groups. Checked on every tick
        (Kafka: every offsets.retention.check.interval.ms). Returns the groups left without
        offsets."""
        earliest = self._earliest_commit_ms
        if earliest is None or now < earliest + retention_ms:
            return []  # nothing can have expired yet
        emptied = []
        for group in sorted(self._committed):
            if has_members(group) or self.has_pending_for_group(group):
                continue
            offsets = self._committed[group]
            for key in [k for k, e in offsets.items()
                        if e.commit_timestamp_ms + retention_ms <= now]:
                del offsets[key]
                self._journal(group, *key, None)
            if not offsets:
                del self._committed[group]
                emptied.append(group)
        remaining = [e.commit_timestamp_ms for o in self._committed.values() for e in o.values()]
        self._earliest_commit_ms = min(remaining) if remaining else None
        return emptied

    def groups(self) -> set[str]:
        return set(self._committed)

    # -- transactional offsets ---------------------------------------------------------------

    def add_pending(self, group: str, producer_id: int, topic: str, partition: int,
                    offset: int, leader_epoch: int = NO_LEADER_EPOCH,
                    metadata: str | None = None) -> None:
        """Hold an offset committed inside a transaction until the transaction ends. As in
        Kafka, a group that does not exist yet is created (Empty)."""
        if self._on_group_used is not None:
            self._on_group_used(group)
        entry = CommittedOffset(offset, leader_epoch, metadata or "", self._clock.now_ms())
        self._pending.setdefault(producer_id, {})[(group, topic, partition)] = entry
        if self.journal is not None:
            self.journal.pending(group, topic, partition, producer_id, entry)

    def complete_pending(self, producer_id: int, commit: bool) -> None:
        """The transaction of `producer_id` ended: make its offsets visible, or drop them."""
        pending = self._pending.pop(producer_id, {})
        now = self._clock.now_ms()
        if pending and self.journal is not None:  # one frame: the outcome, as a marker
            self.journal.pending_completed(producer_id, commit, now)
        if not commit:
            return
        for (group, topic, partition), entry in pending.items():
            done = CommittedOffset(entry.offset, entry.leader_epoch, entry.metadata, now)
            self._committed.setdefault(group, {})[(topic, partition)] = done
        if pending:
            self._note_commit_time(now)

    def _note_commit_time(self, timestamp_ms: int) -> None:
        if self._earliest_commit_ms is None or timestamp_ms < self._earliest_commit_ms:
            self._earliest_commit_ms = timestamp_ms

    def has_pending(self, group: str, topic: str, partition: int) -> bool:
        key = (group, topic, partition)
        return any(key in pending for pending in self._pending.values())

    def has_pending_for_group(self, group: str) -> bool:
        return any(k[0] == group for pending in self._pending.values() for k in pending)
