"""The compiled record walker (protocol/_walk_accel.pyx) against the pure walk: on every batch
both paths of ``validate_batch`` give the same result or the same error, field for field. The
compiled side runs twice: with the compiled one-pass check of a plain batch
(``plain_batch``), and with the Python one-pass check calling the compiled walker.

Skipped when the extension is not built (``make accel``; ``make test`` builds it).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka_protocol_codec import record_batches as rb
from kafka_protocol_codec import records as r
from kafka_protocol_codec import validation

from .test_records_fuzz import MAX_OUT, fix_crc, fuzz, make_records, mutated, seeds

COMPILED = validation._load_accelerated_walk()
pytestmark = pytest.mark.skipif(COMPILED is None, reason="compiled walker not built (make accel)")
CODECS = [c.value for c in r.Compression]
T0 = 1_700_000_000_000


PLAIN_BATCH = validation._load_accelerated_plain_batch()


@pytest.fixture(autouse=True, params=["compiled one-pass", "python one-pass"])
def _restore_walker(request: pytest.FixtureRequest) -> Iterator[None]:
    saved = validation.accelerated_walk, validation.accelerated_plain_batch
    validation.accelerated_plain_batch = PLAIN_BATCH if request.param == "compiled one-pass" \
        else None
    yield
    validation.accelerated_walk, validation.accelerated_plain_batch = saved


def test_the_compiled_one_pass_check_is_built_with_the_walker() -> None:
    assert PLAIN_BATCH is not None


def outcome(batch: bytes | bytearray | memoryview, **options: Any) -> tuple[Any, ...]:
    """What validate_batch says: the result, or the error's code, message and record errors."""
    try:
        return ("ok", validation.validate_batch(batch, max_uncompressed_bytes=MAX_OUT, **options))
    except validation.BatchValidationError as exc:
        return ("error", exc.error_code, exc.message, exc.record_errors)


def both(batch: bytes | bytearray | memoryview, **options: Any) -> tuple[Any, ...]:
    """The outcome of the pure and of the compiled walk, which must be equal."""
    validation.accelerated_walk = None
    pure = outcome(batch, **options)
    validation.accelerated_walk = COMPILED
    compiled = outcome(batch, **options)
    assert compiled == pure
    return pure


def test_the_compiled_walker_is_what_validation_uses_by_default() -> None:
    assert validation.accelerated_walk is COMPILED


def test_it_answers_for_valid_batches_and_defers_everything_else() -> None:
    assert COMPILED is not None
    body = bytes(r.build_batch([r.RecordSpec(key=b"k", value=b"v", timestamp=T0 + i)
                                for i in range(3)])[rb.HEADER_SIZE:])  # fmt: skip
    assert COMPILED(body, 0, 3, False, False, 0, 0, -1 - T0) == (2, 2)
    assert COMPILED(body, 0, 2, False, False, 0, 0, -1 - T0) is None  # bytes left over
    assert COMPILED(body[:-1], 0, 3, False, False, 0, 0, -1 - T0) is None  # truncated
    assert COMPILED(body, 0, 3, False, True, 0, 1, -1 - T0) is None  # timestamp 2 off window
    keyless = bytes(r.build_batch([r.RecordSpec(value=b"v")])[rb.HEADER_SIZE:])
    assert COMPILED(keyless, 0, 1, True, False, 0, 0, -1 - T0) is None  # compacted topic
    assert COMPILED(keyless, 0, 1, False, False, 0, 0, -1 - T0) is not None


@pytest.mark.parametrize("codec", CODECS)
def test_representative_batches(codec: int) -> None:
    rnd = random.Random(codec)
    batches = [
        r.build_batch([r.RecordSpec(value=bytes(100), key=b"key-%d" % i, timestamp=T0 + i)
                       for i in range(163)], compression=codec),
        r.build_batch([r.RecordSpec(value=rnd.randbytes(1024), headers=[("trace", b"x" * 16)],
                                    timestamp=T0 - i) for i in range(16)], compression=codec),
        r.build_batch([r.RecordSpec(value=b"", key=b"") for _ in range(9000)], compression=codec),
        r.build_batch([r.RecordSpec(value=b"v", headers=[("k" * 100, bytes(200))] * 70)],
                      compression=codec),
        r.build_batch([r.RecordSpec(value=None, key=None, timestamp=-1)] * 3, compression=codec),
        r.build_batch([r.RecordSpec(value=b"v", timestamp=ts) for ts in
                       (T0, T0 - 1001, -1, T0 + 2000, T0 + 10**12)], compression=codec),
        r.build_batch([r.RecordSpec(value=b"v", timestamp=T0)], compression=codec,
                      timestamp_type=1),
    ]
    for batch in batches:
        for options in ({}, {"require_keys": True}, {"timestamp_bounds": (T0 - 1000, T0 + 1000)},
                        {"log_append_time": True}, {"timestamp_bounds": (-(2**63), 2**63 - 1)}):  # fmt: skip
            both(batch, **options)
            both(memoryview(bytes(batch)), **options)


def test_long_varints_go_to_the_pure_walk() -> None:
    """A 5-byte length and a 10-byte timestamp delta: legal, longer than the compiled reader
    takes, so the pure walk answers; both agree."""
    value = b"v"
    body = (b"\x00" + b"\x80" * 9 + b"\x00" + b"\x00" + b"\x01" + b"\x82\x80\x80\x80\x00" + value
            + b"\x00")  # fmt: skip
    record = r.encode_varint(len(body)) + body
    batch = bytearray(rb.HEADER_SIZE) + record
    struct.pack_into(">qiibIhiqqqhii", batch, 0, 0, len(batch) - 12, -1, 2, 0, 0, 0, T0, T0,
                     -1, -1, -1, 1)  # fmt: skip
    fix_crc(batch)
    assert both(bytes(batch))[0] == "ok"


@fuzz(1000)
@given(seeds, st.sampled_from(CODECS), st.booleans(), st.booleans())
def test_built_batches(seed: int, codec: int, keys: bool, window: bool) -> None:
    batch = r.build_batch(make_records(seed), compression=codec)
    bounds = (-(2**39), 2**39) if window else None
    both(batch, require_keys=keys, timestamp_bounds=bounds)


@fuzz(1500)
@given(seeds, st.sampled_from(CODECS), seeds, st.booleans())
def test_mutated_batches(seed: int, codec: int, damage: int, crc_ok: bool) -> None:
    broken = mutated(r.build_batch(make_records(seed), compression=codec), damage)
    if crc_ok:
        fix_crc(broken)
    both(bytes(broken))
    both(memoryview(broken), require_keys=True)


@fuzz(1500)
@given(seeds, st.sampled_from(CODECS), seeds, st.none() | st.integers(1, 8))
def test_mutated_record_sections(seed: int, codec: int, damage: int, count: int | None) -> None:
    """Damage behind a correct header and CRC, so the walk itself meets the damage."""
    specs = make_records(seed)
    count = len(specs) if count is None else count
    plain = r.build_batch(specs)
    body = bytes(mutated(plain, damage, start=rb.HEADER_SIZE)[rb.HEADER_SIZE :])
    batch = bytearray(plain[: rb.HEADER_SIZE]) + r.compress(codec, body)
    batch[21:23] = struct.pack(">h", codec)
    batch[23:27] = struct.pack(">i", count - 1)
    batch[57:61] = struct.pack(">i", count)
    fix_crc(batch)
    both(batch)
    both(batch, require_keys=True, timestamp_bounds=(-(2**40), 2**40))


def test_the_compiled_one_pass_check_reads_the_header_and_defers_the_rest() -> None:
    assert PLAIN_BATCH is not None
    batch = r.build_batch([r.RecordSpec(key=b"k", value=b"v", timestamp=T0 + i) for i in (2, 0, 1)],
                          producer_id=7, producer_epoch=3, base_sequence=11)
    found = PLAIN_BATCH(batch, -1, False, False, 0, 0, rb.crc32c)
    assert found == (rb.HEADER_STRUCT.unpack_from(batch), T0 + 2, 0)
    assert PLAIN_BATCH(batch, len(batch) - 1, False, False, 0, 0, rb.crc32c) is None  # too big
    assert PLAIN_BATCH(batch, -1, False, True, T0, T0 + 1, rb.crc32c) is None  # off window
    assert PLAIN_BATCH(batch, -1, False, True, T0, T0 + 2, rb.crc32c) is not None
    damaged = bytearray(batch)
    damaged[-1] ^= 1
    assert PLAIN_BATCH(damaged, -1, False, False, 0, 0, rb.crc32c) is None  # CRC
    gzip = r.build_batch([r.RecordSpec(value=b"v")], compression=r.Compression.GZIP)
    assert PLAIN_BATCH(gzip, -1, False, False, 0, 0, rb.crc32c) is None
    assert PLAIN_BATCH(batch[:60], -1, False, False, 0, 0, rb.crc32c) is None
