"""A broker's TCP listener and the set of its open connections.

Each accepted connection runs as its own task and is handed the listener's `ListenerContext`
(never this object), so connections depend on the listener's data, not on its life cycle.
Closing the listener aborts every open connection at once, as a broker process dying would.
`stop_listening` only closes the listening socket (new connections are refused: ECONNREFUSED,
as when a broker's port is firewalled or its acceptor is gone) and keeps open connections;
`listen_again` binds the same address again. The listening sockets are made here, one per
address of the host; a numeric host is not resolved through the loop (uvloop resolves any
host it is given, which loads the idna codec, about a millisecond of start-up).

Connection limits (KIP-612 rates and Kafka's max.connections family): before a connection
is served, the listener asks the broker's ConnectionQuotas
(mockbroker.server.connection_throttle) and carries its answers out: a wait of its one
acceptor (the broker-wide or listener rate), a wait for a free slot (broker-wide or listener
max.connections: until a connection closes or a config changes), closing the connection
unserved after a throttle time (the client IP's rate), or closing it at once (the IP has its
max.connections.per.ip). When max.connections is lowered below the open connections, the
least recently active ones are closed, as Kafka's processors do.

The listener accepts sockets itself, as Kafka's acceptor thread does, and decides before a
byte is read: only an admitted socket goes to the event loop (connect_accepted_socket), so
on a TLS listener the decisions come before the TLS handshake, as in Kafka.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import TYPE_CHECKING, Any

from mockbroker.server.connection import Connection
from mockbroker.server.frame_protocol import FrameProtocol
from mockbroker.server.listener_context import ListenerContext

if TYPE_CHECKING:
    import ssl

    from mockbroker.server.connection_throttle import ConnectionQuotas

log = logging.getLogger("mockbroker.server")
BACKLOG = 100  # asyncio's default listen backlog


def numeric_address(host: str, port: int) -> list[tuple[int, int, int, str, tuple[Any, ...]]]:
    """getaddrinfo's answer for an IPv4 or IPv6 literal, made here: uvloop resolves any host
    it is given, which loads the idna codec (about a millisecond of start-up); [] for a host
    name or an empty host, which the loop resolves."""
    for family, address in ((socket.AF_INET, (host, port)),
                            (socket.AF_INET6, (host, port, 0, 0))):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address)]
    return []


class BrokerServer:
    def __init__(self, listener: ListenerContext) -> None:
        self.listener = listener
        self._listening: list[socket.socket] = []  # one per address of the host
        self._acceptors: list[asyncio.Task[None]] = []
        self._started = False  # bound (close: False again)
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._pending: set[socket.socket] = set()  # accepted, not yet admitted
        self._address: tuple[str, int] | None = None
        self.refusing = False
        self._acceptor = asyncio.Lock()  # Kafka's one acceptor thread per listener
        self._ssl_context: ssl.SSLContext | None = None

    async def bind(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> int:
        """Start listening (with TLS given a context) on every address of `host`, as
        asyncio's create_server does (localhost: 127.0.0.1 and ::1), all on one port;
        returns it (useful with port 0). The listener accepts sockets itself (Kafka's
        acceptor) and gives each one to the event loop, with TLS, only once admitted."""
        self._ssl_context = ssl_context or self._ssl_context
        loop = asyncio.get_running_loop()
        infos = numeric_address(host, port) or await loop.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        bound = port
        try:
            for family, kind, proto, _, address in dict.fromkeys(infos):
                listening = socket.socket(family, kind, proto)
                self._listening.append(listening)
                listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:  # as create_server: one family per socket
                    listening.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                listening.bind((address[0], bound, *address[2:]))
                listening.listen(BACKLOG)
                listening.setblocking(False)
                bound = listening.getsockname()[1]  # port 0: the others take the first's
        except OSError:
            await self._stop_accepting()
            raise
        self._acceptors = [asyncio.create_task(self._accept_forever(listening))
                           for listening in self._listening]
        self._started = True
        self._address = (host, bound)
        return bound

    async def _stop_accepting(self) -> None:
        tasks, listening = self._acceptors, self._listening
        self._acceptors, self._listening = [], []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sock in listening:
            sock.close()

    async def stop_listening(self) -> None:
        """Refuse new connections (close the listening socket); open ones go on."""
        if self._listening and not self.refusing:
            await self._stop_accepting()
            self.refusing = True

    async def listen_again(self) -> None:
        """Undo stop_listening: listen on the same host and port (raises OSError)."""
        if self.refusing and self._address is not None:
            await self.bind(*self._address)
            self.refusing = False

    async def _accept_forever(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, _ = await loop.sock_accept(listening)
            except OSError as exc:  # e.g. EMFILE: try again shortly, as Kafka's acceptor
                log.warning("broker %d: accept failed: %s", self.listener.node.broker_id, exc)
                await asyncio.sleep(0.1)
                continue
            task = asyncio.create_task(self._hand_over(sock))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _hand_over(self, sock: socket.socket) -> None:
        """Admit an accepted socket (connection_throttle's decisions), then give it to the
        event loop as a connection, TLS included; the connection runs in `_accept`."""
        self._pending.add(sock)
        handed = False
        try:
            try:
                peer = sock.getpeername()
            except OSError:  # already reset by the client
                return
            ip = peer[0] if isinstance(peer, tuple) else str(peer)
            if not await self._admitted(ip):
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            max_frame_size = self.listener.max_frame_size
            try:
                await asyncio.get_running_loop().connect_accepted_socket(
                    lambda: FrameProtocol(max_frame_size, self._accept), sock,
                    ssl=self._ssl_context)
            except (TimeoutError, OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                log.info("broker %d: TLS handshake with %s failed: %s",
                         self.listener.node.broker_id, ip, exc)
                quotas = self.listener.connection_quotas
                if quotas is not None:
                    quotas.close(self.listener.name, ip)
                return
            handed = True  # `_accept` owns the socket and its count now
        finally:
            self._pending.discard(sock)
            if not handed:
                sock.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        peer = writer.get_extra_info("peername")
        ip = peer[0] if isinstance(peer, tuple) else str(peer)
        quotas = self.listener.connection_quotas
        try:
            await Connection(self.listener, reader, writer).run()
        except asyncio.CancelledError:
            pass  # the broker is stopping; the connection is already aborted
        finally:
            if quotas is not None:
                quotas.close(self.listener.name, ip)
            self._tasks.discard(task)
            self._writers.discard(writer)

    async def _admitted(self, ip: str) -> bool:
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
                return False
        log.info("broker %d: connection from %s over its connection_creation_rate: closing "
                 "it unserved in %d ms", self.listener.node.broker_id, ip, close_after_ms)
        await asyncio.sleep(close_after_ms / 1000)
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
        await self._stop_accepting()
        for writer in list(self._writers):
            writer.transport.abort()
        for sock in list(self._pending):
            sock.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._started = False

    @property
    def serving(self) -> bool:
        return self._started

    @property
    def open_connections(self) -> int:
        """Connections accepted and not yet ended."""
        return len(self._tasks)
