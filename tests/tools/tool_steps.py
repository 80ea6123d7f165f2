"""The steps tests/tools/test_kafka_tools.py takes with Kafka's command-line tools, the same
on mockbroker and on real Kafka: one `run_steps` call per target, in one ToolRunner JVM.

Each step is a tool call recorded under a key ("topics.create", ...); a few steps are
Python clients (confluent-kafka) that leave state for the tools to show: a transaction left
open, a consumer that stays in its group while the group is described. Every name starts
with "kt-" (the session's real Kafka serves other tests too); listings are filtered to
those names by the tests. Arguments use placeholders: {boot} the bootstrap servers, {broker}
the broker's node id, {dir} a directory of this target for the JSON files some tools read.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.kafka_tools import ToolResult, ToolSession

DEADLINE = 30.0  # seconds for a client step (a consumer's assignment, a transaction)
BOOT = ("--bootstrap-server", "{boot}")
TOPIC = "kt-topic"  # 3 partitions, then 4
DATA = "kt-data"  # 1 partition, the console producer's keyed records
TXN_TOPIC = "kt-txn-topic"
TIMES_TOPIC = "kt-times"  # records with the timestamps below, in one batch
TIMESTAMPS = (1700000001000, 1700000005000, 1700000003000, 1700000005000, 1700000002000)
GROUP, LIVE_GROUP, NEW_GROUP = "kt-group", "kt-live-group", "kt-848-group"
TXN_ID = "kt-txn"
RECORDS = "k1:v1\nk2:v2\nk3:v3\nk4:v4\nk5:v5\nk6:v6\n"


@dataclass
class Target:
    """One cluster the steps run against."""

    name: str
    bootstrap_servers: str
    node_id: int
    controller_id: int  # the KRaft controller (mockbroker's is not a broker)
    log_dir: str
    workdir: Path


def run_steps(target: Target) -> dict[str, ToolResult]:
    """Every step against `target`; the tool results by step key."""
    target.workdir.mkdir(parents=True, exist_ok=True)
    placeholders = {"{broker}": str(target.node_id), "{dir}": str(target.workdir)}
    _write_json_files(target)
    with ToolSession(target.bootstrap_servers, placeholders) as session:
        out: dict[str, ToolResult] = {}

        def run(key: str, tool: str, *args: str, stdin: str | None = None) -> None:
            out[key] = session.run(tool, *BOOT, *args, stdin=stdin)

        _topics(run)
        _configs(run)
        _acls(run)
        _produce_and_consume(run)
        _timestamps(run, target)
        _consumer_groups(run, target)
        _transactions(run, target)
        _cluster_tools(run)
        _reassignment(run)
        run("share-groups.list", "share-groups", "--list", "--state", "stable")
        _client_metrics(run)  # last: on mockbroker a subscription turns client telemetry on
        return out


def _topics(run: Any) -> None:
    run("topics.create", "topics", "--create", "--topic", TOPIC, "--partitions", "3",
        "--replication-factor", "1", "--config", "retention.ms=12345")
    run("topics.create-exists", "topics", "--create", "--topic", TOPIC, "--partitions", "1")
    run("topics.create-bad-config", "topics", "--create", "--topic", "kt-bad",
        "--partitions", "1", "--config", "segment.bytes=1024")
    run("topics.describe", "topics", "--describe", "--topic", TOPIC)
    run("topics.alter", "topics", "--alter", "--topic", TOPIC, "--partitions", "4")
    run("topics.describe-altered", "topics", "--describe", "--topic", TOPIC)
    run("topics.alter-fewer", "topics", "--alter", "--topic", TOPIC, "--partitions", "2")
    run("topics.describe-missing", "topics", "--describe", "--topic", "kt-missing")
    for name, partitions in ((DATA, "1"), (TXN_TOPIC, "1"), (TIMES_TOPIC, "1"),
                             ("kt-doomed", "2")):
        run(f"topics.create-{name}", "topics", "--create", "--topic", name,
            "--partitions", partitions, "--replication-factor", "1")
    run("topics.delete", "topics", "--delete", "--topic", "kt-doomed")
    run("topics.delete-missing", "topics", "--delete", "--topic", "kt-missing")
    run("topics.list", "topics", "--list", "--topic", "kt-.*")


def _configs(run: Any) -> None:
    topic = ("--entity-type", "topics", "--entity-name", TOPIC)
    run("configs.describe-topic", "configs", "--describe", *topic)
    run("configs.add-topic", "configs", "--alter", *topic, "--add-config",
        "cleanup.policy=compact,max.message.bytes=2000")
    run("configs.describe-added", "configs", "--describe", *topic)
    run("configs.delete-topic", "configs", "--alter", *topic, "--delete-config",
        "max.message.bytes")
    run("configs.describe-deleted", "configs", "--describe", *topic)
    run("configs.unknown-name", "configs", "--alter", *topic, "--add-config", "kt.nope=1")
    broker = ("--entity-type", "brokers", "--entity-name", "{broker}")
    run("configs.add-broker-cleaner", "configs", "--alter", *broker, "--add-config",
        "log.cleaner.threads=2")
    run("configs.describe-broker", "configs", "--describe", *broker)
    run("configs.delete-broker-cleaner", "configs", "--alter", *broker, "--delete-config",
        "log.cleaner.threads")
    run("configs.bad-broker-value", "configs", "--alter", "--entity-type", "brokers",
        "--entity-name", "{broker}", "--add-config", "message.max.bytes=-5")
    run("configs.bad-broker-default", "configs", "--alter", "--entity-type", "brokers",
        "--entity-default", "--add-config", "log.cleanup.policy=shred")
    run("configs.describe-missing-topic", "configs", "--describe", "--entity-type", "topics",
        "--entity-name", "kt-missing")
    user = ("--entity-type", "users", "--entity-name", "kt-alice")
    client = ("--entity-type", "clients", "--entity-name", "kt-client")
    run("configs.add-user-quota", "configs", "--alter", *user, "--add-config",
        "producer_byte_rate=1024,consumer_byte_rate=2048")
    run("configs.add-client-quota", "configs", "--alter", *client, "--add-config",
        "request_percentage=50")
    run("configs.describe-user-quota", "configs", "--describe", *user)
    run("configs.describe-client-quota", "configs", "--describe", *client)
    run("configs.delete-user-quota", "configs", "--alter", *user, "--delete-config",
        "producer_byte_rate")
    run("configs.describe-user-quota-deleted", "configs", "--describe", *user)
    run("configs.delete-quotas", "configs", "--alter", *user, "--delete-config",
        "consumer_byte_rate")
    run("configs.delete-client-quota", "configs", "--alter", *client, "--delete-config",
        "request_percentage")
    run("configs.describe-no-quota", "configs", "--describe", *user)


def _acls(run: Any) -> None:
    acl_topic = ("--topic", "kt-acl-topic")
    run("acls.add-read", "acls", "--add", "--allow-principal", "User:kt-alice",
        "--operation", "Read", "--operation", "Describe", *acl_topic)
    run("acls.add-prefixed-deny", "acls", "--add", "--deny-principal", "User:kt-bob",
        "--operation", "Write", "--topic", "kt-pre-", "--resource-pattern-type", "prefixed")
    run("acls.add-consumer", "acls", "--add", "--allow-principal", "User:kt-alice",
        "--consumer", *acl_topic, "--group", "kt-acl-group")
    run("acls.list-topic", "acls", "--list", *acl_topic)
    run("acls.list-principal", "acls", "--list", "--principal", "User:kt-alice")
    run("acls.remove-read", "acls", "--remove", "--allow-principal", "User:kt-alice",
        "--operation", "Read", *acl_topic, "--force")
    run("acls.list-topic-after-remove", "acls", "--list", *acl_topic)
    run("acls.remove-prefixed", "acls", "--remove", "--topic", "kt-pre-",
        "--resource-pattern-type", "prefixed", "--force")
    run("acls.list-prefixed-after-remove", "acls", "--list", "--topic", "kt-pre-",
        "--resource-pattern-type", "prefixed")
    run("acls.list-principal-bob", "acls", "--list", "--principal", "User:kt-bob")
    # leave no ACL behind on the session's real Kafka
    run("acls.remove-rest", "acls", "--remove", "--allow-principal", "User:kt-alice",
        "--operation", "Read", "--operation", "Describe", *acl_topic, "--group",
        "kt-acl-group", "--force")
    run("acls.list-principal-after-cleanup", "acls", "--list", "--principal", "User:kt-alice")


def _produce_and_consume(run: Any) -> None:
    run("console-producer.data", "console-producer", "--topic", DATA, "--reader-property",
        "parse.key=true", "--reader-property", "key.separator=:", stdin=RECORDS)
    run("console-producer.topic", "console-producer", "--topic", TOPIC, "--reader-property",
        "parse.key=true", "--reader-property", "key.separator=:", stdin=RECORDS)
    run("console-consumer.group", "console-consumer", "--topic", DATA, "--group", GROUP,
        "--from-beginning", "--max-messages", "6", "--timeout-ms", "20000",
        "--formatter-property", "print.key=true", "--formatter-property", "print.offset=true",
        "--formatter-property", "print.partition=true")
    run("console-consumer.offset", "console-consumer", "--topic", DATA, "--partition", "0",
        "--offset", "4", "--max-messages", "2", "--timeout-ms", "20000",
        "--formatter-property", "print.value=true", "--formatter-property", "print.offset=true")
    run("console-consumer.timeout", "console-consumer", "--topic", DATA, "--partition", "0",
        "--offset", "latest", "--max-messages", "1", "--timeout-ms", "1000")
    run("get-offsets.latest", "get-offsets", "--topic", TOPIC)
    run("get-offsets.earliest", "get-offsets", "--topic", f"{TOPIC}|{DATA}", "--time", "-2")
    run("get-offsets.partitions", "get-offsets", "--topic", TOPIC, "--partitions", "1,3")
    run("delete-records.data", "delete-records", "--offset-json-file", "{dir}/delete.json")
    run("get-offsets.after-delete", "get-offsets", "--topic", DATA, "--time", "-2")


def _timestamps(run: Any, target: Target) -> None:
    """Records with chosen timestamps: kafka-get-offsets by time and max timestamp."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "linger.ms": 50})
    for value, timestamp in zip((b"a", b"b", b"c", b"d", b"e"), TIMESTAMPS, strict=True):
        producer.produce(TIMES_TOPIC, value, partition=0, timestamp=timestamp)
    if producer.flush(DEADLINE) != 0:
        raise AssertionError(f"{target.name}: records to {TIMES_TOPIC} not acknowledged")
    run("get-offsets.max-timestamp", "get-offsets", "--topic", TIMES_TOPIC, "--time", "-3")
    run("get-offsets.by-time", "get-offsets", "--topic", TIMES_TOPIC, "--time", "1700000002500")
    run("get-offsets.after-all", "get-offsets", "--topic", TIMES_TOPIC, "--time",
        "1700000009000")
    # one batch with chosen timestamps: the same size on both (console producer batches
    # depend on the clock: their timestamp deltas are varints)
    run("log-dirs.describe", "log-dirs", "--describe", "--topic-list", TIMES_TOPIC)


def _consumer_groups(run: Any, target: Target) -> None:
    group = ("--group", GROUP)
    run("consumer-groups.list", "consumer-groups", "--list")
    run("consumer-groups.describe", "consumer-groups", "--describe", *group)
    run("consumer-groups.describe-members", "consumer-groups", "--describe", *group,
        "--members")
    run("consumer-groups.describe-state", "consumer-groups", "--describe", *group, "--state")
    run("consumer-groups.reset-dry-run", "consumer-groups", "--reset-offsets", *group,
        "--topic", DATA, "--to-earliest", "--dry-run")
    run("consumer-groups.reset-execute", "consumer-groups", "--reset-offsets", *group,
        "--topic", f"{DATA}:0", "--to-offset", "3", "--execute")
    run("consumer-groups.describe-reset", "consumer-groups", "--describe", *group)
    consumer = _live_consumer(target)
    try:
        live = ("--group", LIVE_GROUP)
        run("consumer-groups.live-members", "consumer-groups", "--describe", *live,
            "--members", "--verbose")
        run("consumer-groups.live-state", "consumer-groups", "--describe", *live, "--state")
        run("consumer-groups.live-delete", "consumer-groups", "--delete", *live)
    finally:
        consumer.close()
    # a KIP-848 group (group.protocol=consumer): ConsumerGroupHeartbeat and -Describe
    run("console-consumer.kip848", "console-consumer", "--topic", DATA, "--group", NEW_GROUP,
        "--from-beginning", "--max-messages", "4", "--timeout-ms", "20000",
        "--command-property", "group.protocol=consumer", "--formatter-property",
        "print.offset=true")
    new_group = ("--group", NEW_GROUP)
    run("consumer-groups.kip848-describe", "consumer-groups", "--describe", *new_group)
    run("consumer-groups.kip848-state", "consumer-groups", "--describe", *new_group, "--state")
    run("consumer-groups.list-types", "consumer-groups", "--list", "--type")
    run("consumer-groups.kip848-delete", "consumer-groups", "--delete", *new_group)
    run("consumer-groups.delete-offsets", "consumer-groups", "--delete-offsets", *group,
        "--topic", DATA)
    run("consumer-groups.delete", "consumer-groups", "--delete", *group)
    run("consumer-groups.delete-missing", "consumer-groups", "--delete", "--group",
        "kt-missing")
    run("consumer-groups.describe-missing", "consumer-groups", "--describe", "--group",
        "kt-missing")


def _live_consumer(target: Target) -> Any:
    """A confluent-kafka consumer in LIVE_GROUP, returned once it owns DATA's partition."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": target.bootstrap_servers,
                         "group.id": LIVE_GROUP, "client.id": "kt-live-client",
                         "enable.auto.commit": False, "session.timeout.ms": 10000})
    consumer.subscribe([DATA])
    deadline = time.monotonic() + DEADLINE
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    if not consumer.assignment():
        consumer.close()
        raise AssertionError(f"{target.name}: no assignment in {LIVE_GROUP} in {DEADLINE} s")
    return consumer


def _transactions(run: Any, target: Target) -> None:
    """One committed transaction and one left open (its start offset is 2: the first
    transaction's record and its commit marker come before it)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": target.bootstrap_servers,
                         "transactional.id": TXN_ID, "transaction.timeout.ms": 60000})
    producer.init_transactions(DEADLINE)
    producer.begin_transaction()
    producer.produce(TXN_TOPIC, b"committed", partition=0)
    producer.commit_transaction(DEADLINE)
    producer.begin_transaction()
    producer.produce(TXN_TOPIC, b"open", partition=0)
    if producer.flush(DEADLINE) != 0:
        raise AssertionError(f"{target.name}: the open transaction's record was not sent")
    partition = ("--topic", TXN_TOPIC, "--partition", "0")
    run("transactions.list", "transactions", "list")
    run("transactions.describe", "transactions", "describe", "--transactional-id", TXN_ID)
    run("transactions.describe-producers", "transactions", "describe-producers", *partition)
    run("transactions.find-hanging", "transactions", "find-hanging", "--broker-id",
        "{broker}")
    run("transactions.describe-missing", "transactions", "describe", "--transactional-id",
        "kt-missing")
    run("transactions.abort", "transactions", "abort", *partition, "--start-offset", "2")
    run("transactions.describe-producers-aborted", "transactions", "describe-producers",
        *partition)
    run("transactions.find-hanging-aborted", "transactions", "find-hanging", "--broker-id",
        "{broker}")


def _cluster_tools(run: Any) -> None:
    run("metadata-quorum.status", "metadata-quorum", "describe", "--status")
    run("metadata-quorum.replication", "metadata-quorum", "describe", "--replication")
    run("features.describe", "features", "describe")
    run("features.upgrade-same-level", "features", "upgrade", "--feature",
        "transaction.version=2")
    run("features.downgrade-dry-run", "features", "downgrade", "--feature",
        "transaction.version=1", "--dry-run")
    run("features.upgrade-beyond", "features", "upgrade", "--feature", "transaction.version=9",
        "--dry-run")
    run("features.upgrade-unknown", "features", "upgrade", "--feature", "kt.nope=1")
    run("features.version-mapping", "features", "version-mapping", "--release-version",
        "4.0")
    run("leader-election.preferred", "leader-election", "--election-type", "preferred",
        "--topic", TOPIC, "--partition", "0")
    run("leader-election.unclean", "leader-election", "--election-type", "unclean",
        "--path-to-json-file", "{dir}/election.json")
    run("leader-election.missing", "leader-election", "--election-type", "preferred",
        "--topic", "kt-missing", "--partition", "0")


def _reassignment(run: Any) -> None:
    run("reassign-partitions.generate", "reassign-partitions", "--generate",
        "--topics-to-move-json-file", "{dir}/move.json", "--broker-list", "{broker}")
    run("reassign-partitions.execute", "reassign-partitions", "--execute",
        "--reassignment-json-file", "{dir}/reassign.json")
    run("reassign-partitions.verify", "reassign-partitions", "--verify",
        "--reassignment-json-file", "{dir}/reassign.json")
    run("reassign-partitions.execute-throttled", "reassign-partitions", "--execute",
        "--reassignment-json-file", "{dir}/reassign.json", "--throttle", "1000000")
    run("reassign-partitions.verify-throttled", "reassign-partitions", "--verify",
        "--reassignment-json-file", "{dir}/reassign.json")
    run("reassign-partitions.cancel", "reassign-partitions", "--cancel",
        "--reassignment-json-file", "{dir}/reassign.json")
    run("reassign-partitions.list", "reassign-partitions", "--list")


def _client_metrics(run: Any) -> None:
    name = ("--name", "kt-metrics")
    run("client-metrics.alter", "client-metrics", "--alter", *name, "--metrics",
        "org.apache.kafka.producer.", "--interval", "1000", "--match", "client_id=kt-none")
    run("client-metrics.describe", "client-metrics", "--describe", *name)
    run("client-metrics.alter-again", "client-metrics", "--alter", *name, "--interval", "2000")
    run("client-metrics.list", "client-metrics", "--list")
    run("client-metrics.describe-again", "client-metrics", "--describe", *name)
    run("client-metrics.bad-interval", "client-metrics", "--alter", "--name", "kt-bad",
        "--metrics", "x", "--interval", "5")
    run("client-metrics.delete", "client-metrics", "--delete", *name)
    run("client-metrics.describe-deleted", "client-metrics", "--describe", *name)


def _write_json_files(target: Target) -> None:
    files: dict[str, Any] = {
        "delete.json": {"version": 1, "partitions": [
            {"topic": DATA, "partition": 0, "offset": 2}]},
        "election.json": {"partitions": [{"topic": TOPIC, "partition": 1},
                                         {"topic": DATA, "partition": 0}]},
        "move.json": {"version": 1, "topics": [{"topic": TOPIC}]},
        "reassign.json": {"version": 1, "partitions": [
            {"topic": TOPIC, "partition": 0, "replicas": [target.node_id]}]},
    }
    for name, content in files.items():
        (target.workdir / name).write_text(json.dumps(content))
