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

Speed: this runs on every produced batch, so the record walk (``record_walk.py``) builds no
objects: it reads one buffer (the batch itself when uncompressed, else the body inflated once)
and skips keys, values and headers by their lengths. It is written in Cython's pure Python
mode: ``make accel`` compiles that same file into an extension, which is imported in its place
when built (``KAFKA_PROTOCOL_CODEC_PURE=1`` runs the .py as plain Python even then).
"""

from __future__ import annotations

import struct
from types import ModuleType
from typing import NamedTuple

from .compression import Compression, DecompressedSizeError, decompress
from .error_codes import ErrorCode
from .exceptions import CodecError
from .native import import_pure_mode, is_compiled
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

NO_TIMESTAMP = -1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


# the record walk: the compiled build of record_walk.py when there is one, else the .py itself
_walk_module = import_pure_mode("record_walk")
_PLAIN_PYTHON_WALK = not is_compiled(_walk_module)


def use_record_walk(module: ModuleType) -> ModuleType:
    """Walk records with `module` (record_walk, compiled or its source: tests and benchmarks
    run both); return the one used until now."""
    global _walk_module, _PLAIN_PYTHON_WALK
    previous, _walk_module, _PLAIN_PYTHON_WALK = _walk_module, module, not is_compiled(module)
    return previous


MAX_RECORD_ERRORS = 10_000  # kept per batch: a bomb of keyless records must not exhaust memory
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
    header = _check_framing(view, size, max_batch_bytes)
    _check_header(header)
    codec = header.attributes & 0x07
    if codec == Compression.NONE:
        data: Buffer = view
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
    max_delta, max_index = _walk_records(
        data,
        start,
        header.record_count,
        header.base_timestamp,
        require_keys,
        append_time,
        log_append_time,
        timestamp_bounds,
    )
    if append_time is not None:
        max_timestamp, max_index = append_time, (0 if append_time > NO_TIMESTAMP else -1)
    elif max_index < 0:
        max_timestamp = NO_TIMESTAMP
    else:  # Kafka adds in 64-bit arithmetic: wrap as it does
        max_timestamp = (header.base_timestamp + max_delta + (1 << 63)) % _INT64 - (1 << 63)
    return ValidatedBatch(header, max_timestamp, max_index, uncompressed)


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
    data: Buffer,
    pos: int,
    count: int,
    base_timestamp: int,
    require_keys: bool,
    append_time: int | None,
    log_append_time_topic: bool,
    bounds: tuple[int, int] | None,
) -> tuple[int, int]:
    """Walk ``count`` records from ``data[pos:]`` exactly (record_walk.py); return the
    largest timestamp delta above NO_TIMESTAMP's and its record index (-1: none), or raise
    the first structural fault, else the per-record failures, as Kafka words them."""
    # every delta a record can carry is an int64: the window as deltas, clamped to that
    # range, says the same of each (an empty window stays empty: low > high)
    no_timestamp_delta = NO_TIMESTAMP - base_timestamp
    check_range = append_time is None and not log_append_time_topic and bounds is not None
    low, high = 0, 0
    if bounds is not None:
        low = max(bounds[0] - base_timestamp, _INT64_MIN)
        high = min(bounds[1] - base_timestamp, _INT64_MAX)
        if low > high:
            low, high = 1, 0
    every_record_fails_time = (
        append_time is not None
        and _timestamp_error(0, append_time, True, log_append_time_topic, bounds) is not None
    )
    if _PLAIN_PYTHON_WALK and not isinstance(data, bytes):
        data = bytes(data)  # plain Python indexes bytes fastest; the compiled walk reads views
    try:
        max_delta, max_index, failures, failed = _walk_module.walk_records(
            data, pos, count, require_keys, check_range, low, high, no_timestamp_delta,
            every_record_fails_time, MAX_RECORD_ERRORS)
    except CodecError as exc:  # RecordWalkError: a structural fault, INVALID_RECORD
        raise _invalid(str(exc)) from exc
    if failed:
        errors = [
            _record_error(index, offset_delta_ok, missing_key,
                          base_timestamp + delta if append_time is None else append_time,
                          append_time is not None, log_append_time_topic, bounds)
            for index, offset_delta_ok, missing_key, delta in failures
        ]
        raise _record_errors(errors, failed)
    return max_delta, max_index


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
