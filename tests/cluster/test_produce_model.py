"""Cluster.produce: every decision about a produced batch, in the model, on a ManualClock.

No handler and no socket: the receiving broker is a BrokerNode, the records are the bytes a
client would send, and the answer is an AppendResult.
"""

from __future__ import annotations

import struct

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import compute_crc
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import AppendResult, Cluster, ClusterConfig, ManualClock, PartitionLog


def _cluster(**config: object) -> tuple[Cluster, ManualClock]:
    clock = ManualClock(1_700_000_000_000)
    c = Cluster(ClusterConfig(brokers=3, **config), clock)  # type: ignore[arg-type]
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    c.create_topic("t", 1, 3)
    return c, clock


def _log(c: Cluster) -> PartitionLog:
    log = c.log(c.image.topics["t"].topic_id, 0)
    assert log is not None
    return log


def _batch(*values: bytes, **kwargs: object) -> bytes:
    return bytes(build_batch([RecordSpec(key=b"k", value=v, timestamp=1000 + i)
                              for i, v in enumerate(values)], **kwargs))  # type: ignore[arg-type]


def _produce(c: Cluster, records: bytes, broker: int | None = None, acks: int = -1,
             epoch: int = -1) -> AppendResult:
    part = c.image.partition("t", 0)
    assert part is not None
    node = c.brokers[part.leader if broker is None else broker]
    return c.produce(node, "t", 0, records, acks=acks, current_leader_epoch=epoch)


def test_append_assigns_offsets_and_patches_the_leader_epoch() -> None:
    c, _ = _cluster()
    first = _produce(c, _batch(b"a", b"b"))
    second = _produce(c, _batch(b"c"))
    assert (first.error, first.base_offset, first.log_start_offset) == (ErrorCode.NONE, 0, 0)
    assert (second.error, second.base_offset) == (ErrorCode.NONE, 2)
    c.elect_leader("t", 0)
    third = _produce(c, _batch(b"d"))
    assert third.base_offset == 3
    stored = [decode_batch(b.data) for b in _log(c).batches]
    assert [(d.base_offset, d.header.partition_leader_epoch) for d in stored] == [
        (0, 0), (2, 0), (3, 1)]
    assert [r.value for d in stored for r in d.records] == [b"a", b"b", b"c", b"d"]


def test_leadership_and_fencing_come_first() -> None:
    c, _ = _cluster()
    part = c.image.partition("t", 0)
    assert part is not None
    follower = next(b for b in part.replicas if b != part.leader)
    assert _produce(c, _batch(b"x"), broker=follower).error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _produce(c, _batch(b"x"), epoch=part.leader_epoch + 1).error \
        == ErrorCode.UNKNOWN_LEADER_EPOCH
    c.elect_leader("t", 0, part.leader)  # same leader, epoch + 1
    assert _produce(c, _batch(b"x"), epoch=part.leader_epoch).error \
        == ErrorCode.FENCED_LEADER_EPOCH
    assert _log(c).log_end_offset == 0


def test_acks_all_needs_min_insync_replicas() -> None:
    c, _ = _cluster(min_insync_replicas=2)
    part = c.image.partition("t", 0)
    assert part is not None
    c.set_isr("t", 0, [part.leader])
    refused = _produce(c, _batch(b"x"), acks=-1)
    assert refused.error == ErrorCode.NOT_ENOUGH_REPLICAS
    # Kafka's NotEnoughReplicasException comes without a message in the answer, with the
    # log start offset
    assert (refused.message, refused.log_start_offset) == (None, 0)
    assert _produce(c, _batch(b"x"), acks=1).error == ErrorCode.NONE  # acks=1 does not care
    assert _log(c).log_end_offset == 1


def _flip_last_value_byte(batch: bytes) -> bytes:
    out = bytearray(batch)
    out[-2] ^= 0xFF  # the value's last byte (the header count follows), CRC left as it was
    return bytes(out)


def _with_attributes(batch: bytes, attributes: int) -> bytes:
    out = bytearray(batch)
    struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">I", out, 17, compute_crc(out))
    return bytes(out)


@pytest.mark.parametrize(("records", "error"), [
    (b"", ErrorCode.INVALID_RECORD),
    (_batch(b"a") + _batch(b"b"), ErrorCode.INVALID_RECORD),
    (_flip_last_value_byte(_batch(b"a")), ErrorCode.CORRUPT_MESSAGE),
    (_with_attributes(_batch(b"a"), 0x20), ErrorCode.INVALID_RECORD),
], ids=["no-batch", "two-batches", "crc-mismatch", "control-batch"])
def test_batch_format_errors_write_nothing(records: bytes, error: ErrorCode) -> None:
    c, _ = _cluster()
    assert _produce(c, records).error == error
    assert _log(c).log_end_offset == 0 and not _log(c).batches


def test_max_message_bytes_is_per_topic() -> None:
    c, _ = _cluster()
    c.set_configs([(2, "t", "max.message.bytes", "100")])
    refused = _produce(c, _batch(b"x" * 200))
    assert refused.error == ErrorCode.MESSAGE_TOO_LARGE
    assert _produce(c, _batch(b"x")).error == ErrorCode.NONE


def test_log_append_time_stamps_the_batch() -> None:
    c, clock = _cluster()
    c.set_configs([(2, "t", "message.timestamp.type", "LogAppendTime")])
    result = _produce(c, _batch(b"x"))
    assert result.log_append_time_ms == clock.now_ms()
    assert _log(c).batches[0].max_timestamp == clock.now_ms()


def test_idempotent_duplicates_and_sequence_gaps() -> None:
    c, _ = _cluster()
    pid = c.allocate_producer_id()
    first = _produce(c, _batch(b"a", b"b", producer_id=pid, producer_epoch=0, base_sequence=0))
    again = _produce(c, _batch(b"a", b"b", producer_id=pid, producer_epoch=0, base_sequence=0))
    gap = _produce(c, _batch(b"c", producer_id=pid, producer_epoch=0, base_sequence=5))
    assert (first.error, first.base_offset) == (ErrorCode.NONE, 0)
    assert (again.error, again.base_offset) == (ErrorCode.NONE, 0)  # acknowledged, not stored
    assert gap.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert _log(c).log_end_offset == 2


def test_a_transactional_batch_needs_the_partition_in_the_transaction() -> None:
    c, _ = _cluster()
    init = c.transactions.init_producer_id("tx", 10_000)
    pid, epoch = init.producer_id, init.producer_epoch
    batch = _batch(b"a", producer_id=pid, producer_epoch=epoch, base_sequence=0,
                   transactional=True)
    assert _produce(c, batch).error == ErrorCode.INVALID_TXN_STATE
    assert c.transactions.add_partitions("tx", pid, epoch, [("t", 0)]) == ErrorCode.NONE
    assert _produce(c, batch).error == ErrorCode.NONE
    log = _log(c)
    assert (log.high_watermark, log.last_stable_offset) == (1, 0)  # the open transaction
    assert c.transactions.end_txn("tx", pid, epoch, commit=True) == ErrorCode.NONE
    assert (log.high_watermark, log.last_stable_offset) == (2, 2)  # data + COMMIT marker


def test_a_stopped_leader_appends_nothing_after_its_leadership_moved() -> None:
    """stop-broker moves the leadership of a broker in one loop turn, but requests already
    read from its sockets are still handled while they close, on its frozen image ("I lead,
    epoch 0"). Such a late append must not be acknowledged: its records would be stamped
    with the old epoch and lost when the broker's replica truncates on its return."""
    c, _ = _cluster()
    old = c.image.partition("t", 0)
    assert old is not None
    assert _produce(c, _batch(b"a", b"b")).ok
    old_node = c.brokers[old.leader]
    c.fence_broker(old.leader)
    new = c.image.partition("t", 0)
    assert new is not None and new.leader != old.leader and new.leader_epoch == 1
    late = _produce(c, _batch(b"late"), broker=old.leader, epoch=0)
    assert late.error == ErrorCode.NOT_LEADER_OR_FOLLOWER and old_node.up is False
    appended = _produce(c, _batch(b"c"))
    assert appended.ok and appended.base_offset == 2
    stamped = [(d.base_offset, d.header.partition_leader_epoch)
               for d in (decode_batch(b.data) for b in _log(c).batches)]
    assert stamped == [(0, 0), (2, 1)]
