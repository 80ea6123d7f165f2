"""The stream protocol of a client connection: bytes straight into the codec's FrameReader.

Theory of operation: reading avoids copies: the listener builds each connection's `FrameProtocol`, a
StreamReaderProtocol (so StreamWriter, drain and close work as usual) whose bytes go to the
FrameReader, never through the StreamReader. It is also a BufferedProtocol: asyncio's own
transports then receive straight into the FrameReader's buffers, each frame then copied once
out of its read area into a bytearray of its own (a large Produce frame received straight into
one); uvloop treats any asyncio.Protocol subclass as a plain one and hands over bytes
(data_received), which the FrameReader copies once, into bytes. Reading pauses
while more than READ_HIGH_WATER bytes wait unhandled and resumes once they are taken.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafka_protocol_codec import CodecError
from kafka_protocol_codec.framing import FrameReader

READ_CHUNK = 256 * 1024
READ_HIGH_WATER = 4 * 1024 * 1024


class FrameProtocol(asyncio.StreamReaderProtocol, asyncio.BufferedProtocol):
    """The stream protocol of one connection whose bytes go into a FrameReader via
    get_buffer/buffer_updated (recv_into), not through the StreamReader."""

    def __init__(self, max_frame_size: int, client_connected_cb: Any) -> None:
        super().__init__(asyncio.StreamReader(limit=READ_CHUNK), client_connected_cb)
        self.frames = FrameReader(max_frame_size)
        self.eof = False
        self._io: Any = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._io = transport  # uvloop's transports are not asyncio.Transport subclasses
        super().connection_made(transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self._received(self.frames.buffer_updated, nbytes)

    def data_received(self, data: bytes) -> None:
        """uvloop calls this instead of get_buffer for any asyncio.Protocol subclass."""
        self._received(self.frames.feed_received, data)

    def _received(self, take: Any, arg: Any) -> None:
        try:
            take(arg)
        except CodecError:
            self._pause()  # the reader is poisoned; next_frame raises the error
        else:
            if self.frames.buffered > READ_HIGH_WATER and not self.frames.receiving_large_frame:
                self._pause()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return bool(super().eof_received())

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self._wake()
        super().connection_lost(exc)

    def next_frame(self) -> bytes | bytearray | None:
        """The next whole request frame, or None (raises CodecError on a bad frame)."""
        frame = self.frames.next_frame()
        if self._paused and self.frames.buffered <= READ_HIGH_WATER and self._io is not None:
            self._paused = False
            self._io.resume_reading()
        return frame

    async def data_arrived(self) -> None:
        """Wait for more bytes (or the end of the stream)."""
        if self.eof:
            return
        self._waiter = asyncio.get_running_loop().create_future()
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

