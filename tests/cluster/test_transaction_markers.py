"""Transaction markers under leader changes, in the model on a ManualClock.

Kafka's coordinator writes each COMMIT/ABORT marker with acks=all (WriteTxnMarkers) and
stays in PrepareCommit/PrepareAbort until every partition's leader has it replicated: a
marker lost with a leader change is written again on the new leader. Truncation rebuilds the
producer state from the log, so a follower that loses a marker sees the transaction open
again, as the leader it follows does.
"""

from __future__ import annotations

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import Cluster, PartitionLog
from mockbroker.cluster.producers.txn_coordinator import TxnState
from tests.cluster.test_replication import LAG_MS, _cluster, _leader

TID = "txn-1"
TIMEOUT = 60_000
def _logs(c: Cluster) -> dict[int, PartitionLog]:
    replica_set = c.replicas("t", 0)
    assert replica_set is not None
    return replica_set.logs


def _produce(c: Cluster, pid: int, epoch: int, seq: int, value: bytes) -> None:
    batch = build_batch([RecordSpec(value=value)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, transactional=True)
    result = c.produce(c.brokers[_leader(c)], "t", 0, batch, acks=1)
    assert result.error == ErrorCode.NONE, result


def _committed_reads(log: PartitionLog) -> list[bytes | None]:
    """What a read_committed consumer of this replica gets: values below the last stable
    offset, minus aborted transactions and control batches."""
    aborted = {(pid, first, last) for pid, first, last in log.aborted_index}
    out = []
    for stored in log.batches:
        if stored.is_control or stored.base_offset >= log.last_stable_offset:
            continue
        if any(pid == stored.producer_id and first <= stored.base_offset <= last
               for pid, first, last in aborted):
            continue
        out.extend(r.value for r in decode_batch(stored.data).records)
    return out


def test_a_commit_marker_lost_with_a_leader_change_is_written_again() -> None:
    c, clock = _cluster(min_isr=2)
    txn = c.transactions
    init = txn.init_producer_id(TID, TIMEOUT)
    pid, epoch = init.producer_id, init.producer_epoch
    assert txn.add_partitions(TID, pid, epoch, [("t", 0)]) == ErrorCode.NONE
    _produce(c, pid, epoch, 0, b"committed")
    leader = _leader(c)
    laggard = next(b for b in (0, 1, 2) if b != leader)
    c.replication.pause(broker_id=laggard)  # it holds the high watermark back
    assert txn.end_txn(TID, pid, epoch, commit=True) == ErrorCode.NONE
    logs = _logs(c)
    assert [b.is_control for b in logs[leader].batches] == [False, True]
    assert [b.is_control for b in logs[laggard].batches] == [False]
    # the marker is not acknowledged yet: the transaction is still being completed
    meta = txn.get(TID)
    assert meta is not None and meta.state == TxnState.PREPARE_COMMIT
    assert txn.add_partitions(TID, pid, epoch, [("t", 0)]) == ErrorCode.CONCURRENT_TRANSACTIONS
    # the replica that held the high watermark back is elected (it is still in the ISR):
    # the others truncate the marker it never had
    c.elect_leader("t", 0, laggard)
    assert [b.is_control for b in logs[leader].batches] == [False]
    assert meta.state == TxnState.PREPARE_COMMIT
    c.replication.resume(broker_id=laggard)
    c.tick()
    assert meta.state == TxnState.COMPLETE_COMMIT
    # every replica holds the marker the new leader wrote, and reads the committed value
    for broker, log in _logs(c).items():
        assert [b.is_control for b in log.batches] == [False, True], broker
        assert log.producer_states[pid].current_txn_first_offset is None, broker
        assert _committed_reads(log) == [b"committed"], broker
    # the producer's next transaction is its own: aborting it hides only its value
    assert txn.add_partitions(TID, pid, epoch, [("t", 0)]) == ErrorCode.NONE
    _produce(c, pid, epoch, 1, b"aborted")
    assert txn.end_txn(TID, pid, epoch, commit=False) == ErrorCode.NONE
    clock.advance(1)
    c.tick()
    for broker, log in _logs(c).items():
        assert _committed_reads(log) == [b"committed"], broker


def test_markers_wait_for_min_insync_replicas_and_the_high_watermark() -> None:
    """With the ISR below min.insync.replicas the marker cannot be written (Kafka's
    WriteTxnMarkers answers NOT_ENOUGH_REPLICAS and the coordinator retries); the
    transaction completes once the ISR is back and the marker replicated."""
    c, clock = _cluster(min_isr=3)
    txn = c.transactions
    init = txn.init_producer_id(TID, TIMEOUT)
    pid, epoch = init.producer_id, init.producer_epoch
    assert txn.add_partitions(TID, pid, epoch, [("t", 0)]) == ErrorCode.NONE
    _produce(c, pid, epoch, 0, b"v")
    leader = _leader(c)
    laggard = next(b for b in (0, 1, 2) if b != leader)
    c.replication.pause(broker_id=laggard)
    _produce(c, pid, epoch, 1, b"w")
    clock.advance(LAG_MS + 1)
    c.tick()
    part = c.image.partition("t", 0)
    assert part is not None and laggard not in part.isr
    assert txn.end_txn(TID, pid, epoch, commit=True) == ErrorCode.NONE
    meta = txn.get(TID)
    assert meta is not None and meta.state == TxnState.PREPARE_COMMIT
    assert not any(b.is_control for b in _logs(c)[leader].batches)
    c.replication.resume(broker_id=laggard)
    c.tick()
    assert meta.state == TxnState.COMPLETE_COMMIT
    for broker, log in _logs(c).items():
        assert [b.is_control for b in log.batches] == [False, False, True], broker
        assert _committed_reads(log) == [b"v", b"w"], broker


def test_truncating_a_marker_reopens_the_transaction_on_that_replica() -> None:
    c, _ = _cluster(min_isr=1)
    log = _logs(c)[_leader(c)]
    txn = c.transactions
    init = txn.init_producer_id(TID, TIMEOUT)
    pid, epoch = init.producer_id, init.producer_epoch
    assert txn.add_partitions(TID, pid, epoch, [("t", 0)]) == ErrorCode.NONE
    _produce(c, pid, epoch, 0, b"a")
    assert txn.end_txn(TID, pid, epoch, commit=False) == ErrorCode.NONE
    assert log.aborted_index == [(pid, 0, 1)] and log.last_stable_offset == 2
    log.truncate_to(1)  # the abort marker is gone: the transaction is open again here
    assert log.producer_states[pid].current_txn_first_offset == 0
    assert log.aborted_index == []
    assert log.last_stable_offset == 0
