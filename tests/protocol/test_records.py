"""Record batches: varints, build/decode round trips, CRC, patching, splitting, compression,
and batches encoded by real clients (kafka-python, aiokafka, confluent-kafka/librdkafka)."""

from __future__ import annotations

import gzip
import importlib
import os
import socket
import struct
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import cramjam
import pytest
from kafka_protocol_codec import record_batches as rb
from kafka_protocol_codec import records as r
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.framing import FrameReader

CODECS = [c.value for c in r.Compression]
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
T0 = 1_700_000_000_000
Expected = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def sample_specs(n: int = 40) -> list[r.RecordSpec]:
    """Records with null keys/values/header values, unicode header keys, timestamps out of order."""
    return [
        r.RecordSpec(
            value=None if i == 3 else (b"value-%d-" % i) * (i % 7 + 1),
            key=None if i % 3 == 0 else b"key-%d" % i,
            headers=[] if i % 4 == 0 else [("h\u00e9", b"x" * i), r.Header("null", None)],
            timestamp=T0 + (i * 37) % 11 - 5,
        )
        for i in range(n)
    ]


def expected_of(specs: list[r.RecordSpec], base_offset: int) -> list[Expected]:
    out: list[Expected] = []
    for i, spec in enumerate(specs):
        headers = [(h.key, h.value) if isinstance(h, r.Header) else h for h in spec.headers]
        assert spec.timestamp is not None
        out.append((base_offset + i, spec.timestamp, spec.key, spec.value, headers))
    return out


def actual_of(records: list[r.Record]) -> list[Expected]:
    return [
        (rec.offset, rec.timestamp, rec.key, rec.value, [(h.key, h.value) for h in rec.headers])
        for rec in records
    ]


def decode_blob(blob: bytes | bytearray | memoryview) -> tuple[list[rb.BatchHeader], list[Expected]]:
    headers: list[rb.BatchHeader] = []
    records: list[r.Record] = []
    for view in rb.split_batches(blob):
        assert rb.peek_magic(view) == 2
        assert rb.verify_crc(view)
        decoded = r.decode_batch(view)
        headers.append(decoded.header)
        records.extend(decoded.records)
    return headers, actual_of(records)


# --- varints -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 2**31 - 1, -(2**31), 300, -300])
def test_varint_round_trip(value: int) -> None:
    data = r.encode_varint(value)
    assert r.read_varint(data) == (value, len(data))
    assert r.read_varint(b"\xff" + data + b"\x00", 1) == (value, 1 + len(data))


@pytest.mark.parametrize("value", [0, 1, -1, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63)])
def test_varlong_round_trip(value: int) -> None:
    data = r.encode_varlong(value)
    assert r.read_varlong(data) == (value, len(data))
    assert len(data) <= 10


def test_known_varint_encodings() -> None:
    assert r.encode_varint(0) == b"\x00"
    assert r.encode_varint(-1) == b"\x01"
    assert r.encode_varint(1) == b"\x02"
    assert r.encode_varint(-(2**31)) == b"\xff\xff\xff\xff\x0f"
    assert r.encode_unsigned_varint(300) == b"\xac\x02"
    assert r.read_unsigned_varint(b"\xac\x02") == (300, 2)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x80",
        b"\xff\xff\xff\xff",
        b"\x80\x80\x80\x80\x80\x00",  # 6 bytes: too long for a varint
        b"\xff\xff\xff\xff\x1f",  # 5 bytes but 33 bits
    ],
)
def test_bad_varints(data: bytes) -> None:
    with pytest.raises(CodecError):
        r.read_varint(data)
    with pytest.raises(CodecError):
        r.read_unsigned_varint(data)


def test_bad_varlongs() -> None:
    with pytest.raises(CodecError):
        r.read_varlong(b"\x80" * 10 + b"\x00")  # 11 bytes
    with pytest.raises(CodecError):
        r.read_varlong(b"\xff" * 9 + b"\x02")  # 65 bits
    assert r.read_varlong(b"\xff" * 9 + b"\x01")[0] == -(2**63)
    with pytest.raises(CodecError):
        r.encode_varint(2**31)
    with pytest.raises(CodecError):
        r.encode_varlong(2**63)


# --- build / decode ----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(codec: int) -> None:
    specs = sample_specs()
    batch = r.build_batch(
        specs,
        base_offset=1000,
        compression=codec,
        producer_id=77,
        producer_epoch=3,
        base_sequence=12,
        transactional=True,
        partition_leader_epoch=9,
        base_timestamp=T0,
    )
    header = rb.BatchHeader.parse(batch)
    assert header.magic == 2 and header.compression == codec
    assert header.total_size == len(batch)
    assert (header.base_offset, header.last_offset_delta, header.last_offset) == (1000, 39, 1039)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 3, 12)
    assert header.partition_leader_epoch == 9 and header.record_count == 40
    assert header.is_transactional and not header.is_control and header.timestamp_type == 0
    assert header.base_timestamp == T0
    assert header.max_timestamp == max(s.timestamp for s in specs if s.timestamp is not None)
    assert rb.verify_crc(batch) and header.crc == rb.compute_crc(batch) == rb.crc32c(batch[21:])
    decoded = r.decode_batch(batch)
    assert decoded.header == header and decoded.base_offset == 1000 and decoded.is_transactional
    assert actual_of(decoded.records) == expected_of(specs, 1000)
    assert actual_of(list(r.iter_records(memoryview(batch)))) == expected_of(specs, 1000)


def test_build_defaults_and_gaps() -> None:
    records = [
        r.Record(10, T0 + 5, b"k", b"v", [r.Header("a", b"b")]),
        r.Record(13, T0, None, b"", []),
    ]
    batch = r.build_batch(records, base_offset=10)
    decoded = r.decode_batch(batch)
    assert decoded.records == records  # compacted-style offset gap preserved
    header = decoded.header
    assert (header.last_offset_delta, header.base_timestamp, header.max_timestamp) == (
        3,
        T0 + 5,
        T0 + 5,
    )
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    one = r.decode_batch(r.build_batch([r.RecordSpec(value=b"x")]))
    assert one.records[0].timestamp == one.header.base_timestamp > T0


def test_build_rejects_bad_input() -> None:
    with pytest.raises(CodecError):
        r.build_batch([])
    with pytest.raises(CodecError):
        r.build_batch([r.RecordSpec(offset_delta=1), r.RecordSpec(offset_delta=1)])
    with pytest.raises(CodecError):
        r.build_batch([r.RecordSpec()], producer_epoch=40000)
    with pytest.raises(CodecError):
        r.build_batch([r.RecordSpec()], compression=5)
    with pytest.raises(CodecError):
        r.build_batch([r.RecordSpec(headers=[("\ud800", None)])])


def test_crc_tamper() -> None:
    batch = bytearray(r.build_batch(sample_specs(), base_timestamp=T0))
    batch[-1] ^= 0x01
    assert not rb.verify_crc(batch)
    with pytest.raises(rb.CrcMismatchError):
        r.decode_batch(batch)
    assert isinstance(rb.CrcMismatchError("x"), CodecError)


def test_patch_batch_keeps_crc() -> None:
    batch = r.build_batch(sample_specs(), compression=r.Compression.LZ4, base_timestamp=T0)
    patched = rb.patch_batch(memoryview(batch), 5000, 42)
    assert rb.BatchHeader.parse(batch).base_offset == 0  # the input is untouched
    assert rb.verify_crc(patched) and patched[12:] != batch[12:] and patched[16:] == batch[16:]
    decoded = r.decode_batch(patched)
    assert (decoded.header.base_offset, decoded.header.partition_leader_epoch) == (5000, 42)
    assert [rec.offset for rec in decoded.records] == list(range(5000, 5040))
    blob = bytearray(batch + batch)
    rb.patch_batch_in_place(blob, 7, 1, offset=len(batch))
    assert [rb.BatchHeader.parse(v).base_offset for v in rb.split_batches(blob)] == [0, 7]
    with pytest.raises(CodecError):
        rb.patch_batch(batch[:60], 0, 0)


def test_log_append_time_patch() -> None:
    specs = sample_specs(5)
    batch = r.build_batch(specs, compression=r.Compression.GZIP, base_timestamp=T0)
    patched = rb.patch_max_timestamp_log_append(batch, T0 + 99999)
    header = rb.BatchHeader.parse(patched)
    assert header.timestamp_type == r.TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == T0 + 99999 and header.base_timestamp == T0
    assert header.attributes == rb.BatchHeader.parse(batch).attributes | 0x08
    assert rb.verify_crc(patched) and header.crc != rb.BatchHeader.parse(batch).crc
    decoded = r.decode_batch(patched)
    assert [rec.timestamp for rec in decoded.records] == [T0 + 99999] * 5
    aio = importlib.import_module("aiokafka.record.default_records")
    theirs = aio.DefaultRecordBatch(bytes(patched))
    assert theirs.validate_crc() and theirs.timestamp_type == 1
    assert [m.timestamp for m in theirs] == [T0 + 99999] * 5


def test_build_log_append_time() -> None:
    batch = r.build_batch(sample_specs(3), timestamp_type=1, base_timestamp=T0 + 1)
    decoded = r.decode_batch(batch)
    assert decoded.timestamp_type == 1 and decoded.header.max_timestamp == T0 + 1
    assert {rec.timestamp for rec in decoded.records} == {T0 + 1}


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch(commit: bool) -> None:
    batch = r.build_control_batch(
        commit=commit,
        producer_id=4000,
        producer_epoch=7,
        coordinator_epoch=12,
        base_offset=88,
        timestamp_ms=T0,
        partition_leader_epoch=2,
    )
    decoded = r.decode_batch(batch)
    header = decoded.header
    assert header.is_control and header.is_transactional and header.record_count == 1
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4000, 7, -1)
    assert (header.base_offset, header.partition_leader_epoch) == (88, 2)
    (record,) = decoded.records
    assert (record.offset, record.timestamp) == (88, T0)
    marker = r.decode_control_record(record)
    assert marker == r.ControlRecord(int(commit), 0, 12)
    assert marker.type == (r.ControlRecordType.COMMIT if commit else r.ControlRecordType.ABORT)
    kp = importlib.import_module("kafka.record.default_records")
    (theirs,) = list(kp.DefaultRecordBatch(bytearray(batch)))
    assert theirs.commit is commit and theirs.abort is not commit and theirs.version == 0
    aio = importlib.import_module("aiokafka.record.default_records")
    aio_batch = aio.DefaultRecordBatch(bytes(batch))
    assert aio_batch.is_control_batch and aio_batch.validate_crc()


def test_control_record_errors() -> None:
    with pytest.raises(CodecError):
        r.decode_control_record(r.Record(0, 0, None, None, []))
    with pytest.raises(CodecError):
        r.decode_control_record(r.Record(0, 0, b"\x00\x00\x00\x01", b"\x00", []))
    with pytest.raises(CodecError):
        r.decode_control_record(r.Record(0, 0, b"\xff\xff\x00\x01", b"\x00" * 6, []))
    other = r.decode_control_record(r.Record(0, 0, b"\x00\x00\x00\x02", None, []))
    assert other == r.ControlRecord(2, 0, -1)  # e.g. a KRaft LeaderChange record


# --- header, split, legacy ---------------------------------------------------------------------


def test_batch_header_errors() -> None:
    batch = r.build_batch(sample_specs(2))
    assert rb.BatchHeader.parse(b"junk" + batch, 4).record_count == 2
    with pytest.raises(CodecError):
        rb.BatchHeader.parse(batch[:60])
    with pytest.raises(CodecError):
        rb.BatchHeader.parse(batch[:-1])  # batchLength points past the data
    with pytest.raises(CodecError):
        rb.BatchHeader.parse(batch, -1)
    bad = bytearray(batch)
    bad[8:12] = struct.pack(">i", 48)  # shorter than a v2 header
    with pytest.raises(CodecError):
        rb.BatchHeader.parse(bad)
    with pytest.raises(CodecError):
        r.decode_batch(batch + b"\x00")  # trailing bytes: not exactly one batch


def test_split_batches() -> None:
    batches = [
        r.build_batch(sample_specs(3), compression=c, base_offset=10 * c, base_timestamp=T0)
        for c in CODECS
    ]
    blob = b"".join(batches)
    views = rb.split_batches(blob)
    assert [bytes(v) for v in views] == batches
    assert all(v.obj is blob for v in views)  # views, not copies
    assert [r.decode_batch(v).base_offset for v in views] == [0, 10, 20, 30, 40]
    for cut in (1, 11, 12, 60, len(batches[-1]) - 1):
        with pytest.raises(CodecError):
            rb.split_batches(blob[:-cut])
        assert [bytes(v) for v in rb.split_batches(blob[:-cut], allow_partial=True)] == batches[:-1]
    assert rb.split_batches(b"") == []
    negative = struct.pack(">qi", 0, -5) + b"\x00" * 60
    for allow in (False, True):
        with pytest.raises(CodecError):
            rb.split_batches(negative, allow_partial=allow)


def legacy_message_set(magic: int, codec: int = 0) -> bytes:
    legacy = importlib.import_module("kafka.record.legacy_records")
    builder = legacy.LegacyRecordBatchBuilder(
        magic=magic, compression_type=codec, batch_size=1 << 20
    )
    for i in range(3):
        builder.append(i, timestamp=T0 + i if magic else None, key=b"k", value=b"v%d" % i)
    return bytes(builder.build())


@pytest.mark.parametrize(("magic", "codec"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_legacy_message_sets_are_detectable(magic: int, codec: int) -> None:
    legacy = legacy_message_set(magic, codec)
    v2 = r.build_batch(sample_specs(2))
    entries = rb.split_batches(v2 + legacy)
    assert [rb.peek_magic(e) for e in entries] == [2] + [magic] * (1 if codec else 3)
    assert rb.peek_magic(v2 + legacy, len(v2)) == magic
    for entry in entries[1:]:
        with pytest.raises(CodecError):
            r.decode_batch(entry)
    with pytest.raises(CodecError):
        rb.peek_magic(legacy[:16])


# --- compression -------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("size", [0, 1, 100, 65535, 65536, 65537, 300_000])
def test_compression_round_trip(codec: int, size: int) -> None:
    for data in (os.urandom(size), bytes(size), (b"abc" * size)[:size]):
        packed = r.compress(codec, data)
        assert r.decompress(codec, packed) == data
        assert r.decompress(codec, memoryview(packed), max_size=size) == data


def test_snappy_xerial_and_raw() -> None:
    body = b"".join(bytes([i % 251]) * 200 for i in range(500))  # 100 KB: several xerial blocks
    xerial = r.compress(r.Compression.SNAPPY, body)
    assert xerial.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    raw = bytes(cramjam.snappy.compress_raw(body))
    assert r.decompress(2, xerial) == r.decompress(2, raw) == body
    # A whole batch whose body is raw snappy (as librdkafka sends) decodes too.
    plain = r.build_batch(sample_specs(), base_timestamp=T0)
    recompressed = bytearray(plain[:61]) + cramjam.snappy.compress_raw(plain[61:])
    recompressed[8:12] = struct.pack(">i", len(recompressed) - 12)
    recompressed[21:23] = struct.pack(">h", 2)
    recompressed[17:21] = struct.pack(">I", rb.compute_crc(recompressed))
    assert actual_of(r.decode_batch(recompressed).records) == expected_of(sample_specs(), 0)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_is_bounded(codec: int) -> None:
    packed = r.compress(codec, bytes(4 << 20))
    assert len(packed) < 1 << 20
    with pytest.raises(CodecError, match="exceed"):
        r.decompress(codec, packed, max_size=(1 << 20))
    assert len(r.decompress(codec, packed, max_size=4 << 20)) == 4 << 20
    batch = r.build_batch([r.RecordSpec(value=bytes(2 << 20))], compression=codec)
    with pytest.raises(CodecError):
        r.decode_batch(batch, max_decompressed_size=1 << 20)


def test_decompression_rejects_lies_and_garbage() -> None:
    with pytest.raises(CodecError):  # raw snappy claiming 4 GiB from 6 bytes
        r.decompress(2, b"\xff\xff\xff\xff\x0f\x00")
    with pytest.raises(CodecError):  # xerial block length past the end
        r.decompress(2, b"\x82SNAPPY\x00" + bytes(8) + struct.pack(">i", 100) + b"x")
    with pytest.raises(CodecError):
        r.decompress(1, gzip.compress(b"abc") + b"trailing")
    assert r.decompress(1, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"
    with pytest.raises(CodecError):
        r.decompress(1, gzip.compress(b"abc")[:-3])
    for codec in (1, 2, 3, 4):
        with pytest.raises(CodecError):
            r.decompress(codec, b"")
        with pytest.raises(CodecError):
            r.decompress(codec, b"\x00" * 40)
        with pytest.raises(CodecError):
            r.decompress(codec, r.compress(codec, b"hello" * 1000)[:-2])
    with pytest.raises(CodecError):
        r.decompress(9, b"")


# --- batches encoded by real clients -----------------------------------------------------------

RECORDS_FOR_CLIENTS = [
    (
        T0 + i,
        None if i % 5 == 0 else b"key-%d" % i,
        None if i == 7 else b"value %d " % i * 40,
        [] if i % 4 == 0 else [("trace", b"t%d" % i), ("empty", b""), ("none", None)],
    )
    for i in range(30)
]


def expected_for_clients(base_offset: int = 0) -> list[Expected]:
    return [
        (base_offset + i, ts, key, value, list(headers))
        for i, (ts, key, value, headers) in enumerate(RECORDS_FOR_CLIENTS)
    ]


@pytest.fixture
def kafka_python_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give kafka-python its optional codec libraries if they are missing.

    kafka-python's own batch builder (record layout, CRC, xerial framing, lz4/zstd calls) runs
    unchanged; only the compression primitives of python-snappy, lz4 and zstandard, which are
    not installed here, are stood in for by cramjam.
    """
    kc = importlib.import_module("kafka.codec")
    kdr = importlib.import_module("kafka.record.default_records")
    if not kc.has_snappy():
        fake_snappy = SimpleNamespace(
            compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
            decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
        )
        monkeypatch.setattr(kc, "snappy", fake_snappy)
    if not kc.has_lz4():

        def lz4_encode(payload: bytes) -> bytes:  # what lz4.frame.compress(block_linked=False) does
            compressor = cramjam.lz4.Compressor(block_linked=False)
            compressor.compress(bytes(payload))
            return bytes(compressor.finish())

        monkeypatch.setattr(kc, "lz4", SimpleNamespace())
        monkeypatch.setattr(kdr, "lz4_encode", lz4_encode)
    if not kc.has_zstd():

        class ZstdCompressor:
            def compress(self, payload: bytes) -> bytes:
                return bytes(cramjam.zstd.compress(payload))

        monkeypatch.setattr(kc, "zstd", SimpleNamespace(ZstdCompressor=ZstdCompressor))


@pytest.mark.clients
@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_builder(codec: int) -> None:
    kdr = importlib.import_module("kafka.record.default_records")
    builder = kdr.DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    builder.set_producer_state(
        producer_id=31, producer_epoch=2, base_sequence=100, is_transactional=True
    )
    for offset, (ts, key, value, headers) in enumerate(RECORDS_FOR_CLIENTS):
        assert builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    blob = bytes(builder.build())
    (header,), records = decode_blob(blob)
    assert records == expected_for_clients()
    assert header.compression == codec and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (31, 2, 100)
    assert (header.last_offset_delta, header.record_count) == (29, 30)


def aiokafka_builders() -> list[Any]:
    aio = importlib.import_module("aiokafka.record.default_records")
    return [aio.DefaultRecordBatchBuilder, aio._DefaultRecordBatchBuilderPy]


@pytest.mark.clients
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("which", ["cython", "python"])
def test_aiokafka_builder(codec: int, which: str) -> None:
    builder_cls = aiokafka_builders()[0 if which == "cython" else 1]
    builder = builder_cls(2, codec, 0, 55, 1, 0, 1 << 20)
    for offset, (ts, key, value, headers) in enumerate(RECORDS_FOR_CLIENTS):
        assert builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    (header,), records = decode_blob(bytes(builder.build()))
    assert records == expected_for_clients()
    assert header.compression == codec and not header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (55, 1, 0)


@pytest.mark.clients
@pytest.mark.parametrize("codec", CODECS)
def test_clients_read_our_batches(codec: int, kafka_python_codecs: None) -> None:
    specs = [
        r.RecordSpec(value=value, key=key, headers=headers, timestamp=ts)
        for ts, key, value, headers in RECORDS_FOR_CLIENTS
    ]
    batch = r.build_batch(specs, base_offset=500, compression=codec)
    aio = importlib.import_module("aiokafka.record.default_records")
    theirs = aio.DefaultRecordBatch(batch)
    assert theirs.validate_crc()
    got = [(m.offset, m.timestamp, m.key, m.value, list(m.headers)) for m in theirs]
    assert got == expected_for_clients(500)
    if codec != r.Compression.ZSTD:  # kafka-python's zstd reader needs python-zstandard itself
        kdr = importlib.import_module("kafka.record.default_records")
        if codec == r.Compression.LZ4 and kdr.lz4_decode is None:
            return
        kp_batch = kdr.DefaultRecordBatch(bytearray(batch))
        assert kp_batch.validate_crc()
        got = [(m.offset, m.timestamp, m.key, m.value, list(m.headers)) for m in kp_batch]
        assert got == expected_for_clients(500)


# librdkafka (confluent-kafka): produce into librdkafka's own mock cluster, then read the stored
# batches back with a raw Fetch v4 request. The mock keeps each produced batch byte for byte
# (it only writes baseOffset, outside the CRC), so these are librdkafka's encoder's bytes.


@pytest.fixture(scope="module")
def rdkafka_mock() -> Iterator[tuple[str, int]]:
    ck = importlib.import_module("confluent_kafka")
    host = ck.Producer(
        {"test.mock.num.brokers": 1, "bootstrap.servers": "127.0.0.1:1", "log_level": 0}
    )
    metadata = host.list_topics(timeout=15)
    broker = next(iter(metadata.brokers.values()))
    yield broker.host, broker.port
    host.flush(1)


def fetch_records(address: tuple[str, int], topic: str) -> bytes:
    """Send Fetch v4 for partition 0 from offset 0; return the partition's records blob."""
    name = topic.encode()
    body = struct.pack(">iiiib", -1, 500, 1, 64 << 20, 0)  # replica, wait, min, max, isolation
    body += struct.pack(">ih", 1, len(name)) + name + struct.pack(">iiqi", 1, 0, 0, 32 << 20)
    request = struct.pack(">hhih", 1, 4, 4242, 4) + b"test" + body
    reader = FrameReader()
    with socket.create_connection(address, timeout=15) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        response: bytes | None = None
        while response is None:
            chunk = sock.recv(65536)
            assert chunk, "mock broker closed the connection"
            reader.feed(chunk)
            response = reader.next_frame()
    correlation_id, _throttle, topics = struct.unpack_from(">iii", response, 0)
    assert (correlation_id, topics) == (4242, 1)
    pos = 14 + struct.unpack_from(">h", response, 12)[0]
    partitions, partition, error_code = struct.unpack_from(">iih", response, pos)
    assert (partitions, partition, error_code) == (1, 0, 0)
    pos += 10 + 16  # high watermark, last stable offset
    aborted = struct.unpack_from(">i", response, pos)[0]
    pos += 4 + 16 * max(aborted, 0)
    size: int = struct.unpack_from(">i", response, pos)[0]
    return response[pos + 4 : pos + 4 + size]


def produce_with_librdkafka(rdkafka_mock: tuple[str, int], topic: str, codec: int) -> bytes:
    """RECORDS_FOR_CLIENTS produced by confluent-kafka (idempotent, `codec`) into partition 0
    of librdkafka's mock cluster; the stored batches, as a Fetch returns them."""
    ck = importlib.import_module("confluent_kafka")
    host, port = rdkafka_mock
    producer = ck.Producer(
        {
            "bootstrap.servers": f"{host}:{port}",
            "compression.type": CODEC_NAMES[codec],
            "enable.idempotence": True,
            "linger.ms": 50,
            "log_level": 0,
        }
    )
    failures: list[Any] = []
    for ts, key, value, headers in RECORDS_FOR_CLIENTS:
        producer.produce(
            topic,
            value=value,
            key=key,
            partition=0,
            timestamp=ts,
            headers=headers,
            on_delivery=lambda err, _msg: failures.append(err) if err else None,
        )
    assert producer.flush(15) == 0 and not failures
    return fetch_records((host, port), topic)


@pytest.mark.clients
@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_batches(rdkafka_mock: tuple[str, int], codec: int) -> None:
    blob = produce_with_librdkafka(rdkafka_mock, f"rdkafka-{CODEC_NAMES[codec]}", codec)
    batch_headers, records = decode_blob(blob)
    assert records == expected_for_clients()
    for header in batch_headers:
        assert header.compression == codec
        assert header.producer_id >= 0 and header.base_sequence == header.base_offset
    if codec == r.Compression.SNAPPY:  # librdkafka sends raw snappy, not xerial
        assert not bytes(rb.split_batches(blob)[0][61:]).startswith(b"\x82SNAPPY")


# A log cleaner's rewrite: records.rebuild_batch keeps the batch's identity (KIP-534 horizon).


@pytest.mark.parametrize("codec", CODECS)
def test_rebuilt_batch_keeps_offsets_producer_fields_and_a_valid_crc(codec: int) -> None:
    specs = [r.RecordSpec(key=b"k%d" % i, value=None if i == 3 else b"v%d" % i,
                          timestamp=T0 + 10 * i) for i in range(5)]
    original = r.build_batch(specs, base_offset=100, compression=codec, producer_id=7,
                             producer_epoch=2, base_sequence=40, transactional=True,
                             partition_leader_epoch=4)
    whole = r.decode_batch(original)
    kept = [whole.records[1], whole.records[3]]
    horizon = T0 + 86_400_000
    rebuilt = r.rebuild_batch(whole.header, kept, delete_horizon_ms=horizon)
    header = rb.BatchHeader.parse(rebuilt)
    assert rb.verify_crc(rebuilt)
    assert (header.base_offset, header.last_offset_delta, header.record_count) == (100, 4, 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert header.partition_leader_epoch == 4 and header.compression == codec
    assert header.is_transactional and not header.is_control
    assert header.has_delete_horizon and header.base_timestamp == horizon
    assert header.max_timestamp == T0 + 30
    assert [(m.offset, m.timestamp, m.key, m.value) for m in r.decode_batch(rebuilt).records] \
        == [(101, T0 + 10, b"k1", b"v1"), (103, T0 + 30, b"k3", None)]
    aio = importlib.import_module("aiokafka.record.default_records")
    theirs = aio.DefaultRecordBatch(rebuilt)
    assert theirs.validate_crc()
    assert [(m.offset, m.timestamp, m.key) for m in theirs] == [
        (101, T0 + 10, b"k1"), (103, T0 + 30, b"k3")]
    plain = rb.BatchHeader.parse(r.rebuild_batch(whole.header, kept))
    assert not plain.has_delete_horizon and plain.base_timestamp == T0 + 10


def test_rebuilt_log_append_time_batch_keeps_its_append_time() -> None:
    specs = [r.RecordSpec(key=b"k%d" % i, value=b"v", timestamp=T0 + i) for i in range(3)]
    stamped = rb.patch_max_timestamp_log_append(r.build_batch(specs), T0 + 999)
    whole = r.decode_batch(stamped)
    rebuilt = r.rebuild_batch(whole.header, whole.records[2:])
    header = rb.BatchHeader.parse(rebuilt)
    assert header.timestamp_type == r.TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == T0 + 999 and header.last_offset_delta == 2
    assert [(m.offset, m.timestamp) for m in r.decode_batch(rebuilt).records] == [(2, T0 + 999)]


def test_rebuild_refuses_records_outside_the_batch() -> None:
    whole = r.decode_batch(r.build_batch([r.RecordSpec(key=b"k", value=b"v")] * 2))
    with pytest.raises(CodecError):
        r.rebuild_batch(whole.header, [])
    with pytest.raises(CodecError):
        r.rebuild_batch(whole.header, [whole.records[1], whole.records[0]])
    outside = r.Record(5, whole.records[0].timestamp, b"k", b"v", [])
    with pytest.raises(CodecError):
        r.rebuild_batch(whole.header, [outside])
