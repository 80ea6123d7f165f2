"""Idempotent-producer state per partition: epochs, sequences, and the last five batches.

Theory of operation: this follows Kafka's ProducerStateManager. Each partition remembers, per
producer id, the current epoch and the metadata of the last five batches appended (first and
last sequence, offsets). A new batch is checked in Kafka's order:
1. an older epoch than known -> INVALID_PRODUCER_EPOCH;
2. same epoch and the same (first, last) sequence as a remembered batch -> a duplicate: the
   caller answers success with the original base offset and appends nothing;
3. a new epoch must start at sequence 0 (unless the producer is unknown here);
4. same epoch: the first sequence must follow the last one (wrapping at 2^31-1), otherwise
   OUT_OF_ORDER_SEQUENCE_NUMBER.
A producer this partition has never seen is accepted at any sequence, as Kafka does since
KIP-360 (its state may have been removed with the log). An entry that exists without batches
(a transaction marker created it, or moved it to a new epoch) wants sequence 0 next.

Transactions: a transactional batch opens the producer's transaction on this partition if
none is open (`current_txn_first_offset`); the commit or abort marker closes it
(`apply_marker`), moving the entry to the marker's epoch (a fencing bump clears the
remembered batches, so the zombie's old epoch is refused from then on). The partition's
last stable offset is the smallest first offset of the transactions still open
(`first_unstable_offset`).

Expiration (Kafka's producer.id.expiration.ms): `expire_producers` forgets a producer with no
transaction open on the partition once its last write (batch or marker) is that long ago, as
Kafka's removeExpiredProducers does by the entry's last timestamp; a producer that writes
again is then new here (accepted at any sequence, as above).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafka_protocol_codec.error_codes import ErrorCode

MAX_REMEMBERED_BATCHES = 5
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class BatchMeta:
    """One appended batch of an idempotent producer, remembered so that a retry of it is
    recognized as a duplicate."""

    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerEntry:
    """What a partition remembers of one producer id: its epoch, its last batches, its open
    transaction's first offset."""

    epoch: int
    batches: deque[BatchMeta] = field(default_factory=lambda: deque(maxlen=MAX_REMEMBERED_BATCHES))
    coordinator_epoch: int = -1
    current_txn_first_offset: int | None = None
    last_marker_ms: int | None = None  # the timestamp of the last marker written for it

    @property
    def last_timestamp(self) -> int | None:
        """Kafka's lastTimestamp: the latest of the last batch's and the last marker's."""
        stamps = [s for s in (self.batches[-1].timestamp if self.batches else None,
                              self.last_marker_ms) if s is not None]
        return max(stamps) if stamps else None

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    return (base_sequence + last_offset_delta) % (INT32_MAX + 1)


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True)
class SequenceVerdict:
    """Whether an idempotent producer's batch may be appended: an error, or the earlier
    batch it duplicates."""

    error: ErrorCode
    duplicate_of: BatchMeta | None = None


def check_batch(entry: ProducerEntry | None, epoch: int, first_seq: int,
                last_seq: int) -> SequenceVerdict:
    """Decide whether a batch from an idempotent producer may be appended."""
    if entry is None:
        return SequenceVerdict(ErrorCode.NONE)
    if epoch < entry.epoch:
        return SequenceVerdict(ErrorCode.INVALID_PRODUCER_EPOCH)
    if epoch == entry.epoch:
        for meta in entry.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return SequenceVerdict(ErrorCode.NONE, meta)
        if not in_sequence(entry.last_seq, first_seq):
            return SequenceVerdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        return SequenceVerdict(ErrorCode.NONE)
    if first_seq != 0:
        return SequenceVerdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    return SequenceVerdict(ErrorCode.NONE)


def record_batch(states: dict[int, ProducerEntry], producer_id: int, epoch: int,
                 meta: BatchMeta, transactional: bool = False) -> ProducerEntry:
    """Remember an appended batch; a transactional one opens the transaction if needed."""
    entry = states.get(producer_id)
    if entry is None or epoch != entry.epoch:
        entry = ProducerEntry(epoch, coordinator_epoch=entry.coordinator_epoch if entry else -1,
                              current_txn_first_offset=entry.current_txn_first_offset
                              if entry else None)
        states[producer_id] = entry
    entry.batches.append(meta)
    if transactional and entry.current_txn_first_offset is None:
        entry.current_txn_first_offset = meta.base_offset
    return entry


def apply_marker(states: dict[int, ProducerEntry], producer_id: int, epoch: int,
                 coordinator_epoch: int, marker_offset: int,
                 timestamp_ms: int | None = None) -> int:
    """Close the producer's transaction on this partition with a marker written at
    `marker_offset`; returns the transaction's first offset (the marker's own offset when
    nothing was written in it, as Kafka records it)."""
    entry = states.get(producer_id)
    if entry is None:
        entry = ProducerEntry(epoch)
        states[producer_id] = entry
    elif epoch != entry.epoch:
        entry.epoch = epoch
        entry.batches.clear()
    first = entry.current_txn_first_offset
    entry.current_txn_first_offset = None
    entry.coordinator_epoch = coordinator_epoch
    if timestamp_ms is not None:
        entry.last_marker_ms = timestamp_ms
    return marker_offset if first is None else first


def first_unstable_offset(states: dict[int, ProducerEntry]) -> int | None:
    """The first offset of the oldest open transaction (the LSO), None when none is open."""
    firsts = [e.current_txn_first_offset for e in states.values()
              if e.current_txn_first_offset is not None]
    return min(firsts) if firsts else None


def expire_producers(states: dict[int, ProducerEntry], now_ms: int, expiration_ms: int) -> int:
    """Forget the producers expired at `now_ms` (see the module docstring); how many."""
    expired = [pid for pid, entry in states.items()
               if entry.current_txn_first_offset is None
               and (last := entry.last_timestamp) is not None
               and now_ms - last >= expiration_ms]
    for pid in expired:
        del states[pid]
    return len(expired)
