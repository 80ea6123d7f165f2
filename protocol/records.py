"""The records inside Kafka record batches (magic 2): decode, build and (de)compress.

Theory of operation: the batch level (header, CRC, patching, splitting a records blob) is
record_batches.py, the hot path that never decodes records. Decoding (``decode_batch``) and
building (``build_batch``, ``build_control_batch``, and the log cleaner's ``rebuild_batch``)
exist for transaction markers, reads, tests and tools, and favour strictness over speed;
checking a produced batch as Kafka does is ``validation.validate_batch``, which walks records
unbuilt. Record bodies use zigzag varints, read and written here.

Everything here is untrusted input. Each length or count read from the bytes is checked against
the bytes actually present before anything is sliced or allocated, varints have a hard byte
limit, and every failure is a ``CodecError``. Bodies are inflated by the ``compression`` module
(re-exported here), which bounds the output before producing it.
"""

from __future__ import annotations

import enum
import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE as DEFAULT_MAX_DECOMPRESSED_SIZE
from .compression import Compression as Compression
from .compression import compress as compress
from .compression import decompress as decompress
from .exceptions import CodecError
from .record_batches import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_START,
    DELETE_HORIZON_MASK,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    Buffer,
    CrcMismatchError,
    byte_view,
    crc32c,
    store_crc,
)

# The produce path (cluster/log/partition.py) imports these from here.
from .record_batches import BatchHeader as BatchHeader
from .record_batches import patch_batch as patch_batch
from .record_batches import patch_batch_in_place as patch_batch_in_place
from .record_batches import patch_log_append_time_in_place as patch_log_append_time_in_place
from .record_batches import patch_max_timestamp_log_append as patch_max_timestamp_log_append

_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1


# --------------------------------------------------------------------------------------------
# Varints (zigzag signed, as in record bodies) and unsigned varints
# --------------------------------------------------------------------------------------------


def _read_uvarint(data: Buffer, pos: int, limit: int, bits: int) -> tuple[int, int]:
    """Read an unsigned LEB128 value of at most ``bits`` bits that must end before ``limit``."""
    result = shift = 0
    while shift < bits:
        if pos >= limit:
            raise CodecError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            if result >> bits:
                raise CodecError(f"varint value does not fit {bits} bits")
            return result, pos
        shift += 7
    raise CodecError(f"varint longer than {(bits + 6) // 7} bytes")


def read_unsigned_varint(data: Buffer, pos: int = 0) -> tuple[int, int]:
    """Read an unsigned 32-bit varint at ``pos``; return ``(value, next_pos)``."""
    return _read_uvarint(data, pos, len(data), 32)


def read_varint(data: Buffer, pos: int = 0, limit: int | None = None) -> tuple[int, int]:
    """Read a zigzag int32 varint (at most 5 bytes) at ``pos``; return ``(value, next_pos)``."""
    raw, pos = _read_uvarint(data, pos, len(data) if limit is None else limit, 32)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(data: Buffer, pos: int = 0, limit: int | None = None) -> tuple[int, int]:
    """Read a zigzag int64 varint (at most 10 bytes) at ``pos``; return ``(value, next_pos)``."""
    raw, pos = _read_uvarint(data, pos, len(data) if limit is None else limit, 64)
    return (raw >> 1) ^ -(raw & 1), pos


def _put_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _put_varint(out: bytearray, value: int, bits: int = 32) -> None:
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise CodecError(f"{value} does not fit a {bits}-bit varint")
    _put_uvarint(out, (value << 1) ^ (value >> 63))


def encode_unsigned_varint(value: int) -> bytes:
    if not 0 <= value <= 0xFFFFFFFF:
        raise CodecError(f"{value} does not fit an unsigned 32-bit varint")
    out = bytearray()
    _put_uvarint(out, value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    out = bytearray()
    _put_varint(out, value, 32)
    return bytes(out)


def encode_varlong(value: int) -> bytes:
    out = bytearray()
    _put_varint(out, value, 64)
    return bytes(out)


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Header:
    """One record header: a string key and an optional byte value."""

    key: str
    value: bytes | None


@dataclass(slots=True)
class Record:
    """A decoded record; ``offset`` and ``timestamp`` are absolute, not deltas."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]
    attributes: int = 0


@dataclass(slots=True)
class RecordSpec:
    """A record to build: timestamp None means the batch base timestamp, offset_delta None
    means the record's position in the batch."""

    value: bytes | None = None
    key: bytes | None = None
    headers: Sequence[Header | tuple[str, bytes | None]] = ()
    timestamp: int | None = None
    offset_delta: int | None = None
    attributes: int = 0


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """The key of a control batch's record: a transaction marker (ABORT, COMMIT) or a KRaft
    control type."""

    type: int  # ControlRecordType: 0 ABORT, 1 COMMIT (KRaft uses more types)
    version: int  # of the control record key
    coordinator_epoch: int  # -1 for control types other than ABORT/COMMIT


@dataclass(slots=True)
class DecodedBatch:
    """A record batch's header with its records, decompressed, their offsets and timestamps
    absolute."""

    header: BatchHeader
    records: list[Record]

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def producer_id(self) -> int:
        return self.header.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.header.producer_epoch

    @property
    def base_sequence(self) -> int:
        return self.header.base_sequence

    @property
    def compression(self) -> int:
        return self.header.compression

    @property
    def timestamp_type(self) -> int:
        return self.header.timestamp_type

    @property
    def is_transactional(self) -> bool:
        return self.header.is_transactional

    @property
    def is_control(self) -> bool:
        return self.header.is_control


def _read_bytes(body: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    size, pos = read_varint(body, pos, end)
    if size < 0:
        if size != -1:
            raise CodecError(f"invalid field length {size}")
        return None, pos
    if size > end - pos:
        raise CodecError("field length points past the end of the record")
    return body[pos : pos + size], pos + size


def _parse_records(body: bytes, header: BatchHeader) -> Iterator[Record]:
    total = len(body)
    count = header.record_count
    if count < 0 or count > total // 7:  # a record takes at least 7 bytes
        raise CodecError(f"record count {count} does not fit in {total} bytes")
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    append_time = header.max_timestamp if header.timestamp_type else None
    pos = 0
    for _ in range(count):
        length, pos = read_varint(body, pos)
        end = pos + length
        if length <= 0 or end > total:
            raise CodecError(f"invalid record length {length}")
        attributes = body[pos]
        timestamp_delta, pos = read_varlong(body, pos + 1, end)
        offset_delta, pos = read_varint(body, pos, end)
        key, pos = _read_bytes(body, pos, end)
        value, pos = _read_bytes(body, pos, end)
        header_count, pos = read_varint(body, pos, end)
        if header_count < 0 or header_count > (end - pos) // 2:
            raise CodecError(f"invalid header count {header_count}")
        headers: list[Header] = []
        for _ in range(header_count):
            raw_key, pos = _read_bytes(body, pos, end)
            if raw_key is None:
                raise CodecError("null header key")
            header_value, pos = _read_bytes(body, pos, end)
            try:
                headers.append(Header(raw_key.decode("utf-8"), header_value))
            except UnicodeDecodeError as exc:
                raise CodecError(f"header key is not UTF-8: {exc}") from exc
        if pos != end:
            raise CodecError("record length does not match its content")
        timestamp = base_timestamp + timestamp_delta if append_time is None else append_time
        yield Record(base_offset + offset_delta, timestamp, key, value, headers, attributes)
    if pos != total:
        raise CodecError(f"{total - pos} bytes after the last record")


def _open_batch(
    batch: Buffer, check_crc: bool, max_decompressed_size: int
) -> tuple[BatchHeader, bytes]:
    view = byte_view(batch)
    header = BatchHeader.parse(view)
    if header.magic != 2:
        raise CodecError(f"unsupported record batch magic {header.magic}")
    if header.total_size != len(view):
        raise CodecError("data holds more than one batch")
    if check_crc and crc32c(view[CRC_START:]) != header.crc:
        raise CrcMismatchError("record batch CRC mismatch")
    body = decompress(header.compression, view[HEADER_SIZE:], max_decompressed_size)
    return header, body


def iter_records(
    batch: Buffer,
    *,
    check_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Iterator[Record]:
    """Yield the records of one whole batch (decompressing it first)."""
    header, body = _open_batch(batch, check_crc, max_decompressed_size)
    return _parse_records(body, header)


def decode_batch(
    batch: Buffer,
    *,
    check_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> DecodedBatch:
    """Decode one whole batch. For LogAppendTime batches each record's timestamp is the batch
    maxTimestamp, as Kafka consumers report it."""
    header, body = _open_batch(batch, check_crc, max_decompressed_size)
    return DecodedBatch(header, list(_parse_records(body, header)))


def decode_control_record(record: Record) -> ControlRecord:
    """Read the key (version, type) and, for ABORT/COMMIT, the marker value of a control record."""
    if record.key is None or len(record.key) < _CONTROL_KEY.size:
        raise CodecError("control record key too short")
    version, kind = _CONTROL_KEY.unpack_from(record.key)
    if version < 0:
        raise CodecError(f"invalid control record version {version}")
    if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return ControlRecord(kind, version, -1)
    if record.value is None or len(record.value) < _CONTROL_VALUE.size:
        raise CodecError("transaction marker value too short")
    return ControlRecord(kind, version, _CONTROL_VALUE.unpack_from(record.value)[1])


# --------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------


def _put_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(1)  # zigzag(-1)
    else:
        _put_varint(out, len(data))
        out += data


def _put_record(out: bytearray, rec: RecordSpec | Record, ts_delta: int, offset_delta: int) -> None:
    body = bytearray((rec.attributes & 0xFF,))
    _put_varint(body, ts_delta, 64)
    _put_varint(body, offset_delta)
    _put_bytes(body, rec.key)
    _put_bytes(body, rec.value)
    _put_varint(body, len(rec.headers))
    for item in rec.headers:
        key, value = (item.key, item.value) if isinstance(item, Header) else item
        try:
            _put_bytes(body, key.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise CodecError(f"header key cannot be encoded: {exc}") from exc
        _put_bytes(body, value)
    _put_varint(out, len(body))
    out += body


def build_batch(
    records: Sequence[RecordSpec | Record],
    *,
    base_offset: int = 0,
    compression: int = Compression.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp_type: int = TimestampType.CREATE_TIME,
    base_timestamp: int | None = None,
) -> bytes:
    """Build one v2 batch, computing lastOffsetDelta, maxTimestamp and the CRC.

    ``Record`` inputs keep their absolute offsets (delta = offset - base_offset), so gaps are
    possible; ``RecordSpec`` inputs default to consecutive deltas. base_timestamp defaults to
    the first record's timestamp (or now). With LogAppendTime every record gets base_timestamp,
    as a broker's builder does.
    """
    if not records:
        raise CodecError("a record batch needs at least one record")
    if base_timestamp is None:
        first = records[0].timestamp
        base_timestamp = int(time.time() * 1000) if first is None else first
    body = bytearray()
    last_delta = -1
    max_timestamp = base_timestamp
    for index, rec in enumerate(records):
        if isinstance(rec, Record):
            delta, timestamp = rec.offset - base_offset, rec.timestamp
        else:
            delta = index if rec.offset_delta is None else rec.offset_delta
            timestamp = base_timestamp if rec.timestamp is None else rec.timestamp
        if timestamp_type == TimestampType.LOG_APPEND_TIME:
            timestamp = base_timestamp
        if delta <= last_delta:
            raise CodecError("record offset deltas must be non-negative and increasing")
        last_delta = delta
        max_timestamp = timestamp if index == 0 else max(max_timestamp, timestamp)
        _put_record(body, rec, timestamp - base_timestamp, delta)
    attributes = (
        (compression & COMPRESSION_MASK)
        | (TIMESTAMP_TYPE_MASK if timestamp_type else 0)
        | (TRANSACTIONAL_MASK if transactional else 0)
        | (CONTROL_MASK if control else 0)
    )
    payload = compress(compression, body) if compression else body
    out = bytearray(HEADER_SIZE)
    out += payload
    try:
        HEADER_STRUCT.pack_into(
            out,
            0,
            base_offset,
            len(out) - LOG_OVERHEAD,
            partition_leader_epoch,
            2,  # magic
            0,  # crc, filled in below
            attributes,
            last_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    except struct.error as exc:
        raise CodecError(f"batch header field out of range: {exc}") from exc
    store_crc(out)
    return bytes(out)


def build_control_batch(
    *,
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int,
    timestamp_ms: int,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transaction marker: a transactional control batch holding one COMMIT/ABORT record."""
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    try:
        key = _CONTROL_KEY.pack(0, kind)
        value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    except struct.error as exc:
        raise CodecError(f"coordinator epoch out of range: {exc}") from exc
    return build_batch(
        [RecordSpec(value=value, key=key, timestamp=timestamp_ms)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
        base_timestamp=timestamp_ms,
    )


def rebuild_batch(
    header: BatchHeader,
    records: Sequence[Record],
    *,
    partition_leader_epoch: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """A log cleaner's copy of a batch holding only ``records`` (a subset of its own).

    As Kafka's ``MemoryRecords.filterTo`` writes a v2 batch: the base offset, last offset
    delta, producer id/epoch, base sequence, attributes (codec, timestamp type,
    transactional, control) and leader epoch are the original's, so offsets keep their gaps
    and producer state can still be read from it; the CRC is recomputed. With
    ``delete_horizon_ms`` (KIP-534) the base timestamp holds the horizon and the
    delete-horizon attribute is set; record timestamps stay absolute (their deltas are taken
    from that base). A LogAppendTime batch keeps its append time as max timestamp.
    """
    if not records:
        raise CodecError("a rebuilt batch needs at least one record")
    append_time = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    base_timestamp = records[0].timestamp if delete_horizon_ms is None else delete_horizon_ms
    body = bytearray()
    max_timestamp = header.max_timestamp if append_time else records[0].timestamp
    last_delta = -1
    for rec in records:
        delta = rec.offset - header.base_offset
        if delta <= last_delta or delta > header.last_offset_delta:
            raise CodecError("rebuilt records must keep increasing offsets inside the batch")
        last_delta = delta
        timestamp = header.max_timestamp if append_time else rec.timestamp
        if not append_time:
            max_timestamp = max(max_timestamp, timestamp)
        _put_record(body, rec, timestamp - base_timestamp, delta)
    attributes = header.attributes & ~DELETE_HORIZON_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
    codec = header.compression
    payload = compress(codec, body) if codec else body
    out = bytearray(HEADER_SIZE)
    out += payload
    epoch = header.partition_leader_epoch if partition_leader_epoch is None \
        else partition_leader_epoch
    try:
        HEADER_STRUCT.pack_into(out, 0, header.base_offset, len(out) - LOG_OVERHEAD, epoch, 2, 0,
                          attributes, header.last_offset_delta, base_timestamp, max_timestamp,
                          header.producer_id, header.producer_epoch, header.base_sequence,
                          len(records))
    except struct.error as exc:
        raise CodecError(f"batch header field out of range: {exc}") from exc
    store_crc(out)
    return bytes(out)
