"""Produced batches are stored where they arrived when they can be (partition.stored_form).

A batch that comes as a view of a writable request frame (the connection receives each frame
into a bytearray of its own) of IN_PLACE_MIN_BYTES or more is patched in place (base offset,
partition leader epoch, and for LogAppendTime the timestamp type, max timestamp and CRC) and
kept as a read-only view of that frame; read-only bytes and small batches are copied. Either
way the stored batch reads, compares and hashes as the same bytes.
"""

from __future__ import annotations

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import TIMESTAMP_TYPE_MASK, BatchHeader, verify_crc
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock, PartitionLog
from mockbroker.cluster.log.partition import IN_PLACE_MIN_BYTES, StoredBatch, stored_form

NOW = 1_700_000_000_000


def _cluster() -> Cluster:
    c = Cluster(ClusterConfig(brokers=1), ManualClock(NOW))
    c.start_broker(0, "127.0.0.1", 9092)
    c.create_topic("t", 1, 1)
    return c


def _log(c: Cluster) -> PartitionLog:
    log = c.log(c.image.topics["t"].topic_id, 0)
    assert log is not None
    return log


def _frame_with(batch: bytes) -> tuple[bytearray, memoryview]:
    """A request frame around the batch, and the batch as the decoder gives it: a view."""
    frame = bytearray(b"request header" + batch + b"trailer")
    return frame, memoryview(frame)[14:14 + len(batch)]


def _big_batch(**kwargs: object) -> bytes:
    specs = [RecordSpec(key=b"k", value=bytes([i]) * 100, timestamp=1000 + i)
             for i in range(60)]
    batch = bytes(build_batch(specs, **kwargs))  # type: ignore[arg-type]
    assert len(batch) >= IN_PLACE_MIN_BYTES
    return batch


def _produce(c: Cluster, records: bytes | memoryview) -> None:
    result = c.produce(c.brokers[0], "t", 0, records, acks=1)
    assert result.error == ErrorCode.NONE


def test_a_batch_in_a_writable_frame_is_patched_and_kept_in_place() -> None:
    c = _cluster()
    _produce(c, _big_batch())  # read-only bytes: copied
    frame, view = _frame_with(_big_batch())
    _produce(c, view)
    stored = _log(c).batches[1]
    assert type(stored.data) is memoryview and stored.data.readonly
    assert stored.data.obj is frame  # no copy: the frame's own bytes
    header = BatchHeader.parse(stored.data)
    assert (header.base_offset, stored.base_offset) == (60, 60)
    assert frame[14:22] == (60).to_bytes(8, "big")  # patched where it lies
    assert verify_crc(stored.data)
    assert [r.offset for r in decode_batch(stored.data).records] == list(range(60, 120))
    copied = _log(c).batches[0]
    assert type(copied.data) is bytes
    assert bytes(_log(c).read(60, 1 << 20)[0]) == bytes(stored.data)
    twin = StoredBatch(stored.base_offset, stored.last_offset, stored.max_timestamp,
                       bytes(stored.data), stored.producer_id)
    assert twin == stored and hash(twin) == hash(stored)  # a view compares as its bytes


def test_log_append_time_is_stamped_in_place_with_the_crc_redone() -> None:
    c = _cluster()
    c.set_configs([(2, "t", "message.timestamp.type", "LogAppendTime")])  # 2: a topic
    frame, view = _frame_with(_big_batch())
    _produce(c, view)
    stored = _log(c).batches[0]
    assert stored.data.obj is frame  # type: ignore[union-attr]
    header = BatchHeader.parse(stored.data)
    assert header.max_timestamp == NOW == stored.max_timestamp
    assert header.attributes & TIMESTAMP_TYPE_MASK
    assert verify_crc(stored.data)
    assert {r.timestamp for r in decode_batch(stored.data).records} == {NOW}


def test_read_only_and_small_batches_are_copied() -> None:
    small = bytes(build_batch([RecordSpec(value=b"v")]))
    assert len(small) < IN_PLACE_MIN_BYTES
    for batch in (_big_batch(), small):
        frame, view = _frame_with(batch)
        before = bytes(frame)
        readonly = memoryview(bytes(batch))
        for given in (readonly, view) if batch is small else (readonly,):
            data = stored_form(given, 7, 3)
            assert type(data) is bytes
            assert BatchHeader.parse(data).base_offset == 7
            assert BatchHeader.parse(data).partition_leader_epoch == 3
        assert bytes(frame) == before  # the caller's buffer is left alone
    data = stored_form(bytearray(small), 9, 1, log_append_time_ms=NOW)
    assert type(data) is bytes and BatchHeader.parse(data).max_timestamp == NOW
    assert verify_crc(data)
