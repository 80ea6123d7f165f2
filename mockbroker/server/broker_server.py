"""A broker's TCP listener and the set of its open connections."""

from __future__ import annotations

import asyncio
import logging

from kafka_protocol_codec.framing import DEFAULT_MAX_FRAME_SIZE

from mockbroker.cluster import BrokerNode, Cluster
from mockbroker.server.connection import Connection
from mockbroker.server.hooks import ServerHooks

log = logging.getLogger("mockbroker.server")


class BrokerServer:
    def __init__(self, cluster: Cluster, node: BrokerNode, advertised: dict[int, tuple[int, int]],
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                 hooks: ServerHooks | None = None,
                 endpoints: dict[int, tuple[str, int]] | None = None) -> None:
        self.cluster = cluster
        self.node = node
        self.advertised = advertised
        self.max_frame_size = max_frame_size
        self.hooks = hooks or ServerHooks()
        # an extra listener's advertised endpoints by broker id (None: the registered ones)
        self.endpoints = endpoints
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def bind(self, host: str, port: int) -> int:
        """Start listening; returns the bound port (useful with port 0)."""
        self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True,
                                                  limit=1 << 20)
        sock = self._server.sockets[0]
        bound: int = sock.getsockname()[1]
        return bound

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            await Connection(self, reader, writer).run()
        except asyncio.CancelledError:
            pass  # the broker is stopping; the connection is already aborted
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)

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
