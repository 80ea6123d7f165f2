"""Topic and broker configuration defaults, as a Kafka 3.9 broker reports them.

Theory of operation: overrides live in the metadata log (ConfigRecord); the effective value of
a key is the override if there is one, else the default here. DescribeConfigs reports the
source (topic override, static broker config, or default) from the same table, so what a
client reads is what the broker enforces.
"""

from __future__ import annotations

from dataclasses import dataclass

# DescribeConfigs config_type values
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = 1, 2, 3, 4, 5, 6, 7, 8, 9


@dataclass(frozen=True)
class ConfigDef:
    name: str
    default: str | None
    type: int
    broker_synonym: str | None = None  # the broker setting a topic value defaults from
    sensitive: bool = False
    read_only: bool = False


_WEEK_MS = str(7 * 24 * 3600 * 1000)

TOPIC_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in [
    ConfigDef("cleanup.policy", "delete", LIST, "log.cleanup.policy"),
    ConfigDef("compression.type", "producer", STRING, "compression.type"),
    ConfigDef("compression.gzip.level", "-1", INT, "compression.gzip.level"),
    ConfigDef("compression.lz4.level", "9", INT, "compression.lz4.level"),
    ConfigDef("compression.zstd.level", "3", INT, "compression.zstd.level"),
    ConfigDef("delete.retention.ms", "86400000", LONG, "log.cleaner.delete.retention.ms"),
    ConfigDef("file.delete.delay.ms", "60000", LONG, "log.segment.delete.delay.ms"),
    ConfigDef("flush.messages", "9223372036854775807", LONG, "log.flush.interval.messages"),
    ConfigDef("flush.ms", "9223372036854775807", LONG, "log.flush.interval.ms"),
    ConfigDef("follower.replication.throttled.replicas", "", LIST,
              "follower.replication.throttled.replicas"),
    ConfigDef("index.interval.bytes", "4096", INT, "log.index.interval.bytes"),
    ConfigDef("leader.replication.throttled.replicas", "", LIST,
              "leader.replication.throttled.replicas"),
    ConfigDef("local.retention.bytes", "-2", LONG, "log.local.retention.bytes"),
    ConfigDef("local.retention.ms", "-2", LONG, "log.local.retention.ms"),
    ConfigDef("max.compaction.lag.ms", "9223372036854775807", LONG,
              "log.cleaner.max.compaction.lag.ms"),
    ConfigDef("max.message.bytes", "1048588", INT, "message.max.bytes"),
    ConfigDef("message.timestamp.after.max.ms", "9223372036854775807", LONG,
              "log.message.timestamp.after.max.ms"),
    ConfigDef("message.timestamp.before.max.ms", "9223372036854775807", LONG,
              "log.message.timestamp.before.max.ms"),
    ConfigDef("message.timestamp.type", "CreateTime", STRING, "log.message.timestamp.type"),
    ConfigDef("min.cleanable.dirty.ratio", "0.5", DOUBLE, "log.cleaner.min.cleanable.ratio"),
    ConfigDef("min.compaction.lag.ms", "0", LONG, "log.cleaner.min.compaction.lag.ms"),
    ConfigDef("min.insync.replicas", "1", INT, "min.insync.replicas"),
    ConfigDef("preallocate", "false", BOOLEAN, "log.preallocate"),
    ConfigDef("remote.storage.enable", "false", BOOLEAN, None),
    ConfigDef("retention.bytes", "-1", LONG, "log.retention.bytes"),
    ConfigDef("retention.ms", _WEEK_MS, LONG, "log.retention.ms"),
    ConfigDef("segment.bytes", "1073741824", INT, "log.segment.bytes"),
    ConfigDef("segment.index.bytes", "10485760", INT, "log.index.size.max.bytes"),
    ConfigDef("segment.jitter.ms", "0", LONG, "log.roll.jitter.ms"),
    ConfigDef("segment.ms", _WEEK_MS, LONG, "log.roll.ms"),
    ConfigDef("unclean.leader.election.enable", "false", BOOLEAN,
              "unclean.leader.election.enable"),
]}

BROKER_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in [
    ConfigDef("auto.create.topics.enable", "true", BOOLEAN, read_only=True),
    ConfigDef("broker.id", None, INT, read_only=True),
    ConfigDef("node.id", None, INT, read_only=True),
    ConfigDef("compression.type", "producer", STRING),
    ConfigDef("default.replication.factor", "1", INT, read_only=True),
    ConfigDef("delete.topic.enable", "true", BOOLEAN, read_only=True),
    ConfigDef("log.cleanup.policy", "delete", LIST),
    ConfigDef("log.retention.bytes", "-1", LONG),
    ConfigDef("log.retention.hours", "168", INT, read_only=True),
    ConfigDef("log.retention.ms", None, LONG),
    ConfigDef("log.segment.bytes", "1073741824", INT),
    ConfigDef("log.message.timestamp.type", "CreateTime", STRING),
    ConfigDef("message.max.bytes", "1048588", INT),
    ConfigDef("min.insync.replicas", "1", INT),
    ConfigDef("num.partitions", "1", INT, read_only=True),
    ConfigDef("offsets.topic.replication.factor", "3", SHORT, read_only=True),
    ConfigDef("process.roles", "broker", LIST, read_only=True),
    ConfigDef("socket.request.max.bytes", "104857600", INT, read_only=True),
    ConfigDef("transaction.state.log.replication.factor", "3", SHORT, read_only=True),
    ConfigDef("transaction.max.timeout.ms", "900000", INT, read_only=True),
    ConfigDef("group.initial.rebalance.delay.ms", "3000", INT, read_only=True),
    ConfigDef("group.min.session.timeout.ms", "6000", INT, read_only=True),
    ConfigDef("group.max.session.timeout.ms", "1800000", INT, read_only=True),
    ConfigDef("unclean.leader.election.enable", "false", BOOLEAN),
]}
