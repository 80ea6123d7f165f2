"""Sans-IO framing of the Kafka wire protocol: int32 size prefix, then that many bytes.

Theory of operation: the transport (asyncio, threads, tests) owns the socket and hands every
chunk it reads to ``FrameReader.feed``; ``next_frame`` then returns whole frame bodies, so the
same code serves any event loop and can be fuzzed without sockets. Chunks are appended to one
``bytearray`` and consumed by advancing an offset; the consumed prefix is dropped only when it
is large relative to what remains, so reading n bytes costs O(n) however the stream is split.

A transport that can receive into a buffer (asyncio's BufferedProtocol, recv_into; uvloop's for
a protocol that is no asyncio.Protocol) uses ``get_buffer`` / ``buffer_updated`` instead of
``feed``: bytes land in a fixed read area, and every frame they complete is copied out of it at
once into a bytearray of its own (one copy, the only one of a small frame's body) and queued;
only the start of a small frame stays in the area, moved to its front when less than
LARGE_FRAME bytes of room are left. A large frame (``LARGE_FRAME`` bytes or more, a Produce of
big batches) is received apart: once its size is known, what has arrived of it moves into a
bytearray of exactly its size, which ``get_buffer`` hands out until it is full, so the rest of
it is received straight into the frame that ``next_frame`` returns. Frames made this way are
writable bytearrays, nobody else's: the broker patches the batches inside them in place and
keeps views of them (mockbroker.cluster.partition).

A transport that hands over bytes objects instead (``feed_received`` from data_received) has
the rest of a large frame kept as those objects and joined once it is whole: one copy.
Such bytes objects mostly bypass the buffer (``_take_read``): the frames they complete or
hold whole are cut straight out of them (one copy each) and queued; only a small frame's
incomplete tail goes into the buffer, and the next read completes it first, so the buffer
never grows past one frame nor needs compacting. A large frame that completes is queued at
once, so the reads after it start afresh; one found incomplete behind others once they are
taken goes apart. Frames from ``feed`` and fed bytes objects are bytes.

The size prefix is validated the moment its 4 bytes are complete, before any of the body is
kept: a negative size or one above ``max_frame_size`` (Kafka's socket.request.max.bytes,
100 MiB by default) raises ``FrameError`` / ``FrameTooLarge`` and poisons the reader, since the
stream can no longer be resynchronised. ``peek_request_header`` reads only the fixed 8 leading
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
_COMPACT_MIN = 64 * 1024  # never compact for less than this many consumed bytes
LARGE_FRAME = 64 * 1024  # frames this large are received into their own buffer
READ_AREA = 256 * 1024  # the read area handed out by get_buffer for everything else
# A large frame's buffer, every byte of which is received before anyone reads it: accel.py
# sets the compiled extension's, which leaves it unzeroed (bytearray(n) zero-fills first).
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
        self._buf = bytearray()  # what `feed` was given, not yet returned
        self._pos = 0  # start of unconsumed data in _buf
        self._body_size = -1  # size of the frame being read, once its prefix is complete
        self._error: FrameError | None = None
        # get_buffer's read area (made on first use); [_area_start, _area_end) holds the
        # start of a small frame, the only thing ever left in it
        self._area: bytearray | None = None
        self._area_start = self._area_end = 0
        self._large: bytearray | None = None  # the body of a large frame being received
        self._large_filled = 0
        # or, fed bytes objects (a transport's reads), the received pieces of that body
        self._parts: list[bytes] | None = None
        self._parts_missing = 0  # bytes of the body still to come
        self._parts_size = 0  # the body's size
        # whole frames already cut out (of the read area, of a fed bytes object), in order:
        # they come before anything else pending
        self._ready: deque[bytes | bytearray] = deque()
        self._ready_bytes = 0  # their bytes, size prefixes included
        self._fed_reads = False  # reads came as bytes objects (feed_received)

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as frames (prefix of a partial frame included)."""
        pending = len(self._buf) - self._pos + self._ready_bytes
        pending += self._area_end - self._area_start
        if self._large is not None:
            pending += SIZE_PREFIX + self._large_filled
        elif self._parts is not None:
            pending += SIZE_PREFIX + self._parts_size - self._parts_missing
        return pending

    @property
    def receiving_large_frame(self) -> bool:
        """A large frame is being received into its own buffer (it needs more bytes)."""
        if self._parts is not None:
            return self._parts_missing > 0
        return self._large is not None and self._large_filled < len(self._large)

    # -- receiving into our buffers (recv_into) ---------------------------------------------

    def get_buffer(self) -> memoryview:
        """Where the transport should receive the next bytes; then call buffer_updated."""
        if self._error is not None:
            raise self._error
        if self._parts is not None:  # a transport that switched from feeding bytes
            self._parts_to_large()
        if self._large is not None and self._large_filled == len(self._large):
            self._queue_large()  # whole, filled by `feed`
        if len(self._buf) > self._pos:  # `feed` before: its frames cut out, the rest moved
            self._buf_to_area()
        if self._large is not None:
            return memoryview(self._large)[self._large_filled :]
        area = self._area
        if area is None:
            area = self._area = bytearray(READ_AREA)
        start, end = self._area_start, self._area_end
        if start == end:
            self._area_start = self._area_end = end = 0
        elif READ_AREA - end < LARGE_FRAME:  # the start of a small frame: to the front
            area[: end - start] = area[start:end]
            end -= start
            self._area_start, self._area_end = 0, end
        return memoryview(area)[end:]

    def buffer_updated(self, nbytes: int) -> None:
        """``nbytes`` were received into the buffer from the last get_buffer call: the frames
        they complete are cut out and queued (raises FrameError on a bad size prefix, after
        queueing the frames before it)."""
        if self._large is not None:
            self._large_filled += nbytes
            if self._large_filled == len(self._large):
                self._queue_large()
            return
        assert self._area is not None, "buffer_updated without get_buffer"
        self._area_end += nbytes
        self._area_start = self._cut(self._area, self._area_start, self._area_end)

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

    def _buf_to_area(self) -> None:
        """What `feed` left unread goes the way of received bytes (get_buffer after feed)."""
        self._body_size = -1
        pos = self._cut(self._buf, self._pos, len(self._buf))
        rest = self._buf[pos:]
        self._buf.clear()
        self._pos = 0
        if rest:  # the start of a small frame
            if self._area is None:
                self._area = bytearray(READ_AREA)
            self._area[: len(rest)] = rest
            self._area_start, self._area_end = 0, len(rest)

    def _area_to_buf(self) -> None:
        """The start of a frame in the read area goes to `feed`'s buffer (feed after
        get_buffer)."""
        assert self._area is not None
        self._buf += self._area[self._area_start : self._area_end]
        self._area_start = self._area_end = 0

    def _receive_copied(self, data: Buffer) -> None:
        """A read in someone else's buffer: copied into ours as if received there."""
        with memoryview(data) as view:
            pos, total = 0, view.nbytes
            while pos < total:  # every turn takes at least one byte: get_buffer is never empty
                target = self.get_buffer()
                take = min(len(target), total - pos)
                target[:take] = view[pos : pos + take]
                target.release()
                self.buffer_updated(take)
                pos += take

    # -- bytes handed over --------------------------------------------------------------------

    def feed_received(self, data: Buffer) -> None:
        """``feed`` for a transport's reads. A read in a buffer other than bytes is taken
        as if received into ours (get_buffer). Reads that arrive as bytes objects (a
        transport's data_received) are kept as they are when they carry part of a large
        frame, joined once it is whole: its body is copied once, by the join, into the bytes
        that ``next_frame`` returns. The whole frames such a read holds, when nothing was
        pending before it, are cut out of it at once (one copy each, never through the shared
        buffer); only its incomplete tail is kept."""
        if type(data) is not bytes:
            self._receive_copied(data)
            return
        self._fed_reads = True
        if self._error is None and self._take_read(data):
            return
        self.feed(data)
        if self._large is None and self._parts is None:
            self._receive_large_frame_apart()

    def _take_read(self, data: bytes) -> bool:
        """Take a read handed over as bytes without the shared buffer, when it can: the
        rest of a large frame received as parts (queued, joined, once whole), the rest of
        a small frame whose start the last read left in the buffer (queued), the whole
        frames that follow (queued), then the start of a large frame (its first part) or
        of a small one (into the buffer). Every frame is copied once. False when it took
        nothing: all of the read goes through ``feed``."""
        if self._large is not None or self._area_end > self._area_start or (
                self._parts is not None and len(self._buf) > self._pos):
            return False  # a transport that switched between bytes and buffers
        pos, end = 0, len(data)
        if self._parts is not None:
            take = min(end, self._parts_missing)
            if take:
                self._parts.append(data if take == end else data[:take])
                self._parts_missing -= take
            if self._parts_missing:
                return True
            parts, self._parts = self._parts, None
            self._ready.append(b"".join(parts))  # one part: that bytes object itself
            self._ready_bytes += SIZE_PREFIX + self._parts_size
            pos = take
        elif len(self._buf) > self._pos:
            pos = self._complete_partial_frame(data)
            if pos < 0:
                return False  # not one small partial frame
            if len(self._buf) > self._pos:
                return True  # still partial: all of the read went into it
        ready = self._ready
        while end - pos >= SIZE_PREFIX:
            size = _SIZE.unpack_from(data, pos)[0]
            if size < 0 or size > self.max_frame_size:
                break  # feed checks it at once; after other frames, next_frame does
            if end - pos - SIZE_PREFIX < size:
                if size < LARGE_FRAME:
                    break
                # the start of a large frame, received as parts from here on
                self._parts = [data[pos + SIZE_PREFIX :]]
                self._parts_size = size
                self._parts_missing = size - (end - pos - SIZE_PREFIX)
                return True
            ready.append(data[pos + SIZE_PREFIX : pos + SIZE_PREFIX + size])
            self._ready_bytes += SIZE_PREFIX + size
            pos += SIZE_PREFIX + size
        if not pos:
            return False
        if pos < end:
            self._buf += memoryview(data)[pos:]  # a partial frame, or one next_frame refuses
        return True

    def _complete_partial_frame(self, data: bytes) -> int:
        """The buffer holds the start of a frame (the tail of the last read): add what
        completes it (queued once whole, the buffer then empty) and return how much of
        `data` that took; -1, touching nothing, unless the buffer holds exactly one small
        partial frame with a valid size."""
        pending = len(self._buf) - self._pos
        size: int
        if pending >= SIZE_PREFIX:
            size = _SIZE.unpack_from(self._buf, self._pos)[0]
            if pending >= SIZE_PREFIX + size:
                return -1
        elif pending + len(data) >= SIZE_PREFIX:
            size = _SIZE.unpack(bytes(self._buf[self._pos :]) + data[: SIZE_PREFIX - pending])[0]
        else:
            self._buf += data
            return len(data)
        if size < 0 or size >= LARGE_FRAME or size > self.max_frame_size:
            return -1
        missing = SIZE_PREFIX + size - pending
        take = min(len(data), missing)
        self._buf += memoryview(data)[:take]
        if take < missing:
            self._body_size = size
            return take
        with memoryview(self._buf) as view:
            self._ready.append(view[self._pos + SIZE_PREFIX :].tobytes())
        self._ready_bytes += SIZE_PREFIX + size
        self._buf.clear()
        self._pos = 0
        self._body_size = -1
        return take

    def feed(self, data: Buffer) -> None:
        """Add bytes from the stream; raises at once if they complete an invalid size prefix."""
        if self._error is not None:
            raise self._error
        if self._area_end > self._area_start:  # received into buffers before: kept in order
            self._area_to_buf()
        if self._parts is not None:
            take = min(len(data), self._parts_missing)
            # a bytes object is immutable: kept by reference; anything else is copied
            if take:
                whole = take == len(data) and type(data) is bytes
                self._parts.append(data if whole else bytes(data[:take]))  # type: ignore[arg-type]
                self._parts_missing -= take
            if take < len(data):
                self._buf += data[take:]  # the next frames; their prefix is checked when read
            return
        if self._large is not None:
            take = min(len(data), len(self._large) - self._large_filled)
            self._large[self._large_filled : self._large_filled + take] = data[:take]
            self._large_filled += take
            self._buf += data[take:]  # the next frames; their prefix is checked when read
            return
        if self._body_size < 0:
            # Check the pending prefix before keeping any body bytes that follow it.
            have = len(self._buf) - self._pos
            if have >= SIZE_PREFIX:
                self._check_size(_SIZE.unpack_from(self._buf, self._pos)[0])
            elif have + len(data) >= SIZE_PREFIX:
                prefix = bytes(self._buf[self._pos :]) + bytes(data[: SIZE_PREFIX - have])
                self._check_size(_SIZE.unpack(prefix)[0])
        self._buf += data

    def next_frame(self) -> bytes | bytearray | None:
        """Return the next complete frame body (without its prefix), or None if more is needed:
        bytes from ``feed``, a bytearray of its own from ``get_buffer`` reads."""
        if self._ready:
            frame = self._ready.popleft()
            self._ready_bytes -= SIZE_PREFIX + len(frame)
            return frame
        if self._error is not None:
            raise self._error
        if self._parts is not None:
            if self._parts_missing:
                return None
            parts, self._parts = self._parts, None
            return b"".join(parts)  # one part: that bytes object itself
        if self._large is not None:
            if self._large_filled < len(self._large):
                return None
            large, self._large, self._large_filled = self._large, None, 0
            return large
        available = len(self._buf) - self._pos
        if self._body_size < 0:
            if available < SIZE_PREFIX:
                return None
            self._check_size(_SIZE.unpack_from(self._buf, self._pos)[0])
        size = self._body_size
        if available < SIZE_PREFIX + size:
            if size >= LARGE_FRAME and self._fed_reads:
                # a large frame begun behind others (pipelined): the rest of it is received
                # apart from now on, not appended to this buffer and copied out again
                self._receive_large_frame_apart()
            return None
        start = self._pos + SIZE_PREFIX
        end = start + size
        if start == 0 and end == len(self._buf):
            frame = bytes(self._buf)
        else:
            with memoryview(self._buf) as view:
                frame = view[start:end].tobytes()
        self._pos = end
        self._body_size = -1
        self._compact()
        return frame

    def frames(self) -> Iterator[bytes | bytearray]:
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
        self._body_size = size

    def _receive_large_frame_apart(self) -> None:
        """When the first unread frame is large and incomplete, move what is buffered of it
        into the first of the pieces that later reads (bytes objects) are added to."""
        available = len(self._buf) - self._pos
        if self._body_size < 0:
            if available < SIZE_PREFIX:
                return
            self._check_size(_SIZE.unpack_from(self._buf, self._pos)[0])
        size = self._body_size
        have = available - SIZE_PREFIX
        if size < LARGE_FRAME or have >= size:
            return
        with memoryview(self._buf) as view:
            self._parts = [view[self._pos + SIZE_PREFIX :].tobytes()]
        self._parts_size, self._parts_missing = size, size - have
        self._buf.clear()
        self._pos = 0
        self._body_size = -1

    def _parts_to_large(self) -> None:
        """The pieces received so far into one buffer of the frame's size."""
        assert self._parts is not None
        large = new_frame_buffer(self._parts_size)
        filled = 0
        for part in self._parts:
            large[filled : filled + len(part)] = part
            filled += len(part)
        self._large, self._large_filled, self._parts = large, filled, None

    def _compact(self) -> None:
        if self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        elif self._pos >= _COMPACT_MIN and self._pos * 2 >= len(self._buf):
            del self._buf[: self._pos]
            self._pos = 0


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
