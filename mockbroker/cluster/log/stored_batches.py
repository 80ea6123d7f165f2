"""The units a partition log is made of, and what its owner plugs into it.

Theory of operation: a PartitionLog (partition.py) holds StoredBatch objects (the exact
bytes a producer sent, patched once) grouped into Segments, and answers each produced batch
with an AppendResult. These are plain slotted dataclasses built once per produced batch, so
they are kept cheap to build. The log's owners plug in through small protocols: a LogStore
persists a replica's log (replica_files.py under --data-dir), a SegmentPolicy says when to
roll a segment (log_manager.py), a TransactionCheck lets the transaction coordinator refuse
a transactional batch (KIP-890).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafka_protocol_codec.error_codes import ErrorCode


class SegmentPolicy(Protocol):
    """When to roll: the topic's segment.bytes and segment.ms, and the clock."""

    def limits(self) -> tuple[int, int]: ...

    def now_ms(self) -> int: ...


@dataclass(slots=True)
class Segment:
    """One segment's bookkeeping; its batches are those from `base_offset` to the next
    segment's base offset in PartitionLog.batches."""

    base_offset: int
    created_ms: int = 0  # the append time of its first batch (segment.ms counts from it)
    size_bytes: int = 0
    max_timestamp: int = -1  # the largest batch max timestamp (time retention)
    batch_count: int = 0


# StoredBatch and AppendResult are immutable by convention, not frozen: one of each is built
# per produced batch, and a frozen dataclass's __init__ (object.__setattr__ per field) costs
# four times a plain one. They stay hashable and comparable by value.
@dataclass(slots=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    # bytes, or a read-only view of the request frame it arrived in (partition.stored_form)
    data: bytes | memoryview
    producer_id: int = -1
    is_transactional: bool = False
    is_control: bool = False

    @property
    def size(self) -> int:
        return len(self.data)

    def __hash__(self) -> int:
        """Of everything but the bytes' content: a view of a bytearray frame cannot be hashed,
        and equal batches (compared with their bytes) still hash alike."""
        return hash((self.base_offset, self.last_offset, self.max_timestamp, len(self.data),
                     self.producer_id, self.is_transactional, self.is_control))


@dataclass(slots=True, unsafe_hash=True)
class AppendResult:
    """The outcome of one produced batch, as a Produce response partition reports it."""

    error: ErrorCode
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    message: str | None = None
    # (index of the record in the batch, why it was refused), for INVALID_RECORD
    record_errors: tuple[tuple[int, str], ...] = ()

    @property
    def ok(self) -> bool:
        return self.error == ErrorCode.NONE


# Decides whether a transactional batch may be written: (producer id, epoch) -> error code.
TransactionCheck = Callable[[int, int], ErrorCode]


def not_transactional(producer_id: int, epoch: int) -> ErrorCode:
    """The TransactionCheck for a batch that is not transactional, which
    PartitionLog.append_producer_batch never calls."""
    raise AssertionError(f"producer {producer_id} (epoch {epoch}): a non-transactional batch "
                         "was verified with the transaction coordinator")


class LogStore(Protocol):
    """Where a replica's log is persisted (replica_files.ReplicaFiles under --data-dir);
    called at the log's mutation points only: append, truncation, log start, epoch cache."""

    def append(self, data: bytes | memoryview, last_offset: int) -> None: ...

    def truncate(self, log_end_offset: int) -> None: ...

    def write_log_start(self, offset: int) -> None: ...

    def write_epochs(self, cache: Sequence[tuple[int, int]]) -> None: ...

