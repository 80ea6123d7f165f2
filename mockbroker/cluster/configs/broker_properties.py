"""Static broker configuration: what a Kafka broker reads from server.properties at start-up.

Theory of operation: `ClusterConfig.broker_properties` holds key/values exactly as they would
appear in server.properties (the CLI fills it from --server-properties, KAFKA_* variables,
a TOML table and --override). `apply_broker_properties` checks every value against Kafka's
type and bounds for the key (BROKER_CONFIGS) and copies the keys the model enforces onto the
ClusterConfig fields that drive behaviour (num.partitions -> default_partitions, ...), so a
property and its dedicated option are one setting. Every known key is then reported by
DescribeConfigs with source STATIC_BROKER_CONFIG (config_entries.py), whether or not its
value differs from Kafka's default, as a key written in server.properties is.

`broker.rack` is the rack of every broker (as one server.properties shared by all would
make it) except those given their own by `ClusterConfig.broker_racks` (read_replicas.py).
As Kafka does, an unknown key is logged and ignored. Keys that mockbroker decides per broker
(broker.id, node.id, listeners, advertised.listeners, process.roles) are ignored with a log
line too: a single property cannot describe several brokers, and the listeners are the
CLI's --host/--port/--advertised-* options. A bad value raises BrokerPropertyError with
Kafka's ConfigException wording.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from mockbroker.cluster.configs.config_defs import (
    BROKER_CONFIGS,
    broker_config_definition,
    connection_limit_problem,
    validate_value,
)
from mockbroker.cluster.log.read_replicas import broker_rack


class ClusterConfig(Protocol):
    """The fields of cluster.ClusterConfig read and set here (named as a protocol so that
    this module does not import cluster.py, which imports it)."""

    broker_properties: dict[str, str]
    auto_create_topics: bool
    default_partitions: int
    min_insync_replicas: int
    message_max_bytes: int
    group_initial_rebalance_delay_ms: int
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int
    group_max_size: int
    transaction_max_timeout_ms: int
    offsets_retention_minutes: int
    log_dirs: tuple[str, ...]
    replica_lag_time_max_ms: int
    broker_racks: tuple[str, ...]
    replica_selector_class: str
    offsets_topic_partitions: int
    transaction_topic_partitions: int
    super_users: str

    def replication_factor(self) -> int: ...

PER_BROKER = ("broker.id", "node.id", "listeners", "advertised.listeners", "process.roles")


def _boolean(text: str) -> bool:
    return text.strip().lower() == "true"


def _int(text: str) -> int:
    return int(text.strip())


def _dirs(text: str) -> tuple[str, ...]:
    return tuple(d.strip() for d in text.split(",") if d.strip())


# property -> (ClusterConfig field, how its text becomes the field's value)
FIELDS: dict[str, tuple[str, Callable[[str], object]]] = {
    "num.partitions": ("default_partitions", _int),
    "default.replication.factor": ("default_replication_factor", _int),
    "auto.create.topics.enable": ("auto_create_topics", _boolean),
    "min.insync.replicas": ("min_insync_replicas", _int),
    "message.max.bytes": ("message_max_bytes", _int),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", _int),
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", _int),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", _int),
    "group.max.size": ("group_max_size", _int),
    "transaction.max.timeout.ms": ("transaction_max_timeout_ms", _int),
    "offsets.retention.minutes": ("offsets_retention_minutes", _int),
    "log.dirs": ("log_dirs", _dirs),
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", _int),
    "replica.selector.class": ("replica_selector_class", str.strip),
}


class BrokerPropertyError(ValueError):
    """A static broker property with a value Kafka would refuse to start with."""


def check_broker_properties(properties: Mapping[str, str]) -> list[str]:
    """Raise BrokerPropertyError for the first bad value; return the log lines for keys
    that are ignored (unknown, or decided per broker by mockbroker)."""
    notes = []
    for key, value in properties.items():
        definition = broker_config_definition(key)
        if definition is None:
            notes.append(f"The configuration '{key}' was supplied but isn't a known config.")
            continue
        problem = validate_value(definition, value)
        if problem is not None:
            raise BrokerPropertyError(problem)
        if key == "log.dirs" and not _dirs(value):
            raise BrokerPropertyError(f"Invalid value {value} for configuration log.dirs: "
                                      "at least one log directory is needed")
        if key in PER_BROKER:
            notes.append(f"The configuration '{key}' is set per broker by mockbroker; "
                         f"the supplied value {value!r} is ignored.")
    problem = connection_limit_problem(properties)
    if problem is not None:
        raise BrokerPropertyError(problem)
    return notes


def apply_broker_properties(config: ClusterConfig) -> list[str]:
    """Validate `config.broker_properties`, copy the enforced keys onto `config`'s fields
    and drop the ignored keys; returns the log lines for what was ignored."""
    properties = config.broker_properties
    notes = check_broker_properties(properties)
    for key in [k for k in properties
                if broker_config_definition(k) is None or k in PER_BROKER]:
        del properties[key]
    for key, value in properties.items():
        target = FIELDS.get(key)
        if target is not None:
            field_name, parse = target
            setattr(config, field_name, parse(value))
    return notes


def unstable_api_versions_enabled(properties: Mapping[str, str]) -> bool:
    """unstable.api.versions.enable: Kafka then advertises the versions its schemas mark
    latestVersionUnstable; in 4.0 those are the KIP-932 share group APIs (76-79, v0)."""
    return _boolean(properties.get("unstable.api.versions.enable", "false"))


def share_groups_enabled(properties: Mapping[str, str]) -> bool:
    """Kafka 4.0's ShareGroupConfig: share groups run when "share" is among
    group.coordinator.rebalance.protocols (compared upper-cased, as Kafka parses the list).
    Otherwise the share APIs, if advertised, answer UNSUPPORTED_VERSION (KafkaApis)."""
    protocols = properties.get("group.coordinator.rebalance.protocols", "classic,consumer")
    return "SHARE" in {name.upper() for name in _dirs(protocols)}


def retention_ms(values: Mapping[str, str | None]) -> str | None:
    """The broker's effective log retention in ms from log.retention.ms, .minutes or .hours
    (the first one set, as Kafka resolves them); None when only the default hours apply."""
    if values.get("log.retention.ms") is not None:
        return values["log.retention.ms"]
    minutes = values.get("log.retention.minutes")
    if minutes is not None:
        return str(int(minutes) * 60_000)
    hours = values.get("log.retention.hours")
    if hours is not None and hours != BROKER_CONFIGS["log.retention.hours"].default:
        return str(int(hours) * 3_600_000)
    return None


def static_values(config: ClusterConfig, broker_id: int, host: str,
                  port: int) -> dict[str, str]:
    """Every broker config with a value as one broker was started: Kafka's defaults, the
    ClusterConfig fields, the broker's identity and listener, then broker_properties."""
    values = {k: c.default for k, c in BROKER_CONFIGS.items() if c.default is not None}
    rf = str(config.replication_factor())
    listener = f"PLAINTEXT://{host}:{port}"
    values.update({
        "broker.id": str(broker_id), "node.id": str(broker_id),
        "listeners": listener, "advertised.listeners": listener,
        "auto.create.topics.enable": str(config.auto_create_topics).lower(),
        "num.partitions": str(config.default_partitions),
        "default.replication.factor": rf,
        "min.insync.replicas": str(config.min_insync_replicas),
        "message.max.bytes": str(config.message_max_bytes),
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.replication.factor": rf,
        "group.initial.rebalance.delay.ms": str(config.group_initial_rebalance_delay_ms),
        "group.min.session.timeout.ms": str(config.group_min_session_timeout_ms),
        "group.max.session.timeout.ms": str(config.group_max_session_timeout_ms),
        "group.max.size": str(config.group_max_size),
        "transaction.max.timeout.ms": str(config.transaction_max_timeout_ms),
        "offsets.retention.minutes": str(config.offsets_retention_minutes),
        "log.dirs": ",".join(config.log_dirs),
        "replica.lag.time.max.ms": str(config.replica_lag_time_max_ms),
        "offsets.topic.num.partitions": str(config.offsets_topic_partitions),
        "transaction.state.log.num.partitions": str(config.transaction_topic_partitions),
    })
    if config.super_users:
        values["super.users"] = config.super_users
    if config.replica_selector_class:
        values["replica.selector.class"] = config.replica_selector_class
    values.update(config.broker_properties)
    rack = broker_rack(config.broker_racks, config.broker_properties.get("broker.rack"),
                       broker_id)
    if rack is not None:
        values["broker.rack"] = rack  # its own rack beats the shared property
    return values


def topic_defaults_from_broker(static: Mapping[str, str]) -> dict[str, str]:
    """Topic config defaults that a static broker setting changes (topic name -> value)."""
    from mockbroker.cluster.configs.config_defs import TOPIC_CONFIGS

    out = {}
    for name, definition in TOPIC_CONFIGS.items():
        synonym = definition.broker_synonym
        if synonym is not None and synonym in static and synonym in BROKER_CONFIGS:
            out[name] = static[synonym]
    retention = retention_ms(static)
    if retention is not None:
        out["retention.ms"] = retention
    roll_hours = static.get("log.roll.hours")
    if static.get("log.roll.ms") is None and roll_hours is not None \
            and roll_hours != BROKER_CONFIGS["log.roll.hours"].default:
        out["segment.ms"] = str(int(roll_hours) * 3_600_000)  # as Kafka resolves log.roll.*
    return out
