"""validate_batch: every check of Kafka's broker on a produced batch, with Kafka's error code,
and the batches of real clients (kafka-python, aiokafka, librdkafka) passing."""

from __future__ import annotations

import gzip
import importlib
import struct
from typing import Any

import pytest
from kafka_protocol_codec import record_batches as rb
from kafka_protocol_codec import records as r
from kafka_protocol_codec.compression import DecompressedSizeError
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.validation import BatchValidationError, ValidatedBatch, validate_batch

from .test_records import (
    CODEC_NAMES,
    CODECS,
    RECORDS_FOR_CLIENTS,
    aiokafka_builders,
    kafka_python_codecs,  # noqa: F401 (a fixture)
    legacy_message_set,
    produce_with_librdkafka,
    rdkafka_mock,  # noqa: F401 (a fixture)
)
from .walks import each_walk_build  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("each_walk_build")
LIMIT = 1 << 20
T0 = 1_700_000_000_000
HEADER = struct.Struct(">qiibIhiqqqhii")


def validate(batch: bytes | bytearray | memoryview, **options: Any) -> ValidatedBatch:
    options.setdefault("max_uncompressed_bytes", LIMIT)
    return validate_batch(batch, **options)


def rejection(batch: bytes | bytearray | memoryview, **options: Any) -> BatchValidationError:
    with pytest.raises(BatchValidationError) as info:
        validate(batch, **options)
    return info.value


def specs(count: int, **fields: Any) -> list[r.RecordSpec]:
    return [
        r.RecordSpec(value=b"value-%d" % i, key=b"key-%d" % i, timestamp=T0 + i, **fields)
        for i in range(count)
    ]


def record(
    offset_delta: int,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    headers: list[tuple[bytes | None, bytes | None]] | None = None,
    timestamp_delta: int = 0,
) -> bytes:
    """One record, length prefix included, built field by field (so tests can lie in it)."""

    def field(data: bytes | None) -> bytes:
        return b"\x01" if data is None else r.encode_varint(len(data)) + data

    body = b"\x00" + r.encode_varlong(timestamp_delta) + r.encode_varint(offset_delta)
    body += field(key) + field(value)
    body += r.encode_varint(len(headers or []))
    for hkey, hvalue in headers or []:
        body += field(hkey) + field(hvalue)
    return r.encode_varint(len(body)) + body


def raw_batch(
    body: bytes,
    count: int,
    *,
    last_offset_delta: int | None = None,
    codec: int = 0,
    attributes: int = 0,
    base_offset: int = 0,
    producer_id: int = -1,
    base_sequence: int = -1,
    base_timestamp: int = T0,
    max_timestamp: int = T0,
) -> bytearray:
    """A batch around a records section, compressed with ``codec`` and with a correct CRC;
    the attributes say ``codec`` unless ``attributes`` sets other codec bits."""
    payload = r.compress(codec, body) if codec else body
    out = bytearray(rb.HEADER_SIZE) + payload
    last = count - 1 if last_offset_delta is None else last_offset_delta
    HEADER.pack_into(
        out, 0, base_offset, len(out) - 12, -1, 2, 0, attributes | codec, last,
        base_timestamp, max_timestamp, producer_id, -1 if producer_id < 0 else 0,
        base_sequence, count,
    )  # fmt: skip
    fix_crc(out)
    return out


def fix_crc(batch: bytearray) -> None:
    batch[17:21] = struct.pack(">I", rb.crc32c(batch[21:]))


def records_of(count: int) -> bytes:
    return b"".join(record(i) for i in range(count))


# --- valid batches -----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_built_batches_pass(codec: int) -> None:
    timestamps = [T0 + 5, T0 + 9, T0 - 3, T0 + 9, T0]
    built = r.build_batch(
        [
            r.RecordSpec(value=bytes(300 * i), key=None if i == 2 else b"k", timestamp=ts,
                         headers=[("h", b"x"), ("null", None)] * i)
            for i, ts in enumerate(timestamps)
        ],
        compression=codec, producer_id=9, producer_epoch=1, base_sequence=40, transactional=True,
    )  # fmt: skip
    for form in (built, bytearray(built), memoryview(b"junk" + built)[4:]):
        result = validate(form)
        assert result.header == rb.BatchHeader.parse(built) and result.record_count == 5
        assert (result.max_timestamp, result.offset_delta_of_max_timestamp) == (T0 + 9, 1)
        assert result.uncompressed_size == len(r.decompress(codec, built[rb.HEADER_SIZE :]))


def test_max_timestamp_comes_from_the_records() -> None:
    batch = bytearray(r.build_batch(specs(3)))
    batch[35:43] = struct.pack(">q", T0 + 999)  # a header that lies about maxTimestamp
    fix_crc(batch)
    assert validate(batch).max_timestamp == T0 + 2
    no_time = r.build_batch([r.RecordSpec(value=b"x", timestamp=-1)] * 2, base_timestamp=-1)
    result = validate(no_time)
    assert (result.max_timestamp, result.offset_delta_of_max_timestamp) == (-1, -1)
    log_append = r.build_batch(specs(2), timestamp_type=1, base_timestamp=T0 + 50)
    result = validate(log_append)
    assert (result.max_timestamp, result.offset_delta_of_max_timestamp) == (T0 + 50, 0)


@pytest.mark.clients
@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_batches(codec: int) -> None:
    kdr = importlib.import_module("kafka.record.default_records")
    builder = kdr.DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    builder.set_producer_state(
        producer_id=31, producer_epoch=2, base_sequence=100, is_transactional=True
    )
    for offset, (ts, key, value, headers) in enumerate(RECORDS_FOR_CLIENTS):
        assert builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    batch = bytes(builder.build())
    result = validate(batch)
    assert result.record_count == 30 and result.max_timestamp == T0 + 29
    assert result.header.producer_id == 31 and result.header.is_transactional
    keyless = [i for i, (_, key, _, _) in enumerate(RECORDS_FOR_CLIENTS) if key is None]
    error = rejection(batch, require_keys=True)
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert [index for index, _ in error.record_errors] == keyless == [0, 5, 10, 15, 20, 25]


@pytest.mark.clients
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("which", ["cython", "python"])
def test_aiokafka_batches(codec: int, which: str) -> None:
    builder_cls = aiokafka_builders()[0 if which == "cython" else 1]
    builder = builder_cls(2, codec, 0, 55, 1, 0, 1 << 20)
    for offset, (ts, key, value, headers) in enumerate(RECORDS_FOR_CLIENTS):
        assert builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    result = validate(bytes(builder.build()))
    assert result.record_count == 30 and result.header.base_sequence == 0


@pytest.mark.clients
@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_batches(rdkafka_mock: tuple[str, int], codec: int) -> None:  # noqa: F811
    """Produce with confluent-kafka into librdkafka's mock cluster, read the stored batches back
    and give them the baseOffset 0 they were sent with (the mock writes it, outside the CRC)."""
    blob = produce_with_librdkafka(rdkafka_mock, f"validate-{CODEC_NAMES[codec]}", codec)
    total = 0
    for view in rb.split_batches(blob):
        sent = bytearray(view)
        sent[0:8] = bytes(8)
        result = validate(sent)
        assert result.header.compression == codec and result.header.producer_id >= 0
        total += result.record_count
        if rb.BatchHeader.parse(view).base_offset:  # as stored, after the first batch
            assert rejection(view).error_code == ErrorCode.INVALID_RECORD
    assert total == len(RECORDS_FOR_CLIENTS)


# --- framing: size, magic, baseOffset, max.message.bytes, CRC ----------------------------------


def test_framing_errors() -> None:
    good = r.build_batch(specs(2))
    assert rejection(good[:11]).error_code == ErrorCode.INVALID_RECORD  # no batch at all
    short_size = bytearray(good)
    short_size[8:12] = struct.pack(">i", 13)
    assert rejection(short_size).error_code == ErrorCode.CORRUPT_MESSAGE
    assert rejection(short_size[:14]).error_code == ErrorCode.CORRUPT_MESSAGE
    for magic in (3, 0x7F, 0xFF):
        bad = bytearray(good)
        bad[16] = magic
        error = rejection(bad)
        assert error.error_code == ErrorCode.CORRUPT_MESSAGE and "magic" in error.message
    assert rejection(good[:-1]).error_code == ErrorCode.INVALID_RECORD  # truncated
    assert rejection(good[:16]).error_code == ErrorCode.INVALID_RECORD
    assert rejection(good + b"\x00").error_code == ErrorCode.INVALID_RECORD  # bytes after it
    assert rejection(good + good).error_code == ErrorCode.INVALID_RECORD  # two batches
    error = rejection(rb.patch_batch(good, 7, 0))  # patching keeps the CRC valid
    assert error.error_code == ErrorCode.INVALID_RECORD and "baseOffset" in error.message
    too_big = rejection(good, max_batch_bytes=len(good) - 1)
    assert too_big.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert validate(good, max_batch_bytes=len(good)).record_count == 2
    smaller_than_header = bytearray(good[:60])
    smaller_than_header[8:12] = struct.pack(">i", 48)
    assert rejection(smaller_than_header).error_code == ErrorCode.CORRUPT_MESSAGE
    for position in (21, 40, 60, len(good) - 1):  # anything under the CRC
        damaged = bytearray(good)
        damaged[position] ^= 0x10
        error = rejection(damaged)
        assert error.error_code == ErrorCode.CORRUPT_MESSAGE and "crc" in error.message
    assert error.record_errors == [] and error.response_error_message is None


@pytest.mark.parametrize(("magic", "codec"), [(0, 0), (1, 0), (1, 1)])
def test_legacy_magic(magic: int, codec: int) -> None:
    entry = rb.split_batches(legacy_message_set(magic, codec))[0]
    error = rejection(entry)
    assert error.error_code == ErrorCode.INVALID_RECORD and "magic version 2" in error.message


# --- compression ---------------------------------------------------------------------------------


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_is_kafkas_unknown_server_error(codec_id: int) -> None:
    error = rejection(raw_batch(records_of(1), 1, attributes=codec_id))
    assert error.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert error.message == f"Unknown compression type id: {codec_id}"


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_body_that_does_not_decompress(codec: int) -> None:
    plain = raw_batch(records_of(3), 3, attributes=codec)  # the codec bit over plain records
    assert rejection(plain).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    packed = raw_batch(records_of(3), 3, codec=codec)
    cut = bytearray(packed[:-3])
    cut[8:12] = struct.pack(">i", len(cut) - 12)
    fix_crc(cut)
    error = rejection(cut)
    assert error.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert error.message.startswith("Failed to decompress record stream")


def test_gzip_attribute_over_other_codecs() -> None:
    for codec in (2, 3, 4):
        body = r.compress(codec, records_of(2))
        batch = raw_batch(body, 2, attributes=r.Compression.GZIP)
        assert rejection(batch).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert validate(raw_batch(gzip.compress(records_of(2)), 2, attributes=1)).record_count == 2


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_bomb(codec: int) -> None:
    """Zeros inflate hugely; past the limit the batch is refused before the memory exists."""
    bomb = raw_batch(bytes(8 << 20), 1, codec=codec)
    assert len(bomb) < 1 << 20
    with pytest.raises(DecompressedSizeError):
        r.decompress(codec, bomb[rb.HEADER_SIZE :], 1 << 20)
    error = rejection(bomb, max_uncompressed_bytes=1 << 20)
    assert error.error_code == ErrorCode.MESSAGE_TOO_LARGE
    big = r.build_batch([r.RecordSpec(value=bytes(2 << 20))], compression=codec)
    assert rejection(big).error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert validate(big, max_uncompressed_bytes=3 << 20).uncompressed_size > 2 << 20


def test_uncompressed_records_are_not_bounded_by_the_inflate_limit() -> None:
    batch = r.build_batch([r.RecordSpec(value=bytes(2000))])
    assert validate(batch, max_uncompressed_bytes=100).record_count == 1


# --- LogValidator.validateBatch ------------------------------------------------------------------


def test_offset_range_and_count() -> None:
    body = records_of(3)
    cases = {
        "invalid offset range": raw_batch(body, 3, last_offset_delta=-1),
        "Invalid reported count": raw_batch(body, 0, last_offset_delta=2),
        "Inconsistent batch offset range": raw_batch(body, 3, last_offset_delta=4),
    }
    for words, batch in cases.items():
        error = rejection(batch)
        assert error.error_code == ErrorCode.INVALID_RECORD and words in error.message
    negative = raw_batch(body, -3, last_offset_delta=-4)
    assert rejection(negative).error_code == ErrorCode.INVALID_RECORD


def test_control_batch_from_a_client() -> None:
    marker = r.build_control_batch(
        commit=True, producer_id=5, producer_epoch=0, coordinator_epoch=1, base_offset=0,
        timestamp_ms=T0,
    )  # fmt: skip
    error = rejection(marker)
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert error.message == "Clients are not allowed to write control records"


def test_producer_id_needs_a_sequence() -> None:
    batch = r.build_batch(specs(2), producer_id=12, producer_epoch=0, base_sequence=-1)
    error = rejection(batch)
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert error.message.startswith("Invalid sequence number -1")
    idempotent = r.build_batch(specs(2), producer_id=12, producer_epoch=0, base_sequence=0)
    assert validate(idempotent).record_count == 2
    assert validate(r.build_batch(specs(2), base_sequence=-5)).record_count == 2  # no producer


# --- records -------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_bytes_after_the_last_record(codec: int) -> None:
    """The probe that found this: a good CRC over records followed by junk."""
    for junk in (b"\x00", b"\x02\x00", bytes(40), record(3)):
        error = rejection(raw_batch(records_of(3) + junk, 3, codec=codec))
        assert error.error_code == ErrorCode.INVALID_RECORD
        assert "records still remaining" in error.message


@pytest.mark.parametrize("codec", CODECS)
def test_fewer_records_than_declared(codec: int) -> None:
    error = rejection(raw_batch(records_of(2) + bytes(5), 3, codec=codec))
    assert error.error_code == ErrorCode.INVALID_RECORD
    error = rejection(raw_batch(records_of(2), 3, codec=codec))
    assert error.error_code == ErrorCode.INVALID_RECORD and "batch size" in error.message
    huge = rejection(raw_batch(records_of(2), 2**31 - 1, codec=codec))
    assert huge.error_code == ErrorCode.INVALID_RECORD and "cannot fit" in huge.message


def with_length(rec: bytes, delta: int) -> bytes:
    """``rec`` with its length prefix changed by ``delta`` (a record shorter than 64 bytes)."""
    length, start = r.read_varint(rec)
    return r.encode_varint(length + delta) + rec[start:]


@pytest.mark.parametrize("codec", CODECS)
def test_record_length_that_lies(codec: int) -> None:
    first, second = record(0), record(1)
    lies = [
        with_length(first, 1) + second,  # claims one byte of the next record
        with_length(first, -1) + second,  # its last field runs past its end
        first + with_length(second, 1),  # runs past the end of the body
        first + with_length(second, 40),
        first + with_length(second, -len(second)),  # negative
        first + b"\x00" + second[1:],  # zero
    ]
    for body in lies:
        error = rejection(raw_batch(body, 2, codec=codec))
        assert error.error_code == ErrorCode.INVALID_RECORD, body
        assert error.record_errors == []


def replaced(rec: bytes, position: int, byte: int) -> bytes:
    return rec[:position] + bytes([byte]) + rec[position + 1 :]


def test_record_fields() -> None:
    # record(0) is: length, attributes, timestamp delta, offset delta, key length 1, "k",
    # value length 1, "v", header count 0 (one byte each); null key/value lengths are 0x01.
    bad_records = {
        "Invalid key length -2": replaced(record(0, key=None), 4, 0x03),
        "Invalid value length -2": replaced(record(0, value=None), 6, 0x03),
        "": record(0, value=b"v")[:-3] + b"\x7e" + record(0)[-2:],  # value past the record
        "number of record headers -1": replaced(record(0), 8, 0x01),
        "number of record headers 5": replaced(record(0), 8, 0x0A),  # past the record
        "Invalid negative header key size -1": record(0, headers=[(None, b"x")]),
        "Invalid header value length -3": replaced(record(0, headers=[(b"h", None)]), 11, 0x05),
        "invalid record structure (varint longer": (
            record(0)[:2] + b"\x80" * 10 + b"\x00" + record(0)[3:]  # a timestamp of 11 bytes
        ),
        "invalid record structure (varint longer than 5": (
            record(0)[:3] + b"\x80" * 6 + record(0)[4:]  # an offset delta of 7 bytes
        ),
    }
    for words, body in bad_records.items():
        _, start = r.read_varint(body)
        fixed = r.encode_varint(len(body) - start) + body[start:]
        for candidate in {body, fixed}:
            error = rejection(raw_batch(candidate, 1))
            assert error.error_code == ErrorCode.INVALID_RECORD, words
            assert words in error.message and error.record_errors == []
    assert validate(raw_batch(record(0, headers=[(b"h", None), (b"", b"")]), 1)).record_count == 1
    assert validate(raw_batch(record(0, key=None, value=None), 1)).record_count == 1
    non_utf8_key = raw_batch(record(0, headers=[(b"\xff\xfe", b"x")]), 1)
    assert validate(non_utf8_key).record_count == 1  # Kafka does not decode header keys either
    with pytest.raises(CodecError):
        r.decode_batch(non_utf8_key)


def test_offset_delta_must_be_the_index() -> None:
    for deltas in ([1, 2], [0, 2], [0, 0], [1, 0]):
        body = b"".join(record(delta) for delta in deltas)
        error = rejection(raw_batch(body, 2, last_offset_delta=1))
        assert error.error_code == ErrorCode.INVALID_RECORD
        wrong = [i for i, delta in enumerate(deltas) if delta != i]
        assert [index for index, _ in error.record_errors] == wrong
    gaps = r.build_batch([r.Record(0, T0, b"k", b"v", []), r.Record(2, T0, b"k", b"v", [])])
    assert rejection(gaps).error_code == ErrorCode.INVALID_RECORD  # and lastOffsetDelta 2


def test_long_offset_deltas_and_lengths() -> None:
    """Varints of two and three bytes take the inline and the general path."""
    count = 9000  # offset deltas up to 3 zigzag bytes
    batch = r.build_batch([r.RecordSpec(value=b"", key=b"") for _ in range(count)])
    assert validate(batch).record_count == count
    wide = r.build_batch([r.RecordSpec(value=bytes(20000), timestamp=T0 + 10**9 * i)
                          for i in range(3)])  # fmt: skip
    assert validate(wide).max_timestamp == T0 + 2 * 10**9
    many_headers = r.build_batch([r.RecordSpec(value=b"v", headers=[("k" * 100, bytes(200))] * 70)])
    assert validate(many_headers).record_count == 1  # a two-byte count, two-byte lengths


# --- per-record errors: keys and timestamps ------------------------------------------------------


def test_compacted_topic_needs_keys() -> None:
    batch = r.build_batch([r.RecordSpec(value=b"v", key=None if i in (1, 3) else b"k")
                           for i in range(5)])  # fmt: skip
    assert validate(batch).record_count == 5
    error = rejection(batch, require_keys=True)
    assert error.error_code == ErrorCode.INVALID_RECORD
    message = "Compacted topic cannot accept message without key"
    assert error.record_errors == [(1, message), (3, message)]
    assert error.response_error_message == error.message
    assert error.message.startswith("One or more records have been rejected due to 2 record")
    assert "RecordError(batchIndex=1, message='Compacted topic" in error.message
    assert validate(r.build_batch(specs(3)), require_keys=True).record_count == 3


def test_record_errors_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_protocol_codec import validation

    monkeypatch.setattr(validation, "MAX_RECORD_ERRORS", 3)
    batch = r.build_batch([r.RecordSpec(value=b"v")] * 7)
    error = rejection(batch, require_keys=True)
    assert [index for index, _ in error.record_errors] == [0, 1, 2]
    assert "due to 7 record errors" in error.message


def test_timestamp_window() -> None:
    timestamps = [T0, T0 - 1001, -1, T0 + 2000, T0 + 1000]
    batch = r.build_batch([r.RecordSpec(value=b"v", key=b"k", timestamp=ts) for ts in timestamps])
    window = (T0 - 1000, T0 + 1000)
    error = rejection(batch, timestamp_bounds=window)
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [index for index, _ in error.record_errors] == [1, 3]  # -1 means no timestamp
    assert error.record_errors[1][1].startswith(f"Timestamp {T0 + 2000} of message with offset 3")
    assert error.message == "One or more records have been rejected due to invalid timestamp"
    assert validate(batch, timestamp_bounds=(T0 - 1001, T0 + 2000)).max_timestamp == T0 + 2000
    broker_time = validate(batch, timestamp_bounds=window, log_append_time=True)
    assert broker_time.record_count == 5  # the broker's time replaces them: no check


def test_one_error_per_record_and_timestamp_errors_decide_the_code() -> None:
    keyless_and_late = r.RecordSpec(value=b"v", key=None, timestamp=T0 + 10**6)
    late = r.RecordSpec(value=b"v", key=b"k", timestamp=T0 + 10**6)
    window = (T0, T0 + 1)
    error = rejection(r.build_batch([keyless_and_late]), require_keys=True, timestamp_bounds=window)
    assert error.error_code == ErrorCode.INVALID_RECORD  # its one error is the key's
    assert error.record_errors == [(0, "Compacted topic cannot accept message without key")]
    error = rejection(
        r.build_batch([keyless_and_late, late]), require_keys=True, timestamp_bounds=window
    )
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP  # any timestamp error decides
    assert [index for index, _ in error.record_errors] == [0, 1]
    assert "without key" in error.record_errors[0][1]
    assert "out of range" in error.record_errors[1][1]


def test_producer_claiming_log_append_time() -> None:
    claimed = r.build_batch(specs(2), timestamp_type=1, base_timestamp=T0)
    error = rejection(claimed, log_append_time=True)
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [index for index, _ in error.record_errors] == [0, 1]
    assert "Producer should not set timestamp type to LogAppendTime" in error.record_errors[0][1]
    assert validate(claimed).record_count == 2  # a CreateTime topic reads its maxTimestamp
    error = rejection(claimed, timestamp_bounds=(0, T0 - 1))
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP
    untimed = r.build_batch(specs(1), timestamp_type=1, base_timestamp=-1)
    assert rejection(untimed).error_code == ErrorCode.INVALID_TIMESTAMP


# --- the record walk's edges (record_walk.py, in both builds) --------------------------------


def test_long_varints_are_read_whole() -> None:
    """A 5-byte length and a 10-byte timestamp delta: legal, and read to their last byte."""
    value = b"v"
    body = (b"\x00" + b"\x80" * 9 + b"\x00" + b"\x00" + b"\x01" + b"\x82\x80\x80\x80\x00" + value
            + b"\x00")  # fmt: skip
    assert validate(raw_batch(r.encode_varint(len(body)) + body, 1)).record_count == 1


def test_varints_past_their_bits() -> None:
    """The last byte of a 10-byte varlong may carry one bit, of a 5-byte varint four."""
    too_wide = record(0)[:2] + b"\x80" * 9 + b"\x02" + record(0)[3:]  # timestamp past 64 bits
    lowest = record(0)[:2] + b"\xff" * 9 + b"\x01" + record(0)[3:]  # -2**63
    highest = record(0)[:2] + b"\xfe" + b"\xff" * 8 + b"\x01" + record(0)[3:]  # 2**63 - 1
    wide_length = record(0, value=None)[:6] + b"\x81\x80\x80\x80\x10"  # value length past 32
    for body, words in ((too_wide, "varint value does not fit 64 bits"),
                        (wide_length + b"\x00", "varint value does not fit 32 bits")):
        _, start = r.read_varint(body)
        fixed = r.encode_varint(len(body) - start) + body[start:]
        error = rejection(raw_batch(fixed, 1))
        assert error.error_code == ErrorCode.INVALID_RECORD and words in error.message
    _, start = r.read_varint(lowest)
    fixed = r.encode_varint(len(lowest) - start) + lowest[start:]
    assert validate(raw_batch(fixed, 1, base_timestamp=0)).max_timestamp == -1  # below -1
    _, start = r.read_varint(highest)
    fixed = r.encode_varint(len(highest) - start) + highest[start:]
    assert validate(raw_batch(fixed, 1, base_timestamp=0)).max_timestamp == 2**63 - 1
    assert validate(raw_batch(fixed, 1, base_timestamp=2)).max_timestamp == -(2**63) + 1  # wraps


def test_truncated_records_say_where() -> None:
    body = records_of(2)
    for cut in range(1, len(body)):
        error = rejection(raw_batch(body[:cut], 2))
        assert error.error_code == ErrorCode.INVALID_RECORD and error.record_errors == []
        assert "record" in error.message


def test_windows_beyond_64_bits() -> None:
    """Kafka's default window (no lower bound, an hour ahead) and windows past the int64
    range: deltas compare as Kafka's longs would, extremes included."""
    low, high = -(2**63), 2**63 - 1
    times = [T0, T0 - 10**12, -1, high, -(10**18)]
    batch = r.build_batch([r.RecordSpec(value=b"v", timestamp=ts) for ts in times])
    assert validate(batch, timestamp_bounds=(low, high)).max_timestamp == high
    assert validate(batch, timestamp_bounds=(low - 10**30, high + 10**30)).max_timestamp == high
    error = rejection(batch, timestamp_bounds=(low, T0 + 3_600_000))  # Kafka 4's default
    assert [index for index, _ in error.record_errors] == [3]
    error = rejection(batch, timestamp_bounds=(-(10**18) + 1, high))
    assert [index for index, _ in error.record_errors] == [4]
    error = rejection(batch, timestamp_bounds=(high + 1, high + 10))  # empty for every long
    assert [index for index, _ in error.record_errors] == [0, 1, 3, 4]  # -1: no timestamp
    error = rejection(batch, timestamp_bounds=(low - 10, low - 1))
    assert [index for index, _ in error.record_errors] == [0, 1, 3, 4]
    default = r.build_batch(specs(163))
    assert validate(default, timestamp_bounds=(low, T0 + 3_600_000)).record_count == 163
