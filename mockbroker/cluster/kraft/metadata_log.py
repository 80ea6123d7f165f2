"""The controller's metadata log and the per-broker images built from it.

Theory of operation: every change to cluster metadata is a typed record shaped exactly like
KRaft's (the codec knows their schemas; each record is encoded once on append, which both
validates its shape and gives the log real bytes). A record's position in the log is its
metadata offset. A MetadataImage is the result of applying the log up to some offset; the
controller keeps an image at the log end, and every broker keeps its own image at its own
applied offset, so a broker whose catch-up is paused keeps answering from older metadata,
as a lagging Kafka broker does.

Images are copy-on-write at partition granularity: PartitionImage is frozen and replaced on
change, so applying a record never disturbs objects another broker's image still holds.

Readers may memoise what they derive from a topic's partitions in `TopicImage.views` (the
Metadata handler keeps its partition entries there, so a 10,000-partition topic is not
rebuilt per request). Every change to the topic's partitions replaces that dict with an
empty one, so a view is never older than the partitions it came from; a copied image starts
from the same views (its partitions are equal), in a dict of its own.

The cluster id is not a record: in KRaft it lives in meta.properties beside the metadata log
(written by `kafka-storage format`) and travels in the Raft fetches brokers send to the
controller quorum. Here the log carries it (MetadataLog.cluster_id), and a broker's image
takes it from the log when the broker fetches from it (MetadataImage.cluster_id).

Security state is metadata too, as in KRaft: ACL bindings (AccessControlEntryRecord, kept
in `MetadataImage.acls`, acls.AclsImage) and SASL credentials (UserScramCredentialRecord,
`MetadataImage.scram`, credentials.ScramImage). Each family applies its own records, so a
broker authorizes and authenticates by the image it has applied.

Records may carry mockbroker's documented extensions (wire_extensions.py): a PartitionRecord
written by a partition expansion carries the leader epochs of the partitions before it
(KIP-253), kept on the PartitionImage as `prior_leader_epochs`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from kafka_protocol_codec import codec_for, metadata_record

from mockbroker.cluster import wire_extensions
from mockbroker.cluster.kafka_uuid import ZERO_UUID
from mockbroker.cluster.quotas.quota_records import CLIENT_QUOTA, QuotaEntities, apply_client_quota
from mockbroker.cluster.security.authorizer import ACL_RECORD_TYPES, AclsImage
from mockbroker.cluster.security.credentials import SCRAM_RECORD_TYPES, ScramImage

wire_extensions.register()  # PartitionRecord's extension must be known before any append

# Record type ids, as in Kafka's metadata record schemas.
REGISTER_BROKER = 0
UNREGISTER_BROKER = 1
TOPIC = 2
PARTITION = wire_extensions.PARTITION_RECORD
CONFIG = 4
PARTITION_CHANGE = 5
FENCE_BROKER = 7
UNFENCE_BROKER = 8
REMOVE_TOPIC = 9
FEATURE_LEVEL = 12
PRODUCER_IDS = 15

NO_LEADER = -1
UNASSIGNED_DIR = ZERO_UUID  # Kafka's DirectoryId.UNASSIGNED
NO_LEADER_CHANGE = -2

# ConfigResource types (DescribeConfigs / ConfigRecord).
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32  # KIP-848/KIP-932 group configs


@dataclass(frozen=True)
class MetadataRecord:
    """One record of the metadata log: offset, type and version, its fields, and the
    encoding the log keeps and replicates."""

    offset: int
    record_type: int
    version: int
    data: dict[str, Any]
    encoded: bytes


class MetadataLog:
    """An append-only list of records; the offset of a record is its index."""

    def __init__(self, cluster_id: str | None = None) -> None:
        self.records: list[MetadataRecord] = []
        self.cluster_id = cluster_id  # meta.properties of the log, not a record
        # called with the appended records, one call per record or per atomic group
        # (data_dir.FileStorage writes each call as one frame of the data dir's log)
        self.on_append: Callable[[Sequence[MetadataRecord]], None] | None = None
        self._group: list[MetadataRecord] | None = None
        self._group_depth = 0

    @property
    def end_offset(self) -> int:
        """The offset the next record will get (also the number of records)."""
        return len(self.records)

    def append(self, record_type: int, data: dict[str, Any]) -> MetadataRecord:
        schema = metadata_record(record_type)
        version = schema.versions.stop - 1
        codec = codec_for(schema, version)
        encoded = bytes(codec.encode(data))
        full = codec.decode(encoded)  # the record as a reader sees it, defaults filled in
        record = MetadataRecord(len(self.records), record_type, version, dict(full), encoded)
        self.records.append(record)
        if self._group is not None:
            self._group.append(record)
        elif self.on_append is not None:
            self.on_append((record,))
        return record

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Records appended inside are handed to `on_append` together, so a data directory
        keeps all of them or none (Kafka's controller writes a CreateTopics' records as one
        atomic batch)."""
        if self._group_depth == 0:
            self._group = []
        self._group_depth += 1
        try:
            yield
        finally:
            self._group_depth -= 1
            if self._group_depth == 0:
                group, self._group = self._group or [], None
                if group and self.on_append is not None:
                    self.on_append(group)

    def load(self, record_type: int, version: int, encoded: bytes) -> MetadataRecord:
        """Append a record read back from the data directory (decoded, not re-encoded)."""
        data = codec_for(metadata_record(record_type), version).decode(encoded)
        record = MetadataRecord(len(self.records), record_type, version, dict(data), encoded)
        self.records.append(record)
        return record

    def since(self, offset: int) -> list[MetadataRecord]:
        """Records after `offset` (the last offset already applied; -1 for none)."""
        return self.records[offset + 1:]


@dataclass(frozen=True)
class BrokerImage:
    """A registered broker as the metadata image knows it: endpoint, rack, epoch, fencing
    and log directories."""

    broker_id: int
    host: str
    port: int
    rack: str | None
    epoch: int
    fenced: bool
    log_dirs: tuple[uuid.UUID, ...] = ()  # KIP-858: the ids of the broker's log directories


@dataclass(frozen=True)
class PartitionImage:
    """A partition as the metadata image knows it (Kafka's PartitionRegistration): leader,
    epochs, replicas and ISR."""

    partition: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    # KIP-253: (prior partition, its leader epoch before the expansion that created this
    # partition); empty for partitions created with the topic. dict() of it is the map.
    prior_leader_epochs: tuple[tuple[int, int], ...] = ()
    # KIP-455: replicas joining and leaving while a reassignment is in progress
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    # KIP-858: the log directory id of each replica (same order as replicas)
    directories: tuple[uuid.UUID, ...] = ()

    def directory_of(self, broker_id: int) -> uuid.UUID | None:
        """The log directory id holding `broker_id`'s replica (None: not a replica)."""
        if broker_id not in self.replicas:
            return None
        index = self.replicas.index(broker_id)
        return self.directories[index] if index < len(self.directories) else UNASSIGNED_DIR


@dataclass
class TopicImage:
    """A topic in the metadata image: its id and partitions, and what readers derived from
    them (dropped on every change)."""

    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionImage] = field(default_factory=dict)
    # reader name -> what that reader derived from `partitions`; emptied on every change
    views: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def set_partition(self, partition: PartitionImage) -> None:
        """Add or replace one partition; the views derived from the old ones are dropped."""
        self.partitions[partition.partition] = partition
        self.views = {}


@dataclass
class MetadataImage:
    """Cluster metadata as of one offset of the metadata log."""

    offset: int = -1
    cluster_id: str | None = None  # from the log this image was built from
    brokers: dict[int, BrokerImage] = field(default_factory=dict)
    topics: dict[str, TopicImage] = field(default_factory=dict)
    topics_by_id: dict[uuid.UUID, TopicImage] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    # client quota entities (ClientQuotaRecord, quota_records.py)
    client_quotas: QuotaEntities = field(default_factory=dict)
    # the ACL bindings (AccessControlEntryRecord), which the broker authorizes by
    acls: AclsImage = field(default_factory=AclsImage)
    # SCRAM credentials and PLAIN verifiers (UserScramCredentialRecord), which the broker
    # authenticates by
    scram: ScramImage = field(default_factory=ScramImage)

    def copy(self) -> MetadataImage:
        topics = {name: TopicImage(t.name, t.topic_id, dict(t.partitions), dict(t.views))
                  for name, t in self.topics.items()}
        return MetadataImage(
            self.offset, self.cluster_id, dict(self.brokers), topics,
            {t.topic_id: t for t in topics.values()},
            {k: dict(v) for k, v in self.configs.items()}, dict(self.features),
            dict(self.client_quotas), acls=self.acls.copy(), scram=self.scram.copy())

    def partition(self, topic: str, index: int) -> PartitionImage | None:
        t = self.topics.get(topic)
        return t.partitions.get(index) if t is not None else None

    def topic_config(self, topic: str) -> dict[str, str]:
        return self.configs.get((RESOURCE_TOPIC, topic), {})

    def live_brokers(self) -> list[BrokerImage]:
        return [b for b in sorted(self.brokers.values(), key=lambda b: b.broker_id)
                if not b.fenced]

    def apply(self, record: MetadataRecord) -> None:
        """Apply one record (records must arrive in log order)."""
        d = record.data
        kind = record.record_type
        if kind == REGISTER_BROKER:
            endpoint: dict[str, Any] = d["end_points"][0] if d["end_points"] else {
                "host": "", "port": 0}
            self.brokers[d["broker_id"]] = BrokerImage(
                d["broker_id"], endpoint["host"], endpoint["port"], d["rack"],
                d["broker_epoch"], d["fenced"], tuple(d.get("log_dirs") or ()))
        elif kind == UNREGISTER_BROKER:
            self.brokers.pop(d["broker_id"], None)
        elif kind in (FENCE_BROKER, UNFENCE_BROKER):
            broker = self.brokers.get(d["id"])
            if broker is not None:
                self.brokers[d["id"]] = replace(broker, fenced=kind == FENCE_BROKER)
        elif kind == TOPIC:
            topic = TopicImage(d["name"], d["topic_id"])
            self.topics[topic.name] = topic
            self.topics_by_id[topic.topic_id] = topic
        elif kind == REMOVE_TOPIC:
            removed = self.topics_by_id.pop(d["topic_id"], None)
            if removed is not None:
                self.topics.pop(removed.name, None)
                self.configs.pop((RESOURCE_TOPIC, removed.name), None)
        elif kind == PARTITION:
            owner = self.topics_by_id[d["topic_id"]]
            owner.set_partition(PartitionImage(
                d["partition_id"], d["leader"], d["leader_epoch"], d["partition_epoch"],
                tuple(d["replicas"]), tuple(d["isr"]),
                tuple((p["partition_id"], p["leader_epoch"])
                      for p in d.get("prior_leader_epochs") or ()),
                tuple(d["adding_replicas"]), tuple(d["removing_replicas"]),
                tuple(d.get("directories") or ())))
        elif kind == PARTITION_CHANGE:
            self._apply_partition_change(d)
        elif kind == CONFIG:
            key = (d["resource_type"], d["resource_name"])
            if d["value"] is None:
                self.configs.get(key, {}).pop(d["name"], None)
            else:
                self.configs.setdefault(key, {})[d["name"]] = d["value"]
        elif kind == FEATURE_LEVEL:
            self.features[d["name"]] = d["feature_level"]
        elif kind == CLIENT_QUOTA:
            apply_client_quota(self.client_quotas, d)
        elif kind in ACL_RECORD_TYPES:
            self.acls.apply(kind, d)
        elif kind in SCRAM_RECORD_TYPES:
            self.scram.apply(kind, d)
        self.offset = record.offset

    def _apply_partition_change(self, d: dict[str, Any]) -> None:
        owner = self.topics_by_id.get(d["topic_id"])
        if owner is None or d["partition_id"] not in owner.partitions:
            return
        old = owner.partitions[d["partition_id"]]
        leader, epoch = old.leader, old.leader_epoch
        if d["leader"] != NO_LEADER_CHANGE:
            # As in KRaft: any record that names a leader starts a new leader epoch.
            leader, epoch = d["leader"], old.leader_epoch + 1
        owner.set_partition(replace(
            old, leader=leader, leader_epoch=epoch, partition_epoch=old.partition_epoch + 1,
            isr=tuple(d["isr"]) if d["isr"] is not None else old.isr,
            replicas=tuple(d["replicas"]) if d["replicas"] is not None else old.replicas,
            adding_replicas=_changed(d, "adding_replicas", old.adding_replicas),
            removing_replicas=_changed(d, "removing_replicas", old.removing_replicas),
            directories=_changed(d, "directories", old.directories)))


def _changed(d: dict[str, Any], key: str, old: tuple[Any, ...]) -> tuple[Any, ...]:
    """A PartitionChangeRecord list field: null keeps the old value."""
    value = d.get(key)
    return old if value is None else tuple(value)
