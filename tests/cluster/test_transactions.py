"""Transactions and the idempotent producer in the cluster model, on a ManualClock.

The coordinator is driven directly; batches go through `Cluster.produce` (the only way a
client's data reaches a log), as the leader received them.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import AppendResult, Cluster, ClusterConfig, ManualClock, PartitionLog
from mockbroker.cluster.producers.txn_coordinator import EPOCH_EXHAUSTED, TxnState

TID = "txn-1"
TIMEOUT = 10_000


def _cluster() -> tuple[Cluster, ManualClock]:
    clock = ManualClock()
    c = Cluster(ClusterConfig(brokers=3), clock)
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    c.create_topic("t", 2)
    return c, clock


def _log(c: Cluster, partition: int = 0) -> PartitionLog:
    log = c.log(c.image.topics["t"].topic_id, partition)
    assert log is not None
    return log


def _produce(c: Cluster, pid: int, epoch: int, seq: int, n: int = 1, partition: int = 0,
             transactional: bool = True) -> AppendResult:
    leader = c.image.partition("t", partition)
    assert leader is not None
    batch = build_batch([RecordSpec(value=b"v%d" % (seq + i), timestamp=1000 + i)
                         for i in range(n)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, transactional=transactional)
    return c.produce(c.brokers[leader.leader], "t", partition, batch, acks=-1)


def _init(c: Cluster, tid: str = TID, **kwargs: Any) -> tuple[int, int]:
    result = c.transactions.init_producer_id(tid, TIMEOUT, **kwargs)
    assert result.error == ErrorCode.NONE, result
    return result.producer_id, result.producer_epoch


def _controls(log: PartitionLog) -> list[tuple[int, int, bool]]:
    """(offset, epoch, commit?) of every marker in the log."""
    out = []
    for stored in log.batches:
        if stored.is_control:
            decoded = decode_batch(stored.data)
            key = decoded.records[0].key
            assert key is not None
            out.append((stored.base_offset, decoded.producer_epoch, key[3] == 1))
    return out


# -- InitProducerId -------------------------------------------------------------------------

def test_init_producer_id_bumps_epoch_and_validates_input():
    c, _ = _cluster()
    pid, epoch = _init(c)
    assert epoch == 0
    assert _init(c) == (pid, 1)  # same id, next epoch: the first producer is fenced
    assert _init(c, "other")[0] != pid
    txn = c.transactions
    assert txn.init_producer_id(TID, 900_001).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert txn.init_producer_id(TID, 0).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert txn.init_producer_id("", TIMEOUT).error == ErrorCode.INVALID_REQUEST
    assert txn.init_producer_id(TID, TIMEOUT, expected_producer_id=pid).error \
        == ErrorCode.INVALID_REQUEST  # id without epoch


def test_kip360_recovery_bump_retry_and_fencing():
    c, _ = _cluster()
    pid, _ = _init(c)
    # the current producer recovers by asking for a bump with its own id and epoch
    assert _init(c, expected_producer_id=pid, expected_epoch=0) == (pid, 1)
    # a retry of that request (previous epoch) gets the current epoch, no second bump
    assert _init(c, expected_producer_id=pid, expected_epoch=0) == (pid, 1)
    # a new producer takes over; the old one's recovery attempt is fenced
    assert _init(c) == (pid, 2)
    old = c.transactions.init_producer_id(TID, TIMEOUT, expected_producer_id=pid,
                                          expected_epoch=1)
    assert old.error == ErrorCode.PRODUCER_FENCED
    wrong = c.transactions.init_producer_id(TID, TIMEOUT, expected_producer_id=pid + 100,
                                            expected_epoch=2)
    assert wrong.error == ErrorCode.PRODUCER_FENCED


def test_exhausted_epoch_rotates_the_producer_id():
    c, _ = _cluster()
    pid, _ = _init(c)
    meta = c.transactions.get(TID)
    assert meta is not None
    meta.producer_epoch = EPOCH_EXHAUSTED
    new_pid, epoch = _init(c)
    assert new_pid != pid and epoch == 0
    assert c.transactions.for_producer(new_pid) is meta
    assert c.transactions.for_producer(pid) is None


# -- commit, abort, LSO, aborted index ------------------------------------------------------

def test_commit_writes_markers_and_releases_the_lso():
    c, _ = _cluster()
    pid, epoch = _init(c)
    txn = c.transactions
    assert txn.add_partitions(TID, pid, epoch, [("t", 0), ("t", 1)]) == ErrorCode.NONE
    log0, log1 = _log(c, 0), _log(c, 1)
    log0.append(build_batch([RecordSpec(value=b"plain")]), 0)  # offset 0, not transactional
    assert _produce(c, pid, epoch, 0, 3).base_offset == 1
    assert log0.last_stable_offset == 1 and log0.high_watermark == 4
    assert _produce(c, pid, epoch, 3, 2).base_offset == 4  # same txn: LSO stays at 1
    assert log0.last_stable_offset == 1
    assert log1.last_stable_offset == log1.high_watermark == 0  # added, nothing written
    assert txn.end_txn(TID, pid, epoch, commit=True) == ErrorCode.NONE
    assert txn.get(TID).state == TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]
    assert _controls(log0) == [(6, epoch, True)]
    assert _controls(log1) == [(0, epoch, True)]  # every partition of the txn gets one
    assert log0.last_stable_offset == log0.high_watermark == 7
    assert log0.aborted_index == [] and log1.aborted_index == []
    assert log0.producer_states[pid].current_txn_first_offset is None
    # the next transaction at the same epoch continues the sequence
    assert txn.add_partitions(TID, pid, epoch, [("t", 0)]) == ErrorCode.NONE
    assert _produce(c, pid, epoch, 5).error == ErrorCode.NONE
    assert log0.last_stable_offset == 7


def test_abort_fills_the_aborted_index():
    c, _ = _cluster()
    pid, epoch = _init(c)
    txn = c.transactions
    txn.add_partitions(TID, pid, epoch, [("t", 0), ("t", 1)])
    _produce(c, pid, epoch, 0, 2)
    assert txn.end_txn(TID, pid, epoch, commit=False) == ErrorCode.NONE
    log0, log1 = _log(c, 0), _log(c, 1)
    assert _controls(log0) == [(2, epoch, False)]
    assert log0.aborted_index == [(pid, 0, 2)]
    assert log1.aborted_index == [(pid, 0, 0)]  # Kafka indexes an empty aborted txn too
    assert log0.last_stable_offset == 3
    assert c.aborted_transactions(log0, 0, 3) == [{"producer_id": pid, "first_offset": 0}]
    assert c.aborted_transactions(log0, 3, 3) == []


def test_lso_is_the_oldest_open_transaction_across_producers():
    c, _ = _cluster()
    a, ea = _init(c, "a")
    b, eb = _init(c, "b")
    txn = c.transactions
    txn.add_partitions("a", a, ea, [("t", 0)])
    txn.add_partitions("b", b, eb, [("t", 0)])
    _produce(c, a, ea, 0)  # offset 0
    _produce(c, b, eb, 0)  # offset 1
    log = _log(c)
    assert log.last_stable_offset == 0
    txn.end_txn("b", b, eb, commit=True)  # marker at 2; a still open
    assert log.last_stable_offset == 0
    txn.end_txn("a", a, ea, commit=False)  # marker at 3
    assert log.last_stable_offset == log.high_watermark == 4
    assert log.aborted_index == [(a, 0, 3)]


def test_end_txn_state_errors():
    c, _ = _cluster()
    pid, epoch = _init(c)
    txn = c.transactions
    assert txn.end_txn(TID, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE  # Empty
    txn.add_partitions(TID, pid, epoch, [("t", 0)])
    assert txn.end_txn(TID, pid + 1, epoch, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert txn.end_txn("nope", pid, epoch, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert txn.end_txn(TID, pid, epoch + 1, True) == ErrorCode.PRODUCER_FENCED
    assert txn.end_txn(TID, pid, epoch, True) == ErrorCode.NONE
    assert txn.end_txn(TID, pid, epoch, True) == ErrorCode.NONE  # a retry is fine
    assert txn.end_txn(TID, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE


def test_concurrent_transactions_while_markers_are_pending():
    c, clock = _cluster()
    txn = c.transactions
    txn.marker_delay_ms = 500
    pid, epoch = _init(c)
    txn.add_partitions(TID, pid, epoch, [("t", 0)])
    _produce(c, pid, epoch, 0)
    assert txn.end_txn(TID, pid, epoch, True) == ErrorCode.NONE
    assert txn.get(TID).state == TxnState.PREPARE_COMMIT  # type: ignore[union-attr]
    assert txn.end_txn(TID, pid, epoch, True) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert txn.end_txn(TID, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE
    assert txn.add_partitions(TID, pid, epoch, [("t", 1)]) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert txn.add_offsets(TID, pid, epoch, "g") == ErrorCode.CONCURRENT_TRANSACTIONS
    assert txn.init_producer_id(TID, TIMEOUT).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert _log(c).last_stable_offset == 0  # no marker yet
    clock.advance(499)
    c.tick()
    assert _controls(_log(c)) == []
    clock.advance(1)
    c.tick()
    assert _controls(_log(c)) == [(1, epoch, True)]
    assert _log(c).last_stable_offset == 2
    assert txn.add_partitions(TID, pid, epoch, [("t", 1)]) == ErrorCode.NONE


# -- timeouts and zombies -------------------------------------------------------------------

def test_timeout_aborts_and_fences_the_zombie():
    c, clock = _cluster()
    pid, epoch = _init(c)
    txn = c.transactions
    txn.add_partitions(TID, pid, epoch, [("t", 0)])
    _produce(c, pid, epoch, 0, 2)
    clock.advance(TIMEOUT)
    c.tick()
    assert txn.get(TID).state == TxnState.ONGOING  # type: ignore[union-attr]
    clock.advance(1)
    c.tick()
    meta = txn.get(TID)
    assert meta is not None
    assert meta.state == TxnState.COMPLETE_ABORT and meta.producer_epoch == epoch + 1
    log = _log(c)
    assert _controls(log) == [(2, epoch + 1, False)]  # the marker carries the bumped epoch
    assert log.aborted_index == [(pid, 0, 2)]
    assert log.last_stable_offset == 3
    # the zombie: its requests and its writes are fenced
    assert txn.end_txn(TID, pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    assert txn.add_partitions(TID, pid, epoch, [("t", 0)]) == ErrorCode.PRODUCER_FENCED
    assert _produce(c, pid, epoch, 2).error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert _produce(c, pid, epoch, 0, transactional=False).error \
        == ErrorCode.INVALID_PRODUCER_EPOCH  # the partition itself knows the new epoch
    fenced = txn.init_producer_id(TID, TIMEOUT, expected_producer_id=pid,
                                  expected_epoch=epoch)
    assert fenced.error == ErrorCode.PRODUCER_FENCED


def test_second_producer_aborts_the_ongoing_transaction_and_fences_the_first():
    c, _ = _cluster()
    pid, epoch = _init(c)
    txn = c.transactions
    txn.add_partitions(TID, pid, epoch, [("t", 0)])
    _produce(c, pid, epoch, 0, 3)
    first_try = txn.init_producer_id(TID, TIMEOUT)
    assert first_try.error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert _log(c).aborted_index == [(pid, 0, 3)]
    assert _init(c) == (pid, epoch + 2)  # the retry bumps again
    assert _produce(c, pid, epoch, 3).error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert txn.end_txn(TID, pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    # the new producer starts a clean transaction at sequence 0
    assert txn.add_partitions(TID, pid, epoch + 2, [("t", 0)]) == ErrorCode.NONE
    assert _produce(c, pid, epoch + 2, 0).error == ErrorCode.NONE


# -- produce-side transaction checks --------------------------------------------------------

def test_transactional_produce_needs_the_partition_in_the_transaction():
    c, _ = _cluster()
    pid, epoch = _init(c)
    txn = c.transactions
    assert _produce(c, pid, epoch, 0).error == ErrorCode.INVALID_TXN_STATE  # Empty
    txn.add_partitions(TID, pid, epoch, [("t", 0)])
    assert _produce(c, pid, epoch, 0, partition=1).error == ErrorCode.INVALID_TXN_STATE
    assert _produce(c, 9999, 0, 0).error == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert _produce(c, pid, epoch, 0).error == ErrorCode.NONE
    # a non-transactional write from a producer with an open transaction here
    assert _produce(c, pid, epoch, 1, transactional=False).error \
        == ErrorCode.INVALID_TXN_STATE


# -- idempotence ----------------------------------------------------------------------------

def test_duplicates_return_the_original_offset_and_are_stored_once():
    c, _ = _cluster()
    pid = c.allocate_producer_id()
    first = _produce(c, pid, 0, 0, 3, transactional=False)
    second = _produce(c, pid, 0, 3, 2, transactional=False)
    assert (first.base_offset, second.base_offset) == (0, 3)
    again = _produce(c, pid, 0, 0, 3, transactional=False)
    assert again.error == ErrorCode.NONE and again.base_offset == 0
    assert _produce(c, pid, 0, 3, 2, transactional=False).base_offset == 3
    log = _log(c)
    assert log.log_end_offset == 5 and len(log.batches) == 2


def test_sequence_gaps_and_stale_epochs():
    c, _ = _cluster()
    pid = c.allocate_producer_id()
    assert _produce(c, pid, 0, 0, 2, transactional=False).error == ErrorCode.NONE
    gap = _produce(c, pid, 0, 5, transactional=False)
    assert gap.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert _produce(c, pid, 1, 3, transactional=False).error \
        == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # a new epoch starts at 0
    assert _produce(c, pid, 1, 0, transactional=False).error == ErrorCode.NONE
    assert _produce(c, pid, 0, 2, transactional=False).error \
        == ErrorCode.INVALID_PRODUCER_EPOCH
    # an unknown producer is accepted at any sequence (KIP-360)
    other = c.allocate_producer_id()
    assert _produce(c, other, 0, 42, transactional=False).error == ErrorCode.NONE
    assert _log(c).log_end_offset == 4


# -- pending group offsets ------------------------------------------------------------------

class FakeOffsets:
    """Stands in for the group offsets store's pending-offset interface."""

    def __init__(self) -> None:
        self.pending: dict[int, list[tuple[str, str, int, int]]] = {}
        self.visible: list[tuple[str, str, int, int]] = []

    def add_pending(self, group: str, producer_id: int, topic: str, partition: int,
                    offset: int, leader_epoch: int, metadata: str | None) -> None:
        self.pending.setdefault(producer_id, []).append((group, topic, partition, offset))

    def complete_pending(self, producer_id: int, commit: bool) -> None:
        done = self.pending.pop(producer_id, [])
        if commit:
            self.visible.extend(done)

    def has_pending(self, group: str, topic: str, partition: int) -> bool:
        return any(e[:3] == (group, topic, partition) for v in self.pending.values() for e in v)


@pytest.mark.parametrize("commit", [True, False])
def test_group_offsets_complete_with_the_transaction(commit: bool, monkeypatch):
    c, _ = _cluster()
    store = FakeOffsets()
    monkeypatch.setattr(c.transactions, "offsets", store)
    pid, epoch = _init(c)
    txn = c.transactions
    assert txn.check_offset_commit(TID, "g", pid, epoch) == ErrorCode.INVALID_TXN_STATE
    assert txn.add_offsets(TID, pid, epoch, "g") == ErrorCode.NONE
    assert txn.check_offset_commit(TID, "g", pid, epoch) == ErrorCode.NONE
    assert txn.check_offset_commit(TID, "g", pid, epoch - 1) == ErrorCode.PRODUCER_FENCED
    store.add_pending("g", pid, "t", 0, 42, 0, None)
    assert store.has_pending("g", "t", 0)
    assert txn.end_txn(TID, pid, epoch, commit) == ErrorCode.NONE
    assert not store.has_pending("g", "t", 0)
    assert store.visible == ([("g", "t", 0, 42)] if commit else [])


def test_list_transactions_filters():
    c, clock = _cluster()
    a, ea = _init(c, "a")
    _init(c, "b")
    c.transactions.add_partitions("a", a, ea, [("t", 0)])
    clock.advance(100)
    txn = c.transactions
    assert {m.transactional_id for m in txn.list_transactions(set(), set())} == {"a", "b"}
    assert [m.transactional_id for m in txn.list_transactions({"Ongoing"}, set())] == ["a"]
    assert [m.transactional_id for m in txn.list_transactions(set(), {a})] == ["a"]
    assert txn.list_transactions({"Ongoing"}, set(), 100) == []
    assert len(txn.list_transactions({"Ongoing"}, set(), 99)) == 1
