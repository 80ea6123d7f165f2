"""Control verbs for replication, mixed into ControlAPI.

Theory of operation: thin over the cluster's replication model (cluster/log/replicas.py),
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

Failure detection as KRaft (cluster/broker_sessions.py), per broker:
- `crash-broker`: its listener and connections close, but the controller learns of it only
  when its session times out (broker.session.timeout.ms); `start-broker` restarts it.
- `isolate-broker`: it stops heartbeating, fetching metadata and replicating while clients
  still reach it (a zombie leader once fenced); `heal-broker` ends that.
"""

from __future__ import annotations

from typing import Any

from mockbroker.cluster import Cluster, ClusterError, broker_sessions
from mockbroker.cluster.log.replicas import PartitionReplicas
from mockbroker.control.errors import ControlError
from mockbroker.server.cluster_server import ClusterServer

VERBS = {"pause-replication": "pause_replication", "resume-replication": "resume_replication",
         "delay-replication": "delay_replication", "crash-broker": "crash_broker",
         "isolate-broker": "isolate_broker", "heal-broker": "heal_broker"}
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
    """The replication and failure-detection verbs; ControlAPI provides `cluster`,
    `server` and `_broker_json`."""

    cluster: Cluster
    server: ClusterServer

    def _broker_json(self, broker_id: int) -> dict[str, Any]:
        raise NotImplementedError  # ControlAPI._broker_json

    def _known_broker(self, broker: Any) -> int:
        if isinstance(broker, bool) or not isinstance(broker, int) \
                or broker not in self.cluster.brokers:
            raise ControlError(404, f"unknown broker {broker!r} "
                                    f"(brokers: {sorted(self.cluster.brokers)})")
        return broker

    async def crash_broker(self, broker: int) -> dict[str, Any]:
        """Close the broker's listener and connections without telling the controller: it
        is fenced only when its session times out (broker.session.timeout.ms)."""
        broker_id = self._known_broker(broker)
        if not self.cluster.brokers[broker_id].up:
            raise ControlError(409, f"broker {broker_id} is already stopped")
        broker_sessions.crash(self.cluster, broker_id)
        await self.server.stop_broker(broker_id)
        return self._broker_json(broker_id)

    async def isolate_broker(self, broker: int) -> dict[str, Any]:
        """Cut the broker off from the controller and the other brokers (no heartbeats, no
        metadata, no replication); clients still reach it."""
        broker_id = self._known_broker(broker)
        node = self.cluster.brokers[broker_id]
        if not node.up or node.isolated:
            raise ControlError(409, f"broker {broker_id} is stopped or already isolated")
        broker_sessions.isolate(self.cluster, broker_id)
        return self._broker_json(broker_id)

    async def heal_broker(self, broker: int) -> dict[str, Any]:
        """End an isolation: the broker heartbeats, is unfenced, catches up and rejoins."""
        broker_id = self._known_broker(broker)
        if not self.cluster.brokers[broker_id].isolated:
            raise ControlError(409, f"broker {broker_id} is not isolated")
        broker_sessions.heal(self.cluster, broker_id)
        return self._broker_json(broker_id)

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
