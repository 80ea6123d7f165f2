"""One client connection: frames in, requests handled one at a time, responses in order.

Theory of operation: Kafka processes one request per connection at a time and answers in
request order, so this loop reads frames, handles each to completion (a Fetch may park on
partition events), and writes its response before taking the next. Bad input gets Kafka's
behaviour: an unknown API key, an unadvertised version, an undecodable request or an
oversized frame closes this connection with one log line; ApiVersions at an unsupported
version is answered as handlers.api_versions says (the v0 layout with UNSUPPORTED_VERSION and
the full API list). An exception inside a handler is logged and closes only this connection.

A client may go away (reset or close) while its request is parked: a long-poll Fetch, a
JoinGroup waiting for the rebalance. A watcher on the transport's close cancels the parked
handler at once, so it lets go of what it waits on (a Fetch's listeners; a JoinGroup's future,
while the member stays in the group until its session times out, as in Kafka). A response
that is ready when the transport is already closed is dropped, and the connection ends
quietly: nothing is logged, nothing escapes as an unhandled exception (under uvloop a write to
a closed transport raises RuntimeError, under asyncio it is ignored; both end the same way).

A connection sees its listener only through `ListenerContext`, a frozen record of what the
listener shares with its connections (cluster, broker, advertised versions, frame limit,
hooks, endpoints), so it never reaches back into the BrokerServer that accepted it. Framing
and encoding are the codec's: requests come from its FrameReader, responses are encoded by
`encode_response_into` into a SpliceBuffer, which takes a Fetch's stored batches by reference
(a BufferList records field), and go out with one vectored write (`writelines`) of the
encoded bytes and those batches, never joined into one copy. Responses are held and written
together when the connection has no whole request left to handle (a client pipelining
requests, as producers do with several in flight, gets the answers to what one read brought
with one system call), before every await (a parked request, a throttle, an injected fault),
and at once past HELD_HIGH_WATER bytes, so no answer waits for a later request.

Every request takes the same path (peek the header, decode, dispatch, encode): the server
knows no API keys beyond ApiVersions (its fallback answer) and SASL (the session's routing).

Connection-level faults and the write batching are carried out by the base class
ConnectionWrites (connection_writes.py); the framing protocol is frame_protocol.py.
Each connection is listed in `hooks.connections` while it is open.

Security (mockbroker.server.listeners): a TLS listener's connection knows its client's
principal from the client certificate (mockbroker.server.tls); a SASL listener's connection
owns a SaslSession (mockbroker.server.sasl), which says for each frame whether it is handled
as usual, by the session (handshake, authenticate, a v0 handshake's bare tokens) or closes
the connection; the connection only dispatches. The principal goes to every RequestContext.

Client quotas: a response the quota enforcement throttled (RequestContext.throttle_ms) is
written at once and the connection then reads nothing more for the throttle time (KIP-219's
muted channel; older Produce/Fetch versions get the answer held back instead). The wait is an
event-loop timer: the cluster's clock may be a manual one, which only a test moves.

The request trace (mockbroker.server.trace) hooks in per frame: with `hooks.trace` unset the
frame goes straight to `handle_frame` with no span, and every trace step inside is one
`span is not None` test. With a tracer, `_handle_traced` opens a span, and the handling
notes the decoded request, the response it wrote or how the exchange ended.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
import sys
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn

from kafka_protocol_codec import CodecError, decode_request
from kafka_protocol_codec.framing import (
    FrameReader,
    peek_request_client_id,
    peek_request_header,
)

from mockbroker.handlers import REGISTRY
from mockbroker.handlers.api_versions import unsupported_version_answer
from mockbroker.handlers.authorization import dispatch as authorized_dispatch
from mockbroker.handlers.context import CloseAfterRequest, RequestContext
from mockbroker.handlers.sasl import illegal_sasl_state_response
from mockbroker.server.connection_writes import CloseConnection, ConnectionWrites, api_label
from mockbroker.server.frame_protocol import READ_CHUNK, FrameProtocol
from mockbroker.server.hooks import ConnectionInfo, WirePlan
from mockbroker.server.listener_context import ListenerContext
from mockbroker.server.listeners import PLAINTEXT
from mockbroker.server.sasl import Route, SaslSession
from mockbroker.server.tls import ANONYMOUS, peer_principal

if TYPE_CHECKING:
    from mockbroker.server.trace import Span, Tracer

log = logging.getLogger("mockbroker.server")

HIGH_WATER = 4 * 1024 * 1024
FAILED_AUTHENTICATION_DELAY = "connection.failed.authentication.delay.ms"
DEFAULT_FAILED_AUTHENTICATION_DELAY_MS = "100"  # Kafka's default (KIP-306)
# struct linger {int l_onoff = 1; int l_linger = 0}: close at once with a reset
LINGER_RESET = (1).to_bytes(4, sys.byteorder) + (0).to_bytes(4, sys.byteorder)


class Connection(ConnectionWrites):
    def __init__(self, listener: ListenerContext, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.listener = listener
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.client_id: str | None = None
        self.close_reason: str | None = None
        self._task: asyncio.Task[Any] | None = None
        self._handling = False  # a request is being handled (possibly parked)
        self._abandoned = False  # the client went away while one was: its task was cancelled
        self._reset = False  # end with a TCP reset (an injected fault)
        self._close_requested = False  # the server asked to close (close_for_server)
        self._held: list[Any] = []  # encoded responses not yet written (see _flush)
        self._held_bytes = 0
        sockname = writer.get_extra_info("sockname")
        self._loop = asyncio.get_running_loop()  # the one this connection is handled on
        self.info = ConnectionInfo(
            listener.hooks.next_connection_id(), listener.node.broker_id,
            peer[0] if isinstance(peer, tuple) else str(peer),
            peer[1] if isinstance(peer, tuple) else 0,
            sockname[1] if isinstance(sockname, tuple) else 0,
            self._loop.time(), close=self.close_for_server)
        ssl_object = writer.get_extra_info("ssl_object")
        self.principal = ANONYMOUS if ssl_object is None else peer_principal(ssl_object)
        self.sasl = None if listener.sasl is None else SaslSession(
            listener.sasl, lambda: listener.node.image.scram, listener.name,
            listener.node.broker_id, self.peer, listener.advertised.get(18, (0, 0))[1])

    async def run(self) -> None:
        frames = FrameReader(self.listener.max_frame_size)
        self._task = task = asyncio.current_task()
        assert task is not None
        lost = asyncio.ensure_future(self.writer.wait_closed())
        lost.add_done_callback(self._transport_closed)
        protocol = self.writer.transport.get_protocol()
        connections = self.listener.hooks.connections
        connections[self.info.connection_id] = self.info
        try:
            while isinstance(protocol, FrameProtocol):
                frame = protocol.next_frame()
                if frame is None:
                    self._flush()
                    if protocol.eof:
                        return
                    await protocol.data_arrived()
                    continue
                await self._handle_one(frame)
                if self.writer.transport.get_write_buffer_size() > HIGH_WATER:
                    await self.writer.drain()  # raises ConnectionError if the client left
            while True:  # a plain StreamReader (a connection not made by BrokerServer)
                data = await self.reader.read(READ_CHUNK)
                if not data:
                    return
                try:
                    frames.feed(data)
                except CodecError:
                    pass  # next_frame raises it after the whole frames before it
                while (frame := frames.next_frame()) is not None:
                    await self._handle_one(frame)
                self._flush()
                if self.writer.transport.get_write_buffer_size() > HIGH_WATER:
                    await self.writer.drain()  # raises ConnectionError if the client left
        except CodecError as exc:  # framing: oversized or negative size
            self._log_close(f"bad frame: {exc}")
        except CloseConnection as close:
            if close.delay_ms > 0 or close.last_answer is not None:
                self._flush()
                await asyncio.sleep(close.delay_ms / 1000)
                if close.last_answer is not None:
                    close.last_answer()
                    self._flush()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # our own cancel (the client went away) ends the connection; any other (the
            # broker stopping) goes on to the listener
            if not self._abandoned or task.uncancel() > 0:
                raise
        finally:
            lost.remove_done_callback(self._transport_closed)
            lost.cancel()  # ours to end; harmless if the transport is already closed
            connections.pop(self.info.connection_id, None)
            self.listener.cluster.telemetry.connection_closed(self.peer)
            if self._reset:
                self._abort_with_reset()
            else:
                self._flush_before_close()
                self.writer.close()

    def _abort_with_reset(self) -> None:
        """Close with a TCP reset: SO_LINGER 0, then close the socket at once."""
        sock = self.writer.get_extra_info("socket")
        try:
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
        except OSError:
            pass  # already gone: nothing left to reset
        self.writer.transport.abort()

    async def _handle_one(self, frame: bytes | bytearray) -> None:
        if self._close_requested:  # closed by the server: begin no other request
            raise CloseConnection
        tracer = self.listener.hooks.trace
        self._handling = True
        try:
            if tracer is None:
                await self.handle_frame(frame)
            else:
                await self._handle_traced(frame, tracer)
        finally:
            self._handling = False
        if self._close_requested:
            raise CloseConnection

    def close_for_server(self, reason: str) -> None:
        """Close this connection on the server's decision (ServerHooks.close_connections): at
        once when idle, else right after the request being handled is answered, so a client
        never loses the answer to a request the broker carried out. Requests received but not
        yet begun (a woken task's, the rest of a read) are not carried out: the client, seeing
        the connection close unanswered, sends them again, and nothing is appended twice."""
        if self._close_requested:
            return
        self._log_close(reason)
        self._close_requested = True
        if not self._handling:
            self.writer.close()

    def _transport_closed(self, lost: asyncio.Future[None]) -> None:
        """The transport closed under a request being handled: the client reset or closed
        the connection (or the listener aborted it). Nobody is left to answer, so cancel the
        parked handler now instead of at its deadline."""
        if not lost.cancelled():
            lost.exception()  # a reset arrives as ConnectionResetError: seen, nothing to do
        if self._handling and not self._abandoned and self._task is not None:
            self._abandoned = True
            self.close_reason = "the client went away"
            self._task.cancel()

    def _log_close(self, reason: str, api_key: int | None = None,
                   version: int | None = None) -> None:
        what = ""
        if api_key is not None:
            what = f" {api_label(api_key)} v{version}"
        self.close_reason = reason
        log.warning("broker %d closing connection from %s (client_id=%r)%s: %s",
                    self.listener.node.broker_id, self.peer, self.client_id, what, reason,
                    extra={"broker": self.listener.node.broker_id, "peer": self.peer,
                           "client_id": self.client_id, "api_key": api_key,
                           "version": version, "reason": reason})

    def _close_unadvertised(self, key: int, version: int,
                            versions: tuple[int, int] | None) -> NoReturn:
        if versions is None or key not in REGISTRY:
            self._log_close("unknown or unadvertised API key", key, version)
        else:
            self._log_close(f"version not in advertised range {versions[0]}-{versions[1]}",
                            key, version)
        raise CloseConnection

    async def _handle_traced(self, frame: bytes | bytearray, tracer: Tracer) -> None:
        span = tracer.begin(self.listener.node.broker_id, self.peer, frame)
        try:
            await self.handle_frame(frame, span)
        except CloseConnection:
            if span.outcome == "ok":
                span.outcome = f"closed: {self.close_reason or 'handler failed'}"
            raise
        except BaseException:  # the broker stopping, the peer going away
            if span.outcome == "ok":
                span.outcome = "connection lost"
            raise
        finally:
            tracer.finish(span)

    async def handle_frame(self, frame: bytes | bytearray, span: Span | None = None) -> None:
        info = self.info
        info.requests += 1
        info.last_active = self._loop.time()
        if info.hung:  # an injected hang: read, never answered
            if span is not None:
                span.outcome = "injected hang"
            return
        sasl = self.sasl
        if sasl is not None and sasl.expects_raw_token:
            self._sasl_raw_token(sasl, frame, span)
            return
        try:
            key, version, correlation_id = peek_request_header(frame)
        except CodecError as exc:
            self._log_close(f"undecodable request header: {exc}")
            raise CloseConnection from exc
        listener = self.listener
        route = Route.NORMAL
        if sasl is not None:
            route = sasl.route(key, version, listener.cluster.clock.now_ms())
            if route is Route.CLOSE:
                self._log_close(sasl.close_reason, key, version)
                raise CloseConnection
            if route is Route.REFUSE:
                self._sasl_refuse(sasl, frame, key, version, span)
        advertised = listener.advertised
        versions = advertised.get(key)
        if versions is None or key not in REGISTRY \
                or not versions[0] <= version <= versions[1]:
            fallback = unsupported_version_answer(advertised, key, version)
            if fallback is None:
                self._close_unadvertised(key, version, versions)
            answer_version, answer = fallback
            if span is not None:
                span.response = {"error_code": answer["error_code"]}
            self._write_response(key, answer_version, correlation_id, answer)
            return
        try:
            request = decode_request(frame)
        except CodecError as exc:
            self.client_id = peek_request_client_id(frame) or self.client_id
            self._log_close(f"undecodable request: {exc}", key, version)
            raise CloseConnection from exc
        self.client_id = self.info.client_id = request.client_id
        if span is not None:
            span.request(request.client_id, request.body)
            if listener.security_protocol != PLAINTEXT:
                span.principal = self.principal
        if route is Route.SESSION:
            assert sasl is not None
            self._sasl_exchange(sasl, key, version, request.correlation_id, request.body, span)
            return
        wire_hook = listener.hooks.wire
        wire = wire_hook.plan(self.info, key, version) if wire_hook is not None else None
        if wire is not None:
            self._flush()  # a fault may wait or write on its own: what went before first
            if await self._wire_instead_of_answer(wire, key, version, span):
                return
        hook = self.listener.hooks.request
        plan = hook.before(self.listener.node, key, version, request.body) if hook else None
        if plan is not None:
            if plan.delay_ms > 0:
                self._flush()
                await asyncio.sleep(plan.delay_ms / 1000)
            if plan.disconnect:
                if span is not None:
                    span.outcome = "injected disconnect"
                log.info("broker %d: injected disconnect of %s on %s v%d",
                         self.listener.node.broker_id, self.peer, api_label(key), version)
                raise CloseConnection
            if plan.response is not None:
                if span is not None:
                    span.response = plan.response
                await self._answer(key, version, request.correlation_id, plan.response, wire,
                                   span)
                return
        ctx = RequestContext(listener.cluster, listener.node, key, version,
                             request.correlation_id, request.client_id, request.header,
                             self.peer, advertised, listener.endpoints, self.principal,
                             listener.name)
        if plan is not None:
            ctx.response_hook = plan.after
        try:
            result = authorized_dispatch(request.body, ctx)
            # most handlers answer a plain dict at once: no Awaitable ABC check for those
            if result is not None and type(result) is not dict and inspect.isawaitable(result):
                self._flush()  # it may park: the answers before it must not wait with it
                result = await result
            if wire is not None and wire.rewrite is not None and result is not None:
                result = wire.rewrite(result)
        except CloseConnection:
            raise
        except CloseAfterRequest as done:  # carried out; the client learns of it by the close
            self._log_close(done.reason, key, version)
            raise CloseConnection from done
        except Exception as exc:
            log.exception("broker %d: %s v%d from %s failed", self.listener.node.broker_id,
                          api_label(key), version, self.peer)
            raise CloseConnection from exc
        if result is None:
            return
        if span is not None:
            span.response = result
        if ctx.throttle_ms > 0 and ctx.delay_response:  # a client from before KIP-219
            self._flush()
            await asyncio.sleep(ctx.throttle_ms / 1000)
        if wire is None:  # _answer without its coroutine: the usual answer is written now
            self._write_response(key, version, request.correlation_id, result)
        else:
            await self._answer(key, version, request.correlation_id, result, wire, span)
        if ctx.throttle_ms > 0 and not ctx.delay_response:
            # KIP-219: muted until the throttle passes; a loop timer, not the cluster's
            # clock, as a manual clock would hold the connection until a test advanced it
            self._flush()
            await asyncio.sleep(ctx.throttle_ms / 1000)

    async def _answer(self, key: int, version: int, correlation_id: int,
                      body: Mapping[str, Any], wire: WirePlan | None,
                      span: Span | None) -> None:
        if wire is None:
            self._write_response(key, version, correlation_id, body)
        else:
            await self._write_with_faults(wire, self._encode(key, version, correlation_id,
                                                             body), span)

    def _sasl_exchange(self, sasl: SaslSession, key: int, version: int, correlation_id: int,
                       body: Any, span: Span | None) -> None:
        reply = sasl.handle(key, version, body, self.listener.cluster.clock.now_ms())
        answer = reply.body
        if answer is not None and span is not None:
            span.response = answer
        if reply.close:  # a failure: answered after Kafka's delay, then closed
            self._log_close(reply.reason, key, version)
            raise CloseConnection(self._failed_authentication_delay_ms(), None if answer is None
                                  else partial(self._write_response, key, version,
                                               correlation_id, answer))
        if answer is not None:
            self._write_response(key, version, correlation_id, answer)
        self.principal = sasl.principal if sasl.user is not None else self.principal
        if span is not None:
            span.principal = self.principal

    def _failed_authentication_delay_ms(self) -> int:
        """connection.failed.authentication.delay.ms (Kafka's default 100): how long a
        failed authentication waits, unread, before its answer and the close."""
        value = self.listener.cluster.config.broker_properties.get(
            FAILED_AUTHENTICATION_DELAY, DEFAULT_FAILED_AUTHENTICATION_DELAY_MS)
        return int(value)

    def _sasl_refuse(self, sasl: SaslSession, frame: bytes | bytearray, key: int, version: int,
                     span: Span | None) -> NoReturn:
        """A request where only SaslAuthenticate may come: its ILLEGAL_SASL_STATE error
        response, then close (no response for a request Kafka could not parse either)."""
        versions = self.listener.advertised.get(key)
        if versions is not None and versions[0] <= version <= versions[1]:
            try:
                request = decode_request(frame)
            except CodecError:
                request = None
            answer = None if request is None else illegal_sasl_state_response(
                key, version, request.body, sasl.refusal_message)
            if request is not None and answer is not None:
                if span is not None:
                    span.response = answer
                self._log_close(sasl.close_reason, key, version)
                raise CloseConnection(self._failed_authentication_delay_ms(), partial(
                    self._write_response, key, version, request.correlation_id, answer))
        self._log_close(sasl.close_reason, key, version)
        raise CloseConnection

    def _sasl_raw_token(self, sasl: SaslSession, frame: bytes | bytearray,
                        span: Span | None) -> None:
        """A bare SASL token after a v0 SaslHandshake, answered with a bare token."""
        if span is not None:  # not a request: what the trace peeked from it means nothing
            span.api_key = span.version = span.correlation_id = None
            span.outcome = "SASL token (v0 handshake)"
        challenge = sasl.handle_raw(bytes(frame), self.listener.cluster.clock.now_ms())
        if challenge is None:
            self._log_close(sasl.close_reason)
            raise CloseConnection(self._failed_authentication_delay_ms())
        if sasl.user is not None:
            self.principal = sasl.principal
        self._flush()
        self.writer.write(len(challenge).to_bytes(4, "big") + challenge)

