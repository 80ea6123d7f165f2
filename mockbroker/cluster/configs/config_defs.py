"""Topic and broker configuration defaults, as a Kafka 4.0 broker reports them (the topic
configs as Kafka 4.4 lists them, its newer keys marked).

Theory of operation: overrides live in the metadata log (ConfigRecord); the effective value of
a key is the override if there is one, else the default here. DescribeConfigs reports the
source (topic override, static broker config, or default) from the same table, so what a
client reads is what the broker enforces.

Each definition also carries Kafka's validation rule for the key (allowed strings, lower and
upper bounds) and `validate_value` checks a proposed value against its type and rule, so
CreateTopics and AlterConfigs reject what a Kafka broker rejects (INVALID_CONFIG) with the
same wording. DOCS holds one-line descriptions for DescribeConfigs' include_documentation.

Allowed strings are compared exactly (Kafka's ValidString and ValidList: cleanup.policy,
compression.type, message.timestamp.type, group.coordinator.rebalance.protocols), except
where Kafka uses CaseInsensitiveValidString (`case_insensitive`:
group.consumer.migration.policy, then parsed lower-cased by ConsumerGroupMigrationPolicy).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from mockbroker.cluster.java_order import java_hash_order

# DescribeConfigs config_type values
UNKNOWN, BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(10)


@dataclass(frozen=True)
class ConfigDef:
    """One config key as Kafka defines it: type, default and bounds, and how
    DescribeConfigs shows it (broker synonym, sensitive, read-only)."""

    name: str
    default: str | None
    type: int
    broker_synonym: str | None = None  # the broker setting a topic value defaults from
    sensitive: bool = False
    read_only: bool = False
    choices: tuple[str, ...] = ()  # allowed values (each element, for LIST types)
    case_insensitive: bool = False  # choices compared upper-cased (CaseInsensitiveValidString)
    minimum: float | None = None
    maximum: float | None = None


_WEEK_MS = str(7 * 24 * 3600 * 1000)
_LONG_MAX = "9223372036854775807"
_HOUR_MS = str(3600 * 1000)
_MIB = 1024 * 1024
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_CLEANUP = ("compact", "delete")

TOPIC_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in [
    ConfigDef("cleanup.policy", "delete", LIST, "log.cleanup.policy", choices=_CLEANUP),
    ConfigDef("compression.type", "producer", STRING, "compression.type", choices=_COMPRESSION),
    ConfigDef("compression.gzip.level", "-1", INT, "compression.gzip.level",
              minimum=-1, maximum=9),
    ConfigDef("compression.lz4.level", "9", INT, "compression.lz4.level", minimum=1, maximum=17),
    ConfigDef("compression.zstd.level", "3", INT, "compression.zstd.level",
              minimum=-131072, maximum=22),
    ConfigDef("delete.retention.ms", "86400000", LONG, "log.cleaner.delete.retention.ms",
              minimum=0),
    ConfigDef("errors.deadletterqueue.group.enable", "false", BOOLEAN, None),  # 4.4
    ConfigDef("file.delete.delay.ms", "60000", LONG, "log.segment.delete.delay.ms", minimum=0),
    ConfigDef("flush.messages", _LONG_MAX, LONG, "log.flush.interval.messages", minimum=1),
    ConfigDef("flush.ms", _LONG_MAX, LONG, "log.flush.interval.ms", minimum=0),
    ConfigDef("follower.replication.throttled.replicas", "", LIST,
              "follower.replication.throttled.replicas"),
    ConfigDef("index.interval.bytes", "4096", INT, "log.index.interval.bytes", minimum=0),
    ConfigDef("leader.replication.throttled.replicas", "", LIST,
              "leader.replication.throttled.replicas"),
    ConfigDef("local.retention.bytes", "-2", LONG, "log.local.retention.bytes", minimum=-2),
    ConfigDef("local.retention.ms", "-2", LONG, "log.local.retention.ms", minimum=-2),
    ConfigDef("max.compaction.lag.ms", _LONG_MAX, LONG, "log.cleaner.max.compaction.lag.ms",
              minimum=1),
    ConfigDef("max.decompressed.message.bytes", "2147483639", INT,
              "max.decompressed.message.bytes", minimum=1),  # 4.4
    ConfigDef("max.message.bytes", "1048588", INT, "message.max.bytes", minimum=0),
    # KIP-1030 (Kafka 4.0): a record may be at most an hour ahead of the broker's clock
    ConfigDef("message.timestamp.after.max.ms", _HOUR_MS, LONG,
              "log.message.timestamp.after.max.ms", minimum=0),
    ConfigDef("message.timestamp.before.max.ms", _LONG_MAX, LONG,
              "log.message.timestamp.before.max.ms", minimum=0),
    ConfigDef("message.timestamp.type", "CreateTime", STRING, "log.message.timestamp.type",
              choices=_TIMESTAMP_TYPES),
    ConfigDef("min.cleanable.dirty.ratio", "0.5", DOUBLE, "log.cleaner.min.cleanable.ratio",
              minimum=0, maximum=1),
    ConfigDef("min.compaction.lag.ms", "0", LONG, "log.cleaner.min.compaction.lag.ms",
              minimum=0),
    ConfigDef("min.insync.replicas", "1", INT, "min.insync.replicas", minimum=1),
    ConfigDef("preallocate", "false", BOOLEAN, "log.preallocate"),
    ConfigDef("remote.copy.lag.bytes", "-1", LONG, "log.remote.copy.lag.bytes",
              minimum=-1),  # 4.4
    ConfigDef("remote.copy.lag.ms", "0", LONG, "log.remote.copy.lag.ms", minimum=-1),  # 4.4
    ConfigDef("remote.log.copy.disable", "false", BOOLEAN, None),  # 3.9
    ConfigDef("remote.log.delete.on.disable", "false", BOOLEAN, None),  # 3.9
    ConfigDef("remote.storage.enable", "false", BOOLEAN, None),
    ConfigDef("retention.bytes", "-1", LONG, "log.retention.bytes"),
    ConfigDef("retention.ms", _WEEK_MS, LONG, "log.retention.ms", minimum=-1),
    # KIP-1030 (Kafka 4.0): segments of at least 1 MiB; internal.segment.bytes (below) is
    # Kafka's test-only override for smaller ones
    ConfigDef("segment.bytes", "1073741824", INT, "log.segment.bytes", minimum=_MIB),
    ConfigDef("internal.segment.bytes", None, INT, None, minimum=0),
    ConfigDef("segment.index.bytes", "10485760", INT, "log.index.size.max.bytes", minimum=4),
    ConfigDef("segment.jitter.ms", "0", LONG, "log.roll.jitter.ms", minimum=0),
    ConfigDef("segment.ms", _WEEK_MS, LONG, "log.roll.ms", minimum=1),
    ConfigDef("unclean.leader.election.enable", "false", BOOLEAN,
              "unclean.leader.election.enable"),
]}

# Broker configs as Kafka 4.0 reports them; read_only is Kafka's flag (not dynamically
# updatable). Dynamic ones with a topic synonym are added below from TOPIC_CONFIGS.
_BROKER_LIST: list[ConfigDef] = [
    ConfigDef("advertised.listeners", None, STRING, read_only=True),  # KAFKA-18405
    ConfigDef("auto.create.topics.enable", "true", BOOLEAN, read_only=True),
    ConfigDef("auto.leader.rebalance.enable", "true", BOOLEAN, read_only=True),
    ConfigDef("background.threads", "10", INT, minimum=1),
    ConfigDef("broker.id", None, INT, read_only=True),
    ConfigDef("broker.rack", None, STRING, read_only=True),
    ConfigDef("node.id", None, INT, read_only=True),
    ConfigDef("compression.type", "producer", STRING, choices=_COMPRESSION),
    ConfigDef("connection.failed.authentication.delay.ms", "100", INT, read_only=True,
              minimum=0),
    ConfigDef("default.replication.factor", "1", INT, read_only=True),
    ConfigDef("delete.topic.enable", "true", BOOLEAN, read_only=True),
    ConfigDef("listeners", "PLAINTEXT://:9092", STRING),  # per-broker dynamic in Kafka
    # the log cleaner's reconfigurable settings (Kafka's LogCleaner.ReconfigurableConfigs;
    # the cleaner's own checks of a change: alter_configs._check_log_cleaner), which tune
    # nothing here but log.cleaner.backoff.ms, which the log manager reads before each wait
    ConfigDef("log.cleaner.backoff.ms", "15000", LONG, minimum=0),
    ConfigDef("log.cleaner.dedupe.buffer.size", "134217728", LONG),
    ConfigDef("log.cleaner.enable", "true", BOOLEAN, read_only=True),
    ConfigDef("log.cleaner.io.buffer.load.factor", "0.9", DOUBLE),
    ConfigDef("log.cleaner.io.buffer.size", "524288", INT, minimum=0),
    ConfigDef("log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", DOUBLE),
    ConfigDef("log.cleaner.threads", "1", INT, minimum=0),
    ConfigDef("connections.max.idle.ms", "600000", LONG, read_only=True),
    ConfigDef("queued.max.requests", "500", INT, read_only=True, minimum=1),
    ConfigDef("ssl.keystore.password", None, PASSWORD),  # dynamic (keystore updates)
    # not a KafkaConfig key (the authorizer's): Kafka lists it, when set, as an unknown
    # (type 0), hence sensitive, read-only key
    ConfigDef("super.users", None, UNKNOWN, sensitive=True, read_only=True),
    ConfigDef("log.cleanup.policy", "delete", LIST, choices=_CLEANUP),
    ConfigDef("log.dir", "/tmp/kafka-logs", STRING, read_only=True),
    ConfigDef("log.dirs", None, STRING, read_only=True),
    ConfigDef("log.retention.bytes", "-1", LONG),
    ConfigDef("log.retention.check.interval.ms", "300000", LONG, read_only=True, minimum=1),
    ConfigDef("log.retention.hours", "168", INT, read_only=True),
    ConfigDef("log.retention.minutes", None, INT, read_only=True),
    ConfigDef("log.retention.ms", None, LONG, minimum=-1),
    ConfigDef("log.roll.hours", "168", INT, read_only=True, minimum=1),
    ConfigDef("log.roll.ms", None, LONG),
    ConfigDef("log.segment.bytes", "1073741824", INT, minimum=_MIB),
    ConfigDef("log.message.timestamp.type", "CreateTime", STRING, choices=_TIMESTAMP_TYPES),
    ConfigDef("message.max.bytes", "1048588", INT, minimum=0),
    ConfigDef("max.connection.creation.rate", "2147483647", INT, minimum=0),  # KIP-612
    ConfigDef("max.connections", "2147483647", INT, minimum=0),
    ConfigDef("max.connections.per.ip", "2147483647", INT, minimum=0),
    ConfigDef("max.connections.per.ip.overrides", "", STRING),
    ConfigDef("min.insync.replicas", "1", INT, minimum=1),
    ConfigDef("num.io.threads", "8", INT, minimum=1),
    ConfigDef("num.network.threads", "3", INT, minimum=1),
    ConfigDef("num.partitions", "1", INT, read_only=True, minimum=1),
    ConfigDef("num.replica.fetchers", "1", INT),
    ConfigDef("offsets.commit.timeout.ms", "5000", INT, read_only=True, minimum=1),
    ConfigDef("offsets.retention.check.interval.ms", "600000", LONG, read_only=True,
              minimum=1),
    ConfigDef("offsets.retention.minutes", "10080", INT, read_only=True, minimum=1),
    ConfigDef("offsets.topic.num.partitions", "50", INT, read_only=True, minimum=1),
    ConfigDef("offsets.topic.replication.factor", "3", SHORT, read_only=True, minimum=1),
    ConfigDef("process.roles", "broker", LIST, read_only=True),
    ConfigDef("replica.lag.time.max.ms", "30000", LONG, read_only=True),
    ConfigDef("replica.selector.class", None, CLASS, read_only=True,
              choices=("org.apache.kafka.common.replica.RackAwareReplicaSelector",)),
    ConfigDef("socket.request.max.bytes", "104857600", INT, read_only=True, minimum=1),
    ConfigDef("transaction.state.log.min.isr", "2", INT, read_only=True, minimum=1),
    ConfigDef("transaction.state.log.num.partitions", "50", INT, read_only=True, minimum=1),
    ConfigDef("transaction.state.log.replication.factor", "3", SHORT, read_only=True,
              minimum=1),
    ConfigDef("transaction.max.timeout.ms", "900000", INT, read_only=True, minimum=1),
    ConfigDef("transactional.id.expiration.ms", "604800000", INT, read_only=True, minimum=1),
    ConfigDef("transaction.remove.expired.transaction.cleanup.interval.ms", "3600000", INT,
              read_only=True, minimum=1),
    ConfigDef("producer.id.expiration.ms", "86400000", INT, read_only=True, minimum=1),
    ConfigDef("producer.id.expiration.check.interval.ms", "600000", INT, read_only=True,
              minimum=1),
    ConfigDef("group.initial.rebalance.delay.ms", "3000", INT, read_only=True),
    ConfigDef("group.min.session.timeout.ms", "6000", INT, read_only=True),
    ConfigDef("group.max.session.timeout.ms", "1800000", INT, read_only=True),
    ConfigDef("group.max.size", "2147483647", INT, read_only=True, minimum=1),
    ConfigDef("group.consumer.heartbeat.interval.ms", "5000", INT, read_only=True),
    ConfigDef("group.consumer.session.timeout.ms", "45000", INT, read_only=True),
    ConfigDef("group.consumer.assignors", "uniform,range", LIST, read_only=True),
    ConfigDef("group.consumer.max.size", "2147483647", INT, read_only=True, minimum=1),
    ConfigDef("group.consumer.migration.policy", "bidirectional", STRING, read_only=True,
              choices=("bidirectional", "upgrade", "downgrade", "disabled"),
              case_insensitive=True),
    ConfigDef("group.coordinator.rebalance.protocols", "classic,consumer", LIST,
              read_only=True, choices=("classic", "consumer", "share")),
    ConfigDef("unstable.api.versions.enable", "false", BOOLEAN, read_only=True),
    ConfigDef("unclean.leader.election.enable", "false", BOOLEAN),
]
_TOPIC_ONLY = ("follower.replication.throttled.replicas", "leader.replication.throttled.replicas")
# broker synonyms Kafka defines without a default (the topic default applies; no
# DEFAULT_CONFIG synonym is listed)
_NO_BROKER_DEFAULT = ("log.flush.interval.ms", "log.roll.jitter.ms")
BROKER_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in _BROKER_LIST}
for _topic_def in TOPIC_CONFIGS.values():  # the broker synonyms of topic configs: dynamic
    _synonym = _topic_def.broker_synonym
    if _synonym is not None and _synonym not in BROKER_CONFIGS \
            and _synonym not in _TOPIC_ONLY:
        BROKER_CONFIGS[_synonym] = ConfigDef(
            _synonym, None if _synonym in _NO_BROKER_DEFAULT else _topic_def.default,
            _topic_def.type, choices=_topic_def.choices,
            minimum=_topic_def.minimum, maximum=_topic_def.maximum)
# Kafka's broker quota configs (QuotaConfig, DynamicConfig.Broker): dynamic only, outside
# KafkaConfig's definition, so a broker lists them only once set and with no default synonym;
# kafka-reassign-partitions sets and clears the replication throttles on every broker it moves
# replicas between
BROKER_DYNAMIC_ONLY: dict[str, ConfigDef] = {c.name: c for c in [
    ConfigDef(name, None, LONG, minimum=0) for name in (
        "leader.replication.throttled.rate", "follower.replication.throttled.rate",
        "replica.alter.log.dirs.io.max.bytes.per.second")]}
# Kafka's listener-prefixed broker configs (listener.name.<listener>.<key>) known here
# (Kafka's SocketServer.ListenerReconfigurableConfigs)
LISTENER_CONFIGS = frozenset({"max.connection.creation.rate", "max.connections"})


def broker_config_definition(name: str) -> ConfigDef | None:
    """A broker config's definition (the dynamic-only quota keys included), listener-prefixed
    names (listener.name.<l>.<key>, for the keys Kafka lets a listener override) resolving to
    their key's."""
    definition = BROKER_CONFIGS.get(name) or BROKER_DYNAMIC_ONLY.get(name)
    if definition is None and name.startswith("listener.name."):
        _, _, rest = name[len("listener.name."):].partition(".")
        if rest in LISTENER_CONFIGS:
            return BROKER_CONFIGS[rest]
    return definition


PER_IP = "max.connections.per.ip"
PER_IP_OVERRIDES = "max.connections.per.ip.overrides"


def parse_overrides(text: str) -> dict[str, int]:
    """max.connections.per.ip.overrides, "host:count,host:count" (Kafka's Csv.parseCsvMap:
    entries split on commas, host and count on the last colon, so IPv6 hosts work). Raises
    ValueError with Kafka's wording for an entry without a count or a host Kafka refuses."""
    out: dict[str, int] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        host, sep, count = entry.rpartition(":")
        host = host.strip()
        try:
            if not sep:
                raise ValueError(f"no count in {entry!r}")
            out[host] = int(count.strip())
        except ValueError as exc:
            raise ValueError(f"Error parsing configuration property '{PER_IP_OVERRIDES}': "
                             f"{exc}") from None
        if not re.fullmatch(r"[0-9a-zA-Z\-%._:]*", host):
            raise ValueError(f"{PER_IP_OVERRIDES} contains invalid addresses : {host}")
    return out


def connection_limit_problem(values: Mapping[str, str | None]) -> str | None:
    """Kafka's KafkaConfig.validateValues checks of the per-IP limits: the overrides must
    parse, and max.connections.per.ip may be 0 only with overrides. None: fine."""
    overrides = values.get(PER_IP_OVERRIDES) or ""
    try:
        parsed = parse_overrides(overrides)
    except ValueError as exc:
        return str(exc)
    if (values.get(PER_IP) or "").strip() == "0" and not parsed:
        return (f"requirement failed: {PER_IP} can be set to zero only if {PER_IP_OVERRIDES} "
                "property is set.")
    return None


# Topic configs Kafka defines as internal: described only where a topic sets them
HIDDEN_UNLESS_SET = frozenset({"internal.segment.bytes"})


def segment_bytes(config: Mapping[str, str]) -> int:
    """The size at which a topic's segments roll: internal.segment.bytes when set (Kafka's
    test-only override, not bound by segment.bytes' 1 MiB minimum), else segment.bytes."""
    internal = config.get("internal.segment.bytes")
    return int(internal) if internal else int(config["segment.bytes"])


# Kafka lets these change per broker, but mockbroker does not rebind its sockets: refused
NOT_DYNAMIC_HERE = frozenset({"listeners", "advertised.listeners"})

TYPE_NAMES = {BOOLEAN: "BOOLEAN", STRING: "STRING", INT: "INT", SHORT: "SHORT", LONG: "LONG",
              DOUBLE: "DOUBLE", LIST: "LIST", CLASS: "CLASS", PASSWORD: "PASSWORD"}
_INT_BITS = {SHORT: 16, INT: 32, LONG: 64}


def _number(definition: ConfigDef, value: str) -> float | None:
    text = value.strip()
    if definition.type in _INT_BITS:
        bits = _INT_BITS[definition.type]
        try:
            number = int(text)
        except ValueError:
            return None
        return number if -(2 ** (bits - 1)) <= number < 2 ** (bits - 1) else None
    try:
        return float(text)
    except ValueError:
        return None


def validate_value(definition: ConfigDef, value: str) -> str | None:
    """Why `value` is not acceptable for the key (Kafka's ConfigException text), or None."""
    def invalid(reason: str) -> str:
        return f"Invalid value {value} for configuration {definition.name}: {reason}"

    kind = definition.type
    if kind == BOOLEAN:
        if value.strip().lower() not in ("true", "false"):
            return invalid("Expected value to be either true or false")
        return None
    if kind in (SHORT, INT, LONG, DOUBLE):
        number = _number(definition, value)
        if number is None:
            return invalid(f"Not a number of type {TYPE_NAMES[kind]}")
        if definition.minimum is not None and number < definition.minimum:
            return invalid(f"Value must be at least {_bound(definition, definition.minimum)}")
        if definition.maximum is not None and number > definition.maximum:
            return invalid(f"Value must be no more than {_bound(definition, definition.maximum)}")
        return None
    if kind == CLASS:
        if value.strip() and definition.choices and value.strip() not in definition.choices:
            return invalid(f"Class {value.strip()} could not be found.")
        return None
    if definition.case_insensitive:
        allowed = java_hash_order([c.upper() for c in definition.choices])
        if value.strip().upper() not in allowed:
            return invalid(f"String must be one of (case insensitive): {', '.join(allowed)}")
        return None
    if definition.choices:
        items = [v.strip() for v in value.split(",")] if kind == LIST else [value.strip()]
        for item in items:  # ValidList checks element by element and names the bad one
            if item not in definition.choices:
                return (f"Invalid value {item} for configuration {definition.name}: "
                        f"String must be one of: {', '.join(definition.choices)}")
    return None


def _bound(definition: ConfigDef, bound: float) -> str:
    return str(int(bound)) if definition.type != DOUBLE else str(float(bound))


DOCS: dict[str, str] = {
    # a client metrics resource's configs (Kafka's ClientMetricsConfigs)
    "interval.ms": "Metrics push interval in milliseconds",
    "match": "Client match criteria",
    "metrics": "Telemetry metric name prefix list",
    "cleanup.policy": "How old log segments are retired: delete them, compact them by key, "
                      "or both.",
    "compression.type": "Codec the broker stores batches with; 'producer' keeps the codec the "
                        "producer used.",
    "compression.gzip.level": "Level used when the broker itself compresses with gzip.",
    "compression.lz4.level": "Level used when the broker itself compresses with lz4.",
    "compression.zstd.level": "Level used when the broker itself compresses with zstd.",
    "delete.retention.ms": "How long delete markers (tombstones) are kept on compacted topics.",
    "errors.deadletterqueue.group.enable": "Whether share groups may use this topic as their "
                                           "dead-letter queue.",
    "file.delete.delay.ms": "Delay before a retired segment file is removed from disk.",
    "flush.messages": "Force an fsync after this many messages.",
    "flush.ms": "Force an fsync after this many milliseconds.",
    "follower.replication.throttled.replicas": "Replicas whose follower traffic is throttled.",
    "index.interval.bytes": "Bytes of log between two offset index entries.",
    "leader.replication.throttled.replicas": "Replicas whose leader traffic is throttled.",
    "local.retention.bytes": "Bytes kept locally when tiered storage is on (-2: retention.bytes).",
    "local.retention.ms": "Time kept locally when tiered storage is on (-2: retention.ms).",
    "max.compaction.lag.ms": "Longest time a record may stay uncompacted.",
    "max.decompressed.message.bytes": "Largest decompressed record the broker accepts, in "
                                      "bytes.",
    "max.message.bytes": "Largest record batch the topic accepts, in bytes.",
    "message.timestamp.after.max.ms": "How far a record timestamp may be ahead of the broker "
                                      "clock.",
    "message.timestamp.before.max.ms": "How far a record timestamp may be behind the broker "
                                       "clock.",
    "message.timestamp.type": "CreateTime keeps producer timestamps; LogAppendTime stamps "
                              "batches with the broker's clock.",
    "min.cleanable.dirty.ratio": "Share of uncompacted log that makes a partition eligible for "
                                 "compaction.",
    "min.compaction.lag.ms": "Shortest time a record stays uncompacted.",
    "min.insync.replicas": "In-sync replicas needed to acknowledge an acks=all write.",
    "preallocate": "Preallocate segment files on disk.",
    "remote.copy.lag.bytes": "Bytes a closed segment waits before it may be tiered (-1: "
                             "no size condition).",
    "remote.copy.lag.ms": "Time a closed segment waits before it may be tiered.",
    "remote.log.copy.disable": "Stop tiering this topic's segments (tiered data becomes "
                               "read only).",
    "remote.log.delete.on.disable": "Delete the tiered data when tiered storage is turned off "
                                    "for this topic.",
    "remote.storage.enable": "Tier this topic's segments to remote storage.",
    "retention.bytes": "Largest size of a partition before old segments are deleted (-1: none).",
    "retention.ms": "How long records are kept before deletion (-1: forever).",
    "segment.bytes": "Size at which a new log segment is started.",
    "segment.index.bytes": "Size of a segment's offset index.",
    "segment.jitter.ms": "Random jitter subtracted from segment.ms.",
    "segment.ms": "Age at which a new log segment is started.",
    "unclean.leader.election.enable": "Allow an out-of-sync replica to become leader, losing "
                                      "data.",
    "auto.create.topics.enable": "Create topics that clients ask for but that do not exist.",
    "broker.id": "This broker's id.",
    "node.id": "This node's id.",
    "default.replication.factor": "Replication factor for topics created without one.",
    "delete.topic.enable": "Whether DeleteTopics is allowed.",
    "log.cleanup.policy": "Default cleanup.policy for topics.",
    "log.retention.bytes": "Default retention.bytes for topics.",
    "log.retention.hours": "Default retention in hours when log.retention.ms is unset.",
    "log.retention.ms": "Default retention.ms for topics.",
    "log.segment.bytes": "Default segment.bytes for topics.",
    "log.message.timestamp.type": "Default message.timestamp.type for topics.",
    "message.max.bytes": "Default max.message.bytes for topics.",
    "max.connection.creation.rate": "New connections accepted per second by the broker "
                                    "(KIP-612); listener.name.<listener>.max.connection."
                                    "creation.rate per listener.",
    "max.connections": "Connections the broker keeps open at most; at the limit its "
                       "acceptors wait for one to close. listener.name.<listener>."
                       "max.connections per listener.",
    "max.connections.per.ip": "Connections one client IP may have open; more are closed at "
                              "once.",
    "max.connections.per.ip.overrides": "Per-IP or per-host limits instead of "
                                        "max.connections.per.ip, e.g. "
                                        "\"hostName:100,127.0.0.1:200\".",
    "num.partitions": "Partition count for topics created without one.",
    "offsets.topic.replication.factor": "Replication factor of the consumer offsets topic.",
    "process.roles": "The roles this node plays in KRaft mode.",
    "socket.request.max.bytes": "Largest request the broker reads, in bytes.",
    "transaction.state.log.replication.factor": "Replication factor of the transaction state "
                                                "topic.",
    "transaction.max.timeout.ms": "Longest transaction timeout a producer may ask for.",
    "group.initial.rebalance.delay.ms": "Wait before the first rebalance of a new group.",
    "group.min.session.timeout.ms": "Shortest session timeout a consumer may ask for.",
    "group.max.session.timeout.ms": "Longest session timeout a consumer may ask for.",
    "group.consumer.heartbeat.interval.ms": "KIP-848 groups: the members' heartbeat interval.",
    "group.consumer.session.timeout.ms": "KIP-848 groups: a silent member's session length.",
    "group.consumer.assignors": "KIP-848 groups: server-side assignors, the first the default.",
    "group.consumer.max.size": "KIP-848 groups: the most members a group may have.",
    "group.max.size": "Classic groups: the most members a group may have.",
    "group.consumer.migration.policy": "KIP-848 groups: online upgrade/downgrade of groups "
                                       "with members (disabled, upgrade, downgrade, "
                                       "bidirectional).",
    "group.coordinator.rebalance.protocols": "Group protocols the coordinator runs; "
                                             "without \"share\" (KIP-932) the share APIs "
                                             "answer UNSUPPORTED_VERSION.",
    "unstable.api.versions.enable": "Advertise unstable APIs (Kafka 4.0: the share-group "
                                    "APIs).",
    "advertised.listeners": "The listeners this broker tells clients to connect to.",
    "listeners": "The listeners this broker accepts connections on.",
    "auto.leader.rebalance.enable": "Move leadership back to preferred replicas periodically.",
    "background.threads": "Threads for background work.",
    "broker.rack": "The rack of this broker, for rack-aware replica placement.",
    "log.dir": "The log directory when log.dirs is unset.",
    "log.dirs": "The directories partition data is stored in.",
    "log.retention.check.interval.ms": "How often retention is enforced.",
    "log.cleaner.backoff.ms": "How long the log cleaner waits when no log needs cleaning.",
    "log.cleaner.enable": "Run the log cleaner (compaction of cleanup.policy=compact "
                          "topics).",
    "log.cleaner.threads": "Threads of the log cleaner.",
    "connections.max.idle.ms": "Idle connections are closed after this long.",
    "queued.max.requests": "Requests queued before the network threads stop reading.",
    "ssl.keystore.password": "The password of the keystore file.",
    "super.users": "Principals the authorizer allows everything.",
    "log.retention.minutes": "Default retention in minutes when log.retention.ms is unset.",
    "log.roll.hours": "Default segment.ms in hours when log.roll.ms is unset.",
    "log.roll.ms": "Default segment.ms for topics.",
    "num.io.threads": "Threads handling requests.",
    "num.network.threads": "Threads reading and writing the network.",
    "num.replica.fetchers": "Fetcher threads per source broker.",
    "offsets.commit.timeout.ms": "How long an offset commit waits for the offsets topic.",
    "offsets.retention.check.interval.ms": "How often expired offsets are removed.",
    "offsets.retention.minutes": "How long an empty group's committed offsets are kept.",
    "offsets.topic.num.partitions": "Partitions of the consumer offsets topic.",
    "replica.lag.time.max.ms": "How long a follower may lag before it leaves the ISR.",
    "replica.selector.class": "Which replica a consumer with a rack id is told to read from "
                              "(KIP-392); unset: the leader.",
    "transaction.state.log.min.isr": "min.insync.replicas of the transaction state topic.",
    "transaction.state.log.num.partitions": "Partitions of the transaction state topic.",
    "transactional.id.expiration.ms": "How long an idle transactional id is kept.",
    "transaction.remove.expired.transaction.cleanup.interval.ms":
        "How often transactional ids idle for transactional.id.expiration.ms are removed.",
    "producer.id.expiration.ms": "How long a partition keeps the state of a producer that "
                                 "has stopped writing to it.",
    "producer.id.expiration.check.interval.ms": "How often idle producers' state is "
                                                "removed.",
}
for _name, _definition in BROKER_CONFIGS.items():  # generated synonyms: the topic's text
    if _name not in DOCS:
        _topic = next((t for t in TOPIC_CONFIGS.values() if t.broker_synonym == _name), None)
        if _topic is not None and _topic.name in DOCS:
            DOCS[_name] = f"Default {_topic.name} for topics: {DOCS[_topic.name]}"
