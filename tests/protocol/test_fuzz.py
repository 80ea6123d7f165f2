"""Malformed input: the decoders raise CodecError (or succeed), nothing else, and never hang.

Random bytes, random bytes behind a plausible request header, and valid encodings with bit
flips, overwritten or inserted huge lengths/counts (0x7fffffff, 0xffffffff, unsigned varints
made of 0xff bytes), deletions and truncations go into decode_request, decode_response and
Codec.decode for a spread of (api, version, direction). Every truncation of a few real
messages is tried exhaustively. A watchdog alarm turns a hang into a failure, and in the tests
that plant huge lengths and counts no decode may allocate far beyond what its input can describe (a huge length or count must be refused,
not allocated): the peak of traced memory per decode is bounded by the input's size. That
bound, not a time limit, is what catches a decoder that trusts a length; it does not depend
on how busy the machine is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_protocol_codec import (
    Codec,
    CodecError,
    api,
    api_keys,
    decode_request,
    decode_response,
    request_header_version,
)
from kafka_protocol_codec.api import request_header_codec

from .strategies import sample_value

# Each of the four main Hypothesis tests runs 2,400 examples: 10,100 for the file with the
# small one. FUZZ_EXAMPLES=100000 for a long campaign.
MANY = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "2400")),
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
# a decode's peak of newly traced memory may be at most this many times its input, plus a
# floor: generous for real content (a 1-byte struct element becomes a Struct of a few hundred
# bytes) and far below what one trusted 0x7fffffff length or count would allocate
ALLOCATION_PER_INPUT_BYTE = 512
ALLOCATION_FLOOR = 1 << 20


@contextlib.contextmanager
def traced_memory() -> Iterator[None]:
    """Trace allocations for the test, so each decode's peak is checked (the tests that plant
    huge lengths and counts use it; tracing slows decoding several times over)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        yield
    finally:
        if started:
            tracemalloc.stop()


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    """Fail (instead of hanging forever) if one test runs for more than 120 s."""

    def alarm(signum: int, frame: Any) -> None:
        raise TimeoutError("decoder hang: test ran for more than 120 s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(int(os.environ.get("FUZZ_WATCHDOG_S", "120")))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def only_codec_error(decode: Callable[[bytes], Any], data: bytes) -> bool:
    """Run one decode; True if it succeeded, False if it raised CodecError."""
    tracing = tracemalloc.is_tracing()
    if tracing:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
    try:
        decode(data)
        ok = True
    except CodecError:
        ok = False
    except Exception as exc:  # the point of this file
        raise AssertionError(
            f"{type(exc).__name__} escaped the decoder for {data[:64].hex()}...: {exc!r}"
        ) from exc
    if not tracing:
        return ok
    _, peak = tracemalloc.get_traced_memory()
    allocated = peak - before
    assert allocated <= ALLOCATION_FLOOR + ALLOCATION_PER_INPUT_BYTE * len(data), \
        f"decode allocated {allocated} bytes at its peak for {len(data)} bytes of input"
    return ok


# ------------------------------------------------------------------ the spread of targets


def _versions(key: int) -> list[int]:
    """Oldest, newest, and the last classic and first flexible version."""
    spec = api(key)
    versions = {spec.min_version, spec.max_version}
    flexible = spec.request.flexible
    if flexible is not None and flexible[0] in spec.request.versions:
        versions.add(flexible[0])
        if flexible[0] - 1 in spec.request.versions:
            versions.add(flexible[0] - 1)
    return sorted(versions)


TARGETS = [
    (key, version, kind)
    for key in api_keys()
    for version in _versions(key)
    for kind in ("request", "response")
]


def codec(key: int, version: int, kind: str) -> Codec:
    spec = api(key)
    return spec.request_codec(version) if kind == "request" else spec.response_codec(version)


def message(key: int, kind: str) -> Any:
    return api(key).request if kind == "request" else api(key).response


# Valid encodings to mutate: a filled value (every field non-default, tagged sections
# non-empty) and the all-defaults value, for every target.
CORPUS = [
    (target, codec(*target).encode(sample_value(message(target[0], target[2]), target[1])))
    for target in TARGETS
]
CORPUS += [(target, codec(*target).encode({})) for target in TARGETS]


def frame_of(key: int, version: int, body: bytes) -> bytes:
    """A request frame (no size prefix): the right header version, then `body`."""
    header = request_header_codec(request_header_version(key, version)).encode(
        {
            "request_api_key": key,
            "request_api_version": version,
            "correlation_id": 1,
            "client_id": "fuzz",
        }
    )
    return header + body


# ------------------------------------------------------------------ mutations

HUGE = [
    b"\x7f\xff\xff\xff",
    b"\xff\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\x7f\xff",
    b"\xff\xff",
    b"\xff" * 5,
    b"\xff" * 9,
    b"\xff\xff\xff\xff\x0f",
    b"\x80\x80\x80\x80\x08",
    b"\xfe\xff\xff\xff\x07",
]


@st.composite
def mutated(draw: st.DrawFn) -> tuple[tuple[int, int, str], bytes]:
    target, data = draw(st.sampled_from(CORPUS))
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "byte", "overwrite", "insert", "delete", "truncate"]))
        pos = draw(st.integers(0, len(buf)))
        if op == "flip" and buf:
            i = min(pos, len(buf) - 1)
            buf[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "byte" and buf:
            buf[min(pos, len(buf) - 1)] = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFE, 0xFF]))
        elif op == "overwrite":
            huge = draw(st.sampled_from(HUGE))
            buf[pos : pos + len(huge)] = huge
        elif op == "insert":
            buf[pos:pos] = draw(st.sampled_from(HUGE) | st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del buf[pos : pos + draw(st.integers(1, 8))]
        else:
            del buf[pos:]
    return target, bytes(buf)


@MANY
@given(case=mutated())
def test_mutated_bodies(case: tuple[tuple[int, int, str], bytes]) -> None:
    target, data = case
    with traced_memory():
        only_codec_error(codec(*target).decode, data)


@MANY
@given(case=mutated(), correlation=st.integers(-(2**31), 2**31 - 1))
def test_mutated_frames(case: tuple[tuple[int, int, str], bytes], correlation: int) -> None:
    (key, version, kind), body = case
    with traced_memory():
        if kind == "request":
            only_codec_error(decode_request, frame_of(key, version, body))
        else:
            only_codec_error(
                lambda d: decode_response(key, version, d), struct.pack(">i", correlation) + body
            )


@MANY
@given(target=st.sampled_from(TARGETS), data=st.binary(max_size=300))
def test_random_bodies(target: tuple[int, int, str], data: bytes) -> None:
    only_codec_error(codec(*target).decode, data)


@MANY
@given(
    key=st.integers(-2, 90),
    version=st.integers(-1, 20),
    correlation=st.integers(0, 99),
    rest=st.binary(max_size=200),
)
def test_random_frames(key: int, version: int, correlation: int, rest: bytes) -> None:
    """Random bytes behind a header prefix, including unknown keys and versions."""
    only_codec_error(decode_request, struct.pack(">hhi", key, version, correlation) + rest)


@settings(max_examples=500, deadline=None, database=None)
@given(data=st.binary(max_size=64))
def test_random_bytes_as_request(data: bytes) -> None:
    only_codec_error(decode_request, data)


# ------------------------------------------------------------------ exhaustive sweeps

SWEEP = [
    (0, 9, "request"),
    (1, 12, "response"),
    (3, 12, "response"),
    (18, 3, "response"),
    (11, 9, "request"),
    (19, 5, "request"),
    (8, 8, "request"),
    (3, 1, "response"),
]


@pytest.mark.parametrize("target", SWEEP, ids=lambda t: f"{api(t[0]).name}-v{t[1]}-{t[2]}")
def test_every_truncation_fails(target: tuple[int, int, str]) -> None:
    key, version, kind = target
    data = codec(*target).encode(sample_value(message(key, kind), version))
    decode = codec(*target).decode
    assert decode(data) == sample_value(message(key, kind), version)
    for cut in range(len(data)):
        assert not only_codec_error(decode, data[:cut]), f"prefix of {cut} bytes decoded"
    if kind == "request":
        frame = frame_of(key, version, data)
        assert decode_request(frame).body == sample_value(message(key, kind), version)
        for cut in range(len(frame)):
            assert not only_codec_error(decode_request, frame[:cut])


def test_every_truncation_of_every_filled_sample_fails() -> None:
    """Strings and UUIDs are sliced without a bounds check of their own (a short slice leaves
    the position past the end, which the decoder's end check reports): a prefix of any valid
    encoding, cut anywhere, including inside a last string, UUID or tagged field, must fail."""
    checked = 0
    for target, data in CORPUS[: len(TARGETS)]:
        decode = codec(*target).decode
        for cut in range(len(data)):
            assert not only_codec_error(decode, data[:cut]), f"{target}: prefix of {cut} decoded"
            checked += 1
    assert checked > 10_000


@pytest.mark.parametrize("target", SWEEP, ids=lambda t: f"{api(t[0]).name}-v{t[1]}-{t[2]}")
def test_every_position_with_huge_values(target: tuple[int, int, str]) -> None:
    """Overwrite and insert each huge length/count at every position."""
    key, version, kind = target
    data = codec(*target).encode(sample_value(message(key, kind), version))
    decode = codec(*target).decode
    with traced_memory():
        for pos in range(len(data)):
            for huge in (b"\x7f\xff\xff\xff", b"\xff" * 5):
                only_codec_error(decode, data[:pos] + huge + data[pos + len(huge) :])
                only_codec_error(decode, data[:pos] + huge + data[pos:])


def test_request_header_versions_in_corpus() -> None:
    """The spread covers every request header version and both body layouts."""
    assert {request_header_version(k, v) for k, v, _ in TARGETS} == {0, 1, 2}
    assert any(api(k).is_flexible(v) for k, v, _ in TARGETS)
    assert any(not api(k).is_flexible(v) for k, v, _ in TARGETS)
    assert len(TARGETS) > 400


def test_known_hostile_inputs() -> None:
    ok = only_codec_error
    # Array count 0x7fffffff with no elements behind it.
    assert not ok(api(3).request_codec(1).decode, b"\x7f\xff\xff\xff")
    # A compact array count as a 5-byte varint of 0xff bytes (too long).
    assert not ok(api(3).request_codec(12).decode, b"\xff\xff\xff\xff\xff\x0f")
    # A tagged-field section claiming 2**28 fields.
    assert not ok(api(18).request_codec(3).decode, b"\x01a\x01b\xff\xff\xff\x7f")
    # Legacy string length 0x7fff with 3 bytes behind it.
    assert not ok(api(17).request_codec(1).decode, b"\x7f\xffabc")
    # Bytes length 0x7fffffff.
    assert not ok(api(36).request_codec(0).decode, b"\x7f\xff\xff\xff")
    # Invalid UTF-8 in a string.
    assert not ok(api(17).request_codec(1).decode, b"\x00\x02\xc3\x28")
    # Unknown API key and bad version in a frame.
    assert not ok(decode_request, b"\x03\xe8\x00\x00\x00\x00\x00\x01\x00\x00")
    assert not ok(decode_request, b"\x00\x03\x00\x63\x00\x00\x00\x01\x00\x00")
    assert not ok(decode_request, b"")
