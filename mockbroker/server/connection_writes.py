"""The write side of a client connection: responses encoded, held, written together, and
the connection-level faults carried out where the connection writes.

Theory of operation: responses are encoded by the codec's `encode_response_into` into a
SpliceBuffer, which takes a Fetch's stored batches by reference, and go out with one
vectored write (`writelines`) of the encoded bytes and those batches, never joined into one
copy. `_write_encoded` holds them; `_flush` writes what is held, which Connection calls when
no whole request is left to handle, before every await, and `_write_encoded` itself past
HELD_HIGH_WATER bytes, so no answer waits for a later request. A response ready when the
transport is already closed is dropped and the connection ends (CloseConnection).

Connection-level faults (mockbroker.server.hooks.WirePlan, decided by `hooks.wire`) are
carried out here, at the points where the connection reads, writes and closes: a hung
connection keeps reading and drops every request unanswered; a reset ends with SO_LINGER 0
and abort (the client sees ECONNRESET); a half response writes the first half of the encoded
frame and closes; a bandwidth cap writes the response in chunks paced by event-loop timers
(in this connection's own task, one response at a time, so what waits is bounded by the
response itself); a data fault rewrites the handler's response before it is encoded.

`ConnectionWrites` is the base class of Connection (connection.py), which sets every
attribute declared here in its __init__; the methods are inherited, so a request pays no
extra call or lookup for living in this module.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from kafka_protocol_codec import CodecError, api, encode_response_into
from kafka_protocol_codec.framing import SpliceBuffer

from mockbroker.server.hooks import ConnectionInfo, WirePlan

if TYPE_CHECKING:
    from mockbroker.server.listener_context import ListenerContext
    from mockbroker.server.trace import Span

log = logging.getLogger("mockbroker.server")

HELD_HIGH_WATER = 64 * 1024  # held responses past this many bytes go out at once
PACE_TICK_S = 0.02  # a paced response goes out in chunks of about this much time


class CloseConnection(Exception):
    """Raised to end a connection after logging why. With `delay_ms`, the connection first
    waits that long, reading nothing more, then writes its `last_answer` (if any) and
    closes: Kafka's delayed answer to a failed authentication (KIP-306)."""

    def __init__(self, delay_ms: int = 0,
                 last_answer: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.delay_ms = delay_ms
        self.last_answer = last_answer



class ConnectionWrites:
    """Encoding, held writes and the wire faults of one connection (Connection's base)."""

    listener: ListenerContext
    writer: asyncio.StreamWriter
    info: ConnectionInfo
    peer: str
    close_reason: str | None
    _reset: bool
    _held: list[Any]
    _held_bytes: int

    # -- connection-level faults (hooks.WirePlan) ---------------------------------------------

    async def _wire_instead_of_answer(self, wire: WirePlan, key: int, version: int,
                                      span: Span | None) -> bool:
        """Carry out a fault that replaces the answer; True if the request is done with."""
        if wire.hang:
            self.info.hung = True
            if span is not None:
                span.outcome = "injected hang"
            log.info("broker %d: injected hang of %s on %s v%d", self.listener.node.broker_id,
                     self.peer, api_label(key), version)
            return True
        if wire.reset and not wire.answer_before_reset:
            await self._injected_reset(wire, span)
        return False

    async def _injected_reset(self, wire: WirePlan, span: Span | None) -> NoReturn:
        if wire.reset_delay_ms > 0:
            await asyncio.sleep(wire.reset_delay_ms / 1000)
        if span is not None and span.outcome == "ok":
            span.outcome = "injected reset"
        self._reset = True
        self.close_reason = "injected reset"
        raise CloseConnection

    async def _write_with_faults(self, wire: WirePlan, out: SpliceBuffer,
                                 span: Span | None) -> None:
        self._flush()
        if self.writer.transport.is_closing():
            self.close_reason = "the client went away"
            raise CloseConnection
        if wire.half_response:
            whole = b"".join(out.buffers())  # a copy, for this one faulty answer only
            self.writer.write(whole[:len(whole) // 2])
            self.info.bytes_out += len(whole) // 2
            self.close_reason = "injected half response"
            if span is not None:
                span.outcome = "injected half response"
            raise CloseConnection  # the close flushes the half that was written
        if wire.bytes_per_second is not None:
            await self._write_paced(out, wire)
        else:
            self._write_encoded(out)
            self._flush()  # out now: a fault may follow (a reset must come after the answer)
        if wire.reset:
            await self.writer.drain()
            await self._injected_reset(wire, span)

    async def _write_paced(self, out: SpliceBuffer, wire: WirePlan) -> None:
        """Write `out` at `wire.bytes_per_second`: a chunk, then a loop timer until the
        bytes sent so far are due, so the rate holds over the whole response."""
        rate = wire.bytes_per_second
        assert rate is not None and rate > 0
        loop = asyncio.get_running_loop()
        chunk = max(1, int(rate * PACE_TICK_S))
        start = loop.time()
        sent = 0
        for piece in _chunks(out.buffers(), chunk):
            if self.writer.transport.is_closing():
                self.close_reason = "the client went away"
                raise CloseConnection
            self.writer.write(piece)
            sent += len(piece)
            self.info.bytes_out += len(piece)
            self.info.throttled_bytes += len(piece)
            if wire.on_paced is not None:
                wire.on_paced(len(piece))
            await self.writer.drain()
            due = start + sent / rate - loop.time()
            if due > 0:
                await asyncio.sleep(due)


    def _write_response(self, key: int, version: int, correlation_id: int,
                        body: Mapping[str, Any]) -> None:
        self._write_frame(self._encode(key, version, correlation_id, body))

    def _write_frame(self, frame: bytes | bytearray) -> None:
        """Hold an encoded answer for writing (`_write_encoded`), unless the client went
        away: nobody is left to answer."""
        if self.writer.transport.is_closing():
            self.close_reason = "the client went away"
            raise CloseConnection
        self._write_encoded(frame)

    def _write_encoded(self, out: bytes | bytearray) -> None:
        """Hold the response (a SpliceBuffer, or a plain frame) for one vectored write with
        those of the requests after it (see _flush); past HELD_HIGH_WATER bytes everything
        held goes out now."""
        if type(out) is SpliceBuffer and out.spliced:
            size = len(out) + out.spliced_after(-1)
            self._held.extend(out.buffers())
        else:
            size = len(out)
            self._held.append(out)
        self.info.bytes_out += size
        self._held_bytes += size
        if self._held_bytes > HELD_HIGH_WATER:
            self._flush()

    def _flush(self) -> None:
        """Write the held responses. A client that pipelines requests gets the answers to
        all the requests one read brought in with one write (one system call instead of
        one each); they are written before the connection waits for more bytes and before
        any await (a parked request, a throttle, a fault), so none waits on a later one."""
        if self._held:
            held, self._held, self._held_bytes = self._held, [], 0
            self.writer.writelines(held)

    def _flush_before_close(self) -> None:
        """What is held still goes out on a close (a close after an answer, the client's
        EOF); a transport already closed takes nothing (uvloop raises, asyncio ignores)."""
        if self._held and not self.writer.transport.is_closing():
            try:
                self._flush()
            except RuntimeError:
                pass

    def _encode(self, key: int, version: int, correlation_id: int,
                body: Mapping[str, Any]) -> SpliceBuffer:
        out = SpliceBuffer()
        try:
            encode_response_into(out, key, version, correlation_id, body)
        except CodecError as exc:
            log.error("broker %d: cannot encode %s v%d response: %s",
                      self.listener.node.broker_id, api_label(key), version, exc)
            self.close_reason = f"cannot encode the response: {exc}"
            raise CloseConnection from exc
        return out



def _chunks(buffers: list[Any], size: int) -> Iterator[memoryview]:
    """The bytes of `buffers` in order, as views of at most `size` bytes (no copies)."""
    for buffer in buffers:
        view = memoryview(buffer).cast("B")
        for start in range(0, len(view), size):
            yield view[start:start + size]


def api_label(key: int) -> str:
    try:
        return api(key).name
    except CodecError:
        return f"api_key={key}"
