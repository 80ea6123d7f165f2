"""Topic and partition administration: what CreateTopics, DeleteTopics, CreatePartitions,
ElectLeaders, AlterReplicaLogDirs, the config APIs and the control verbs ask of the cluster.

Theory of operation: every method validates first and raises ClusterError (the error code a
Kafka broker answers) before anything is written, so a refused request changes nothing; then
the controller writes the records, replication gets a replica set per new partition, and
`propagate()` lets the brokers apply the change. The controller refuses a request that would
create more than 10,000 partitions as Kafka's QuorumController does
(`check_partitions_per_request`, also used by the CreateTopics handler over a whole
request). Auto-creation and the coordinators' internal topics (internal_topics.py) go through
`create_topic` like any other. A leader-epoch bump (elections, new partitions of a topic,
KIP-253) is noted in the partition's log (dynamics.note_leader_epoch).
"""

from __future__ import annotations

import re
import uuid

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.cluster_errors import ClusterError
from mockbroker.cluster.cluster_state import ClusterState
from mockbroker.cluster.configs.config_defs import TOPIC_CONFIGS
from mockbroker.cluster.dynamics import note_leader_epoch
from mockbroker.cluster.internal_topics import COORDINATOR_KEY_TYPES, internal_topic_for
from mockbroker.cluster.kraft.metadata_log import TopicImage

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249
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



class TopicAdministration(ClusterState):
    """Creating and deleting topics and partitions, leadership and ISR changes, dynamic
    configs (joined into Cluster)."""

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

    # -- leadership, ISR and log directories ------------------------------------------------

    def elect_leader(self, topic: str, partition: int, broker: int | None = None) -> int:
        """Move (or re-elect) leadership; the leader epoch rises by one."""
        leader = self.controller.elect_leader(topic, partition, broker)
        note_leader_epoch(self, topic, partition)
        self.propagate()
        return leader

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
        recorded as a PartitionChangeRecord naming the new directory (log_dir_ids.py)."""
        image = self.image.partition(topic, partition)
        if image is None or broker_id not in image.replicas:
            raise ClusterError(ErrorCode.REPLICA_NOT_AVAILABLE,
                               f"broker {broker_id} has no replica of {topic}-{partition}")
        directories = list(self.controller.directories_for(partition, image.replicas, image))
        directories[image.replicas.index(broker_id)] = directory
        self.controller.change_partition(topic, partition, directories=directories)
        self.propagate()

    # -- dynamic configs --------------------------------------------------------------------

    def set_configs(self, changes: list[tuple[int, str, str, str | None]]) -> None:
        """Write dynamic config changes (resource type, resource name, key, value or None
        to delete) through the controller's log; every broker applies them."""
        for resource_type, resource_name, key, value in changes:
            self.controller.set_config(resource_type, resource_name, key, value)
        if changes:
            self.propagate()

