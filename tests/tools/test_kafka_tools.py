"""Kafka's own command-line tools against mockbroker and against real Kafka 4.4: the same
steps on both (tests/tools/tool_steps.py, one ToolRunner JVM per target, both targets at
once), then each tool's output compared after normalising what two clusters may differ in
(tests/support/kafka_tools.py: ids, addresses, node ids, times), plus exact checks of what
the output says (partition counts, config values, offsets, records).

Real Kafka is the session's `real_kafka` (its StandardAuthorizer has User:ANONYMOUS as super
user, so the plaintext listener may do everything and kafka-acls works); mockbroker runs
with the same settings (authorizer, super user, the real node's log directory name) and one
broker. A difference that is left out of a comparison is named where it is left out.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import pytest

from mockbroker.cluster.kraft.features import CONTROLLER_NODE_ID
from mockbroker.embedded import MockClusterThread
from tests.support.kafka_tools import ToolResult, normalize
from tests.support.real_kafka import RealKafka
from tests.tools.tool_steps import TXN_ID, Target, run_steps

STEPS_TIMEOUT = 400.0  # seconds for all steps on both targets
Outputs = dict[str, dict[str, ToolResult]]


@pytest.fixture(scope="module")
def outputs(real_kafka: RealKafka, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[Outputs, dict[str, Target]]]:
    workdir = tmp_path_factory.mktemp("kafka-tools")
    node = next(iter(real_kafka.members.values()))
    log_dir = str(node.directory / "data")
    with MockClusterThread(brokers=1, authorizer=True, super_users="User:ANONYMOUS",
                           log_dirs=(log_dir,)) as mock:
        targets = {
            "real": Target("real", real_kafka.bootstrap_servers, node.node_id, node.node_id,
                           log_dir, workdir / "real"),
            "mock": Target("mock", mock.bootstrap_servers, 0, CONTROLLER_NODE_ID, log_dir,
                           workdir / "mock"),
        }
        results: Outputs = {}
        errors: list[BaseException] = []

        def steps(name: str) -> None:
            try:
                results[name] = run_steps(targets[name])
            except BaseException as exc:  # reported below, in the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=steps, args=(name,)) for name in targets]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(STEPS_TIMEOUT)
        if errors:
            raise errors[0]
        assert all(not thread.is_alive() for thread in threads), "the steps did not finish"
        yield results, targets


def _text(result: ToolResult, target: Target) -> str:
    whole = f"exit {result.exit}\n{result.stdout}\n--stderr--\n{result.stderr}"
    return normalize(whole, node_id=target.node_id, controller_id=target.controller_id,
                     log_dir=target.log_dir)


def _pair(outputs: tuple[Outputs, dict[str, Target]], key: str) -> tuple[str, str]:
    results, targets = outputs
    return (_text(results["real"][key], targets["real"]),
            _text(results["mock"][key], targets["mock"]))


def _same(outputs: tuple[Outputs, dict[str, Target]], *keys: str) -> None:
    for key in keys:
        real, mock = _pair(outputs, key)
        assert mock == real, f"{key}: mockbroker's output differs from real Kafka's"


def _both(outputs: tuple[Outputs, dict[str, Target]], key: str) -> list[ToolResult]:
    results, _ = outputs
    return [results["real"][key], results["mock"][key]]


def _only_lines(text: str, pattern: str) -> str:
    """The lines of `text` that match `pattern` (listings of a Kafka other tests use too)."""
    return "\n".join(line for line in text.splitlines() if re.search(pattern, line))


def _squeezed(text: str) -> str:
    """Each line with its runs of spaces as one: a listing's columns are as wide as the
    longest name in it, and other tests' names are in the shared Kafka's listings."""
    return "\n".join(" ".join(line.split()) for line in text.splitlines())


def _acl_blocks(text: str) -> list[str]:
    """kafka-acls output as a sorted list of blocks: each resource line with its entries
    (sorted), each "already exists" line on its own. The tool prints resources and their
    entries from Java HashMaps and HashSets, whose order changes from one JVM to the next."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        entry = line.strip()
        if not entry:
            continue
        if entry.startswith("(principal=") and blocks:
            blocks[-1].append(entry)
        else:
            blocks.append([entry])
    return sorted("\n".join([block[0], *sorted(block[1:])]) for block in blocks)


def test_kafka_topics(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    _same(outputs, "topics.create", "topics.create-exists", "topics.create-bad-config",
          "topics.alter", "topics.alter-fewer", "topics.describe-missing",
          "topics.delete", "topics.delete-missing", "topics.list")
    for key, partitions in (("topics.describe", 3), ("topics.describe-altered", 4)):
        real, mock = _pair(outputs, key)
        # left out: real Kafka 4.4 lists min.insync.replicas=1 among the topic's configs
        # (the cluster-level dynamic default it writes at format time since ELR, 4.1); a
        # Kafka 4.0 cluster, as mockbroker emulates, has no such config
        assert real.replace("Configs: min.insync.replicas=1,", "Configs: ") == mock, key
        assert f"PartitionCount: {partitions}\tReplicationFactor: 1\tConfigs: " \
               "retention.ms=12345" in mock
        assert [line.split("\t")[2] for line in mock.splitlines() if "\tPartition: " in line] \
            == [f"Partition: {p}" for p in range(partitions)]
    for result in _both(outputs, "topics.list"):
        assert result.lines == ["kt-data", "kt-times", "kt-topic", "kt-txn-topic"]
    for result in _both(outputs, "topics.alter-fewer"):
        assert result.exit == 1
        assert "The topic kt-topic currently has 4 partition(s); 2 would not be an " \
               "increase." in result.stdout


def test_kafka_configs(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    _same(outputs, "configs.describe-topic", "configs.add-topic", "configs.describe-added",
          "configs.delete-topic", "configs.describe-deleted", "configs.unknown-name",
          "configs.describe-missing-topic", "configs.add-user-quota",
          "configs.add-client-quota", "configs.describe-user-quota",
          "configs.describe-client-quota", "configs.delete-user-quota",
          "configs.describe-user-quota-deleted", "configs.delete-quotas",
          "configs.delete-client-quota", "configs.describe-no-quota", "configs.bad-broker-value",
          "configs.bad-broker-default")
    _same(outputs, "configs.add-broker-cleaner", "configs.delete-broker-cleaner")
    real, mock = _pair(outputs, "configs.describe-broker")  # other tests' settings: left out
    # the value a Kafka broker reports is the one its cleaner applied, which may lag the
    # record by a moment: the synonyms (the stored layers) are compared, the value is exact
    # on mockbroker only
    applied = re.compile(r"log\.cleaner\.threads=\d+ sensitive")
    assert applied.sub("log.cleaner.threads=<applied> sensitive", _only_lines(
        mock, "^Dynamic|log.cleaner")) == applied.sub(
        "log.cleaner.threads=<applied> sensitive", _only_lines(
            real, "^Dynamic|log.cleaner")) == (
        "Dynamic configs for broker <node> are:\n  log.cleaner.threads=<applied> "
        "sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, "
        "DEFAULT_CONFIG:log.cleaner.threads=1}")
    assert "  log.cleaner.threads=2 sensitive=false" in mock
    for result in _both(outputs, "configs.bad-broker-value"):
        assert result.exit == 1
        assert "InvalidRequestException: Invalid value -5 for configuration " \
               "message.max.bytes: Value must be at least 0" in result.stderr
    for result in _both(outputs, "configs.describe-deleted"):
        assert result.lines == [
            "Dynamic configs for topic kt-topic are:",
            "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
            "cleanup.policy=compact, DEFAULT_CONFIG:log.cleanup.policy=delete}",
            "  retention.ms=12345 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
            "retention.ms=12345}"]
    for result in _both(outputs, "configs.describe-user-quota"):
        assert result.lines == ["Quota configs for user-principal 'kt-alice' are "
                                "consumer_byte_rate=2048.0, producer_byte_rate=1024.0"]
    for result in _both(outputs, "configs.describe-user-quota-deleted"):
        assert result.lines == ["Quota configs for user-principal 'kt-alice' are "
                                "consumer_byte_rate=2048.0"]


def test_kafka_acls(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    keys = ("acls.add-read", "acls.add-prefixed-deny", "acls.add-consumer", "acls.list-topic",
            "acls.list-principal", "acls.remove-read", "acls.list-topic-after-remove",
            "acls.remove-prefixed", "acls.list-prefixed-after-remove", "acls.list-principal-bob",
            "acls.remove-rest", "acls.list-principal-after-cleanup")
    for key in keys:
        real, mock = _pair(outputs, key)
        assert _acl_blocks(mock) == _acl_blocks(real), key
    for result in _both(outputs, "acls.list-topic-after-remove"):
        assert result.lines == [
            "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, "
            "name=kt-acl-topic, patternType=LITERAL)`:",
            "\t(principal=User:kt-alice, host=*, operation=DESCRIBE, permissionType=ALLOW)",
            ""]
    for key in ("acls.list-prefixed-after-remove", "acls.list-principal-after-cleanup"):
        for result in _both(outputs, key):
            assert result.stdout == ("" if key.endswith("remove") else
                                     "ACLs for principal `User:kt-alice`\n")


def test_console_producer_and_consumer(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    _same(outputs, "console-producer.data", "console-producer.topic",
          "console-consumer.group", "console-consumer.offset", "console-consumer.timeout")
    for result in _both(outputs, "console-consumer.group"):
        assert result.lines == [f"Partition:0\tOffset:{i}\tk{i + 1}\tv{i + 1}"
                                for i in range(6)]
        assert result.stderr.endswith("Processed a total of 6 messages\n")
    for result in _both(outputs, "console-consumer.offset"):
        assert result.lines == ["Offset:4\tv5", "Offset:5\tv6"]


def test_kafka_get_offsets_delete_records_log_dirs(
        outputs: tuple[Outputs, dict[str, Target]]) -> None:
    _same(outputs, "get-offsets.latest", "get-offsets.earliest", "get-offsets.partitions",
          "get-offsets.max-timestamp", "get-offsets.by-time", "get-offsets.after-all",
          "delete-records.data", "get-offsets.after-delete", "log-dirs.describe")
    real_latest = _both(outputs, "get-offsets.latest")[0].lines
    assert sum(int(line.rsplit(":", 1)[1]) for line in real_latest) == 6
    assert [line.rsplit(":", 1)[0] for line in real_latest] == [
        f"kt-topic:{p}" for p in range(4)]
    for result in _both(outputs, "get-offsets.max-timestamp"):
        assert result.lines == ["kt-times:0:1"]
    for result in _both(outputs, "get-offsets.by-time"):
        assert result.lines == ["kt-times:0:1"]
    for result in _both(outputs, "delete-records.data"):
        assert result.lines[-1] == "partition: kt-data-0\tlow_watermark: 2"
    for result in _both(outputs, "get-offsets.after-delete"):
        assert result.lines == ["kt-data:0:2"]
    real, _ = _pair(outputs, "log-dirs.describe")
    assert '{"partition":"kt-times-0","size":' in real and '"logDir":"<log-dir>"' in real


def test_kafka_consumer_groups(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    _same(outputs, "consumer-groups.describe", "consumer-groups.describe-members",
          "consumer-groups.describe-state", "consumer-groups.reset-dry-run",
          "consumer-groups.reset-execute", "consumer-groups.describe-reset",
          "consumer-groups.live-members", "consumer-groups.live-state",
          "consumer-groups.live-delete", "consumer-groups.delete-offsets",
          "consumer-groups.delete", "consumer-groups.delete-missing")
    _same(outputs, "console-consumer.kip848", "consumer-groups.kip848-describe",
          "consumer-groups.kip848-state", "consumer-groups.kip848-delete")
    for result in _both(outputs, "console-consumer.kip848"):
        assert result.lines == [f"Offset:{offset}\tv{offset + 1}" for offset in range(2, 6)]
    for result in _both(outputs, "consumer-groups.kip848-state"):
        assert result.lines[2].split()[-3:] == ["uniform", "Empty", "0"]
    real, mock = _pair(outputs, "consumer-groups.list-types")
    # the tool lists groups in the order ListGroups answers them, which is a hash map's
    # order in Kafka: the same rows, compared in sorted order
    assert sorted(_squeezed(_only_lines(mock, "^kt-")).splitlines()) \
        == sorted(_squeezed(_only_lines(real, "^kt-")).splitlines())
    assert sorted(line.split() for line in _only_lines(mock, "^kt-").splitlines()) == [
        ["kt-848-group", "Consumer"], ["kt-group", "Classic"], ["kt-live-group", "Classic"]]
    real, mock = _pair(outputs, "consumer-groups.list")
    assert _only_lines(mock, "^kt-") == _only_lines(real, "^kt-") == "kt-group"
    for result in _both(outputs, "consumer-groups.describe-reset"):
        assert result.lines[2].split() == ["kt-group", "kt-data", "0", "3", "6", "3", "-",
                                           "-", "-"]
    for result in _both(outputs, "consumer-groups.live-members"):
        row = result.lines[2].split()
        assert row[0] == "kt-live-group" and row[2:] == [
            "/127.0.0.1", "kt-live-client", "1", "-", "kt-data:0", "-", "-"]
    for result in _both(outputs, "consumer-groups.live-state"):
        assert result.lines[2].split()[-3:] == ["range", "Stable", "1"]


def test_kafka_transactions(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    _same(outputs, "transactions.describe", "transactions.describe-producers",
          "transactions.describe-missing", "transactions.abort",
          "transactions.describe-producers-aborted")
    for key in ("transactions.find-hanging", "transactions.find-hanging-aborted"):
        real, mock = _pair(outputs, key)  # other tests' producers may hang on real Kafka
        assert _only_lines(mock, "^Topic\t|kt-") == _only_lines(real, "^Topic\t|kt-") == (
            "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\t"
            "LastTimestamp\tDuration(min)\t"), key
    real, mock = _pair(outputs, "transactions.list")
    assert _only_lines(mock, f"^{TXN_ID}\t") == _only_lines(real, f"^{TXN_ID}\t")
    for result in _both(outputs, "transactions.describe"):
        row = result.lines[1].split("\t")
        assert [cell.strip() for cell in row[1:6]] == [TXN_ID, row[2].strip(), "0",
                                                       "Ongoing", "60000"]
        assert row[8].strip() == "kt-txn-topic-0"
    for result in _both(outputs, "transactions.describe-producers"):
        cells = [cell.strip() for cell in result.lines[1].split("\t")]
        assert cells[3] == "1" and cells[5] == "2"  # last sequence, open txn start offset
    for result in _both(outputs, "transactions.abort"):
        assert (result.exit, result.stdout, result.stderr) == (0, "", "")
    for result in _both(outputs, "transactions.describe-producers-aborted"):
        cells = [cell.strip() for cell in result.lines[1].split("\t")]
        assert cells[3] == "1" and cells[5] == "None"  # the transaction is closed here


def test_kafka_metadata_quorum(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    # left out: the quorum's shape. Real Kafka here is one combined broker+controller (the
    # voter, with its CONTROLLER endpoint, no observers); mockbroker has an isolated
    # controller (node 3000, no listener) and its brokers are observers. The lines that do
    # not depend on that are compared.
    real, mock = _pair(outputs, "metadata-quorum.status")
    # LeaderEpoch is left out too: the shared real node's Raft epoch depends on what the
    # session did to it before (mockbroker's static controller stays at 1)
    common = "^(ClusterId|MaxFollowerLag|MaxFollowerLagTimeMs):"
    assert _only_lines(mock, common) == _only_lines(real, common) == (
        "ClusterId:              <id>\n"
        "MaxFollowerLag:         0\nMaxFollowerLagTimeMs:   0")
    assert _only_lines(mock, "^LeaderEpoch:") == "LeaderEpoch:            1"
    assert re.fullmatch(r"LeaderEpoch: +[1-9][0-9]*", _only_lines(real, "^LeaderEpoch:"))
    for result in _both(outputs, "metadata-quorum.replication"):
        assert result.lines[0].split("\t")[:6] == [
            "NodeId", "DirectoryId           ", "LogEndOffset", "Lag", "LastFetchTimestamp",
            "LastCaughtUpTimestamp"]
        assert result.lines[1].split("\t")[1].strip() == "AAAAAAAAAAAAAAAAAAAAAA"  # static
        assert result.lines[1].split("\t")[3].strip() == "0"
        assert result.lines[1].split("\t")[6].strip() == "Leader"


def test_kafka_features(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    _same(outputs, "features.version-mapping", "features.upgrade-same-level",
          "features.downgrade-dry-run", "features.upgrade-beyond", "features.upgrade-unknown")
    assert _pair(outputs, "features.upgrade-unknown")[1] == (
        "exit 1\nCould not upgrade kt.nope to 1. The update failed for all features since the "
        "following feature had an error: Invalid update version 1 for feature kt.nope. "
        "Local controller <controller> does not support this feature.\n\n--stderr--\n"
        "1 out of 1 operation(s) failed.\n")
    for result in _both(outputs, "features.upgrade-same-level"):
        assert (result.exit, result.lines) == (0, ["transaction.version was upgraded to 2."])
    for result in _both(outputs, "features.downgrade-dry-run"):
        assert (result.exit, result.lines) == (0, ["transaction.version can be downgraded "
                                                   "to 1."])
    # left out: the other features (mockbroker finalizes only metadata.version, at 3.9-IV0,
    # and transaction.version; Kafka 4.4 also group.version, kraft.version, share.version,
    # streams.version and eligible.leader.replicas.version)
    real, mock = _pair(outputs, "features.describe")
    line = "^Feature: transaction.version "
    assert re.sub(r"Epoch: \d+", "Epoch: <n>", _only_lines(mock, line)) == re.sub(
        r"Epoch: \d+", "Epoch: <n>", _only_lines(real, line))
    assert "FinalizedVersionLevel: 2 " in _only_lines(mock, line)


def test_kafka_leader_election_and_reassignment(
        outputs: tuple[Outputs, dict[str, Target]]) -> None:
    _same(outputs, "leader-election.preferred", "leader-election.unclean",
          "leader-election.missing", "reassign-partitions.generate",
          "reassign-partitions.execute", "reassign-partitions.verify",
          "reassign-partitions.execute-throttled", "reassign-partitions.verify-throttled",
          "reassign-partitions.cancel", "reassign-partitions.list")
    for result in _both(outputs, "reassign-partitions.verify-throttled"):
        assert result.exit == 0
        assert result.lines[1] == "Reassignment of partition kt-topic-0 is completed."
        assert result.lines[-1] == "Clearing topic-level throttles on topic kt-topic"
    for result in _both(outputs, "leader-election.unclean"):
        assert result.lines == ["Valid replica already elected for partitions kt-data-0, "
                                "kt-topic-1"]
    for result in _both(outputs, "reassign-partitions.list"):
        assert result.lines == ["No partition reassignments found."]


def test_kafka_client_metrics(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    _same(outputs, "client-metrics.alter", "client-metrics.describe",
          "client-metrics.alter-again", "client-metrics.describe-again",
          "client-metrics.bad-interval", "client-metrics.delete",
          "client-metrics.describe-deleted")
    real, mock = _pair(outputs, "client-metrics.list")
    assert _only_lines(mock, "kt-") == _only_lines(real, "kt-") == "kt-metrics"
    for result in _both(outputs, "client-metrics.describe-again"):
        assert result.lines == ["Client metrics configs for kt-metrics are:",
                                "  interval.ms=2000", "  match=client_id=kt-none",
                                "  metrics=org.apache.kafka.producer."]


def test_kafka_share_groups(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    # left out: describing, resetting and deleting share groups, and the console share
    # consumer: Kafka 4.4's clients need the KIP-932 APIs at v1 (ShareGroupHeartbeat,
    # ShareGroupDescribe, ShareFetch, ShareAcknowledge) and DescribeShareGroupOffsets /
    # AlterShareGroupOffsets / DeleteShareGroupOffsets; mockbroker has the v0 (4.0 early
    # access) APIs only
    real, mock = _pair(outputs, "share-groups.list")  # only the header: no kt- share group
    assert _only_lines(mock, "^GROUP|kt-") == _only_lines(real, "^GROUP|kt-") == (
        "GROUP           STATE")
    assert mock.startswith("exit 0\n") and real.startswith("exit 0\n")


def test_the_runner_reports_every_step(outputs: tuple[Outputs, dict[str, Target]]) -> None:
    results, _ = outputs
    assert list(results["mock"]) == list(results["real"])
    assert len(results["real"]) >= 80
    assert not any(result.millis > 30_000 for result in results["mock"].values())
