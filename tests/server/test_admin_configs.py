"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs over the wire, with exact answers,
and proof that changed values take effect (Produce reads them)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.cluster.clock import ManualClock
from mockbroker.cluster.configs.config_defs import (
    BROKER_CONFIGS,
    DOCS,
    HIDDEN_UNLESS_SET,
    TOPIC_CONFIGS,
)
from mockbroker.embedded import MockCluster
from tests.support.admin import (
    ALTER_CONFIGS,
    BROKER,
    BROKER_LOGGER,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
    TOPIC,
    by_name,
    create_topic,
    leader_client,
    produce,
    running_cluster,
)
from tests.support.rawclient import RawClient, connect_broker

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
CLOCK_START = 1_700_000_000_000


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    # every version mockbroker handles (DescribeConfigs v0 included: Kafka 4.0 starts at v1)
    async with running_cluster(clock=ManualClock(CLOCK_START), kafka_version="all") as cluster:
        yield cluster


async def describe(client: RawClient, resource_type: int, name: str,
                   keys: list[str] | None = None, *, version: int = 4, synonyms: bool = True,
                   docs: bool = False) -> Struct:
    response = await client.request(DESCRIBE_CONFIGS, version, {
        "resources": [{"resource_type": resource_type, "resource_name": name,
                       "configuration_keys": keys}],
        "include_synonyms": synonyms, "include_documentation": docs})
    [result] = response.results
    assert (result.resource_type, result.resource_name) == (resource_type, name)
    return result


def entry(name: str, value: str | None, source: int, config_type: int,
          synonyms: list[tuple[str, str | None, int]], *, read_only: bool = False,
          documentation: str | None = None) -> dict[str, Any]:
    return {"name": name, "value": value, "read_only": read_only, "is_default": False,
            "config_source": source, "is_sensitive": False,
            "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in synonyms],
            "config_type": config_type, "documentation": documentation}


def plain(config: Struct) -> dict[str, Any]:
    out = dict(config)
    out["synonyms"] = [dict(s) for s in config.synonyms]
    return out


async def incremental(client: RawClient, resource_type: int, name: str,
                      *ops: tuple[str, int, str | None], version: int = 1,
                      validate_only: bool = False) -> tuple[int, str | None]:
    response = await client.request(INCREMENTAL_ALTER_CONFIGS, version, {
        "resources": [{"resource_type": resource_type, "resource_name": name,
                       "configs": [{"name": n, "config_operation": op, "value": v}
                                   for n, op, v in ops]}],
        "validate_only": validate_only})
    [result] = response.responses
    assert (result.resource_type, result.resource_name) == (resource_type, name)
    return result.error_code, result.error_message


# -- DescribeConfigs -------------------------------------------------------------------------

async def test_describe_topic_v4(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t", 1, 3, {"retention.ms": "1000"})
    result = await describe(client, TOPIC, "t", docs=True)
    # Kafka answers a success with Errors.NONE's message, the empty string
    assert (result.error_code, result.error_message) == (0, "")
    configs = by_name(result.configs)
    assert sorted(configs) == sorted(set(TOPIC_CONFIGS) - HIDDEN_UNLESS_SET)
    assert plain(configs["retention.ms"]) == entry(
        "retention.ms", "1000", 1, 5, [("retention.ms", "1000", 1)],
        documentation=DOCS["retention.ms"])
    assert plain(configs["max.message.bytes"]) == entry(
        "max.message.bytes", "1048588", 5, 3, [("message.max.bytes", "1048588", 5)],
        documentation=DOCS["max.message.bytes"])
    assert plain(configs["remote.storage.enable"]) == entry(
        "remote.storage.enable", "false", 5, 1, [], documentation=DOCS["remote.storage.enable"])
    effective = mc.cluster.topic_config("t")
    assert {n: c.value for n, c in configs.items()} == effective


async def test_describe_topic_filter_and_flags(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t")
    result = await describe(client, TOPIC, "t", ["cleanup.policy", "no.such.key"],
                            synonyms=False)
    assert [plain(c) for c in result.configs] == [
        entry("cleanup.policy", "delete", 5, 7, [])]
    everything = await describe(client, TOPIC, "t", [])  # empty list: all, as Kafka
    assert len(everything.configs) == len(set(TOPIC_CONFIGS) - HIDDEN_UNLESS_SET)


async def test_describe_v0_v1(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t", 1, 3, {"cleanup.policy": "compact"})
    v0 = await describe(client, TOPIC, "t", ["cleanup.policy", "retention.ms"], version=0)
    assert [(c.name, c.value, c.is_default, c.read_only) for c in v0.configs] == [
        ("cleanup.policy", "compact", False, False), ("retention.ms", "604800000", True, False)]
    v1 = await describe(client, TOPIC, "t", ["cleanup.policy"], version=1)
    [policy] = v1.configs
    assert (policy.config_source, [dict(s) for s in policy.synonyms]) == (1, [
        {"name": "cleanup.policy", "value": "compact", "source": 1},
        {"name": "log.cleanup.policy", "value": "delete", "source": 5}])


async def test_describe_errors(mc: MockCluster, client: RawClient) -> None:
    resources = [(TOPIC, "nope"), (TOPIC, "bad name"), (99, "x"), (BROKER, "7"), (BROKER, "x"),
                 (BROKER_LOGGER, "")]
    response = await client.request(DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": t, "resource_name": n, "configuration_keys": None}
        for t, n in resources]})
    assert [(r.resource_type, r.resource_name, r.error_code, r.error_message, r.configs)
            for r in response.results] == [
        (TOPIC, "nope", E.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist.", []),
        (TOPIC, "bad name", E.INVALID_TOPIC_EXCEPTION, "Topic name 'bad name' is illegal.", []),
        (99, "x", E.INVALID_REQUEST, "Unsupported resource type: 99", []),
        (BROKER, "7", E.INVALID_REQUEST,
         "Unexpected broker id, expected one of [0, 1, 2] or empty string, but received 7", []),
        (BROKER, "x", E.INVALID_REQUEST, "Broker id must be an integer, but it is: x", []),
        (BROKER_LOGGER, "", E.INVALID_REQUEST, "Broker id must not be empty", []),
    ]


async def test_describe_broker(mc: MockCluster, client: RawClient) -> None:
    result = await describe(client, BROKER, "1")  # answered for the named broker
    configs = by_name(result.configs)
    assert sorted(configs) == sorted(BROKER_CONFIGS)
    assert plain(configs["broker.id"]) == entry("broker.id", "1", 4, 3, [("broker.id", "1", 4)],
                                                read_only=True)
    assert plain(configs["default.replication.factor"]) == entry(
        "default.replication.factor", "3", 4, 3,
        [("default.replication.factor", "3", 4), ("default.replication.factor", "1", 5)],
        read_only=True)
    assert plain(configs["log.retention.ms"]) == entry("log.retention.ms", None, 5, 5, [])
    assert plain(configs["min.insync.replicas"]) == entry(
        "min.insync.replicas", "1", 5, 3, [("min.insync.replicas", "1", 5)])
    assert (await describe(client, BROKER, "")).configs == []


async def test_cluster_wide_broker_config(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t")
    assert await incremental(client, BROKER, "", ("log.retention.ms", SET, "5000")) == (0, None)
    [default] = (await describe(client, BROKER, "")).configs
    assert plain(default) == entry("log.retention.ms", "5000", 3, 5,
                                   [("log.retention.ms", "5000", 3)])
    [per_broker] = (await describe(client, BROKER, "2", ["log.retention.ms"])).configs
    assert plain(per_broker) == entry("log.retention.ms", "5000", 3, 5,
                                      [("log.retention.ms", "5000", 3)])
    [topic] = (await describe(client, TOPIC, "t", ["retention.ms"])).configs
    assert plain(topic) == entry("retention.ms", "5000", 3, 5, [("log.retention.ms", "5000", 3)])
    assert mc.cluster.topic_config("t")["retention.ms"] == "5000"
    # a per-broker override wins over the cluster-wide one on that broker
    assert await incremental(client, BROKER, "2", ("log.retention.ms", SET, "7000")) == (0, None)
    [mine] = (await describe(client, BROKER, "2", ["log.retention.ms"])).configs
    assert (mine.value, mine.config_source, [s.source for s in mine.synonyms]) == (
        "7000", 2, [2, 3])


async def test_static_broker_settings() -> None:
    async with running_cluster(min_insync_replicas=2) as mc:
        async with await connect_broker(mc, 1) as client:
            await create_topic(client, "t")
            [topic] = (await describe(client, TOPIC, "t", ["min.insync.replicas"])).configs
            assert plain(topic) == entry(
                "min.insync.replicas", "2", 4, 3,
                [("min.insync.replicas", "2", 4), ("min.insync.replicas", "1", 5)])
            [broker] = (await describe(client, BROKER, "1", ["min.insync.replicas"])).configs
            assert (broker.value, broker.config_source) == ("2", 4)


async def test_describe_broker_logger(mc: MockCluster, client: RawClient) -> None:
    result = await describe(client, BROKER_LOGGER, "2")
    configs = by_name(result.configs)
    assert plain(configs["root"]) == entry("root", "INFO", 6, 0, [])
    assert {c.value for c in result.configs} == {"INFO"}


# -- AlterConfigs ----------------------------------------------------------------------------

async def alter(client: RawClient, resources: list[tuple[int, str, dict[str, str | None]]],
                *, version: int = 2, validate_only: bool = False) -> list[tuple[Any, ...]]:
    response = await client.request(ALTER_CONFIGS, version, {
        "resources": [{"resource_type": t, "resource_name": n,
                       "configs": [{"name": k, "value": v} for k, v in c.items()]}
                      for t, n, c in resources],
        "validate_only": validate_only})
    return [(r.resource_type, r.resource_name, r.error_code, r.error_message)
            for r in response.responses]


async def test_alter_configs_replaces_the_override_set(mc: MockCluster,
                                                      client: RawClient) -> None:
    await create_topic(client, "t", 1, 3, {"retention.ms": "1000", "cleanup.policy": "compact"})
    assert await alter(client, [(TOPIC, "t", {"max.message.bytes": "2000",
                                              "retention.ms": "1000"})]) == [
        (TOPIC, "t", 0, None)]
    for node in mc.cluster.brokers.values():
        assert node.image.topic_config("t") == {"max.message.bytes": "2000",
                                                 "retention.ms": "1000"}
    assert await alter(client, [(BROKER, "", {"log.message.timestamp.type": "LogAppendTime"})],
                       version=0) == [(BROKER, "", 0, None)]
    assert mc.cluster.broker_config(0)["log.message.timestamp.type"] == "LogAppendTime"
    assert mc.cluster.topic_config("t")["message.timestamp.type"] == "LogAppendTime"


async def test_alter_configs_errors(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t", 1, 3, {"retention.ms": "1000"})
    got = await alter(client, [
        (TOPIC, "nope", {"retention.ms": "1"}),
        (TOPIC, "nope2", {"retention.ms": "x"}),
        (TOPIC, "t", {"foo": "1"}),
        (TOPIC, "dup", {}),
        (TOPIC, "dup", {}),
        (BROKER_LOGGER, "0", {"root": "DEBUG"}),
        (BROKER, "", {"num.partitions": "4"}),
        (BROKER, "9", {"message.max.bytes": "10"}),
        (BROKER, "1", {"min.insync.replicas": "0"}),
        (7, "x", {}),
    ])
    assert got == [
        (TOPIC, "nope", E.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."),
        (TOPIC, "nope2", E.INVALID_CONFIG,
         "Invalid value x for configuration retention.ms: Not a number of type LONG"),
        (TOPIC, "t", E.INVALID_CONFIG, "Unknown topic config name: foo"),
        (TOPIC, "dup", E.INVALID_REQUEST, "Each resource must appear at most once."),
        (TOPIC, "dup", E.INVALID_REQUEST, "Each resource must appear at most once."),
        (BROKER_LOGGER, "0", E.INVALID_REQUEST, "Unknown resource type 8"),
        (BROKER, "", E.INVALID_REQUEST, "Cannot update these configs dynamically: "
                                        "num.partitions"),
        (BROKER, "9", E.INVALID_REQUEST,
         "Unexpected broker id, expected one of [0, 1, 2] or empty string, but received 9"),
        # a broker's bad value: INVALID_REQUEST (Kafka 4.4 wraps the ConfigException)
        (BROKER, "1", E.INVALID_REQUEST,
         "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
        (7, "x", E.INVALID_REQUEST, "Unknown resource type 7"),
    ]
    response = await client.request(ALTER_CONFIGS, 2, {"resources": [
        {"resource_type": TOPIC, "resource_name": "t", "configs": [
            {"name": "retention.ms", "value": "1"}, {"name": "retention.ms", "value": "2"}]},
        {"resource_type": TOPIC, "resource_name": "u", "configs": [
            {"name": "retention.ms", "value": None}]}]})
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (E.INVALID_REQUEST, "Error due to duplicate config keys"),
        (E.INVALID_REQUEST, "Null value not supported for : retention.ms")]
    assert await alter(client, [(TOPIC, "t", {})], validate_only=True) == [
        (TOPIC, "t", 0, None)]
    assert mc.cluster.image.topic_config("t") == {"retention.ms": "1000"}
    assert mc.cluster.image.configs.get((BROKER, ""), {}) == {}


# -- IncrementalAlterConfigs -----------------------------------------------------------------

async def test_incremental_operations(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t")

    def overrides() -> dict[str, str]:
        return mc.cluster.image.topic_config("t")

    assert await incremental(client, TOPIC, "t", ("cleanup.policy", APPEND, "compact"),
                             ("retention.ms", SET, "100")) == (0, None)
    assert overrides() == {"cleanup.policy": "delete,compact", "retention.ms": "100"}
    assert await incremental(client, TOPIC, "t", ("cleanup.policy", SUBTRACT, "delete"),
                             ("retention.ms", DELETE, None)) == (0, None)
    assert overrides() == {"cleanup.policy": "compact"}
    assert await incremental(client, TOPIC, "t", ("cleanup.policy", SET, "delete"),
                             validate_only=True) == (0, None)
    assert overrides() == {"cleanup.policy": "compact"}
    errors = [
        ((("retention.ms", APPEND, "5"),), E.INVALID_CONFIG,
         "Can't APPEND to key retention.ms because its type is not LIST."),
        ((("cleanup.policy", APPEND, "shred"),), E.INVALID_CONFIG,
         "Invalid value shred for configuration cleanup.policy: String must be one of: "
         "compact, delete"),
        # Kafka 4.4's controller fails on an unknown operation code, without a message
        ((("retention.ms", 7, "5"),), E.UNKNOWN_SERVER_ERROR, None),
        ((("retention.ms", SET, "1"), ("retention.ms", SET, "2")), E.INVALID_REQUEST,
         "Error due to duplicate config keys"),
        ((("retention.ms", SET, None),), E.INVALID_REQUEST,
         "Null value not supported for : retention.ms"),
    ]
    for ops, code, message in errors:
        assert await incremental(client, TOPIC, "t", *ops) == (code, message)
    # deleting a key that is no topic config succeeds (Kafka checks the configs that remain)
    assert await incremental(client, TOPIC, "t", ("nonsense", DELETE, None)) == (0, None)
    assert await incremental(client, TOPIC, "gone", ("retention.ms", SET, "1"), version=0) == (
        E.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'gone' does not exist.")
    assert overrides() == {"cleanup.policy": "compact"}


async def test_changed_topic_configs_change_produce(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t", 1, 3)
    async with await leader_client(mc, "t", 0) as leader:
        assert (await produce(leader, "t", 0, [b"x" * 200])).error_code == 0
        assert await incremental(client, TOPIC, "t", ("max.message.bytes", SET, "100")) == (
            0, None)
        too_big = await produce(leader, "t", 0, [b"x" * 200])
        assert too_big.error_code == E.MESSAGE_TOO_LARGE
        assert await incremental(client, TOPIC, "t", ("max.message.bytes", DELETE, None),
                                 ("message.timestamp.type", SET, "LogAppendTime")) == (0, None)
        stamped = await produce(leader, "t", 0, [b"x" * 200], timestamp=5)
        assert (stamped.error_code, stamped.base_offset, stamped.log_append_time_ms) == (
            0, 1, CLOCK_START)


async def test_cluster_wide_timestamp_type_changes_produce(mc: MockCluster,
                                                           client: RawClient) -> None:
    await create_topic(client, "t", 1, 3)
    await create_topic(client, "own", 1, 3, {"message.timestamp.type": "CreateTime"})
    assert await incremental(client, BROKER, "", ("log.message.timestamp.type", SET,
                                                  "LogAppendTime")) == (0, None)
    [entry_] = (await describe(client, TOPIC, "t", ["message.timestamp.type"])).configs
    assert (entry_.value, entry_.config_source) == ("LogAppendTime", 3)
    async with await leader_client(mc, "t", 0) as leader:
        assert (await produce(leader, "t", 0, [b"a"])).log_append_time_ms == CLOCK_START
    async with await leader_client(mc, "own", 0) as leader:  # the topic override wins
        assert (await produce(leader, "own", 0, [b"a"])).log_append_time_ms == -1


async def test_incremental_broker_errors(mc: MockCluster, client: RawClient) -> None:
    assert await incremental(client, BROKER, "", ("num.partitions", SET, "3")) == (
        E.INVALID_REQUEST, "Cannot update these configs dynamically: num.partitions")
    assert await incremental(client, BROKER, "0", ("no.such.setting", SET, "3")) == (
        E.INVALID_CONFIG, "Unknown broker config name: no.such.setting")
    assert await incremental(client, BROKER, "0", ("message.max.bytes", SET, "big")) == (
        E.INVALID_REQUEST, "Invalid value big for configuration message.max.bytes: Not a number "
                           "of type INT")
    assert await incremental(client, BROKER, "", ("log.cleanup.policy", SET, "shred")) == (
        E.INVALID_REQUEST, "Invalid value shred for configuration log.cleanup.policy: String "
                           "must be one of: compact, delete")
    assert await incremental(client, BROKER, "zero", ("message.max.bytes", SET, "1")) == (
        E.INVALID_REQUEST, "Broker id must be an integer, but it is: zero")
    assert mc.cluster.broker_config(0)["message.max.bytes"] == "1048588"


async def test_replication_throttle_rates(mc: MockCluster, client: RawClient) -> None:
    """Kafka's dynamic-only broker quota configs (the throttles kafka-reassign-partitions sets
    and clears): accepted per broker and cluster-wide, listed only once set, with no default
    synonym, and removed again."""
    leader, follower = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
    alter_dirs = "replica.alter.log.dirs.io.max.bytes.per.second"
    assert await incremental(client, BROKER, "1", (leader, SET, "1000")) == (0, None)
    assert await incremental(client, BROKER, "", (follower, SET, "2000"),
                             (alter_dirs, SET, "3")) == (0, None)
    configs = by_name((await describe(client, BROKER, "1")).configs)
    assert plain(configs[leader]) == entry(leader, "1000", 2, 5, [(leader, "1000", 2)])
    assert plain(configs[follower]) == entry(follower, "2000", 3, 5, [(follower, "2000", 3)])
    assert [plain(c) for c in (await describe(client, BROKER, "")).configs] == [
        entry(follower, "2000", 3, 5, [(follower, "2000", 3)]),
        entry(alter_dirs, "3", 3, 5, [(alter_dirs, "3", 3)])]
    assert leader not in by_name((await describe(client, BROKER, "0")).configs)
    assert await incremental(client, BROKER, "1", (leader, DELETE, None)) == (0, None)
    assert await incremental(client, BROKER, "", (follower, DELETE, None),
                             (alter_dirs, DELETE, None)) == (0, None)
    remaining = by_name((await describe(client, BROKER, "1")).configs)
    assert {leader, follower, alter_dirs} & set(remaining) == set()


async def test_incremental_broker_logger(mc: MockCluster, client: RawClient) -> None:
    async def levels(broker: str) -> dict[str, str]:
        return {c.name: c.value for c in (await describe(client, BROKER_LOGGER, broker)).configs}

    assert await incremental(client, BROKER_LOGGER, "1", ("kafka.server", SET, "DEBUG")) == (
        0, None)
    assert (await levels("1"))["kafka.server"] == "DEBUG"
    assert (await levels("0"))["kafka.server"] == "INFO"
    assert await incremental(client, BROKER_LOGGER, "1", ("root", SET, "WARN"),
                             ("kafka.server", DELETE, None)) == (0, None)
    assert set((await levels("1")).values()) == {"WARN"}
    assert await incremental(client, BROKER_LOGGER, "1", ("root", SET, "ERROR"),
                             validate_only=True) == (0, None)
    assert (await levels("1"))["root"] == "WARN"
    errors = [
        (("root", SET, "LOUD"), E.INVALID_CONFIG,
         "Cannot set the log level of root to LOUD as it is not a supported log level. Valid "
         "log levels are OFF, FATAL, ERROR, WARN, INFO, DEBUG, TRACE, ALL"),
        (("no.logger", SET, "INFO"), E.INVALID_CONFIG, "Logger no.logger does not exist!"),
        (("root", DELETE, None), E.INVALID_REQUEST,
         "Removing the log level of the root logger is not allowed"),
        (("root", APPEND, "INFO"), E.INVALID_REQUEST,
         "APPEND operation is not allowed for the BROKER_LOGGER resource"),
    ]
    for op, code, message in errors:
        assert await incremental(client, BROKER_LOGGER, "1", op) == (code, message)
    assert await incremental(client, BROKER_LOGGER, "5", ("root", SET, "INFO"), version=0) == (
        E.INVALID_REQUEST,
        "Unexpected broker id, expected one of [0, 1, 2] or empty string, but received 5")


async def test_log_cleaner_settings_change_as_kafka_allows(mc: MockCluster,
                                                           client: RawClient) -> None:
    """The log cleaner's reconfigurable settings (kafka-configs --alter --entity-type brokers
    --add-config log.cleaner.threads=2): accepted, shown with their defaults, and refused
    with the texts of a Kafka 4.4 broker (LogCleaner.validateReconfiguration)."""
    threads = "log.cleaner.threads"
    configs = by_name((await describe(client, BROKER, "0")).configs)
    assert plain(configs[threads]) == entry(threads, "1", 5, 3, [(threads, "1", 5)])
    assert plain(configs["log.cleaner.io.buffer.load.factor"]) == entry(
        "log.cleaner.io.buffer.load.factor", "0.9", 5, 6,
        [("log.cleaner.io.buffer.load.factor", "0.9", 5)])
    refusals = [
        ((threads, SET, "3"), "Invalid value org.apache.kafka.common.config.ConfigException: "
         "Log cleaner threads cannot be increased to more than double the current value 1 for "
         "configuration Invalid dynamic configuration"),
        ((threads, SET, "-1"), "Invalid value -1 for configuration log.cleaner.threads: Value "
         "must be at least 0"),
        (("log.cleaner.dedupe.buffer.size", SET, "1"), "requirement failed: "
         "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."),
        (("log.cleaner.io.buffer.load.factor", SET, "x"), "Invalid value x for configuration "
         "log.cleaner.io.buffer.load.factor: Not a number of type DOUBLE")]
    for op, message in refusals:
        assert await incremental(client, BROKER, "0", op) == (E.INVALID_REQUEST, message), op
    assert await incremental(client, BROKER, "0", (threads, SET, "2"),
                             ("log.cleaner.io.max.bytes.per.second", SET, "100.5")) == (0, None)
    [mine] = (await describe(client, BROKER, "0", [threads])).configs
    assert plain(mine) == entry(threads, "2", 2, 3, [(threads, "2", 2), (threads, "1", 5)])
