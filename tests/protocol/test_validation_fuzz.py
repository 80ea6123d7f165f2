"""Hypothesis properties of validate_batch: whatever build_batch makes passes with the right
summary; damaged batches pass or raise BatchValidationError and nothing else; and the validator
agrees with the decoder on which record sections parse.

Example counts add up to 6,000 per run; the file runs in a few seconds.
"""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka_protocol_codec import record_batches as rb
from kafka_protocol_codec import records as r
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.validation import BatchValidationError, ValidatedBatch, validate_batch

from .test_records_fuzz import MAX_OUT, fix_crc, fuzz, make_records, mutated, seeds
from .walks import each_walk_build  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("each_walk_build")
CODECS = [c.value for c in r.Compression]


def try_validate(batch: bytes | bytearray | memoryview, **options: bool) -> ValidatedBatch | None:
    """The result, or None for a BatchValidationError; any other exception fails the test."""
    try:
        return validate_batch(batch, max_uncompressed_bytes=MAX_OUT, **options)
    except BatchValidationError as exc:
        assert isinstance(exc.error_code, int) and exc.message
        assert all(isinstance(i, int) and text for i, text in exc.record_errors)
        return None


def assert_decoder_agrees(batch: bytes | bytearray, result: ValidatedBatch) -> None:
    """A batch that validates decodes into consecutive records (a non-UTF-8 header key is the
    one thing Kafka accepts and our decoder refuses)."""
    try:
        decoded = r.decode_batch(batch, max_decompressed_size=MAX_OUT)
    except CodecError as exc:
        assert "UTF-8" in str(exc)
        return
    assert [rec.offset for rec in decoded.records] == list(range(result.record_count))
    if not decoded.header.timestamp_type:
        stamps = [rec.timestamp for rec in decoded.records]
        assert result.max_timestamp == max([-1, *stamps])
        if result.max_timestamp > -1:
            assert result.offset_delta_of_max_timestamp == stamps.index(result.max_timestamp)


@fuzz(1500)
@given(seeds, st.sampled_from(CODECS), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_built_batches_validate(
    seed: int, codec: int, idempotent: bool, transactional: bool, append_time: bool, keys: bool
) -> None:
    specs = make_records(seed)
    batch = r.build_batch(
        specs,
        compression=codec,
        producer_id=random.Random(seed).randrange(1 << 40) if idempotent else -1,
        producer_epoch=3 if idempotent else -1,
        base_sequence=seed % (1 << 31) if idempotent else -1,
        transactional=transactional,
        timestamp_type=int(append_time),
    )
    keyless = [i for i, spec in enumerate(specs) if spec.key is None]
    stamps = [spec.timestamp for spec in specs]
    if append_time and stamps[0] == -1:
        assert try_validate(batch) is None  # a producer's LogAppendTime without a time
        return
    if keys and keyless:
        try:
            validate_batch(batch, max_uncompressed_bytes=MAX_OUT, require_keys=True)
        except BatchValidationError as exc:
            assert [index for index, _ in exc.record_errors] == keyless
        else:
            raise AssertionError("keyless records passed on a compacted topic")
        return
    result = try_validate(batch, require_keys=keys)
    assert result is not None and result.record_count == len(specs)
    assert result.header == rb.BatchHeader.parse(batch)
    assert_decoder_agrees(batch, result)


@fuzz(2000)
@given(seeds, st.sampled_from(CODECS), seeds, st.booleans())
def test_mutated_batches(seed: int, codec: int, damage: int, crc_ok: bool) -> None:
    batch = r.build_batch(make_records(seed), compression=codec)
    broken = mutated(batch, damage)
    if crc_ok:
        fix_crc(broken)
    result = try_validate(bytes(broken))
    if result is not None:
        assert_decoder_agrees(broken, result)
    try_validate(memoryview(broken), require_keys=True)


@fuzz(1500)
@given(seeds, st.sampled_from(CODECS), seeds, st.none() | st.integers(1, 8))
def test_mutated_record_sections(seed: int, codec: int, damage: int, count: int | None) -> None:
    """Damage only the records, then compress and frame them correctly: the validator accepts
    exactly what the decoder reads as ``count`` (default: as built) consecutive records."""
    specs = make_records(seed)
    count = len(specs) if count is None else count
    plain = r.build_batch(specs)
    body = bytes(mutated(plain, damage, start=rb.HEADER_SIZE)[rb.HEADER_SIZE :])
    batch = bytearray(plain[: rb.HEADER_SIZE]) + r.compress(codec, body)
    batch[21:23] = struct.pack(">h", codec)
    batch[23:27] = struct.pack(">i", count - 1)  # lastOffsetDelta
    batch[57:61] = struct.pack(">i", count)
    fix_crc(batch)
    result = try_validate(batch)
    if result is not None:
        assert_decoder_agrees(batch, result)
        return
    try:
        decoded = r.decode_batch(batch, max_decompressed_size=MAX_OUT)
    except CodecError:
        return
    assert [rec.offset for rec in decoded.records] != list(range(count)), "validator too strict"


@fuzz(1000)
@given(st.binary(max_size=200), st.booleans())
def test_random_bytes(blob: bytes, keys: bool) -> None:
    assert try_validate(blob, require_keys=keys) is None or len(blob) >= rb.HEADER_SIZE
