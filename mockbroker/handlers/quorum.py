"""DescribeQuorum (key 55) v0-2, UpdateFeatures (key 57) v0-2, AddRaftVoter (key 80) and
RemoveRaftVoter (key 81) v0.

Any broker accepts them and answers for the controller, as KRaft brokers forward them
(cluster/kraft/features.py describes the quorum and decides feature changes).

DescribeQuorum: the partition __cluster_metadata-0 gets the single voter (the controller),
its leader epoch, the high watermark (the metadata log end offset) and every running broker
as an observer with the log end offset it acknowledged; v1 adds fetch and caught-up times
(the controller's own at the clock's now, a broker's at its last heartbeat, which caught up
only if the broker was at the log end); v2 adds directory ids and the voters' nodes (the
controller has no listener clients could use, so its listener list is empty). Any other
topic or partition named: UNKNOWN_TOPIC_OR_PARTITION on each, the other fields at their
defaults, as Kafka's Raft client answers (and no nodes when nothing was described).
Successes carry Errors.NONE's message, "" (v2).

UpdateFeatures: metadata.version, and transaction.version where the emulated release has
it (EndTxn v5 advertised, as ApiVersions shows the feature); all or nothing, as Kafka 4's controller decides it: the first update that
fails fails the request (its error at the top level, with Kafka's "The update failed for
all features since ..." message, and no per-feature results), and nothing is written;
otherwise every update is written (validate_only, v1+: none) and v0-1 list each feature
with NONE (message "NONE", as Kafka's ApiError of NONE has it), v2 none. v0 expresses a
downgrade with allow_downgrade (a safe downgrade).

AddRaftVoter / RemoveRaftVoter (KIP-853): mockbroker's controller quorum is static (one
voter, as a Kafka quorum configured with controller.quorum.voters, kraft.version 0), so, as
Kafka answers such a quorum: a cluster id that is not this cluster's is
INCONSISTENT_CLUSTER_ID, anything else UNSUPPORTED_VERSION ("... because the kraft.version
feature is 0"). Both need ALTER on the cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import ClusterError
from mockbroker.cluster.internal_topics import METADATA_TOPIC
from mockbroker.cluster.kraft.controller import (
    METADATA_VERSION,
    TRANSACTION_VERSION_FEATURE,
    TRANSACTION_VERSION_LEVEL,
)
from mockbroker.cluster.kraft.features import (
    CONTROLLER_DIRECTORY_ID,
    CONTROLLER_NODE_ID,
    SAFE_DOWNGRADE,
    UPGRADE,
    check_feature_update,
    supported_features,
)
from mockbroker.cluster.log.log_dir_ids import log_dir_id
from mockbroker.handlers.api_versions import END_TXN_KEY, END_TXN_TV2_VERSION
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.add_raft_voter import AddRaftVoterRequest
    from kafka_protocol_codec.generated.describe_quorum import DescribeQuorumRequest
    from kafka_protocol_codec.generated.remove_raft_voter import RemoveRaftVoterRequest
    from kafka_protocol_codec.generated.update_features import UpdateFeaturesRequest

ALL_FAILED = "The update failed for all features since the following feature had an error: "


@handler(55, 0, 2)
def handle_describe_quorum(req: DescribeQuorumRequest, ctx: RequestContext) -> dict[str, Any]:
    topics: list[dict[str, Any]] = []
    for topic in req.topics:
        partitions = []
        for part in topic.partitions:
            if topic.topic_name == METADATA_TOPIC and part.partition_index == 0:
                partitions.append(_metadata_partition(ctx))
            else:
                partitions.append({  # the other fields at their defaults, as Kafka's
                    "partition_index": part.partition_index,
                    "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "error_message": "This server does not host this topic-partition.",
                    "leader_id": 0, "leader_epoch": 0, "high_watermark": 0,
                    "current_voters": [], "observers": []})
        topics.append({"topic_name": topic.topic_name, "partitions": partitions})
    described = any(p["error_code"] == ErrorCode.NONE for t in topics for p in t["partitions"])
    return {"error_code": ErrorCode.NONE, "error_message": "", "topics": topics,
            "nodes": [{"node_id": CONTROLLER_NODE_ID, "listeners": []}] if described else []}


def _metadata_partition(ctx: RequestContext) -> dict[str, Any]:
    cluster = ctx.cluster
    end = cluster.controller.log.end_offset
    now = ctx.now_ms()
    voter = {"replica_id": CONTROLLER_NODE_ID, "replica_directory_id": CONTROLLER_DIRECTORY_ID,
             "log_end_offset": end, "last_fetch_timestamp": now,
             "last_caught_up_timestamp": now}
    observers = []
    for broker_id, node in sorted(cluster.brokers.items()):
        if not node.up:
            continue
        fetched = node.acknowledged_offset + 1  # the next offset it will fetch
        seen = node.last_heartbeat_ms
        observers.append({
            "replica_id": broker_id,
            "replica_directory_id": log_dir_id(cluster.config.cluster_id, broker_id,
                                               cluster.config.log_dirs[0]),
            "log_end_offset": fetched, "last_fetch_timestamp": seen,
            "last_caught_up_timestamp": seen if fetched >= end else -1})
    return {"partition_index": 0, "error_code": ErrorCode.NONE, "error_message": "",
            "leader_id": CONTROLLER_NODE_ID, "leader_epoch": cluster.controller.epoch,
            "high_watermark": end, "current_voters": [voter], "observers": observers}


@handler(57, 0, 2)
def handle_update_features(req: UpdateFeaturesRequest, ctx: RequestContext) -> dict[str, Any]:
    cluster = ctx.cluster
    supported = supported_features(METADATA_VERSION)
    end_txn = ctx.advertised.get(END_TXN_KEY)
    if end_txn is not None and end_txn[1] >= END_TXN_TV2_VERSION:  # a 4.0+ release
        supported[TRANSACTION_VERSION_FEATURE] = (0, TRANSACTION_VERSION_LEVEL)
    validate_only = ctx.api_version >= 1 and bool(req.validate_only)
    changes: list[tuple[str, int]] = []
    for update in req.feature_updates:
        if ctx.api_version == 0:
            kind = SAFE_DOWNGRADE if update.allow_downgrade else UPGRADE
        else:
            kind = update.upgrade_type
        try:
            if check_feature_update(dict(cluster.image.features), supported, update.feature,
                                    update.max_version_level, kind):
                changes.append((update.feature, update.max_version_level))
        except ClusterError as exc:  # all or nothing: the first failure fails the request
            return {"throttle_time_ms": 0, "error_code": exc.code,
                    "error_message": f"{ALL_FAILED}{exc.message}", "results": []}
    if changes and not validate_only:
        for feature, level in changes:
            cluster.controller.set_feature_level(feature, level)
        cluster.propagate()
    results = [] if ctx.api_version >= 2 else [  # Kafka: Errors.NONE's message, "NONE"
        {"feature": u.feature, "error_code": ErrorCode.NONE, "error_message": "NONE"}
        for u in req.feature_updates]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "results": results}


@handler(80, 0, 0)
def handle_add_raft_voter(req: AddRaftVoterRequest, ctx: RequestContext) -> dict[str, Any]:
    return _static_quorum_refusal(req, ctx, "adding")


@handler(81, 0, 0)
def handle_remove_raft_voter(req: RemoveRaftVoterRequest, ctx: RequestContext) -> dict[str, Any]:
    return _static_quorum_refusal(req, ctx, "removing")


def _static_quorum_refusal(req: AddRaftVoterRequest | RemoveRaftVoterRequest,
                           ctx: RequestContext, change: str) -> dict[str, Any]:
    cluster_id = ctx.cluster.config.cluster_id
    if req.cluster_id is not None and req.cluster_id != cluster_id:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INCONSISTENT_CLUSTER_ID,
                "error_message": f'The given id "{req.cluster_id}" doesn\'t match the '
                                 f'cluster id "{cluster_id}"'}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION,
            "error_message": f"Cluster doesn't support {change} voter because the "
                             "kraft.version feature is 0"}
