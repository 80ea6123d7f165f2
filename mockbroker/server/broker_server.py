"""A broker's TCP listener and the set of its open connections.

Each accepted connection runs as its own task and is handed the listener's `ListenerContext`
(never this object), so connections depend on the listener's data, not on its life cycle.
Closing the listener aborts every open connection at once, as a broker process dying would.
`stop_listening` only closes the listening socket (new connections are refused: ECONNREFUSED,
as when a broker's port is firewalled or its acceptor is gone) and keeps open connections;
`listen_again` binds the same address again. A numeric host is bound on a socket made here
(as the event loop would make it): uvloop resolves any host it is given, which loads the idna
codec, about a millisecond of start-up; a host name is left to the loop.

Connection creation rates (KIP-612): before a connection is served, the listener asks the
broker's ConnectionQuotas (mockbroker.server.connection_throttle) and carries its answers
out: a wait of its one acceptor (the broker-wide or listener rate), or closing the connection
unserved after a throttle time (the client IP's rate).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import TYPE_CHECKING

from mockbroker.server.connection import Connection, FrameProtocol, ListenerContext

if TYPE_CHECKING:
    import ssl

log = logging.getLogger("mockbroker.server")
BACKLOG = 100  # asyncio's create_server default


def numeric_listener(host: str, port: int) -> socket.socket | None:
    """A listening socket on an IPv4 or IPv6 literal, as create_server makes it (address
    reuse, IPv6 only on an IPv6 address); None for a host name or an empty host."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return socket.create_server((host, port), family=family, backlog=BACKLOG)
    return None


class BrokerServer:
    def __init__(self, listener: ListenerContext) -> None:
        self.listener = listener
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._address: tuple[str, int] | None = None
        self.refusing = False
        self._acceptor = asyncio.Lock()  # Kafka's one acceptor thread per listener

    async def bind(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> int:
        """Start listening (with TLS given a context); returns the bound port (useful with
        port 0)."""
        max_frame_size = self.listener.max_frame_size
        loop = asyncio.get_running_loop()
        sock = numeric_listener(host, port)
        if sock is not None:
            try:
                self._server = await loop.create_server(
                    lambda: FrameProtocol(max_frame_size, self._accept), sock=sock,
                    backlog=BACKLOG, ssl=ssl_context)
            except BaseException:
                sock.close()
                raise
        else:
            self._server = await loop.create_server(
                lambda: FrameProtocol(max_frame_size, self._accept), host, port,
                reuse_address=True, ssl=ssl_context)
        bound: int = self._server.sockets[0].getsockname()[1]
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
        try:
            if not await self._admitted(writer):
                return
            await Connection(self.listener, reader, writer).run()
        except asyncio.CancelledError:
            pass  # the broker is stopping; the connection is already aborted
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)

    async def _admitted(self, writer: asyncio.StreamWriter) -> bool:
        """Carry out the connection creation rate decisions (KIP-612,
        mockbroker.server.connection_throttle): the acceptor waits out the broker's and the
        listener's rate, holding later connections back; a connection over its IP's rate is
        closed unserved after its throttle time (False). The waits are event-loop timers:
        the cluster's clock may be a manual one."""
        quotas = self.listener.connection_quotas
        if quotas is None:
            return True
        async with self._acceptor:
            delay_ms = quotas.accept_delay_ms(self.listener.name)
            if delay_ms > 0:
                await asyncio.sleep(delay_ms / 1000)
            peer = writer.get_extra_info("peername")
            ip = peer[0] if isinstance(peer, tuple) else str(peer)
            close_after_ms = quotas.ip_throttle_ms(self.listener.name, ip)
        if close_after_ms <= 0:
            return True
        log.info("broker %d: connection from %s over its connection_creation_rate: closing "
                 "it unserved in %d ms", self.listener.node.broker_id, ip, close_after_ms)
        await asyncio.sleep(close_after_ms / 1000)
        writer.close()
        return False

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
