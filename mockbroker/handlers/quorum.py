"""DescribeQuorum (key 55) v0-2 and UpdateFeatures (key 57) v0-2.

Any broker accepts them and answers for the controller, as KRaft brokers forward them
(cluster/features.py describes the quorum and decides feature changes).

DescribeQuorum: the partition __cluster_metadata-0 gets the single voter (the controller),
its leader epoch, the high watermark (the metadata log end offset) and every running broker
as an observer with the log end offset it acknowledged; v1 adds fetch and caught-up times
(the controller's own at the clock's now, a broker's at its last heartbeat, which caught up
only if the broker was at the log end); v2 adds directory ids and the voters' nodes (the
controller has no listener clients could use, so its listener list is empty). Any other
topic or partition named: UNKNOWN_TOPIC_OR_PARTITION on each, as Kafka's Raft client
answers.

UpdateFeatures: each update is decided on its own (a successful one is written even when
another in the request fails, as Kafka's controller does); validate_only (v1+) writes
nothing. v0 expresses a downgrade with allow_downgrade (a safe downgrade). v2 drops the
per-feature results: the top-level error is the first failed update's.
"""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import ClusterError
from mockbroker.cluster.controller import METADATA_VERSION
from mockbroker.cluster.features import (
    CONTROLLER_DIRECTORY_ID,
    CONTROLLER_NODE_ID,
    SAFE_DOWNGRADE,
    UPGRADE,
    check_feature_update,
    supported_features,
)
from mockbroker.cluster.log_dirs import log_dir_id
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

METADATA_TOPIC = "__cluster_metadata"


@handler(55, 0, 2)
def handle_describe_quorum(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    topics = []
    for topic in req.topics:
        partitions = []
        for part in topic.partitions:
            if topic.topic_name == METADATA_TOPIC and part.partition_index == 0:
                partitions.append(_metadata_partition(ctx))
            else:
                partitions.append({
                    "partition_index": part.partition_index,
                    "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "error_message": "This server does not host this topic-partition.",
                    "leader_id": -1, "leader_epoch": -1, "high_watermark": -1,
                    "current_voters": [], "observers": []})
        topics.append({"topic_name": topic.topic_name, "partitions": partitions})
    return {"error_code": ErrorCode.NONE, "error_message": None, "topics": topics,
            "nodes": [{"node_id": CONTROLLER_NODE_ID, "listeners": []}]}


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
    return {"partition_index": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "leader_id": CONTROLLER_NODE_ID, "leader_epoch": cluster.controller.epoch,
            "high_watermark": end, "current_voters": [voter], "observers": observers}


@handler(57, 0, 2)
def handle_update_features(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    cluster = ctx.cluster
    supported = supported_features(METADATA_VERSION)
    validate_only = ctx.api_version >= 1 and bool(req.validate_only)
    results = []
    changed = False
    for update in req.feature_updates:
        if ctx.api_version == 0:
            kind = SAFE_DOWNGRADE if update.allow_downgrade else UPGRADE
        else:
            kind = update.upgrade_type
        error, message = ErrorCode.NONE, None
        try:
            if check_feature_update(dict(cluster.image.features), supported, update.feature,
                                    update.max_version_level, kind) and not validate_only:
                cluster.controller.set_feature_level(update.feature, update.max_version_level)
                changed = True
        except ClusterError as exc:
            error, message = exc.code, exc.message
        results.append({"feature": update.feature, "error_code": error,
                        "error_message": message})
    if changed:
        cluster.propagate()
    top_error, top_message = ErrorCode.NONE, None
    if ctx.api_version >= 2:
        failed = [r for r in results if r["error_code"] != ErrorCode.NONE]
        if failed:
            top_error, top_message = failed[0]["error_code"], failed[0]["error_message"]
    return {"throttle_time_ms": 0, "error_code": top_error, "error_message": top_message,
            "results": results}
