"""Runs a Cluster on the network: one listener per broker, started and stopped together.

Start returns only once every listener accepts connections; a failure to bind raises at once
(and closes whatever was already bound), never silently.

Extra listener sets (`extra_listeners`) solve the advertised-listener problem of containers,
as Kafka's named listeners do: each set binds one more port per broker and advertises its own
endpoints (e.g. `mockbroker:9092` inside a compose network and `localhost:19092` on the
host). The first set's endpoints are the ones registered in the metadata log; a request that
arrives on an extra listener is answered with that listener's endpoints wherever the answer
names brokers (Metadata, FindCoordinator, DescribeCluster), through RequestContext.endpoint.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from mockbroker.cluster import Cluster, ClusterConfig
from mockbroker.cluster.clock import Clock
from mockbroker.handlers import advertised_versions
from mockbroker.server.broker_server import BrokerServer
from mockbroker.server.connection import ListenerContext
from mockbroker.server.hooks import ServerHooks

TICK_SECONDS = 0.05


@dataclass
class ListenerConfig:
    host: str = "127.0.0.1"
    port: int = 0  # the first broker's port; the others follow it (0: free ports)
    advertised_host: str | None = None
    advertised_port: int | None = None  # first broker's advertised port, others follow

    def port_for(self, broker_id: int) -> int:
        return 0 if self.port == 0 else self.port + broker_id

    def endpoint_for(self, broker_id: int, bound: int) -> tuple[str, int]:
        """The (host, port) broker `broker_id` advertises on this listener."""
        host = self.advertised_host or self.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        port = bound if self.advertised_port is None else self.advertised_port + broker_id
        return host, port


def _split_host_port(text: str, what: str) -> tuple[str, int | None]:
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = text, ""
    host = host.strip("[]")  # [::1]:9092
    if not host:
        raise ValueError(f"{what} {text!r} has no host")
    if not port_text:
        return host, None
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"{what} {text!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"{what} {text!r}: port must be 0-65535")
    return host, port


def parse_listeners(spec: str) -> list[ListenerConfig]:
    """Extra listener sets from `HOST:PORT[/ADVERTISED_HOST[:ADVERTISED_PORT]]`, comma
    separated, e.g. `0.0.0.0:19092/localhost:19092`: broker i binds HOST:PORT+i (PORT 0:
    free ports) and advertises ADVERTISED_HOST:ADVERTISED_PORT+i (default: the bind host
    and the bound port). Raises ValueError with the reason."""
    out: list[ListenerConfig] = []
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        bind, _, adv = entry.partition("/")
        host, port = _split_host_port(bind, "listener")
        if port is None:
            raise ValueError(f"listener {bind!r} needs a port (HOST:PORT)")
        adv_host, adv_port = _split_host_port(adv, "advertised listener") if adv \
            else (None, None)
        if adv_port == 0:
            raise ValueError(f"advertised listener {adv!r}: port 0 cannot be advertised")
        out.append(ListenerConfig(host, port, adv_host, adv_port))
    return out


class ClusterServer:
    def __init__(self, config: ClusterConfig | None = None,
                 listeners: ListenerConfig | None = None, clock: Clock | None = None,
                 api_caps: dict[int, tuple[int, int]] | None = None,
                 extra_listeners: list[ListenerConfig] | None = None) -> None:
        self.cluster = Cluster(config, clock)
        self.listeners = listeners or ListenerConfig()
        self.extra_listeners = list(extra_listeners or ())
        self.advertised = {k: (lo, hi) for k, lo, hi in advertised_versions(api_caps)}
        self.servers: dict[int, BrokerServer] = {}
        self.hooks = ServerHooks()  # request hooks shared by every listener (faults)
        self._ticker: asyncio.Task[None] | None = None
        self.bound_ports: dict[int, int] = {}
        # per extra listener set (same order as extra_listeners): its servers, bound ports and
        # advertised endpoints by broker id
        self.extra_servers: list[dict[int, BrokerServer]] = [{} for _ in self.extra_listeners]
        self.extra_bound_ports: list[dict[int, int]] = [{} for _ in self.extra_listeners]
        self.extra_endpoints: list[dict[int, tuple[str, int]]] = \
            [{} for _ in self.extra_listeners]

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

    async def _bind(self, server: BrokerServer, broker_id: int, listener: ListenerConfig,
                    bound_ports: dict[int, int]) -> int:
        port = bound_ports.get(broker_id, listener.port_for(broker_id))  # a restart reuses it
        try:
            bound = await server.bind(listener.host, port)
        except OSError as exc:
            raise OSError(exc.errno, f"broker {broker_id} cannot listen on "
                                     f"{listener.host}:{port}: {exc.strerror}") from exc
        bound_ports[broker_id] = bound
        return bound

    async def start_broker(self, broker_id: int) -> None:
        node = self.cluster.brokers[broker_id]
        server = BrokerServer(ListenerContext(self.cluster, node, self.advertised,
                                              hooks=self.hooks))
        bound = await self._bind(server, broker_id, self.listeners, self.bound_ports)
        self.servers[broker_id] = server
        try:
            for index, listener in enumerate(self.extra_listeners):
                endpoints = self.extra_endpoints[index]
                extra = BrokerServer(ListenerContext(self.cluster, node, self.advertised,
                                                     hooks=self.hooks, endpoints=endpoints))
                extra_bound = await self._bind(extra, broker_id, listener,
                                               self.extra_bound_ports[index])
                self.extra_servers[index][broker_id] = extra
                endpoints[broker_id] = listener.endpoint_for(broker_id, extra_bound)
        except BaseException:
            await self._close_broker_servers(broker_id)
            raise
        adv_host, adv_port = self.listeners.endpoint_for(broker_id, bound)
        self.cluster.start_broker(broker_id, adv_host, adv_port)

    async def _close_broker_servers(self, broker_id: int) -> None:
        servers = [self.servers.pop(broker_id, None)]
        servers += [by_broker.pop(broker_id, None) for by_broker in self.extra_servers]
        await asyncio.gather(*(s.close() for s in servers if s is not None),
                             return_exceptions=True)

    async def stop_broker(self, broker_id: int) -> None:
        """Close one broker's listener and drop every connection to it at once. The caller
        updates the cluster model (fencing, leadership) first, in the same loop turn, so
        clients that reconnect elsewhere already see the new leaders."""
        self.cluster.brokers[broker_id].up = False
        await self._close_broker_servers(broker_id)

    def _broker_servers(self, broker_id: int) -> list[BrokerServer]:
        servers = [self.servers.get(broker_id)]
        servers += [by_broker.get(broker_id) for by_broker in self.extra_servers]
        return [s for s in servers if s is not None]

    async def refuse_connections(self, broker_id: int) -> None:
        """Close broker `broker_id`'s listening sockets (every listener set): clients that
        connect get ECONNREFUSED; open connections and the broker's registration stay."""
        for server in self._broker_servers(broker_id):
            await server.stop_listening()

    async def accept_connections(self, broker_id: int) -> None:
        """Listen again on the same ports after refuse_connections (raises OSError)."""
        for server in self._broker_servers(broker_id):
            await server.listen_again()

    def refusing_connections(self, broker_id: int) -> bool:
        return any(s.refusing for s in self._broker_servers(broker_id))

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        servers = list(self.servers.values())
        self.servers.clear()
        for by_broker in self.extra_servers:
            servers += by_broker.values()
            by_broker.clear()
        await asyncio.gather(*(s.close() for s in servers), return_exceptions=True)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{node.host}:{node.port}" for node in self.cluster.brokers.values()
                        if node.up)

    def listener_bootstrap_servers(self, index: int) -> str:
        """The bootstrap list of extra listener set `index` (its advertised endpoints)."""
        endpoints = self.extra_endpoints[index]
        return ",".join(f"{endpoints[b][0]}:{endpoints[b][1]}"
                        for b, node in self.cluster.brokers.items()
                        if node.up and b in endpoints)
