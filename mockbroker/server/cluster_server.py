"""Runs a Cluster on the network: one listener per broker, started and stopped together.

Start returns only once every listener accepts connections; a failure to bind raises at once
(and closes whatever was already bound), never silently.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from mockbroker.cluster import Cluster, ClusterConfig
from mockbroker.cluster.clock import Clock
from mockbroker.handlers import advertised_versions
from mockbroker.server.broker_server import BrokerServer
from mockbroker.server.hooks import ServerHooks

TICK_SECONDS = 0.05


@dataclass
class ListenerConfig:
    host: str = "127.0.0.1"
    port: int = 0  # the first broker's port; the others follow it (0: free ports)
    advertised_host: str | None = None
    advertised_port: int | None = None  # first broker's advertised port, others follow


class ClusterServer:
    def __init__(self, config: ClusterConfig | None = None,
                 listeners: ListenerConfig | None = None, clock: Clock | None = None,
                 api_caps: dict[int, tuple[int, int]] | None = None) -> None:
        self.cluster = Cluster(config, clock)
        self.listeners = listeners or ListenerConfig()
        self.advertised = {k: (lo, hi) for k, lo, hi in advertised_versions(api_caps)}
        self.servers: dict[int, BrokerServer] = {}
        self.hooks = ServerHooks()  # request hooks shared by every listener (faults)
        self._ticker: asyncio.Task[None] | None = None
        self.bound_ports: dict[int, int] = {}

    def _port_for(self, broker_id: int) -> int:
        base = self.listeners.port
        return 0 if base == 0 else base + broker_id

    async def start(self) -> None:
        try:
            for broker_id in self.cluster.brokers:
                await self.start_broker(broker_id)
        except BaseException:
            await self.stop()
            raise
        self._ticker = asyncio.create_task(self._tick_forever())

    async def _tick_forever(self) -> None:
        """Drive the cluster's deadline checks (session and transaction timeouts)."""
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self.cluster.tick()

    async def start_broker(self, broker_id: int) -> None:
        node = self.cluster.brokers[broker_id]
        server = BrokerServer(self.cluster, node, self.advertised, hooks=self.hooks)
        port = self.bound_ports.get(broker_id, self._port_for(broker_id))  # a restart reuses it
        try:
            bound = await server.bind(self.listeners.host, port)
        except OSError as exc:
            raise OSError(exc.errno, f"broker {broker_id} cannot listen on "
                                     f"{self.listeners.host}:{port}: {exc.strerror}") from exc
        self.servers[broker_id] = server
        self.bound_ports[broker_id] = bound
        adv_host = self.listeners.advertised_host or self.listeners.host
        if adv_host in ("0.0.0.0", "::", ""):
            adv_host = "127.0.0.1"
        adv_port = bound if self.listeners.advertised_port is None \
            else self.listeners.advertised_port + broker_id
        self.cluster.start_broker(broker_id, adv_host, adv_port)

    async def stop_broker(self, broker_id: int) -> None:
        """Close one broker's listener and drop every connection to it at once. The caller
        updates the cluster model (fencing, leadership) first, in the same loop turn, so
        clients that reconnect elsewhere already see the new leaders."""
        server = self.servers.pop(broker_id, None)
        self.cluster.brokers[broker_id].up = False
        if server is not None:
            await server.close()

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        servers = list(self.servers.values())
        self.servers.clear()
        await asyncio.gather(*(s.close() for s in servers), return_exceptions=True)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{node.host}:{node.port}" for node in self.cluster.brokers.values()
                        if node.up)
