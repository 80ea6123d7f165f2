"""Kafka batch compression codecs, with decompression bounded before any output exists.

Theory of operation: a record batch body is compressed as a whole with one of four codecs, and
a broker has to inflate bodies sent by untrusted peers, so a small input must never be able to
make it allocate without limit (a "zip bomb"). Each codec is bounded in the way its format
allows, before output is produced: gzip through zlib's ``max_length``; snappy from the length
every raw block declares, checked against ``max_size`` and against what the block could
possibly expand to (at most ~21x); lz4 and zstd by walking their frame and block headers, which
give an upper bound on the output (an lz4 block regenerates at most its frame's block maximum
and at most 255 bytes per input byte, a zstd block at most 128 KiB), then decompressing into a
buffer of min(bound, max_size) bytes that the decoder cannot overrun: output that does not fit
is an error, never a reallocation. So at most ``max_size`` output bytes are ever allocated, and
only when the input's own headers allow that much. Loops over frames, gzip members and xerial
blocks are capped, so a hostile input costs time proportional to its size at most.
cramjam does the actual (de)compression in native code; it is imported on first use.

Encoding follows what Kafka's Java producer emits: snappy in the xerial framing (decoding also
takes raw snappy, which librdkafka sends), lz4 frames with independent blocks (KIP-57).

This module is split out of ``records`` only to keep both files short; ``records`` re-exports
``Compression``, ``compress`` and ``decompress``.
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Callable
from typing import TypeAlias

from .exceptions import CodecError


class DecompressedSizeError(CodecError):
    """The output would pass the caller's ``max_size``: too large (or corrupt) to inflate.

    Its own type so that a broker can answer "too large" rather than "corrupt": when a
    decoder fails on a buffer capped below its proven bound, the input was either a bomb or
    damaged, and this is raised for both.
    """


Buffer: TypeAlias = bytes | bytearray | memoryview

DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
_I32 = struct.Struct(">i")
_MAX_FRAMES = 1024  # lz4/zstd frames or gzip members in one payload
_MAX_XERIAL_BLOCKS = 65536  # 2 GiB at the usual 32 KiB xerial block size
_MIN_BLOCK_COST = 1024  # lz4/zstd blocks count for at least this much in the output bound


class Compression(enum.IntEnum):
    """The codec ids stored in bits 0-2 of the batch attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def _view(data: Buffer) -> memoryview:
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def _snappy_length(block: memoryview) -> int:
    """The uncompressed length a raw snappy block starts with (unsigned 32-bit varint)."""
    result = shift = 0
    for byte in block[:5]:
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            if result > 0xFFFFFFFF:
                break
            return result
        shift += 7
    raise CodecError("snappy: invalid length header")


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + _I32.pack(1) + _I32.pack(1)
_XERIAL_BLOCK = 32 * 1024  # what the Java client (xerial SnappyOutputStream) uses
_LZ4_MAGIC = 0x184D2204
_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 128 * 1024
_LZ4_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}


def compress(codec: int, data: Buffer) -> bytes:
    """Compress ``data`` as Kafka producers do: gzip, xerial-framed snappy, lz4 frame with
    independent blocks (KIP-57), or zstd."""
    import cramjam

    try:
        if codec == Compression.NONE:
            return bytes(data)
        if codec == Compression.GZIP:
            return bytes(cramjam.gzip.compress(data))
        if codec == Compression.SNAPPY:
            view = _view(data)
            parts = [_XERIAL_HEADER]
            for start in range(0, len(view), _XERIAL_BLOCK):
                block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
                parts += (_I32.pack(len(block)), block)
            return b"".join(parts)
        if codec == Compression.LZ4:
            compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
            compressor.compress(data if isinstance(data, bytes) else bytes(data))
            return bytes(compressor.finish())
        if codec == Compression.ZSTD:
            return bytes(cramjam.zstd.compress(data))
    except (cramjam.CompressionError, OSError, ValueError, TypeError) as exc:
        raise CodecError(f"compression failed: {exc}") from exc
    raise CodecError(f"unknown compression codec {codec}")


def decompress(codec: int, data: Buffer, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress a batch body; output larger than ``max_size`` is refused before it exists."""
    view = _view(data)
    if codec == Compression.NONE:
        if len(view) > max_size:
            raise DecompressedSizeError(f"data larger than {max_size} bytes")
        return bytes(view)
    if codec == Compression.GZIP:
        return _gunzip(view, max_size)
    if codec == Compression.SNAPPY:
        return _unsnappy(view, max_size)
    import cramjam

    if codec == Compression.LZ4:
        bound = _lz4_bound(view, max_size)
        return _decompress_into(cramjam.lz4.decompress_into, view, bound, max_size)
    if codec == Compression.ZSTD:
        bound = _zstd_bound(view, max_size)
        return _decompress_into(cramjam.zstd.decompress_into, view, bound, max_size)
    raise CodecError(f"unknown compression codec {codec}")


def _decompress_into(
    func: Callable[[memoryview, bytearray], int], src: memoryview, bound: int, max_size: int
) -> bytes:
    """Decompress into a buffer of min(bound, max_size) bytes, which the decoder cannot overrun.

    ``bound`` must be a proven upper bound of the output (over-estimating only costs memory).
    """
    out = bytearray(min(bound, max_size))
    try:
        written = func(src, out)
    except Exception as exc:  # cramjam raises DecompressionError, OSError, ValueError...
        if bound > max_size:
            raise DecompressedSizeError(
                f"corrupt, or decompressed data would exceed {max_size} bytes"
            ) from exc
        raise CodecError(f"decompression failed: {exc}") from exc
    del out[written:]
    return bytes(out)


def _too_big(max_size: int) -> DecompressedSizeError:
    return DecompressedSizeError(f"decompressed data would exceed {max_size} bytes")


def _gunzip(view: memoryview, max_size: int) -> bytes:
    parts: list[bytes] = []
    produced = 0
    rest: Buffer = view
    for _ in range(_MAX_FRAMES):
        inflater = zlib.decompressobj(wbits=31)  # gzip wrapper only
        pending: Buffer = rest
        try:
            while True:
                chunk = inflater.decompress(pending, max_size + 1 - produced)
                produced += len(chunk)
                if produced > max_size:
                    raise _too_big(max_size)
                parts.append(chunk)
                pending = inflater.unconsumed_tail
                if inflater.eof or not pending:
                    break
        except zlib.error as exc:
            raise CodecError(f"gzip: {exc}") from exc
        if not inflater.eof:
            raise CodecError("gzip: truncated stream")
        rest = inflater.unused_data
        if not rest:
            return b"".join(parts)
        if rest[:2] != b"\x1f\x8b":
            raise CodecError("gzip: trailing bytes after the last member")
    raise CodecError("gzip: too many members")


def _snappy_raw(block: memoryview, max_size: int, produced: int = 0) -> bytes:
    """Decompress one raw snappy block, ``produced`` bytes having come before it."""
    size = _snappy_length(block)
    # A snappy tag of n bytes emits at most ~21n bytes (copy-2: 3 bytes -> 64 bytes).
    if size > 22 * len(block):
        raise CodecError("snappy: declared length impossible for the input size")
    if produced + size > max_size:
        raise _too_big(max_size)
    import cramjam

    return _decompress_into(cramjam.snappy.decompress_raw_into, block, size, size)


def _unsnappy(view: memoryview, max_size: int) -> bytes:
    if len(view) < 16 or view[:8] != _XERIAL_MAGIC:
        return _snappy_raw(view, max_size)
    parts: list[bytes] = []
    produced = 0
    pos = 16  # magic, then version and compat int32s that readers ignore
    while pos < len(view):
        if len(parts) >= _MAX_XERIAL_BLOCKS or len(view) - pos < 4:
            raise CodecError("snappy: malformed xerial stream")
        size = _I32.unpack_from(view, pos)[0]
        pos += 4
        if size <= 0 or size > len(view) - pos:
            raise CodecError(f"snappy: invalid xerial block length {size}")
        part = _snappy_raw(view[pos : pos + size], max_size, produced)
        produced += len(part)
        parts.append(part)
        pos += size
    return b"".join(parts)


def _skip_frame(view: memoryview, pos: int) -> int:
    """Skip an lz4/zstd skippable frame (magic 0x184D2A5?) at ``pos``; return its end."""
    if len(view) - pos < 8:
        raise CodecError("truncated skippable frame")
    end: int = pos + 8 + int.from_bytes(view[pos + 4 : pos + 8], "little")
    if end > len(view):
        raise CodecError("truncated skippable frame")
    return end


def _lz4_bound(view: memoryview, max_size: int) -> int:
    """Upper bound of the output of an lz4 frame sequence, from its block headers.

    Walking stops once the bound passes ``max_size``: the output buffer is capped there anyway.
    Every block counts for at least _MIN_BLOCK_COST, which limits the walk to max_size/1 KiB
    blocks at most; the over-estimate only enlarges the (capped) buffer.
    """
    total = len(view)
    pos = bound = frames = 0
    while pos < total or frames == 0:
        frames += 1
        if frames > _MAX_FRAMES or total - pos < 7:
            raise CodecError("lz4: truncated or malformed frame")
        magic = int.from_bytes(view[pos : pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:
            pos = _skip_frame(view, pos)
            continue
        flags, descriptor = view[pos + 4], view[pos + 5]
        block_max = _LZ4_BLOCK_MAX.get((descriptor >> 4) & 7)
        if magic != _LZ4_MAGIC or flags >> 6 != 1 or block_max is None:
            raise CodecError("lz4: not an lz4 frame")
        pos += 7 + (8 if flags & 0x08 else 0) + (4 if flags & 0x01 else 0)
        block_checksum = 4 if flags & 0x10 else 0
        while True:
            if total - pos < 4:
                raise CodecError("lz4: truncated frame")
            word = int.from_bytes(view[pos : pos + 4], "little")
            pos += 4
            if word == 0:
                break
            size = word & 0x7FFFFFFF
            if size == 0 or size > block_max:
                raise CodecError(f"lz4: invalid block size {size}")
            pos += size + block_checksum
            if pos > total:
                raise CodecError("lz4: truncated block")
            # An lz4 sequence emits at most 255 bytes per input byte, plus a small constant.
            limit = size if word & 0x80000000 else min(block_max, 256 * size + 64)
            bound += max(limit, _MIN_BLOCK_COST)
            if bound > max_size:
                return bound
        pos += 4 if flags & 0x04 else 0
        if pos > total:
            raise CodecError("lz4: truncated content checksum")
    return bound


def _zstd_bound(view: memoryview, max_size: int) -> int:
    """Upper bound of the output of a zstd frame sequence: no block regenerates more than
    128 KiB, raw and RLE blocks exactly their Block_Size. Walking stops as for lz4."""
    total = len(view)
    pos = bound = frames = 0
    while pos < total or frames == 0:
        frames += 1
        if frames > _MAX_FRAMES or total - pos < 5:
            raise CodecError("zstd: truncated or malformed frame")
        magic = int.from_bytes(view[pos : pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:
            pos = _skip_frame(view, pos)
            continue
        descriptor = view[pos + 4]
        if magic != _ZSTD_MAGIC or descriptor & 0x08:
            raise CodecError("zstd: not a zstd frame")
        single_segment = descriptor & 0x20
        pos += 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3]
        pos += (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
        while True:
            if total - pos < 3:
                raise CodecError("zstd: truncated frame")
            block_header = int.from_bytes(view[pos : pos + 3], "little")
            block_type = (block_header >> 1) & 3
            size = block_header >> 3
            if block_type == 3 or size > _ZSTD_BLOCK_MAX:
                raise CodecError("zstd: invalid block header")
            pos += 3 + (1 if block_type == 1 else size)
            if pos > total:
                raise CodecError("zstd: truncated block")
            bound += max(size, _MIN_BLOCK_COST) if block_type != 2 else _ZSTD_BLOCK_MAX
            if bound > max_size:
                return bound
            if block_header & 1:
                break
        pos += 4 if descriptor & 0x04 else 0
        if pos > total:
            raise CodecError("zstd: truncated checksum")
    return bound
