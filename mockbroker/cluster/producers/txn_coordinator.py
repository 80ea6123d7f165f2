"""The transaction coordinator: one state machine per transactional.id.

Theory of operation. This follows Kafka's TransactionCoordinator (KIP-98 with the KIP-360
and KIP-588 refinements, and KIP-890's transactions v2 below). State changes are immediate
because the cluster is one synchronous object; with a data directory each change is also
handed to the `journal` (data_dir.py's transaction-state log, Kafka's __transaction_state)
before the request is answered, and `load` takes the stored ids back at start-up.

Each transactional.id has a producer id and epoch, a state, the partitions and consumer
groups added to the current transaction, and a timeout. States and transitions:

    Empty/CompleteCommit/CompleteAbort --AddPartitions/AddOffsets--> Ongoing
    Ongoing --EndTxn(commit)--> PrepareCommit --markers written--> CompleteCommit
    Ongoing --EndTxn(abort), timeout, fencing--> PrepareAbort --markers--> CompleteAbort

Completing writes a COMMIT or ABORT control batch at the end of every partition of the
transaction (with the partition's current leader epoch), which closes the producer's
transaction in each partition's producer state, records aborted transactions in the
partition's aborted index and recomputes each last stable offset; then the group offsets
committed inside the transaction complete (visible on commit, dropped on abort). As Kafka's
coordinator, which sends WriteTxnMarkers and retries until each leader answers, a
transaction stays in Prepare* until every marker is acknowledged: on the partition's
current leader and under its high watermark (appended with acks=all, so only while the ISR
holds min.insync.replicas). A marker lost with a leader change (the new leader never had
it, the others truncated it) is written again on the new leader (`_send_markers`, at once
and then at every tick). In a healthy cluster every marker is acknowledged as it is
written, so Prepare* is not observed; with `marker_delay_ms` > 0 the coordinator stays in
Prepare* until that much time has passed on the injected clock (the next `tick` writes them),
which is when Kafka answers CONCURRENT_TRANSACTIONS.

Fencing. InitProducerId on a known transactional.id bumps the epoch; an older epoch is then
refused everywhere (PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for request versions before
KIP-588; the handlers map this). If the id has an ongoing transaction, InitProducerId first
aborts it at a bumped epoch and answers CONCURRENT_TRANSACTIONS, so the new producer retries
and gets a second bump, as Kafka does. A transaction older than its timeout is aborted the
same way by `tick`, so a zombie finds its epoch fenced. KIP-360: an InitProducerId carrying
the current producer id and epoch bumps the epoch (recovery after an abortable error); one
carrying the previous epoch is a retry and gets the current epoch back; anything else is
fenced. When the epoch is exhausted the producer id is rotated.

All methods return Kafka error codes rather than raising; the coordinator never checks which
broker it runs on (handlers do that with `Cluster.coordinator_for`). It is given only what it
uses: the clock, the producer-id allocator, a lookup from (topic, partition) to the partition's
log and current leader epoch (where markers go), and the group offsets store (PendingOffsets).
The cluster drives `tick`.

Transactions v2 (KIP-890 part 2, Kafka 4.0's `transaction.version` 2). Each transaction
records the version its client used (`transaction_version`, 0 or 2, shown by `state`). A v2
client adds partitions implicitly with its first transactional Produce v12 to them (the
leader asks the coordinator to add, `verify_produce` with ADD_PARTITION) and the group with
TxnOffsetCommit v5 (no AddPartitionsToTxn / AddOffsetsToTxn round trips). EndTxn v5 bumps
the producer epoch when it prepares the commit or abort: the markers carry the bumped epoch,
so every partition's producer state moves past the epoch the transaction was written with,
and a zombie still on it is fenced (PRODUCER_FENCED at the coordinator, INVALID_PRODUCER_EPOCH
on Produce); the response carries the new epoch. When the epoch is exhausted, the markers
carry Short.MaxValue (an epoch no client is ever given) and the transactional id moves to a
new producer id at epoch 0, which the response already names. A v2 EndTxn retried with the pre-bump epoch after it completed gets the same answer again
(Kafka's retry rule); the same epoch on a completed v2 transaction is PRODUCER_FENCED.

Partition verification (KIP-890 part 1, Kafka 3.6+): before a transactional batch is
appended, the leader asks the coordinator whether the partition is in the producer's ongoing
transaction (`verify_produce`). The coordinator's answer (TRANSACTION_ABORTABLE when it is
not) reaches the producer as its Produce version can read it: Produce v11+ gets
TRANSACTION_ABORTABLE, older versions INVALID_TXN_STATE; PRODUCER_FENCED becomes
INVALID_PRODUCER_EPOCH, and the coordinator's retriable errors NOT_ENOUGH_REPLICAS (Kafka's
ReplicaManager and AddPartitionsToTxnManager translate so).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.log.partition import PartitionLog, StoredBatch

MAX_TRANSACTION_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms
EPOCH_EXHAUSTED = 2**15 - 2  # Short.MaxValue - 1: the last epoch Kafka hands out
COORDINATOR_EPOCH = 0  # the __transaction_state leader epoch; one simulated coordinator
TRANSACTION_VERSION_1 = 0  # a client of the original protocol (Kafka's TV_0 for requests)
TRANSACTION_VERSION_2 = 2  # KIP-890 part 2: epoch bump per transaction, implicit adds


class ProduceVerification(enum.Enum):
    """What a transactional Produce asks of the coordinator, by request version (Kafka's
    TransactionSupportedOperation): v0-10 verify and hear INVALID_TXN_STATE, v11 verify and
    hear TRANSACTION_ABORTABLE, v12 (transactions v2) add the partition."""

    DEFAULT_ERROR = "defaultError"
    GENERIC_ERROR = "genericError"
    ADD_PARTITION = "addPartition"

    @classmethod
    def for_produce_version(cls, version: int) -> ProduceVerification:
        if version >= 12:
            return cls.ADD_PARTITION
        return cls.GENERIC_ERROR if version >= 11 else cls.DEFAULT_ERROR


# Coordinator errors a Produce cannot carry to every client; Kafka answers
# NOT_ENOUGH_REPLICAS, which producers retry without a metadata refresh.
_RETRIABLE_VERIFICATION_ERRORS = frozenset({
    ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


def produce_error(error: ErrorCode, operation: ProduceVerification) -> ErrorCode:
    """The coordinator's verification answer as the Produce partition response says it."""
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error == ErrorCode.TRANSACTION_ABORTABLE and operation != ProduceVerification.GENERIC_ERROR:
        return ErrorCode.INVALID_TXN_STATE
    if error in _RETRIABLE_VERIFICATION_ERRORS:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return error


DEFAULT_ID_EXPIRATION_MS = 604_800_000  # transactional.id.expiration.ms: 7 days
DEFAULT_CLEANUP_INTERVAL_MS = 3_600_000  # ...cleanup.interval.ms: 1 hour


class TxnState(enum.Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"

    @property
    def preparing(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


class MarkerTarget(NamedTuple):
    """Where a partition's marker goes: its leader's log and leader epoch, and whether the
    leader would take a marker now (it has one, it is up, and the ISR holds at least
    min.insync.replicas: Kafka appends markers with acks=all)."""

    log: PartitionLog
    leader_epoch: int
    writable: bool = True


_EXPIRABLE = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})

# (topic, partition) -> where its marker goes, None when the partition is gone
PartitionLookup = Callable[[str, int], MarkerTarget | None]


class PendingOffsets(Protocol):
    """The part of the group offsets store that transactions use."""

    def add_pending(self, group: str, producer_id: int, topic: str, partition: int,
                    offset: int, leader_epoch: int, metadata: str | None) -> None: ...

    def complete_pending(self, producer_id: int, commit: bool) -> None: ...

    def has_pending(self, group: str, topic: str, partition: int) -> bool: ...


@dataclass
class TransactionMetadata:
    """One transactional id at its coordinator (Kafka's TransactionMetadata): producer id
    and epoch, state, and the partitions and groups in the transaction."""

    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    complete_at_ms: int = -1  # Prepare*: when the markers get written
    transaction_version: int = TRANSACTION_VERSION_1  # what the client's requests speak
    next_producer_id: int = NO_PRODUCER_ID  # v2 epoch exhausted: the id after the markers
    # Prepare*: the marker last written to each partition (replicas hold the same object)
    # and the partitions whose marker is acknowledged (on the leader, under its high mark)
    markers: dict[tuple[str, int], StoredBatch] = field(default_factory=dict)
    marked: set[tuple[str, int]] = field(default_factory=set)

    def sorted_partitions(self) -> list[tuple[str, int]]:
        return sorted(self.partitions)


@dataclass(frozen=True)
class EndResult:
    """EndTxn's answer; v5 (transactions v2) sends the producer id and epoch to use next."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class InitResult:
    """What InitProducerId is answered with: a producer id and epoch, or an error."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionJournal(Protocol):
    """Where the coordinator's state is persisted (data_dir.py, Kafka's __transaction_state):
    the whole metadata of one transactional id after each change, or everything dropped."""

    def transaction_changed(self, meta: TransactionMetadata) -> None: ...

    def transactions_cleared(self) -> None: ...

    def transaction_removed(self, transactional_id: str) -> None: ...


class TransactionCoordinator:
    def __init__(self, clock: Clock, allocate_producer_id: Callable[[], int],
                 partitions: PartitionLookup, offsets: PendingOffsets,
                 max_timeout_ms: int = MAX_TRANSACTION_TIMEOUT_MS,
                 marker_delay_ms: int = 0,
                 id_expiration_ms: int = DEFAULT_ID_EXPIRATION_MS,
                 cleanup_interval_ms: int = DEFAULT_CLEANUP_INTERVAL_MS) -> None:
        self.clock = clock
        self._allocate_producer_id = allocate_producer_id
        self._partitions = partitions
        self.offsets = offsets
        self.max_timeout_ms = max_timeout_ms
        self.marker_delay_ms = marker_delay_ms
        self.transactions: dict[str, TransactionMetadata] = {}
        self._by_producer: dict[int, TransactionMetadata] = {}
        self.journal: TransactionJournal | None = None  # set by restore.py with --data-dir
        # transactional.id.expiration.ms and how often idle ids are looked for (Kafka's
        # transaction.remove.expired.transaction.cleanup.interval.ms)
        self.id_expiration_ms = id_expiration_ms
        self.cleanup_interval_ms = cleanup_interval_ms
        self.next_cleanup_ms = clock.now_ms() + cleanup_interval_ms

    def reset(self) -> None:
        """Forget every transactional id (the control API's reset)."""
        self.transactions.clear()
        self._by_producer.clear()
        if self.journal is not None:
            self.journal.transactions_cleared()

    def _journal(self, meta: TransactionMetadata) -> None:
        """Persist `meta` after a state change, before the request is answered (as Kafka's
        coordinator appends to __transaction_state before it answers)."""
        if self.journal is not None:
            self.journal.transaction_changed(meta)

    def load(self, stored: list[TransactionMetadata]) -> None:
        """Take back the transactional ids of a data directory (restore.py), as Kafka's
        coordinator loads __transaction_state: each keeps its producer id and epoch; an
        Ongoing transaction stays open (its timeout aborts it unless its producer ends it),
        and a Prepare* one writes its markers again at the next tick, which completes it."""
        for meta in stored:
            self.transactions[meta.transactional_id] = meta
            self._by_producer[meta.producer_id] = meta
            if meta.state.preparing:
                meta.complete_at_ms = -1  # due now: `tick` sends the markers

    # -- lookups ----------------------------------------------------------------------------

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        return self.transactions.get(transactional_id)

    def for_producer(self, producer_id: int) -> TransactionMetadata | None:
        return self._by_producer.get(producer_id)

    def _now(self) -> int:
        return self.clock.now_ms()

    # -- InitProducerId ---------------------------------------------------------------------

    def init_producer_id(self, transactional_id: str, timeout_ms: int,
                         expected_producer_id: int = NO_PRODUCER_ID,
                         expected_epoch: int = NO_PRODUCER_EPOCH) -> InitResult:
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        if (expected_producer_id == NO_PRODUCER_ID) != (expected_epoch == NO_PRODUCER_EPOCH):
            return InitResult(ErrorCode.INVALID_REQUEST)
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        meta = self.transactions.get(transactional_id)
        if meta is None:
            meta = TransactionMetadata(transactional_id, self._allocate_producer_id(),
                                       timeout_ms=timeout_ms, update_ms=self._now())
            self.transactions[transactional_id] = meta
            self._by_producer[meta.producer_id] = meta
        expected = expected_producer_id != NO_PRODUCER_ID
        if expected and not self._valid_expected_producer(meta, expected_producer_id,
                                                          expected_epoch):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if meta.state.preparing:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.state == TxnState.ONGOING:
            # Abort the ongoing transaction at a bumped epoch; the caller retries and gets
            # a second bump (never this one), which fences the old producer for good.
            self._fence_and_abort(meta)
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.producer_epoch >= EPOCH_EXHAUSTED and (
                not expected or expected_epoch == meta.producer_epoch):
            self._rotate_producer_id(meta, record_last_epoch=expected)
        else:
            error = self._increment_epoch(meta, expected_epoch if expected else None)
            if error != ErrorCode.NONE:
                return InitResult(error)
        meta.timeout_ms = timeout_ms
        meta.state = TxnState.EMPTY
        meta.partitions.clear()
        meta.groups.clear()
        meta.start_ms = -1
        meta.update_ms = self._now()
        self._journal(meta)
        return InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)

    @staticmethod
    def _valid_expected_producer(meta: TransactionMetadata, producer_id: int,
                                 epoch: int) -> bool:
        return (meta.producer_epoch == NO_PRODUCER_EPOCH or producer_id == meta.producer_id
                or (producer_id == meta.last_producer_id and epoch >= EPOCH_EXHAUSTED))

    @staticmethod
    def _increment_epoch(meta: TransactionMetadata, expected_epoch: int | None) -> ErrorCode:
        if expected_epoch is None:
            meta.last_producer_epoch = NO_PRODUCER_EPOCH
            meta.producer_epoch += 1
        elif meta.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == meta.producer_epoch:
            meta.last_producer_epoch = meta.producer_epoch
            meta.producer_epoch += 1
        elif expected_epoch != meta.last_producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        # else: a retry of a bump that succeeded; the current epoch is the answer
        return ErrorCode.NONE

    def _rotate_producer_id(self, meta: TransactionMetadata, record_last_epoch: bool) -> None:
        self._by_producer.pop(meta.producer_id, None)
        meta.last_producer_id = meta.producer_id
        meta.last_producer_epoch = meta.producer_epoch if record_last_epoch \
            else NO_PRODUCER_EPOCH
        meta.producer_id = self._allocate_producer_id()
        meta.producer_epoch = 0
        self._by_producer[meta.producer_id] = meta

    # -- requests inside a transaction ------------------------------------------------------

    def _check_producer(self, transactional_id: str, producer_id: int,
                        epoch: int) -> tuple[ErrorCode, TransactionMetadata | None]:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if meta.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, meta

    def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                       partitions: list[tuple[str, int]],
                       transaction_version: int = TRANSACTION_VERSION_1) -> ErrorCode:
        """AddPartitionsToTxn (the caller has already checked that the partitions exist);
        `transaction_version` 2 for a v2 client's implicit add (Produce v12)."""
        error, meta = self._check_producer(transactional_id, producer_id, epoch)
        if meta is None:
            return error
        return self._add_partitions(meta, partitions, transaction_version)

    def _add_partitions(self, meta: TransactionMetadata, partitions: list[tuple[str, int]],
                        transaction_version: int) -> ErrorCode:
        if meta.state.preparing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state == TxnState.ONGOING and set(partitions) <= meta.partitions:
            return ErrorCode.NONE
        self._begin(meta, transaction_version)
        meta.partitions.update(partitions)
        self._journal(meta)
        return ErrorCode.NONE

    def verify_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                          partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """AddPartitionsToTxn v4+ with VerifyOnly (the broker-to-coordinator form of
        KIP-890 part 1): per partition, NONE if it is in the ongoing transaction, else
        TRANSACTION_ABORTABLE; one error for all when the producer does not match."""
        error, meta = self._check_producer(transactional_id, producer_id, epoch)
        if meta is None:
            return dict.fromkeys(partitions, error)
        if meta.state.preparing:
            return dict.fromkeys(partitions, ErrorCode.CONCURRENT_TRANSACTIONS)
        return {tp: ErrorCode.NONE if meta.state == TxnState.ONGOING and tp in meta.partitions
                else ErrorCode.TRANSACTION_ABORTABLE for tp in partitions}

    def add_offsets(self, transactional_id: str, producer_id: int, epoch: int,
                    group_id: str) -> ErrorCode:
        """AddOffsetsToTxn: the group's offsets partition joins the transaction."""
        error, meta = self._check_producer(transactional_id, producer_id, epoch)
        if meta is None:
            return error
        if meta.state.preparing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state == TxnState.ONGOING and group_id in meta.groups:
            return ErrorCode.NONE
        self._begin(meta, TRANSACTION_VERSION_1)
        meta.groups.add(group_id)
        self._journal(meta)
        return ErrorCode.NONE

    def _begin(self, meta: TransactionMetadata, transaction_version: int) -> None:
        now = self._now()
        if meta.state != TxnState.ONGOING:
            meta.state = TxnState.ONGOING
            meta.partitions.clear()
            meta.groups.clear()
            meta.start_ms = now
            meta.transaction_version = transaction_version
        meta.update_ms = now

    def check_offset_commit(self, transactional_id: str, group_id: str, producer_id: int,
                            epoch: int, *, add_group: bool = False,
                            not_in_transaction: ErrorCode = ErrorCode.INVALID_TXN_STATE
                            ) -> ErrorCode:
        """TxnOffsetCommit: the producer must own the transaction, which must hold the group
        (AddOffsetsToTxn first; `not_in_transaction` otherwise), as Kafka's transaction
        verification requires. With `add_group` (TxnOffsetCommit v5, transactions v2) the
        group joins the transaction here instead."""
        error, meta = self._check_producer(transactional_id, producer_id, epoch)
        if meta is None:
            return error
        if meta.state.preparing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if add_group:
            known = meta.state == TxnState.ONGOING and group_id in meta.groups
            self._begin(meta, TRANSACTION_VERSION_2)
            meta.groups.add(group_id)
            if not known:
                self._journal(meta)
            return ErrorCode.NONE
        if meta.state != TxnState.ONGOING or group_id not in meta.groups:
            return not_in_transaction
        return ErrorCode.NONE

    def verify_produce(self, producer_id: int, epoch: int, topic: str, partition: int,
                       operation: ProduceVerification = ProduceVerification.DEFAULT_ERROR
                       ) -> ErrorCode:
        """A transactional Produce: the partition must be in the producer's ongoing
        transaction (KIP-890 part 1), or, for Produce v12, is added to it (part 2). The
        answer is already translated for the Produce response (`produce_error`)."""
        meta = self._by_producer.get(producer_id)
        if meta is None:
            error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        elif epoch != meta.producer_epoch:
            error = ErrorCode.PRODUCER_FENCED
        elif operation == ProduceVerification.ADD_PARTITION:
            error = self._add_partitions(meta, [(topic, partition)], TRANSACTION_VERSION_2)
        elif meta.state.preparing:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        elif meta.state != TxnState.ONGOING or (topic, partition) not in meta.partitions:
            error = ErrorCode.TRANSACTION_ABORTABLE
        else:
            error = ErrorCode.NONE
        return produce_error(error, operation)

    # -- ending -----------------------------------------------------------------------------

    def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
                transaction_version: int = TRANSACTION_VERSION_1) -> ErrorCode:
        """EndTxn's error code (`end_txn_result` has the producer id and epoch too)."""
        return self.end_txn_result(transactional_id, producer_id, epoch, commit,
                                   transaction_version).error

    def end_txn_result(self, transactional_id: str, producer_id: int, epoch: int,
                       commit: bool,
                       transaction_version: int = TRANSACTION_VERSION_1) -> EndResult:
        """EndTxn; `transaction_version` 2 (EndTxn v5) bumps the epoch (module docstring)."""
        if not transactional_id:
            return EndResult(ErrorCode.INVALID_REQUEST)
        meta = self.transactions.get(transactional_id)
        if meta is None:
            return EndResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        error = self._end_txn_epoch_error(meta, producer_id, epoch)
        if error != ErrorCode.NONE:
            return EndResult(error)
        state = meta.state
        if state == TxnState.ONGOING:
            if transaction_version >= TRANSACTION_VERSION_2:
                self._bump_for_end(meta)
            meta.transaction_version = transaction_version
            self._prepare(meta, commit)
            return self._end_answer(meta)
        if state == TxnState.EMPTY and not commit \
                and transaction_version >= TRANSACTION_VERSION_2:
            # transactions v2 (Kafka 4.1+) let a producer abort with nothing open: the epoch
            # is bumped through PrepareAbort / CompleteAbort, no marker to write
            self._bump_for_end(meta)
            meta.transaction_version = transaction_version
            self._prepare(meta, commit)
            return self._end_answer(meta)
        if state == (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT):
            return self._end_answer(meta)  # a retry of a completed EndTxn
        if state == (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT):
            return EndResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        return EndResult(ErrorCode.INVALID_TXN_STATE)

    @staticmethod
    def _end_txn_epoch_error(meta: TransactionMetadata, producer_id: int,
                             epoch: int) -> ErrorCode:
        """Kafka's EndTxn checks: with a v2 transaction, the epoch must be the current one
        for a transaction still open, and the pre-bump one (or, after a producer id
        rotation, the previous id's last epoch) for a retry of a completed or completing
        one."""
        v2 = meta.transaction_version >= TRANSACTION_VERSION_2
        retry_on_overflow = (v2 and producer_id == meta.last_producer_id
                             and epoch == EPOCH_EXHAUSTED and meta.producer_epoch == 0)
        if producer_id != meta.producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if not v2 or meta.state == TxnState.ONGOING or meta.state == TxnState.EMPTY:
            valid = epoch == meta.producer_epoch
        else:
            retry_on_bump = producer_id == meta.producer_id and epoch == meta.producer_epoch - 1
            valid = retry_on_bump or (retry_on_overflow and not meta.state.preparing)
        return ErrorCode.NONE if valid else ErrorCode.PRODUCER_FENCED

    def _bump_for_end(self, meta: TransactionMetadata) -> None:
        """Transactions v2: the epoch the markers carry. An exhausted epoch keeps its value
        for the markers and a new producer id takes over when they are written."""
        if meta.producer_epoch >= EPOCH_EXHAUSTED:
            meta.next_producer_id = self._allocate_producer_id()
        meta.last_producer_epoch = meta.producer_epoch
        meta.producer_epoch += 1

    @staticmethod
    def _end_answer(meta: TransactionMetadata) -> EndResult:
        if meta.next_producer_id != NO_PRODUCER_ID:
            return EndResult(ErrorCode.NONE, meta.next_producer_id, 0)
        return EndResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)

    def _fence_and_abort(self, meta: TransactionMetadata) -> None:
        """Abort the ongoing transaction at a bumped epoch (timeout or a new producer)."""
        meta.producer_epoch += 1
        meta.last_producer_epoch = NO_PRODUCER_EPOCH
        self._prepare(meta, commit=False)

    def _prepare(self, meta: TransactionMetadata, commit: bool) -> None:
        now = self._now()
        meta.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        meta.update_ms = now
        meta.markers.clear()
        meta.marked.clear()
        self._journal(meta)  # before any marker: a restart writes them all again
        if self.marker_delay_ms > 0:
            meta.complete_at_ms = now + self.marker_delay_ms
        else:
            self._send_markers(meta)

    def _send_markers(self, meta: TransactionMetadata) -> None:
        """Kafka's WriteTxnMarkers round, until every partition has its marker: a marker
        counts once it is on the partition's current leader and under its high watermark;
        one that is missing there (not yet written, or lost with a leader change that
        truncated it) is written on the leader if it takes markers now (else retried at the
        next tick). The transaction completes when every partition is done."""
        meta.complete_at_ms = -1
        commit = meta.state == TxnState.PREPARE_COMMIT
        for key in meta.sorted_partitions():
            if key in meta.marked:
                continue
            target = self._partitions(*key)
            if target is None:  # the partition is gone: nothing to mark
                meta.marked.add(key)
                continue
            marker = meta.markers.get(key)
            if marker is None or target.log.batch_at(marker.base_offset) is not marker:
                if not target.writable:
                    continue
                marker = target.log.append_marker(meta.producer_id, meta.producer_epoch,
                                                  COORDINATOR_EPOCH, commit,
                                                  target.leader_epoch, self._now())
                meta.markers[key] = marker
            if target.log.high_watermark > marker.base_offset:
                meta.marked.add(key)
        if len(meta.marked) >= len(meta.partitions):
            self._complete(meta)

    def _complete(self, meta: TransactionMetadata) -> None:
        commit = meta.state == TxnState.PREPARE_COMMIT
        meta.markers.clear()
        meta.marked.clear()
        if meta.groups:
            self.offsets.complete_pending(meta.producer_id, commit)
        meta.state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if meta.next_producer_id != NO_PRODUCER_ID:  # v2: the exhausted id is retired
            self._by_producer.pop(meta.producer_id, None)
            meta.last_producer_id = meta.producer_id
            meta.producer_id, meta.producer_epoch = meta.next_producer_id, 0
            meta.next_producer_id = NO_PRODUCER_ID
            self._by_producer[meta.producer_id] = meta
        meta.partitions.clear()
        meta.groups.clear()
        meta.complete_at_ms = -1
        meta.update_ms = self._now()
        self._journal(meta)

    # -- deadlines --------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """Write delayed markers that are due, abort transactions past their timeout, and
        every cleanup interval forget the expired transactional ids."""
        for meta in list(self.transactions.values()):
            if meta.state.preparing and meta.complete_at_ms <= now_ms:
                self._send_markers(meta)
            elif meta.state == TxnState.ONGOING and meta.start_ms + meta.timeout_ms < now_ms:
                self._fence_and_abort(meta)
        if now_ms >= self.next_cleanup_ms:
            self.next_cleanup_ms = now_ms + self.cleanup_interval_ms
            self.remove_expired(now_ms)

    def remove_expired(self, now_ms: int) -> list[str]:
        """Forget the transactional ids with no transaction in progress (Empty or Complete*)
        and no change for transactional.id.expiration.ms, as Kafka's coordinator does (a
        producer coming back with one gets a new producer id); returns them."""
        gone = [tid for tid, meta in self.transactions.items()
                if meta.state in _EXPIRABLE
                and meta.update_ms <= now_ms - self.id_expiration_ms]
        for tid in gone:
            meta = self.transactions.pop(tid)
            if self._by_producer.get(meta.producer_id) is meta:
                del self._by_producer[meta.producer_id]
            if self.journal is not None:
                self.journal.transaction_removed(tid)
        return gone

    # -- admin ------------------------------------------------------------------------------

    def list_transactions(self, states: set[str], producer_ids: set[int],
                          min_duration_ms: int = -1) -> list[TransactionMetadata]:
        now = self._now()
        out = []
        for meta in self.transactions.values():
            if states and meta.state.value not in states:
                continue
            if producer_ids and meta.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and now - meta.start_ms <= min_duration_ms:
                continue
            out.append(meta)
        return out
