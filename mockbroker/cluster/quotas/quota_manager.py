"""Client quotas (KIP-55, KIP-124, KIP-546): the quota entities (in the metadata log) and
each broker's byte-rate and request-rate measurements that decide throttle times, as Kafka's
ClientQuotaManager does.

Theory of operation: a quota entity is a combination of `user`, `client-id` (or `ip` alone),
each with a name or the default (None). Its values are Kafka's keys: producer_byte_rate,
consumer_byte_rate, request_percentage, controller_mutation_rate (user / client-id) and
connection_creation_rate (ip). For one request from (user, client-id), each key resolves by
Kafka's precedence, the first entity that sets it winning:

    user+client-id, user+default client, user, default user+client-id,
    default user+default client, default user, client-id, default client

Measurement follows Kafka's Rate over 11 samples of 1 s (quota.window.num,
quota.window.size.seconds): what one (user, client-id) produced (or fetched, or spent in
request handling, in percent of one thread) is summed over the samples still in the window,
divided by the window's length, which counts at least 10 full samples while the history is
shorter. Over the quota, the throttle time is (rate - quota) / quota * window, capped at
11 s (the whole window), as Kafka bounds it. Time is the cluster's injected clock.

Quota entities live in the metadata log, as in KRaft: AlterClientQuotas and the control
verb set-quota go to the controller, which writes a ClientQuotaRecord per changed key
(quota_records.py), and each broker applies the entities of its own metadata image, so a
broker whose metadata is paused keeps the old quota until it catches up, and a cluster
restarted on its data directory comes back with its quotas. `QuotaManager.quota` answers at
the log's end (the controller's image); `QuotaManager.broker(id).quota` is what that broker
applies.

Measurements are kept per (user, client-id, key) only while they count: `expire` (run by the
cluster's tick) drops a sensor once no sample of it is left in the window, since a sensor
that records again then starts from nothing either way (Kafka drops a client's quota sensors
after an hour without traffic, quota sensors' inactive expiration; the rate each one gives
is the same), and the last throttle shown per (user, client-id, key) is kept for at most
THROTTLE_LOG_SIZE of them. So a client id made up per request costs nothing past the window.

As in Kafka, each broker measures its own traffic (one BrokerQuotaMeter per broker, Kafka's
ClientQuotaManager of that broker): a client spreading its load over three brokers may use
three times its quota in total. A meter can take back what it recorded (a throttled Fetch
answers no bytes) and tells the most one request may record without a certain throttle
(quota * (samples - 1) * sample seconds, Kafka's getMaxValueInQuotaWindow), the cap of a
consumer's fetch.
"""

from __future__ import annotations

import ipaddress
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from mockbroker.cluster.clock import Clock

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
PRODUCE, FETCH, REQUEST = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
CLIENT_KEYS = frozenset({PRODUCE, FETCH, REQUEST, "controller_mutation_rate"})
IP_KEYS = frozenset({"connection_creation_rate"})
SAMPLES = 11
SAMPLE_MS = 1000
MAX_THROTTLE_MS = SAMPLES * SAMPLE_MS
THROTTLE_LOG_SIZE = 1000  # throttles kept per broker for `quotas` / state

# an entity: (entity type, name or None for the default), sorted by type
Entity = tuple[tuple[str, str | None], ...]


class QuotaError(ValueError):
    """An entity or key Kafka would refuse (INVALID_REQUEST)."""


def make_entity(parts: dict[str, str | None]) -> Entity:
    """Validate an entity as Kafka's controller does."""
    if not parts:
        raise QuotaError("Invalid empty client quota entity")
    for entity_type in parts:
        if entity_type not in ENTITY_TYPES:
            raise QuotaError(f"Unhandled client quota entity type: {entity_type}")
    if IP in parts and len(parts) > 1:
        raise QuotaError("Invalid quota entity combination, IP entity should not be "
                         "combined with User or ClientId entities.")
    ip = parts.get(IP)
    if ip is not None and not _is_ip_or_local_host(ip):
        raise QuotaError(f"{ip} is not a valid IP or resolvable host.")
    return tuple(sorted(parts.items()))


def _is_ip_or_local_host(name: str) -> bool:
    """Kafka resolves an `ip` entity's name (InetAddress.getByName); mockbroker, which
    looks nothing up, takes IP literals and localhost."""
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def check_key(entity: Entity, key: str) -> None:
    allowed = IP_KEYS if entity[0][0] == IP else CLIENT_KEYS
    if key not in allowed:
        raise QuotaError(f"Invalid configuration key {key}")


def _resolution_order(user: str, client_id: str) -> list[Entity]:
    """Kafka's precedence for (user, client-id)."""
    return [((CLIENT_ID, client_id), (USER, user)), ((CLIENT_ID, None), (USER, user)),
            ((USER, user),), ((CLIENT_ID, client_id), (USER, None)),
            ((CLIENT_ID, None), (USER, None)), ((USER, None),),
            ((CLIENT_ID, client_id),), ((CLIENT_ID, None),)]


@dataclass
class _Sensor:
    """Kafka's Rate over SAMPLES samples of SAMPLE_MS."""

    samples: dict[int, float] = field(default_factory=dict)  # sample start ms -> amount

    def live(self, now_ms: int) -> bool:
        """Whether any sample still counts in the window (else it rates as a new sensor)."""
        return any(s > now_ms - SAMPLES * SAMPLE_MS for s in self.samples)

    def record(self, now_ms: int, amount: float) -> None:
        start = now_ms - now_ms % SAMPLE_MS
        self.samples[start] = self.samples.get(start, 0.0) + amount
        for old in [s for s in self.samples if s <= now_ms - SAMPLES * SAMPLE_MS]:
            del self.samples[old]

    def rate_per_second(self, now_ms: int) -> tuple[float, int]:
        """(rate, window ms) now."""
        live = {s: v for s, v in self.samples.items() if s > now_ms - SAMPLES * SAMPLE_MS}
        if not live:
            return 0.0, (SAMPLES - 1) * SAMPLE_MS
        elapsed = now_ms - min(live)
        full = elapsed // SAMPLE_MS
        if full < SAMPLES - 1:
            elapsed += (SAMPLES - 1 - full) * SAMPLE_MS
        return sum(live.values()) * 1000 / max(elapsed, 1), max(elapsed, 1)


@dataclass
class Throttle:
    """One throttle a broker applied: to which user and client id, on which quota, for how
    long (the `quotas` verb shows them)."""

    user: str
    client_id: str
    key: str
    throttle_time_ms: int
    until_ms: int


class BrokerQuotaMeter:
    """One broker's measurements, as Kafka's ClientQuotaManager is one per broker: its
    sensors see only the traffic this broker answered."""

    def __init__(self, broker_id: int, clock: Clock,
                 lookup: Callable[[str, str, str], float | None],
                 enabled: Callable[[], bool]) -> None:
        self.broker_id = broker_id
        self.clock = clock
        self.quota = lookup  # (user, client-id, key) -> the quota this broker applies
        self._enabled = enabled
        self._sensors: dict[tuple[str, str, str], _Sensor] = {}
        self.recorded: dict[str, float] = dict.fromkeys((PRODUCE, FETCH, REQUEST), 0.0)
        self.throttled: dict[str, int] = dict.fromkeys((PRODUCE, FETCH, REQUEST), 0)
        self.last_throttles: dict[tuple[str, str, str], Throttle] = {}
        # every throttle given, oldest first (the last THROTTLE_LOG_SIZE)
        self.throttle_log: deque[Throttle] = deque(maxlen=THROTTLE_LOG_SIZE)

    def record(self, user: str, client_id: str, key: str, amount: float) -> int:
        """Record `amount` (bytes, or percent-milliseconds of request time) for (user,
        client-id) and return the throttle time this earns (0: within its quota)."""
        self.recorded[key] += amount
        if not self._enabled():  # the usual case: no quotas, nothing to measure
            return 0
        quota = self.quota(user, client_id, key)
        if quota is None:
            return 0
        now = self.clock.now_ms()
        sensor = self._sensors.setdefault((user, client_id, key), _Sensor())
        sensor.record(now, amount)
        rate, window_ms = sensor.rate_per_second(now)
        if rate <= quota:
            return 0
        throttle = min(MAX_THROTTLE_MS, int((rate - quota) / quota * window_ms))
        if throttle > 0:
            self.throttled[key] += 1
            given = Throttle(user, client_id, key, throttle, now + throttle)
            last = self.last_throttles
            if (user, client_id, key) not in last and len(last) >= THROTTLE_LOG_SIZE:
                del last[next(iter(last))]  # the longest known goes first
            last[(user, client_id, key)] = given
            self.throttle_log.append(given)
        return throttle

    def expire(self, now_ms: int) -> None:
        """Drop the sensors with no sample left in the window (see the module docstring)."""
        sensors = self._sensors
        for stale in [k for k, sensor in sensors.items() if not sensor.live(now_ms)]:
            del sensors[stale]

    @property
    def sensor_count(self) -> int:
        return len(self._sensors)

    def enforcing(self) -> bool:
        """Whether this broker's image has any quota entity: without one `record` only adds
        to `recorded` and never throttles, so a caller may skip resolving who is recorded
        (`record_unlimited`)."""
        return self._enabled()

    def record_unlimited(self, key: str, amount: float) -> None:
        """`record` while not `enforcing`: only the totals (`recorded`) move."""
        self.recorded[key] += amount

    def unrecord(self, user: str, client_id: str, key: str, amount: float) -> None:
        """Take back an amount recorded now (Kafka's unrecordQuotaSensor: a throttled Fetch
        answers no bytes, so the bytes it would have sent do not count)."""
        self.recorded[key] -= amount
        sensor = self._sensors.get((user, client_id, key))
        if sensor is not None:
            sensor.record(self.clock.now_ms(), -amount)

    def max_value_in_window(self, user: str, client_id: str, key: str) -> float | None:
        """What one request may record without being throttled for sure, even with nothing
        else recorded in the window: quota * (samples - 1) * sample seconds (Kafka's
        getMaxValueInQuotaWindow). None: no quota."""
        if not self._enabled():
            return None
        quota = self.quota(user, client_id, key)
        if quota is None:
            return None
        return quota * (SAMPLES - 1) * SAMPLE_MS / 1000

    def reset(self) -> None:
        self._sensors.clear()
        self.recorded = dict.fromkeys(self.recorded, 0.0)
        self.throttled = dict.fromkeys(self.throttled, 0)
        self.last_throttles.clear()
        self.throttle_log.clear()


EntitySource = Callable[[], Mapping[Entity, Mapping[str, float]]]


class QuotaManager:
    """The cluster's quota entities (in the metadata log) and one BrokerQuotaMeter per
    broker, which applies the entities of that broker's own image."""

    def __init__(self, clock: Clock, entities: EntitySource,
                 broker_entities: Callable[[int], Mapping[Entity, Mapping[str, float]]],
                 write: Callable[[Entity, list[tuple[str, float | None]]], None]) -> None:
        self.clock = clock
        self._entities = entities  # the controller's image: the log end
        self._broker_entities = broker_entities
        self._write = write  # ClientQuotaRecords through the controller, then propagate
        self._meters: dict[int, BrokerQuotaMeter] = {}
        self._expired_at_ms: int | None = None

    # -- entities --------------------------------------------------------------------------

    def alter(self, entity: Entity, ops: list[tuple[str, float | None]],
              validate_only: bool = False) -> None:
        """Set (value) or remove (None) keys of one entity through the controller; validated
        before anything is written."""
        check_ops(entity, ops)
        if not validate_only:
            self._write(entity, ops)

    def entities(self) -> dict[Entity, dict[str, float]]:
        """The entities at the metadata log's end (a lagging broker may apply older ones)."""
        return sorted_entities(self._entities())

    def quota(self, user: str, client_id: str, key: str) -> float | None:
        """The value of `key` for (user, client-id) by Kafka's precedence (None: no quota),
        at the metadata log's end; `broker(id).quota` is what that broker applies."""
        return resolve(self._entities(), user, client_id, key)

    # -- measurement -------------------------------------------------------------------------

    def broker(self, broker_id: int) -> BrokerQuotaMeter:
        """The measurements of one broker (created on first use), against the quotas of
        its own metadata image."""
        meter = self._meters.get(broker_id)
        if meter is None:
            def lookup(user: str, client_id: str, key: str) -> float | None:
                return resolve(self._broker_entities(broker_id), user, client_id, key)

            meter = self._meters[broker_id] = BrokerQuotaMeter(
                broker_id, self.clock, lookup,
                lambda: bool(self._broker_entities(broker_id)))
        return meter

    def expire(self, now_ms: int) -> None:
        """Drop every broker's sensors that no longer count (a ticker of the cluster's; at
        most once a sample, SAMPLE_MS, however often the cluster ticks)."""
        last = self._expired_at_ms
        if last is not None and 0 <= now_ms - last < SAMPLE_MS:
            return
        self._expired_at_ms = now_ms
        for meter in self._meters.values():
            meter.expire(now_ms)

    def sensor_count(self) -> int:
        """Sensors kept, over every broker."""
        return sum(meter.sensor_count for meter in self._meters.values())

    def reset(self) -> None:
        """Remove every entity (through the log) and every measurement."""
        for entity, values in list(self._entities().items()):
            self._write(entity, [(key, None) for key in values])
        for meter in self._meters.values():
            meter.reset()

    def to_json(self) -> dict[str, object]:
        """Entities, and the brokers' measurements: summed, and each throttle with the
        broker that gave it."""
        now = self.clock.now_ms()
        meters = [self._meters[b] for b in sorted(self._meters)]
        return {
            "entities": [{"entity": dict(entity), "values": values}
                         for entity, values in self.entities().items()],
            "recorded": {key: sum(m.recorded[key] for m in meters)
                         for key in (PRODUCE, FETCH, REQUEST)},
            "throttled_responses": {key: sum(m.throttled[key] for m in meters)
                                    for key in (PRODUCE, FETCH, REQUEST)},
            "throttles": [{"broker": m.broker_id, "user": t.user, "client_id": t.client_id,
                           "quota": t.key, "throttle_time_ms": t.throttle_time_ms,
                           "active": t.until_ms > now}
                          for m in meters for t in m.last_throttles.values()],
            "throttle_log": [{"broker": m.broker_id, "user": t.user, "client_id": t.client_id,
                              "quota": t.key, "throttle_time_ms": t.throttle_time_ms}
                             for m in meters for t in m.throttle_log],
        }


def ip_quota(quotas: QuotaManager, ip: str, key: str = "connection_creation_rate"
             ) -> float | None:
    """The value of `key` for a client IP: its own `ip` entity, else the default `ip`
    entity (KIP-612; None: no quota)."""
    entities = quotas.entities()
    for entity in (((IP, ip),), ((IP, None),)):
        values = entities.get(entity)
        if values is not None and key in values:
            return values[key]
    return None


# the keys Kafka's QuotaConfig defines as LONG: whole numbers only
INTEGER_KEYS = frozenset({"producer_byte_rate", "consumer_byte_rate",
                          "connection_creation_rate"})
LONG_MAX = 2 ** 63 - 1


def check_wire_ops(entity: Entity, ops: list[tuple[str, float | None]]) -> None:
    """What Kafka's controller also refuses in an AlterClientQuotas entry, before the keys
    and values: a key named twice (it sees the entity twice), fractional or too large values
    of whole-number keys. (The control API, which may set fractional rates to throttle
    quickly in tests, is not held to these.)"""
    keys = [key for key, _ in ops]
    if len(set(keys)) != len(keys):
        names = ", ".join(f"{t}={n}" for t, n in entity)
        raise QuotaError(f"Ignoring duplicate entity ClientQuotaEntity(entries={{{names}}})")
    for key, value in ops:
        if value is not None and key in INTEGER_KEYS:
            if value > LONG_MAX:
                raise QuotaError(f"Proposed value for {key} is too large for a LONG.")
            if value != int(value):
                raise QuotaError(f"{key} cannot be a fractional value.")


def check_ops(entity: Entity, ops: list[tuple[str, float | None]]) -> None:
    """Refuse keys the entity cannot have and values that are not positive."""
    for key, value in ops:
        check_key(entity, key)
        if value is not None and value <= 0:
            raise QuotaError(f"Illegal value {value} for key {key}: must be positive")


def resolve(entities: Mapping[Entity, Mapping[str, float]], user: str, client_id: str,
            key: str) -> float | None:
    """The value of `key` for (user, client-id) by Kafka's precedence (None: no quota)."""
    if not entities:
        return None
    for entity in _resolution_order(user, client_id):
        values = entities.get(entity)
        if values is not None and key in values:
            return values[key]
    return None


def sorted_entities(entities: Mapping[Entity, Mapping[str, float]]
                    ) -> dict[Entity, dict[str, float]]:
    return {e: dict(v) for e, v in sorted(entities.items(), key=lambda item: repr(item[0]))}
