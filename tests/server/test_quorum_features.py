"""DescribeQuorum and UpdateFeatures: the controller quorum (one voter, brokers as observers
with their acknowledged metadata offsets) and metadata.version changes written to the
metadata log as FeatureLevelRecords and reported by ApiVersions; raw codec for every
version, and kafka-python's describe_metadata_quorum / describe_features / update_features.
AddRaftVoter / RemoveRaftVoter: refused as a static quorum refuses them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.cluster import ManualClock
from mockbroker.cluster.kraft.controller import METADATA_VERSION
from mockbroker.cluster.kraft.features import CONTROLLER_DIRECTORY_ID, CONTROLLER_NODE_ID
from mockbroker.cluster.kraft.metadata_log import FEATURE_LEVEL
from mockbroker.cluster.log.log_dir_ids import log_dir_id
from mockbroker.embedded import MockCluster, MockClusterThread
from tests.support.admin import running_cluster
from tests.support.rawclient import RawClient, connect_broker

DESCRIBE_QUORUM, UPDATE_FEATURES, API_VERSIONS = 55, 57, 18
ADD_RAFT_VOTER, REMOVE_RAFT_VOTER = 80, 81
START_MS = 1_700_000_000_000
OLDER = METADATA_VERSION - 1
ALL_FAILED = "The update failed for all features since the following feature had an error: "


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with running_cluster(clock=ManualClock(START_MS), metadata_version=OLDER) as cluster:
        yield cluster


def _quorum_body(*partitions: tuple[str, int]) -> dict[str, Any]:
    return {"topics": [{"topic_name": t, "partitions": [{"partition_index": p}]}
                       for t, p in partitions]}


async def test_describe_quorum_every_version(mc: MockCluster) -> None:
    cluster = mc.cluster
    cluster.heartbeat_round()
    end = cluster.controller.log.end_offset
    async with await connect_broker(mc, 1) as client:
        for version in range(3):
            response = await client.request(DESCRIBE_QUORUM, version, _quorum_body(
                ("__cluster_metadata", 0), ("other", 0)))
            assert response.error_code == E.NONE
            [meta], [other] = (t.partitions for t in response.topics)
            assert (meta.error_code, meta.leader_id, meta.leader_epoch, meta.high_watermark) \
                == (E.NONE, CONTROLLER_NODE_ID, 1, end)
            voters = [(v.replica_id, v.log_end_offset) for v in meta.current_voters]
            observers = [(o.replica_id, o.log_end_offset) for o in meta.observers]
            assert (voters, observers) == ([(CONTROLLER_NODE_ID, end)],
                                           [(0, end), (1, end), (2, end)])
            assert (other.error_code, other.current_voters, other.observers) == (
                E.UNKNOWN_TOPIC_OR_PARTITION, [], [])
            if version >= 1:
                assert [(o.last_fetch_timestamp, o.last_caught_up_timestamp)
                        for o in meta.observers] == [(START_MS, START_MS)] * 3
            if version >= 2:
                assert meta.current_voters[0].replica_directory_id == CONTROLLER_DIRECTORY_ID
                # a static quorum's voter (kraft.version 0): no directory id, as Kafka
                assert CONTROLLER_DIRECTORY_ID == uuid.UUID(int=0)
                assert meta.observers[1].replica_directory_id == log_dir_id(
                    cluster.config.cluster_id, 1, cluster.config.log_dirs[0])
                assert [(n.node_id, list(n.listeners)) for n in response.nodes] == [
                    (CONTROLLER_NODE_ID, [])]
    # a paused broker's acknowledged offset stays behind
    cluster.pause_metadata(2)
    cluster.create_topic("t")
    cluster.heartbeat_round()
    async with await connect_broker(mc, 0) as client:
        response = await client.request(DESCRIBE_QUORUM, 1, _quorum_body(("__cluster_metadata", 0)))
        [meta] = response.topics[0].partitions
        new_end = cluster.controller.log.end_offset
        assert meta.high_watermark == new_end > end
        assert [(o.replica_id, o.log_end_offset, o.last_caught_up_timestamp)
                for o in meta.observers] == [(0, new_end, START_MS), (1, new_end, START_MS),
                                             (2, end, -1)]


ALL_FAILED = "The update failed for all features since the following feature had an error: "


async def finalized(client: RawClient) -> tuple[list[tuple[str, int, int]], int]:
    response = await client.request(API_VERSIONS, 3, {"client_software_name": "t",
                                                      "client_software_version": "1"})
    return ([(f.name, f.min_version_level, f.max_version_level)
             for f in response.finalized_features], response.finalized_features_epoch)


async def update(client: RawClient, version: int, *updates: dict[str, Any],
                 validate_only: bool = False) -> Any:
    return await client.request(UPDATE_FEATURES, version, {
        "timeout_ms": 1000, "feature_updates": list(updates), "validate_only": validate_only})


def upgrade(level: int, kind: int = 1, feature: str = "metadata.version") -> dict[str, Any]:
    return {"feature": feature, "max_version_level": level, "upgrade_type": kind,
            "allow_downgrade": kind != 1}


async def test_update_metadata_version(mc: MockCluster) -> None:
    async with await connect_broker(mc, 2) as client:
        assert (await finalized(client))[0] == [("metadata.version", OLDER, OLDER), ("transaction.version", 2, 2)]
        # validate_only: nothing written
        response = await update(client, 1, upgrade(METADATA_VERSION), validate_only=True)
        assert [(r.feature, r.error_code) for r in response.results] == [
            ("metadata.version", E.NONE)]
        assert (await update(client, 2, upgrade(METADATA_VERSION),
                             validate_only=True)).results == []
        assert (await finalized(client))[0] == [("metadata.version", OLDER, OLDER), ("transaction.version", 2, 2)]
        # atomic: one refused update fails the request, nothing is written
        for version in (1, 2):
            response = await update(client, version, upgrade(METADATA_VERSION),
                                    upgrade(1, feature="group.version"))
            assert (response.error_code, response.error_message, response.results) == (
                E.INVALID_UPDATE_VERSION,
                ALL_FAILED + "Invalid update version 1 for feature group.version. Local controller "
                f"{CONTROLLER_NODE_ID} does not support this feature.", [])
            assert (await finalized(client))[0] == [("metadata.version", OLDER, OLDER),
                                                    ("transaction.version", 2, 2)]
        response = await update(client, 1, upgrade(METADATA_VERSION))
        assert (response.error_code, response.error_message) == (E.NONE, None)
        assert [(r.feature, r.error_code, r.error_message) for r in response.results] == [
            ("metadata.version", E.NONE, "NONE")]
        record = mc.cluster.controller.log.records[-1]
        assert (record.record_type, record.data["name"], record.data["feature_level"]) == (
            FEATURE_LEVEL, "metadata.version", METADATA_VERSION)
        features, epoch = await finalized(client)
        assert (features, epoch) == (
            [("metadata.version", METADATA_VERSION, METADATA_VERSION), ("transaction.version", 2, 2)],
            record.offset)
        # v2: no per-feature results, the first failure is the top-level error
        response = await update(client, 2, upgrade(OLDER))
        assert (response.error_code, response.error_message) == (
            E.INVALID_UPDATE_VERSION, ALL_FAILED +
            f"Invalid update version {OLDER} for feature metadata.version. Can't downgrade the "
            "version of this feature without setting the upgrade type to either safe or unsafe "
            "downgrade.")
        response = await update(client, 2, upgrade(OLDER, kind=2))
        assert (response.error_code, response.error_message) == (
            E.INVALID_UPDATE_VERSION, ALL_FAILED +
            f"Invalid metadata.version {OLDER}. Refusing to perform the requested downgrade "
            "because it might delete metadata information.")
        response = await update(client, 0, upgrade(OLDER, kind=3))  # v0: allow_downgrade
        assert (response.error_code, response.error_message, response.results) == (
            E.INVALID_UPDATE_VERSION, ALL_FAILED +
            f"Invalid metadata.version {OLDER}. Refusing to perform the requested downgrade "
            "because it might delete metadata information.", [])
        response = await update(client, 1, upgrade(OLDER, kind=3))
        assert (response.error_code, response.error_message, response.results) == (
            E.INVALID_UPDATE_VERSION,
            ALL_FAILED + "Unsafe metadata downgrade is not supported in this version.", [])
        response = await update(client, 2, upgrade(METADATA_VERSION + 1))
        assert (response.error_code, response.error_message) == (
            E.INVALID_UPDATE_VERSION, ALL_FAILED +
            f"Invalid update version {METADATA_VERSION + 1} for feature metadata.version. "
            f"Local controller {CONTROLLER_NODE_ID} only supports versions 1-{METADATA_VERSION}")
        end = mc.cluster.controller.log.end_offset
        assert (await update(client, 2, upgrade(METADATA_VERSION))).error_code == E.NONE
        assert mc.cluster.controller.log.end_offset == end  # same level: nothing written


async def test_update_transaction_version(mc: MockCluster) -> None:
    """transaction.version changes as Kafka's controller decides them (what kafka-features
    upgrade / downgrade send): the finalized level again is a no-op, a downgrade needs a
    downgrade type and is then written, a level beyond 0-2 and a "downgrade" upwards fail."""
    tv = "transaction.version"
    async with await connect_broker(mc, 0) as client:
        response = await update(client, 1, upgrade(2, feature=tv))
        assert [(r.feature, r.error_code, r.error_message) for r in response.results] == [
            (tv, E.NONE, "NONE")]
        response = await update(client, 1, upgrade(1, kind=2, feature=tv), validate_only=True)
        assert [(r.error_code, r.error_message) for r in response.results] == [(E.NONE, "NONE")]
        assert ("transaction.version", 2, 2) in (await finalized(client))[0]
        failures = [
            (upgrade(1, feature=tv), f"Invalid update version 1 for feature {tv}. Can't "
             "downgrade the version of this feature without setting the upgrade type to either "
             "safe or unsafe downgrade."),
            (upgrade(3, feature=tv), f"Invalid update version 3 for feature {tv}. Local "
             f"controller {CONTROLLER_NODE_ID} only supports versions 0-2")]
        for body, message in failures:
            response = await update(client, 2, body)
            assert (response.error_code, response.error_message) == (
                E.INVALID_UPDATE_VERSION, ALL_FAILED + message)
        response = await update(client, 2, upgrade(1, kind=2, feature=tv))
        assert response.error_code == E.NONE
        assert ("transaction.version", 1, 1) in (await finalized(client))[0]
        response = await update(client, 2, upgrade(2, kind=2, feature=tv))
        assert (response.error_code, response.error_message) == (
            E.INVALID_UPDATE_VERSION, ALL_FAILED +
            f"Invalid update version 2 for feature {tv}. Can't downgrade to a newer version.")


@pytest.fixture
def threaded() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=2, metadata_version=OLDER,
                           clock=ManualClock(START_MS)) as mock:
        yield mock


@pytest.mark.clients
def test_kafka_python_quorum_and_features(threaded: MockClusterThread) -> None:
    from kafka.admin import KafkaAdminClient

    cluster = threaded.cluster
    admin = KafkaAdminClient(bootstrap_servers=threaded.bootstrap_servers)
    try:
        end = threaded.call(lambda: cluster.controller.log.end_offset)
        quorum = admin.describe_metadata_quorum()
        before = admin.describe_features()
        admin.update_features({"metadata.version": METADATA_VERSION})
        after = admin.describe_features()
        record = threaded.call(lambda: cluster.controller.log.records[-1])
    finally:
        admin.close()

    def replica(replica_id: int, directory: object) -> dict[str, Any]:
        return {"replica_id": replica_id,
                "replica_directory_id": None if directory is None else str(directory),
                "log_end_offset": end, "last_fetch_timestamp": START_MS,
                "last_caught_up_timestamp": START_MS}
    observers = [replica(b, log_dir_id(cluster.config.cluster_id, b, cluster.config.log_dirs[0]))
                 for b in (0, 1)]
    assert quorum == {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{
        "partition_index": 0, "leader_id": CONTROLLER_NODE_ID, "leader_epoch": 1,
        "high_watermark": end, "error": None,
        "current_voters": [replica(CONTROLLER_NODE_ID, None)],  # kafka-python: zero id
        "observers": observers}]}], "nodes": [{"node_id": CONTROLLER_NODE_ID, "listeners": []}]}
    # KIP-890: a 4.0 cluster finalizes transaction.version 2 beside metadata.version
    assert before == {"metadata.version": {"supported": (1, METADATA_VERSION),
                                           "finalized": (OLDER, OLDER),
                                           "finalized_epoch": end - 1},
                      "transaction.version": {"supported": (0, 2), "finalized": (2, 2),
                                              "finalized_epoch": end - 1}}
    assert record.record_type == FEATURE_LEVEL
    assert after == {"metadata.version": {"supported": (1, METADATA_VERSION),
                                          "finalized": (METADATA_VERSION, METADATA_VERSION),
                                          "finalized_epoch": record.offset},
                     "transaction.version": {"supported": (0, 2), "finalized": (2, 2),
                                             "finalized_epoch": record.offset}}


async def test_raft_voters_cannot_change_in_a_static_quorum(mc: MockCluster) -> None:
    """As Kafka with controller.quorum.voters (kraft.version 0): a wrong cluster id is
    INCONSISTENT_CLUSTER_ID, any other change UNSUPPORTED_VERSION; nothing is written."""
    end = mc.cluster.controller.log.end_offset
    add = {"cluster_id": None, "timeout_ms": 1000, "voter_id": 7,
           "voter_directory_id": uuid.uuid4(),
           "listeners": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093}]}
    remove = {"cluster_id": None, "voter_id": CONTROLLER_NODE_ID,
              "voter_directory_id": CONTROLLER_DIRECTORY_ID}
    async with await connect_broker(mc, 0) as client:
        for api_key, body, change in ((ADD_RAFT_VOTER, add, "adding"),
                                      (REMOVE_RAFT_VOTER, remove, "removing")):
            answer = await client.request(api_key, 0, body)
            assert (answer.error_code, answer.error_message) == (
                E.UNSUPPORTED_VERSION,
                f"Cluster doesn't support {change} voter because the kraft.version feature "
                "is 0")
            answer = await client.request(api_key, 0, dict(body, cluster_id="other"))
            assert (answer.error_code, answer.error_message) == (
                E.INCONSISTENT_CLUSTER_ID,
                f'The given id "other" doesn\'t match the cluster id '
                f'"{mc.cluster.config.cluster_id}"')
    assert mc.cluster.controller.log.end_offset == end
