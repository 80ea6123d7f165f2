"""The Java AdminClient (kafka-clients 4.4.0) as a real client: every Admin call against
mockbroker and against the session's real Kafka, with the same outcome on both.

tests/jvm/src/main/java/io/mockbroker/jvmadmin/AdminProbe.java makes the calls (topics,
partitions, configs, records, log dirs, elections, reassignments, ACLs, quotas, SCRAM,
groups and their offsets, transactions and producers, features, the quorum, and the calls
mockbroker does not serve) and prints one observation per step, normalised where clusters
differ by nature (node, cluster, topic and producer ids, paths, timestamps). Both JVMs run
at once. What real Kafka 4.4.0 answers is java_admin_kafka.jsonl, exactly; mockbroker must
answer the same except for the differences listed in MOCK_DIFFERENCES, each with its
reason. A fixed difference fails here until its entry goes.

mockbroker runs as one broker with the authorizer on and User:ANONYMOUS a super user (the
real node is configured alike in tests/conftest.py), every API version it handles
advertised (kafka_version="all", the nearest to 4.4) and share groups enabled, as in 4.4.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from mockbroker.embedded import MockClusterThread
from mockbroker.handlers import advertised_versions
from tests.jvmclients.jvm_observations import observations, start
from tests.support.real_kafka import RealKafka

PREFIX = "jadmin"  # every topic, group, user, ACL and transactional id of the probe
TIMEOUT = 240.0  # seconds for one probe run (it takes ~6 s; each call is bounded in Java)
KAFKA_ANSWERS = Path(__file__).with_name("java_admin_kafka.jsonl")
UNSUPPORTED = {"error": "UnsupportedVersionException"}  # the Java client's for an API absent
WRITE_TXN_MARKERS = 27
HANDLED_APIS = {key for key, _low, _high in advertised_versions()}


def _min_isr(source: str, synonyms: bool) -> list[Any]:
    shown = ["min.insync.replicas=1 (DEFAULT_CONFIG)"] if synonyms else []
    return ["1", source, "alterable", "plain", "INT", shown]


# (step, path inside its outcome, what mockbroker answers, why it differs from Kafka 4.4.0)
MOCK_DIFFERENCES: list[tuple[str, tuple[str, ...], Any, str]] = [
    ("describeCluster.includeFencedBrokers", (), UNSUPPORTED,
     "DescribeCluster v2 (KIP-1073, Kafka 4.0: include_fenced_brokers, is_fenced) is not "
     "served: mockbroker's codec schemas stop at v1"),
    *[(step, ("ok", "min.insync.replicas"), _min_isr("DEFAULT_CONFIG", synonyms),
       "Kafka 4.1+ with eligible leader replicas (KIP-966, on by default) writes a "
       "cluster-wide min.insync.replicas at bootstrap, so a topic's default shows as "
       "DYNAMIC_DEFAULT_BROKER_CONFIG; mockbroker emulates 4.0 (no ELR): DEFAULT_CONFIG")
      for step, synonyms in (("describeConfigs.topic", True),
                             ("incrementalAlterConfigs.topic", False),
                             ("incrementalAlterConfigs.topicDelete", False))],
    ("describeLogDirs.afterDeleteRecords", ("ok",), [432],
     "DeleteRecords only moves Kafka's log start offset: the segment's bytes stay until the "
     "retention check deletes whole segments below it (never the active one), so the "
     "replica still has 720 bytes; mockbroker drops the 4 deleted batches at once "
     "(PartitionLog.delete_records_before), leaving 6 x 72 bytes"),
    ("describeConsumerGroups.unknown", (), {"ok": {
        "assignor": "", "authorizedOperations": ["ALTER_CONFIGS", "DELETE", "DESCRIBE",
                                                 "DESCRIBE_CONFIGS", "READ"],
        "coordinator": "self", "members": [], "simple": True, "state": "DEAD",
        "type": "CLASSIC"}},
     "DescribeGroups v6 (KIP-1043, Kafka 4.0) answers GROUP_ID_NOT_FOUND for an unknown "
     "group; mockbroker's codec schemas stop at v5, which describes it as Dead"),
    ("describeConsumerGroups.consumerProtocol", ("ok",), {
        "assignor": "uniform", "groupEpoch": 1, "targetAssignmentEpoch": 1,
        "members": [{"assignment": ["jadmin-g-0", "jadmin-g-1"], "clientId": "jadmin-kip848",
                     "memberEpoch": 1, "target": ["jadmin-g-0", "jadmin-g-1"],
                     "upgraded": None}],
        "state": "STABLE", "type": "CONSUMER"},
     "a new KIP-848 group: Kafka 4.4 answers the first heartbeat with member and group epoch "
     "2 (seen with a raw ConsumerGroupHeartbeat too), mockbroker with 1 (one bump, as 4.0's "
     "GroupMetadataManager); and ConsumerGroupDescribe is served at v0, so the member's "
     "`upgraded` (v1, KIP-1099) is unknown"),
    ("describeConsumerGroups.consumerProtocolLeft", ("ok",), {
        "assignor": "uniform", "groupEpoch": 2, "targetAssignmentEpoch": 2, "members": [],
        "state": "EMPTY", "type": "CONSUMER"},
     "the group epoch after the member left, one lower for the same reason"),
    *([("abortTransaction", (), UNSUPPORTED,
        "WriteTxnMarkers (27) is not served: the admin writes the abort marker itself "
        "(the tools branch adds it; then mockbroker agrees)")]
      if WRITE_TXN_MARKERS not in HANDLED_APIS else []),
    ("describeFeatures", ("ok",), {
        "epochKnown": True, "finalized": ["metadata.version", "transaction.version"],
        "supported": ["metadata.version", "transaction.version"]},
     "mockbroker's ApiVersions lists only metadata.version and transaction.version; 4.4 "
     "also has group.version, kraft.version, eligible.leader.replicas.version, "
     "share.version and streams.version (handlers/api_versions.py)"),
    ("describeMetadataQuorum", ("ok",), {
        "highWatermarkPositive": True, "leader": "node-3000", "leaderEpochPositive": True,
        "observers": 1, "voters": ["node-3000"]},
     "mockbroker models a dedicated controller (id 3000) with the broker an observer; the "
     "real node is a combined broker+controller, its own voter"),
    ("describeDelegationToken", (), UNSUPPORTED,
     "the delegation token APIs (38-41) are not served; Kafka with tokens off answers "
     "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on PLAINTEXT (UnsupportedByAuthentication)"),
    ("describeShareGroups.unknown", (), UNSUPPORTED,
     "ShareGroupDescribe is served at v0 (4.0 early access); 4.1+ clients need v1"),
    ("listShareGroupOffsets", (), UNSUPPORTED,
     "DescribeShareGroupOffsets (90) is not served"),
    ("alterShareGroupOffsets.unknown", (), UNSUPPORTED,
     "AlterShareGroupOffsets (91, KIP-932) is not served"),
    ("deleteShareGroupOffsets.unknown", (), UNSUPPORTED,
     "DeleteShareGroupOffsets (92, KIP-932) is not served"),
    ("describeStreamsGroups.unknown", (), UNSUPPORTED,
     "StreamsGroupDescribe (89, KIP-1071) is not served"),
]


def kafka_answers() -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for line in KAFKA_ANSWERS.read_text().splitlines():
        item = json.loads(line)
        answers[item.pop("step")] = item
    return answers


def mockbroker_answers(kafka: dict[str, Any]) -> dict[str, Any]:
    """Kafka's answers with mockbroker's known differences put in."""
    expected = copy.deepcopy(kafka)
    for step, path, value, _reason in MOCK_DIFFERENCES:
        if not path:
            expected[step] = value
            continue
        target = expected[step]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return expected


def test_every_admin_call_agrees_with_kafka(real_kafka: RealKafka) -> None:
    with MockClusterThread(
            brokers=1, kafka_version="all", authorizer=True, super_users="User:ANONYMOUS",
            broker_properties={
                "group.coordinator.rebalance.protocols": "classic,consumer,share"}) as mock:
        on_mock = start("io.mockbroker.jvmadmin.AdminProbe", mock.bootstrap_servers, PREFIX)
        on_kafka = start("io.mockbroker.jvmadmin.AdminProbe", real_kafka.bootstrap_servers,
                         PREFIX)
        mock_observed = observations(on_mock, TIMEOUT)
        kafka_observed = observations(on_kafka, TIMEOUT)
    kafka = kafka_answers()
    assert kafka_observed == kafka
    assert list(mock_observed) == list(kafka)  # the same steps in the same order
    expected = mockbroker_answers(kafka)
    assert {step: outcome for step, outcome in mock_observed.items()
            if outcome != expected[step]} == {}


def test_the_listed_differences_are_differences() -> None:
    """Each listed difference names a step and changes what Kafka answers there."""
    kafka = kafka_answers()
    expected = mockbroker_answers(kafka)
    for step, _path, _value, reason in MOCK_DIFFERENCES:
        assert step in kafka and reason
        assert expected[step] != kafka[step], step
