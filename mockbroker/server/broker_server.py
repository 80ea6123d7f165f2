"""A broker's TCP listener and the set of its open connections.

Each accepted connection runs as its own task and is handed the listener's `ListenerContext`
(never this object), so connections depend on the listener's data, not on its life cycle.
Closing the listener aborts every open connection at once, as a broker process dying would.
`stop_listening` only closes the listening socket (new connections are refused: ECONNREFUSED,
as when a broker's port is firewalled or its acceptor is gone) and keeps open connections;
`listen_again` binds the same address again.

Connection limits (KIP-612 rates and Kafka's max.connections family): before a connection
is served, the listener asks the broker's ConnectionQuotas
(mockbroker.server.connection_throttle) and carries its answers out: a wait of its one
acceptor (the broker-wide or listener rate), a wait for a free slot (broker-wide or listener
max.connections: until a connection closes or a config changes), closing the connection
unserved after a throttle time (the client IP's rate), or closing it at once (the IP has its
max.connections.per.ip). When max.connections is lowered below the open connections, the
least recently active ones are closed, as Kafka's processors do.

On a TLS listener these decisions come at TCP accept, before the TLS handshake, as in
Kafka's acceptor: the socket is accepted plain (reading paused) and upgraded to TLS
(start_tls) only once admitted.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from mockbroker.server.connection import Connection, FrameProtocol, ListenerContext

if TYPE_CHECKING:
    import ssl

    from mockbroker.server.connection_throttle import ConnectionQuotas

log = logging.getLogger("mockbroker.server")


class BrokerServer:
    def __init__(self, listener: ListenerContext) -> None:
        self.listener = listener
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._address: tuple[str, int] | None = None
        self.refusing = False
        self._acceptor = asyncio.Lock()  # Kafka's one acceptor thread per listener
        self._ssl_context: ssl.SSLContext | None = None

    async def bind(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> int:
        """Start listening (with TLS given a context); returns the bound port (useful with
        port 0)."""
        max_frame_size = self.listener.max_frame_size
        self._ssl_context = ssl_context = ssl_context or self._ssl_context
        tls = ssl_context is not None  # TLS after admission: start_tls in _accept
        self._server = await asyncio.get_running_loop().create_server(
            lambda: FrameProtocol(max_frame_size, self._accept, paused=tls), host, port,
            reuse_address=True)
        sock = self._server.sockets[0]
        bound: int = sock.getsockname()[1]
        self._address = (host, bound)
        return bound

    async def stop_listening(self) -> None:
        """Refuse new connections (close the listening socket); open ones go on."""
        if self._server is not None and not self.refusing:
            self._server.close()  # closes the listening sockets; connections stay
            # not wait_closed(): from Python 3.12 on it also waits for every connection
            await asyncio.sleep(0)
            self.refusing = True

    async def listen_again(self) -> None:
        """Undo stop_listening: listen on the same host and port (raises OSError)."""
        if self.refusing and self._address is not None:
            await self.bind(*self._address)
            self.refusing = False

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        peer = writer.get_extra_info("peername")
        ip = peer[0] if isinstance(peer, tuple) else str(peer)
        quotas = self.listener.connection_quotas
        counted = False
        try:
            if not await self._admitted(writer, ip):
                return
            counted = quotas is not None
            if self._ssl_context is not None and not await self._start_tls(writer):
                return
            await Connection(self.listener, reader, writer).run()
        except asyncio.CancelledError:
            pass  # the broker is stopping; the connection is already aborted
        finally:
            if counted and quotas is not None:
                quotas.close(self.listener.name, ip)
            self._tasks.discard(task)
            self._writers.discard(writer)

    async def _start_tls(self, writer: asyncio.StreamWriter) -> bool:
        """The TLS handshake of an admitted connection (False: it failed, closed)."""
        assert self._ssl_context is not None
        protocol = writer.transport.get_protocol()
        try:
            await writer.start_tls(self._ssl_context)
        except (TimeoutError, OSError, ValueError) as exc:  # ssl.SSLError: OSError
            log.info("broker %d: TLS handshake with a client failed: %s",
                     self.listener.node.broker_id, exc)
            writer.transport.abort()
            return False
        if isinstance(protocol, FrameProtocol):
            protocol.use_transport(writer.transport)
        return True

    async def _admitted(self, writer: asyncio.StreamWriter, ip: str) -> bool:
        """Carry out the connection quota decisions (mockbroker.server.connection_throttle)
        in Kafka's order: the acceptor waits out the broker's and the listener's rate
        (KIP-612), then for a free slot (max.connections, broker-wide and per listener),
        holding later connections back; a connection over its IP's rate is closed unserved
        after its throttle time, one over max.connections.per.ip at once (False). True: the
        connection is counted. Waits are event-loop timers: the clock may be a manual one."""
        quotas = self.listener.connection_quotas
        if quotas is None:
            return True
        name = self.listener.name
        async with self._acceptor:
            delay_ms = quotas.accept_delay_ms(name)
            if delay_ms > 0:
                await asyncio.sleep(delay_ms / 1000)
            await self._wait_for_slot(quotas)
            close_after_ms = quotas.ip_throttle_ms(name, ip)
            if close_after_ms <= 0:
                if quotas.open(name, ip):
                    return True
                log.info("broker %d: rejected connection from %s, address already has the "
                         "configured maximum of %d connections", self.listener.node.broker_id,
                         ip, quotas.max_connections_for(ip))
                writer.close()
                return False
        log.info("broker %d: connection from %s over its connection_creation_rate: closing "
                 "it unserved in %d ms", self.listener.node.broker_id, ip, close_after_ms)
        await asyncio.sleep(close_after_ms / 1000)
        writer.close()
        return False

    async def _wait_for_slot(self, quotas: ConnectionQuotas) -> None:
        """Block the acceptor while the listener or the broker has max.connections open;
        woken when a connection of the broker closes or the metadata (configs) changes."""
        name = self.listener.name
        if quotas.slot_available(name):
            return
        quotas.note_slot_wait(name)
        log.info("broker %d: listener %s at max.connections: the acceptor waits for a "
                 "connection to close", self.listener.node.broker_id, name)
        woken = asyncio.Event()
        cluster = self.listener.cluster
        quotas.slot_freed.append(woken.set)
        cluster.add_metadata_listener(woken.set)
        try:
            while not quotas.slot_available(name):
                await woken.wait()
                woken.clear()
        finally:
            quotas.slot_freed.remove(woken.set)
            cluster.remove_metadata_listener(woken.set)

    async def close(self) -> None:
        """Stop accepting and drop every open connection at once."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    @property
    def serving(self) -> bool:
        return self._server is not None

    @property
    def open_connections(self) -> int:
        """Connections accepted and not yet ended."""
        return len(self._tasks)
