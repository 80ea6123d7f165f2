"""Share-partitions (KIP-932): the per-(share group, topic partition) record state machine.

Theory of operation. A share group consumes a partition cooperatively: any member may be
handed any record, and every record is acknowledged one by one. The share-partition keeps a
window of the log, [SPSO, SPEO):

- SPSO (share-partition start offset): every record below it is done with (acknowledged or
  archived). SPEO (share-partition end offset): the next offset never yet handed out.
- Each offset in the window has a state: Available (may be handed out again), Acquired (held
  by one member under an acquisition lock), Acknowledged (accepted, done) or Archived
  (rejected, a gap, a control record, an aborted transaction's record under read_committed,
  or its delivery limit reached: done, never delivered again).
  Offsets at or beyond SPEO are implicitly Available and have not been delivered yet.
- `acquire` first hands out the window's Available records (redeliveries), then new records
  from SPEO up to the upper bound (high watermark, or LSO for read_committed), whole batches
  at a time, as Kafka does, while fewer than `max_in_flight`
  (group.share.partition.max.record.locks) records are in the window. Every acquisition
  raises the record's delivery count and starts a lock that ends `lock_duration_ms`
  (group.share.record.lock.duration.ms) later on the injected clock.
- `acknowledge` applies Accept (1) -> Acknowledged, Release (2) -> Available, Reject (3)
  and Gap (0) -> Archived, only to records the member holds; anything else is
  INVALID_RECORD_STATE and changes nothing. A lock that expires (`expire_locks`, run from
  the coordinator's tick), a member that leaves, and a Release all make the record
  Available again, or Archived once its delivery count reached `delivery_limit`
  (group.share.delivery.count.limit).
- After every change the SPSO moves past the done prefix, and those offsets leave the window.
- Initialisation: the first use places SPSO at the log end ("latest", the default of
  share.auto.offset.reset) or at the log start ("earliest"). Records deleted below the log
  start offset leave the window the same way.

State lives only in memory (Kafka persists it through the share coordinator's
__share_group_state topic; here a reset or a restart of the process forgets it).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.log.partition import PartitionLog, StoredBatch

ACK_GAP = 0
ACK_ACCEPT = 1
ACK_RELEASE = 2
ACK_REJECT = 3
ACK_TYPES = (ACK_GAP, ACK_ACCEPT, ACK_RELEASE, ACK_REJECT)

DEFAULT_LOCK_DURATION_MS = 30_000
DEFAULT_DELIVERY_LIMIT = 5
DEFAULT_MAX_IN_FLIGHT = 200


class RecordState(enum.Enum):
    AVAILABLE = "Available"
    ACQUIRED = "Acquired"
    ACKNOWLEDGED = "Acknowledged"
    ARCHIVED = "Archived"


DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass
class InFlightRecord:
    state: RecordState
    delivery_count: int = 0
    owner: str | None = None
    lock_deadline_ms: int = 0


@dataclass(frozen=True)
class AcquiredRange:
    """Consecutive offsets acquired with the same delivery count (ShareFetch's
    AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True)
class AckBatch:
    """One AcknowledgementBatch: one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]

    def type_of(self, offset: int) -> int:
        if len(self.types) == 1:
            return self.types[0]
        return self.types[offset - self.first_offset]


@dataclass
class SharePartition:
    topic: str
    partition: int
    spso: int
    lock_duration_ms: int = DEFAULT_LOCK_DURATION_MS
    delivery_limit: int = DEFAULT_DELIVERY_LIMIT
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    records: dict[int, InFlightRecord] = field(default_factory=dict)
    speo: int = -1

    def __post_init__(self) -> None:
        if self.speo < self.spso:
            self.speo = self.spso

    @classmethod
    def start(cls, log: PartitionLog, reset: str, *,
              lock_duration_ms: int = DEFAULT_LOCK_DURATION_MS,
              delivery_limit: int = DEFAULT_DELIVERY_LIMIT,
              max_in_flight: int = DEFAULT_MAX_IN_FLIGHT) -> SharePartition:
        """A fresh share-partition at the log end ("latest") or start ("earliest")."""
        spso = log.log_start_offset if reset == "earliest" else log.high_watermark
        return cls(log.topic, log.partition, spso, lock_duration_ms=lock_duration_ms,
                   delivery_limit=delivery_limit, max_in_flight=max_in_flight)

    # -- acquisition ------------------------------------------------------------------------

    def acquire(self, member_id: str, log: PartitionLog, upper_bound: int, now_ms: int,
                max_bytes: int = 0x7FFFFFFF, read_committed: bool = False) -> list[AcquiredRange]:
        """Hand records to `member_id`: Available ones in the window first, then new whole
        batches from SPEO below `upper_bound`, within `max_in_flight` and `max_bytes`
        (the first new batch always, KIP-74). With `read_committed` (the bound is then the
        LSO) batches of aborted transactions are archived, never delivered."""
        self.expire_locks(now_ms)
        self._skip_deleted(log.log_start_offset)
        acquired: list[int] = []
        for offset in sorted(self.records):
            record = self.records[offset]
            if record.state is RecordState.AVAILABLE and offset < upper_bound:
                self._lock(record, member_id, now_ms)
                acquired.append(offset)
        taken_bytes = 0
        for batch in log.batches_from(self.speo):
            if batch.base_offset >= upper_bound or self.speo >= upper_bound:
                break
            if self.speo - self.spso >= self.max_in_flight:
                break
            if taken_bytes > 0 and taken_bytes + batch.size > max_bytes:
                break
            taken_bytes += batch.size
            for offset in range(max(self.speo, batch.base_offset), batch.last_offset + 1):
                record = InFlightRecord(RecordState.AVAILABLE)
                self.records[offset] = record
                if batch.is_control or (read_committed and _aborted(log, batch)):
                    record.state = RecordState.ARCHIVED  # never delivered
                else:
                    self._lock(record, member_id, now_ms)
                    acquired.append(offset)
            self.speo = batch.last_offset + 1
        self._advance_start()
        return self._ranges(acquired)

    def _lock(self, record: InFlightRecord, member_id: str, now_ms: int) -> None:
        record.state = RecordState.ACQUIRED
        record.delivery_count += 1
        record.owner = member_id
        record.lock_deadline_ms = now_ms + self.lock_duration_ms

    def _ranges(self, offsets: list[int]) -> list[AcquiredRange]:
        out: list[AcquiredRange] = []
        for offset in sorted(offsets):
            count = self.records[offset].delivery_count
            if out and out[-1].last_offset == offset - 1 and out[-1].delivery_count == count:
                out[-1] = AcquiredRange(out[-1].first_offset, offset, count)
            else:
                out.append(AcquiredRange(offset, offset, count))
        return out

    def has_available(self, log: PartitionLog, upper_bound: int) -> bool:
        """Whether `acquire` would hand out anything now (a parked ShareFetch's check)."""
        if any(r.state is RecordState.AVAILABLE and o < upper_bound
               for o, r in self.records.items()):
            return True
        if self.speo - self.spso >= self.max_in_flight:
            return False
        return any(not b.is_control for b in log.batches_from(self.speo)
                   if b.base_offset < upper_bound and b.last_offset >= self.speo)

    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self.records.values()
                     if r.state is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    # -- acknowledgement and release --------------------------------------------------------

    def acknowledge(self, member_id: str, batches: Iterable[AckBatch]) -> ErrorCode:
        """Apply the batches if every offset in them is acquired by `member_id` and every
        type is valid; else INVALID_RECORD_STATE (or INVALID_REQUEST) and nothing changes."""
        batches = list(batches)
        for batch in batches:
            if batch.last_offset < batch.first_offset or not batch.types:
                return ErrorCode.INVALID_REQUEST
            if len(batch.types) not in (1, batch.last_offset - batch.first_offset + 1):
                return ErrorCode.INVALID_REQUEST
            if any(t not in ACK_TYPES for t in batch.types):
                return ErrorCode.INVALID_REQUEST
            for offset in range(batch.first_offset, batch.last_offset + 1):
                record = self.records.get(offset)
                if record is None or record.state is not RecordState.ACQUIRED \
                        or record.owner != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
        for batch in batches:
            for offset in range(batch.first_offset, batch.last_offset + 1):
                self._settle(self.records[offset], batch.type_of(offset))
        self._advance_start()
        return ErrorCode.NONE

    def _settle(self, record: InFlightRecord, ack_type: int) -> None:
        if ack_type == ACK_ACCEPT:
            record.state = RecordState.ACKNOWLEDGED
        elif ack_type == ACK_RELEASE:
            self._release(record)
            return
        else:  # Reject or Gap
            record.state = RecordState.ARCHIVED
        record.owner = None

    def _release(self, record: InFlightRecord) -> None:
        record.owner = None
        record.state = (RecordState.ARCHIVED if record.delivery_count >= self.delivery_limit
                        else RecordState.AVAILABLE)

    def release_member(self, member_id: str) -> int:
        """Release every record `member_id` holds (it left, or closed its share session)."""
        released = 0
        for record in self.records.values():
            if record.state is RecordState.ACQUIRED and record.owner == member_id:
                self._release(record)
                released += 1
        self._advance_start()
        return released

    def expire_locks(self, now_ms: int) -> int:
        """Release every record whose acquisition lock has run out."""
        expired = 0
        for record in self.records.values():
            if record.state is RecordState.ACQUIRED and record.lock_deadline_ms <= now_ms:
                self._release(record)
                expired += 1
        if expired:
            self._advance_start()
        return expired

    # -- the window -------------------------------------------------------------------------

    def _advance_start(self) -> None:
        while self.spso < self.speo:
            record = self.records.get(self.spso)
            if record is None or record.state not in DONE:
                break
            del self.records[self.spso]
            self.spso += 1

    def _skip_deleted(self, log_start_offset: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) leave the window."""
        if self.spso >= log_start_offset:
            return
        for offset in [o for o in self.records if o < log_start_offset]:
            del self.records[offset]
        self.spso = log_start_offset
        self.speo = max(self.speo, log_start_offset)

    def in_flight(self) -> list[dict[str, object]]:
        """The window's records, runs of equal state/count/owner merged (control API)."""
        out: list[dict[str, object]] = []
        for offset in sorted(self.records):
            r = self.records[offset]
            last = out[-1] if out else None
            if last is not None and last["last_offset"] == offset - 1 \
                    and last["state"] == r.state.value \
                    and last["delivery_count"] == r.delivery_count and last["member_id"] == r.owner:
                last["last_offset"] = offset
                continue
            out.append({"first_offset": offset, "last_offset": offset, "state": r.state.value,
                        "delivery_count": r.delivery_count, "member_id": r.owner})
        return out


def _aborted(log: PartitionLog, batch: StoredBatch) -> bool:
    """Whether `batch` belongs to a transaction aborted by a marker after it."""
    return batch.is_transactional and any(
        pid == batch.producer_id and first <= batch.base_offset < marker
        for pid, first, marker in log.aborted_index)


def batches_for(log: PartitionLog, ranges: list[AcquiredRange]) -> list[StoredBatch]:
    """The stored batches holding any of the acquired offsets (sent whole, as Kafka does;
    the client delivers only the acquired records)."""
    if not ranges:
        return []
    out: list[StoredBatch] = []
    for batch in log.batches_from(ranges[0].first_offset):
        if batch.base_offset > ranges[-1].last_offset:
            break
        if any(r.first_offset <= batch.last_offset and batch.base_offset <= r.last_offset
               for r in ranges):
            out.append(batch)
    return out
