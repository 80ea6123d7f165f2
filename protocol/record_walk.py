# cython: language_level=3, boundscheck=False, wraparound=False, annotation_typing=False
"""The record walk of a produced batch: every record of a magic-2 records section, exactly.

Theory of operation: one implementation, in Cython's pure Python mode. This file is plain
Python and runs as such; ``make accel`` (and the package build) compile the same file, with
the C types declared beside it in ``record_walk.pxd``, into an extension module of the same
name, which Python then imports instead. Both are the same source, so they decide the same:
the compiled build only types the locals (64-bit integers, a byte buffer).

``walk_records`` reads ``count`` records from ``data[pos:]`` as Kafka's ``DefaultRecord``
does: every length, count and varint consistent and nothing left over, or a
``RecordWalkError`` naming the first structural fault (Kafka's ``InvalidRecordException``:
INVALID_RECORD to the producer). Per-record faults (an offset delta other than the record's
index, a missing key on a compacted topic, a timestamp outside the window) do not stop the
walk: the first ``max_failures`` are returned, with their total, for the caller to word.
Keys, values and headers are skipped by their lengths; nothing is built per record.

Every byte is read through ``_Reader.uvarint``, which checks the position against ``end``
first: that check is what keeps the compiled build (no bounds checks of its own) inside the
buffer.
Timestamp deltas are compared with the window as 64-bit integers: the caller clamps the
window to the int64 range first (``validation.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .exceptions import CodecError

if TYPE_CHECKING:
    from .record_batches import Buffer

_MIN_RECORD_SIZE = 7  # length, attributes, timestamp, offset delta, key, value, header count


class RecordWalkError(CodecError):
    """A records section that does not parse; the message says what and at which record."""


class _Reader:
    """A position in a buffer that ends at ``end``; every read checks the position first.
    (Compiled, a C struct: ``data`` a typed byte view, ``pos`` and ``end`` C integers.)"""

    def __init__(self, data: Buffer, pos: int) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data)

    def uvarint(self, bits: int) -> int:
        """An unsigned LEB128 value of at most ``bits`` bits, read at ``pos`` (which moves
        past it). CodecError when it is truncated, longer than ``bits`` allow, or its value
        does not fit them."""
        pos = self.pos  # (self.data is read in place: a compiled local copy of the view
        # would take and drop a reference to it on every call)
        end = self.end
        value = 0
        shift = 0
        while shift < bits:
            if pos >= end:
                raise CodecError("truncated varint")
            byte = self.data[pos]
            pos += 1
            if byte < 0x80:
                # the last byte: its bits above `bits` must be clear (tested before
                # shifting, so the compiled build never shifts past 64 bits)
                if bits - shift < 7 and byte >> (bits - shift):
                    raise CodecError(f"varint value does not fit {bits} bits")
                self.pos = pos
                return value | (byte << shift)
            value |= (byte & 0x7F) << shift
            shift += 7
        raise CodecError(f"varint longer than {(bits + 6) // 7} bytes")


def _zigzag(raw: int) -> int:
    """The signed value of a zigzag-encoded varint."""
    return (raw >> 1) ^ -(raw & 1)


def walk_records(
    data: Buffer,
    pos: int,
    count: int,
    require_keys: bool,
    check_range: bool,
    low: int,
    high: int,
    no_timestamp_delta: int,
    every_record_fails: bool,
    max_failures: int,
) -> tuple[int, int, list[tuple[int, bool, bool, int]], int]:
    """Walk ``count`` records from ``data[pos:]`` to its end.

    ``require_keys``: a null key is a failure (a compacted topic). ``check_range``: a
    timestamp delta outside [``low``, ``high``] is a failure, unless it is
    ``no_timestamp_delta`` (the record carries no timestamp). ``every_record_fails``: every
    record fails its timestamp check (the caller knows it from the batch header).

    Returns (the largest timestamp delta above ``no_timestamp_delta``, the index of its
    first record or -1, the first ``max_failures`` failing records as (index, offset delta
    is the index, key missing, timestamp delta), the number of failing records).
    Raises RecordWalkError at the first structural fault.
    """
    reader = _Reader(data, pos)
    end = reader.end
    if count > (end - pos) // _MIN_RECORD_SIZE:
        raise RecordWalkError(
            f"Incorrect declared batch size: {count} records cannot fit in {end - pos} bytes"
        )
    max_delta = no_timestamp_delta  # a timestamp counts when above NO_TIMESTAMP
    max_index = -1
    failures: list[tuple[int, bool, bool, int]] = []
    failed = 0
    index = 0
    try:
        for index in range(count):
            if reader.pos >= end:
                raise RecordWalkError(
                    f"Incorrect declared batch size, premature EOF reached (record {index} of "
                    f"{count})"
                )
            length = _zigzag(reader.uvarint(32))
            record_end = reader.pos + length
            if length < 0 or record_end > end:
                raise RecordWalkError(
                    f"Invalid record size: expected {length} bytes in record payload, but "
                    f"instead the buffer has only {end - reader.pos} remaining bytes (record "
                    f"{index})"
                )
            reader.pos += 1  # attributes (unused in magic 2)
            timestamp_delta = _zigzag(reader.uvarint(64))
            offset_delta_ok = reader.uvarint(32) == index << 1  # zigzag of the index
            raw = reader.uvarint(32)  # key length
            missing_key = False
            if raw & 1:
                if raw != 1:
                    raise RecordWalkError(f"Invalid key length {_zigzag(raw)} (record {index})")
                missing_key = require_keys
            else:
                reader.pos += raw >> 1
            raw = reader.uvarint(32)  # value length
            if raw & 1:
                if raw != 1:
                    raise RecordWalkError(
                        f"Invalid value length {_zigzag(raw)} (record {index})")
            else:
                reader.pos += raw >> 1
            raw = reader.uvarint(32)  # header count
            if raw:
                _skip_headers(reader, _zigzag(raw), record_end, index)
            if reader.pos != record_end:
                raise RecordWalkError(
                    f"Invalid record size: expected to read {length} bytes in record payload, "
                    f"but instead read {reader.pos - record_end + length} (record {index})"
                )
            if timestamp_delta > max_delta:
                max_delta = timestamp_delta
                max_index = index
            if (
                not offset_delta_ok
                or missing_key
                or every_record_fails
                or (
                    check_range
                    and not low <= timestamp_delta <= high
                    and timestamp_delta != no_timestamp_delta
                )
            ):
                failed += 1
                if len(failures) < max_failures:
                    failures.append((index, offset_delta_ok, missing_key, timestamp_delta))
    except RecordWalkError:
        raise
    except CodecError as exc:  # a varint's own fault
        raise RecordWalkError(
            f"Found invalid record structure ({exc}) (record {index})") from exc
    if reader.pos != end:
        raise RecordWalkError(
            f"Incorrect declared batch size, records still remaining in file "
            f"({end - reader.pos} bytes after the last record)"
        )
    return max_delta, max_index, failures, failed


def _skip_headers(reader: _Reader, count: int, record_end: int, index: int) -> None:
    """Skip a record's ``count`` headers; keys must not be null."""
    if count < 0 or count * 2 > record_end - reader.pos:
        raise RecordWalkError(
            f"Found invalid number of record headers {count} (record {index})")
    for _ in range(count):
        raw = reader.uvarint(32)
        if raw & 1:
            raise RecordWalkError(
                f"Invalid negative header key size {_zigzag(raw)} (record {index})")
        reader.pos += raw >> 1
        raw = reader.uvarint(32)
        if raw & 1:
            if raw != 1:
                raise RecordWalkError(
                    f"Invalid header value length {_zigzag(raw)} (record {index})")
        else:
            reader.pos += raw >> 1
