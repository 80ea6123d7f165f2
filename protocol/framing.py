"""Sans-IO framing of the Kafka wire protocol: int32 size prefix, then that many bytes.

Theory of operation: the transport (asyncio, threads, tests) owns the socket; ``next_frame``
returns whole frame bodies, so the same code serves any event loop and can be fuzzed without
sockets. A transport that can receive into a buffer (asyncio's BufferedProtocol, recv_into;
uvloop's for a protocol that is no asyncio.Protocol) asks ``get_buffer`` where, then tells
``buffer_updated`` how much arrived; one that reads into buffers of its own (data_received, a
blocking socket's recv) hands them to ``feed``, which copies them in as if received there.

Bytes land in a read area, and every frame they complete is copied out of it at once into a
bytearray of its own (one copy, the only one of a small frame's body) and queued; only the
start of a small frame stays in the area, moved to its front when less than LARGE_FRAME bytes
of room are left, so reading n bytes costs O(n) however the stream is split. The area starts
at ``FIRST_AREA`` bytes and doubles, up to ``READ_AREA``, when a read fills all the room it
was given (a client sending much at once) or a small frame's start announces more than it
holds, so a connection that sends a request or two (most of them, and every one a fuzzer
opens) never costs a full area; ``release`` lets go of it when the connection is gone. A large
frame (``LARGE_FRAME`` bytes or more, a Produce of big batches) is received apart: once its
size is known, what has arrived of it moves into a bytearray of exactly its size, which
``get_buffer`` hands out until it is full, so the rest of it is received straight into the
frame that ``next_frame`` returns. What of a large frame lands in the area first is copied, so
after a large frame the empty area is handed out only ``FIRST_READ_AFTER_LARGE`` bytes far (a
client sending large frames sends more of them), and whole again after a small one. Every
frame is a writable bytearray, nobody else's: the
broker patches the batches inside them in place and keeps views of them
(mockbroker.cluster.log.partition).

The size prefix is validated the moment its 4 bytes are complete, before any of the body is
kept as a frame: a negative size or one above ``max_frame_size`` (Kafka's
socket.request.max.bytes, 100 MiB by default) raises ``FrameError`` / ``FrameTooLarge`` and
poisons the reader, since the stream can no longer be resynchronised (the frames before it
are still returned first). ``peek_request_header`` reads only the fixed 8 leading
bytes common to every request header version, so a server can still log or answer a request
whose body it cannot decode; ``peek_request_client_id`` reads the client id that follows them
in request headers v1 and v2, for the log line about such a request.

Writing is the mirror image: ``begin_frame`` reserves a size prefix at the end of an output
buffer and ``end_frame`` fills it in once the payload has been encoded after it, so a whole
frame is built in one ``bytearray`` without copying the payload (``api.encode_response_into``
builds responses this way).

Large fields need not be copied into that buffer at all. A ``BufferList`` value (a records
field made of stored batches) is taken by reference when the output is a ``SpliceBuffer``: the
encoder writes the field's length and records where the buffers go, ``end_frame`` counts them
in the size prefix, and ``SpliceBuffer.buffers()`` lists the frame as views of the encoded
bytes interleaved with the spliced buffers, ready for a vectored write (``writelines``). Into
a plain ``bytearray`` the same value is copied, so every other encoding path is unchanged.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple, TypeAlias

from .exceptions import CodecError

Buffer: TypeAlias = bytes | bytearray | memoryview

DEFAULT_MAX_FRAME_SIZE = 104857600  # 100 MiB, Kafka's socket.request.max.bytes default
SIZE_PREFIX = 4
_SIZE = struct.Struct(">i")
_REQUEST_PEEK = struct.Struct(">hhi")
_new_tuple = tuple.__new__
_CLIENT_ID_LENGTH = struct.Struct(">h")
_MAX_SIZE = 0x7FFFFFFF
_PREFIX_PLACEHOLDER = bytes(SIZE_PREFIX)
# the one request whose header (v0) has no client id: ControlledShutdown v0
_HEADER_V0_REQUEST = (7, 0)
LARGE_FRAME = 64 * 1024  # frames this large are received into their own buffer
READ_AREA = 256 * 1024  # the most read area handed out by get_buffer for everything else
FIRST_AREA = 16 * 1024  # a new connection's read area, doubled up to READ_AREA as it needs
# after a large frame, the empty area is handed out only this far: the next read is most
# likely the start of another large frame, and what of it lands in the area is copied
FIRST_READ_AFTER_LARGE = 4096
# A large frame's buffer (and the read area), every byte of which is received before anyone
# reads it.
new_frame_buffer: Callable[[int], bytearray] = bytearray


class FrameError(CodecError):
    """The byte stream cannot be split into frames (e.g. a negative size)."""


class FrameTooLarge(FrameError):
    """A frame announced a size above the reader's maximum."""

    def __init__(self, size: int, max_frame_size: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the maximum of {max_frame_size}")
        self.size = size
        self.max_frame_size = max_frame_size


class FrameReader:
    """Reassemble length-prefixed frames from arbitrarily split chunks."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 0:
            raise ValueError("max_frame_size must not be negative")
        self.max_frame_size = max_frame_size
        self._error: FrameError | None = None
        # get_buffer's read area (made on first use); [_area_start, _area_end) holds the
        # start of a small frame, the only thing ever left in it
        self._area: bytearray | None = None
        self._area_start = self._area_end = 0
        self._offered = 0  # the room the last get_buffer handed out of the area
        self._filled = False  # the last read filled that room: the next get_buffer grows it
        self._large: bytearray | None = None  # the body of a large frame being received
        self._large_filled = 0
        self._after_large = False  # the last frame completed was large
        # whole frames already cut out, in order: they come before anything else pending
        self._ready: deque[bytearray] = deque()
        self._ready_bytes = 0  # their bytes, size prefixes included

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as frames (prefix of a partial frame included)."""
        pending = self._ready_bytes + self._area_end - self._area_start
        if self._large is not None:
            pending += SIZE_PREFIX + self._large_filled
        return pending

    @property
    def receiving_large_frame(self) -> bool:
        """A large frame is being received into its own buffer (it needs more bytes)."""
        return self._large is not None

    # -- receiving into our buffers (recv_into) ---------------------------------------------

    def get_buffer(self) -> memoryview:
        """Where the transport should receive the next bytes; then call buffer_updated."""
        if self._error is not None:
            raise self._error
        if self._large is not None:
            return memoryview(self._large)[self._large_filled :]
        area = self._area
        if area is None:
            area = self._area = new_frame_buffer(FIRST_AREA)
        start, end = self._area_start, self._area_end
        pending = end - start
        # what the area must hold from its front: the whole small frame begun there, once
        # its size is known (a large one has already moved to a buffer of its own)
        needed = _SIZE.unpack_from(area, start)[0] + SIZE_PREFIX if pending >= SIZE_PREFIX \
            else pending
        if needed > len(area) or (self._filled and len(area) < READ_AREA):
            size = 2 * len(area)
            while size < needed:
                size *= 2
            grown = new_frame_buffer(min(size, READ_AREA))
            grown[:pending] = area[start:end]
            area = self._area = grown
            start, end = 0, pending
        elif pending == 0:
            start = end = 0
        elif start > 0 and len(area) - end < LARGE_FRAME:  # the frame's start: to the front
            area[:pending] = area[start:end]
            start, end = 0, pending
        self._area_start, self._area_end = start, end
        self._filled = False
        if pending == 0 and self._after_large:
            self._offered = min(len(area), FIRST_READ_AFTER_LARGE)
        else:
            self._offered = len(area) - end
        return memoryview(area)[end : end + self._offered]

    def buffer_updated(self, nbytes: int) -> None:
        """``nbytes`` were received into the buffer from the last get_buffer call: the frames
        they complete are cut out and queued (raises FrameError on a bad size prefix, after
        queueing the frames before it; nothing after it is ever a frame)."""
        if self._large is not None:
            self._large_filled += nbytes
            if self._large_filled == len(self._large):
                self._queue_large()
            return
        assert self._area is not None, "buffer_updated without get_buffer"
        self._filled = nbytes >= self._offered  # all the room it had: grow the area
        self._area_end += nbytes
        try:
            self._area_start = self._cut(self._area, self._area_start, self._area_end)
        except FrameError:
            self._area_start = self._area_end
            raise

    def _cut(self, buf: bytearray, pos: int, end: int) -> int:
        """Queue every whole frame in buf[pos:end] as a bytearray of its own, move a large
        frame's start into its own buffer; returns where the small frame left begins."""
        ready = self._ready
        while end - pos >= SIZE_PREFIX:
            size = _SIZE.unpack_from(buf, pos)[0]
            if size < 0 or size > self.max_frame_size:
                self._check_size(size)  # raises
            body = pos + SIZE_PREFIX
            if end - body >= size:
                ready.append(buf[body : body + size])
                self._ready_bytes += SIZE_PREFIX + size
                self._after_large = size >= LARGE_FRAME
                pos = body + size
            elif size >= LARGE_FRAME:
                large = new_frame_buffer(size)
                with memoryview(buf) as view:
                    large[: end - body] = view[body:end]
                self._large, self._large_filled = large, end - body
                return end
            else:
                break
        return pos

    def _queue_large(self) -> None:
        assert self._large is not None
        self._ready.append(self._large)
        self._ready_bytes += SIZE_PREFIX + len(self._large)
        self._large, self._large_filled = None, 0
        self._after_large = True

    def release(self) -> None:
        """Let go of the read area and of a large frame still being received: the
        connection is gone and nothing more arrives. Whole frames already cut out stay for
        next_frame; a later read would start a fresh area."""
        self._area = None
        self._area_start = self._area_end = 0
        self._large, self._large_filled = None, 0
        self._offered, self._filled = 0, False

    # -- bytes handed over --------------------------------------------------------------------

    def feed(self, data: Buffer) -> None:
        """Add bytes read elsewhere (a transport's data_received, a blocking socket's recv):
        copied into our buffers as if received there. Raises FrameError at once when they
        complete an invalid size prefix (the frames before it stay queued for next_frame,
        which then raises it too), and on every call after that."""
        if self._error is not None:
            raise self._error
        with memoryview(data) as view:
            octets = view if view.format == "B" else view.cast("B")
            pos, total = 0, octets.nbytes
            while pos < total:  # every turn takes at least one byte: get_buffer is never empty
                with self.get_buffer() as target:
                    take = min(len(target), total - pos)
                    target[:take] = octets[pos : pos + take]
                self.buffer_updated(take)
                pos += take

    def next_frame(self) -> bytearray | None:
        """The next complete frame body (without its prefix), a bytearray of its own, or
        None if more bytes are needed; raises the reader's FrameError once the frames before
        the bad size prefix are taken."""
        if self._ready:
            frame = self._ready.popleft()
            self._ready_bytes -= SIZE_PREFIX + len(frame)
            return frame
        if self._error is not None:
            raise self._error
        return None

    def frames(self) -> Iterator[bytearray]:
        """Yield every frame that is complete so far."""
        while (frame := self.next_frame()) is not None:
            yield frame

    def _check_size(self, size: int) -> None:
        if size < 0:
            self._error = FrameError(f"negative frame size {size}")
            raise self._error
        if size > self.max_frame_size:
            self._error = FrameTooLarge(size, self.max_frame_size)
            raise self._error


class BufferList:
    """A bytes-like field value made of several buffers, kept apart so an encoder writing into
    a ``SpliceBuffer`` can pass them on by reference instead of joining them."""

    __slots__ = ("buffers", "nbytes")

    def __init__(self, buffers: Sequence[Buffer]) -> None:
        self.buffers: tuple[Buffer, ...] = tuple(buffers)
        self.nbytes = sum(b.nbytes if isinstance(b, memoryview) else len(b)
                          for b in self.buffers)

    def __len__(self) -> int:
        return self.nbytes

    def __bytes__(self) -> bytes:
        return b"".join(self.buffers)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BufferList):
            return bytes(self) == bytes(other)
        if isinstance(other, (bytes, bytearray, memoryview)):
            return bytes(self) == bytes(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to bytes, so not hashable like them

    def __repr__(self) -> str:
        return f"BufferList({len(self.buffers)} buffers, {self.nbytes} bytes)"


class SpliceBuffer(bytearray):
    """An output buffer that takes ``BufferList`` values by reference (see ``splice``); its
    content is ``buffers()``, not its own bytes alone."""

    def __init__(self) -> None:
        super().__init__()
        self._splices: list[tuple[int, tuple[Buffer, ...], int]] = []  # (position, bufs, size)

    def splice(self, value: BufferList) -> None:
        """Let ``value`` follow the bytes written so far, without copying it."""
        if value.nbytes:
            self._splices.append((len(self), value.buffers, value.nbytes))

    @property
    def spliced(self) -> bool:
        return bool(self._splices)

    def spliced_after(self, start: int) -> int:
        """Bytes spliced in after position ``start`` of the encoded bytes."""
        if not self._splices:  # most answers: no records carried by reference
            return 0
        return sum(size for pos, _, size in self._splices if pos > start)

    def truncate(self, start: int) -> None:
        """Drop everything after position ``start``: encoded bytes and splices alike."""
        del self[start:]
        self._splices = [s for s in self._splices if s[0] <= start]

    def buffers(self) -> list[Buffer]:
        """The whole content in order: views of the encoded bytes between the spliced
        buffers. The views pin this buffer: it must not be resized while they are in use."""
        if not self._splices:
            return [self]
        view = memoryview(self)
        out: list[Buffer] = []
        last = 0
        for pos, bufs, _ in self._splices:
            if pos > last:
                out.append(view[last:pos])
                last = pos
            out.extend(bufs)
        if last < len(self):
            out.append(view[last:])
        return out


def discard_from(out: bytearray, start: int) -> None:
    """Undo a partial encoding: drop what was appended to ``out`` after ``start``."""
    if isinstance(out, SpliceBuffer):
        out.truncate(start)
    else:
        del out[start:]


class RequestPeek(NamedTuple):
    """The first 8 bytes of a request: enough to route it, or to refuse its version, before
    its header is decoded. A tuple, so the per-request path unpacks it."""

    api_key: int
    api_version: int
    correlation_id: int


def peek_request_header(frame: Buffer) -> RequestPeek:
    """Read api_key, api_version and correlation_id: the first 8 bytes of any request."""
    if len(frame) < _REQUEST_PEEK.size:
        raise FrameError(f"request of {len(frame)} bytes is shorter than a request header")
    # built from the unpacked tuple without the named tuple's Python __new__ (per request)
    return _new_tuple(RequestPeek, _REQUEST_PEEK.unpack_from(frame, 0))


def peek_request_client_id(frame: Buffer) -> str | None:
    """The client id of a request whose body may be undecodable: request headers v1 and v2
    both carry it as a classic int16-length string right after the 8 leading bytes (v2 adds
    its tag section only after it). None when it is null, cut short, or absent (the v0 header
    of ControlledShutdown v0). Invalid UTF-8 is replaced, since this only serves logging."""
    if len(frame) < _REQUEST_PEEK.size + _CLIENT_ID_LENGTH.size:
        return None
    api_key, api_version, _ = _REQUEST_PEEK.unpack_from(frame, 0)
    if (api_key, api_version) == _HEADER_V0_REQUEST:
        return None
    start = _REQUEST_PEEK.size + _CLIENT_ID_LENGTH.size
    (length,) = _CLIENT_ID_LENGTH.unpack_from(frame, _REQUEST_PEEK.size)
    if length < 0 or len(frame) < start + length:
        return None
    return bytes(frame[start : start + length]).decode("utf-8", "replace")


def frame(payload: Buffer) -> bytes:
    """Prefix ``payload`` with its int32 size."""
    if len(payload) > _MAX_SIZE:
        raise CodecError("payload too large for an int32 size prefix")
    return _SIZE.pack(len(payload)) + bytes(payload)


def begin_frame(out: bytearray) -> int:
    """Reserve a size prefix at the end of ``out`` for a frame whose payload is about to be
    appended; returns the prefix's position, for ``end_frame``."""
    start = len(out)
    out += _PREFIX_PLACEHOLDER
    return start


def end_frame(out: bytearray, start: int) -> None:
    """Fill in the size prefix reserved at ``start``: everything appended after it is the
    frame's payload."""
    size = len(out) - start - SIZE_PREFIX
    if isinstance(out, SpliceBuffer):
        size += out.spliced_after(start)
    if not 0 <= size <= _MAX_SIZE:
        raise CodecError(f"no size prefix reserved at {start}" if size < 0
                         else "payload too large for an int32 size prefix")
    _SIZE.pack_into(out, start, size)
