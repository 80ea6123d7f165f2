"""Transactions v2 (KIP-890 part 2) and partition verification (part 1) in the cluster model,
on a ManualClock: the epoch bump at every EndTxn, markers at the bumped epoch, implicit adds
by Produce v12 and TxnOffsetCommit v5, fencing of the old epoch, the producer id rotation on
epoch exhaustion, and the verification errors each Produce version hears.
"""

from __future__ import annotations

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import AppendResult, Cluster, ClusterConfig, ManualClock, PartitionLog
from mockbroker.cluster.producers.txn_coordinator import (
    EPOCH_EXHAUSTED,
    TRANSACTION_VERSION_2,
    ProduceVerification,
    TxnState,
)

TID = "txn-v2"
TIMEOUT = 10_000
V2 = TRANSACTION_VERSION_2
ADD = ProduceVerification.ADD_PARTITION


def _cluster(clock: ManualClock | None = None) -> Cluster:
    c = Cluster(ClusterConfig(brokers=3), clock or ManualClock())
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    c.create_topic("t", 2)
    return c


def _log(c: Cluster, partition: int = 0) -> PartitionLog:
    log = c.log(c.image.topics["t"].topic_id, partition)
    assert log is not None
    return log


def _produce(c: Cluster, pid: int, epoch: int, seq: int, partition: int = 0,
             verification: ProduceVerification = ADD) -> AppendResult:
    leader = c.image.partition("t", partition)
    assert leader is not None
    batch = build_batch([RecordSpec(value=b"v%d" % seq, timestamp=1000)], producer_id=pid,
                        producer_epoch=epoch, base_sequence=seq, transactional=True)
    return c.produce(c.brokers[leader.leader], "t", partition, batch, acks=-1,
                     verification=verification)


def _markers(log: PartitionLog) -> list[tuple[int, int, bool]]:
    """(producer id, producer epoch, commit?) of every marker in the log."""
    out = []
    for stored in log.batches:
        if stored.is_control:
            decoded = decode_batch(stored.data)
            key = decoded.records[0].key
            assert key is not None
            out.append((decoded.producer_id, decoded.producer_epoch, key[3] == 1))
    return out


def _init(c: Cluster) -> tuple[int, int]:
    result = c.transactions.init_producer_id(TID, TIMEOUT)
    assert result.error == ErrorCode.NONE
    return result.producer_id, result.producer_epoch


@pytest.mark.parametrize("commit", [True, False])
def test_every_end_txn_bumps_the_epoch_and_markers_carry_it(commit: bool) -> None:
    c = _cluster()
    txn = c.transactions
    pid, epoch = _init(c)
    assert _produce(c, pid, epoch, 0).ok  # Produce v12: no AddPartitionsToTxn first
    meta = txn.get(TID)
    assert meta is not None and meta.state == TxnState.ONGOING
    assert meta.partitions == {("t", 0)} and meta.transaction_version == V2
    result = txn.end_txn_result(TID, pid, epoch, commit, V2)
    assert (result.error, result.producer_id, result.producer_epoch) \
        == (ErrorCode.NONE, pid, epoch + 1)
    assert _markers(_log(c)) == [(pid, epoch + 1, commit)]
    assert meta.state == (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT)
    # the retry of the same EndTxn (pre-bump epoch) gets the same answer
    again = txn.end_txn_result(TID, pid, epoch, commit, V2)
    assert (again.error, again.producer_epoch) == (ErrorCode.NONE, epoch + 1)
    # the next transaction runs at the bumped epoch, sequences from 0, and bumps again
    assert _produce(c, pid, epoch + 1, 0, partition=1).ok
    assert _produce(c, pid, epoch + 1, 0).ok
    assert txn.end_txn_result(TID, pid, epoch + 1, True, V2).producer_epoch == epoch + 2
    assert _markers(_log(c, 1)) == [(pid, epoch + 2, True)]
    assert _log(c).last_stable_offset == _log(c).high_watermark == 4


def test_a_zombie_on_the_old_epoch_is_fenced_everywhere() -> None:
    c = _cluster()
    txn = c.transactions
    pid, epoch = _init(c)
    assert _produce(c, pid, epoch, 0).ok
    assert txn.end_txn(TID, pid, epoch, True, V2) == ErrorCode.NONE
    end = _log(c).log_end_offset
    for verification in ProduceVerification:  # Produce at any version
        assert _produce(c, pid, epoch, 1, verification=verification).error \
            == ErrorCode.INVALID_PRODUCER_EPOCH
    assert _log(c).log_end_offset == end  # nothing written
    assert txn.add_partitions(TID, pid, epoch, [("t", 1)]) == ErrorCode.PRODUCER_FENCED
    assert txn.check_offset_commit(TID, "g", pid, epoch, add_group=True) \
        == ErrorCode.PRODUCER_FENCED
    # a v2 EndTxn on a completed transaction at its own (bumped) epoch is no retry
    assert txn.end_txn(TID, pid, epoch + 1, True, V2) == ErrorCode.PRODUCER_FENCED
    assert txn.end_txn(TID, pid, epoch - 1, True, V2) == ErrorCode.PRODUCER_FENCED


def test_txn_offset_commit_v5_adds_the_group_implicitly() -> None:
    c = _cluster()
    txn = c.transactions
    pid, epoch = _init(c)
    assert txn.check_offset_commit(TID, "g", pid, epoch) == ErrorCode.INVALID_TXN_STATE
    assert txn.check_offset_commit(TID, "g", pid, epoch,
                                   not_in_transaction=ErrorCode.TRANSACTION_ABORTABLE) \
        == ErrorCode.TRANSACTION_ABORTABLE
    assert txn.check_offset_commit(TID, "g", pid, epoch, add_group=True) == ErrorCode.NONE
    meta = txn.get(TID)
    assert meta is not None and meta.groups == {"g"} and meta.state == TxnState.ONGOING
    c.groups.offsets.add_pending("g", pid, "t", 0, 7, -1, None)
    assert txn.end_txn(TID, pid, epoch, True, V2) == ErrorCode.NONE
    stored = c.groups.offsets.get("g", "t", 0)
    assert stored is not None and stored.offset == 7


def test_epoch_exhaustion_moves_the_id_to_a_new_producer_id() -> None:
    c = _cluster()
    txn = c.transactions
    pid, _ = _init(c)
    meta = txn.get(TID)
    assert meta is not None
    meta.producer_epoch = EPOCH_EXHAUSTED
    assert _produce(c, pid, EPOCH_EXHAUSTED, 0).ok
    result = txn.end_txn_result(TID, pid, EPOCH_EXHAUSTED, True, V2)
    assert result.error == ErrorCode.NONE and result.producer_id != pid
    assert result.producer_epoch == 0
    assert _markers(_log(c)) == [(pid, EPOCH_EXHAUSTED + 1, True)]
    assert (meta.producer_id, meta.producer_epoch) == (result.producer_id, 0)
    retry = txn.end_txn_result(TID, pid, EPOCH_EXHAUSTED, True, V2)  # retry on overflow
    assert (retry.error, retry.producer_id, retry.producer_epoch) \
        == (ErrorCode.NONE, result.producer_id, 0)
    assert _produce(c, result.producer_id, 0, 0).ok
    assert _produce(c, pid, EPOCH_EXHAUSTED, 1).error == ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_v1_end_txn_keeps_the_epoch() -> None:
    c = _cluster()
    txn = c.transactions
    pid, epoch = _init(c)
    assert txn.add_partitions(TID, pid, epoch, [("t", 0)]) == ErrorCode.NONE
    assert _produce(c, pid, epoch, 0, verification=ProduceVerification.DEFAULT_ERROR).ok
    result = txn.end_txn_result(TID, pid, epoch, True)
    assert (result.error, result.producer_id, result.producer_epoch) \
        == (ErrorCode.NONE, pid, epoch)
    assert _markers(_log(c)) == [(pid, epoch, True)]


@pytest.mark.parametrize(("verification", "expected"), [
    (ProduceVerification.DEFAULT_ERROR, ErrorCode.INVALID_TXN_STATE),
    (ProduceVerification.GENERIC_ERROR, ErrorCode.TRANSACTION_ABORTABLE),
])
def test_verification_errors_by_produce_version(verification: ProduceVerification,
                                                expected: ErrorCode) -> None:
    """KIP-890 part 1: a partition outside the transaction, as each version hears it."""
    c = _cluster()
    txn = c.transactions
    pid, epoch = _init(c)
    assert _produce(c, pid, epoch, 0, verification=verification).error == expected
    assert txn.add_partitions(TID, pid, epoch, [("t", 1)]) == ErrorCode.NONE
    assert _produce(c, pid, epoch, 0, verification=verification).error == expected
    assert _produce(c, pid, epoch, 0, partition=1, verification=verification).ok
    assert _log(c).log_end_offset == 0
    unknown = _produce(c, pid + 100, 0, 0, verification=verification)
    assert unknown.error == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert txn.verify_partitions(TID, pid, epoch, [("t", 0), ("t", 1)]) == {
        ("t", 0): ErrorCode.TRANSACTION_ABORTABLE, ("t", 1): ErrorCode.NONE}
    assert txn.verify_partitions(TID, pid, epoch + 1, [("t", 1)]) == {
        ("t", 1): ErrorCode.PRODUCER_FENCED}


def test_verification_while_markers_are_pending_is_retriable() -> None:
    clock = ManualClock()
    c = _cluster(clock)
    txn = c.transactions
    txn.marker_delay_ms = 100
    pid, epoch = _init(c)
    assert _produce(c, pid, epoch, 0).ok
    assert txn.end_txn(TID, pid, epoch, True, V2) == ErrorCode.NONE
    meta = txn.get(TID)
    assert meta is not None and meta.state == TxnState.PREPARE_COMMIT
    # the client already has the bumped epoch; Kafka turns CONCURRENT_TRANSACTIONS into
    # NOT_ENOUGH_REPLICAS, which producers retry
    assert _produce(c, pid, epoch + 1, 0, partition=1).error == ErrorCode.NOT_ENOUGH_REPLICAS
    assert txn.end_txn(TID, pid, epoch, True, V2) == ErrorCode.CONCURRENT_TRANSACTIONS
    clock.advance(101)
    c.tick()
    assert meta.state == TxnState.COMPLETE_COMMIT
    assert _produce(c, pid, epoch + 1, 0, partition=1).ok
