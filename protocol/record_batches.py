"""Record batches (magic 2) as opaque bytes: the header, its CRC, patching and splitting.

Theory of operation: a broker mostly moves record batches around as opaque bytes. On Produce it
splits the records blob into batches, checks each batch's magic and CRC, and overwrites the two
fields outside the CRC (baseOffset, partitionLeaderEpoch) before appending the bytes to its log;
on Fetch it returns those same bytes. So this module, the hot path (``split_batches``,
``BatchHeader``, ``verify_crc``, ``patch_batch``), works on memoryviews with one precompiled
``struct.Struct`` and never decodes records: that is records.py (decoding and building the
records inside a batch) and validation.py (checking a produced batch as Kafka does).

Everything here is untrusted input. Each length read from the bytes is checked against the
bytes actually present before anything is sliced, and every failure is a ``CodecError``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple, TypeAlias

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

# The whole header, baseOffset to recordCount, in one call.
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")


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


def byte_view(data: Buffer) -> memoryview:
    """A flat unsigned-byte view of any buffer."""
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
        header = cls._make(HEADER_STRUCT.unpack_from(data, offset))
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
    view = byte_view(data)
    if offset < 0 or len(view) - offset < 17:
        raise CodecError("too short to hold a magic byte")
    value: int = view[offset + 16]
    return value - 256 if value > 127 else value


def split_batches(data: Buffer, *, allow_partial: bool = False) -> list[memoryview]:
    """Split a records blob (Produce or Fetch) into views of whole batches or legacy entries.

    A truncated final entry is dropped when ``allow_partial`` (Fetch responses may end with
    one) and is a ``CodecError`` otherwise. A size that cannot be valid is always an error.
    """
    view = byte_view(data)
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
    view = byte_view(batch)
    return crc32c(view[CRC_START : _batch_end(view)])


def verify_crc(batch: Buffer) -> bool:
    """Whether the stored CRC matches; a batch too short to hold one is a ``CodecError``."""
    view = byte_view(batch)
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
    patch_log_append_time_in_place(out, timestamp_ms)
    return out


def patch_log_append_time_in_place(buf: bytearray | memoryview, timestamp_ms: int) -> None:
    """``patch_max_timestamp_log_append`` on the batch where it lies (a writable buffer)."""
    view = memoryview(buf)
    try:
        end = _batch_end(view)
        attributes = _I16.unpack_from(view, CRC_START)[0] | TIMESTAMP_TYPE_MASK
        _I16.pack_into(view, CRC_START, attributes)
        _I64.pack_into(view, 35, timestamp_ms)
        _U32.pack_into(view, 17, crc32c(view[CRC_START:end]))
    except (struct.error, TypeError) as exc:  # too short, or a read-only buffer
        raise CodecError(f"cannot patch batch: {exc}") from exc
    finally:
        view.release()


def store_crc(batch: bytearray) -> None:
    """Compute the CRC of a whole batch just built and write it into its header."""
    _U32.pack_into(batch, 17, crc32c(memoryview(batch)[CRC_START:]))
