"""Runs a Cluster on the network: one listener per broker, started and stopped together.

Start returns only once every listener accepts connections; a failure to bind raises at once
(and closes whatever was already bound), never silently.

Extra listener sets (`extra_listeners`) solve the advertised-listener problem of containers,
as Kafka's named listeners do: each set binds one more port per broker and advertises its own
endpoints (e.g. `mockbroker:9092` inside a compose network and `localhost:19092` on the
host). The first set's endpoints are the ones registered in the metadata log; a request that
arrives on an extra listener is answered with that listener's endpoints wherever the answer
names brokers (Metadata, FindCoordinator, DescribeCluster), through RequestContext.endpoint.

Every listener set has a name and a security protocol (mockbroker.server.listeners): the
first is named PLAINTEXT unless configured otherwise, unnamed extra sets EXTRA1, EXTRA2, ....
TLS listeners share one server SSLContext built at start (mockbroker.server.tls: generated
certificates cover every host a listener binds or advertises); SASL listeners share the
cluster's SaslSettings (mechanisms, connections.max.reauth.ms); each connection
authenticates by the credentials of its broker's metadata image.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mockbroker.cluster import Cluster, ClusterConfig
from mockbroker.cluster.clock import Clock
from mockbroker.cluster.kraft.feature_renegotiation import Renegotiation
from mockbroker.cluster.quotas.quota_manager import ip_quota
from mockbroker.handlers import advertised_versions
from mockbroker.server.broker_server import BrokerServer
from mockbroker.server.connection_throttle import ConnectionQuotas
from mockbroker.server.hooks import ServerHooks
from mockbroker.server.listener_context import ListenerContext
from mockbroker.server.listeners import PLAINTEXT
from mockbroker.server.listeners import ListenerConfig as ListenerConfig
from mockbroker.server.listeners import parse_listeners as parse_listeners
from mockbroker.server.sasl import SaslSettings
from mockbroker.server.tls import TlsFiles, TlsSettings, server_context

if TYPE_CHECKING:
    import ssl

TICK_SECONDS = 0.05
log = logging.getLogger("mockbroker.server")


@functools.lru_cache(maxsize=256)
def _resolve_host(host: str) -> str:
    """A max.connections.per.ip.overrides host as an address (Kafka's InetAddress.getByName);
    unresolvable: the name itself, which no client address equals."""
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


class ClusterServer:
    def __init__(self, config: ClusterConfig | None = None,
                 listeners: ListenerConfig | None = None, clock: Clock | None = None,
                 api_caps: dict[int, tuple[int, int]] | None = None,
                 extra_listeners: list[ListenerConfig] | None = None,
                 tls: TlsSettings | None = None, sasl: SaslSettings | None = None) -> None:
        self.cluster = Cluster(config, clock)
        first = listeners or ListenerConfig()
        self.listeners = replace(first, name=first.name or PLAINTEXT)
        self.extra_listeners = [replace(extra, name=extra.name or f"EXTRA{index + 1}")
                                for index, extra in enumerate(extra_listeners or ())]
        names = [listener.name for listener in self.all_listeners]
        if len(set(names)) != len(names):
            raise ValueError(f"listener names must be unique, got {', '.join(names)}")
        self.tls = tls or TlsSettings()
        self.sasl = sasl or SaslSettings()
        self.ssl_context: ssl.SSLContext | None = None
        self.tls_files: TlsFiles | None = None
        self.advertised = {k: (lo, hi) for k, lo, hi in advertised_versions(api_caps)}
        self.servers: dict[int, BrokerServer] = {}
        self.hooks = ServerHooks()  # request hooks shared by every listener (faults)
        self.connection_quotas: dict[int, ConnectionQuotas] = {}  # by broker id (KIP-612)
        # KIP-778: the cluster decides when a broker's clients renegotiate ApiVersions
        self.cluster.renegotiation.add_listener(self._close_for_renegotiation)
        # max.connections lowered below the open connections: close the excess (Kafka)
        self.cluster.add_metadata_listener(self._close_excess_connections)
        self._ticker: asyncio.Task[None] | None = None
        self.bound_ports: dict[int, int] = {}
        # per extra listener set (same order as extra_listeners): its servers, bound ports and
        # advertised endpoints by broker id
        self.extra_servers: list[dict[int, BrokerServer]] = [{} for _ in self.extra_listeners]
        self.extra_bound_ports: list[dict[int, int]] = [{} for _ in self.extra_listeners]
        self.extra_endpoints: list[dict[int, tuple[str, int]]] = \
            [{} for _ in self.extra_listeners]

    def _close_for_renegotiation(self, event: Renegotiation) -> int:
        """Close the broker's client connections so clients negotiate ApiVersions again."""
        closed = self.hooks.close_connections(event.broker_id, (
            f"metadata.version {event.level} (record {event.record_offset}) applied by every "
            "broker: closing so the client negotiates ApiVersions again"))
        log.info("broker %d: lowest acknowledged metadata offset %d passed metadata.version %d "
                 "(record %d): closed %d client connection(s) for ApiVersions renegotiation",
                 event.broker_id, event.lowest_acknowledged_offset, event.level,
                 event.record_offset, closed)
        return closed

    def _close_excess_connections(self) -> None:
        """Kafka's processors close the least recently used connections while a broker has
        more open than max.connections (after the limit was lowered dynamically)."""
        for broker_id, quotas in self.connection_quotas.items():
            excess = quotas.excess()
            if excess <= 0:
                continue
            open_ones = sorted((info for info in self.hooks.connections.values()
                                if info.broker_id == broker_id and info.close is not None),
                               key=lambda info: max(info.last_active, info.opened_at))
            for info in open_ones[:excess]:
                assert info.close is not None
                info.close("max.connections is below the broker's open connections: "
                           "closing the least recently used")

    @property
    def all_listeners(self) -> list[ListenerConfig]:
        return [self.listeners, *self.extra_listeners]

    def _prepare_tls(self) -> None:
        """Build the TLS listeners' SSLContext once (generated or the user's files)."""
        if self.ssl_context is not None or not any(
                listener.uses_tls for listener in self.all_listeners):
            return
        hosts = {h for listener in self.all_listeners
                 for h in (listener.host, listener.advertised_host) if h}
        self.ssl_context, self.tls_files = server_context(self.tls, hosts)

    def _context(self, node: Any, listener: ListenerConfig,
                 endpoints: dict[int, tuple[str, int]] | None) -> ListenerContext:
        return ListenerContext(self.cluster, node, self.advertised, hooks=self.hooks,
                               endpoints=endpoints, name=listener.name,
                               security_protocol=listener.security_protocol,
                               sasl=self.sasl if listener.uses_sasl else None,
                               connection_quotas=self._connection_quotas_of(node.broker_id))

    def _connection_quotas_of(self, broker_id: int) -> ConnectionQuotas:
        """The broker's connection creation rates (KIP-612), shared by its listeners."""
        quotas = self.connection_quotas.get(broker_id)
        if quotas is None:
            cluster = self.cluster
            cached: list[Any] = [None, {}]  # [(image, offset, port), configs]

            def broker_config() -> dict[str, str]:
                """The broker's configs, computed again only when the metadata moved (the
                acceptor asks several times per connection)."""
                node = cluster.brokers.get(broker_id)
                key = (id(cluster.image), cluster.image.offset,
                       node.port if node is not None else 0)
                if cached[0] != key:
                    cached[:] = [key, cluster.broker_config(broker_id)]
                values: dict[str, str] = cached[1]
                return values

            quotas = self.connection_quotas[broker_id] = ConnectionQuotas(
                cluster.clock, lambda ip: ip_quota(cluster.quotas, ip), broker_config,
                _resolve_host)
            cluster.add_ticker(quotas.expire)  # IP rates that no longer count go
        return quotas

    async def start(self) -> None:
        self._prepare_tls()
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
            bound = await server.bind(listener.host, port,
                                      self.ssl_context if listener.uses_tls else None)
        except OSError as exc:
            raise OSError(exc.errno, f"broker {broker_id} cannot listen on "
                                     f"{listener.host}:{port}: {exc.strerror}") from exc
        bound_ports[broker_id] = bound
        return bound

    async def start_broker(self, broker_id: int) -> None:
        node = self.cluster.brokers[broker_id]
        server = BrokerServer(self._context(node, self.listeners, None))
        bound = await self._bind(server, broker_id, self.listeners, self.bound_ports)
        self.servers[broker_id] = server
        try:
            for index, listener in enumerate(self.extra_listeners):
                endpoints = self.extra_endpoints[index]
                extra = BrokerServer(self._context(node, listener, endpoints))
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

    def listener_bootstrap_servers(self, index: int | str) -> str:
        """The bootstrap list of extra listener set `index`, or of the listener of that
        name (the first set's is `bootstrap_servers`): its advertised endpoints."""
        if isinstance(index, str):
            names = [listener.name for listener in self.all_listeners]
            if index.upper() not in names:
                raise KeyError(f"no listener named {index!r} (listeners: {', '.join(names)})")
            position = names.index(index.upper())
            if position == 0:
                return self.bootstrap_servers
            index = position - 1
        endpoints = self.extra_endpoints[index]
        return ",".join(f"{endpoints[b][0]}:{endpoints[b][1]}"
                        for b, node in self.cluster.brokers.items()
                        if node.up and b in endpoints)

    def listener_table(self) -> list[dict[str, Any]]:
        """Every listener set: name, security protocol, bind address and bootstrap list."""
        return [{"name": listener.name, "security_protocol": listener.security_protocol,
                 "host": listener.host, "bootstrap": self.listener_bootstrap_servers(
                     listener.name)} for listener in self.all_listeners]
