"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: topic and broker configs with
their values, defaults, sources, synonyms, documentation, types and flags; unknown and
invalid resources; every operation of the incremental API, invalid values, unknown names,
validate_only and the broker's dynamic configs.

Broker configs are compared by name from BROKER_CONFIGS: the ones that are the same on any
machine (log.dirs, listeners, ports, paths and node-id derived values are not among them;
min.insync.replicas and sasl.enabled.mechanisms have cases of their own).
Entries are compared sorted by name (admin_support.configs_by_name: Kafka's order is its
hash map's). Topic configs are compared in full except admin_support.UNCOMPARED_TOPIC_CONFIGS: another
engineer is bringing KIP-1030's bounds and defaults in line (segment.bytes' minimum,
message.timestamp.after.max.ms), and min.insync.replicas has a case of its own.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.cases.admin_support import (
    CONFIG_BROKER,
    CONFIG_BROKER_LOGGER,
    CONFIG_GROUP,
    CONFIG_TOPIC,
    OP_DESCRIBE_CONFIGS,
    TOPIC,
    call_named_node,
    configs_by_name,
    grant,
    node_name,
    plain,
    revoke,
    without_uncompared,
)
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases

DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
INCREMENTAL_ALTER_CONFIGS = 44
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
BROKER_VALIDATION_REASON = (
    "mockbroker refuses a broker config outside its table (INVALID_CONFIG); Kafka accepts an "
    "unknown broker key as a custom config (mockbroker/handlers/config_entries.py "
    "validate_broker_configs)")
GROUP_CONFIGS_REASON = ("mockbroker has no GROUP config resources (KIP-848 group configs): "
                        "INVALID_REQUEST where Kafka describes and validates them")
DOCS_REASON = ("mockbroker's config documentation is its own one-line prose; Kafka returns "
               "its ConfigDef documentation (mockbroker/cluster/configs/config_defs.py DOCS)")
BROKER_CONFIGS = [
    "num.partitions", "default.replication.factor", "auto.create.topics.enable",
    "log.retention.hours", "log.retention.ms", "log.retention.bytes", "log.segment.bytes",
    "message.max.bytes", "compression.type", "log.cleanup.policy",
    "offsets.topic.num.partitions", "transaction.state.log.num.partitions",
    "group.initial.rebalance.delay.ms", "delete.topic.enable",
    "unclean.leader.election.enable", "log.message.timestamp.type", "num.io.threads",
    "num.network.threads", "socket.request.max.bytes", "super.users",
    "group.max.session.timeout.ms", "group.min.session.timeout.ms",
    "replica.lag.time.max.ms", "auto.leader.rebalance.enable", "log.flush.interval.messages",
    "queued.max.requests", "connections.max.idle.ms", "ssl.keystore.password",
    "log.cleaner.threads", "max.connections", "broker.rack", "no.such.config",
]


def describe_body(resources: list[tuple[int, str, list[str] | None]], *,
                  synonyms: bool = False, documentation: bool = False) -> dict[str, Any]:
    return {"resources": [{"resource_type": t, "resource_name": n, "configuration_keys": k}
                          for t, n, k in resources],
            "include_synonyms": synonyms, "include_documentation": documentation}


async def describe_topic(s: Session, topic: str, version: int = 4, *,
                         synonyms: bool = False, documentation: bool = False,
                         keys: list[str] | None = None, user: str | None = None,
                         label: str | None = None) -> None:
    """DescribeConfigs of one topic, recorded without the KIP-1030 entries."""
    answer = await s.call(DESCRIBE_CONFIGS, version,
                          describe_body([(CONFIG_TOPIC, topic, keys)], synonyms=synonyms,
                                        documentation=documentation),
                          user=user, record=False)
    assert answer is not None
    result = configs_by_name(plain(answer))
    for resource in result["results"]:
        resource["configs"] = without_uncompared(resource["configs"])
    s.observe(label or f"{DESCRIBE_CONFIGS}v{version}", result)


async def describe_broker(s: Session, version: int = 4, *, synonyms: bool = False,
                          documentation: bool = False, keys: list[str] | None = None,
                          name: str | None = None, label: str | None = None,
                          user: str | None = None) -> None:
    keys = BROKER_CONFIGS if keys is None else keys
    await call_named_node(s, DESCRIBE_CONFIGS, version, describe_body(
        [(CONFIG_BROKER, node_name(s) if name is None else name, keys)],
        synonyms=synonyms, documentation=documentation), label=label, user=user)


# -- DescribeConfigs -------------------------------------------------------------------------

@cases("configs/describe-topic", range(1, 5), api=DESCRIBE_CONFIGS)
async def describe_topic_defaults(s: Session, version: int) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await describe_topic(s, topic, version)


@cases("configs/describe-topic-synonyms", [1, 4], api=DESCRIBE_CONFIGS)
async def describe_topic_synonyms(s: Session, version: int) -> None:
    topic = s.name()
    await s.create_topic(topic, configs={"retention.ms": "7200000", "cleanup.policy": "compact"})
    await describe_topic(s, topic, version, synonyms=True)


@cases("configs/describe-topic-documentation", [3, 4], api=DESCRIBE_CONFIGS,
       known=DOCS_REASON)
async def describe_topic_documentation(s: Session, version: int) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await describe_topic(s, topic, version, documentation=True,
                         keys=["retention.ms", "cleanup.policy", "compression.type",
                               "min.insync.replicas", "max.message.bytes"])


@case("configs/describe-topic-keys", api=DESCRIBE_CONFIGS)
async def describe_topic_keys(s: Session) -> None:
    """configuration_keys filters, an unknown key is left out; an empty list is all."""
    topic = s.name()
    await s.create_topic(topic, configs={"retention.bytes": "1048576"})
    await describe_topic(s, topic, keys=["retention.bytes", "no.such.config", "flush.ms"])
    await describe_topic(s, topic, keys=[], label="empty keys")


@case("configs/describe-topic-unknown", api=DESCRIBE_CONFIGS)
async def describe_topic_unknown(s: Session) -> None:
    await describe_topic(s, s.name("missing"))


@case("configs/describe-topic-invalid-name", api=DESCRIBE_CONFIGS)
async def describe_topic_invalid_name(s: Session) -> None:
    await describe_topic(s, "bad name")


@case("configs/describe-topic-denied", api=DESCRIBE_CONFIGS)
async def describe_topic_denied(s: Session) -> None:
    """alice without DESCRIBE_CONFIGS: TOPIC_AUTHORIZATION_FAILED; with it, the configs."""
    topic = s.name()
    await s.create_topic(topic)
    await describe_topic(s, topic, user="alice", keys=["retention.ms"])
    await grant(s, TOPIC, topic, OP_DESCRIBE_CONFIGS)
    try:
        await describe_topic(s, topic, user="alice", keys=["retention.ms"], label="granted")
    finally:
        await revoke(s, TOPIC, topic, OP_DESCRIBE_CONFIGS)


@cases("configs/describe-broker", range(1, 5), api=DESCRIBE_CONFIGS)
async def describe_broker_configs(s: Session, version: int) -> None:
    await describe_broker(s, version)


@case("configs/describe-broker-synonyms", api=DESCRIBE_CONFIGS)
async def describe_broker_synonyms(s: Session) -> None:
    await describe_broker(s, synonyms=True)


@case("configs/describe-broker-documentation", api=DESCRIBE_CONFIGS, known=DOCS_REASON)
async def describe_broker_documentation(s: Session) -> None:
    await describe_broker(s, documentation=True, keys=["num.partitions", "log.retention.ms",
                                                       "message.max.bytes"])


@cases("configs/describe-broker-bad-id", ["77", "abc", "-1"], api=DESCRIBE_CONFIGS)
async def describe_broker_bad_id(s: Session, name: str) -> None:
    """A broker id that is not the receiving broker's, or not a number: INVALID_REQUEST."""
    await describe_broker(s, name=name, keys=["num.partitions"])


@case("configs/describe-broker-defaults", api=DESCRIBE_CONFIGS)
async def describe_broker_defaults(s: Session) -> None:
    """The empty name: the cluster-wide dynamic defaults (none set here)."""
    await describe_broker(s, name="", keys=["num.partitions", "log.cleaner.threads"])


@case("configs/describe-broker-denied", api=DESCRIBE_CONFIGS)
async def describe_broker_denied(s: Session) -> None:
    await describe_broker(s, keys=["num.partitions"], user="alice")


@cases("configs/describe-unsupported-type", [0, 1, 3, 99], api=DESCRIBE_CONFIGS)
async def describe_unsupported_type(s: Session, resource_type: int) -> None:
    await s.call(DESCRIBE_CONFIGS, 4, describe_body([(resource_type, "x", None)]))


@case("configs/describe-broker-logger-bad-id", api=DESCRIBE_CONFIGS)
async def describe_broker_logger_bad_id(s: Session) -> None:
    await s.call(DESCRIBE_CONFIGS, 4, describe_body([(CONFIG_BROKER_LOGGER, "77", None)]))


@case("configs/describe-group", api=DESCRIBE_CONFIGS, known=GROUP_CONFIGS_REASON)
async def describe_group(s: Session) -> None:
    """A group's configs (KIP-848), for a group that does not exist yet."""
    await s.call(DESCRIBE_CONFIGS, 4, describe_body([(CONFIG_GROUP, s.name(), None)]))


@case("configs/describe-several", api=DESCRIBE_CONFIGS)
async def describe_several(s: Session) -> None:
    """Several resources in one request: each answered on its own."""
    topic = s.name()
    await s.create_topic(topic)
    await s.call(DESCRIBE_CONFIGS, 4, describe_body([
        (CONFIG_TOPIC, topic, ["retention.ms"]), (CONFIG_TOPIC, s.name("missing"), None),
        (CONFIG_TOPIC, "", None)]))


# -- AlterConfigs ----------------------------------------------------------------------------

def alter_body(resource_type: int, name: str, configs: dict[str, str | None],
               validate_only: bool = False) -> dict[str, Any]:
    return {"resources": [{"resource_type": resource_type, "resource_name": name,
                           "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
            "validate_only": validate_only}


@cases("configs/alter-topic", range(0, 3), api=ALTER_CONFIGS)
async def alter_topic(s: Session, version: int) -> None:
    """AlterConfigs replaces the topic's whole set of overrides."""
    topic = s.name()
    await s.create_topic(topic, configs={"retention.ms": "100000"})
    await s.call(ALTER_CONFIGS, version, alter_body(CONFIG_TOPIC, topic,
                                                    {"cleanup.policy": "compact"}))

    async def applied() -> bool:
        got = await s.call(DESCRIBE_CONFIGS, 4, describe_body(
            [(CONFIG_TOPIC, topic, ["cleanup.policy"])]), record=False)
        return got is not None and got.results[0].configs[0].value == "compact"

    await s.until(applied, what="the new config")
    await describe_topic(s, topic, keys=["retention.ms", "cleanup.policy"])


@case("configs/alter-validate-only", api=ALTER_CONFIGS)
async def alter_validate_only(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(ALTER_CONFIGS, 2, alter_body(CONFIG_TOPIC, topic, {"retention.ms": "5000"},
                                              validate_only=True))
    await describe_topic(s, topic, keys=["retention.ms"])


@cases("configs/alter-invalid", ["unknown", "bad-value", "bad-number", "null"],
       api=ALTER_CONFIGS)
async def alter_invalid(s: Session, kind: str) -> None:
    topic = s.name()
    await s.create_topic(topic)
    choices: dict[str, dict[str, str | None]] = {
        "unknown": {"no.such.config": "1"}, "bad-value": {"cleanup.policy": "bogus"},
        "bad-number": {"retention.ms": "x"}, "null": {"retention.ms": None}}
    configs = choices[kind]
    await s.call(ALTER_CONFIGS, 2, alter_body(CONFIG_TOPIC, topic, configs))


@case("configs/alter-unknown-topic", api=ALTER_CONFIGS)
async def alter_unknown_topic(s: Session) -> None:
    await s.call(ALTER_CONFIGS, 2, alter_body(CONFIG_TOPIC, s.name("missing"),
                                              {"retention.ms": "5000"}))


@case("configs/alter-denied", api=ALTER_CONFIGS)
async def alter_denied(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(ALTER_CONFIGS, 2, alter_body(CONFIG_TOPIC, topic, {"retention.ms": "5000"}),
                 user="alice")
    await call_named_node(s, ALTER_CONFIGS, 2, alter_body(
        CONFIG_BROKER, node_name(s), {"log.cleaner.threads": "2"}), user="alice",
        label="broker")


@case("configs/alter-broker-read-only", api=ALTER_CONFIGS)
async def alter_broker_read_only(s: Session) -> None:
    """A static broker config cannot be altered: INVALID_REQUEST (validate_only)."""
    await call_named_node(s, ALTER_CONFIGS, 2, alter_body(
        CONFIG_BROKER, node_name(s), {"num.io.threads": "4", "broker.id": "5"},
        validate_only=True))


@case("configs/alter-broker-dynamic", api=ALTER_CONFIGS)
async def alter_broker_dynamic(s: Session) -> None:
    """A per-broker dynamic config (validate_only so the broker is left as it was)."""
    await call_named_node(s, ALTER_CONFIGS, 2, alter_body(
        CONFIG_BROKER, node_name(s), {"log.cleaner.threads": "2"}, validate_only=True))


# -- IncrementalAlterConfigs ------------------------------------------------------------------

def incremental_body(resource_type: int, name: str, ops: list[tuple[str, int, str | None]],
                     validate_only: bool = False) -> dict[str, Any]:
    return {"resources": [{"resource_type": resource_type, "resource_name": name,
                           "configs": [{"name": n, "config_operation": op, "value": v}
                                       for n, op, v in ops]}],
            "validate_only": validate_only}


async def incremental(s: Session, topic: str, ops: list[tuple[str, int, str | None]], *,
                      version: int = 1, validate_only: bool = False,
                      user: str | None = None, label: str | None = None) -> Any:
    return await s.call(INCREMENTAL_ALTER_CONFIGS, version,
                        incremental_body(CONFIG_TOPIC, topic, ops, validate_only),
                        user=user, label=label)


async def until_value(s: Session, topic: str, name: str, value: str | None) -> None:
    async def matches() -> bool:
        got = await s.call(DESCRIBE_CONFIGS, 4, describe_body([(CONFIG_TOPIC, topic, [name])]),
                           record=False)
        return got is not None and got.results[0].configs[0].value == value

    await s.until(matches, what=f"{name}={value}")


@cases("configs/incremental-set-delete", [0, 1], api=INCREMENTAL_ALTER_CONFIGS)
async def incremental_set_delete(s: Session, version: int) -> None:
    topic = s.name()
    await s.create_topic(topic, configs={"retention.ms": "100000"})
    await incremental(s, topic, [("max.message.bytes", SET, "30000")], version=version)
    await until_value(s, topic, "max.message.bytes", "30000")
    await describe_topic(s, topic, keys=["retention.ms", "max.message.bytes"], label="set")
    await incremental(s, topic, [("retention.ms", DELETE, None)], version=version,
                      label="delete")
    await until_value(s, topic, "retention.ms", "604800000")
    await describe_topic(s, topic, keys=["retention.ms", "max.message.bytes"],
                         label="deleted", synonyms=True)


@case("configs/incremental-append-subtract", api=INCREMENTAL_ALTER_CONFIGS)
async def incremental_append_subtract(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await incremental(s, topic, [("cleanup.policy", APPEND, "compact")])
    await until_value(s, topic, "cleanup.policy", "delete,compact")
    await describe_topic(s, topic, keys=["cleanup.policy"], label="appended")
    await incremental(s, topic, [("cleanup.policy", SUBTRACT, "delete")], label="subtract")
    await until_value(s, topic, "cleanup.policy", "compact")
    await describe_topic(s, topic, keys=["cleanup.policy"], label="subtracted")
    await incremental(s, topic, [("cleanup.policy", APPEND, "compact")], label="again")
    await describe_topic(s, topic, keys=["cleanup.policy"], label="append existing")


@case("configs/incremental-append-non-list", api=INCREMENTAL_ALTER_CONFIGS)
async def incremental_append_non_list(s: Session) -> None:
    """APPEND / SUBTRACT on a config that is not a list: INVALID_CONFIG."""
    topic = s.name()
    await s.create_topic(topic)
    await incremental(s, topic, [("retention.ms", APPEND, "5")])
    await incremental(s, topic, [("retention.ms", SUBTRACT, "5")], label="subtract")


@cases("configs/incremental-invalid", ["unknown", "bad-value", "bad-number", "null-set",
                                       "bad-op", "duplicate", "delete-unknown"],
       api=INCREMENTAL_ALTER_CONFIGS)
async def incremental_invalid(s: Session, kind: str) -> None:
    topic = s.name()
    await s.create_topic(topic)
    choices: dict[str, list[tuple[str, int, str | None]]] = {
        "unknown": [("no.such.config", SET, "1")],
        "bad-value": [("cleanup.policy", SET, "bogus")],
        "bad-number": [("retention.ms", SET, "x")],
        "null-set": [("retention.ms", SET, None)],
        "bad-op": [("retention.ms", 7, "5")],
        "duplicate": [("retention.ms", SET, "5"), ("retention.ms", DELETE, None)],
        "delete-unknown": [("no.such.config", DELETE, None)],
    }
    ops = choices[kind]
    await incremental(s, topic, ops)


@case("configs/incremental-validate-only", api=INCREMENTAL_ALTER_CONFIGS)
async def incremental_validate_only(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await incremental(s, topic, [("retention.ms", SET, "5000")], validate_only=True)
    await describe_topic(s, topic, keys=["retention.ms"])


@case("configs/incremental-unknown-topic", api=INCREMENTAL_ALTER_CONFIGS)
async def incremental_unknown_topic(s: Session) -> None:
    await incremental(s, s.name("missing"), [("retention.ms", SET, "5000")])


@case("configs/incremental-denied", api=INCREMENTAL_ALTER_CONFIGS)
async def incremental_denied(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await incremental(s, topic, [("retention.ms", SET, "5000")], user="alice")
    await call_named_node(s, INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(
        CONFIG_BROKER, node_name(s), [("log.retention.ms", SET, "5000")], validate_only=True),
        user="alice", label="broker")


@case("configs/incremental-broker-dynamic", api=INCREMENTAL_ALTER_CONFIGS)
async def incremental_broker_dynamic(s: Session) -> None:
    """A per-broker dynamic config set and deleted again; the describe in between shows it
    as DYNAMIC_BROKER_CONFIG with its synonyms."""
    node = node_name(s)
    answer = await call_named_node(s, INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(
        CONFIG_BROKER, node, [("log.cleaner.threads", SET, "2")]))

    async def applied() -> bool:
        got = await s.call(DESCRIBE_CONFIGS, 4, describe_body(
            [(CONFIG_BROKER, node, ["log.cleaner.threads"])]), record=False)
        return got is not None and [c.value for c in got.results[0].configs] == ["2"]

    try:
        if answer is not None and answer.responses[0].error_code == 0:
            await s.until(applied, what="the broker config")
        await describe_broker(s, synonyms=True, keys=["log.cleaner.threads"], label="set")
    finally:
        await call_named_node(s, INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(
            CONFIG_BROKER, node, [("log.cleaner.threads", DELETE, None)]), label="delete")


@cases("configs/incremental-broker-invalid", ["read-only", "bad-value", "unknown"],
       api=INCREMENTAL_ALTER_CONFIGS,
       known=lambda kind: BROKER_VALIDATION_REASON if kind == "unknown" else None)
async def incremental_broker_invalid(s: Session, kind: str) -> None:
    choices: dict[str, list[tuple[str, int, str | None]]] = {
        "read-only": [("num.partitions", SET, "3")],
        "bad-value": [("log.cleaner.threads", SET, "many")],
        "unknown": [("no.such.config", SET, "1")],
    }
    ops = choices[kind]
    await call_named_node(s, INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(
        CONFIG_BROKER, node_name(s), ops, validate_only=True))


@case("configs/incremental-broker-default", api=INCREMENTAL_ALTER_CONFIGS)
async def incremental_broker_default(s: Session) -> None:
    """The cluster-wide default (empty name), validate_only."""
    await s.call(INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(
        CONFIG_BROKER, "", [("log.cleaner.threads", SET, "2")], validate_only=True))


@case("configs/incremental-broker-logger", api=INCREMENTAL_ALTER_CONFIGS)
async def incremental_broker_logger(s: Session) -> None:
    """A logger level: a valid level (validate_only), a bad level, a bad operation."""
    node = node_name(s)
    await call_named_node(s, INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(
        CONFIG_BROKER_LOGGER, node, [("root", SET, "DEBUG")], validate_only=True))
    await call_named_node(s, INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(
        CONFIG_BROKER_LOGGER, node, [("root", SET, "LOUD")], validate_only=True),
        label="bad level")
    await call_named_node(s, INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(
        CONFIG_BROKER_LOGGER, node, [("root", APPEND, "DEBUG")], validate_only=True),
        label="append")


@case("configs/incremental-group", api=INCREMENTAL_ALTER_CONFIGS, known=GROUP_CONFIGS_REASON)
async def incremental_group(s: Session) -> None:
    """A group config (KIP-848): a valid one, then one out of the broker's bounds."""
    group = s.name()
    await s.call(INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(
        CONFIG_GROUP, group, [("consumer.session.timeout.ms", SET, "50000")],
        validate_only=True))
    await s.call(INCREMENTAL_ALTER_CONFIGS, 1, incremental_body(
        CONFIG_GROUP, group, [("consumer.session.timeout.ms", SET, "1")],
        validate_only=True), label="out of range")


@case("configs/elr-cluster-min-isr", api=DESCRIBE_CONFIGS,
      known="Kafka 4.4 enables ELR (KIP-966) on a new cluster and its controller then writes a "
            "cluster-level min.insync.replicas (DYNAMIC_DEFAULT_BROKER_CONFIG); mockbroker "
            "emulates 4.0's features, without ELR, and has no such record "
            "(mockbroker/cluster/configs/config_defs.py)")
async def elr_cluster_min_isr(s: Session) -> None:
    """A topic's min.insync.replicas and the cluster-wide dynamic defaults."""
    topic = s.name()
    await s.create_topic(topic)
    await s.call(DESCRIBE_CONFIGS, 4, describe_body(
        [(CONFIG_TOPIC, topic, ["min.insync.replicas"]),
         (CONFIG_BROKER, "", ["min.insync.replicas"])], synonyms=True))


@case("configs/describe-broker-sasl-mechanisms", api=DESCRIBE_CONFIGS,
      known="mockbroker's broker configs do not list sasl.enabled.mechanisms: the SASL "
            "settings live with its listeners (mockbroker/server/sasl.py), not in the "
            "cluster's static broker config (mockbroker/cluster/configs/broker_properties.py)")
async def describe_broker_sasl_mechanisms(s: Session) -> None:
    await describe_broker(s, synonyms=True, keys=["sasl.enabled.mechanisms"])
