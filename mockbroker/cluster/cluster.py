"""The cluster: controller, brokers and partition data, owned in one place.

Theory of operation: `Cluster` is the single owner of all state and is mutated only from the
event loop (it is plain synchronous code, so a handler's view never changes under it between
two statements). The controller decides metadata and writes it to the log; `propagate()` lets
each running broker apply the log to its own image. Brokers catch up at once by default;
a paused broker keeps its older image and keeps answering from it.

Partition data lives here, one PartitionLog per (topic id, partition), because replication
is simulated as perfect: which broker may serve a partition is a question of metadata only.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.clock import Clock, SystemClock
from mockbroker.cluster.configs import BROKER_CONFIGS, TOPIC_CONFIGS
from mockbroker.cluster.controller import Controller
from mockbroker.cluster.errors import ClusterError
from mockbroker.cluster.fetch_sessions import FetchSessionCache
from mockbroker.cluster.group_model import pick_coordinator
from mockbroker.cluster.groups import GroupCoordinator
from mockbroker.cluster.metadata import RESOURCE_BROKER, MetadataImage, TopicImage
from mockbroker.cluster.partition import PartitionLog
from mockbroker.cluster.transactions import TransactionCoordinator

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249
PRODUCER_ID_BLOCK = 1000


def new_cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass
class ClusterConfig:
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

    def replication_factor(self) -> int:
        if self.default_replication_factor is not None:
            return self.default_replication_factor
        return min(3, self.brokers)


class BrokerNode:
    """One broker: its identity, advertised endpoint, liveness and metadata image."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.host = ""
        self.port = 0
        self.up = False
        self.paused = False  # metadata catch-up paused: the image stays as it is
        self.image = MetadataImage()
        self.fetch_sessions = FetchSessionCache()

    @property
    def applied_offset(self) -> int:
        return self.image.offset


class Cluster:
    def __init__(self, config: ClusterConfig | None = None, clock: Clock | None = None) -> None:
        self.config = config or ClusterConfig()
        if self.config.brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self.clock: Clock = clock or SystemClock()
        self.controller = Controller()
        self.brokers = {i: BrokerNode(i) for i in range(self.config.brokers)}
        self.logs: dict[tuple[uuid.UUID, int], PartitionLog] = {}
        self._metadata_listeners: list[Callable[[], None]] = []
        self._tickers: list[Callable[[int], None]] = []
        self._topic_config_cache: dict[tuple[str, int, int], dict[str, str]] = {}
        self._next_producer_id = 0
        self._producer_id_block_end = 0
        self.groups = GroupCoordinator(self.clock, self.config.group_initial_rebalance_delay_ms,
                                       self.config.group_min_session_timeout_ms,
                                       self.config.group_max_session_timeout_ms)
        self.add_ticker(self.groups.tick)
        self.transactions = TransactionCoordinator(self)

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

    def coordinator_for(self, key_type: int, key: str) -> int | None:
        """The broker coordinating a group (key_type 0) or transactional id (1): a stable hash
        of the key over the live (registered, unfenced) brokers. None while that broker is
        down and not yet fenced, i.e. until the coordinator moves: COORDINATOR_NOT_AVAILABLE."""
        del key_type  # both kinds hash the same way, as Kafka's internal topic partitions do
        broker = pick_coordinator(key, [b.broker_id for b in self.image.live_brokers()])
        if broker is None or not self.brokers[broker].up:
            return None
        return broker

    # -- brokers and propagation ------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        """The controller's image: metadata at the log end."""
        return self.controller.image

    def start_broker(self, broker_id: int, host: str, port: int) -> None:
        """Register a broker (its advertised endpoint) and bring its image up to date."""
        node = self.brokers[broker_id]
        node.host, node.port, node.up = host, port, True
        self.controller.register_broker(broker_id, host, port)
        self.propagate()

    def propagate(self) -> None:
        """Let every running, unpaused broker apply the metadata log up to its end."""
        for node in self.brokers.values():
            if node.up and not node.paused:
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

    def remove_metadata_listener(self, callback: Callable[[], None]) -> None:
        if callback in self._metadata_listeners:
            self._metadata_listeners.remove(callback)

    def catch_up(self, node: BrokerNode, until: int | None = None) -> None:
        end = self.controller.log.end_offset - 1 if until is None else until
        for record in self.controller.log.since(node.image.offset):
            if record.offset > end:
                break
            node.image.apply(record)

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
            assignments = self.controller.assign_replicas(count, rf)
        else:
            self._validate_assignments(assignments)
        if validate_only:
            return None
        topic_id = self.controller.create_topic(name, assignments, configs)
        for index in range(len(assignments)):
            self.logs[(topic_id, index)] = PartitionLog(name, index)
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
        for key in [k for k in self.logs if k[0] == topic_id]:
            del self.logs[key]
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
        self.controller.create_partitions(name, assignments)
        for index in range(current, total):
            self.logs[(topic.topic_id, index)] = PartitionLog(name, index)
        self.propagate()

    def maybe_auto_create(self, name: str) -> TopicImage | None:
        """Auto-create a topic a client asked for, when the cluster allows it."""
        if not self.config.auto_create_topics:
            return None
        existing = self.image.topics.get(name)
        if existing is not None:
            return existing
        return self.create_topic(name)

    # -- partitions -------------------------------------------------------------------------

    def log(self, topic_id: uuid.UUID, partition: int) -> PartitionLog | None:
        return self.logs.get((topic_id, partition))

    def aborted_transactions(self, log: PartitionLog, start: int,
                             end: int) -> list[dict[str, int]]:
        """Aborted transactions overlapping [start, end) for read_committed fetches."""
        return [{"producer_id": pid, "first_offset": first}
                for pid, first, last in log.aborted_index if last >= start and first < end]

    def elect_leader(self, topic: str, partition: int, broker: int | None = None) -> int:
        """Move (or re-elect) leadership; the leader epoch rises by one."""
        leader = self.controller.elect_leader(topic, partition, broker)
        self._note_epoch(topic, partition)
        self.propagate()
        return leader

    def set_isr(self, topic: str, partition: int, isr: list[int]) -> None:
        image = self.image.partition(topic, partition)
        if image is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"unknown partition {topic}-{partition}")
        if not isr or any(r not in image.replicas for r in isr):
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"ISR {isr} must be a non-empty subset of {list(image.replicas)}")
        self.controller.change_partition(topic, partition, isr=isr)
        self.propagate()

    def _note_epoch(self, topic: str, partition: int) -> None:
        image = self.image.partition(topic, partition)
        assert image is not None
        log = self.logs.get((self.image.topics[topic].topic_id, partition))
        if log is not None:
            log.note_leader_epoch(image.leader_epoch)

    # -- configuration ----------------------------------------------------------------------

    def topic_config(self, name: str, image: MetadataImage | None = None) -> dict[str, str]:
        """Effective topic configuration: defaults overlaid with the topic's overrides.

        Produce reads this per partition, so results are cached per (image, offset): an
        image only changes by applying records, which moves its offset. Callers must not
        mutate the returned dict.
        """
        view = image or self.image
        key = (name, id(view), view.offset)
        cached = self._topic_config_cache.get(key)
        if cached is not None:
            return cached
        if len(self._topic_config_cache) > 4096:
            self._topic_config_cache.clear()
        values = self._compute_topic_config(name, view)
        self._topic_config_cache[key] = values
        return values

    def _compute_topic_config(self, name: str, view: MetadataImage) -> dict[str, str]:
        values = {k: c.default for k, c in TOPIC_CONFIGS.items() if c.default is not None}
        values["min.insync.replicas"] = str(self.config.min_insync_replicas)
        values["max.message.bytes"] = str(self.config.message_max_bytes)
        # cluster-wide dynamic broker settings apply to topics without an override (Kafka)
        dynamic = view.configs.get((RESOURCE_BROKER, ""), {})
        for key, definition in TOPIC_CONFIGS.items():
            if definition.broker_synonym in dynamic:
                values[key] = dynamic[definition.broker_synonym]
        values.update(view.topic_config(name))
        return values

    def broker_config(self, broker_id: int) -> dict[str, str]:
        """Effective broker configuration: static settings overlaid with dynamic ones."""
        values = self.static_broker_config(broker_id)
        values.update(self.image.configs.get((RESOURCE_BROKER, ""), {}))  # cluster-wide
        values.update(self.image.configs.get((RESOURCE_BROKER, str(broker_id)), {}))
        return values

    def static_broker_config(self, broker_id: int) -> dict[str, str]:
        """What the broker was started with (its server.properties): defaults and ClusterConfig."""
        values = {k: c.default for k, c in BROKER_CONFIGS.items() if c.default is not None}
        values.update({
            "broker.id": str(broker_id), "node.id": str(broker_id),
            "auto.create.topics.enable": str(self.config.auto_create_topics).lower(),
            "num.partitions": str(self.config.default_partitions),
            "default.replication.factor": str(self.config.replication_factor()),
            "min.insync.replicas": str(self.config.min_insync_replicas),
            "message.max.bytes": str(self.config.message_max_bytes),
            "offsets.topic.replication.factor": str(self.config.replication_factor()),
            "transaction.state.log.replication.factor": str(self.config.replication_factor()),
            "group.initial.rebalance.delay.ms": str(self.config.group_initial_rebalance_delay_ms),
            "group.min.session.timeout.ms": str(self.config.group_min_session_timeout_ms),
            "group.max.session.timeout.ms": str(self.config.group_max_session_timeout_ms),
        })
        return values
