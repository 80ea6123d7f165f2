"""Control verbs for log management, mixed into ControlAPI.

Theory of operation: thin over the cluster's log manager (cluster/log/log_manager.py), which
decides everything. `run-log-cleaner` runs retention and a cleaner pass at once (what the
cluster tick does every log.retention.check.interval.ms and log.cleaner.backoff.ms), for
tests that do not want to advance the clock; with `force` a compacted log is cleaned whatever
its dirty ratio. It answers what happened per replica and the partitions' log state
(segments, size, log start, the cleaner's last run and dirty ratio; also in `state`).
"""

from __future__ import annotations

from typing import Any

from mockbroker.cluster import Cluster
from mockbroker.control.errors import ControlError

VERBS = {"run-log-cleaner": "run_log_cleaner"}


def log_state(cluster: Cluster, topic: str, partition: int) -> dict[str, Any] | None:
    """The leader's log as `state` shows it (None: no such partition)."""
    replica_set = cluster.replicas(topic, partition)
    if replica_set is None:
        return None
    return cluster.log_manager.log_state(topic, replica_set.leader_log())


class LogManagementVerbs:
    """The log-management verbs; ControlAPI provides `cluster`."""

    cluster: Cluster

    async def run_log_cleaner(self, topic: str | None = None,
                              force: bool = False) -> dict[str, Any]:
        """Run retention and the log cleaner now (every topic, or `topic`); `force` cleans
        compacted logs whatever min.cleanable.dirty.ratio says."""
        if topic is not None and (not isinstance(topic, str)
                                  or topic not in self.cluster.image.topics):
            raise ControlError(404, f"unknown topic {topic!r}")
        if not isinstance(force, bool):
            raise ControlError(400, "force must be true or false")
        results = self.cluster.log_manager.run(topic, force=force)
        names = [topic] if topic is not None else sorted(self.cluster.image.topics)
        partitions = []
        for name in names:
            for index in sorted(self.cluster.image.topics[name].partitions):
                state = log_state(self.cluster, name, index)
                if state is not None:
                    partitions.append({"topic": name, "partition": index, **state})
        return {"replicas": [r.as_json() for r in results], "partitions": partitions}
