"""Listener sets and their security protocols, configured as Kafka configures them.

A listener set is one port per broker with one name and one security protocol, as a line
of Kafka's `listeners` (`SASL_SSL://0.0.0.0:9093`) together with its entry in
`listener.security.protocol.map` and `advertised.listeners`. Broker i binds PORT+i (PORT 0:
free ports) and advertises ADVERTISED_PORT+i (default: the bound port), as mockbroker's
--port always did.

The four protocols are Kafka's: PLAINTEXT (neither), SSL (TLS), SASL_PLAINTEXT (SASL over
plain TCP) and SASL_SSL (SASL inside TLS). A listener named after a protocol uses that
protocol unless the map says otherwise (Kafka's default map); any other name needs a map
entry.
"""

from __future__ import annotations

from dataclasses import dataclass

PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL = "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"
SECURITY_PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)


@dataclass
class ListenerConfig:
    """One listener set (an entry of Kafka's listeners): where each broker binds, what it
    advertises, and the security protocol."""

    host: str = "127.0.0.1"
    port: int = 0  # the first broker's port; the others follow it (0: free ports)
    advertised_host: str | None = None
    advertised_port: int | None = None  # first broker's advertised port, others follow
    name: str = ""  # the listener name (empty: named by its place, see ClusterServer)
    security_protocol: str = PLAINTEXT

    def port_for(self, broker_id: int) -> int:
        return 0 if self.port == 0 else self.port + broker_id

    def endpoint_for(self, broker_id: int, bound: int) -> tuple[str, int]:
        """The (host, port) broker `broker_id` advertises on this listener."""
        host = self.advertised_host or self.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        port = bound if self.advertised_port is None else self.advertised_port + broker_id
        return host, port

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in (SSL, SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in (SASL_PLAINTEXT, SASL_SSL)


def split_host_port(text: str, what: str, *, empty_host: str | None = None
                    ) -> tuple[str, int | None]:
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = text, ""
    host = host.strip("[]")  # [::1]:9092
    if not host:
        if empty_host is None:
            raise ValueError(f"{what} {text!r} has no host")
        host = empty_host
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
        host, port = split_host_port(bind, "listener")
        if port is None:
            raise ValueError(f"listener {bind!r} needs a port (HOST:PORT)")
        adv_host, adv_port = split_host_port(adv, "advertised listener") if adv \
            else (None, None)
        if adv_port == 0:
            raise ValueError(f"advertised listener {adv!r}: port 0 cannot be advertised")
        out.append(ListenerConfig(host, port, adv_host, adv_port))
    return out


def _named_entries(spec: str, what: str) -> list[tuple[str, str]]:
    """`NAME://HOST:PORT,...` as [(NAME, "HOST:PORT")], names upper-cased and unique."""
    out: list[tuple[str, str]] = []
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        name, sep, address = entry.partition("://")
        name = name.strip().upper()
        if not sep or not name or not name.replace("_", "").isalnum():
            raise ValueError(f"{what} {entry!r}: expected NAME://HOST:PORT, e.g. "
                             "SASL_SSL://127.0.0.1:9093")
        if any(name == seen for seen, _ in out):
            raise ValueError(f"{what}: listener {name} given twice")
        out.append((name, address))
    return out


def parse_protocol_map(spec: str | None) -> dict[str, str]:
    """`NAME:PROTOCOL,...` (Kafka's listener.security.protocol.map) as a dict."""
    out: dict[str, str] = {}
    for entry in (e.strip() for e in (spec or "").split(",")):
        if not entry:
            continue
        name, sep, protocol = entry.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise ValueError(f"security protocol map entry {entry!r}: expected NAME:PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security protocol map entry {entry!r}: protocol must be one of "
                             f"{', '.join(SECURITY_PROTOCOLS)}")
        out[name] = protocol
    return out


def parse_listener_bindings(listeners: str) -> list[tuple[str, str, int]]:
    """`NAME://HOST:PORT,...` as [(NAME, HOST, PORT)]; raises ValueError with the reason."""
    out = []
    for name, address in _named_entries(listeners, "listener"):
        host, port = split_host_port(address, f"listener {name}", empty_host="0.0.0.0")
        if port is None:
            raise ValueError(f"listener {name}://{address} needs a port (NAME://HOST:PORT)")
        out.append((name, host, port))
    return out


def parse_named_listeners(listeners: str, advertised: str | None = None,
                          protocol_map: str | None = None) -> list[ListenerConfig]:
    """Kafka-style listener sets: `listeners` as `NAME://HOST:PORT,...` (an empty HOST binds
    every interface, as in Kafka), `advertised` as `NAME://HOST[:PORT],...` for some of
    them, `protocol_map` as `NAME:PROTOCOL,...`. The first listener is the one registered in
    the metadata log. Raises ValueError with the reason."""
    protocols = parse_protocol_map(protocol_map)
    out: list[ListenerConfig] = []
    for name, host, port in parse_listener_bindings(listeners):
        protocol = protocols.get(name, name if name in SECURITY_PROTOCOLS else "")
        if not protocol:
            raise ValueError(f"listener {name} has no security protocol: add {name}:PROTOCOL "
                             "to the listener security protocol map")
        out.append(ListenerConfig(host, port, name=name, security_protocol=protocol))
    if not out:
        raise ValueError("no listener given (NAME://HOST:PORT)")
    by_name = {listener.name: listener for listener in out}
    for name, address in _named_entries(advertised or "", "advertised listener"):
        listener = by_name.get(name)
        if listener is None:
            raise ValueError(f"advertised listener {name} is not among the listeners "
                             f"({', '.join(by_name)})")
        adv_host, adv_port = split_host_port(address, f"advertised listener {name}")
        if adv_port == 0:
            raise ValueError(f"advertised listener {name}: port 0 cannot be advertised")
        listener.advertised_host, listener.advertised_port = adv_host, adv_port
    return out
