"""DescribeLogDirs (key 35) v0-4 and AlterReplicaLogDirs (key 34) v0-2.

Both are answered by the receiving broker about its own log directories, as in Kafka (the
admin clients send them to each broker in turn). The directories are logical
(cluster/log/log_dir_ids.py): log.dirs of the cluster config, each with a stable id that the
metadata log records for every replica.

DescribeLogDirs: every directory of the broker, with the partitions whose replica on this
broker lives there; topics null means all of them, a list filters (partitions the broker
does not hold are left out). partition_size is the bytes the partition stores, offset_lag 0
and is_future_key false (moves are instant, so there is no future replica);
total_bytes/usable_bytes (v4) are the simulated capacity less the stored bytes.

AlterReplicaLogDirs: per partition, a path that is not one of the broker's directories is
LOG_DIR_NOT_FOUND; a partition the broker holds no replica of is REPLICA_NOT_AVAILABLE (Kafka
answers so until the replica exists); otherwise the replica moves at once, recorded through
the controller as a PartitionChangeRecord naming the new directory (no leader epoch bump).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.kraft.metadata_log import UNASSIGNED_DIR
from mockbroker.cluster.log.log_dir_ids import TOTAL_BYTES, log_dir_ids
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.alter_replica_log_dirs import AlterReplicaLogDirsRequest
    from kafka_protocol_codec.generated.describe_log_dirs import DescribeLogDirsRequest


def _dirs(ctx: RequestContext) -> dict[str, Any]:
    config = ctx.cluster.config
    return log_dir_ids(config.cluster_id, ctx.broker_id, config.log_dirs)


@handler(35, 0, 4)
def handle_describe_log_dirs(req: DescribeLogDirsRequest, ctx: RequestContext) -> dict[str, Any]:
    wanted: dict[str, set[int]] | None = None
    if req.topics is not None:
        wanted = defaultdict(set)
        for asked in req.topics:
            wanted[asked.topic].update(asked.partitions)
    dirs = _dirs(ctx)
    first = next(iter(dirs.values()))
    held: dict[Any, dict[str, list[dict[str, Any]]]] = {d: defaultdict(list)
                                                        for d in dirs.values()}
    used: dict[Any, int] = dict.fromkeys(dirs.values(), 0)
    for name, topic in sorted(ctx.image.topics.items()):
        if wanted is not None and name not in wanted:
            continue
        for index, part in sorted(topic.partitions.items()):
            directory = part.directory_of(ctx.broker_id)
            if directory is None or (wanted is not None and index not in wanted[name]):
                continue
            if directory not in held:  # unassigned (or unknown): the first directory
                directory = first if directory == UNASSIGNED_DIR else directory
                if directory not in held:
                    continue
            log = ctx.cluster.log(topic.topic_id, index)
            size = log.size_bytes if log is not None else 0
            used[directory] += size
            held[directory][name].append({"partition_index": index, "partition_size": size,
                                          "offset_lag": 0, "is_future_key": False})
    results = [{"error_code": ErrorCode.NONE, "log_dir": path,
                "topics": [{"name": name, "partitions": partitions}
                           for name, partitions in held[dir_id].items()],
                "total_bytes": TOTAL_BYTES, "usable_bytes": TOTAL_BYTES - used[dir_id]}
               for path, dir_id in dirs.items()]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": results}


@handler(34, 0, 2)
def handle_alter_replica_log_dirs(req: AlterReplicaLogDirsRequest, ctx: RequestContext) -> dict[str, Any]:
    dirs = _dirs(ctx)
    results: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in req.dirs:
        target = dirs.get(entry.path)
        for topic in entry.topics:
            for index in topic.partitions:
                error = _move(ctx, topic.name, index, target)
                results[topic.name].append({"partition_index": index, "error_code": error})
    return {"throttle_time_ms": 0,
            "results": [{"topic_name": name, "partitions": partitions}
                        for name, partitions in results.items()]}


def _move(ctx: RequestContext, topic: str, index: int, target: Any) -> ErrorCode:
    if target is None:
        return ErrorCode.LOG_DIR_NOT_FOUND
    part = ctx.cluster.image.partition(topic, index)
    current = part.directory_of(ctx.broker_id) if part is not None else None
    if part is None or current is None:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    if current != target:
        ctx.cluster.move_replica_dir(topic, index, ctx.broker_id, target)
    return ErrorCode.NONE
