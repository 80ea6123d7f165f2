"""FrameReader reassembly, size-prefix validation, request header peeking, building frames in
place (begin_frame/end_frame, encode_response_into)."""

from __future__ import annotations

import importlib
import os
import struct

import pytest
from kafka_protocol_codec import (
    decode_response,
    encode_request,
    encode_response,
    encode_response_frame,
    encode_response_into,
)
from kafka_protocol_codec.codec_runtime import ZERO_UUID
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    FIRST_AREA,
    FIRST_READ_AFTER_LARGE,
    LARGE_FRAME,
    READ_AREA,
    BufferList,
    FrameError,
    FrameReader,
    FrameTooLarge,
    RequestPeek,
    SpliceBuffer,
    begin_frame,
    end_frame,
    frame,
    peek_request_client_id,
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


def test_next_frame_returns_a_bytearray_of_its_own() -> None:
    data = bytearray(frame(b"hello"))
    reader = FrameReader()
    reader.feed(data)
    got = reader.next_frame()
    assert type(got) is bytearray and got == b"hello"
    data[4:] = b"HELLO"  # the caller's buffer was copied, not kept
    assert got == b"hello"


@pytest.mark.parametrize("split", [0, 1, 2, 3])
def test_oversized_raises_before_buffering(split: int) -> None:
    reader = FrameReader(max_frame_size=1000)
    data = struct.pack(">i", 1001) + b"x" * 5000
    reader.feed(data[:split])
    with pytest.raises(FrameTooLarge) as info:
        reader.feed(data[split:])  # completes the prefix: rejected before the body is kept
    assert info.value.size == 1001 and info.value.max_frame_size == 1000
    assert isinstance(info.value, FrameError) and isinstance(info.value, CodecError)
    assert reader.buffered == 0  # nothing after a bad prefix is ever a frame
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
    """The feed that completes a bad prefix raises; the frame before it is still returned,
    then next_frame raises too."""
    reader = FrameReader(max_frame_size=10)
    with pytest.raises(FrameTooLarge):
        reader.feed(frame(b"ok") + struct.pack(">i", 11) + b"zz")
    assert reader.buffered == len(frame(b"ok"))
    assert reader.next_frame() == b"ok"
    with pytest.raises(FrameTooLarge):
        reader.next_frame()


def test_a_prefix_split_over_feeds_is_checked_by_the_feed_completing_it() -> None:
    reader = FrameReader(max_frame_size=10)
    reader.feed(frame(b"ok") + struct.pack(">i", 11)[:2])
    assert reader.next_frame() == b"ok"
    assert reader.next_frame() is None
    with pytest.raises(FrameTooLarge):
        reader.feed(struct.pack(">i", 11)[2:] + b"body")


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
    api = importlib.import_module("kafka.protocol.metadata.api_versions")
    request = api.ApiVersionsRequest(
        version=3, client_software_name="kafka-python", client_software_version="3"
    )
    request.with_header(correlation_id=99, client_id="client")
    reader = FrameReader()
    reader.feed(request.encode(header=True, framed=True))
    body = reader.next_frame()
    assert body is not None
    assert peek_request_header(body) == RequestPeek(18, 3, 99)


# -- client id of a request that may not decode ------------------------------------------------

@pytest.mark.parametrize(("api_key", "version"), [(3, 1), (3, 12), (18, 3), (1, 12)])
@pytest.mark.parametrize("client_id", ["c", "", "ünïcode-client", None])
def test_peek_client_id_of_encoded_request(api_key: int, version: int,
                                           client_id: str | None) -> None:
    """Header v1 (Metadata v1) and v2 (flexible versions) both put it after the 8 bytes."""
    body = {"topics": None} if api_key == 3 else {}
    if api_key == 18:
        body = {"client_software_name": "x", "client_software_version": "1"}
    if api_key == 1:
        body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [],
                "forgotten_topics_data": [], "rack_id": ""}
    request = encode_request(api_key, version, body, correlation_id=4, client_id=client_id)
    assert peek_request_client_id(request) == client_id
    # the body is irrelevant: garbage after the header does not change the answer
    cut = 8 + 2 + len((client_id or "").encode())
    assert peek_request_client_id(request[:cut] + b"\xff" * 9) == client_id


def test_peek_client_id_short_or_absent() -> None:
    header = struct.pack(">hhih", 3, 1, 1, 5) + b"abc"  # announces 5 bytes, has 3
    assert peek_request_client_id(header) is None
    for size in range(10):
        assert peek_request_client_id(b"\x00" * size) is None
    # ControlledShutdown v0 has request header v0: no client id at all
    v0 = struct.pack(">hhi", 7, 0, 1) + struct.pack(">i", 2)  # then the broker id
    assert peek_request_client_id(v0) is None
    assert peek_request_client_id(struct.pack(">hhih", 7, 1, 1, 2) + b"id") == "id"


def test_peek_client_id_invalid_utf8_is_replaced() -> None:
    header = struct.pack(">hhih", 3, 1, 1, 2) + b"\xff\xfe"
    assert peek_request_client_id(memoryview(header)) == "\ufffd\ufffd"


# -- building frames in place --------------------------------------------------------------------

def test_begin_end_frame_reads_back() -> None:
    out = bytearray(b"already queued")
    start = begin_frame(out)
    assert start == len(b"already queued")
    out += b"payload"
    end_frame(out, start)
    second = begin_frame(out)
    end_frame(out, second)  # an empty frame
    assert bytes(out[start:]) == frame(b"payload") + frame(b"")
    reader = FrameReader()
    reader.feed(out[start:])
    assert list(reader.frames()) == [b"payload", b""]


def test_end_frame_without_a_reserved_prefix() -> None:
    out = bytearray(b"ab")
    with pytest.raises(CodecError):
        end_frame(out, 0)


METADATA_RESPONSE = {"throttle_time_ms": 0, "brokers": [], "cluster_id": "c",
                     "controller_id": 1, "topics": [], "cluster_authorized_operations": 0}


@pytest.mark.parametrize(("api_key", "version", "body"), [
    (3, 1, METADATA_RESPONSE),
    (3, 12, METADATA_RESPONSE),  # flexible: response header v1
    (18, 3, {"error_code": 0, "api_keys": [], "throttle_time_ms": 0}),  # always header v0
])
def test_encode_response_frame_is_prefix_and_response(api_key: int, version: int,
                                                      body: dict[str, object]) -> None:
    framed = encode_response_frame(api_key, version, 77, body)
    assert bytes(framed) == frame(encode_response(api_key, version, 77, body))
    reader = FrameReader()
    reader.feed(framed)
    payload = reader.next_frame()
    assert payload is not None
    decoded = decode_response(api_key, version, payload)
    assert decoded.correlation_id == 77


def test_encode_response_into_appends_and_keeps_buffer_on_error() -> None:
    out = bytearray()
    encode_response_into(out, 3, 12, 1, METADATA_RESPONSE)
    first = bytes(out)
    with pytest.raises(CodecError):
        encode_response_into(out, 3, 12, 2, {"brokers": "not a list"})
    assert bytes(out) == first  # the failed response left nothing behind
    encode_response_into(out, 3, 1, 3, METADATA_RESPONSE)
    reader = FrameReader()
    reader.feed(out)
    ids = [decode_response(3, v, f).correlation_id for v, f in zip((12, 1), reader.frames(),
                                                                     strict=True)]
    assert ids == [1, 3]


# -- records spliced by reference (BufferList into a SpliceBuffer) --------------------------

def fetch_response(records: object) -> dict[str, object]:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "t", "topic_id": ZERO_UUID, "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 5,
             "last_stable_offset": 5, "log_start_offset": 0, "aborted_transactions": None,
             "preferred_read_replica": -1, "records": records}]}]}


@pytest.mark.parametrize("version", [4, 11, 12, 16])  # classic and compact records fields
def test_buffer_list_records_are_spliced_not_copied(version: int) -> None:
    chunks = [b"first-batch", bytearray(b"second"), memoryview(b"xthird-batchx")[1:-1]]
    expected = encode_response_frame(1, version, 9, fetch_response(b"".join(chunks)))
    out = SpliceBuffer()
    encode_response_into(out, 1, version, 9, fetch_response(BufferList(chunks)))
    assert out.spliced
    parts = out.buffers()
    assert any(part is chunks[0] for part in parts)  # the stored buffer itself, by reference
    assert b"".join(bytes(p) for p in parts) == bytes(expected)
    assert len(out) + sum(len(c) for c in chunks) == len(expected)
    # into a plain bytearray the same value is copied, with the same bytes
    plain = bytearray()
    encode_response_into(plain, 1, version, 9, fetch_response(BufferList(chunks)))
    assert bytes(plain) == bytes(expected)


def test_splice_buffer_failed_response_drops_its_splices() -> None:
    out = SpliceBuffer()
    encode_response_into(out, 1, 11, 1, fetch_response(BufferList([b"kept"])))
    first = b"".join(bytes(p) for p in out.buffers())
    out = SpliceBuffer()
    encode_response_into(out, 1, 11, 1, fetch_response(BufferList([b"kept"])))
    body = fetch_response(BufferList([b"dropped"]))
    body["session_id"] = "not an int"
    with pytest.raises(CodecError):
        encode_response_into(out, 1, 11, 2, body)
    assert b"".join(bytes(p) for p in out.buffers()) == first
    encode_response_into(out, 1, 11, 3, fetch_response(BufferList([])))
    reader = FrameReader()
    for part in out.buffers():
        reader.feed(part)
    frames = list(reader.frames())
    assert [decode_response(1, 11, f).correlation_id for f in frames] == [1, 3]
    assert [bytes(decode_response(1, 11, f).body.responses[0].partitions[0].records)
            for f in frames] == [b"kept", b""]


def test_buffer_list_compares_as_its_bytes() -> None:
    value = BufferList([b"ab", memoryview(b"cd"), bytearray(b"e")])
    assert (len(value), bytes(value)) == (5, b"abcde")
    assert value == b"abcde"
    assert value != b"abcdf"


# -- receiving into the reader's buffers (get_buffer / buffer_updated) ----------------------

def receive(reader: FrameReader, stream: bytes, step: int) -> list[bytes]:
    """Feed `stream` as a transport with recv_into would, at most `step` bytes a time."""
    frames: list[bytes] = []
    pos = 0
    for _ in range(len(stream) + 1):
        if pos >= len(stream):
            break
        target = reader.get_buffer()
        n = min(step, len(target), len(stream) - pos)
        target[:n] = stream[pos:pos + n]
        target.release()
        reader.buffer_updated(n)
        pos += n
        frames += reader.frames()
    return frames


@pytest.mark.parametrize("step", [1, 7, 4096, 300_000, 10_000_000])
def test_get_buffer_receives_small_and_large_frames(step: int) -> None:
    bodies = [b"small", os.urandom(200_000), b"", os.urandom(70_000), b"tail" * 10]
    reader = FrameReader()
    got = receive(reader, b"".join(frame(b) for b in bodies), step if step > 1 else 997)
    assert got == bodies
    assert reader.buffered == 0
    assert not reader.receiving_large_frame


def test_large_frame_is_received_into_its_own_buffer() -> None:
    body = os.urandom(100_000)
    reader = FrameReader()
    receive(reader, frame(body)[:1000], 1000)
    assert reader.receiving_large_frame
    target = reader.get_buffer()
    assert len(target) == len(body) - (1000 - 4)  # exactly the rest of the frame
    target[:] = body[996:]
    target.release()
    reader.buffer_updated(len(body) - 996)
    assert reader.next_frame() == body


def test_get_buffer_rejects_a_bad_prefix() -> None:
    reader = FrameReader(max_frame_size=10)
    with pytest.raises(FrameTooLarge):
        receive(reader, struct.pack(">i", 11) + b"x" * 11, 100)
    with pytest.raises(FrameTooLarge):
        reader.get_buffer()


# -- reads handed over in other buffers (feed, as from data_received) ----------------------

@pytest.mark.parametrize("step", [1000, 65_536, 262_144, 10_000_000])
def test_fed_bytes_reads_make_the_same_frames(step: int) -> None:
    bodies = [b"small", os.urandom(300_000), b"", os.urandom(70_000), b"tail" * 10,
              os.urandom(1 << 20)]
    stream = b"".join(frame(b) for b in bodies)
    reader = FrameReader()
    got: list[bytes] = []
    for pos in range(0, len(stream), step):
        reader.feed(stream[pos:pos + step])
        got += reader.frames()
    assert got == bodies
    assert all(type(f) is bytearray for f in got)
    assert reader.buffered == 0
    assert not reader.receiving_large_frame


def test_a_fed_large_frame_is_received_into_its_own_buffer() -> None:
    body = os.urandom(200_000)
    data = frame(body) + frame(b"next")
    reader = FrameReader()
    reader.feed(data[:1000])
    assert reader.receiving_large_frame and reader.buffered == 1000
    middle = data[1000:150_000]
    reader.feed(middle)
    assert reader.next_frame() is None and reader.buffered == 150_000
    reader.feed(data[150_000:])  # the rest, and the next frame after it
    assert not reader.receiving_large_frame
    assert reader.next_frame() == body
    assert reader.next_frame() == b"next"
    assert reader.buffered == 0


def test_whole_frames_of_one_read_come_out_before_its_large_tail() -> None:
    large = os.urandom(100_000)
    data = frame(b"a") + frame(b"bb") + frame(large)
    reader = FrameReader()
    reader.feed(data[:50_000])  # two whole frames and the start of a large one
    assert reader.buffered == 50_000 and reader.receiving_large_frame
    assert reader.next_frame() == b"a"
    assert reader.next_frame() == b"bb"
    assert reader.next_frame() is None
    reader.feed(data[50_000:])
    assert reader.next_frame() == large
    assert reader.buffered == 0


def test_reads_after_a_whole_large_frame_start_afresh_before_it_is_taken() -> None:
    first, second = os.urandom(100_000), os.urandom(90_000)
    data = frame(first) + frame(b"small") + frame(second)
    reader = FrameReader()
    for pos in range(0, len(data), 30_000):  # every read arrives before any frame is taken
        reader.feed(data[pos:pos + 30_000])
    assert reader.buffered == len(data)
    assert list(reader.frames()) == [first, b"small", second]
    assert reader.buffered == 0


def test_a_large_frame_behind_a_small_one_is_received_apart() -> None:
    large = os.urandom(200_000)
    data = frame(b"small") + frame(large)
    reader = FrameReader()
    target = reader.get_buffer()  # a transport receiving into buffers (asyncio, uvloop)
    target[:1000] = data[:1000]
    target.release()
    reader.buffer_updated(1000)
    # the small frame is cut out at once, so the large one is first: the rest of it goes apart
    assert reader.receiving_large_frame and reader.buffered == 1000
    target = reader.get_buffer()
    assert len(target) == len(data) - 1000
    target[:] = data[1000:]
    target.release()
    reader.buffer_updated(len(data) - 1000)
    assert reader.next_frame() == b"small"
    assert reader.next_frame() == large and reader.buffered == 0


def test_received_frames_are_bytearrays_of_their_own() -> None:
    """The broker patches batches inside a received frame and keeps views of it: each frame
    is a bytearray nobody else writes to, however the reads were split."""
    bodies = [os.urandom(17_000) for _ in range(40)] + [os.urandom(300_000), b"last"]
    reader = FrameReader()
    got = receive(reader, b"".join(frame(b) for b in bodies), 50_000)
    assert got == bodies
    assert all(type(f) is bytearray for f in got)
    first = bytes(got[0])
    got[1][:] = bytes(len(got[1]))  # writing one frame touches no other, nor later reads
    assert got[0] == first
    assert receive(reader, frame(b"more") * 3, 5) == [b"more"] * 3


def test_the_read_area_keeps_only_the_start_of_a_small_frame() -> None:
    """Reads of any split leave at most one small frame's start behind, moved to the front
    of the area when room runs short, so no frame is ever lost or reordered there."""
    bodies = [os.urandom(n) for n in (60_000, 1, 65_000, 30_000, 0, 65_535)] * 8
    stream = b"".join(frame(b) for b in bodies)
    for step in (65_539, 100_003, 262_144):
        reader = FrameReader()
        got = receive(reader, stream, step)
        assert got == bodies and reader.buffered == 0


def test_feed_and_received_reads_can_alternate() -> None:
    """A transport switching between handing over bytes and receiving into our buffers
    (never seen in practice) still gets every frame once, in order."""
    bodies = [os.urandom(n) for n in (10, 70_000, 20_000, 5, 100_000, 3)]
    stream = b"".join(frame(b) for b in bodies)
    reader = FrameReader()
    got: list[bytes | bytearray] = []
    pos, turn = 0, 0
    for _ in range(len(stream)):
        if pos >= len(stream):
            break
        step = (7_001, 30_011, 64_997)[turn % 3]
        chunk = stream[pos:pos + step]
        if turn % 2:
            reader.feed(chunk)
        else:
            got += receive(reader, chunk, step)
        pos += len(chunk)
        turn += 1
        got += reader.frames()
    assert got == bodies and reader.buffered == 0


def test_a_read_in_another_buffer_is_received_as_into_ours() -> None:
    bodies = [b"a", os.urandom(90_000), b"b"]
    stream = bytearray(b"".join(frame(b) for b in bodies))
    reader = FrameReader()
    for pos in range(0, len(stream), 40_000):
        reader.feed(memoryview(stream)[pos:pos + 40_000])
    got = list(reader.frames())
    assert got == bodies and all(type(f) is bytearray for f in got)


def test_the_tail_of_a_read_is_completed_from_the_next_one() -> None:
    bodies = [os.urandom(n) for n in (17_000, 17_000, 17_000, 100_000, 5)]
    data = b"".join(frame(b) for b in bodies)
    reader = FrameReader()
    got: list[bytes] = []
    fed = 0
    for cut in (2, 20_000, 30_000, 51_000, 60_000, len(data)):  # tails of every length
        reader.feed(data[fed:cut])
        fed = cut
        got += reader.frames()
    assert got == bodies and reader.buffered == 0


def test_frames_before_a_bad_prefix_in_the_same_read_are_still_returned() -> None:
    reader = FrameReader(max_frame_size=100)
    with pytest.raises(FrameError):
        reader.feed(frame(b"ok") + struct.pack(">i", -5) + b"junk")
    assert reader.next_frame() == b"ok"
    with pytest.raises(FrameError):
        reader.next_frame()
    reader = FrameReader(max_frame_size=100)
    with pytest.raises(FrameTooLarge):
        reader.feed(frame(b"ok") + struct.pack(">i", 101))
    assert reader.next_frame() == b"ok"
    with pytest.raises(FrameTooLarge):
        reader.next_frame()


def test_a_large_frame_begun_by_feed_can_finish_in_get_buffer() -> None:
    body = os.urandom(100_000)
    data = frame(body)
    reader = FrameReader()
    reader.feed(data[:5000])
    reader.feed(data[5000:40_000])
    target = reader.get_buffer()  # the transport switched to receiving into buffers
    assert len(target) == len(data) - 40_000
    target[:] = data[40_000:]
    target.release()
    reader.buffer_updated(len(data) - 40_000)
    assert reader.next_frame() == body


def test_after_a_large_frame_the_next_read_takes_only_the_start_of_the_next_one() -> None:
    """A client sending large frames sends more of them: after one, the empty read area is
    handed out only FIRST_READ_AFTER_LARGE bytes far, so little of the next large frame is
    received there and copied out; after a small frame, the whole area again."""
    large = os.urandom(300_000)
    reader = FrameReader()
    assert len(reader.get_buffer()) == FIRST_AREA
    assert receive(reader, frame(large), 1 << 20) == [large]
    assert len(reader.get_buffer()) == FIRST_READ_AFTER_LARGE
    stream = frame(large) + frame(b"small")
    got = receive(reader, stream, 1 << 20)
    assert got == [large, b"small"]
    assert len(reader.get_buffer()) > FIRST_READ_AFTER_LARGE  # the whole area again
    assert receive(reader, frame(b"x" * 70_000) + frame(b"y"), 1 << 20) == [b"x" * 70_000, b"y"]


def test_the_read_area_starts_small_and_grows_with_what_the_client_sends() -> None:
    """A connection that sends a request or two never costs a whole READ_AREA: the area
    starts at FIRST_AREA and doubles only when a read fills all the room it was given, up
    to READ_AREA, or when a small frame announces more than the area holds."""
    reader = FrameReader()
    assert receive(reader, frame(b"one request"), 1 << 20) == [b"one request"]
    assert len(reader.get_buffer()) == FIRST_AREA
    bodies = [os.urandom(1000) for _ in range(2000)]  # 2 MB pipelined: reads fill the area
    assert receive(reader, b"".join(frame(b) for b in bodies), 1 << 20) == bodies
    assert len(reader.get_buffer()) == READ_AREA
    reader = FrameReader()
    body = os.urandom(LARGE_FRAME - 1)  # small, yet more than FIRST_AREA holds
    assert receive(reader, frame(body), 1000) == [body]
    assert reader.buffered == 0


def test_release_drops_the_read_area_and_keeps_the_frames_cut_out() -> None:
    reader = FrameReader()
    stream = frame(b"a") + frame(b"b") + frame(os.urandom(LARGE_FRAME))[:1000]
    target = reader.get_buffer()
    target[: len(stream)] = stream
    target.release()
    reader.buffer_updated(len(stream))
    assert reader.receiving_large_frame
    reader.release()
    assert not reader.receiving_large_frame
    assert list(reader.frames()) == [b"a", b"b"]
    assert reader.buffered == 0
