"""Client telemetry (KIP-714): metrics subscriptions, and the metrics clients push.

Theory of operation. Kafka's brokers advertise GetTelemetrySubscriptions (71) and
PushTelemetry (72) only when a metrics reporter that receives client telemetry is
configured; otherwise clients never ask. `enabled` plays that part here: off by default
(ClusterConfig.client_telemetry), so a default cluster advertises what a default Kafka
does and clients send no telemetry requests; setting a subscription turns it on (the
simulator is itself the receiver). Clients decide on connecting (ApiVersions), so enable
telemetry before the clients under test start.

Subscriptions are Kafka's client-metrics resources: a name, metric name prefixes ("*" for
every metric, as Kafka's and the clients' code spell it; no prefix at all requests
nothing), a push interval (100 ms .. 1 h, default 5 min) and selectors (client_id,
client_software_name, ... -> a regular expression the whole value must match; all must
match). A client instance gets the union of the prefixes of the subscriptions it matches
and their shortest interval; matching none, no metrics and the default interval.

Per broker, as each Kafka broker keeps its own cache, a client instance (ClientInstance)
holds what it was told: its subscription id, a value derived from prefixes, interval and
instance id only (so every broker computes the same one), and the subscription version it
was computed at. Changing any subscription bumps `version`; a client's next request
re-evaluates its instance, so a push with the old id gets UNKNOWN_SUBSCRIPTION_ID and the
client fetches the new subscription. GetTelemetrySubscriptions with the zero id assigns a
fresh instance id. Timing follows Kafka's ClientMetricsInstance: a Get within the push
interval of the last Get or push is THROTTLING_QUOTA_EXCEEDED (unless the last push
failed with UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE, which make the client
re-fetch at once), a push is accepted right after a Get or once the interval has passed
since the last push (else THROTTLING_QUOTA_EXCEEDED, unless terminating). Then, in Kafka's
order: a push after a terminating one is INVALID_REQUEST, a stale subscription id
UNKNOWN_SUBSCRIPTION_ID, an unknown compression type UNSUPPORTED_COMPRESSION_TYPE, a
payload over `max_bytes` TELEMETRY_TOO_LARGE, an undecodable one INVALID_RECORD (as a
receiver plugin's failure answers in Kafka). Time is the injected clock's.

What was pushed is kept per client instance id (cluster-wide, whichever broker received
it) in ClientRecord: the client's identity as first seen, and the last PUSH_HISTORY pushes,
decompressed and decoded (mockbroker.cluster.client_telemetry.otlp). At most MAX_CLIENTS instances
and records are kept, the least recently active dropped first (Kafka's cache is bounded the
same way), and records of at most MAX_KEPT_BYTES of decompressed metrics in all (the least
recently active records go first, then the oldest pushes of the one left). As Kafka's
ClientMetricsManager does, an instance a broker has not heard of for max(60 s, 3 push
intervals) expires (`expire`, the cluster's tick): its next request starts it afresh. The
client software name and version come from the connection's ApiVersions request:
`note_client_software` records them per client address, until the connection closes
(`connection_closed`), as Kafka keeps them with the connection.
"""

from __future__ import annotations

import re
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_protocol_codec.compression import Compression, decompress
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.record_batches import crc32c

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.cluster_errors import ClusterError
from mockbroker.cluster.kafka_uuid import ZERO_UUID

if TYPE_CHECKING:  # the OTLP decoder loads with the first pushed metrics, not at start-up
    from mockbroker.cluster.client_telemetry.otlp import MetricsData

ALL_METRICS = "*"
DEFAULT_PUSH_INTERVAL_MS = 300_000  # Kafka's client-metrics interval.ms default
MIN_PUSH_INTERVAL_MS = 100
MAX_PUSH_INTERVAL_MS = 3_600_000
DEFAULT_MAX_BYTES = 1_048_576  # Kafka's telemetry.max.bytes default
# what Kafka's ClientMetricsManager offers, in its order of preference
ACCEPTED_COMPRESSION = (Compression.ZSTD, Compression.LZ4, Compression.GZIP,
                        Compression.SNAPPY)
MATCH_KEYS = ("client_instance_id", "client_id", "client_software_name",
              "client_software_version", "client_source_address", "client_source_port")
PUSH_HISTORY = 16
MAX_CLIENTS = 4096
MAX_DECOMPRESSED = 16 * 1024 * 1024
MAX_KEPT_BYTES = 64 * 1024 * 1024  # decompressed metrics kept over every ClientRecord
INSTANCE_EXPIRY_MS = 60_000  # Kafka's ClientMetricsManager DEFAULT_CACHE_EXPIRY_MS
EXPIRY_INTERVALS = 3  # ... or this many push intervals, whichever is longer
EXPIRE_EVERY_MS = 1000  # how often the tick looks for expired instances


@dataclass(frozen=True)
class Subscription:
    """A KIP-714 client metrics subscription: which metrics, how often, for the clients its
    selectors match."""

    name: str
    metrics: tuple[str, ...]
    interval_ms: int
    match: tuple[tuple[str, str], ...] = ()  # (selector key, regular expression)

    def matches(self, identity: ClientIdentity) -> bool:
        values = identity.selector_values()
        for key, pattern in self.match:
            value = values.get(key)
            if value is None or re.fullmatch(pattern, value) is None:
                return False
        return True

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "metrics": list(self.metrics),
                "interval_ms": self.interval_ms, "match": dict(self.match)}


@dataclass(frozen=True)
class ClientIdentity:
    """Who a client instance is, as the broker saw it on its first telemetry request."""

    client_instance_id: uuid.UUID
    client_id: str | None
    software_name: str | None
    software_version: str | None
    address: str  # "host:port" of the connection

    def selector_values(self) -> dict[str, str | None]:
        host, colon, port = self.address.rpartition(":")
        if not colon:
            host, port = self.address, ""
        return {"client_instance_id": str(self.client_instance_id),
                "client_id": self.client_id, "client_software_name": self.software_name,
                "client_software_version": self.software_version,
                "client_source_address": host or None, "client_source_port": port or None}


@dataclass
class ClientInstance:
    """One broker's view of a client instance: the subscription it was given and when it
    last asked and pushed (Kafka's ClientMetricsInstance)."""

    identity: ClientIdentity
    subscription_id: int
    subscription_version: int
    metrics: tuple[str, ...]
    push_interval_ms: int
    last_get_ms: int | None = None
    last_push_ms: int | None = None
    terminating: bool = False
    last_error: int = ErrorCode.NONE
    last_used_ms: int = 0  # its last Get or push: it expires EXPIRY_INTERVALS... after

    def expires_at_ms(self) -> int:
        return self.last_used_ms + max(INSTANCE_EXPIRY_MS,
                                       EXPIRY_INTERVALS * self.push_interval_ms)


@dataclass(frozen=True)
class ReceivedPush:
    """One PushTelemetry as a broker received it, kept for the control API's telemetry
    verbs."""

    at_ms: int
    broker_id: int
    subscription_id: int
    terminating: bool
    compression_type: int
    size: int  # bytes as sent (compressed)
    error_code: int
    data: MetricsData | None  # None: empty, rejected or undecodable
    decode_error: str | None = None
    kept_bytes: int = 0  # its decompressed size, counted against MAX_KEPT_BYTES

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "at_ms": self.at_ms, "broker": self.broker_id,
            "subscription_id": self.subscription_id, "terminating": self.terminating,
            "compression_type": self.compression_type, "bytes": self.size,
            "error": ErrorCode(self.error_code).name}
        if self.decode_error is not None:
            out["decode_error"] = self.decode_error
        if self.data is not None:
            from mockbroker.cluster.client_telemetry.otlp import json_attributes

            out["resource_attributes"] = json_attributes(self.data.resource_attributes)
            out["scopes"] = [{"name": n, "version": v} for n, v in self.data.scopes]
            out["metrics"] = [m.to_json() for m in self.data.metrics]
        return out


@dataclass
class ClientRecord:
    """Everything one client instance pushed, cluster-wide (the last PUSH_HISTORY)."""

    identity: ClientIdentity
    pushes: deque[ReceivedPush] = field(default_factory=lambda: deque(maxlen=PUSH_HISTORY))
    push_count: int = 0
    subscription_id: int | None = None
    metrics: tuple[str, ...] = ()
    push_interval_ms: int = DEFAULT_PUSH_INTERVAL_MS

    def last_metrics(self) -> MetricsData | None:
        """The most recent push that carried decoded metrics."""
        for push in reversed(self.pushes):
            if push.data is not None and push.data.metrics:
                return push.data
        return None

    def metric_names(self) -> set[str]:
        return {name for push in self.pushes if push.data is not None
                for name in push.data.names()}


@dataclass(frozen=True)
class SubscriptionAnswer:
    """What GetTelemetrySubscriptions is answered with: an error, or the client's instance
    id and instance."""

    error_code: int
    client_instance_id: uuid.UUID
    instance: ClientInstance | None


class ClientTelemetry:
    """Subscriptions, per-broker client instances and received pushes."""

    def __init__(self, clock: Clock, enabled: bool = False,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.clock = clock
        self.enabled_by_default = enabled
        self.enabled = enabled
        self.max_bytes = max_bytes
        self.subscriptions: dict[str, Subscription] = {}
        self.version = 0
        self.instances: OrderedDict[tuple[int, uuid.UUID], ClientInstance] = OrderedDict()
        self.clients: OrderedDict[uuid.UUID, ClientRecord] = OrderedDict()
        self._software: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self.kept_bytes = 0  # decompressed metrics held by `clients`' pushes
        self._expired_at_ms: int | None = None

    # -- subscriptions ----------------------------------------------------------------------

    def set_subscription(self, name: str, metrics: list[str] | tuple[str, ...],
                         interval_ms: int = DEFAULT_PUSH_INTERVAL_MS,
                         match: dict[str, str] | None = None) -> Subscription:
        """Create or replace a subscription (and enable telemetry); INVALID_CONFIG if a
        value is out of Kafka's bounds."""
        if not name:
            raise ClusterError(ErrorCode.INVALID_CONFIG, "a subscription needs a name")
        if not MIN_PUSH_INTERVAL_MS <= interval_ms <= MAX_PUSH_INTERVAL_MS:
            raise ClusterError(ErrorCode.INVALID_CONFIG,
                               f"interval.ms must be within {MIN_PUSH_INTERVAL_MS} and "
                               f"{MAX_PUSH_INTERVAL_MS}, got {interval_ms}")
        selectors = []
        for key, pattern in sorted((match or {}).items()):
            if key not in MATCH_KEYS:
                raise ClusterError(ErrorCode.INVALID_CONFIG,
                                   f"unknown match key {key!r}; keys: {', '.join(MATCH_KEYS)}")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ClusterError(ErrorCode.INVALID_CONFIG,
                                   f"match {key}: bad regular expression: {exc}") from None
            selectors.append((key, pattern))
        subscription = Subscription(name, tuple(dict.fromkeys(metrics)), interval_ms,
                                    tuple(selectors))
        self.subscriptions[name] = subscription
        self.version += 1
        self.enabled = True
        return subscription

    def delete_subscription(self, name: str) -> bool:
        if self.subscriptions.pop(name, None) is None:
            return False
        self.version += 1
        return True

    def reset(self) -> None:
        """Back to the configured default: no subscriptions, instances or pushes."""
        self.enabled = self.enabled_by_default
        self.subscriptions.clear()
        self.version += 1
        self.instances.clear()
        self.clients.clear()
        self.kept_bytes = 0

    # -- what clients are -------------------------------------------------------------------

    def note_client_software(self, address: str, name: str, version: str) -> None:
        """The software name and version a connection announced in ApiVersions v3+."""
        self._software[address] = (name, version)
        self._software.move_to_end(address)
        while len(self._software) > MAX_CLIENTS:
            self._software.popitem(last=False)

    def connection_closed(self, address: str) -> None:
        """The connection from `address` closed: what its ApiVersions announced goes."""
        self._software.pop(address, None)

    def expire(self, now_ms: int) -> None:
        """Drop the instances not heard of for max(60 s, 3 push intervals), as Kafka's
        ClientMetricsManager expires them (a ticker of the cluster's: at most once every
        EXPIRE_EVERY_MS, however often it ticks)."""
        if self._expired_at_ms is not None and 0 <= now_ms - self._expired_at_ms < \
                EXPIRE_EVERY_MS:
            return
        self._expired_at_ms = now_ms
        for key in [k for k, i in self.instances.items() if i.expires_at_ms() <= now_ms]:
            del self.instances[key]

    def _identity(self, instance_id: uuid.UUID, client_id: str | None,
                  address: str) -> ClientIdentity:
        name, version = self._software.get(address, (None, None))
        return ClientIdentity(instance_id, client_id, name, version, address)

    def _evaluate(self, identity: ClientIdentity) -> ClientInstance:
        """A fresh instance with the subscriptions `identity` matches now."""
        metrics: dict[str, None] = {}
        interval = DEFAULT_PUSH_INTERVAL_MS
        everything = False
        for subscription in self.subscriptions.values():
            if subscription.matches(identity):
                everything = everything or ALL_METRICS in subscription.metrics
                metrics.update(dict.fromkeys(subscription.metrics))
                interval = min(interval, subscription.interval_ms)
        chosen = (ALL_METRICS,) if everything else tuple(metrics)
        return ClientInstance(identity, subscription_id(chosen, interval,
                                                        identity.client_instance_id),
                              self.version, chosen, interval)

    def _instance(self, broker_id: int, instance_id: uuid.UUID, client_id: str | None,
                  address: str) -> ClientInstance:
        key = (broker_id, instance_id)
        instance = self.instances.get(key)
        if instance is None:
            instance = self._evaluate(self._identity(instance_id, client_id, address))
        elif instance.subscription_version < self.version:
            instance = self._evaluate(instance.identity)
        instance.last_used_ms = self.clock.now_ms()
        self.instances[key] = instance
        self.instances.move_to_end(key)
        while len(self.instances) > MAX_CLIENTS:
            self.instances.popitem(last=False)
        return instance

    def _record(self, instance: ClientInstance) -> ClientRecord:
        instance_id = instance.identity.client_instance_id
        record = self.clients.get(instance_id)
        if record is None:
            record = self.clients[instance_id] = ClientRecord(instance.identity)
        self.clients.move_to_end(instance_id)
        while len(self.clients) > MAX_CLIENTS:
            self._drop_record()
        record.subscription_id = instance.subscription_id
        record.metrics = instance.metrics
        record.push_interval_ms = instance.push_interval_ms
        return record

    def _new_instance_id(self) -> uuid.UUID:
        while True:
            candidate = uuid.uuid4()
            if candidate not in self.clients and all(
                    candidate != key[1] for key in self.instances):
                return candidate

    # -- the two requests -------------------------------------------------------------------

    def get_subscriptions(self, broker_id: int, instance_id: uuid.UUID,
                          client_id: str | None, address: str) -> SubscriptionAnswer:
        """GetTelemetrySubscriptions: the instance (assigning an id to a new client) and
        its subscription, or THROTTLING_QUOTA_EXCEEDED when asked again too soon."""
        if instance_id == ZERO_UUID:
            instance_id = self._new_instance_id()
        instance = self._instance(broker_id, instance_id, client_id, address)
        self._record(instance)
        now = self.clock.now_ms()
        last = max((t for t in (instance.last_get_ms, instance.last_push_ms) if t is not None),
                   default=None)
        retry_at_once = instance.last_error in (ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
                                                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        if last is not None and now - last < instance.push_interval_ms and not retry_at_once:
            return SubscriptionAnswer(ErrorCode.THROTTLING_QUOTA_EXCEEDED, instance_id, None)
        instance.last_get_ms = now
        instance.last_error = ErrorCode.NONE
        return SubscriptionAnswer(ErrorCode.NONE, instance_id, instance)

    def push(self, broker_id: int, instance_id: uuid.UUID, subscription: int,
             terminating: bool, compression_type: int, payload: bytes,
             client_id: str | None, address: str) -> int:
        """PushTelemetry: validate as Kafka does, keep and decode the metrics; the error
        code to answer with."""
        if instance_id == ZERO_UUID:
            return ErrorCode.INVALID_REQUEST
        instance = self._instance(broker_id, instance_id, client_id, address)
        record = self._record(instance)
        now = self.clock.now_ms()
        error = self._validate_push(instance, subscription, terminating, compression_type,
                                    len(payload), now)
        instance.terminating = terminating
        data: MetricsData | None = None
        problem: str | None = None
        kept = 0  # decompressed bytes of what is kept decoded
        if error == ErrorCode.NONE and payload:
            from mockbroker.cluster.client_telemetry.otlp import OtlpError, decode_metrics_data

            try:
                raw = decompress(compression_type, payload, MAX_DECOMPRESSED)
                data = decode_metrics_data(raw)
                kept = len(raw)
            except (CodecError, OtlpError) as exc:
                error, problem = ErrorCode.INVALID_RECORD, str(exc)
        instance.last_error = error
        self._keep(record, ReceivedPush(now, broker_id, subscription, terminating,
                                        compression_type, len(payload), error, data, problem,
                                        kept))
        record.push_count += 1
        return error

    def _keep(self, record: ClientRecord, push: ReceivedPush) -> None:
        """Add a push to `record` (the most recently active one), then hold the records to
        MAX_KEPT_BYTES of decompressed metrics: the least recently active go first, then the
        oldest pushes of `record` itself."""
        pushes = record.pushes
        if len(pushes) == pushes.maxlen:
            self.kept_bytes -= pushes[0].kept_bytes
        pushes.append(push)
        self.kept_bytes += push.kept_bytes
        while self.kept_bytes > MAX_KEPT_BYTES and len(self.clients) > 1:
            self._drop_record()
        while self.kept_bytes > MAX_KEPT_BYTES and len(pushes) > 1:
            self.kept_bytes -= pushes.popleft().kept_bytes

    def _drop_record(self) -> None:
        """Forget the least recently active client's pushes."""
        _, dropped = self.clients.popitem(last=False)
        self.kept_bytes -= sum(push.kept_bytes for push in dropped.pushes)

    def _validate_push(self, instance: ClientInstance, subscription: int, terminating: bool,
                       compression_type: int, size: int, now: int) -> int:
        if instance.terminating:
            return ErrorCode.INVALID_REQUEST
        after_get = instance.last_get_ms is not None and (
            instance.last_push_ms is None or instance.last_get_ms > instance.last_push_ms)
        due = instance.last_push_ms is None or \
            now - instance.last_push_ms >= instance.push_interval_ms
        if after_get or due:
            instance.last_push_ms = now
        elif not terminating:
            return ErrorCode.THROTTLING_QUOTA_EXCEEDED
        if subscription != instance.subscription_id:
            return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        if compression_type not in tuple(Compression):
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        if size > self.max_bytes:
            return ErrorCode.TELEMETRY_TOO_LARGE
        return ErrorCode.NONE

    # -- reading ----------------------------------------------------------------------------

    def client(self, instance_id: uuid.UUID) -> ClientRecord | None:
        return self.clients.get(instance_id)


def subscription_id(metrics: tuple[str, ...], interval_ms: int,
                    instance_id: uuid.UUID) -> int:
    """A signed 32-bit id that changes with the subscription's content, the same on every
    broker for one client instance (as Kafka derives it from a CRC of the same inputs)."""
    text = "\x00".join(sorted(metrics)) + f"\x01{interval_ms}\x01{instance_id}"
    value = crc32c(text.encode())
    return value - (1 << 32) if value >= 1 << 31 else value
