"""A partition log's segments: rolling, bounds, retention and the cleaner's rewrites.

Theory of operation: a log's batches are grouped into `segments` (base offset, size,
largest timestamp, the append time of the first batch), Kafka's unit of retention and
compaction. The last one is the active segment; an append rolls a new one when the active
one would grow past segment.bytes or is segment.ms old (from its first batch's append time
on the injected clock), as `segment_policy` (set by the owner, log_manager.py) says; a log
without a policy never rolls. Each replica segments its own log as its appends arrive.
Retention and the cleaner (log_cleaner.py) act through `delete_segments_before` and
`replace_batches`, which keep the flat `batches` list (what reads and replication use) and
the segments in step.

`LogSegments` is the base class of PartitionLog (partition.py), which sets every attribute
declared here in its __init__; `_segment_append` runs on every append as an inherited
method, so it costs no extra call or lookup for living in this module.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from mockbroker.cluster.log.stored_batches import Segment, SegmentPolicy, StoredBatch


class LogSegments:
    """The segments of one replica's log (PartitionLog's base)."""

    batches: list[StoredBatch]
    _last_offsets: list[int]
    log_start_offset: int
    log_end_offset: int
    size_bytes: int
    segments: list[Segment]
    segment_policy: SegmentPolicy | None
    cleaner_checkpoint: int

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset to `offset` (PartitionLog's)."""
        raise NotImplementedError

    def _segment_append(self, stored: StoredBatch) -> None:
        """Count the batch into the active segment, rolling a new one first when the
        policy says so (Kafka's maybeRoll: size, then age). On every append: kept lean."""
        active = self.segments[-1]
        policy = self.segment_policy
        size = len(stored.data)
        now = 0
        if policy is not None:
            now = policy.now_ms()
            if active.batch_count:
                segment_bytes, segment_ms = policy.limits()
                if active.size_bytes + size > segment_bytes \
                        or now - active.created_ms >= segment_ms:
                    active = Segment(stored.base_offset)
                    self.segments.append(active)
        if not active.batch_count:  # its first batch: the segment starts here and now
            active.created_ms = now
            active.base_offset = stored.base_offset
        active.size_bytes += size
        active.batch_count += 1
        if stored.max_timestamp > active.max_timestamp:
            active.max_timestamp = stored.max_timestamp

    def roll(self) -> None:
        """Start a new, empty active segment at the log end (unless the active one is)."""
        if self.segments[-1].batch_count:
            self.segments.append(Segment(self.log_end_offset,
                                         self.segment_policy.now_ms()
                                         if self.segment_policy is not None else 0))

    def segment_bounds(self, index: int) -> tuple[int, int]:
        """(first, end) indexes into `batches` of segment `index`'s batches."""
        first = bisect.bisect_left(self._last_offsets, self.segments[index].base_offset)
        if index + 1 >= len(self.segments):
            return first, len(self.batches)
        return first, bisect.bisect_left(self._last_offsets,
                                         self.segments[index + 1].base_offset)

    def segment_end_offset(self, index: int) -> int:
        """The offset after segment `index` (the next one's base, or the log end)."""
        if index + 1 < len(self.segments):
            return self.segments[index + 1].base_offset
        return self.log_end_offset

    def delete_segments_before(self, index: int) -> int:
        """Retention: delete segments [0, index); the log start moves to the base offset
        of the first one kept (the log end when the active one went too, which leaves a
        new empty active segment). Returns the new log start offset."""
        if index <= 0:
            return self.log_start_offset
        new_start = self.segment_end_offset(index - 1)
        if index >= len(self.segments):
            self.roll()  # the active segment goes too: a new one starts at the log end
        return self.delete_records_before(new_start)

    def replace_batches(self, first_offset: int, end_offset: int,
                        batches: Sequence[StoredBatch]) -> None:
        """The cleaner: the batches from `first_offset` to `end_offset` (segment bounds, not
        the active segment) become `batches` (the same offsets, fewer records or batches).
        Segments left empty stay, as Kafka keeps a cleaned segment's base offset."""
        first = bisect.bisect_left(self._last_offsets, first_offset)
        end = bisect.bisect_left(self._last_offsets, end_offset)
        removed = sum(b.size for b in self.batches[first:end])
        self.batches[first:end] = batches
        self._last_offsets[first:end] = [b.last_offset for b in batches]
        self.size_bytes += sum(b.size for b in batches) - removed
        self._recount_segments()

    def merge_segments(self, end_index: int, max_bytes: int) -> None:
        """The cleaner: consecutive segments before `end_index` become one while together
        they stay within `max_bytes` (segment.bytes), as Kafka writes a cleaned group of
        small segments into one."""
        merged: list[Segment] = []
        for segment in self.segments[:end_index]:
            last = merged[-1] if merged else None
            if last is not None and last.size_bytes + segment.size_bytes <= max_bytes:
                last.size_bytes += segment.size_bytes
                last.batch_count += segment.batch_count
                last.max_timestamp = max(last.max_timestamp, segment.max_timestamp)
            else:
                merged.append(segment)
        self.segments[:end_index] = merged

    def _drop_segments_below(self, offset: int) -> None:
        """Forget segments wholly below the log start offset. Only the first one kept can
        have lost batches, when the log start cuts into it (DeleteRecords; retention cuts
        at its base): it alone is recounted then, so a deletion costs the batches it
        deletes, not every batch the log holds."""
        segments = self.segments
        gone = 0
        while gone + 1 < len(segments) and segments[gone + 1].base_offset <= offset:
            gone += 1
        del segments[:gone]
        self.cleaner_checkpoint = max(self.cleaner_checkpoint, self.log_start_offset)
        if segments[0].base_offset < offset:
            self._recount_segment(0)

    def _recount_segments(self) -> None:
        """Sizes, counts and timestamps of every segment, from the batches."""
        for index in range(len(self.segments)):
            self._recount_segment(index)

    def _recount_segment(self, index: int) -> None:
        first, end = self.segment_bounds(index)
        held = self.batches[first:end]
        segment = self.segments[index]
        segment.size_bytes = sum(b.size for b in held)
        segment.batch_count = len(held)
        segment.max_timestamp = max((b.max_timestamp for b in held), default=-1)
