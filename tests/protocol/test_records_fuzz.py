"""Hypothesis fuzzing: random and mutated batches, compressed payloads and byte streams must
only ever raise CodecError (and never hang or allocate without bound).

Example counts add up to 10,500 per run; the file runs in a few seconds.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_protocol_codec import record_batches as rb
from kafka_protocol_codec import records as r
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.framing import FrameError, FrameReader, frame, peek_request_header

CODECS = [c.value for c in r.Compression]
MAX_OUT = 1 << 20  # decompression limit used while fuzzing


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


def make_records(seed: int) -> list[r.RecordSpec]:
    """1-6 records from a seed: cheaper to generate than nested strategies, and the seed in a
    failure report is enough to reproduce the batch."""
    rnd = random.Random(seed)

    def blob(limit: int) -> bytes | None:
        return None if rnd.random() < 0.2 else rnd.randbytes(rnd.randrange(limit))

    return [
        r.RecordSpec(
            value=blob(40),
            key=blob(12),
            headers=[(rnd.choice(["", "h", "\u00e9t\u00e9", "key"]), blob(8))] * rnd.randrange(3),
            timestamp=rnd.randrange(-(2**40), 2**40),
        )
        for _ in range(rnd.randrange(1, 7))
    ]


seeds = st.integers(0, 2**32 - 1)


def fix_crc(batch: bytearray) -> None:
    """Make the header consistent again (length and CRC) so decoding goes past the CRC check."""
    if len(batch) >= rb.HEADER_SIZE:
        batch[8:12] = struct.pack(">i", len(batch) - rb.LOG_OVERHEAD)
        batch[17:21] = struct.pack(">I", rb.crc32c(batch[rb.CRC_START :]))


def mutated(data: bytes, seed: int, start: int = 0) -> bytearray:
    """``data`` with 1-4 random flips, overwrites, insertions or cuts at or after ``start``."""
    rnd = random.Random(seed)
    out = bytearray(data)
    for _ in range(rnd.randrange(1, 5)):
        pos = rnd.randrange(start, max(start, len(out)) + 1)
        kind = rnd.choice(["flip", "set", "insert", "delete", "truncate"])
        if kind == "flip" and pos < len(out):
            out[pos] ^= rnd.randrange(1, 256)
        elif kind == "set":
            out[pos : pos + 4] = bytes([rnd.choice([0x00, 0x01, 0x7F, 0x80, 0xFF])]) * 4
        elif kind == "insert":
            out[pos:pos] = rnd.randbytes(rnd.randrange(1, 17))
        elif kind == "delete":
            del out[pos : pos + rnd.randrange(1, 17)]
        else:
            del out[pos:]
    return out


def exercise_blob(data: bytes | bytearray) -> None:
    """Run every decoding entry point over ``data``; only CodecError may escape."""
    try:
        views = rb.split_batches(data)
    except CodecError:
        try:
            views = rb.split_batches(data, allow_partial=True)
        except CodecError:
            views = []
    for view in views:
        exercise_batch(view)
    if len(views) != 1:
        exercise_batch(data)


def exercise_batch(batch: bytes | bytearray | memoryview) -> None:
    calls: tuple[Callable[[], object], ...] = (
        lambda: rb.peek_magic(batch),
        lambda: rb.verify_crc(batch),
        lambda: rb.patch_max_timestamp_log_append(batch, 1),
        lambda: r.decode_batch(batch, max_decompressed_size=MAX_OUT),
    )
    for call in calls:
        try:
            call()
        except CodecError:
            pass
    try:  # past the CRC check: the decompressor and record parser see the damage
        records = list(r.iter_records(batch, check_crc=False, max_decompressed_size=MAX_OUT))
    except CodecError:
        return
    for record in records:
        try:
            r.decode_control_record(record)
        except CodecError:
            pass


@fuzz(3000)
@given(seeds, st.sampled_from(CODECS), seeds, st.booleans(), st.booleans())
def test_mutated_batches(seed: int, codec: int, damage: int, crc_ok: bool, prefix: bool) -> None:
    batch = r.build_batch(make_records(seed), compression=codec, base_offset=5)
    broken = mutated(batch, damage)
    if crc_ok:
        fix_crc(broken)
    if prefix:
        broken[:0] = batch  # a good batch followed by a bad one
    exercise_blob(bytes(broken))


@fuzz(2500)
@given(seeds, st.sampled_from(CODECS), seeds, st.none() | st.integers(-(2**31), 2**31 - 1))
def test_mutated_record_bodies(seed: int, codec: int, damage: int, count: int | None) -> None:
    """Corrupt the records, then compress and checksum them properly: the record parser and
    the decompressors see garbage behind a valid header."""
    plain = r.build_batch(make_records(seed))
    body = mutated(plain, damage, start=rb.HEADER_SIZE)[rb.HEADER_SIZE :]
    batch = bytearray(plain[: rb.HEADER_SIZE]) + r.compress(codec, bytes(body))
    batch[21:23] = struct.pack(">h", codec)
    if count is not None:
        batch[57:61] = struct.pack(">i", count)
    fix_crc(batch)
    exercise_batch(bytes(batch))


@fuzz(2000)
@given(st.binary(max_size=200), st.sampled_from(CODECS))
def test_random_bytes(blob: bytes, codec: int) -> None:
    exercise_blob(blob)
    calls: tuple[Callable[[], object], ...] = (
        lambda: r.decompress(codec, blob, max_size=MAX_OUT),
        lambda: r.read_varint(blob),
        lambda: r.read_varlong(blob),
        lambda: r.read_unsigned_varint(blob),
        lambda: peek_request_header(blob),
    )
    for call in calls:
        try:
            call()
        except CodecError:
            pass


@fuzz(1500)
@given(seeds, st.sampled_from([1, 2, 3, 4]), seeds, st.sampled_from([0, 100, None, MAX_OUT]))
def test_mutated_compressed_payloads(seed: int, codec: int, damage: int, limit: int | None) -> None:
    rnd = random.Random(seed)
    parts = [rnd.randbytes(rnd.randrange(50)) * rnd.randrange(1, 60) for _ in range(3)]
    payload = b"".join(parts)  # a mix of noise and repetition, up to ~9 KB
    packed = r.compress(codec, payload)
    assert r.decompress(codec, packed) == payload
    broken = bytes(mutated(packed, damage))
    limit = len(payload) if limit is None else limit
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
    failed = False
    try:
        while pos < len(stream):
            for size in chunks:
                reader.feed(stream[pos : pos + size])
                pos += size
                got.extend(reader.frames())
    except FrameError:
        failed = True
        # the whole frames before the bad prefix are still returned, then the error again
        with pytest.raises(FrameError):
            got.extend(reader.frames())
    # Frames come out in order; the junk after the real frames may parse as more frames.
    assert got[: len(bodies)] == bodies[: len(got)]
    assert failed or len(got) >= len(bodies)
    assert failed == any(len(b) > max_frame_size for b in bodies) or len(got) >= len(bodies)
    assert all(len(g) <= max_frame_size for g in got)
