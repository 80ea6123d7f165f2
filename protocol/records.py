"""Kafka record batches (magic 2): split, verify, patch, decode, build and (de)compress.

Theory of operation: a broker mostly moves record batches around as opaque bytes. On Produce it
splits the records blob into batches, checks each batch's magic and CRC, and overwrites the two
fields outside the CRC (baseOffset, partitionLeaderEpoch) before appending the bytes to its log;
on Fetch it returns those same bytes. So the hot path here (``split_batches``, ``BatchHeader``,
``verify_crc``, ``patch_batch``) works on memoryviews with one precompiled ``struct.Struct`` and
never decodes records. Decoding (``decode_batch``) and building (``build_batch``) exist for
transaction markers, reads, tests and tools, and favour strictness over speed; checking a
produced batch as Kafka does is ``validation.validate_batch``, which walks records unbuilt.

Everything here is untrusted input. Each length or count read from the bytes is checked against
the bytes actually present before anything is sliced or allocated, varints have a hard byte
limit, and every failure is a ``CodecError``. Bodies are inflated by the ``compression`` module
(re-exported here), which bounds the output before producing it.
"""

from __future__ import annotations

import enum
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE as DEFAULT_MAX_DECOMPRESSED_SIZE
from .compression import Compression as Compression
from .compression import compress as compress
from .compression import decompress as decompress
from .exceptions import CodecError

Buffer: TypeAlias = bytes | bytearray | memoryview

HEADER_SIZE = 61  # bytes of a v2 batch header, baseOffset to recordCount
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part not counted in batchLength
CRC_START = 21  # the CRC covers attributes to the end of the batch
MIN_LEGACY_ENTRY_SIZE = 14  # smallest magic 0 message after offset and size (Kafka's check)

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1


class CrcMismatchError(CodecError):
    """The stored CRC-32C does not match the batch bytes (Kafka's CORRUPT_MESSAGE)."""


_crc32c_impl: Callable[[Buffer], int] | None = None


def crc32c(data: Buffer) -> int:
    """CRC-32C (Castagnoli) of ``data``, C-accelerated. The crc32c package is imported on
    first use: importing it reads its distribution metadata (importlib.metadata), which costs
    more than all of a broker's start-up work that needs no CRC."""
    impl = _crc32c_impl
    if impl is None:
        impl = _load_crc32c()
    return impl(data)


def _load_crc32c() -> Callable[[Buffer], int]:
    global _crc32c_impl
    import crc32c as crc32c_lib

    _crc32c_impl = crc32c_lib.crc32c
    return _crc32c_impl


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
# Batch header, CRC, patching, splitting
# --------------------------------------------------------------------------------------------


def _view(data: Buffer) -> memoryview:
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


class BatchHeader(NamedTuple):
    """The 61-byte header of a v2 record batch, unpacked by one ``struct`` call."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @classmethod
    def parse(cls, data: Buffer, offset: int = 0) -> BatchHeader:
        """Unpack the header at ``offset``; the batch it announces must fit in ``data``.

        A magic other than 2 is not an error here (check ``magic``), but the other fields are
        then meaningless.
        """
        if offset < 0 or len(data) - offset < HEADER_SIZE:
            raise CodecError(f"record batch header needs {HEADER_SIZE} bytes")
        header = cls._make(_HEADER.unpack_from(data, offset))
        if header.batch_length < (HEADER_SIZE - LOG_OVERHEAD if header.magic == 2 else 0):
            raise CodecError(f"invalid batch length {header.batch_length}")
        if offset + LOG_OVERHEAD + header.batch_length > len(data):
            raise CodecError("batch length points past the end of the data")
        return header

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def total_size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def peek_magic(data: Buffer, offset: int = 0) -> int:
    """The magic byte of the batch or legacy message at ``offset`` (byte 16 in every format).

    ``split_batches`` returns legacy (magic 0/1) entries too; a broker calls this on each entry
    and answers UNSUPPORTED_FOR_MESSAGE_FORMAT for magic < 2 and CORRUPT_MESSAGE above 2.
    """
    view = _view(data)
    if offset < 0 or len(view) - offset < 17:
        raise CodecError("too short to hold a magic byte")
    value: int = view[offset + 16]
    return value - 256 if value > 127 else value


def split_batches(data: Buffer, *, allow_partial: bool = False) -> list[memoryview]:
    """Split a records blob (Produce or Fetch) into views of whole batches or legacy entries.

    A truncated final entry is dropped when ``allow_partial`` (Fetch responses may end with
    one) and is a ``CodecError`` otherwise. A size that cannot be valid is always an error.
    """
    view = _view(data)
    total = len(view)
    out: list[memoryview] = []
    pos = 0
    while pos < total:
        if total - pos < LOG_OVERHEAD:
            if allow_partial:
                break
            raise CodecError(f"{total - pos} trailing bytes after the last batch")
        size = _I32.unpack_from(view, pos + 8)[0]
        if size < MIN_LEGACY_ENTRY_SIZE:
            raise CodecError(f"invalid batch size {size}")
        end = pos + LOG_OVERHEAD + size
        if end > total:
            if allow_partial:
                break
            raise CodecError("last batch is truncated")
        if view[pos + 16] == 2 and size < HEADER_SIZE - LOG_OVERHEAD:
            raise CodecError(f"batch size {size} is smaller than a v2 header")
        out.append(view[pos:end])
        pos = end
    return out


def _batch_end(view: memoryview) -> int:
    if len(view) < HEADER_SIZE:
        raise CodecError(f"record batch needs at least {HEADER_SIZE} bytes")
    end: int = LOG_OVERHEAD + _I32.unpack_from(view, 8)[0]
    if end < HEADER_SIZE or end > len(view):
        raise CodecError("batch length does not match the data")
    return end


def compute_crc(batch: Buffer) -> int:
    """CRC-32C over the batch from ``attributes`` (byte 21) to the end given by batchLength."""
    view = _view(batch)
    return crc32c(view[CRC_START : _batch_end(view)])


def verify_crc(batch: Buffer) -> bool:
    """Whether the stored CRC matches; a batch too short to hold one is a ``CodecError``."""
    view = _view(batch)
    computed = compute_crc(view)
    stored: int = _U32.unpack_from(view, 17)[0]
    return computed == stored


def patch_batch_in_place(
    buf: bytearray | memoryview, base_offset: int, partition_leader_epoch: int, offset: int = 0
) -> None:
    """Overwrite baseOffset and partitionLeaderEpoch of the batch at ``offset`` (CRC stays valid)."""
    if offset < 0 or len(buf) - offset < HEADER_SIZE:
        raise CodecError(f"record batch needs at least {HEADER_SIZE} bytes")
    try:
        _I64.pack_into(buf, offset, base_offset)
        _I32.pack_into(buf, offset + 12, partition_leader_epoch)
    except (struct.error, TypeError) as exc:  # out of range, or a read-only buffer
        raise CodecError(f"cannot patch batch: {exc}") from exc


def patch_batch(batch: Buffer, base_offset: int, partition_leader_epoch: int) -> bytearray:
    """A copy of ``batch`` with baseOffset and partitionLeaderEpoch replaced."""
    out = bytearray(batch)
    patch_batch_in_place(out, base_offset, partition_leader_epoch)
    return out


def patch_max_timestamp_log_append(batch: Buffer, timestamp_ms: int) -> bytearray:
    """A copy with timestampType=LogAppendTime and maxTimestamp=``timestamp_ms``, CRC redone.

    This is what a broker does for topics with message.timestamp.type=LogAppendTime: record
    timestamps stay as sent, and readers report maxTimestamp for every record of the batch.
    """
    out = bytearray(batch)
    view = memoryview(out)
    try:
        end = _batch_end(view)
        attributes = _I16.unpack_from(view, CRC_START)[0] | TIMESTAMP_TYPE_MASK
        _I16.pack_into(view, CRC_START, attributes)
        _I64.pack_into(view, 35, timestamp_ms)
        _U32.pack_into(view, 17, crc32c(view[CRC_START:end]))
    except struct.error as exc:
        raise CodecError(f"cannot patch batch: {exc}") from exc
    finally:
        view.release()
    return out


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
    view = _view(batch)
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
        _HEADER.pack_into(
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
    _U32.pack_into(out, 17, crc32c(memoryview(out)[CRC_START:]))
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
        _HEADER.pack_into(out, 0, header.base_offset, len(out) - LOG_OVERHEAD, epoch, 2, 0,
                          attributes, header.last_offset_delta, base_timestamp, max_timestamp,
                          header.producer_id, header.producer_epoch, header.base_sequence,
                          len(records))
    except struct.error as exc:
        raise CodecError(f"batch header field out of range: {exc}") from exc
    _U32.pack_into(out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)
