"""The transaction coordinator's state survives a restart on the data directory.

The model only, on a ManualClock: one Cluster runs transactions on a directory and is left
as a killed process leaves it (its files closed, nothing else done), then a second Cluster
is built on the same directory. As Kafka's coordinator reloads __transaction_state: a
transactional id keeps its producer id and epoch (InitProducerId bumps it, fencing the
zombie), an Ongoing transaction stays open until its producer ends it or its timeout aborts
it, and one in PrepareCommit or PrepareAbort (EndTxn answered, markers not all written)
writes its markers and completes, with its transactional offsets.
"""

from __future__ import annotations

from pathlib import Path

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock, PartitionLog
from mockbroker.cluster.persistence.data_dir import TRANSACTIONS_LOG, read_frames
from mockbroker.cluster.producers.txn_coordinator import TRANSACTION_VERSION_2, TxnState

TID = "txn-1"
TIMEOUT = 60_000
LAG_MS = 10_000
START_MS = ManualClock().now_ms()  # near the wall time the batches are stamped with


def _start(data_dir: Path, clock: ManualClock | None = None, min_isr: int = 2,
           topic: bool = True) -> Cluster:
    c = Cluster(ClusterConfig(brokers=3, data_dir=str(data_dir), min_insync_replicas=min_isr,
                              replica_lag_time_max_ms=LAG_MS),
                clock or ManualClock(START_MS))
    for broker in range(3):
        c.start_broker(broker, "127.0.0.1", 9092 + broker)
    if topic:
        c.create_topic("t", 1, 3)
    return c


def _crash(c: Cluster) -> None:
    """What a SIGKILL leaves: the files as written so far (only the descriptors close)."""
    c.close_storage()


def _leader(c: Cluster) -> int:
    part = c.image.partition("t", 0)
    assert part is not None
    return part.leader


def _produce(c: Cluster, pid: int, epoch: int, seq: int, value: bytes,
             acks: int = -1) -> ErrorCode:
    batch = build_batch([RecordSpec(value=value)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, transactional=True)
    return c.produce(c.brokers[_leader(c)], "t", 0, batch, acks=acks).error


def _log(c: Cluster, broker: int | None = None) -> PartitionLog:
    replica_set = c.replicas("t", 0)
    assert replica_set is not None
    return replica_set.logs[_leader(c) if broker is None else broker]


def _committed_reads(log: PartitionLog) -> list[bytes | None]:
    """What a read_committed consumer of this replica gets."""
    out = []
    for stored in log.batches:
        if stored.is_control or stored.base_offset >= log.last_stable_offset:
            continue
        if any(pid == stored.producer_id and first <= stored.base_offset <= last
               for pid, first, last in log.aborted_index):
            continue
        out.extend(r.value for r in decode_batch(stored.data).records)
    return out


def _open_transaction(c: Cluster, value: bytes = b"v") -> tuple[int, int]:
    init = c.transactions.init_producer_id(TID, TIMEOUT)
    pid, epoch = init.producer_id, init.producer_epoch
    assert c.transactions.add_partitions(TID, pid, epoch, [("t", 0)]) == ErrorCode.NONE
    assert _produce(c, pid, epoch, 0, value) == ErrorCode.NONE
    return pid, epoch


def _stall_markers(c: Cluster, clock: ManualClock, pid: int, epoch: int) -> int:
    """Take a follower out of the ISR of a min.insync.replicas=3 partition (it stops
    fetching, the transaction writes one more value with acks=1 and the follower falls
    behind for longer than the lag allowed), so that no marker can be written (Kafka's
    WriteTxnMarkers gets NOT_ENOUGH_REPLICAS and retries)."""
    laggard = next(b for b in (0, 1, 2) if b != _leader(c))
    c.replication.pause(broker_id=laggard)
    assert _produce(c, pid, epoch, 1, b"more", acks=1) == ErrorCode.NONE
    clock.advance(LAG_MS + 1)
    c.tick()
    part = c.image.partition("t", 0)
    assert part is not None and laggard not in part.isr
    return laggard


def test_a_transactional_id_keeps_its_producer_id_and_the_zombie_is_fenced(
        tmp_path: Path) -> None:
    first = _start(tmp_path)
    init = first.transactions.init_producer_id(TID, TIMEOUT)
    _crash(first)
    second = _start(tmp_path, topic=False)
    meta = second.transactions.get(TID)
    assert meta is not None and meta.producer_id == init.producer_id
    assert meta.producer_epoch == init.producer_epoch
    again = second.transactions.init_producer_id(TID, TIMEOUT)
    assert (again.error, again.producer_id, again.producer_epoch) == (
        ErrorCode.NONE, init.producer_id, init.producer_epoch + 1)
    # the producer of the previous incarnation is fenced
    assert second.transactions.add_partitions(
        TID, init.producer_id, init.producer_epoch, [("t", 0)]) == ErrorCode.PRODUCER_FENCED
    _crash(second)


def test_producer_ids_are_not_handed_out_again_after_a_restart(tmp_path: Path) -> None:
    first = _start(tmp_path)
    before = {first.allocate_producer_id() for _ in range(5)}
    before.add(first.transactions.init_producer_id(TID, TIMEOUT).producer_id)
    _crash(first)
    second = _start(tmp_path, topic=False)
    after = {second.allocate_producer_id() for _ in range(5)}
    after.add(second.transactions.init_producer_id("other", TIMEOUT).producer_id)
    assert min(after) > max(before)
    _crash(second)


def test_a_prepared_commit_completes_after_a_restart(tmp_path: Path) -> None:
    """EndTxn(commit) was answered but no marker could be written: the restarted
    coordinator writes them (it used to abort the transaction the client was told is
    committed)."""
    clock = ManualClock(START_MS)
    first = _start(tmp_path, clock, min_isr=3)
    pid, epoch = _open_transaction(first, b"committed")
    _stall_markers(first, clock, pid, epoch)
    assert first.transactions.end_txn(TID, pid, epoch, commit=True) == ErrorCode.NONE
    meta = first.transactions.get(TID)
    assert meta is not None and meta.state == TxnState.PREPARE_COMMIT
    assert not any(b.is_control for b in _log(first).batches)
    _crash(first)

    second = _start(tmp_path, clock, min_isr=3, topic=False)
    meta = second.transactions.get(TID)
    assert meta is not None and meta.state == TxnState.PREPARE_COMMIT
    assert _committed_reads(_log(second)) == []  # still open: the LSO holds it back
    clock.advance(1)
    second.tick()
    assert meta.state == TxnState.COMPLETE_COMMIT
    for broker in range(3):
        assert _committed_reads(_log(second, broker)) == [b"committed", b"more"], broker
    # a retry of the EndTxn the crash may have swallowed gets its answer
    assert second.transactions.end_txn(TID, pid, epoch, commit=True) == ErrorCode.NONE
    _crash(second)
    third = _start(tmp_path, clock, topic=False)
    completed = third.transactions.get(TID)
    assert completed is not None and completed.state == TxnState.COMPLETE_COMMIT
    assert _committed_reads(_log(third)) == [b"committed", b"more"]
    _crash(third)


def test_a_prepared_abort_completes_after_a_restart(tmp_path: Path) -> None:
    clock = ManualClock(START_MS)
    first = _start(tmp_path, clock, min_isr=3)
    pid, epoch = _open_transaction(first, b"aborted")
    _stall_markers(first, clock, pid, epoch)
    assert first.transactions.end_txn(TID, pid, epoch, commit=False) == ErrorCode.NONE
    _crash(first)
    second = _start(tmp_path, clock, min_isr=3, topic=False)
    clock.advance(1)
    second.tick()
    meta = second.transactions.get(TID)
    assert meta is not None and meta.state == TxnState.COMPLETE_ABORT
    log = _log(second)
    assert log.last_stable_offset == log.log_end_offset
    assert _committed_reads(log) == []
    _crash(second)


def test_an_ongoing_transaction_stays_open_and_its_producer_commits_it(
        tmp_path: Path) -> None:
    clock = ManualClock(START_MS)
    first = _start(tmp_path, clock)
    pid, epoch = _open_transaction(first, b"before")
    _crash(first)
    second = _start(tmp_path, clock, topic=False)
    meta = second.transactions.get(TID)
    assert meta is not None and meta.state == TxnState.ONGOING
    assert meta.partitions == {("t", 0)}
    # the producer lived through the restart and goes on with its transaction
    assert _produce(second, pid, epoch, 1, b"after") == ErrorCode.NONE
    assert second.transactions.end_txn(TID, pid, epoch, commit=True) == ErrorCode.NONE
    assert meta.state == TxnState.COMPLETE_COMMIT
    assert _committed_reads(_log(second)) == [b"before", b"after"]
    _crash(second)


def test_an_ongoing_transaction_is_aborted_by_its_timeout_after_a_restart(
        tmp_path: Path) -> None:
    clock = ManualClock(START_MS)
    first = _start(tmp_path, clock)
    pid, epoch = _open_transaction(first, b"abandoned")
    _crash(first)
    second = _start(tmp_path, clock, topic=False)
    meta = second.transactions.get(TID)
    assert meta is not None and meta.state == TxnState.ONGOING
    clock.advance(TIMEOUT + 1)
    second.tick()
    assert meta.state == TxnState.COMPLETE_ABORT
    assert meta.producer_epoch == epoch + 1  # the zombie is fenced
    assert _produce(second, pid, epoch, 1, b"zombie") == ErrorCode.INVALID_PRODUCER_EPOCH
    log = _log(second)
    assert log.last_stable_offset == log.log_end_offset
    assert _committed_reads(log) == []
    _crash(second)


def test_transactional_offsets_of_a_prepared_commit_are_committed_after_a_restart(
        tmp_path: Path) -> None:
    clock = ManualClock(START_MS)
    first = _start(tmp_path, clock, min_isr=3)
    pid, epoch = _open_transaction(first)
    txn = first.transactions
    assert txn.add_offsets(TID, pid, epoch, "readers") == ErrorCode.NONE
    first.groups.offsets.add_pending("readers", pid, "t", 0, 42)
    _stall_markers(first, clock, pid, epoch)
    assert txn.end_txn(TID, pid, epoch, commit=True) == ErrorCode.NONE
    assert first.groups.offsets.get("readers", "t", 0) is None  # not yet: markers pending
    _crash(first)
    second = _start(tmp_path, clock, min_isr=3, topic=False)
    offsets = second.groups.offsets
    assert offsets.has_pending("readers", "t", 0)
    clock.advance(1)
    second.tick()
    committed = offsets.get("readers", "t", 0)
    assert committed is not None and committed.offset == 42
    assert not offsets.has_pending("readers", "t", 0)
    _crash(second)
    third = _start(tmp_path, clock, topic=False)
    committed = third.groups.offsets.get("readers", "t", 0)
    assert committed is not None and committed.offset == 42
    _crash(third)


def test_transactional_offsets_of_an_ongoing_transaction_wait_for_its_end(
        tmp_path: Path) -> None:
    clock = ManualClock(START_MS)
    first = _start(tmp_path, clock)
    pid, epoch = _open_transaction(first)
    assert first.transactions.add_offsets(TID, pid, epoch, "readers") == ErrorCode.NONE
    first.groups.offsets.add_pending("readers", pid, "t", 0, 7)
    first.groups.offsets.add_pending("readers", 999_999, "t", 0, 8)  # no transaction's
    _crash(first)
    second = _start(tmp_path, clock, topic=False)
    offsets = second.groups.offsets
    assert offsets.has_pending("readers", "t", 0)
    assert second.transactions.end_txn(TID, pid, epoch, commit=True) == ErrorCode.NONE
    committed = offsets.get("readers", "t", 0)
    assert committed is not None and committed.offset == 7
    assert not offsets.has_pending("readers", "t", 0)  # the orphan was dropped at load
    _crash(second)


def test_an_aborted_transactions_offsets_stay_uncommitted_after_a_restart(
        tmp_path: Path) -> None:
    first = _start(tmp_path)
    offsets = first.groups.offsets
    offsets.commit("readers", "t", 0, 3)
    pid, epoch = _open_transaction(first)
    assert first.transactions.add_offsets(TID, pid, epoch, "readers") == ErrorCode.NONE
    offsets.add_pending("readers", pid, "t", 0, 9)
    assert first.transactions.end_txn(TID, pid, epoch, commit=False) == ErrorCode.NONE
    _crash(first)
    second = _start(tmp_path, topic=False)
    committed = second.groups.offsets.get("readers", "t", 0)
    assert committed is not None and committed.offset == 3
    assert not second.groups.offsets.has_pending("readers", "t", 0)
    _crash(second)


def test_a_v2_prepared_commit_answers_the_retried_end_txn_after_a_restart(
        tmp_path: Path) -> None:
    """Transactions v2: EndTxn bumped the epoch when it prepared; the client's retry with
    the epoch it had gets the bumped one after the restart completes the commit."""
    clock = ManualClock(START_MS)
    first = _start(tmp_path, clock, min_isr=3)
    txn = first.transactions
    init = txn.init_producer_id(TID, TIMEOUT)
    pid, epoch = init.producer_id, init.producer_epoch
    assert txn.add_partitions(TID, pid, epoch, [("t", 0)],
                              transaction_version=TRANSACTION_VERSION_2) == ErrorCode.NONE
    assert _produce(first, pid, epoch, 0, b"v2") == ErrorCode.NONE
    _stall_markers(first, clock, pid, epoch)
    result = txn.end_txn_result(TID, pid, epoch, True, TRANSACTION_VERSION_2)
    assert (result.error, result.producer_epoch) == (ErrorCode.NONE, epoch + 1)
    _crash(first)
    second = _start(tmp_path, clock, min_isr=3, topic=False)
    clock.advance(1)
    second.tick()
    retried = second.transactions.end_txn_result(TID, pid, epoch, True, TRANSACTION_VERSION_2)
    assert (retried.error, retried.producer_id, retried.producer_epoch) == (
        ErrorCode.NONE, pid, epoch + 1)
    assert _committed_reads(_log(second)) == [b"v2", b"more"]
    _crash(second)


def test_the_journal_is_compacted_at_start_up_and_emptied_by_reset(tmp_path: Path) -> None:
    first = _start(tmp_path)
    for round_ in range(3):
        pid, epoch = _open_transaction(first, f"v{round_}".encode())
        assert first.transactions.end_txn(TID, pid, epoch, commit=True) == ErrorCode.NONE
    first.transactions.init_producer_id("other", TIMEOUT)
    _crash(first)
    payloads, _ = read_frames((tmp_path / TRANSACTIONS_LOG).read_bytes())
    assert len(payloads) > 2
    second = _start(tmp_path, topic=False)
    payloads, _ = read_frames((tmp_path / TRANSACTIONS_LOG).read_bytes())
    assert len(payloads) == 2  # one frame per transactional id
    second.reset()
    assert (tmp_path / TRANSACTIONS_LOG).read_bytes() == b""
    _crash(second)
    third = _start(tmp_path, topic=False)
    assert third.transactions.get(TID) is None
    _crash(third)


def test_a_torn_journal_tail_loses_only_the_last_change(tmp_path: Path) -> None:
    first = _start(tmp_path)
    init = first.transactions.init_producer_id(TID, TIMEOUT)
    first.transactions.init_producer_id(TID, TIMEOUT)  # epoch + 1, to be torn off
    _crash(first)
    path = tmp_path / TRANSACTIONS_LOG
    path.write_bytes(path.read_bytes()[:-3])
    second = _start(tmp_path, topic=False)
    meta = second.transactions.get(TID)
    assert meta is not None
    assert (meta.producer_id, meta.producer_epoch) == (init.producer_id, init.producer_epoch)
    _crash(second)


def test_an_idle_transactional_id_expires_and_stays_gone_after_a_restart(
        tmp_path: Path) -> None:
    """transactional.id.expiration.ms: an id with no transaction in progress and no change
    for that long is forgotten at the next cleanup (Kafka's
    transaction.remove.expired.transaction.cleanup.interval.ms); the journal records it, so
    a restart does not bring it back, and its producer starts over with a new producer id.
    An id with a transaction in progress is kept."""
    day = 86_400_000
    clock = ManualClock(START_MS)
    c = Cluster(ClusterConfig(brokers=3, data_dir=str(tmp_path), broker_properties={
        "transactional.id.expiration.ms": str(day),
        "transaction.remove.expired.transaction.cleanup.interval.ms": "60000"}), clock)
    for broker in range(3):
        c.start_broker(broker, "127.0.0.1", 9092 + broker)
    c.create_topic("t", 1, 3)
    txn = c.transactions
    idle = txn.init_producer_id("idle", TIMEOUT)
    busy = txn.init_producer_id("busy", TIMEOUT)
    clock.advance(day - 60_000)
    c.tick()
    assert set(txn.transactions) == {"idle", "busy"}  # not idle for a day yet
    assert txn.add_partitions("busy", busy.producer_id, busy.producer_epoch,
                              [("t", 0)]) == ErrorCode.NONE
    clock.advance(120_000)
    c.tick()
    assert set(txn.transactions) == {"busy"}
    assert txn.for_producer(idle.producer_id) is None
    _crash(c)
    again = _start(tmp_path, ManualClock(clock.now_ms()), topic=False)
    assert set(again.transactions.transactions) == {"busy"}
    fresh = again.transactions.init_producer_id("idle", TIMEOUT)
    assert fresh.error == ErrorCode.NONE and fresh.producer_id != idle.producer_id
