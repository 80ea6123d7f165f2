"""One partition's data: stored batches, offsets, producer state and the leader-epoch cache.

Theory of operation: each replica of a partition has one PartitionLog (replicas.py keeps
them and moves batches from the leader's to the followers'); which broker may serve it is
decided by metadata (leader, epoch), not here. A follower's log holds the very StoredBatch
objects of the leader's (`append_replicated`), so a batch's bytes exist once however many
replicas hold it. Batches are kept as the exact bytes the producer sent, after the broker has
patched the base offset and partition leader epoch (both outside the CRC), and for a
LogAppendTime topic the timestamp type and max timestamp (CRC redone), which is what Kafka
itself does. Fetch hands out the stored bytes unchanged.

Where the bytes live (`stored_form`): a batch that arrives in a writable buffer (a view of a
request frame the connection received into a bytearray of its own, see the codec's
FrameReader) is patched where it lies and kept as a read-only view of that frame: no copy. A
batch in read-only bytes (in-process callers, tests) or smaller than IN_PLACE_MIN_BYTES is
copied once, with the patched fields spliced in. So StoredBatch.data is bytes or a read-only
memoryview: both compare, hash, slice, parse and write out alike (never concatenate or
pickle it). A view keeps its whole request frame alive (the other partitions' batches of the
same request, ~100 bytes of request header) until its last batch is gone.

Memory: a stored batch costs its bytes plus one slotted StoredBatch and its offsets, about 200
bytes (the `_last_offsets` list shares the StoredBatch's int objects), plus, kept as a view,
the view object (~200 bytes, where a bytes object's header is 33): hence the copy of batches
under IN_PLACE_MIN_BYTES, for which the view would cost more than the copy saves. With
batches of ~150 records of 100 B, as a client's 16 KiB batch.size makes them, the broker's
memory grows by ~1.15x the payload, most of it the record-batch encoding itself.

Two writers, as in Kafka's log: `append_producer_batch` (the leader's append of a client's
batch: the idempotence and transaction checks of producer_state.py, then the append and the
producer-state update, in one step, parsing the batch header once) and `append_marker` (the
transaction coordinator's COMMIT/ABORT control batch). Both keep the last stable offset
current; validating the batch itself (format, CRC, records) is the caller's job (the
cluster's produce path, mockbroker.cluster.log.produce_path), done before the log is touched.

The high watermark is set from outside (`set_high_watermark`: the leader's is the lowest log
end offset over the ISR, a follower's what its last fetch told it) when the log has a
`replication_hook` (run after every append so the owner can replicate); a log without one
(no owner) keeps it at the log end. The last stable offset is never above it and trails it while transactions are open (`refresh_last_stable_offset`
recomputes it from the producer states). The leader-epoch cache maps each epoch to the first offset written
in it, which answers OffsetForLeaderEpoch and lets an unclean election be detected by
clients. Listeners are plain callbacks fired after an append, so the server can wake parked
long-poll fetches without this module knowing about asyncio.

Segments: the batches are grouped into `segments`, Kafka's unit of retention and compaction;
the base class LogSegments (log_segments.py) rolls them as appends arrive and keeps them in
step with the flat `batches` list when retention and the cleaner (log_cleaner.py) act.
"""

from __future__ import annotations

import bisect
import struct
from collections import deque
from collections.abc import Callable, Sequence

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import (
    BatchHeader,
    ControlRecordType,
    build_control_batch,
    decode_batch,
    decode_control_record,
    patch_batch,
    patch_batch_in_place,
    patch_log_append_time_in_place,
)

from mockbroker.cluster.log.log_segments import LogSegments
from mockbroker.cluster.log.stored_batches import (
    AppendResult,
    LogStore,
    Segment,
    SegmentPolicy,
    StoredBatch,
    TransactionCheck,
    not_transactional,
)
from mockbroker.cluster.producers.producer_state import (
    BatchMeta,
    ProducerEntry,
    apply_marker,
    check_batch,
    first_unstable_offset,
    last_sequence,
    record_batch,
)

__all__ = ["UNDEFINED_EPOCH", "UNDEFINED_OFFSET", "AppendResult", "LogStore", "PartitionLog",
           "SegmentPolicy", "StoredBatch", "TransactionCheck", "not_transactional", "patched_copy",
           "stored_form"]

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


_BASE_OFFSET = struct.Struct(">q")  # batch bytes 0-7
_LEADER_EPOCH = struct.Struct(">i")  # batch bytes 12-15
_LENGTH_END, _EPOCH_END = 12, 16
# batches this large are kept where they arrived, smaller ones copied: see "Memory" above
IN_PLACE_MIN_BYTES = 4096


def patched_copy(batch: bytes | bytearray | memoryview, base_offset: int,
                 leader_epoch: int) -> bytes:
    """The batch as stored: one copy, with baseOffset and partitionLeaderEpoch replaced
    (both outside the CRC), without patch_batch's intermediate bytearray."""
    view = memoryview(batch)
    if len(view) < _EPOCH_END:
        return bytes(patch_batch(batch, base_offset, leader_epoch))  # its error, as before
    return b"".join((_BASE_OFFSET.pack(base_offset), view[_BASE_OFFSET.size:_LENGTH_END],
                     _LEADER_EPOCH.pack(leader_epoch), view[_EPOCH_END:]))


def stored_form(batch: bytes | bytearray | memoryview, base_offset: int, leader_epoch: int,
                log_append_time_ms: int | None = None) -> bytes | memoryview:
    """The batch as stored, patched: in place and kept as a read-only view when it is in a
    writable buffer of IN_PLACE_MIN_BYTES or more, else a copy (see the module docstring)."""
    view = memoryview(batch)
    if not view.readonly and view.nbytes >= IN_PLACE_MIN_BYTES:
        patch_batch_in_place(view, base_offset, leader_epoch)
        if log_append_time_ms is not None:
            patch_log_append_time_in_place(view, log_append_time_ms)
        return view.toreadonly()
    if log_append_time_ms is None:
        return patched_copy(view, base_offset, leader_epoch)
    copy = patch_batch(view, base_offset, leader_epoch)
    patch_log_append_time_in_place(copy, log_append_time_ms)
    return bytes(copy)

# the Produce error messages of a transactional batch the coordinator did not verify
# (ReplicaManager's translations; the other verdicts carry none)
VERIFICATION_MESSAGES = {
    ErrorCode.INVALID_TXN_STATE: "Partition was not added to the transaction",
    ErrorCode.NOT_ENOUGH_REPLICAS: "Unable to verify the partition has been added to the "
                                   "transaction",
}


class PartitionLog(LogSegments):
    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.batches: list[StoredBatch] = []
        self._last_offsets: list[int] = []  # parallel to batches, for bisect
        self.log_start_offset = 0
        self.log_end_offset = 0
        self._lso: int | None = None
        self.epoch_cache: list[tuple[int, int]] = []  # (leader epoch, start offset)
        self.size_bytes = 0
        self._listeners: list[Callable[[], None]] = []
        self.high_watermark = 0
        # run after each append, before listeners wake (replicas.py sets it)
        self.replication_hook: Callable[[PartitionLog], None] | None = None
        self.producer_states: dict[int, ProducerEntry] = {}
        # (producer id, first offset, last offset) of each aborted transaction, in order
        self.aborted_index: list[tuple[int, int, int]] = []
        # the replica's files under --data-dir (None: memory only, nothing to call)
        self.store: LogStore | None = None
        self.segments: list[Segment] = [Segment(0)]
        self.segment_policy: SegmentPolicy | None = None
        # the cleaner's checkpoint: where the uncleaned (dirty) part of the log starts
        self.cleaner_checkpoint = 0
        self.cleaner_last_run_ms: int | None = None
        # the earliest KIP-534 delete horizon of a batch still holding tombstones
        self.next_delete_horizon_ms: int | None = None

    # -- offsets ----------------------------------------------------------------------------

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark if self._lso is None else min(self._lso, self.high_watermark)

    def set_high_watermark(self, offset: int, *, wake: bool = True) -> None:
        """Move the high watermark (never past the log end); parked readers re-check."""
        offset = min(offset, self.log_end_offset)
        if offset != self.high_watermark:
            self.high_watermark = offset
            if wake:
                self.wake_listeners()

    def refresh_last_stable_offset(self) -> None:
        """The LSO is the first offset of the oldest open transaction; with none open (None)
        it follows the high watermark."""
        self._lso = first_unstable_offset(self.producer_states)

    # -- the leader's append of a client batch ----------------------------------------------

    def append_producer_batch(self, batch: bytes | bytearray | memoryview, header: BatchHeader,
                              leader_epoch: int, *, verify_transaction: TransactionCheck,
                              log_append_time_ms: int | None = None) -> AppendResult:
        """Producer checks (`producer_check`), then the append, for one already validated
        batch: the batch is stored and the producer state and last stable offset follow it.
        """
        refused = self.producer_check(header, verify_transaction)
        if refused is not None:
            return refused
        stored = self._append_patched(batch, header, leader_epoch, log_append_time_ms)
        pid = header.producer_id
        if pid >= 0:
            transactional = header.is_transactional
            first = header.base_sequence
            record_batch(self.producer_states, pid, header.producer_epoch,
                         BatchMeta(first, last_sequence(first, header.last_offset_delta),
                                   stored.base_offset, stored.last_offset,
                                   stored.max_timestamp),
                         transactional=transactional)
            if transactional:
                self.refresh_last_stable_offset()
        return AppendResult(ErrorCode.NONE, stored.base_offset,
                            -1 if log_append_time_ms is None else log_append_time_ms,
                            self.log_start_offset)

    def producer_check(self, header: BatchHeader,
                       verify_transaction: TransactionCheck) -> AppendResult | None:
        """What the producer checks answer a batch instead of appending it, or None when it
        is to be appended as new.

        In Kafka's order: a transactional batch must belong to the producer's ongoing
        transaction (`verify_transaction`, the coordinator's answer); an idempotent one must
        pass the sequence checks, and a duplicate of one of the last five batches is
        acknowledged with its original offsets and its batch's timestamp as the log append
        time (UnifiedLog.append does so) without being written again; a plain batch
        from a producer whose transaction is open here is INVALID_TXN_STATE. A batch without
        a producer id passes, transactional or not (Kafka's ReplicaManager verifies only
        transactional batches that have a producer id).
        """
        pid = header.producer_id
        transactional = header.is_transactional
        if transactional and pid >= 0:  # Kafka verifies only batches with a producer id
            error = verify_transaction(pid, header.producer_epoch)
            if error != ErrorCode.NONE:
                # ReplicaManager answers the coordinator's verdict before the log: no log
                # start offset, and its own words for the errors it translates
                return AppendResult(error, message=VERIFICATION_MESSAGES.get(error))
        if pid < 0:
            return None
        first = header.base_sequence
        entry = self.producer_states.get(pid)
        verdict = check_batch(entry, header.producer_epoch, first,
                              last_sequence(first, header.last_offset_delta))
        if verdict.error != ErrorCode.NONE:
            return AppendResult(verdict.error, log_start_offset=self.log_start_offset)
        if verdict.duplicate_of is not None:  # Kafka answers the first append's timestamp
            return AppendResult(ErrorCode.NONE, verdict.duplicate_of.base_offset,
                                verdict.duplicate_of.timestamp,
                                log_start_offset=self.log_start_offset)
        if not transactional and entry is not None \
                and entry.current_txn_first_offset is not None:
            return AppendResult(ErrorCode.INVALID_TXN_STATE,
                                log_start_offset=self.log_start_offset)
        return None

    # -- transaction markers ----------------------------------------------------------------

    def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      commit: bool, leader_epoch: int, timestamp_ms: int) -> StoredBatch:
        """Write a COMMIT/ABORT control batch and close the producer's transaction here;
        an abort goes into the aborted-transaction index. Returns the stored marker (the
        coordinator follows it: replicas hold that very object)."""
        batch = build_control_batch(commit=commit, producer_id=producer_id,
                                    producer_epoch=producer_epoch,
                                    coordinator_epoch=coordinator_epoch, base_offset=0,
                                    timestamp_ms=timestamp_ms,
                                    partition_leader_epoch=leader_epoch)
        stored = self.append(batch, leader_epoch)
        first = apply_marker(self.producer_states, producer_id, producer_epoch,
                             coordinator_epoch, stored.base_offset, timestamp_ms)
        if not commit:
            self.aborted_index.append((producer_id, first, stored.base_offset))
        self.refresh_last_stable_offset()
        return stored

    # -- writes -----------------------------------------------------------------------------

    def append(self, batch: bytes | bytearray | memoryview, leader_epoch: int,
               log_append_time_ms: int | None = None) -> StoredBatch:
        """Store one validated batch at the log end, patching its offset and leader epoch.

        With `log_append_time_ms` the batch is stamped with LogAppendTime (topics with
        message.timestamp.type=LogAppendTime).
        """
        return self._append_patched(batch, BatchHeader.parse(batch), leader_epoch,
                                    log_append_time_ms)

    def _append_patched(self, batch: bytes | bytearray | memoryview, header: BatchHeader,
                        leader_epoch: int, log_append_time_ms: int | None) -> StoredBatch:
        base = self.log_end_offset
        data = stored_form(batch, base, leader_epoch, log_append_time_ms)
        max_ts = header.max_timestamp if log_append_time_ms is None else log_append_time_ms
        stored = StoredBatch(base, base + header.last_offset_delta, max_ts, data,
                             header.producer_id, header.is_transactional, header.is_control)
        self._store(stored, leader_epoch)
        return stored

    def _store(self, stored: StoredBatch, leader_epoch: int) -> None:
        self._place(stored, leader_epoch)
        if self.replication_hook is None:
            self.high_watermark = self.log_end_offset
        else:
            self.replication_hook(self)
        self.wake_listeners()

    def _place(self, stored: StoredBatch, leader_epoch: int) -> None:
        """Put a batch at the log end, as leader and follower appends both do: the epoch
        cache, the active segment, the replica's files under --data-dir, the offsets."""
        new_epoch = not self.epoch_cache or leader_epoch > self.epoch_cache[-1][0]
        if new_epoch:
            self.epoch_cache.append((leader_epoch, stored.base_offset))
        self._segment_append(stored)
        if self.store is not None:
            self.store.append(stored.data, stored.last_offset)
            if new_epoch:
                self.store.write_epochs(self.epoch_cache)
        self.batches.append(stored)
        self._last_offsets.append(stored.last_offset)
        self.log_end_offset = stored.last_offset + 1
        self.size_bytes += stored.size

    # -- a follower's append ----------------------------------------------------------------

    def append_replicated(self, batches: Sequence[StoredBatch]) -> None:
        """Append batches fetched from the leader, as they are (shared, not copied).

        The epoch cache follows each batch's partition leader epoch and the producer state
        follows its header, as Kafka's appendAsFollower rebuilds both from the batches."""
        for stored in batches:
            if stored.base_offset < self.log_end_offset:
                continue  # already held (a fetch racing a truncation would resend it)
            self._place(stored, _LEADER_EPOCH.unpack_from(stored.data, _LENGTH_END)[0])
            if stored.producer_id >= 0:
                self._follow_producer_state(stored)
        if self._listeners:
            self.wake_listeners()

    def _follow_producer_state(self, stored: StoredBatch) -> None:
        header = BatchHeader.parse(stored.data)
        if stored.is_control:
            marker = decode_control_record(decode_batch(stored.data).records[0])
            first = apply_marker(self.producer_states, header.producer_id,
                                 header.producer_epoch, marker.coordinator_epoch,
                                 stored.base_offset, header.max_timestamp)
            if marker.type == ControlRecordType.ABORT:
                self.aborted_index.append((header.producer_id, first, stored.base_offset))
            self.refresh_last_stable_offset()
            return
        first = header.base_sequence
        record_batch(self.producer_states, header.producer_id, header.producer_epoch,
                     BatchMeta(first, last_sequence(first, header.last_offset_delta),
                               stored.base_offset, stored.last_offset, stored.max_timestamp),
                     transactional=header.is_transactional)
        if header.is_transactional:
            self.refresh_last_stable_offset()

    def delete_records_before(self, offset: int) -> int:
        """Advance the log start offset (DeleteRecords); returns the new low watermark."""
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            gone = bisect.bisect_left(self._last_offsets, offset)
            self.size_bytes -= sum(b.size for b in self.batches[:gone])
            del self.batches[:gone]
            del self._last_offsets[:gone]
            if offset > self.log_end_offset:
                # a follower behind its leader's new log start starts over there (Kafka's
                # truncateFullyAndStartAt): it could never fetch what lies below
                self.log_end_offset = offset
                self.segments = [Segment(offset)]
            self._drop_segments_below(offset)
            if self.store is not None:
                self.store.write_log_start(offset)
            if self.replication_hook is not None:
                self.replication_hook(self)  # followers move their log start at once
        return self.log_start_offset

    def truncate_to(self, offset: int) -> None:
        """Drop everything at and after `offset` (an unclean election's lost tail)."""
        keep = bisect.bisect_left(self._last_offsets, offset)
        if keep < len(self.batches) and self.batches[keep].base_offset < offset:
            keep += 1  # a batch straddling the cut is kept whole, as Kafka truncates by batch
        for gone in self.batches[keep:]:
            self.size_bytes -= gone.size
        del self.batches[keep:]
        del self._last_offsets[keep:]
        self.log_end_offset = self.batches[-1].last_offset + 1 if self.batches else max(
            self.log_start_offset, min(offset, self.log_end_offset))
        self.epoch_cache = [(e, s) for e, s in self.epoch_cache if s < self.log_end_offset]
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.segments = [s for s in self.segments if s.base_offset < self.log_end_offset] \
            or [Segment(self.log_end_offset)]
        self._recount_segments()
        self.cleaner_checkpoint = min(self.cleaner_checkpoint, self.log_end_offset)
        if self.store is not None:
            self.store.truncate(self.log_end_offset)
            self.store.write_epochs(self.epoch_cache)
        self.forget_producer_state_after_end()

    def forget_producer_state_after_end(self) -> None:
        """Forget what producers wrote past the log end, as Kafka does by rebuilding its
        producer state from the log: the remembered batches past the end go, and each
        producer's open transaction is what the kept log says (a transactional batch with
        no marker of its producer after it), so a truncated marker reopens its transaction
        and a truncated first batch closes it. An aborted transaction whose marker is gone
        leaves the aborted index."""
        end = self.log_end_offset
        open_from = self._open_transactions()
        for pid, entry in list(self.producer_states.items()):
            kept = [b for b in entry.batches if b.last_offset < end]
            if pid in open_from:
                first = open_from[pid]
            else:  # none of its transactional batches is held: only one whose start
                first = entry.current_txn_first_offset  # retention removed stays open
                if first is not None and first >= self._first_held_offset():
                    first = None
            if not kept and first is None:
                del self.producer_states[pid]
                continue
            self.producer_states[pid] = ProducerEntry(
                entry.epoch, deque(kept, maxlen=entry.batches.maxlen),
                entry.coordinator_epoch, first, entry.last_marker_ms)
        self.aborted_index = [(p, first, last) for p, first, last in self.aborted_index
                              if last < end]
        self.refresh_last_stable_offset()

    def _first_held_offset(self) -> int:
        return self.batches[0].base_offset if self.batches else self.log_end_offset

    def _open_transactions(self) -> dict[int, int | None]:
        """Producer id -> the first offset of its transaction left open by the held log
        (None: its last transaction here is closed), for every producer with a
        transactional batch or a marker in the log."""
        state: dict[int, int | None] = {}
        for stored in self.batches:
            if stored.producer_id < 0:
                continue
            if stored.is_control:
                state[stored.producer_id] = None
            elif stored.is_transactional and state.get(stored.producer_id) is None:
                state[stored.producer_id] = stored.base_offset
        return state

    # -- reads ------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, upper_bound: int | None = None,
             force_first: bool = True) -> list[bytes | memoryview]:
        """Whole batches from the one holding `offset`, up to `max_bytes` in total.

        The first batch is returned even when larger than max_bytes if `force_first` (KIP-74),
        so a consumer can always make progress. Batches starting at or after `upper_bound`
        (high watermark or LSO) are not returned.
        """
        bound = self.high_watermark if upper_bound is None else upper_bound
        index = bisect.bisect_left(self._last_offsets, offset)
        out: list[bytes | memoryview] = []
        total = 0
        for batch in self.batches[index:]:
            if batch.base_offset >= bound:
                break
            if total + batch.size > max_bytes and (out or not force_first):
                break
            out.append(batch.data)
            total += batch.size
        return out

    def batch_at(self, offset: int) -> StoredBatch | None:
        """The stored batch holding `offset`, None when the log does not hold it."""
        index = bisect.bisect_left(self._last_offsets, offset)
        if index < len(self.batches) and self.batches[index].base_offset <= offset:
            return self.batches[index]
        return None

    def batches_from(self, offset: int) -> list[StoredBatch]:
        index = bisect.bisect_left(self._last_offsets, offset)
        return self.batches[index:]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= the target."""
        for batch in self.batches:
            if batch.max_timestamp < timestamp or batch.is_control:
                continue
            for rec in decode_batch(batch.data).records:
                if rec.offset >= self.log_start_offset and rec.timestamp >= timestamp:
                    return rec.offset, rec.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (first on ties)."""
        best: tuple[int, int] | None = None
        for batch in self.batches:
            if batch.is_control or (best is not None and batch.max_timestamp <= best[1]):
                continue
            for rec in decode_batch(batch.data).records:
                if best is None or rec.timestamp > best[1]:
                    best = (rec.offset, rec.timestamp)
        return best

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) as Kafka's leader-epoch cache answers OffsetForLeaderEpoch."""
        if epoch == UNDEFINED_EPOCH or not self.epoch_cache:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        latest = self.epoch_cache[-1][0]
        if epoch == latest:
            return epoch, self.log_end_offset
        higher = next(((e, s) for e, s in self.epoch_cache if e > epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        floor = [(e, s) for e, s in self.epoch_cache if e <= epoch]
        if not floor:
            return epoch, higher[1]
        return floor[-1][0], higher[1]

    def note_leader_epoch(self, leader_epoch: int) -> None:
        """Record that a new leader epoch starts at the log end (Kafka writes this on election).

        As in Kafka's cache, entries that start at or after the new one are replaced.
        """
        if self.epoch_cache and leader_epoch <= self.epoch_cache[-1][0]:
            return
        start = self.log_end_offset
        self.epoch_cache = [(e, s) for e, s in self.epoch_cache if s < start]
        self.epoch_cache.append((leader_epoch, start))
        if self.store is not None:
            self.store.write_epochs(self.epoch_cache)

    # -- listeners --------------------------------------------------------------------------

    def add_listener(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        try:
            self._listeners.remove(callback)
        except ValueError:
            pass

    @property
    def listener_count(self) -> int:
        """Callbacks waiting on this log's appends (parked fetches)."""
        return len(self._listeners)

    def wake_listeners(self) -> None:
        """Run the append listeners (an append, or the log going away: parked fetches
        re-check)."""
        if self._listeners:  # most appends: no parked reader
            for callback in list(self._listeners):
                callback()
