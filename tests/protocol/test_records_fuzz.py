"""Hypothesis fuzzing: random and mutated batches, compressed payloads and byte streams must
only ever raise CodecError (and never hang or allocate without bound).

Example counts add up to 10,500 per run; the file runs in a few seconds.
"""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_protocol_codec import records as r
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.framing import FrameReader, frame, peek_request_header

CODECS = [c.value for c in r.Compression]
MAX_OUT = 1 << 20  # decompression limit used while fuzzing


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


headers = st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=8)), max_size=3)
specs = st.lists(
    st.builds(
        r.RecordSpec,
        value=st.none() | st.binary(max_size=40),
        key=st.none() | st.binary(max_size=12),
        headers=headers,
        timestamp=st.integers(-(2**40), 2**40),
    ),
    min_size=1,
    max_size=6,
)


def fix_crc(batch: bytearray) -> None:
    """Make the header consistent again (length and CRC) so decoding goes past the CRC check."""
    if len(batch) >= r.HEADER_SIZE:
        batch[8:12] = struct.pack(">i", len(batch) - r.LOG_OVERHEAD)
        batch[17:21] = struct.pack(">I", r.crc32c(batch[r.CRC_START :]))


@st.composite
def mutated(draw: Any, data: bytes, start: int = 0) -> bytearray:
    """``data`` with bytes flipped, overwritten, inserted or cut at or after ``start``."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        if len(out) <= start:
            kind = "insert"
        pos = draw(st.integers(start, max(start, len(out) - 1)))
        if kind == "flip":
            out[pos] ^= draw(st.integers(1, 255))
        elif kind == "set":
            value = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, 0x01]))
            out[pos : pos + 4] = bytes([value]) * len(out[pos : pos + 4])
        elif kind == "insert":
            out[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del out[pos : pos + draw(st.integers(1, 16))]
        else:
            del out[pos:]
    return out


def exercise_blob(data: bytes | bytearray) -> None:
    """Run every decoding entry point over ``data``; only CodecError may escape."""
    for allow_partial in (False, True):
        try:
            views = r.split_batches(data, allow_partial=allow_partial)
        except CodecError:
            continue
        for view in views:
            exercise_batch(view)
    exercise_batch(data)


def exercise_batch(batch: bytes | bytearray | memoryview) -> None:
    for call in (
        lambda: r.peek_magic(batch),
        lambda: r.BatchHeader.parse(batch),
        lambda: r.verify_crc(batch),
        lambda: r.decode_batch(batch, max_decompressed_size=MAX_OUT),
        lambda: r.decode_batch(batch, check_crc=False, max_decompressed_size=MAX_OUT),
        lambda: list(r.iter_records(batch, check_crc=False, max_decompressed_size=MAX_OUT)),
        lambda: r.patch_max_timestamp_log_append(batch, 1),
    ):
        try:
            call()
        except CodecError:
            pass
    decoded = None
    try:
        decoded = r.decode_batch(batch, check_crc=False, max_decompressed_size=MAX_OUT)
    except CodecError:
        return
    for record in decoded.records:
        try:
            r.decode_control_record(record)
        except CodecError:
            pass


@fuzz(3000)
@given(specs, st.sampled_from(CODECS), st.data())
def test_mutated_batches(records: list[r.RecordSpec], codec: int, data: st.DataObject) -> None:
    batch = r.build_batch(records, compression=codec, base_offset=5)
    assert [rec.value for rec in r.decode_batch(batch).records] == [s.value for s in records]
    broken = data.draw(mutated(batch))
    if data.draw(st.booleans()):
        fix_crc(broken)
    exercise_blob(bytes(broken))
    exercise_blob(batch + broken)  # a good batch followed by a bad one


@fuzz(2500)
@given(specs, st.sampled_from(CODECS), st.data())
def test_mutated_record_bodies(
    records: list[r.RecordSpec], codec: int, data: st.DataObject
) -> None:
    """Corrupt the records, then compress and checksum them properly: the record parser and
    the decompressors see garbage behind a valid header."""
    plain = r.build_batch(records)
    body = data.draw(mutated(plain, start=r.HEADER_SIZE))[r.HEADER_SIZE :]
    batch = bytearray(plain[: r.HEADER_SIZE]) + r.compress(codec, bytes(body))
    batch[21:23] = struct.pack(">h", codec)
    if data.draw(st.booleans()):
        batch[57:61] = struct.pack(">i", data.draw(st.integers(-(2**31), 2**31 - 1)))
    fix_crc(batch)
    exercise_batch(bytes(batch))


@fuzz(2000)
@given(st.binary(max_size=200), st.sampled_from(CODECS))
def test_random_bytes(blob: bytes, codec: int) -> None:
    exercise_blob(blob)
    for call in (
        lambda: r.decompress(codec, blob, max_size=MAX_OUT),
        lambda: r.read_varint(blob),
        lambda: r.read_varlong(blob),
        lambda: r.read_unsigned_varint(blob),
        lambda: peek_request_header(blob),
    ):
        try:
            call()
        except CodecError:
            pass


@fuzz(1500)
@given(st.binary(min_size=0, max_size=3000), st.sampled_from([1, 2, 3, 4]), st.data())
def test_mutated_compressed_payloads(payload: bytes, codec: int, data: st.DataObject) -> None:
    packed = r.compress(codec, payload)
    assert r.decompress(codec, packed) == payload
    broken = bytes(data.draw(mutated(packed)))
    limit = data.draw(st.sampled_from([0, 100, len(payload), MAX_OUT]))
    try:
        out = r.decompress(codec, broken, max_size=limit)
    except CodecError:
        return
    assert len(out) <= limit


@fuzz(1500)
@given(
    st.lists(st.binary(max_size=40), max_size=5),
    st.binary(max_size=60),
    st.lists(st.integers(1, 30), min_size=1, max_size=10),
    st.integers(0, 64),
)
def test_frame_reader(
    bodies: list[bytes], junk: bytes, chunks: list[int], max_frame_size: int
) -> None:
    stream = b"".join(frame(b) for b in bodies) + junk
    reader = FrameReader(max_frame_size=max_frame_size)
    got: list[bytes] = []
    pos = 0
    try:
        while pos < len(stream):
            for size in chunks:
                reader.feed(stream[pos : pos + size])
                pos += size
                got.extend(reader.frames())
    except CodecError:
        pass
    # Whatever came out is a prefix of what went in, frame for frame.
    assert got == bodies[: len(got)] or bodies == [] or b"".join(map(frame, got)) in stream
    assert all(len(g) <= max_frame_size for g in got)
