"""Logical log directories (KIP-858 directory ids) and what each one holds.

Theory of operation: no partition data touches a disk, but clients see log directories
through DescribeLogDirs, AlterReplicaLogDirs and the directory ids in the metadata. Every
broker has the directories of `ClusterConfig.log_dirs` (log.dirs). Each gets a stable id,
derived from the cluster id, the broker id and the path (Kafka draws one at random when it
formats a directory and keeps it in meta.properties); the broker registers them
(RegisterBrokerRecord.log_dirs) and the controller places every new replica in one of its
broker's directories (PartitionRecord.directories: partition index modulo the number of
directories, where Kafka's broker picks the emptiest). A replica moved by
AlterReplicaLogDirs is recorded with a PartitionChangeRecord naming the new directory, as a
Kafka broker reports a finished move with AssignReplicasToDirs; the move is instant since
there is nothing to copy, so no future replica is ever visible.

The capacity of a directory is a fixed simulated size (TOTAL_BYTES); its usable bytes are
that less the bytes of the partitions it holds.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from mockbroker.cluster.kafka_uuid import ZERO_UUID

TOTAL_BYTES = 1 << 40  # 1 TiB per log directory
_NAMESPACE = uuid.UUID("6b61666b-612d-6c6f-672d-646972730000")


def log_dir_id(cluster_id: str | None, broker_id: int, path: str) -> uuid.UUID:
    """The stable id of one broker's log directory."""
    return uuid.uuid5(_NAMESPACE, f"{cluster_id}/{broker_id}/{path}")


def log_dir_ids(cluster_id: str | None, broker_id: int,
                paths: Sequence[str]) -> dict[str, uuid.UUID]:
    """Path -> id for every log directory of one broker, in log.dirs order."""
    return {path: log_dir_id(cluster_id, broker_id, path) for path in paths}


def place(directories: Sequence[uuid.UUID], partition: int) -> uuid.UUID:
    """The directory a new replica of `partition` goes to (UNASSIGNED when none known)."""
    if not directories:
        return ZERO_UUID
    return directories[partition % len(directories)]
