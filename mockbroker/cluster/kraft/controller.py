"""The controller: the only writer of the metadata log.

Theory of operation: every metadata change (brokers registering or being fenced, topics,
partitions, leaders and ISRs, configs, client quotas) is decided here and written as
KRaft-shaped records; nothing else mutates metadata. ACLs and SCRAM credentials are decided by
their own control managers (acl_control.py, scram_control.py) against this image and written
through `write`. The controller keeps its own image at the log end to validate
requests against current state. Brokers learn of changes only by applying the log (see
cluster.Cluster.propagate), so they see every change in log order.

Leader election follows KRaft: a PartitionChangeRecord that names a leader starts a new
leader epoch, even when the leader stays the same.

Partition expansion follows KIP-253: before adding partitions, the controller
starts a new leader epoch on every existing partition of the topic (one PartitionChange
naming the current leader each), and each new PartitionRecord carries the map prior
partition -> leader epoch before the expansion (a documented tagged-field extension of
PartitionRecord, see wire_extensions.py).

Heartbeats (draft KIP): brokers send BrokerHeartbeat v1 requests carrying their applied
metadata offset (see heartbeat_rounds.py). The controller keeps each broker's acknowledged offset
(`acknowledged_offsets`) and the lowest offset acknowledged by every unfenced broker
(`lowest_acknowledged_offset`), which it returns in each response. The lowest never moves
back: a broker that is unfenced while still behind (restarted with its metadata paused)
counts once it has caught up to it, as KRaft unfences a broker only once it has caught up.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.cluster_errors import ClusterError
from mockbroker.cluster.kafka_uuid import random_uuid
from mockbroker.cluster.kraft.metadata_log import (
    CONFIG,
    FEATURE_LEVEL,
    FENCE_BROKER,
    NO_LEADER,
    NO_LEADER_CHANGE,
    PARTITION,
    PARTITION_CHANGE,
    PRODUCER_IDS,
    REGISTER_BROKER,
    REMOVE_TOPIC,
    RESOURCE_TOPIC,
    TOPIC,
    UNFENCE_BROKER,
    UNREGISTER_BROKER,
    MetadataImage,
    MetadataLog,
    MetadataRecord,
    PartitionImage,
)
from mockbroker.cluster.log.log_dir_ids import place
from mockbroker.cluster.quotas.quota_manager import Entity
from mockbroker.cluster.quotas.quota_records import CLIENT_QUOTA, client_quota_records

if TYPE_CHECKING:  # the generated request class, for annotations only
    from kafka_protocol_codec.generated.broker_heartbeat import BrokerHeartbeatRequest

METADATA_VERSION = 21  # the metadata.version feature level of Kafka 3.9 (3.9-IV0)
# transaction.version (KIP-890): 0 the original protocol, 1 flexible transaction-log
# records, 2 transactions v2 (epoch bump per transaction, implicit adds). A fresh Kafka 4.0
# cluster finalizes 2, as the coordinator here speaks it.
TRANSACTION_VERSION_FEATURE = "transaction.version"
TRANSACTION_VERSION_LEVEL = 2


class Controller:
    def __init__(self, cluster_id: str | None = None,
                 metadata_version: int = METADATA_VERSION, *,
                 replay: Sequence[tuple[int, int, bytes]] = (),
                 on_append: Callable[[Sequence[MetadataRecord]], None] | None = None
                 ) -> None:
        """`replay`: records (type, version, encoded) of a log kept in a data directory,
        applied in order instead of formatting a new log; `on_append` sees every record
        appended from then on."""
        self.log = MetadataLog(cluster_id)
        self.image = MetadataImage(cluster_id=cluster_id)
        self.epoch = 1
        self._broker_epochs: dict[int, int] = {}
        # the end of the last producer-id block handed out (ProducerIdsRecord)
        self.producer_ids_end = 0
        # broker id -> metadata offset its latest heartbeat acknowledged
        self.acknowledged_offsets: dict[int, int] = {}
        self.lowest_acknowledged_offset = -1
        for record_type, version, encoded in replay:
            self._replay(self.log.load(record_type, version, encoded))
        self.log.on_append = on_append
        if not replay:
            self._append(FEATURE_LEVEL, {"name": "metadata.version",
                                         "feature_level": metadata_version})
            self._append(FEATURE_LEVEL, {"name": TRANSACTION_VERSION_FEATURE,
                                         "feature_level": TRANSACTION_VERSION_LEVEL})

    def _replay(self, record: MetadataRecord) -> None:
        """Apply a stored record, and recover what the controller keeps beside its image."""
        self.image.apply(record)
        if record.record_type == REGISTER_BROKER:
            self._broker_epochs[record.data["broker_id"]] = record.data["broker_epoch"]
        elif record.record_type == PRODUCER_IDS:
            self.producer_ids_end = max(self.producer_ids_end,
                                        record.data["next_producer_id"])

    def _append(self, record_type: int, data: dict[str, object]) -> MetadataRecord:
        record = self.log.append(record_type, data)
        self.image.apply(record)
        return record

    def write(self, records: Sequence[tuple[int, dict[str, object]]]) -> None:
        """Append the records a family's control manager decided (acl_control.py,
        scram_control.py, as Kafka's QuorumController delegates to AclControlManager and
        ScramControlManager) as one atomic batch."""
        with self.log.atomic():
            for record_type, data in records:
                self._append(record_type, data)

    # -- brokers ----------------------------------------------------------------------------

    def register_broker(self, broker_id: int, host: str, port: int,
                        rack: str | None = None,
                        log_dirs: Sequence[uuid.UUID] = ()) -> None:
        epoch = self._broker_epochs.get(broker_id, 0) + 1
        self._broker_epochs[broker_id] = epoch
        with self.log.atomic():
            self._append(REGISTER_BROKER, {
                "broker_id": broker_id, "incarnation_id": uuid.uuid4(), "broker_epoch": epoch,
                "end_points": [{"name": "PLAINTEXT", "host": host, "port": port,
                                "security_protocol": 0}],
                "rack": rack, "fenced": True, "log_dirs": list(log_dirs)})
            self._append(UNFENCE_BROKER, {"id": broker_id, "epoch": epoch})

    def unregister_broker(self, broker_id: int) -> None:
        """UnregisterBrokerRecord: the registration goes (the next one gets a new epoch)."""
        self._append(UNREGISTER_BROKER, {"broker_id": broker_id,
                                         "broker_epoch": self._broker_epochs[broker_id]})

    def fence_broker(self, broker_id: int) -> None:
        self._append(FENCE_BROKER, {"id": broker_id, "epoch": self._broker_epochs[broker_id]})

    def unfence_broker(self, broker_id: int) -> None:
        self._append(UNFENCE_BROKER, {"id": broker_id, "epoch": self._broker_epochs[broker_id]})

    def allocate_producer_ids(self, broker_id: int, next_producer_id: int) -> None:
        self.producer_ids_end = max(self.producer_ids_end, next_producer_id)
        self._append(PRODUCER_IDS, {"broker_id": broker_id,
                                    "broker_epoch": self._broker_epochs.get(broker_id, 0),
                                    "next_producer_id": next_producer_id})

    # -- topics -----------------------------------------------------------------------------

    def assign_replicas(self, partitions: int, replication_factor: int,
                        first_partition: int = 0) -> list[list[int]]:
        """Round-robin replica placement over the live brokers, like Kafka's default."""
        live = [b.broker_id for b in self.image.live_brokers()]
        if replication_factor > len(live) or replication_factor < 1:
            raise ClusterError(ErrorCode.INVALID_REPLICATION_FACTOR,
                               f"Replication factor: {replication_factor} larger than "
                               f"available brokers: {len(live)}.")
        return [[live[(p + r) % len(live)] for r in range(replication_factor)]
                for p in range(first_partition, first_partition + partitions)]

    def create_topic(self, name: str, assignments: Sequence[Sequence[int]],
                     configs: dict[str, str] | None = None) -> uuid.UUID:
        if name in self.image.topics:
            raise ClusterError(ErrorCode.TOPIC_ALREADY_EXISTS,
                               f"Topic '{name}' already exists.")
        topic_id = random_uuid()
        with self.log.atomic():  # a data directory never holds half a topic
            self._append(TOPIC, {"name": name, "topic_id": topic_id})
            for key, value in (configs or {}).items():
                self._append(CONFIG, {"resource_type": RESOURCE_TOPIC, "resource_name": name,
                                      "name": key, "value": value})
            for index, replicas in enumerate(assignments):
                self._add_partition(topic_id, index, list(replicas))
        return topic_id

    def _add_partition(self, topic_id: uuid.UUID, index: int, replicas: list[int],
                       prior: list[dict[str, int]] | None = None) -> None:
        live = {b.broker_id for b in self.image.live_brokers()}
        isr = [r for r in replicas if r in live]
        self._append(PARTITION, {
            "partition_id": index, "topic_id": topic_id, "replicas": replicas, "isr": isr,
            "removing_replicas": [], "adding_replicas": [],
            "leader": isr[0] if isr else NO_LEADER, "leader_epoch": 0, "partition_epoch": 0,
            "directories": self.directories_for(index, replicas),
            "prior_leader_epochs": prior or []})

    def directories_for(self, partition: int, replicas: Sequence[int],
                        keep: PartitionImage | None = None) -> list[uuid.UUID]:
        """The log directory of each replica: where it already is (in `keep`), else one of
        its broker's registered directories (log_dirs.place)."""
        out = []
        for broker in replicas:
            current = keep.directory_of(broker) if keep is not None else None
            if current is not None:
                out.append(current)
                continue
            registered = self.image.brokers.get(broker)
            out.append(place(registered.log_dirs if registered else (), partition))
        return out

    def delete_topic(self, name: str) -> uuid.UUID:
        topic = self.image.topics.get(name)
        if topic is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               "This server does not host this topic-partition.")
        self._append(REMOVE_TOPIC, {"topic_id": topic.topic_id})
        return topic.topic_id

    def create_partitions(self, name: str, assignments: Sequence[Sequence[int]]) -> None:
        """Add partitions after the existing ones (KIP-253: every existing partition starts a
        new leader epoch first; each new one records the epochs before the expansion)."""
        topic = self.image.topics[name]
        start = len(topic.partitions)
        existing = sorted(topic.partitions.items())
        prior = [{"partition_id": index, "leader_epoch": part.leader_epoch}
                 for index, part in existing]
        with self.log.atomic():
            for index, part in existing:
                self.change_partition(name, index, leader=part.leader)
            for offset, replicas in enumerate(assignments):
                self._add_partition(topic.topic_id, start + offset, list(replicas), prior)

    def set_feature_level(self, name: str, level: int) -> None:
        """Finalize a feature at `level` (UpdateFeatures; features.py decides)."""
        self._append(FEATURE_LEVEL, {"name": name, "feature_level": level})

    def alter_client_quotas(self, entity: Entity,
                            ops: Sequence[tuple[str, float | None]]) -> None:
        """ClientQuotaRecords for one entity's changed keys, as one atomic group (the
        values are validated by quotas.check_ops before)."""
        with self.log.atomic():
            for data in client_quota_records(self.image.client_quotas, entity, ops):
                self._append(CLIENT_QUOTA, data)

    def set_config(self, resource_type: int, resource_name: str, key: str,
                   value: str | None) -> None:
        self._append(CONFIG, {"resource_type": resource_type, "resource_name": resource_name,
                              "name": key, "value": value})

    # -- leadership -------------------------------------------------------------------------

    def change_partition(self, topic: str, partition: int, *, leader: int = NO_LEADER_CHANGE,
                         isr: Sequence[int] | None = None,
                         replicas: Sequence[int] | None = None,
                         adding: Sequence[int] | None = None,
                         removing: Sequence[int] | None = None,
                         directories: Sequence[uuid.UUID] | None = None) -> None:
        """One PartitionChangeRecord; None fields stay as they are. New replicas get
        directories (directories_for) unless given."""
        image = self.image.partition(topic, partition)
        if image is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"unknown partition {topic}-{partition}")
        if replicas is not None and directories is None:
            directories = self.directories_for(partition, replicas, image)

        def optional(values: Sequence[object] | None) -> list[object] | None:
            return list(values) if values is not None else None

        self._append(PARTITION_CHANGE, {
            "partition_id": partition, "topic_id": self.image.topics[topic].topic_id,
            "leader": leader, "isr": optional(isr), "replicas": optional(replicas),
            "adding_replicas": optional(adding), "removing_replicas": optional(removing),
            "directories": optional(directories)})

    def elect_leader(self, topic: str, partition: int, broker: int | None = None) -> int:
        """Make `broker` (default: the next in-sync replica) leader; the epoch rises by 1."""
        image = self.image.partition(topic, partition)
        if image is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"unknown partition {topic}-{partition}")
        live = {b.broker_id for b in self.image.live_brokers()}
        if broker is None:
            candidates = [r for r in image.isr if r in live]
            if not candidates:
                raise ClusterError(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                   f"no live in-sync replica for {topic}-{partition}")
            # rotate to the next in-sync replica after the current leader
            if image.leader in candidates:
                broker = candidates[(candidates.index(image.leader) + 1) % len(candidates)]
            else:
                broker = candidates[0]
        elif broker not in image.replicas:
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"broker {broker} is not a replica of {topic}-{partition}")
        elif broker not in live:
            raise ClusterError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker} is not live")
        isr = list(image.isr) if broker in image.isr else [*image.isr, broker]
        self.change_partition(topic, partition, leader=broker, isr=isr)
        return broker

    # -- heartbeats ------------------------------------------------------------------------

    def broker_epoch(self, broker_id: int) -> int:
        """The epoch of the broker's current registration (-1 if it never registered)."""
        return self._broker_epochs.get(broker_id, -1)

    def heartbeat_round(self, requests: Sequence[BrokerHeartbeatRequest]) -> list[dict[str, object]]:
        """Answer BrokerHeartbeat requests that arrived together: record every broker's
        acknowledged offset first, then answer each with the lowest offset acknowledged by
        all unfenced brokers (so every broker in a round learns the same value)."""
        errors = [self._acknowledge(r) for r in requests]
        self._update_lowest()
        end = self.log.end_offset - 1
        answers: list[dict[str, object]] = []
        for request, error in zip(requests, errors, strict=True):
            registered = self.image.brokers.get(request.broker_id)
            answers.append({
                "throttle_time_ms": 0, "error_code": error,
                "is_caught_up": request.current_metadata_offset >= end,
                "is_fenced": registered is None or registered.fenced,
                "should_shut_down": bool(request.want_shut_down),
                "lowest_acknowledged_offset": self.lowest_acknowledged_offset})
        return answers

    def _acknowledge(self, request: BrokerHeartbeatRequest) -> ErrorCode:
        broker_id = request.broker_id
        if broker_id not in self.image.brokers:
            return ErrorCode.BROKER_ID_NOT_REGISTERED
        if request.broker_epoch != self._broker_epochs.get(broker_id):
            return ErrorCode.STALE_BROKER_EPOCH
        offset = min(request.current_metadata_offset, self.log.end_offset - 1)
        self.acknowledged_offsets[broker_id] = max(
            offset, self.acknowledged_offsets.get(broker_id, -1))
        return ErrorCode.NONE

    def _update_lowest(self) -> None:
        acked = [self.acknowledged_offsets.get(b.broker_id, -1)
                 for b in self.image.live_brokers()]
        if acked:
            self.lowest_acknowledged_offset = max(self.lowest_acknowledged_offset, min(acked))
