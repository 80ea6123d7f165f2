"""Validation of a produced record batch, with the checks and error codes of Kafka's broker.

Theory of operation: a broker that stores a client's batch byte for byte must first prove that
every reader will be able to parse it, or later Fetch, ListOffsets and log cleaning meet the
damage. Kafka does this in three places, and ``validate_batch`` runs their checks on one
magic-2 batch in the same order, answering with the same error codes:

1. reading the request (``ProduceRequest.validateRecords``, ``ByteBufferLogInputStream``): a
   batch size below 14 or a magic outside 0..2 is CORRUPT_MESSAGE; a truncated batch, a legacy
   magic (0/1) or bytes beyond the batch are INVALID_RECORD;
2. ``UnifiedLog.analyzeAndValidateRecords``: baseOffset must be 0 (INVALID_RECORD); the batch
   must fit max.message.bytes (MESSAGE_TOO_LARGE); a batch shorter than its 61-byte header or
   with a wrong CRC-32C is CORRUPT_MESSAGE; a compression id outside 0..4 makes
   ``CompressionType.forId`` throw, which Kafka answers with UNKNOWN_SERVER_ERROR;
3. ``LogValidator``: ``validateBatch`` (lastOffsetDelta + 1 == recordCount > 0, no control
   batch from a client, a producer id needs a base sequence >= 0: INVALID_RECORD), then the
   record walk of ``DefaultRecordBatch``/``DefaultRecord`` (every length, count and varint
   consistent, nothing left over: INVALID_RECORD) and ``validateRecord`` per record (a null
   key on a compacted topic: INVALID_RECORD; a timestamp outside the topic's window, or a
   producer claiming LogAppendTime: INVALID_TIMESTAMP). Kafka wraps a failing decompressor in
   a ``KafkaException``, so a body that does not inflate is UNKNOWN_SERVER_ERROR as well.

Structural failures stop at the first one and carry no record errors: Kafka throws a plain
``InvalidRecordException`` there, and its Produce response has an empty ``record_errors`` and
a null ``error_message``. Per-record failures are collected over the whole batch; Kafka then
throws a ``RecordValidationException`` whose response lists (batch_index, message) pairs and
fills ``error_message`` (``BatchValidationError.response_error_message``).

Three deliberate differences, all stricter, because this broker cannot rewrite a batch: an
offset delta other than the record's index is INVALID_RECORD (Kafka reassigns offsets, which
rebuilds a compressed batch); a key, value or header value length below -1 is INVALID_RECORD
(Kafka reads it as null, our decoder refuses it); inflating more than
``max_uncompressed_bytes`` is MESSAGE_TOO_LARGE (Kafka streams without a bound; a Java
producer answers this code by splitting the batch). Two smaller ones: any bytes after the batch
are refused (Kafka silently drops fewer than 12), and a varint overflowing its 32 or 64 bits is
refused (Java drops the high bits).

Speed: this runs on every produced batch, so the record walk builds no objects. It indexes one
``bytes`` object (the batch itself when uncompressed, else the body inflated once) with local
variables, decodes one- and two-byte varints inline (nearly all of them in practice), compares
offset deltas in their zigzag form and skips keys, values and headers by their lengths. When
the optional compiled walker (``_walk_accel.pyx``, built by ``make accel``; off with
``KAFKA_PROTOCOL_CODEC_PURE=1``) is importable it walks first, in C, and answers only for
batches it proves valid; anything else, and every error message, comes from the pure walk.
The same module's ``plain_batch`` runs the whole one-pass check of an uncompressed CreateTime
batch (``_valid_plain_batch``: header checks, CRC-32C, walk) in one call.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple

from .compression import Compression, DecompressedSizeError, decompress
from .error_codes import ErrorCode
from .exceptions import CodecError
from .native import import_native
from .record_batches import (
    CONTROL_MASK,
    CRC_START,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MIN_LEGACY_ENTRY_SIZE,
    NO_PRODUCER_ID,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    Buffer,
    crc32c,
)
from .records import _read_uvarint

NO_TIMESTAMP = -1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _load_accelerated_walk() -> Callable[..., tuple[int, int] | None] | None:
    """The compiled valid-batch walker (``_walk_accel.pyx``, built by ``make accel``), or None
    when it is not built or ``KAFKA_PROTOCOL_CODEC_PURE=1`` asks for the pure code only."""
    module: Any = import_native("_walk_accel")
    if module is None:
        return None
    walk: Callable[..., tuple[int, int] | None] = module.walk_valid
    return walk


def _load_accelerated_plain_batch() -> Callable[..., Any] | None:
    """The compiled one-pass check of a plain batch (``_walk_accel.plain_batch``: what
    ``_valid_plain_batch`` does, header to last record, in one call), or None (not built, or
    built from an older source)."""
    module: Any = import_native("_walk_accel")
    return None if module is None else getattr(module, "plain_batch", None)


# Module state, read on each walk so tests can switch it: the compiled walker, or None, and
# the compiled one-pass check (used only with the walker), or None.
accelerated_walk = _load_accelerated_walk()
accelerated_plain_batch = _load_accelerated_plain_batch()
MAX_RECORD_ERRORS = 10_000  # kept per batch: a bomb of keyless records must not exhaust memory
_MIN_RECORD_SIZE = 7  # length, attributes, timestamp, offset delta, key, value, header count
_INT64 = 1 << 64
_PREFIX = struct.Struct(">qiib")  # baseOffset, batchLength, partitionLeaderEpoch, magic


class BatchValidationError(CodecError):
    """Why a produced batch is refused, as Kafka's broker would say it.

    ``error_code`` is the partition's Produce error code; ``record_errors`` holds
    (batch_index, message) pairs for per-record failures (empty for structural ones).
    """

    def __init__(
        self, error_code: int, message: str, record_errors: list[tuple[int, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message
        self.record_errors: list[tuple[int, str]] = record_errors or []

    @property
    def response_error_message(self) -> str | None:
        """The Produce response's ``error_message``: Kafka sets it only with record errors."""
        return self.message if self.record_errors else None


class ValidatedBatch(NamedTuple):
    """What appending the batch needs beyond its bytes.

    ``max_timestamp`` is computed from the records as Kafka's validator does (NO_TIMESTAMP when
    none is above it); for a LogAppendTime batch it is the header's maxTimestamp, which is every
    record's timestamp. ``offset_delta_of_max_timestamp`` is the first record holding it (-1:
    none), for ListOffsets MAX_TIMESTAMP (KIP-734).
    """

    header: BatchHeader
    max_timestamp: int
    offset_delta_of_max_timestamp: int
    uncompressed_size: int  # bytes of the records section after decompression

    @property
    def record_count(self) -> int:
        return self.header.record_count


def _fail(code: int, message: str) -> BatchValidationError:
    return BatchValidationError(code, message)


def _invalid(message: str) -> BatchValidationError:
    return BatchValidationError(ErrorCode.INVALID_RECORD, message)


def validate_batch(
    batch: Buffer,
    *,
    max_uncompressed_bytes: int,
    require_keys: bool = False,
    max_batch_bytes: int | None = None,
    log_append_time: bool = False,
    timestamp_bounds: tuple[int, int] | None = None,
) -> ValidatedBatch:
    """Check one produced batch as Kafka's broker does; raise ``BatchValidationError``.

    ``require_keys``: the topic is compacted (cleanup.policy has compact). ``max_batch_bytes``:
    the topic's max.message.bytes. ``log_append_time``: message.timestamp.type is
    LogAppendTime. ``timestamp_bounds``: for CreateTime topics, the inclusive window
    [now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms].
    """
    view = memoryview(batch)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    size = len(view)
    if accelerated_walk is not None and not log_append_time:
        proven = _valid_plain_batch(view, size, max_batch_bytes, require_keys, timestamp_bounds)
        if proven is not None:
            return proven
    header = _check_framing(view, size, max_batch_bytes)
    _check_header(header)
    codec = header.attributes & 0x07
    if codec == Compression.NONE:
        # the compiled walk reads the view itself; the pure one wants bytes (_walk_records)
        data = batch if isinstance(batch, bytes | bytearray) else view
        start, uncompressed = HEADER_SIZE, size - HEADER_SIZE
    else:
        try:
            data = decompress(codec, view[HEADER_SIZE:], max_uncompressed_bytes)
        except DecompressedSizeError as exc:
            raise _fail(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"Record batch body inflates past {max_uncompressed_bytes} bytes ({exc})",
            ) from exc
        except CodecError as exc:
            raise _fail(
                ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to decompress record stream: {exc}"
            ) from exc
        start, uncompressed = 0, len(data)
    append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_MASK else None
    max_delta, max_index, errors, error_total = _walk_records(
        data,
        start,
        header.record_count,
        header.base_timestamp,
        require_keys,
        append_time,
        log_append_time,
        timestamp_bounds,
    )
    if errors:
        raise _record_errors(errors, error_total)
    if append_time is not None:
        max_timestamp, max_index = append_time, (0 if append_time > NO_TIMESTAMP else -1)
    elif max_index < 0:
        max_timestamp = NO_TIMESTAMP
    else:  # Kafka adds in 64-bit arithmetic: wrap as it does
        max_timestamp = (header.base_timestamp + max_delta + (1 << 63)) % _INT64 - (1 << 63)
    return ValidatedBatch(header, max_timestamp, max_index, uncompressed)


def _valid_plain_batch(
    view: memoryview,
    size: int,
    max_batch_bytes: int | None,
    require_keys: bool,
    bounds: tuple[int, int] | None,
) -> ValidatedBatch | None:
    """The common case in one pass: an uncompressed CreateTime batch that passes every check
    below, with the compiled walker proving its records valid. None for anything else (a
    compressed or LogAppendTime batch, any failure), which the full checks then judge and
    word; on a batch this accepts they answer the same."""
    compiled = accelerated_plain_batch
    if compiled is not None:
        found = compiled(view, -1 if max_batch_bytes is None else max_batch_bytes, require_keys,
                         bounds is not None, *(bounds or (0, 0)), crc32c)
        if found is None:
            return None
        fields, max_timestamp, max_index = found
        return _new_tuple(ValidatedBatch, (_new_tuple(BatchHeader, fields), max_timestamp,
                                           max_index, size - HEADER_SIZE))
    if size < HEADER_SIZE:
        return None
    fields = HEADER_STRUCT.unpack_from(view)
    (base_offset, length, _, magic, crc, attributes, last, base_timestamp, _, producer_id, _,
     base_sequence, count) = fields
    if (
        base_offset
        or magic != 2
        or LOG_OVERHEAD + length != size
        or attributes & _NOT_PLAIN
        or (max_batch_bytes is not None and size > max_batch_bytes)
        or count <= 0
        or last + 1 != count
        or (producer_id > NO_PRODUCER_ID and base_sequence < 0)
        or crc32c(view[CRC_START:]) != crc
    ):
        return None
    no_timestamp_delta = NO_TIMESTAMP - base_timestamp
    if bounds:
        low, high = bounds[0] - base_timestamp, bounds[1] - base_timestamp
        if not (_INT64_MIN <= low and high <= _INT64_MAX):
            return None
    else:
        low = high = 0
    if not _INT64_MIN <= no_timestamp_delta <= _INT64_MAX:
        return None
    walk = accelerated_walk
    assert walk is not None
    found = walk(view, HEADER_SIZE, count, require_keys, bounds is not None, low, high,
                 no_timestamp_delta)
    if found is None:
        return None
    max_delta, max_index = found
    if max_index < 0:
        max_timestamp = NO_TIMESTAMP
    else:  # Kafka adds in 64-bit arithmetic: wrap as it does
        max_timestamp = (base_timestamp + max_delta + (1 << 63)) % _INT64 - (1 << 63)
    # both records built from their tuples directly, as _make and the generated __new__ do
    # without their Python frames (once per produced batch)
    return _new_tuple(ValidatedBatch, (_new_tuple(BatchHeader, fields), max_timestamp,
                                       max_index, size - HEADER_SIZE))


_new_tuple = tuple.__new__

# attributes _valid_plain_batch leaves to the full checks: a codec, LogAppendTime, control
_NOT_PLAIN = 0x07 | TIMESTAMP_TYPE_MASK | CONTROL_MASK


def _check_framing(view: memoryview, size: int, max_batch_bytes: int | None) -> BatchHeader:
    """Size, magic, baseOffset, max.message.bytes and CRC, in Kafka's order."""
    if size < _PREFIX.size:
        declared = int.from_bytes(view[8:12], "big", signed=True) if size >= 12 else None
        if declared is not None and declared < MIN_LEGACY_ENTRY_SIZE:
            raise _corrupt_size(declared)
        raise _invalid("Produce requests must have at least one record batch per partition")
    base_offset, declared, _, magic = _PREFIX.unpack_from(view)
    if declared < MIN_LEGACY_ENTRY_SIZE:
        raise _corrupt_size(declared)
    if not 0 <= magic <= 2:
        raise _fail(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}")
    if LOG_OVERHEAD + declared > size:
        raise _invalid(
            f"Record batch declares {LOG_OVERHEAD + declared} bytes but only {size} are present"
        )
    if magic != 2:
        raise _invalid(
            "Produce requests are only allowed to contain record batches with magic version 2"
        )
    if LOG_OVERHEAD + declared < size:
        raise _invalid(
            "Produce requests are only allowed to contain exactly one record batch per "
            f"partition ({size - LOG_OVERHEAD - declared} bytes follow the batch)"
        )
    if base_offset != 0:
        raise _invalid(f"The baseOffset of the record batch should be 0, but it is {base_offset}")
    if max_batch_bytes is not None and size > max_batch_bytes:
        raise _fail(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"The record batch size in the append is {size} bytes which exceeds the maximum "
            f"configured value of {max_batch_bytes}.",
        )
    if size < HEADER_SIZE:
        raise _fail(
            ErrorCode.CORRUPT_MESSAGE,
            f"Record batch is corrupt (the size {size} is smaller than the minimum allowed "
            f"overhead {HEADER_SIZE})",
        )
    header = BatchHeader._make(HEADER_STRUCT.unpack_from(view))
    computed = crc32c(view[CRC_START:])
    if computed != header.crc:
        raise _fail(
            ErrorCode.CORRUPT_MESSAGE,
            f"Record is corrupt (stored crc = {header.crc}, computed crc = {computed})",
        )
    return header


def _corrupt_size(declared: int) -> BatchValidationError:
    return _fail(
        ErrorCode.CORRUPT_MESSAGE,
        f"Record size {declared} is less than the minimum record overhead "
        f"({MIN_LEGACY_ENTRY_SIZE})",
    )


def _check_header(header: BatchHeader) -> None:
    """Kafka's compression id lookup, then ``LogValidator.validateBatch`` for a client."""
    codec = header.attributes & 0x07
    if codec > Compression.ZSTD:
        raise _fail(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {codec}")
    last = header.last_offset_delta  # baseOffset is 0 by now
    if last + 1 <= 0:
        raise _invalid(f"Batch has an invalid offset range: [0, {last}]")
    count = header.record_count
    if count <= 0:
        raise _invalid(f"Invalid reported count for record batch: {count}")
    if last + 1 != count:
        raise _invalid(f"Inconsistent batch offset range [0, {last}] and count of records {count}")
    if header.attributes & CONTROL_MASK:
        raise _invalid("Clients are not allowed to write control records")
    if header.producer_id > NO_PRODUCER_ID and header.base_sequence < 0:
        raise _invalid(
            f"Invalid sequence number {header.base_sequence} in record batch with producerId "
            f"{header.producer_id}"
        )


def _walk_records(
    data: bytes | bytearray | memoryview,
    pos: int,
    count: int,
    base_timestamp: int,
    require_keys: bool,
    append_time: int | None,
    log_append_time_topic: bool,
    bounds: tuple[int, int] | None,
) -> tuple[int, int, list[tuple[int, int, str]], int]:
    """Parse ``count`` records from ``data[pos:]`` exactly.

    Return the largest timestamp delta above NO_TIMESTAMP and its record index (-1: none),
    the first MAX_RECORD_ERRORS per-record errors (code, index, message) and their total.
    """
    end = len(data)
    if count > (end - pos) // _MIN_RECORD_SIZE:
        raise _invalid(
            f"Incorrect declared batch size: {count} records cannot fit in {end - pos} bytes"
        )
    no_timestamp_delta = NO_TIMESTAMP - base_timestamp
    max_delta, max_index = no_timestamp_delta, -1  # a timestamp counts when above NO_TIMESTAMP
    # Timestamp checks, as deltas from the base so that the loop compares small ints.
    check_range = append_time is None and not log_append_time_topic and bounds is not None
    low, high = (bounds[0] - base_timestamp, bounds[1] - base_timestamp) if bounds else (0, 0)
    every_record_fails_time = (
        append_time is not None
        and _timestamp_error(0, append_time, True, log_append_time_topic, bounds) is not None
    )
    fast = accelerated_walk
    if (
        fast is not None
        and not every_record_fails_time
        and _INT64_MIN <= min(low, no_timestamp_delta)
        and max(high, no_timestamp_delta) <= _INT64_MAX
    ):
        # It answers only for a batch it proves valid; None means: let the code below judge.
        found = fast(data, pos, count, require_keys, check_range, low, high, no_timestamp_delta)
        if found is not None:
            return found[0], found[1], [], 0
    if isinstance(data, memoryview):  # a view of the request: copied only for the pure walk
        data = bytes(data)
    errors: list[tuple[int, int, str]] = []
    error_total = 0
    index = 0
    try:
        for index in range(count):
            if pos >= end:
                raise _invalid(
                    f"Incorrect declared batch size, premature EOF reached (record {index} of "
                    f"{count})"
                )
            # Varints inline: one byte, two bytes, else the general reader from the start.
            raw = data[pos]
            pos += 1
            if raw > 0x7F:
                second = data[pos]
                pos += 1
                raw = (raw & 0x7F) | (second << 7)
                if second > 0x7F:
                    raw, pos = _read_uvarint(data, pos - 2, end, 32)
            length = (raw >> 1) ^ -(raw & 1)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise _invalid(
                    f"Invalid record size: expected {length} bytes in record payload, but "
                    f"instead the buffer has only {end - pos} remaining bytes (record {index})"
                )
            raw = data[pos + 1]  # the timestamp delta, after attributes (unused in magic 2)
            pos += 2
            if raw > 0x7F:
                second = data[pos]
                pos += 1
                raw = (raw & 0x7F) | (second << 7)
                if second > 0x7F:
                    raw, pos = _read_uvarint(data, pos - 2, end, 64)
            timestamp_delta = (raw >> 1) ^ -(raw & 1)
            raw = data[pos]
            pos += 1
            if raw > 0x7F:
                second = data[pos]
                pos += 1
                raw = (raw & 0x7F) | (second << 7)
                if second > 0x7F:
                    raw, pos = _read_uvarint(data, pos - 2, end, 32)
            offset_delta_ok = raw == index << 1  # zigzag of a non-negative index
            raw = data[pos]
            pos += 1
            if raw > 0x7F:
                second = data[pos]
                pos += 1
                raw = (raw & 0x7F) | (second << 7)
                if second > 0x7F:
                    raw, pos = _read_uvarint(data, pos - 2, end, 32)
            if raw & 1:
                if raw != 1:
                    raise _invalid(f"Invalid key length {-(raw + 1) >> 1} (record {index})")
                missing_key = require_keys
            else:
                pos += raw >> 1
                missing_key = False
            raw = data[pos]
            pos += 1
            if raw > 0x7F:
                second = data[pos]
                pos += 1
                raw = (raw & 0x7F) | (second << 7)
                if second > 0x7F:
                    raw, pos = _read_uvarint(data, pos - 2, end, 32)
            if raw & 1:
                if raw != 1:
                    raise _invalid(f"Invalid value length {-(raw + 1) >> 1} (record {index})")
            else:
                pos += raw >> 1
            raw = data[pos]
            pos += 1
            if raw:  # a header count: rare, so out of line
                pos = _skip_headers(data, pos, raw, end, record_end, index)
            if pos != record_end:
                raise _invalid(
                    f"Invalid record size: expected to read {length} bytes in record payload, "
                    f"but instead read {pos - record_end + length} (record {index})"
                )
            if timestamp_delta > max_delta:
                max_delta, max_index = timestamp_delta, index
            if (
                not offset_delta_ok
                or missing_key
                or every_record_fails_time
                or (
                    check_range
                    and not low <= timestamp_delta <= high
                    and timestamp_delta != no_timestamp_delta
                )
            ):
                error_total += 1
                if len(errors) < MAX_RECORD_ERRORS:
                    timestamp = base_timestamp + timestamp_delta
                    errors.append(
                        _record_error(
                            index,
                            offset_delta_ok,
                            missing_key,
                            timestamp if append_time is None else append_time,
                            append_time is not None,
                            log_append_time_topic,
                            bounds,
                        )
                    )
    except (IndexError, CodecError) as exc:
        if isinstance(exc, BatchValidationError):
            raise
        raise _invalid(f"Found invalid record structure ({exc}) (record {index})") from exc
    if pos != end:
        raise _invalid(
            f"Incorrect declared batch size, records still remaining in file ({end - pos} "
            "bytes after the last record)"
        )
    return max_delta, max_index, errors, error_total


def _skip_headers(
    data: bytes | bytearray, pos: int, raw: int, end: int, record_end: int, index: int
) -> int:
    """Skip a record's headers, ``raw`` being the first byte of their count (read up to
    ``pos``); keys must not be null. Out of line (many records have none), with one-byte
    varints inline (most lengths here)."""
    if raw > 0x7F:
        raw, pos = _read_uvarint(data, pos - 1, end, 32)
    count = (raw >> 1) ^ -(raw & 1)
    if count < 0 or count * 2 > record_end - pos:
        raise _invalid(f"Found invalid number of record headers {count} (record {index})")
    for _ in range(count):
        raw = data[pos]
        pos += 1
        if raw > 0x7F:
            raw, pos = _read_uvarint(data, pos - 1, end, 32)
        if raw & 1:
            raise _invalid(f"Invalid negative header key size {-(raw + 1) >> 1} (record {index})")
        pos += raw >> 1
        raw = data[pos]
        pos += 1
        if raw > 0x7F:
            raw, pos = _read_uvarint(data, pos - 1, end, 32)
        if raw & 1:
            if raw != 1:
                raise _invalid(f"Invalid header value length {-(raw + 1) >> 1} (record {index})")
        else:
            pos += raw >> 1
    return pos


def _record_error(
    index: int,
    offset_delta_ok: bool,
    missing_key: bool,
    timestamp: int,
    batch_log_append_time: bool,
    log_append_time_topic: bool,
    bounds: tuple[int, int] | None,
) -> tuple[int, int, str]:
    """The first failing check of ``LogValidator.validateRecord`` for a record known to fail."""
    if not offset_delta_ok:
        return (
            ErrorCode.INVALID_RECORD,
            index,
            f"Record {index} has an offset delta other than its position in the batch",
        )
    if missing_key:
        return (
            ErrorCode.INVALID_RECORD,
            index,
            "Compacted topic cannot accept message without key",
        )
    message = _timestamp_error(
        index, timestamp, batch_log_append_time, log_append_time_topic, bounds
    )
    assert message is not None, "called for a record that passes every check"
    return (ErrorCode.INVALID_TIMESTAMP, index, message)


def _timestamp_error(
    index: int,
    timestamp: int,
    batch_log_append_time: bool,
    log_append_time_topic: bool,
    bounds: tuple[int, int] | None,
) -> str | None:
    """``LogValidator.validateTimestamp``: the window applies to CreateTime topics, and a
    producer may not claim LogAppendTime (unless a CreateTime topic finds its time in range)."""
    if not log_append_time_topic and timestamp != NO_TIMESTAMP:
        if bounds is not None and not bounds[0] <= timestamp <= bounds[1]:
            return (
                f"Timestamp {timestamp} of message with offset {index} is out of range. "
                f"The timestamp should be within [{bounds[0]}, {bounds[1]}]"
            )
        return None
    if batch_log_append_time:
        return (
            f"Invalid timestamp type in message {index}. Producer should not set timestamp "
            "type to LogAppendTime."
        )
    return None


def _record_errors(errors: list[tuple[int, int, str]], total: int) -> BatchValidationError:
    """Kafka's ``processRecordErrors``: INVALID_TIMESTAMP if any record has a bad timestamp."""
    pairs = [(index, message) for _, index, message in errors]
    if any(code == ErrorCode.INVALID_TIMESTAMP for code, _, _ in errors):
        return BatchValidationError(
            ErrorCode.INVALID_TIMESTAMP,
            "One or more records have been rejected due to invalid timestamp",
            pairs,
        )
    shown = ", ".join(
        f"RecordError(batchIndex={index}, message='{message}')" for index, message in pairs[:3]
    )
    return BatchValidationError(
        ErrorCode.INVALID_RECORD,
        f"One or more records have been rejected due to {total} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]",
        pairs,
    )
