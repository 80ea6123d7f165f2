"""The cluster: controller, brokers and partition data, owned in one place.

Theory of operation: `Cluster` is the single owner of all state and is mutated only from the
event loop (it is plain synchronous code, so a handler's view never changes under it between
two statements). The controller decides metadata and writes it to the log; `propagate()` lets
each running broker apply the log to its own image. Brokers catch up at once by default;
a paused broker keeps its older image and keeps answering from it. Nothing outside this
package writes metadata: handlers and control verbs call Cluster methods (create/delete
topics, elections, set_configs, fence/rejoin brokers, pause/resume/delay metadata, reset).
Client telemetry (KIP-714: subscriptions and pushed metrics) is `telemetry` (telemetry.py).

Partition data lives in `replication` (replication.py): one PartitionLog per replica, the
followers copying the leader's batches, the high watermark over the ISR and the ISR by lag
(replica.lag.time.max.ms, `ClusterConfig.replica_lag_time_max_ms`). `log(topic id,
partition)` is the leader's log, `replica_log` any replica's. The data path is here too: `check_leader` (leadership.py) and `produce` (produce.py, then
PartitionLog.append_producer_batch) decide what a leader does with a request.

Metadata flow. The controller only appends to its log; each broker
fetches from it on its own: `propagate()` (run after every change) is the controller's
long-poll answering the brokers' pending fetches, so an ordinary broker applies a change at
once, a delayed one (`metadata_delay_ms`, dynamics.MetadataDelays) later, a paused one not at
all. The tick also lets every unpaused broker fetch, so a broker left behind (a change
written without `propagate()`, a pause lifted) catches up within a tick. Every
`ClusterConfig.heartbeat_interval_ms` the running brokers heartbeat the controller with
their applied offset (BrokerHeartbeat v1 through the codec, heartbeat.py) and learn the
lowest offset acknowledged by all unfenced brokers (`Controller.lowest_acknowledged_offset`,
`BrokerNode.lowest_acknowledged_offset`); a broker not heard from for
broker.session.timeout.ms is fenced (sessions.py: crashed or isolated brokers). With
`consistent_metadata` on, the metadata reads (Metadata, DescribeConfigs, ListGroups,
DescribeCluster) come from `read_image(node)`: the image at min(applied, lowest
acknowledged), built by image_history.ImageHistory.

Persistence (`ClusterConfig.data_dir`, storage.py): the storage is opened first, the
controller replays the stored metadata log instead of formatting a new one (ACLs and SASL
credentials included: they are metadata records), and restore.py brings back each
replica's log and the committed offsets; from then on the metadata log, the replica logs
and the offsets write through it.
"""

from __future__ import annotations

import base64
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.acl_control import AclControl
from mockbroker.cluster.acls import Authorizer, parse_super_users
from mockbroker.cluster.broker import BrokerNode
from mockbroker.cluster.broker_properties import (
    apply_broker_properties,
    static_values,
    topic_defaults_from_broker,
)
from mockbroker.cluster.clock import Clock, SystemClock
from mockbroker.cluster.configs import TOPIC_CONFIGS
from mockbroker.cluster.consumer_groups import ConsumerGroupConfig, ConsumerGroupCoordinator
from mockbroker.cluster.controller import METADATA_VERSION, Controller
from mockbroker.cluster.dynamics import (
    MetadataDelays,
    UncleanResult,
    fence_broker,
    note_leader_epoch,
    rejoin_broker,
    reset_state,
    unclean_elect,
)
from mockbroker.cluster.errors import ClusterError
from mockbroker.cluster.feature_renegotiation import FeatureRenegotiation
from mockbroker.cluster.group_model import pick_coordinator
from mockbroker.cluster.groups import GroupCoordinator
from mockbroker.cluster.heartbeat import HeartbeatRequest, heartbeat_round
from mockbroker.cluster.image_history import ImageHistory
from mockbroker.cluster.internal_topics import COORDINATOR_KEY_TYPES, internal_topic_for
from mockbroker.cluster.leadership import NO_EPOCH_CHECK, LeaderCheck, check_leader
from mockbroker.cluster.log_dirs import log_dir_ids
from mockbroker.cluster.log_manager import LogManager
from mockbroker.cluster.metadata import RESOURCE_BROKER, MetadataImage, PartitionImage, TopicImage
from mockbroker.cluster.mutation_quota import CONTROLLER_MUTATION_RATE, ControllerMutationQuotas
from mockbroker.cluster.partition import AppendResult, PartitionLog
from mockbroker.cluster.produce import check_produced_records, produce_settings
from mockbroker.cluster.quotas import Entity, QuotaManager
from mockbroker.cluster.read_replicas import (
    NO_PREFERRED_REPLICA,
    broker_rack,
    check_racks,
    check_selector,
    preferred_read_replica,
)
from mockbroker.cluster.reassignment import Reassignments
from mockbroker.cluster.replication import (
    DEFAULT_LAG_TIME_MAX_MS,
    PartitionReplicas,
    Replication,
    ReplicationWait,
)
from mockbroker.cluster.restore import restore
from mockbroker.cluster.scram_control import UserCredentials
from mockbroker.cluster.sessions import DEFAULT_SESSION_TIMEOUT_MS
from mockbroker.cluster.sessions import expire as expire_sessions
from mockbroker.cluster.storage import FileStorage, MemoryStorage
from mockbroker.cluster.telemetry import ClientTelemetry
from mockbroker.cluster.transactions import ProduceVerification, TransactionCoordinator

if TYPE_CHECKING:  # built on first use (Cluster.share_groups)
    from mockbroker.cluster.share_groups import ShareGroupCoordinator

_log = logging.getLogger(__name__)
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249
PRODUCER_ID_BLOCK = 1000
# Kafka's controller refuses a user operation that would write more than this many metadata
# records (QuorumController's limit; CreateTopics checks the partitions of the whole request
# before doing anything, so a single request cannot allocate without bound)
MAX_PARTITIONS_PER_REQUEST = 10_000
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_LARGE_OPERATION = "Unable to perform excessively large batch operation."


def check_partitions_per_request(total: int, message: str = TOO_MANY_PARTITIONS) -> None:
    """POLICY_VIOLATION when one request would create more than 10,000 partitions."""
    if total > MAX_PARTITIONS_PER_REQUEST:
        raise ClusterError(ErrorCode.POLICY_VIOLATION, message)


_GENERATED_CLUSTER_IDS: set[str] = set()  # ids nobody asked for: a data dir's id wins


def new_cluster_id() -> str:
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    _GENERATED_CLUSTER_IDS.add(cluster_id)
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
    # broker.session.timeout.ms: a broker silent this long is fenced (sessions.py)
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
    # authorization (mockbroker.cluster.acls): Kafka's authorizer.class.name set to
    # StandardAuthorizer, super.users ("User:admin;User:bob"), allow.everyone.if.no.acl.found
    authorizer: bool = False
    super_users: str = ""
    allow_everyone_if_no_acl_found: bool = False
    # persist the cluster here (storage.py); None: memory only
    data_dir: str | None = None
    # fsync every write to data_dir (default: the page cache and recovery, as Kafka)
    data_dir_fsync: bool = False

    def replication_factor(self) -> int:
        if self.default_replication_factor is not None:
            return self.default_replication_factor
        return min(3, self.brokers)


class Cluster:
    def __init__(self, config: ClusterConfig | None = None, clock: Clock | None = None) -> None:
        self.config = config or ClusterConfig()
        if self.config.brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        for note in apply_broker_properties(self.config):
            _log.warning(note)
        policy = self.config.broker_properties.get("group.consumer.migration.policy")
        if policy is not None:  # KIP-848 online upgrade/downgrade (group_migration.py)
            self.config.consumer_group = replace(self.config.consumer_group,
                                                 migration_policy=policy.strip().lower())
        consumer_max = self.config.broker_properties.get("group.consumer.max.size")
        if consumer_max is not None:
            self.config.consumer_group = replace(self.config.consumer_group,
                                                 max_size=int(consumer_max))
        self.config.broker_racks = tuple(self.config.broker_racks)
        check_racks(self.config.broker_racks, self.config.brokers)
        check_selector(self.config.replica_selector_class)
        self.clock: Clock = clock or SystemClock()
        self.storage = MemoryStorage() if self.config.data_dir is None else FileStorage(
            self.config.data_dir, self.config.data_dir_fsync)
        self.config.cluster_id = self.storage.cluster_id(
            self.config.cluster_id, self.config.cluster_id in _GENERATED_CLUSTER_IDS)
        self.controller = Controller(self.config.cluster_id, self.config.metadata_version,
                                     replay=self.storage.metadata_records(),
                                     on_append=self.storage.append_metadata)
        self.history = ImageHistory()
        # KIP-778: brokers close client connections once every broker applied a new
        # metadata.version (feature_renegotiation.py)
        self.renegotiation = FeatureRenegotiation(self.controller.log)
        self._last_heartbeat_round: int | None = None
        self.brokers = {i: BrokerNode(i) for i in range(self.config.brokers)}
        self.replication = Replication(self)
        self.replication.files_for = self.storage.replica_files
        self._metadata_listeners: list[Callable[[], None]] = []
        self._tickers: list[Callable[[int], None]] = []
        self._topic_config_cache: dict[tuple[str, int, int | None], dict[str, str]] = {}
        self._replica_lookups: dict[int, Callable[[uuid.UUID, int], PartitionLog | None]] = {}
        # a restarted cluster continues after the last block its controller handed out
        self._next_producer_id = self._producer_id_block_end = self.controller.producer_ids_end
        self.groups = GroupCoordinator(self.clock, self.config.group_initial_rebalance_delay_ms,
                                       self.config.group_min_session_timeout_ms,
                                       self.config.group_max_session_timeout_ms,
                                       self.config.offsets_retention_minutes * 60_000,
                                       self.config.group_max_size)
        self.add_ticker(self.groups.tick)
        self.consumer_groups = ConsumerGroupCoordinator(
            self.clock, self._topic_partition_counts, self.groups, self.config.consumer_group,
            coordinator_of=lambda group_id: self.coordinator_for(0, group_id))
        self.groups.owned_elsewhere = self.consumer_groups.groups.__contains__
        self.add_ticker(self.consumer_groups.tick)
        self.add_ticker(self._metadata_tick)
        self.transactions = TransactionCoordinator(
            self.clock, self.allocate_producer_id, self._marker_target, self.groups.offsets,
            max_timeout_ms=self.config.transaction_max_timeout_ms)
        self.add_ticker(self.transactions.tick)
        self.metadata_delays = MetadataDelays(self)
        self.reassignments = Reassignments(self, self.config.reassignment_delay_ms)
        self.add_ticker(self.reassignments.tick)
        self.telemetry = ClientTelemetry(self.clock, self.config.client_telemetry)
        # SASL users (SCRAM credentials, PLAIN verifiers): records of the metadata log
        self.credentials = UserCredentials(self.controller, self.propagate)
        self._share_groups: ShareGroupCoordinator | None = None  # see share_groups
        self.add_ticker(self._tick_share_groups)
        self.add_ticker(self.replication.tick)
        # client quotas: ClientQuotaRecords in the log; each broker applies its own image's
        self.quotas = QuotaManager(
            self.clock, lambda: self.image.client_quotas,
            lambda broker_id: self.brokers[broker_id].image.client_quotas,
            self._write_client_quotas)
        self.mutation_quotas = ControllerMutationQuotas(  # KIP-599, measured by the controller
            self.clock, lambda user, client: self.quotas.quota(user, client,
                                                               CONTROLLER_MUTATION_RATE))
        self.acls = Authorizer(self.config.authorizer, parse_super_users(self.config.super_users),
                               self.config.allow_everyone_if_no_acl_found)
        self.acl_control = AclControl(self.controller, self.propagate)  # bindings: the log
        # segments, retention and compaction of every replica's log (log_manager.py)
        self.log_manager = LogManager(self)
        self.replication.segment_policy = self.log_manager.segment_policy
        self.add_ticker(self.log_manager.tick)
        restore(self, self.storage)
        # brokers of a restored cluster rejoin their partitions when they start (dynamics.py)
        self._rejoin_on_start = set(self.image.brokers) if self.storage.persistent else set()

    @property
    def share_groups(self) -> ShareGroupCoordinator:
        """KIP-932 share groups, built on first use (a start without them never loads
        share_groups.py); the group-id namespace is shared with the classic/KIP-848
        coordinator through `other_group_type` only."""
        if self._share_groups is None:
            from mockbroker.cluster.share_groups import ShareGroupCoordinator

            self._share_groups = ShareGroupCoordinator(
                self.clock,
                partition_counts=lambda: {n: len(t.partitions)
                                          for n, t in self.image.topics.items()},
                other_group_type=lambda g: (
                    "classic" if g in self.groups.groups else
                    "consumer" if g in self.consumer_groups.groups else None),
                log_lookup=self.log)
        return self._share_groups

    def _tick_share_groups(self, now: int) -> None:
        if self._share_groups is not None:
            self._share_groups.tick(now)

    def close_storage(self) -> None:
        """Close the data directory's files (the cluster is stopping)."""
        self.storage.close()

    # -- producer ids -----------------------------------------------------------------------

    def allocate_producer_id(self) -> int:
        """A fresh producer id, from blocks the controller hands out (ProducerIdsRecord)."""
        if self._next_producer_id >= self._producer_id_block_end:
            start = self._producer_id_block_end
            self._producer_id_block_end = start + PRODUCER_ID_BLOCK
            self.controller.allocate_producer_ids(self.controller_id(), start + PRODUCER_ID_BLOCK)
            self._next_producer_id = start
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid

    # -- coordinators -----------------------------------------------------------------------

    def coordinator_for(self, key_type: int, key: str,
                        image: MetadataImage | None = None) -> int | None:
        """The broker coordinating a group (key_type 0) or transactional id (1).

        A stable hash of the key over every registered broker picks the preferred one (as a
        key maps to one partition of Kafka's internal topics); while that broker is fenced
        the next unfenced broker in id order takes over (as that partition's leadership
        moves), so stopping one broker moves only its own coordinators. None while the
        chosen broker is down and not yet fenced: COORDINATOR_NOT_AVAILABLE. `image`: the
        metadata to decide by (default the controller's; consistent reads pass theirs)."""
        del key_type  # both kinds hash the same way, as Kafka's internal topic partitions do
        view = image or self.image
        registered = sorted(view.brokers)
        preferred = pick_coordinator(key, registered)
        if preferred is None:
            return None
        start = registered.index(preferred)
        for broker in registered[start:] + registered[:start]:
            if not view.brokers[broker].fenced:
                node = self.brokers.get(broker)
                return broker if node is not None and node.up else None
        return None

    def _topic_partition_counts(self) -> dict[str, tuple[uuid.UUID, int]]:
        """name -> (topic id, partition count): what consumer-group assignors see."""
        return {name: (t.topic_id, len(t.partitions)) for name, t in self.image.topics.items()}

    # -- brokers and propagation ------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        """The controller's image: metadata at the log end."""
        return self.controller.image

    def start_broker(self, broker_id: int, host: str, port: int) -> None:
        """Register a broker (its advertised endpoint) and bring its image up to date."""
        node = self.brokers[broker_id]
        node.host, node.port, node.up = host, port, True
        node.isolated = False  # a restart ends an isolation too (sessions.py)
        self.controller.register_broker(broker_id, host, port, rack=self.broker_rack(broker_id),
                                        log_dirs=list(
            log_dir_ids(self.config.cluster_id, broker_id, self.config.log_dirs).values()))
        self.propagate()
        self.heartbeat_round()  # a registering broker heartbeats at once, as in KRaft
        if broker_id in self._rejoin_on_start:  # back from a data directory
            self._rejoin_on_start.discard(broker_id)
            self.rejoin_broker(broker_id)

    def broker_rack(self, broker_id: int) -> str | None:
        """broker.rack (read_replicas.py): its own entry, else the shared property."""
        return broker_rack(self.config.broker_racks,
                           self.config.broker_properties.get("broker.rack"), broker_id)

    def propagate(self) -> None:
        """Let every running, unpaused broker apply the metadata log up to its end."""
        for node in self.brokers.values():
            if node.up and not node.paused and not node.isolated and node.metadata_delay_ms <= 0:
                self.catch_up(node)
        for callback in list(self._metadata_listeners):
            callback()

    def add_ticker(self, ticker: Callable[[int], None]) -> None:
        """Register a deadline check run by `tick` (group sessions, transaction timeouts)."""
        self._tickers.append(ticker)

    def tick(self) -> None:
        """Run every deadline check against the clock. The server calls this periodically;
        tests with a ManualClock call it after advancing time."""
        now = self.clock.now_ms()
        for ticker in list(self._tickers):
            ticker(now)

    def add_metadata_listener(self, callback: Callable[[], None]) -> None:
        """Called after every propagation (parked fetches re-check leadership)."""
        self._metadata_listeners.append(callback)

    @property
    def metadata_listener_count(self) -> int:
        """Callbacks waiting on metadata changes (parked fetches, the delay tracker)."""
        return len(self._metadata_listeners)

    def remove_metadata_listener(self, callback: Callable[[], None]) -> None:
        if callback in self._metadata_listeners:
            self._metadata_listeners.remove(callback)

    def catch_up(self, node: BrokerNode, until: int | None = None) -> None:
        log = self.controller.log
        node.image.cluster_id = log.cluster_id  # travels with every fetch (meta.properties)
        end = log.end_offset - 1 if until is None else until
        for record in log.since(node.image.offset):
            if record.offset > end:
                break
            node.image.apply(record)

    # -- heartbeats and consistent reads ---------------------------------------------------

    @property
    def lowest_acknowledged_offset(self) -> int:
        """The lowest metadata offset every unfenced broker has acknowledged."""
        return self.controller.lowest_acknowledged_offset

    def heartbeat_round(self) -> None:
        """Every running broker heartbeats the controller with its applied offset."""
        now = self.clock.now_ms()
        self._last_heartbeat_round = now
        nodes = [n for n in self.brokers.values() if n.up and not n.isolated]
        requests = [HeartbeatRequest(n.broker_id, self.controller.broker_epoch(n.broker_id),
                                     n.applied_offset) for n in nodes]
        for node, result in zip(nodes, heartbeat_round(self.controller, requests),
                                strict=True):
            node.last_heartbeat_ms = now
            node.lowest_acknowledged_offset = result.lowest_acknowledged_offset
            if result.error == ErrorCode.NONE:
                node.acknowledged_offset = result.sent_offset
        self.renegotiation.after_heartbeats(self.brokers.values(), now)

    def _metadata_tick(self, now_ms: int) -> None:
        """Brokers fetch (unless paused or delayed) and heartbeat when the interval is up."""
        end = self.controller.log.end_offset - 1
        behind = [n for n in self.brokers.values() if n.up and not n.paused and not n.isolated
                  and n.metadata_delay_ms <= 0 and n.image.offset < end]
        for node in behind:
            self.catch_up(node)
        if behind:
            for callback in list(self._metadata_listeners):
                callback()
        last = self._last_heartbeat_round
        if last is None or now_ms - last >= self.config.heartbeat_interval_ms or now_ms < last:
            self.heartbeat_round()
        expire_sessions(self, now_ms)

    def session_timeout_ms(self) -> int:
        """broker.session.timeout.ms: a silent broker is fenced after this long."""
        return self.config.broker_session_timeout_ms

    def read_image(self, node: BrokerNode) -> MetadataImage:
        """The image `node` answers metadata reads from: its own, or in consistent-read mode
        the image at min(its applied offset, the lowest acknowledged offset it knows)."""
        if not self.config.consistent_metadata:
            return node.image
        offset = min(node.applied_offset, node.lowest_acknowledged_offset)
        if offset >= node.image.offset:
            return node.image
        return self.history.image_at(self.controller.log, offset,
                                     [n.image for n in self.brokers.values()])

    def controller_id(self, image: MetadataImage | None = None) -> int:
        """The broker id reported as controller: the lowest live broker, as KRaft brokers
        report a live broker for clients to send admin requests to."""
        live = (image or self.image).live_brokers()
        return live[0].broker_id if live else -1

    # -- topics -----------------------------------------------------------------------------

    def validate_topic_name(self, name: str) -> None:
        if not name or name in (".", "..") or len(name) > MAX_TOPIC_NAME \
                or not _LEGAL_TOPIC.match(name):
            raise ClusterError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                               f"Topic name '{name}' is illegal.")

    def create_topic(self, name: str, partitions: int | None = None,
                     replication_factor: int | None = None,
                     configs: dict[str, str] | None = None,
                     assignments: list[list[int]] | None = None,
                     validate_only: bool = False) -> TopicImage | None:
        self.validate_topic_name(name)
        if name in self.image.topics:
            raise ClusterError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        for key in configs or {}:
            if key not in TOPIC_CONFIGS:
                raise ClusterError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        if assignments is None:
            count = self.config.default_partitions if partitions in (None, -1) else partitions
            rf = self.config.replication_factor() if replication_factor in (None, -1) \
                else replication_factor
            assert count is not None and rf is not None
            if count < 1:
                raise ClusterError(ErrorCode.INVALID_PARTITIONS,
                                   "Number of partitions must be larger than 0.")
            check_partitions_per_request(count)
            assignments = self.controller.assign_replicas(count, rf)
        else:
            self._validate_assignments(assignments)
        if validate_only:
            return None
        topic_id = self.controller.create_topic(name, assignments, configs)
        for index, replicas in enumerate(assignments):
            self.replication.add(topic_id, name, index, list(replicas))
        self.propagate()
        return self.image.topics_by_id[topic_id]

    def _validate_assignments(self, assignments: list[list[int]]) -> None:
        if not assignments:
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "empty replica assignment")
        for replicas in assignments:
            if not replicas or len(set(replicas)) != len(replicas) or any(
                    r not in self.brokers for r in replicas):
                raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   f"invalid replica assignment {replicas}")

    def delete_topic(self, name: str) -> None:
        topic_id = self.controller.delete_topic(name)
        self.replication.remove_topic(topic_id)
        self.propagate()

    def create_partitions(self, name: str, total: int,
                          assignments: list[list[int]] | None = None,
                          validate_only: bool = False) -> None:
        topic = self.image.topics.get(name)
        if topic is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"The topic '{name}' does not exist.")
        current = len(topic.partitions)
        if total <= current:
            raise ClusterError(ErrorCode.INVALID_PARTITIONS,
                               f"Topic currently has {current} partitions, {total} is not "
                               "greater than the current count.")
        check_partitions_per_request(total - current, TOO_LARGE_OPERATION)
        if assignments is None:
            rf = len(next(iter(topic.partitions.values())).replicas)
            assignments = self.controller.assign_replicas(total - current, rf, current)
        elif len(assignments) != total - current:
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"Increasing the number of partitions by {total - current} but "
                               f"{len(assignments)} assignments provided.")
        else:
            self._validate_assignments(assignments)
        if validate_only:
            return
        self.controller.create_partitions(name, assignments)  # KIP-253: existing epochs +1
        for index in range(current):
            note_leader_epoch(self, name, index)
        for index, replicas in enumerate(assignments, start=current):
            self.replication.add(topic.topic_id, name, index, list(replicas))
        self.propagate()

    def maybe_auto_create(self, name: str) -> TopicImage | None:
        """Auto-create a topic a client asked for, when the cluster allows it; an internal
        topic gets its coordinator's settings, as Kafka's auto-creation gives it."""
        if not self.config.auto_create_topics:
            return None
        existing = self.image.topics.get(name)
        if existing is not None:
            return existing
        if name in COORDINATOR_KEY_TYPES:
            self.ensure_internal_topic(COORDINATOR_KEY_TYPES[name])
            return self.image.topics.get(name)
        return self.create_topic(name)

    def ensure_internal_topic(self, key_type: int) -> None:
        """Create the internal topic of a coordinator type on its first lookup, as Kafka does
        (mockbroker.cluster.internal_topics). With brokers down, the replicas are the live
        ones (Kafka would refuse to create it until enough are up)."""
        live = len(self.image.live_brokers())
        replication_factor = min(self.config.replication_factor(), live)
        spec = internal_topic_for(key_type, replication_factor,
                                  self.config.offsets_topic_partitions,
                                  self.config.transaction_topic_partitions)
        if spec is not None and spec.name not in self.image.topics and live > 0:
            self.create_topic(spec.name, spec.partitions, replication_factor,
                              configs=spec.configs)

    # -- partitions -------------------------------------------------------------------------

    def log(self, topic_id: uuid.UUID, partition: int) -> PartitionLog | None:
        """The leader's log (the controller's view), where produced batches go."""
        replica_set = self.replication.get(topic_id, partition)
        return None if replica_set is None else replica_set.leader_log()

    def replica_log(self, topic_id: uuid.UUID, partition: int,
                    broker_id: int) -> PartitionLog | None:
        """Broker `broker_id`'s replica of the partition (None when it holds none)."""
        replica_set = self.replication.get(topic_id, partition)
        return None if replica_set is None else replica_set.logs.get(broker_id)

    def replicas(self, topic: str, partition: int) -> PartitionReplicas | None:
        return self.replication.by_name(topic, partition)

    def lag_time_max_ms(self) -> int:
        """replica.lag.time.max.ms (a static broker setting in Kafka, not dynamic)."""
        return self.config.replica_lag_time_max_ms

    def aborted_transactions(self, log: PartitionLog, start: int,
                             end: int) -> list[dict[str, int]]:
        """Aborted transactions overlapping [start, end) for read_committed fetches."""
        return [{"producer_id": pid, "first_offset": first}
                for pid, first, last in log.aborted_index if last >= start and first < end]

    def elect_leader(self, topic: str, partition: int, broker: int | None = None) -> int:
        """Move (or re-elect) leadership; the leader epoch rises by one."""
        leader = self.controller.elect_leader(topic, partition, broker)
        note_leader_epoch(self, topic, partition)
        self.propagate()
        return leader

    def note_leader_epoch(self, topic: str, partition: int) -> None:
        """The partition's log starts its current leader epoch (after an epoch bump)."""
        note_leader_epoch(self, topic, partition)

    def set_isr(self, topic: str, partition: int, isr: list[int]) -> None:
        """Replace the ISR; replicas left out stay out (the lag rule does not bring them
        back) until resume-replication or their broker restarts."""
        image = self.image.partition(topic, partition)
        if image is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"unknown partition {topic}-{partition}")
        if not isr or any(r not in image.replicas for r in isr):
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"ISR {isr} must be a non-empty subset of {list(image.replicas)}")
        self.controller.change_partition(topic, partition, isr=isr)
        self.propagate()
        replica_set = self.replicas(topic, partition)
        if replica_set is not None:
            replica_set.pin_isr(isr)
            replica_set.update_high_watermark()

    def move_replica_dir(self, topic: str, partition: int, broker_id: int,
                         directory: uuid.UUID) -> None:
        """A replica moved between its broker's log directories (AlterReplicaLogDirs):
        recorded as a PartitionChangeRecord naming the new directory (log_dirs.py)."""
        image = self.image.partition(topic, partition)
        if image is None or broker_id not in image.replicas:
            raise ClusterError(ErrorCode.REPLICA_NOT_AVAILABLE,
                               f"broker {broker_id} has no replica of {topic}-{partition}")
        directories = list(self.controller.directories_for(partition, image.replicas, image))
        directories[image.replicas.index(broker_id)] = directory
        self.controller.change_partition(topic, partition, directories=directories)
        self.propagate()

    # -- the data path ----------------------------------------------------------------------

    def check_leader(self, node: BrokerNode, topic: str, partition: int,
                     current_leader_epoch: int = NO_EPOCH_CHECK,
                     topic_image: TopicImage | None = None, *,
                     leader_only: bool = True) -> LeaderCheck:
        """Fencing and leadership of `partition` as broker `node` sees it (leadership.py);
        `leader_only=False`: any replica may serve (KIP-392 consumer reads)."""
        return check_leader(node.image, node.broker_id, topic, partition,
                            self._replica_lookup(node.broker_id), current_leader_epoch,
                            topic_image, leader_only=leader_only)

    def preferred_read_replica(self, node: BrokerNode, topic: TopicImage, part: PartitionImage,
                               client_rack: str | None, fetch_offset: int) -> int:
        """KIP-392: the follower leader `node` sends a consumer in `client_rack` to, or -1
        (replica.selector.class decides; read_replicas.py)."""
        selector = self.config.replica_selector_class
        replica_set = self.replication.get(topic.topic_id, part.partition) if selector else None
        if replica_set is None:
            return NO_PREFERRED_REPLICA
        return preferred_read_replica(selector, node.image, part, replica_set, client_rack,
                                      fetch_offset, self.clock.now_ms())

    def _replica_lookup(self, broker_id: int) -> Callable[[uuid.UUID, int], PartitionLog | None]:
        lookup = self._replica_lookups.get(broker_id)
        if lookup is None:
            def lookup(topic_id: uuid.UUID, partition: int) -> PartitionLog | None:
                return self.replica_log(topic_id, partition, broker_id)
            self._replica_lookups[broker_id] = lookup
        return lookup

    def replication_wait(self, node: BrokerNode, topic: str, partition: int,
                         result: AppendResult) -> ReplicationWait | None:
        """After an acks=all append answered `result` on `node`: what the answer must wait
        for (the high watermark to cover the batch), None when it may go out now."""
        if not result.ok:
            return None
        min_isr = produce_settings(self.topic_config(topic, node.image)).min_insync_replicas
        return self.replication.wait_for(node, topic, partition, min_isr)

    def ack_status(self, wait: ReplicationWait) -> ErrorCode | None:
        """The waiting acks=all answer's error code once decided, else None."""
        return self.replication.ack_status(wait)

    def produce(self, node: BrokerNode, topic: str, partition: int,
                records: bytes | memoryview | None, *, acks: int,
                current_leader_epoch: int = NO_EPOCH_CHECK,
                zstd_allowed: bool = True,
                verification: ProduceVerification = ProduceVerification.DEFAULT_ERROR
                ) -> AppendResult:
        """One partition of a Produce request received by `node` (produce.py has the order
        of the checks). Nothing is written unless every check passes. `zstd_allowed`:
        the request's version permits zstd (Produce v7+); `verification`: what a
        transactional batch asks of the coordinator (KIP-890, by Produce version)."""
        check = self.check_leader(node, topic, partition, current_leader_epoch)
        if check.error != ErrorCode.NONE or check.log is None or check.partition is None:
            return AppendResult(check.error)
        part: PartitionImage = check.partition
        if not node.up:  # stopped: requests read before its sockets closed append nothing
            return AppendResult(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                message=f"Broker {node.broker_id} is shutting down and no longer leads "
                        f"{topic}-{partition}")
        config = self.topic_config(topic, node.image, node.broker_id)
        min_isr = produce_settings(config).min_insync_replicas
        if acks == -1 and len(part.isr) < min_isr:
            return AppendResult(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                message=f"The size of the current ISR {list(part.isr)} is insufficient to "
                        f"satisfy the min.isr requirement of {min_isr}")
        now = self.clock.now_ms()
        checked = check_produced_records(records, config, now, zstd_allowed=zstd_allowed,
                                         topic=topic, partition=partition)
        if isinstance(checked, AppendResult):
            return checked
        batch, header = checked
        append_time = now if produce_settings(config).log_append_time else None

        def verify_transaction(producer_id: int, epoch: int) -> ErrorCode:
            return self.transactions.verify_produce(producer_id, epoch, topic, partition,
                                                    verification)

        return check.log.append_producer_batch(batch, header, part.leader_epoch,
                                               verify_transaction=verify_transaction,
                                               log_append_time_ms=append_time)

    def _marker_target(self, topic: str, partition: int) -> tuple[PartitionLog, int] | None:
        """Where a transaction marker for (topic, partition) goes: its log and the current
        leader epoch, from the controller's image (the coordinator writes to the leader)."""
        topic_image = self.image.topics.get(topic)
        part = topic_image.partitions.get(partition) if topic_image else None
        if topic_image is None or part is None:
            return None
        log = self.log(topic_image.topic_id, partition)
        return None if log is None else (log, part.leader_epoch)

    # -- faults and lifecycle (dynamics.py) -------------------------------------------------

    def fence_broker(self, broker_id: int) -> None:
        """A stopped broker leaves: fenced, its leaderships moved, ISRs shrunk."""
        fence_broker(self, broker_id)
        if self._share_groups is not None:
            self._share_groups.drop_broker_sessions(broker_id)

    def rejoin_broker(self, broker_id: int) -> None:
        """A restarted broker (after `start_broker`) catches up and rejoins its ISRs."""
        rejoin_broker(self, broker_id)

    def unclean_elect(self, topic: str, partition: int, broker: int,
                      truncate_to: int | None = None) -> UncleanResult:
        """Elect a replica outside the ISR; its log wins (truncated to `truncate_to` when
        given) and the other replicas truncate where they diverge from it."""
        return unclean_elect(self, topic, partition, broker, truncate_to)

    def pause_metadata(self, broker_id: int) -> None:
        """The broker stops applying the metadata log and answers from its image."""
        self.brokers[broker_id].paused = True

    def resume_metadata(self, broker_id: int) -> None:
        """Undo pause_metadata and delay_metadata: the broker catches up at once."""
        node = self.brokers[broker_id]
        node.paused = False
        node.metadata_delay_ms = 0
        self.propagate()

    def delay_metadata(self, broker_id: int, delay_ms: int) -> None:
        """The broker applies each metadata record `delay_ms` after it was written."""
        self.metadata_delays.set_delay(self.brokers[broker_id], delay_ms)

    def reset(self) -> None:
        """Empty topics, dynamic broker configs, groups, offsets, producers, transactions;
        brokers resume metadata catch-up. Brokers and the metadata log itself remain."""
        reset_state(self)
        self.log_manager.reset()
        self.telemetry.reset()
        self.credentials.reset()
        if self._share_groups is not None:
            self._share_groups.reset()
        self.reassignments.reset()
        self.acls.reset()
        self.acl_control.reset()
        self.quotas.reset()
        self.mutation_quotas.reset()

    def _write_client_quotas(self, entity: Entity, ops: list[tuple[str, float | None]]) -> None:
        self.controller.alter_client_quotas(entity, ops)
        self.propagate()

    def set_configs(self, changes: list[tuple[int, str, str, str | None]]) -> None:
        """Write dynamic config changes (resource type, resource name, key, value or None
        to delete) through the controller's log; every broker applies them."""
        for resource_type, resource_name, key, value in changes:
            self.controller.set_config(resource_type, resource_name, key, value)
        if changes:
            self.propagate()

    # -- configuration ----------------------------------------------------------------------

    def topic_config(self, name: str, image: MetadataImage | None = None,
                     broker_id: int | None = None) -> dict[str, str]:
        """Effective topic configuration: defaults (static broker settings, cluster-wide and,
        given `broker_id`, that broker's dynamic settings) overlaid with the topic's overrides.

        Produce reads this per partition, so results are cached per metadata offset: every
        image at a given offset applied the same records, so brokers share entries, and
        nothing but a new record (a new offset) changes the answer. Callers must not mutate
        the returned dict.
        """
        view = image or self.image
        key = (name, view.offset, broker_id)
        cached = self._topic_config_cache.get(key)
        if cached is not None:
            return cached
        if len(self._topic_config_cache) > 4096:
            self._topic_config_cache.clear()
        values = self._compute_topic_config(name, view, broker_id)
        self._topic_config_cache[key] = values
        return values

    def _compute_topic_config(self, name: str, view: MetadataImage,
                              broker_id: int | None) -> dict[str, str]:
        values = {k: c.default for k, c in TOPIC_CONFIGS.items() if c.default is not None}
        # static broker settings (server.properties) are the topics' defaults (Kafka)
        values.update(topic_defaults_from_broker(self.static_broker_config(0)))
        # dynamic broker settings apply to topics without an override: cluster-wide, then
        # the broker's own (Kafka's log defaults on that broker)
        layers = [view.configs.get((RESOURCE_BROKER, ""), {})]
        if broker_id is not None:
            layers.append(view.configs.get((RESOURCE_BROKER, str(broker_id)), {}))
        for dynamic in layers:
            for key, definition in TOPIC_CONFIGS.items():
                if definition.broker_synonym in dynamic:
                    values[key] = dynamic[definition.broker_synonym]
        values.update(view.topic_config(name))
        return values

    def broker_config(self, broker_id: int,
                      image: MetadataImage | None = None) -> dict[str, str]:
        """Effective broker configuration: static settings overlaid with dynamic ones (from
        `image`, default the controller's)."""
        view = image or self.image
        values = self.static_broker_config(broker_id)
        values.update(view.configs.get((RESOURCE_BROKER, ""), {}))  # cluster-wide
        values.update(view.configs.get((RESOURCE_BROKER, str(broker_id)), {}))
        return values

    def static_broker_config(self, broker_id: int) -> dict[str, str]:
        """What the broker was started with (its server.properties): Kafka's defaults,
        ClusterConfig and broker_properties (broker_properties.static_values)."""
        node = self.brokers.get(broker_id)
        host, port = (node.host, node.port) if node is not None else ("", 0)
        values = static_values(self.config, broker_id, host, port)
        consumer = self.config.consumer_group  # KIP-848 group settings, unless given as properties
        for key, value in {
                "group.consumer.heartbeat.interval.ms": str(consumer.heartbeat_interval_ms),
                "group.consumer.session.timeout.ms": str(consumer.session_timeout_ms),
                "group.consumer.assignors": ",".join(consumer.assignors),
                "group.consumer.max.size": str(consumer.max_size),
                "group.consumer.migration.policy": consumer.migration_policy}.items():
            if key not in self.config.broker_properties:
                values[key] = value
        return values
