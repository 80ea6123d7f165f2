"""FrameReader reassembly, size-prefix validation, request header peeking."""

from __future__ import annotations

import os
import struct

import pytest
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameError,
    FrameReader,
    FrameTooLarge,
    RequestPeek,
    frame,
    peek_request_header,
)

BODIES = [b"", b"\x00", os.urandom(7), os.urandom(300), b"x" * 1000, os.urandom(3)]
STREAM = b"".join(frame(body) for body in BODIES)


def test_default_max_is_kafkas() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 100 * 1024 * 1024
    assert FrameReader().max_frame_size == DEFAULT_MAX_FRAME_SIZE


def test_frame_prefix() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frame(memoryview(b"")) == b"\x00\x00\x00\x00"


@pytest.mark.parametrize("split", range(len(STREAM) + 1))
def test_split_once_at_every_boundary(split: int) -> None:
    reader = FrameReader()
    reader.feed(STREAM[:split])
    out = list(reader.frames())
    reader.feed(STREAM[split:])
    out += list(reader.frames())
    assert out == BODIES
    assert reader.buffered == 0
    assert reader.next_frame() is None


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 13, 64, 4096])
def test_fixed_size_chunks(chunk: int) -> None:
    reader = FrameReader()
    out: list[bytes] = []
    for start in range(0, len(STREAM), chunk):
        reader.feed(memoryview(STREAM)[start : start + chunk])
        out.extend(reader.frames())
    assert out == BODIES


def test_many_frames_do_not_accumulate() -> None:
    body = os.urandom(1000)
    reader = FrameReader()
    data = frame(body) * 2000
    seen = 0
    for start in range(0, len(data), 1499):
        reader.feed(data[start : start + 1499])
        for got in reader.frames():
            assert got == body
            seen += 1
        assert reader.buffered < 1004 + 1499
    assert seen == 2000


def test_next_frame_returns_bytes() -> None:
    reader = FrameReader()
    reader.feed(bytearray(frame(b"hello")))
    got = reader.next_frame()
    assert type(got) is bytes and got == b"hello"


@pytest.mark.parametrize("split", [0, 1, 2, 3])
def test_oversized_raises_before_buffering(split: int) -> None:
    reader = FrameReader(max_frame_size=1000)
    data = struct.pack(">i", 1001) + b"x" * 5000
    reader.feed(data[:split])
    with pytest.raises(FrameTooLarge) as info:
        reader.feed(data[split:])  # completes the prefix: rejected before the body is kept
    assert info.value.size == 1001 and info.value.max_frame_size == 1000
    assert isinstance(info.value, FrameError) and isinstance(info.value, CodecError)
    assert reader.buffered == split
    with pytest.raises(FrameTooLarge):  # the reader stays failed
        reader.feed(b"more")
    with pytest.raises(FrameTooLarge):
        reader.next_frame()


def test_default_limit_rejects_huge_prefix() -> None:
    reader = FrameReader()
    with pytest.raises(FrameTooLarge):
        reader.feed(struct.pack(">i", DEFAULT_MAX_FRAME_SIZE + 1))
    reader = FrameReader()
    reader.feed(struct.pack(">i", DEFAULT_MAX_FRAME_SIZE))  # exactly the maximum is fine
    assert reader.next_frame() is None


def test_negative_size() -> None:
    reader = FrameReader()
    with pytest.raises(FrameError) as info:
        reader.feed(b"\xff\xff\xff\xfe" + b"body")
    assert not isinstance(info.value, FrameTooLarge)
    assert reader.buffered == 0


def test_bad_prefix_after_good_frame() -> None:
    reader = FrameReader(max_frame_size=10)
    reader.feed(frame(b"ok") + struct.pack(">i", 11) + b"zz")
    assert reader.next_frame() == b"ok"
    with pytest.raises(FrameTooLarge):
        reader.next_frame()


def test_pending_prefix_checked_on_next_feed() -> None:
    reader = FrameReader(max_frame_size=10)
    reader.feed(frame(b"ok") + struct.pack(">i", 11))
    assert reader.next_frame() == b"ok"
    with pytest.raises(FrameTooLarge):
        reader.feed(b"body")


def test_zero_max_frame_size() -> None:
    reader = FrameReader(max_frame_size=0)
    reader.feed(frame(b""))
    assert reader.next_frame() == b""
    with pytest.raises(FrameTooLarge):
        reader.feed(frame(b"x"))


def test_peek_request_header() -> None:
    header = struct.pack(">hhi", 18, 3, 12345)
    garbage = header + b"\xff" * 50  # body undecodable, header still readable
    assert peek_request_header(garbage) == RequestPeek(18, 3, 12345)
    assert peek_request_header(memoryview(header)) == RequestPeek(18, 3, 12345)
    assert peek_request_header(struct.pack(">hhi", -1, -2, -3)) == RequestPeek(-1, -2, -3)


@pytest.mark.parametrize("size", range(8))
def test_peek_short_frame(size: int) -> None:
    with pytest.raises(CodecError):
        peek_request_header(b"\x00" * size)


def test_peek_real_client_request() -> None:
    """A framed, flexible (header v2) ApiVersions v3 request as kafka-python encodes it."""
    api = pytest.importorskip("kafka.protocol.metadata.api_versions")
    request = api.ApiVersionsRequest(
        version=3, client_software_name="kafka-python", client_software_version="3"
    )
    request.with_header(correlation_id=99, client_id="client")
    reader = FrameReader()
    reader.feed(request.encode(header=True, framed=True))
    body = reader.next_frame()
    assert body is not None
    assert peek_request_header(body) == RequestPeek(18, 3, 99)
