"""The stream protocol of a client connection: reads received straight into the FrameReader.

Theory of operation: reading avoids copies. The listener builds each connection's
`FrameProtocol`, a pure BufferedProtocol: the transport asks it for a buffer (get_buffer) and
receives into it (recv_into), then says how much arrived (buffer_updated). Those buffers are
the FrameReader's (its read area, or a large frame's own bytearray), so the event loop never
makes a bytes object of a read. It is deliberately not an asyncio.Protocol subclass (so not a
StreamReaderProtocol): uvloop's transports and uvloop's TLS layer hand a protocol buffers only
when it has get_buffer and is no asyncio.Protocol; asyncio's, when it is a BufferedProtocol.
Both loops' plain and TLS transports then receive into our buffers.

What StreamReaderProtocol gave the StreamWriter is done here: the writer is made in
connection_made and handed, with no StreamReader behind it, to the connection callback (a
task); `_drain_helper` waits while the transport has paused our writing and fails once the
connection is lost, and `_get_close_waiter` is a future settled by connection_lost, for
wait_closed. An end of stream (eof_received) keeps the transport open for the answers still to
write, except over TLS, which cannot half-close. Reading pauses while more than
READ_HIGH_WATER bytes wait unhandled and resumes once they are taken. Every frame is handled
by the connection's task (connection.py), which this wakes when bytes arrive.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from kafka_protocol_codec import CodecError
from kafka_protocol_codec.framing import Buffer, FrameReader

READ_CHUNK = 256 * 1024
READ_HIGH_WATER = 4 * 1024 * 1024

ConnectedCallback = Callable[[asyncio.StreamReader, asyncio.StreamWriter],
                             Coroutine[Any, Any, None]]


class FrameProtocol(asyncio.BufferedProtocol):
    """The protocol of one connection: reads go into a FrameReader via get_buffer and
    buffer_updated; a StreamWriter writes its answers."""

    def __init__(self, max_frame_size: int, client_connected_cb: ConnectedCallback) -> None:
        self.frames = FrameReader(max_frame_size)
        self.eof = False
        self._loop = asyncio.get_running_loop()
        self._client_connected_cb = client_connected_cb
        self._io: Any = None  # uvloop's transports are not asyncio.Transport subclasses
        self._over_ssl = False
        self._task: asyncio.Task[None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False  # reading paused (READ_HIGH_WATER, a bad frame)
        self._poisoned = False  # a bad frame: reading stays paused (get_buffer would raise)
        self._writing_paused = False
        self._drain_waiters: deque[asyncio.Future[None]] = deque()
        self._connection_lost = False
        self._closed: asyncio.Future[None] = self._loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._io = transport
        self._over_ssl = transport.get_extra_info("sslcontext") is not None
        # a StreamReader only because the callback's signature has one: nothing feeds it
        writer = asyncio.StreamWriter(transport, self, None, self._loop)  # type: ignore[arg-type]
        self._task = self._loop.create_task(
            self._client_connected_cb(asyncio.StreamReader(), writer))
        self._task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Task[None]) -> None:
        """As StreamReaderProtocol: an exception escaping the connection is reported and
        closes the transport."""
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._loop.call_exception_handler({
                "message": "Unhandled exception in client_connected_cb",
                "exception": exc, "transport": self._io})
            if self._io is not None:
                self._io.close()

    # -- reading ----------------------------------------------------------------------------

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self._received(self.frames.buffer_updated, nbytes)

    def data_received(self, data: Buffer) -> None:
        """A transport that hands over bytes instead (no loop of ours does): copied in."""
        self._received(self.frames.feed, data)

    def _received(self, take: Callable[[Any], None], arg: Any) -> None:
        try:
            take(arg)
        except CodecError:
            self._poisoned = True  # next_frame raises the error after the frames before it
            self._pause()
        else:
            if self.frames.buffered > READ_HIGH_WATER and not self.frames.receiving_large_frame:
                self._pause()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        # TLS cannot half-close (asyncio warns when asked to): the transport then closes
        return not self._over_ssl

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.frames.release()  # nothing more arrives: the read area goes now, not at a GC
        self._wake()
        self._connection_lost = True
        if not self._closed.done():
            if exc is None:
                self._closed.set_result(None)
            else:
                self._closed.set_exception(exc)
        for waiter in self._drain_waiters:  # writers waiting on a paused transport
            if not waiter.done():
                if exc is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(exc)
        self._io = None
        self._task = None

    def next_frame(self) -> bytes | bytearray | None:
        """The next whole request frame, or None (raises CodecError on a bad frame)."""
        frame = self.frames.next_frame()
        if self._paused and self.frames.buffered <= READ_HIGH_WATER and self._io is not None \
                and not self._poisoned:
            self._paused = False
            self._io.resume_reading()
        return frame

    async def data_arrived(self) -> None:
        """Wait for more bytes (or the end of the stream)."""
        if self.eof:
            return
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _pause(self) -> None:
        if not self._paused and self._io is not None:
            self._paused = True
            self._io.pause_reading()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # -- writing: what StreamWriter asks of its protocol ------------------------------------

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _drain_helper(self) -> None:
        """StreamWriter.drain: wait while the transport's write buffer is over its limit."""
        if self._connection_lost:
            raise ConnectionResetError("Connection lost")
        if not self._writing_paused:
            return
        waiter = self._loop.create_future()
        self._drain_waiters.append(waiter)
        try:
            await waiter
        finally:
            self._drain_waiters.remove(waiter)

    def _get_close_waiter(self, stream: asyncio.StreamWriter) -> asyncio.Future[None]:
        """StreamWriter.wait_closed: settled by connection_lost."""
        return self._closed

    def __del__(self) -> None:
        # a connection lost with an error nobody awaited is not an unretrieved exception
        closed = getattr(self, "_closed", None)
        if closed is not None and closed.done() and not closed.cancelled():
            closed.exception()
