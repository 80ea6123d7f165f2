"""The state a cluster owns, its subsystems wired together, and the metadata flow.

Theory of operation: `ClusterState.__init__` is the one place where a cluster's subsystems
are built and connected: the storage first (a data directory replays its metadata log into
the controller), then the brokers, replication, the coordinators (classic and KIP-848 groups,
transactions, with share groups built on first use), client quotas and controller mutation
quotas, ACLs, SASL credentials, log management, and last the restore of stored replica logs
and offsets. Each subsystem gets the narrow callbacks it needs (a clock, a partition lookup,
`propagate`), and every deadline check registers as a ticker run by `tick`.

The metadata flow lives here too: `propagate()` lets every running, unpaused broker apply
the controller's log (the controller's long-poll answering the brokers' fetches), the
metadata tick lets brokers left behind catch up and runs the broker heartbeats
(heartbeat_rounds.py) and session expiry (broker_sessions.py), and `read_image` gives consistent
reads. The effective topic and broker configurations (static settings, dynamic broker configs,
topic overrides) are resolved here, cached per metadata offset for the produce path.

`Cluster` (cluster.py) is this class plus the methods of cluster_topics.py,
cluster_data_path.py and cluster_lifecycle.py, each a subclass of ClusterState, so every one
of them sees the same typed state and none imports another.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.broker_sessions import expire as expire_sessions
from mockbroker.cluster.client_telemetry.telemetry_receiver import ClientTelemetry
from mockbroker.cluster.clock import Clock, SystemClock
from mockbroker.cluster.cluster_config import GENERATED_CLUSTER_IDS, ClusterConfig
from mockbroker.cluster.configs.broker_properties import (
    apply_broker_properties,
    static_values,
    topic_defaults_from_broker,
)
from mockbroker.cluster.configs.config_defs import TOPIC_CONFIGS
from mockbroker.cluster.dynamics import MetadataDelays, note_leader_epoch
from mockbroker.cluster.groups.classic_group_model import pick_coordinator
from mockbroker.cluster.groups.classic_groups import DEFAULT_CLEANUP_INTERVAL_MS, GroupCoordinator
from mockbroker.cluster.groups.consumer_groups import ConsumerGroupCoordinator
from mockbroker.cluster.kraft.broker import BrokerNode
from mockbroker.cluster.kraft.controller import Controller
from mockbroker.cluster.kraft.feature_renegotiation import FeatureRenegotiation
from mockbroker.cluster.kraft.heartbeat_rounds import HeartbeatRequest, heartbeat_round
from mockbroker.cluster.kraft.image_history import ImageHistory
from mockbroker.cluster.kraft.metadata_log import RESOURCE_BROKER, RESOURCE_GROUP, MetadataImage
from mockbroker.cluster.kraft.reassignment import Reassignments
from mockbroker.cluster.log.log_manager import LogManager
from mockbroker.cluster.log.partition import PartitionLog
from mockbroker.cluster.log.produce_path import effective_min_isr
from mockbroker.cluster.log.read_replicas import check_racks, check_selector
from mockbroker.cluster.log.replicas import PartitionReplicas, Replication
from mockbroker.cluster.persistence.data_dir import FileStorage, MemoryStorage
from mockbroker.cluster.persistence.restore import restore
from mockbroker.cluster.producers.txn_coordinator import MarkerTarget, TransactionCoordinator
from mockbroker.cluster.quotas.mutation_quota import (
    CONTROLLER_MUTATION_RATE,
    ControllerMutationQuotas,
)
from mockbroker.cluster.quotas.quota_manager import Entity, QuotaManager
from mockbroker.cluster.security.acl_control import AclControl
from mockbroker.cluster.security.authorizer import Authorizer, parse_super_users
from mockbroker.cluster.security.scram_control import UserCredentials

if TYPE_CHECKING:  # built on first use (Cluster.share_groups)
    from mockbroker.cluster.groups.share_group_coordinator import ShareGroupCoordinator

_log = logging.getLogger(__name__)
PRODUCER_ID_BLOCK = 1000


class ClusterState:
    """The subsystems of one cluster and the metadata flow between controller and brokers."""

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
            self.config.cluster_id, self.config.cluster_id in GENERATED_CLUSTER_IDS)
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
                                       self.config.group_max_size,
                                       int(self.static_broker_config(0).get(
                                           "offsets.retention.check.interval.ms",
                                           DEFAULT_CLEANUP_INTERVAL_MS)))
        self.add_ticker(self.groups.tick)
        self.consumer_groups = ConsumerGroupCoordinator(
            self.clock, self._topic_partition_counts, self.groups, self.config.consumer_group,
            coordinator_of=lambda group_id: self.coordinator_for(0, group_id))
        self.groups.owned_elsewhere = self.consumer_groups.groups.__contains__
        self.add_ticker(self.consumer_groups.tick)
        self.add_ticker(self._metadata_tick)
        static = self.static_broker_config(0)
        self.transactions = TransactionCoordinator(
            self.clock, self.allocate_producer_id, self._marker_target, self.groups.offsets,
            max_timeout_ms=self.config.transaction_max_timeout_ms,
            id_expiration_ms=int(static["transactional.id.expiration.ms"]),
            cleanup_interval_ms=int(static[
                "transaction.remove.expired.transaction.cleanup.interval.ms"]))
        self.add_ticker(self.transactions.tick)
        self.metadata_delays = MetadataDelays(self)
        self.reassignments = Reassignments(self, self.config.reassignment_delay_ms)
        self.add_ticker(self.reassignments.tick)
        self.telemetry = ClientTelemetry(self.clock, self.config.client_telemetry)
        self.add_ticker(self.telemetry.expire)  # instances idle past Kafka's expiry go
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
        # measurements of clients that stopped counting go (client ids are the client's)
        self.add_ticker(self.quotas.expire)
        self.add_ticker(self.mutation_quotas.expire)
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
        share_group_coordinator.py); the group-id namespace is shared with the classic/KIP-848
        coordinator through `other_group_type` only."""
        if self._share_groups is None:
            from mockbroker.cluster.groups.share_group_coordinator import ShareGroupCoordinator

            self._share_groups = ShareGroupCoordinator(
                self.clock,
                partition_counts=lambda: {n: len(t.partitions)
                                          for n, t in self.image.topics.items()},
                other_group_type=lambda g: (
                    "classic" if g in self.groups.groups else
                    "consumer" if g in self.consumer_groups.groups else None),
                log_lookup=self.log,
                admin_configs=lambda g: self.image.configs.get((RESOURCE_GROUP, g), {}))
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
            self.propagate()  # as after every change: the brokers apply the record now
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

    # -- partition lookups ------------------------------------------------------------------

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

    def note_leader_epoch(self, topic: str, partition: int) -> None:
        """The partition's log starts its current leader epoch (after an epoch bump)."""
        note_leader_epoch(self, topic, partition)

    def _marker_target(self, topic: str, partition: int) -> MarkerTarget | None:
        """Where a transaction marker for (topic, partition) goes: its leader's log and
        leader epoch, from the controller's image (the coordinator writes to the leader),
        and whether the leader takes it now (it is up and reachable, and the ISR holds
        min.insync.replicas: Kafka appends markers with acks=all)."""
        topic_image = self.image.topics.get(topic)
        part = topic_image.partitions.get(partition) if topic_image else None
        if topic_image is None or part is None:
            return None
        log = self.log(topic_image.topic_id, partition)
        if log is None:
            return None
        node = self.brokers.get(part.leader)
        min_isr = effective_min_isr(int(self.topic_config(topic)["min.insync.replicas"]),
                                    len(part.replicas))
        writable = node is not None and node.up and not node.isolated \
            and len(part.isr) >= min_isr
        return MarkerTarget(log, part.leader_epoch, writable)

    def _write_client_quotas(self, entity: Entity, ops: list[tuple[str, float | None]]) -> None:
        self.controller.alter_client_quotas(entity, ops)
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
