"""The cluster: controller, brokers and partition data, owned in one place.

Theory of operation: `Cluster` is the single owner of all state and is mutated only from the
event loop (it is plain synchronous code, so a handler's view never changes under it between
two statements). The controller decides metadata and writes it to the log; `propagate()` lets
each running broker apply the log to its own image. Brokers catch up at once by default;
a paused broker keeps its older image and keeps answering from it. Nothing outside this
package writes metadata: handlers and control verbs call Cluster methods (create/delete
topics, elections, set_configs, fence/rejoin brokers, pause/resume/delay metadata, reset).
Client telemetry (KIP-714: subscriptions and pushed metrics) is `telemetry` (telemetry_receiver.py).

Partition data lives in `replication` (replicas.py): one PartitionLog per replica, the
followers copying the leader's batches, the high watermark over the ISR and the ISR by lag
(replica.lag.time.max.ms, `ClusterConfig.replica_lag_time_max_ms`). `log(topic id,
partition)` is the leader's log, `replica_log` any replica's. The data path is here too:
`check_leader` (leadership.py) and `produce` (produce_path.py, then
PartitionLog.append_producer_batch) decide what a leader does with a request.

Metadata flow. The controller only appends to its log; each broker
fetches from it on its own: `propagate()` (run after every change) is the controller's
long-poll answering the brokers' pending fetches, so an ordinary broker applies a change at
once, a delayed one (`metadata_delay_ms`, dynamics.MetadataDelays) later, a paused one not at
all. The tick also lets every unpaused broker fetch, so a broker left behind (a change
written without `propagate()`, a pause lifted) catches up within a tick. Every
`ClusterConfig.heartbeat_interval_ms` the running brokers heartbeat the controller with
their applied offset (BrokerHeartbeat v1 through the codec, heartbeat_rounds.py) and learn the
lowest offset acknowledged by all unfenced brokers (`Controller.lowest_acknowledged_offset`,
`BrokerNode.lowest_acknowledged_offset`); a broker not heard from for
broker.session.timeout.ms is fenced (broker_sessions.py: crashed or isolated brokers). With
`consistent_metadata` on, the metadata reads (Metadata, DescribeConfigs, ListGroups,
DescribeCluster) come from `read_image(node)`: the image at min(applied, lowest
acknowledged), built by image_history.ImageHistory.

Persistence (`ClusterConfig.data_dir`, data_dir.py): the storage is opened first, the
controller replays the stored metadata log instead of formatting a new one (ACLs and SASL
credentials included: they are metadata records), and restore.py brings back each
replica's log and the committed offsets; from then on the metadata log, the replica logs
and the offsets write through it.

Where it is written: cluster_config.py (ClusterConfig), cluster_state.py (the subsystems
wired together, the metadata flow, effective configurations), cluster_topics.py (topic and
partition administration), cluster_data_path.py (produce and the fetch helpers) and
cluster_lifecycle.py (brokers starting, faults, reset). Each of the last three is a subclass
of ClusterState; `Cluster` joins them and adds nothing of its own.
"""

from __future__ import annotations

from mockbroker.cluster.cluster_config import ClusterConfig
from mockbroker.cluster.cluster_data_path import DataPath
from mockbroker.cluster.cluster_lifecycle import ClusterLifecycle
from mockbroker.cluster.cluster_topics import TopicAdministration

__all__ = ["Cluster", "ClusterConfig"]


class Cluster(TopicAdministration, DataPath, ClusterLifecycle):
    """One cluster: controller, brokers and partition data; built from a ClusterConfig and a
    Clock (`ClusterState.__init__`)."""
