"""Connection quotas, creation rates (KIP-612) and connection counts (max.connections and
its family): what a broker's acceptor decides for each new connection, as Kafka's
ConnectionQuotas does. Sans-IO: no sockets, no asyncio; time comes
from the cluster's injected clock and the listener (mockbroker.server.broker_server) carries
the decisions out.

Theory of operation: three limits, each measured by Kafka's Rate (connections per second over
quota.window.num 11 samples of quota.window.size.seconds 1 s; the window counts at least 10
full samples while the history is shorter), one measurement per broker:
- the broker-wide `max.connection.creation.rate` and the listener's
  `listener.name.<listener>.max.connection.creation.rate` (broker configs, static or
  dynamic; default 2147483647, unlimited). Every new connection is recorded in both; over
  either, the acceptor *waits* before taking the connection: (rate - limit) / limit x window,
  at most one sample (1 s), the longer of the two. `accept_delay_ms` answers this; the
  listener sleeps while holding its one acceptor, so later connections queue behind it, as
  Kafka's blocked acceptor thread makes them;
- the `connection_creation_rate` of the client's IP (the `ip` quota entity, else the default
  `ip` entity; none: unlimited). After the acceptor's wait the connection is recorded against
  its IP; over the rate it is *not served*: accepted, never read, and closed after the
  throttle time computed the same way. Kafka then takes the connection back out of all three
  measurements (it was never admitted) and so does `ip_throttle_ms`.
Each IP throttle is counted per IP, each acceptor wait per listener (`to_json`, shown by the
control API's state).

Connection counts (Kafka's max.connections family), decided in the same order as Kafka's
ConnectionQuotas.inc: after the rate wait the acceptor also waits for a *slot*
(`slot_available`: fewer open connections on the listener than
`listener.name.<listener>.max.connections` and on the broker than `max.connections`; the
listener wakes it when a connection closes or a config changes, as Kafka's notifyAll on its
counts does), then the IP rate, then `open` counts the connection and checks
`max.connections.per.ip` (or the IP's entry in `max.connections.per.ip.overrides`): at the
limit the connection is refused (Kafka's TooManyConnectionsException: closed at once) and
not counted. `close` gives the slot back. Kafka's inter-broker listener is exempt from the
broker-wide limits only while another listener exists; brokers here talk in-process, so no
listener is. When the broker-wide limit drops below the open connections, `excess` says how
many Kafka's processors would close (least recently used first).

Per-IP state stays bounded whatever addresses connect: an IP's rate is dropped by `expire`
(the cluster's tick) once no sample of it is left in the window (a new one would measure the
same; Kafka expires the sensor after an hour), its open count when its last connection
closes, and the counts shown by `to_json` per IP (throttled, refused) are kept for the
MAX_TRACKED_IPS addresses seen last.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.configs.config_defs import PER_IP, PER_IP_OVERRIDES, parse_overrides

N = TypeVar("N", int, float)

SAMPLES = 11  # quota.window.num
WINDOW_MS = 1000  # quota.window.size.seconds
MAX_THROTTLE_MS = WINDOW_MS  # Kafka caps connection throttles at one sample
UNLIMITED = 2**31 - 1  # Int.MaxValue: Kafka's default for every connection rate
RATE_KEY = "max.connection.creation.rate"
MAX_CONNECTIONS = "max.connections"
MAX_TRACKED_IPS = 1024  # per-IP counts kept for `to_json` (the addresses seen last)

# ip -> its connection_creation_rate (None: unlimited)
IpRateLookup = Callable[[str], "float | None"]
# the broker's effective configs (static and dynamic)
BrokerConfigLookup = Callable[[], Mapping[str, str]]
# a host of max.connections.per.ip.overrides -> its address (Kafka's InetAddress.getByName)
HostResolver = Callable[[str], str]


def listener_rate_key(listener: str, key: str = RATE_KEY) -> str:
    """Kafka's listener-prefixed key: listener.name.<lower-case listener>.<key>."""
    return f"listener.name.{listener.lower()}.{key}"


@dataclass
class Rate:
    """Kafka's Rate: the sum over the live samples divided by the window's length."""

    samples: list[list[float]] = field(default_factory=list)  # [start ms, amount]

    def record(self, now_ms: int, amount: float) -> None:
        self._purge(now_ms)
        if not self.samples or now_ms - self.samples[-1][0] >= WINDOW_MS:
            self.samples.append([now_ms, 0.0])
            del self.samples[:-SAMPLES]
        self.samples[-1][1] += amount

    def measure(self, now_ms: int) -> tuple[float, int]:
        """(connections per second, window ms) now."""
        self._purge(now_ms)
        elapsed = now_ms - self.samples[0][0] if self.samples else 0
        full = elapsed // WINDOW_MS
        if full < SAMPLES - 1:
            elapsed += (SAMPLES - 1 - full) * WINDOW_MS
        window = max(int(elapsed), 1)
        return sum(amount for _, amount in self.samples) * 1000 / window, window

    def _purge(self, now_ms: int) -> None:
        self.samples = [s for s in self.samples if now_ms - s[0] < SAMPLES * WINDOW_MS]

    def live(self, now_ms: int) -> bool:
        """Whether any sample still counts (else it measures as a new Rate)."""
        return any(now_ms - s[0] < SAMPLES * WINDOW_MS for s in self.samples)


def _count(counts: Counter[str], ip: str) -> None:
    """One more for `ip`, keeping the counts of the MAX_TRACKED_IPS addresses seen last."""
    if ip not in counts and len(counts) >= MAX_TRACKED_IPS:
        del counts[next(iter(counts))]
    counts[ip] += 1


def throttle_ms(rate: Rate, limit: float, now_ms: int) -> int:
    """Record one connection; the time its rate needs to come back to `limit` (0: within)."""
    rate.record(now_ms, 1)
    if limit <= 0:  # nothing allowed (a fractional quota below 1 truncates to 0, as Kafka)
        return MAX_THROTTLE_MS
    value, window = rate.measure(now_ms)
    if value <= limit:
        return 0
    return min(MAX_THROTTLE_MS, round((value - limit) / limit * window))


def _normal_ip(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        return text


def _limit(values: Mapping[str, str], key: str, parse: Callable[[str], N]) -> N | int:
    """A configured limit (a rate with `float`, a count with `int`); UNLIMITED when unset or
    unreadable."""
    text = values.get(key)
    try:
        return parse(text) if text is not None else UNLIMITED
    except ValueError:
        return UNLIMITED


class ConnectionQuotas:
    """One broker's connection creation rates (Kafka's ConnectionQuotas)."""

    def __init__(self, clock: Clock, ip_rate: IpRateLookup,
                 broker_config: BrokerConfigLookup,
                 resolve_host: HostResolver = str) -> None:
        self.clock = clock
        self._ip_rate = ip_rate
        self._broker_config = broker_config
        self._resolve_host = resolve_host
        self.open_by_ip: Counter[str] = Counter()  # open connections (Kafka's counts)
        self.open_by_listener: Counter[str] = Counter()
        self.refused_by_ip: Counter[str] = Counter()  # TooManyConnectionsException
        self.slot_waits_by_listener: Counter[str] = Counter()  # acceptor blocked on a limit
        self.slot_freed: list[Callable[[], None]] = []  # told when a connection closes
        self._broker = Rate()
        self._listeners: dict[str, Rate] = {}
        self._ips: dict[str, Rate] = {}
        self.throttled_by_ip: Counter[str] = Counter()  # connections closed unserved
        self.delayed_by_listener: Counter[str] = Counter()  # acceptor waits
        self._expired_at_ms: int | None = None

    def accept_delay_ms(self, listener: str) -> int:
        """Record a new connection on `listener` against the broker-wide and the listener's
        rate; how long the acceptor waits before taking it (0: at once)."""
        values = self._broker_config()
        now = self.clock.now_ms()
        broker_wait = throttle_ms(self._broker, _limit(values, RATE_KEY, float), now)
        listener_rate = self._listeners.setdefault(listener, Rate())
        listener_wait = throttle_ms(
            listener_rate, _limit(values, listener_rate_key(listener), float), now)
        wait = max(broker_wait, listener_wait)
        if wait > 0:
            self.delayed_by_listener[listener] += 1
        return wait

    def ip_throttle_ms(self, listener: str, ip: str) -> int:
        """Record the connection against its IP's rate; over it, the time after which the
        unserved connection is closed (0: serve it)."""
        quota = self._ip_rate(ip)
        if quota is None or int(quota) >= UNLIMITED:
            return 0
        now = self.clock.now_ms()
        rate = self._ips.setdefault(ip, Rate())
        wait = throttle_ms(rate, int(quota), now)
        if wait <= 0:
            return 0
        # never admitted: out of every measurement again, as Kafka un-records it
        rate.record(now, -1)
        self._broker.record(now, -1)
        self._listeners.setdefault(listener, Rate()).record(now, -1)
        _count(self.throttled_by_ip, ip)
        return wait

    # -- connection counts: max.connections, per listener, per IP ---------------------------

    def slot_available(self, listener: str) -> bool:
        """Whether the listener may take a connection now (Kafka's connectionSlotAvailable:
        below the listener's max.connections and the broker-wide one)."""
        values = self._broker_config()
        if self.open_by_listener[listener] >= _limit(
                values, listener_rate_key(listener, MAX_CONNECTIONS), int):
            return False
        return self.total_open < _limit(values, MAX_CONNECTIONS, int)

    def note_slot_wait(self, listener: str) -> None:
        """The acceptor found no slot and waits for one (counted for `state`)."""
        self.slot_waits_by_listener[listener] += 1

    def open(self, listener: str, ip: str) -> bool:
        """Count a new connection from `ip` on `listener`; False (not counted) when the IP
        already has its max.connections.per.ip: Kafka refuses it (closed at once)."""
        limit = self.max_connections_for(ip)
        if self.open_by_ip[ip] >= limit:
            _count(self.refused_by_ip, ip)
            return False
        self.open_by_ip[ip] += 1
        self.open_by_listener[listener] += 1
        return True

    def close(self, listener: str, ip: str) -> None:
        """A counted connection ended: its slot is free again."""
        for counts, key in ((self.open_by_ip, ip), (self.open_by_listener, listener)):
            if counts[key] > 1:
                counts[key] -= 1
            else:
                counts.pop(key, None)
        for callback in list(self.slot_freed):
            callback()

    def max_connections_for(self, ip: str) -> int:
        """The IP's connection limit: its max.connections.per.ip.overrides entry (hosts
        resolved), else max.connections.per.ip."""
        values = self._broker_config()
        try:
            overrides = parse_overrides(values.get(PER_IP_OVERRIDES) or "")
        except ValueError:
            overrides = {}
        address = _normal_ip(ip) if overrides else ip
        for host, count in overrides.items():
            if _normal_ip(self._resolve_host(host)) == address:
                return count
        return _limit(values, PER_IP, int)

    @property
    def total_open(self) -> int:
        return sum(self.open_by_listener.values())

    def excess(self) -> int:
        """How many open connections exceed max.connections (after it was lowered): Kafka's
        processors close that many, least recently used first."""
        return max(0, self.total_open - _limit(self._broker_config(), MAX_CONNECTIONS, int))

    def rate(self, ip: str) -> float:
        """The IP's measured connection rate now (0 when unmeasured)."""
        measured = self._ips.get(ip)
        return measured.measure(self.clock.now_ms())[0] if measured is not None else 0.0

    def expire(self, now_ms: int) -> None:
        """Drop the IP rates with no sample left in the window (a ticker of the cluster's:
        at most once a sample, however often it ticks)."""
        if self._expired_at_ms is not None and 0 <= now_ms - self._expired_at_ms < WINDOW_MS:
            return
        self._expired_at_ms = now_ms
        for ip in [ip for ip, rate in self._ips.items() if not rate.live(now_ms)]:
            del self._ips[ip]

    @property
    def tracked_ips(self) -> int:
        """IP rates kept."""
        return len(self._ips)

    def reset(self) -> None:
        self._broker = Rate()
        self._listeners.clear()
        self._ips.clear()
        self.throttled_by_ip.clear()
        self.delayed_by_listener.clear()
        self.refused_by_ip.clear()
        self.slot_waits_by_listener.clear()
        # open connections stay counted: they are still open and will close

    def to_json(self) -> dict[str, object]:
        return {"throttled_by_ip": dict(sorted(self.throttled_by_ip.items())),
                "accept_delays_by_listener": dict(sorted(self.delayed_by_listener.items())),
                "open_by_ip": dict(sorted(self.open_by_ip.items())),
                "open_by_listener": dict(sorted(self.open_by_listener.items())),
                "refused_by_ip": dict(sorted(self.refused_by_ip.items())),
                "slot_waits_by_listener": dict(sorted(self.slot_waits_by_listener.items()))}
