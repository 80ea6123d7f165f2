"""Control verbs for replication, mixed into ControlAPI.

Theory of operation: thin over the cluster's replication model (cluster/replication.py),
which decides everything; this module checks JSON arguments and renders the answer. Each
verb names a broker (every follower replica on it) or a topic and partition (every follower
of that partition), one of the two:

- `pause-replication`: the followers stop fetching from their leaders. With writes going
  on they fall behind, the high watermark stops (acks=all waits), and after
  replica.lag.time.max.ms they leave the ISR (a PartitionChange; the partition epoch rises).
- `delay-replication` {ms}: the followers fetch at most once every `ms`.
- `resume-replication`: undo both (with neither a broker nor a partition: everywhere); the
  followers fetch at once and caught-up ones rejoin the ISR.
Each answers the replicas of the affected partitions (`replicas_state`, also in `state`).
"""

from __future__ import annotations

from typing import Any

from mockbroker.cluster import Cluster, ClusterError
from mockbroker.cluster.replication import PartitionReplicas
from mockbroker.control.errors import ControlError

VERBS = {"pause-replication": "pause_replication", "resume-replication": "resume_replication",
         "delay-replication": "delay_replication"}
MAX_REPLICATION_DELAY_MS = 3_600_000


def replicas_state(cluster: Cluster, replica_set: PartitionReplicas) -> list[dict[str, Any]]:
    """Per replica: log end, high watermark, lag behind the leader, ISR membership, the
    last time it was caught up (clock ms), and whether the controls hold it back."""
    part = replica_set.image()
    leader_end = replica_set.leader_log().log_end_offset
    controls = cluster.replication.controls
    out = []
    for broker_id, log in sorted(replica_set.logs.items()):
        progress = replica_set.progress[broker_id]
        out.append({
            "broker": broker_id, "log_end_offset": log.log_end_offset,
            "high_watermark": log.high_watermark,
            "lag": max(0, leader_end - log.log_end_offset),
            "in_isr": part is not None and broker_id in part.isr,
            "last_caught_up_ms": progress.last_caught_up_ms,
            "paused": controls.paused(broker_id, replica_set.topic, replica_set.partition),
            "delay_ms": controls.delay_ms(broker_id, replica_set.topic,
                                          replica_set.partition)})
    return out


class ReplicationVerbs:
    """The replication verbs; ControlAPI provides `cluster`."""

    cluster: Cluster

    def _target(self, broker: Any, topic: Any, partition: Any,
                required: bool = True) -> tuple[int | None, tuple[str, int] | None]:
        if broker is not None and (isinstance(broker, bool) or not isinstance(broker, int)
                                   or broker not in self.cluster.brokers):
            raise ControlError(404, f"unknown broker {broker!r} "
                                    f"(brokers: {sorted(self.cluster.brokers)})")
        named: tuple[str, int] | None = None
        if topic is not None or partition is not None:
            if not isinstance(topic, str) or isinstance(partition, bool) \
                    or not isinstance(partition, int):
                raise ControlError(400, "give both topic (a string) and partition (an int)")
            if self.cluster.replicas(topic, partition) is None:
                raise ControlError(404, f"unknown partition {topic}-{partition}")
            named = (topic, partition)
        if broker is not None and named is not None:
            raise ControlError(400, "name a broker or a partition, not both")
        if required and broker is None and named is None:
            raise ControlError(400, "name a broker or a topic and partition")
        return broker, named

    def _affected(self, broker: int | None,
                  named: tuple[str, int] | None) -> dict[str, Any]:
        partitions = []
        for replica_set in self.cluster.replication.partitions.values():
            if named is not None and (replica_set.topic, replica_set.partition) != named:
                continue
            if broker is not None and broker not in replica_set.logs:
                continue
            partitions.append({"topic": replica_set.topic, "partition": replica_set.partition,
                               "replicas": replicas_state(self.cluster, replica_set)})
        return {"broker": broker, "partitions": partitions}

    async def pause_replication(self, broker: int | None = None, topic: str | None = None,
                                partition: int | None = None) -> dict[str, Any]:
        """Followers on the broker (or of the partition) stop fetching from their leaders."""
        broker_id, named = self._target(broker, topic, partition)
        try:
            self.cluster.replication.pause(broker_id, named)
        except ClusterError as exc:
            raise ControlError(400, exc.message or exc.code.name) from exc
        return self._affected(broker_id, named)

    async def delay_replication(self, ms: int, broker: int | None = None,
                                topic: str | None = None,
                                partition: int | None = None) -> dict[str, Any]:
        """Followers on the broker (or of the partition) fetch at most once every `ms`."""
        if isinstance(ms, bool) or not isinstance(ms, int) or not 0 <= ms \
                <= MAX_REPLICATION_DELAY_MS:
            raise ControlError(400, f"ms must be an integer in [0, {MAX_REPLICATION_DELAY_MS}],"
                                    f" got {ms!r}")
        broker_id, named = self._target(broker, topic, partition)
        if ms == 0:
            self.cluster.replication.resume(broker_id, named)
        else:
            self.cluster.replication.delay(ms, broker_id, named)
        return self._affected(broker_id, named)

    async def resume_replication(self, broker: int | None = None, topic: str | None = None,
                                 partition: int | None = None) -> dict[str, Any]:
        """Undo pause/delay-replication (no broker and no partition: everywhere)."""
        broker_id, named = self._target(broker, topic, partition, required=False)
        self.cluster.replication.resume(broker_id, named)
        return self._affected(broker_id, named)
