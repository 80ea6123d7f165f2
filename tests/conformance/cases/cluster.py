"""The cluster APIs: DescribeCluster, ElectLeaders, partition reassignments,
DescribeTopicPartitions, DescribeLogDirs, AlterReplicaLogDirs, DescribeQuorum, UpdateFeatures,
UnregisterBroker and the KRaft voter APIs, with their error paths and alice's denials.
What belongs to the machine or moves with every write (log dir paths, disk sizes, the
quorum's offsets) is left out of the comparison."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conformance.cases.admin_support import OP_DESCRIBE, TOPIC, grant, plain, revoke
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases

ALTER_REPLICA_LOG_DIRS = 34
DESCRIBE_LOG_DIRS = 35
ELECT_LEADERS = 43
ALTER_REASSIGNMENTS = 45
LIST_REASSIGNMENTS = 46
DESCRIBE_QUORUM = 55
UPDATE_FEATURES = 57
DESCRIBE_CLUSTER = 60
UNREGISTER_BROKER = 64
DESCRIBE_TOPIC_PARTITIONS = 75
ADD_RAFT_VOTER = 80
REMOVE_RAFT_VOTER = 81


@cases("cluster/describe-cluster", [0, 1], api=DESCRIBE_CLUSTER)
async def describe_cluster(s: Session, version: int) -> None:
    body: dict[str, Any] = {"include_cluster_authorized_operations": True}
    if version >= 1:
        body["endpoint_type"] = 1
    await s.call(DESCRIBE_CLUSTER, version, body)
    await s.call(DESCRIBE_CLUSTER, version, body, user="alice", label="as alice")


@cases("cluster/describe-cluster-endpoint-type", [2, 3], api=DESCRIBE_CLUSTER)
async def describe_cluster_bad_endpoint_type(s: Session, endpoint_type: int) -> None:
    """endpoint_type 2 (controllers) asked of a broker: MISMATCHED_ENDPOINT_TYPE; an
    unknown type: UNSUPPORTED_ENDPOINT_TYPE."""
    await s.call(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                       "endpoint_type": endpoint_type})


def elect_body(version: int, election_type: int,
               partitions: list[tuple[str, list[int]]] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"topic_partitions": None if partitions is None else [
        {"topic": t, "partitions": p} for t, p in partitions], "timeout_ms": 10000}
    if version >= 1:
        body["election_type"] = election_type
    return body


@cases("cluster/elect-leaders", [0, 1, 2], api=ELECT_LEADERS)
async def elect_leaders(s: Session, version: int) -> None:
    """The preferred leader already leads: ELECTION_NOT_NEEDED; an unknown topic:
    UNKNOWN_TOPIC_OR_PARTITION."""
    topic = s.name()
    await s.create_topic(topic)
    await s.call(ELECT_LEADERS, version, elect_body(version, 0, [
        (topic, [0]), (s.name("missing"), [0])]))


@case("cluster/elect-leaders-unclean", api=ELECT_LEADERS)
async def elect_leaders_unclean(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic, 2)
    await s.call(ELECT_LEADERS, 2, elect_body(2, 1, [(topic, [0, 1, 5])]))


@case("cluster/elect-leaders-denied", api=ELECT_LEADERS)
async def elect_leaders_denied(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(ELECT_LEADERS, 2, elect_body(2, 0, [(topic, [0])]), user="alice")


def reassign_body(topic: str, partition: int, replicas: list[int] | None) -> dict[str, Any]:
    return {"timeout_ms": 10000, "topics": [{"name": topic, "partitions": [
        {"partition_index": partition, "replicas": replicas}]}]}


@case("cluster/reassign-errors", api=ALTER_REASSIGNMENTS)
async def reassign_errors(s: Session) -> None:
    """Unknown topic, unknown partition, an unknown broker, and cancelling a reassignment
    that is not in progress."""
    topic = s.name()
    node = s.target.node_ids[0]
    await s.create_topic(topic)
    await s.call(ALTER_REASSIGNMENTS, 0, reassign_body(s.name("missing"), 0, [node]),
                 label="unknown topic")
    await s.call(ALTER_REASSIGNMENTS, 0, reassign_body(topic, 3, [node]),
                 label="unknown partition")
    await s.call(ALTER_REASSIGNMENTS, 0, reassign_body(topic, 0, [node, 99]),
                 label="unknown broker")
    await s.call(ALTER_REASSIGNMENTS, 0, reassign_body(topic, 0, None), label="cancel")


@case("cluster/reassign-to-same-replicas", api=ALTER_REASSIGNMENTS)
async def reassign_to_same_replicas(s: Session) -> None:
    """Reassigning a partition to the replicas it has: accepted, nothing left in progress."""
    topic = s.name()
    await s.create_topic(topic)
    await s.call(ALTER_REASSIGNMENTS, 0, reassign_body(topic, 0, [s.target.node_ids[0]]))

    async def settled() -> bool:
        answer = await s.call(LIST_REASSIGNMENTS, 0, {"timeout_ms": 10000, "topics": [
            {"name": topic, "partition_indexes": [0]}]}, record=False)
        return answer is not None and not answer.topics

    await s.until(settled, what="no reassignment in progress")
    await s.call(LIST_REASSIGNMENTS, 0, {"timeout_ms": 10000, "topics": [
        {"name": topic, "partition_indexes": [0]}]}, label="listed")


@case("cluster/reassign-denied", api=ALTER_REASSIGNMENTS)
async def reassign_denied(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(ALTER_REASSIGNMENTS, 0, reassign_body(topic, 0, [s.target.node_ids[0]]),
                 user="alice")


@case("cluster/list-reassignments", api=LIST_REASSIGNMENTS)
async def list_reassignments(s: Session) -> None:
    """None in progress for an existing topic, an unknown one is left out."""
    topic = s.name()
    await s.create_topic(topic)
    await s.call(LIST_REASSIGNMENTS, 0, {"timeout_ms": 10000, "topics": [
        {"name": topic, "partition_indexes": [0]},
        {"name": s.name("missing"), "partition_indexes": [0]}]})
    await s.call(LIST_REASSIGNMENTS, 0, {"timeout_ms": 10000, "topics": [
        {"name": topic, "partition_indexes": [0]}]}, user="alice", label="as alice")


def topic_partitions_body(names: list[str], limit: int = 2000,
                          cursor: tuple[str, int] | None = None) -> dict[str, Any]:
    return {"topics": [{"name": n} for n in names], "response_partition_limit": limit,
            "cursor": None if cursor is None else
            {"topic_name": cursor[0], "partition_index": cursor[1]}}


@case("cluster/describe-topic-partitions", api=DESCRIBE_TOPIC_PARTITIONS)
async def describe_topic_partitions(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic, 3)
    await s.call(DESCRIBE_TOPIC_PARTITIONS, 0,
                 topic_partitions_body([topic, s.name("missing"), "bad name"]))


@case("cluster/describe-topic-partitions-paged", api=DESCRIBE_TOPIC_PARTITIONS)
async def describe_topic_partitions_paged(s: Session) -> None:
    """A partition limit of 2 over 3 partitions: a next cursor; then from the cursor."""
    topic = s.name()
    await s.create_topic(topic, 3)
    await s.call(DESCRIBE_TOPIC_PARTITIONS, 0, topic_partitions_body([topic], limit=2))
    await s.call(DESCRIBE_TOPIC_PARTITIONS, 0,
                 topic_partitions_body([topic], limit=2, cursor=(topic, 2)), label="cursor")


@case("cluster/describe-topic-partitions-denied", api=DESCRIBE_TOPIC_PARTITIONS)
async def describe_topic_partitions_denied(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(DESCRIBE_TOPIC_PARTITIONS, 0, topic_partitions_body([topic]), user="alice")


@case("cluster/describe-topic-partitions-granted", api=DESCRIBE_TOPIC_PARTITIONS)
async def describe_topic_partitions_granted(s: Session) -> None:
    """alice with DESCRIBE on one of two topics: that one is described, the other denied."""
    topic, other = s.name("mine"), s.name("other")
    await s.create_topic(topic, 2)
    await s.create_topic(other)
    await grant(s, TOPIC, topic, OP_DESCRIBE)
    try:
        await s.call(DESCRIBE_TOPIC_PARTITIONS, 0, topic_partitions_body([topic, other]),
                     user="alice")
    finally:
        await revoke(s, TOPIC, topic, OP_DESCRIBE)


@cases("cluster/describe-log-dirs-denied", [1, 4], api=DESCRIBE_LOG_DIRS)
async def describe_log_dirs_denied(s: Session, version: int) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(DESCRIBE_LOG_DIRS, version, {"topics": [
        {"topic": topic, "partitions": [0]}]}, user="alice")


def log_dirs_view(answer: Any) -> Any:
    """A DescribeLogDirs answer without what is the machine's (paths, disk sizes), the
    partitions of each topic by index (Kafka lists them in its log map's order)."""
    result = plain(answer)
    for log_dir in result["results"]:
        log_dir.pop("log_dir", None)
        log_dir.pop("total_bytes", None)
        log_dir.pop("usable_bytes", None)
        for topic in log_dir["topics"]:
            topic["partitions"].sort(key=lambda p: p["partition_index"])
    return result


async def describe_log_dirs(s: Session, version: int, topics: Any, *,
                            label: str | None = None) -> None:
    answer = await s.call(DESCRIBE_LOG_DIRS, version, {"topics": topics}, record=False)
    s.observe(label or f"{DESCRIBE_LOG_DIRS}v{version}",
              {"closed": True} if answer is None else log_dirs_view(answer))


@cases("cluster/describe-log-dirs", [1, 2, 3, 4], api=DESCRIBE_LOG_DIRS)
async def describe_log_dirs_topic(s: Session, version: int) -> None:
    """The one log dir with the partitions asked for (empty: size 0, no lag), and an
    unknown topic left out."""
    topic = s.name()
    await s.create_topic(topic, 2)

    async def logs_created() -> bool:  # a new leader creates its log a moment later
        answer = await s.call(DESCRIBE_LOG_DIRS, 4, {"topics": [
            {"topic": topic, "partitions": [0, 1]}]}, record=False)
        return answer is not None and sum(
            len(t.partitions) for d in answer.results for t in d.topics) == 2

    await s.until(logs_created, what="the partitions' logs")
    await describe_log_dirs(s, version, [{"topic": topic, "partitions": [0, 1, 7]},
                                         {"topic": s.name("missing"), "partitions": [0]}])


@case("cluster/alter-replica-log-dirs-unknown-dir", api=ALTER_REPLICA_LOG_DIRS)
async def alter_replica_log_dirs_unknown_dir(s: Session) -> None:
    """A path that is no log dir of the broker: LOG_DIR_NOT_FOUND for each partition."""
    topic = s.name()
    await s.create_topic(topic)
    await s.call(ALTER_REPLICA_LOG_DIRS, 2, {"dirs": [{"path": "/no/such/log/dir", "topics": [
        {"name": topic, "partitions": [0]}]}]})


@case("cluster/alter-replica-log-dirs-denied", api=ALTER_REPLICA_LOG_DIRS)
async def alter_replica_log_dirs_denied(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(ALTER_REPLICA_LOG_DIRS, 2, {"dirs": [{"path": "/no/such/log/dir", "topics": [
        {"name": topic, "partitions": [0]}]}]}, user="alice")


def quorum_body(topic: str = "__cluster_metadata", partition: int = 0) -> dict[str, Any]:
    return {"topics": [{"topic_name": topic, "partitions": [{"partition_index": partition}]}]}


def quorum_view(answer: Any) -> Any:
    """DescribeQuorum without offsets and times (they differ by every record written) nor
    observers (cluster/describe-quorum-observers): the errors and how many voters there
    are."""
    result = plain(answer)
    view: dict[str, Any] = {"error_code": result["error_code"],
                            "error_message": result.get("error_message"), "topics": []}
    for topic in result["topics"]:
        view["topics"].append({"topic_name": topic["topic_name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": p["error_code"],
             "error_message": p.get("error_message"),
             "voters": len(p["current_voters"])}
            for p in topic["partitions"]]})
    return view


@cases("cluster/describe-quorum", [0, 1, 2], api=DESCRIBE_QUORUM)
async def describe_quorum(s: Session, version: int) -> None:
    answer = await s.call(DESCRIBE_QUORUM, version, quorum_body(), record=False)
    s.observe("quorum", quorum_view(answer))


@case("cluster/describe-quorum-observers", api=DESCRIBE_QUORUM,
      known="mockbroker runs its controller as a node of its own, so its broker is an "
            "observer of the metadata quorum; the session's real Kafka is one combined "
            "broker+controller node, a voter with no observers (mockbroker/handlers/quorum.py)")
async def describe_quorum_observers(s: Session) -> None:
    answer = await s.call(DESCRIBE_QUORUM, 2, quorum_body(), record=False)
    assert answer is not None
    s.observe("observers", len(answer.topics[0].partitions[0].observers))


@cases("cluster/describe-quorum-unknown", ["topic", "partition"], api=DESCRIBE_QUORUM)
async def describe_quorum_unknown(s: Session, kind: str) -> None:
    body = quorum_body(s.name()) if kind == "topic" else quorum_body(partition=3)
    answer = await s.call(DESCRIBE_QUORUM, 2, body, record=False)
    s.observe("quorum", quorum_view(answer))


@case("cluster/describe-quorum-denied", api=DESCRIBE_QUORUM)
async def describe_quorum_denied(s: Session) -> None:
    await s.call(DESCRIBE_QUORUM, 2, quorum_body(), user="alice")


def features_body(version: int, updates: list[tuple[str, int]],
                  validate_only: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"timeout_ms": 10000, "feature_updates": [
        {"feature": name, "max_version_level": level,
         **({"allow_downgrade": False} if version == 0 else {"upgrade_type": 1})}
        for name, level in updates]}
    if version >= 1:
        body["validate_only"] = validate_only
    return body


@cases("cluster/update-features-unknown", [0, 1], api=UPDATE_FEATURES)
async def update_features_unknown(s: Session, version: int) -> None:
    """A feature the controller does not know: INVALID_UPDATE_VERSION."""
    await s.call(UPDATE_FEATURES, version, features_body(version, [("no.such.feature", 1)]))


@case("cluster/update-features-downgrade-refused", api=UPDATE_FEATURES)
async def update_features_downgrade_refused(s: Session) -> None:
    """metadata.version to level 1 with upgrade_type UPGRADE (validate_only): refused."""
    await s.call(UPDATE_FEATURES, 1, features_body(1, [("metadata.version", 1)]))


@case("cluster/update-features-denied", api=UPDATE_FEATURES)
async def update_features_denied(s: Session) -> None:
    await s.call(UPDATE_FEATURES, 1, features_body(1, [("no.such.feature", 1)]),
                 user="alice")


@case("cluster/unregister-broker", api=UNREGISTER_BROKER)
async def unregister_broker(s: Session) -> None:
    """Unregistering a broker id that is not registered, as alice and as a super user."""
    await s.call(UNREGISTER_BROKER, 0, {"broker_id": 77}, user="alice", label="as alice")
    await s.call(UNREGISTER_BROKER, 0, {"broker_id": 77})


def add_voter_body(cluster_id: str | None) -> dict[str, Any]:
    return {"cluster_id": cluster_id, "timeout_ms": 5000, "voter_id": 77,
            "voter_directory_id": uuid.uuid4(),
            "listeners": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 1}]}


def remove_voter_body(cluster_id: str | None) -> dict[str, Any]:
    return {"cluster_id": cluster_id, "voter_id": 77, "voter_directory_id": uuid.uuid4()}


@case("cluster/add-raft-voter", api=ADD_RAFT_VOTER)
async def add_raft_voter(s: Session) -> None:
    await raft_voter(s, ADD_RAFT_VOTER, add_voter_body)


@case("cluster/remove-raft-voter", api=REMOVE_RAFT_VOTER)
async def remove_raft_voter(s: Session) -> None:
    await raft_voter(s, REMOVE_RAFT_VOTER, remove_voter_body)


async def raft_voter(s: Session, api_key: int, body: Any) -> None:
    """As a client may send them to a broker of a static quorum (controller.quorum.voters,
    kraft.version 0): UNSUPPORTED_VERSION; a wrong cluster id: INCONSISTENT_CLUSTER_ID;
    alice: CLUSTER_AUTHORIZATION_FAILED."""
    await s.call(api_key, 0, body(None))
    await s.call(api_key, 0, body("not-this-cluster"), label="other cluster")
    await s.call(api_key, 0, body(None), user="alice", label="as alice")
