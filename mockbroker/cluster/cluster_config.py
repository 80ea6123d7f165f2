"""The settings a cluster is created with: `ClusterConfig`, the CLI's flags and MockCluster's
arguments, with Kafka's defaults unless noted.

Theory of operation: a ClusterConfig is plain data, read by `Cluster` once when it is built
(cluster_state.py copies the static broker properties mockbroker enforces onto its fields,
broker_properties.py) and by the effective-configuration lookups afterwards. A cluster id
nobody asked for is generated here and remembered, so that a data directory's stored id wins
over it while an id given on purpose that differs from the stored one is an error
(data_dir.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mockbroker.cluster.broker_sessions import DEFAULT_SESSION_TIMEOUT_MS
from mockbroker.cluster.groups.consumer_groups import ConsumerGroupConfig
from mockbroker.cluster.kafka_uuid import random_id
from mockbroker.cluster.kraft.controller import METADATA_VERSION
from mockbroker.cluster.log.replicas import DEFAULT_LAG_TIME_MAX_MS

GENERATED_CLUSTER_IDS: set[str] = set()  # ids nobody asked for: a data dir's id wins


def new_cluster_id() -> str:
    cluster_id = random_id()
    GENERATED_CLUSTER_IDS.add(cluster_id)
    return cluster_id


@dataclass
class ClusterConfig:
    """The settings a cluster is created with (the CLI's flags, MockCluster's arguments);
    Kafka's defaults unless noted."""

    brokers: int = 3
    default_partitions: int = 1
    default_replication_factor: int | None = None  # None: min(3, brokers)
    auto_create_topics: bool = True
    min_insync_replicas: int = 1
    message_max_bytes: int = 1048588
    cluster_id: str = field(default_factory=new_cluster_id)
    # Kafka's default is 3000 ms; its own test fixtures use 0, and so do we
    group_initial_rebalance_delay_ms: int = 0
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = 2**31 - 1  # group.max.size: members of a classic group
    # KIP-848 consumer groups (group.consumer.*: Kafka's defaults)
    consumer_group: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)
    # broker heartbeat interval (Kafka's broker.heartbeat.interval.ms is 2000; a
    # shorter one lets consistent-read mode show new metadata sooner)
    heartbeat_interval_ms: int = 500
    # metadata reads only up to the lowest offset all unfenced brokers acknowledged
    consistent_metadata: bool = False
    # KIP-714: advertise GetTelemetrySubscriptions/PushTelemetry from the start (Kafka does
    # only with a client-telemetry metrics reporter; a telemetry subscription turns it on)
    client_telemetry: bool = False
    # Kafka's offsets.topic.num.partitions and transaction.state.log.num.partitions
    offsets_topic_partitions: int = 50
    transaction_topic_partitions: int = 50
    # broker.session.timeout.ms: a broker silent this long is fenced (broker_sessions.py)
    broker_session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    # replica.lag.time.max.ms: a follower not caught up this long leaves the ISR
    replica_lag_time_max_ms: int = DEFAULT_LAG_TIME_MAX_MS
    transaction_max_timeout_ms: int = 900_000
    offsets_retention_minutes: int = 10080
    # the logical log directories of every broker (log.dirs; DescribeLogDirs reports them)
    log_dirs: tuple[str, ...] = ("/var/lib/kafka/data",)
    # KIP-455: how long a reassignment's new replicas take to catch up (injected clock)
    reassignment_delay_ms: int = 0
    # the metadata.version the log is formatted with (kafka-storage format --release-version)
    metadata_version: int = METADATA_VERSION
    # broker.rack per broker id ("" or missing: the broker.rack property, else none) and
    # replica.selector.class (KIP-392 fetch from follower, read_replicas.py)
    broker_racks: tuple[str, ...] = ()
    replica_selector_class: str = ""
    # static broker properties as in server.properties (broker_properties.py); the keys
    # mockbroker enforces are copied onto the fields above when the Cluster is built
    broker_properties: dict[str, str] = field(default_factory=dict)
    # authorization (mockbroker.cluster.security.authorizer): Kafka's authorizer.class.name set to
    # StandardAuthorizer, super.users ("User:admin;User:bob"), allow.everyone.if.no.acl.found
    authorizer: bool = False
    super_users: str = ""
    allow_everyone_if_no_acl_found: bool = False
    # persist the cluster here (data_dir.py); None: memory only
    data_dir: str | None = None
    # fsync every write to data_dir (default: the page cache and recovery, as Kafka)
    data_dir_fsync: bool = False

    def replication_factor(self) -> int:
        if self.default_replication_factor is not None:
            return self.default_replication_factor
        return min(3, self.brokers)
