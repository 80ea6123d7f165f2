"""Cluster dynamics: brokers leaving and rejoining, unclean elections, delayed metadata, reset.

Theory of operation: these are the state changes a control API asks for, written as plain
functions over the cluster model (the `ClusterModel` protocol) so they stay synchronous,
clock-driven and testable without sockets; callers reach them through `Cluster` methods
(fence_broker, rejoin_broker, unclean_elect, delay_metadata, reset), the only writers of
metadata. Every metadata change goes through the controller's log, as KRaft does it:

- `fence_broker` (the model half of stopping a broker): a FenceBroker record, then one
  PartitionChange per partition the broker leads (leadership moves to the first live
  in-sync replica in replica order, the leader epoch rises; with none left the partition
  goes offline, leader -1, and keeps its last ISR member, as KRaft does) and one per
  partition whose ISR holds it (the ISR shrinks; the epoch does not move). Its fetch
  sessions are dropped, as a restarted broker's would be. Coordinators move by themselves:
  `Cluster.coordinator_for` skips fenced brokers.
- `rejoin_broker` (after `Cluster.start_broker` re-registered and unfenced it): the broker
  catches up to the metadata log end, leads the offline partitions whose ISR it is in
  (epoch +1), and its replicas fetch from their leaders (truncating what diverged: acks=1
  writes it held alone are gone); each replica that caught up goes back into the ISR, one
  that did not (replication paused) rejoins later through the lag rule (replicas.py).
- `unclean_elect`: leadership moves to a replica outside the ISR, which becomes the whole
  ISR; its own log is what survives (optionally truncated further to a given offset) and
  the new epoch starts at its end; the other replicas truncate by divergence, so a KIP-320
  consumer positioned past it sees it through OffsetForLeaderEpoch. As with set-isr, the
  replicas left out stay out of the ISR until resume-replication (or a restart). Producer state is
  rebuilt from what is left, as Kafka does after truncation.
- `MetadataDelays`: brokers with `metadata_delay_ms > 0` are skipped by `propagate` and
  apply each record only once it is that old. Each propagation notes (time, log end); the
  cluster tick catches delayed brokers up to the newest mark that has aged enough.
- `reset_state`: drops every topic (RemoveTopic records), dynamic broker configs, groups
  and committed offsets, producer and transaction state and fetch sessions; members
  waiting in a JoinGroup or SyncGroup are answered NOT_COORDINATOR so no connection
  hangs. Brokers, their registrations and the metadata log itself remain.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.cluster_errors import ClusterError
from mockbroker.cluster.groups.classic_groups import GroupCoordinator
from mockbroker.cluster.groups.consumer_groups import ConsumerGroupCoordinator
from mockbroker.cluster.kraft.broker import BrokerNode
from mockbroker.cluster.kraft.controller import Controller
from mockbroker.cluster.kraft.metadata_log import (
    NO_LEADER,
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    MetadataImage,
)
from mockbroker.cluster.log.partition import PartitionLog
from mockbroker.cluster.log.replicas import Replication
from mockbroker.cluster.producers.txn_coordinator import TransactionCoordinator


class ClusterModel(Protocol):
    """The parts of mockbroker.cluster.Cluster these functions use (Cluster calls them with
    itself; naming the protocol here keeps this module from importing cluster.py)."""

    brokers: dict[int, BrokerNode]
    controller: Controller
    clock: Clock
    replication: Replication
    groups: GroupCoordinator
    consumer_groups: ConsumerGroupCoordinator
    transactions: TransactionCoordinator

    @property
    def image(self) -> MetadataImage: ...

    def log(self, topic_id: uuid.UUID, partition: int) -> PartitionLog | None: ...

    def propagate(self) -> None: ...

    def catch_up(self, node: BrokerNode, until: int | None = None) -> None: ...

    def add_metadata_listener(self, callback: Callable[[], None]) -> None: ...

    def add_ticker(self, ticker: Callable[[int], None]) -> None: ...


MAX_DELAY_MARKS = 10_000


# -- brokers leaving and rejoining ----------------------------------------------------------

def fence_broker(cluster: ClusterModel, broker_id: int, mark_down: bool = True) -> None:
    """Take a stopped broker out of the cluster: fence it, move its leaderships, shrink ISRs.

    The caller has already marked the node down (its listener is closing); `mark_down`
    False fences a broker whose listener stays open (an expired session, broker_sessions.py)."""
    node = cluster.brokers[broker_id]
    if mark_down:
        node.up = False
    controller = cluster.controller
    if broker_id in cluster.image.brokers and not cluster.image.brokers[broker_id].fenced:
        controller.fence_broker(broker_id)
    live = {b.broker_id for b in cluster.image.live_brokers()}
    moved: list[tuple[str, int]] = []
    for name, topic in list(cluster.image.topics.items()):
        for index, part in sorted(topic.partitions.items()):
            if broker_id not in part.isr and part.leader != broker_id:
                continue
            rest = [r for r in part.isr if r != broker_id]
            if part.leader == broker_id:
                successors = [r for r in part.replicas if r in rest and r in live]
                if successors:
                    controller.change_partition(name, index, leader=successors[0], isr=rest)
                else:  # offline: no leader, the last in-sync replica stays in the ISR
                    controller.change_partition(name, index, leader=NO_LEADER,
                                                isr=list(part.isr))
                moved.append((name, index))
            elif rest:
                controller.change_partition(name, index, isr=rest)
    node.fetch_sessions.clear()
    for name, index in moved:
        note_leader_epoch(cluster, name, index)
    cluster.propagate()


def rejoin_broker(cluster: ClusterModel, broker_id: int) -> None:
    """Bring a re-registered broker back: catch up, restore ISR, lead offline partitions."""
    node = cluster.brokers[broker_id]
    cluster.catch_up(node)
    controller = cluster.controller
    now = cluster.clock.now_ms()
    for name, topic in list(cluster.image.topics.items()):
        for index, part in sorted(topic.partitions.items()):
            if broker_id not in part.replicas:
                continue
            replica_set = cluster.replication.get(topic.topic_id, index)
            if replica_set is not None:
                replica_set.progress[broker_id].pinned_out = False
            if part.leader == NO_LEADER:
                if broker_id in part.isr:  # an offline partition gets its leader back
                    controller.change_partition(name, index, leader=broker_id)
                    note_leader_epoch(cluster, name, index)
                continue
            if replica_set is None or broker_id in part.isr:
                continue
            replica_set.fetch_round(now, forced=True)
            log, leader = replica_set.logs[broker_id], replica_set.leader_log()
            if log.log_end_offset >= leader.high_watermark:
                isr = [r for r in part.replicas if r in part.isr or r == broker_id]
                controller.change_partition(name, index, isr=isr)
            cluster.replication.watch(replica_set)
    cluster.propagate()
    cluster.catch_up(node)  # the node's own image includes its rejoin, paused or not


def note_leader_epoch(cluster: ClusterModel, topic: str, partition: int) -> None:
    """A new leader epoch: it starts at the new leader's log end (its leader-epoch cache)
    and the followers fetch from it, truncating what diverged."""
    replica_set = cluster.replication.by_name(topic, partition)
    if replica_set is not None:
        replica_set.leader_changed()


# -- unclean election -------------------------------------------------------------------------

@dataclass(frozen=True)
class UncleanResult:
    """What an unclean election did: the new leader and epoch, where its log ends, and how
    many records the other replicas lost."""

    leader: int
    leader_epoch: int
    log_end_offset: int
    truncated_records: int


def unclean_elect(cluster: ClusterModel, topic: str, partition: int, broker: int,
                  truncate_to: int | None = None) -> UncleanResult:
    """Elect `broker` (any live replica): its log wins, truncated further to `truncate_to`
    when given; the others truncate to where they diverge from it."""
    part = cluster.image.partition(topic, partition)
    if part is None:
        raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           f"unknown partition {topic}-{partition}")
    replica_set = cluster.replication.by_name(topic, partition)
    assert replica_set is not None
    if broker not in part.replicas:
        raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"broker {broker} is not a replica of {topic}-{partition}")
    live = {b.broker_id for b in cluster.image.live_brokers()}
    if broker not in live or not cluster.brokers[broker].up:
        raise ClusterError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker} is not live")
    log = replica_set.logs[broker]
    before = replica_set.leader_log().log_end_offset
    if truncate_to is None:
        truncate_to = log.log_end_offset
    if not log.log_start_offset <= truncate_to <= log.log_end_offset:
        raise ClusterError(ErrorCode.OFFSET_OUT_OF_RANGE,
                           f"truncate_to {truncate_to} is outside the log "
                           f"[{log.log_start_offset}, {log.log_end_offset}]")
    log.truncate_to(truncate_to)
    cluster.controller.change_partition(topic, partition, leader=broker, isr=[broker])
    replica_set.pin_isr([broker])  # as set-isr: the others stay out until resumed
    note_leader_epoch(cluster, topic, partition)
    cluster.propagate()
    after = cluster.image.partition(topic, partition)
    assert after is not None
    return UncleanResult(broker, after.leader_epoch, log.log_end_offset,
                         before - log.log_end_offset)


# -- delayed metadata propagation -------------------------------------------------------------

class MetadataDelays:
    """Catches brokers with a metadata delay up to the records that have aged enough."""

    def __init__(self, cluster: ClusterModel) -> None:
        self.cluster = cluster
        self._marks: deque[tuple[int, int]] = deque(maxlen=MAX_DELAY_MARKS)
        cluster.add_metadata_listener(self._note)
        cluster.add_ticker(self.tick)

    def _delayed(self) -> list[BrokerNode]:
        return [n for n in self.cluster.brokers.values()
                if n.metadata_delay_ms > 0 and n.up and not n.paused and not n.isolated]

    def _note(self) -> None:
        if not any(n.metadata_delay_ms > 0 for n in self.cluster.brokers.values()):
            self._marks.clear()
            return
        end = self.cluster.controller.log.end_offset - 1
        if not self._marks or self._marks[-1][1] != end:
            self._marks.append((self.cluster.clock.now_ms(), end))

    def set_delay(self, node: BrokerNode, delay_ms: int) -> None:
        """Set (or with 0 clear) a broker's delay; records already written count as old."""
        if delay_ms > 0:
            if node.metadata_delay_ms <= 0 and not node.paused and node.up:
                self.cluster.catch_up(node)
            node.metadata_delay_ms = delay_ms
            self._note()
        else:
            node.metadata_delay_ms = 0
            self.cluster.propagate()

    def tick(self, now_ms: int) -> None:
        delayed = self._delayed()
        if not delayed:
            return
        for node in delayed:
            ready = [offset for at, offset in self._marks if at + node.metadata_delay_ms <= now_ms]
            if ready and ready[-1] > node.image.offset:
                self.cluster.catch_up(node, ready[-1])
        # marks older than every delay are no longer needed (keep the newest aged one)
        oldest = now_ms - max(n.metadata_delay_ms for n in delayed)
        while len(self._marks) > 1 and self._marks[1][0] <= oldest:
            self._marks.popleft()


# -- reset ------------------------------------------------------------------------------------

def reset_state(cluster: ClusterModel) -> None:
    """Empty topics, dynamic broker and group configs, groups, offsets, producers and
    transactions; every broker resumes metadata catch-up."""
    for node in cluster.brokers.values():
        node.paused = False
        node.metadata_delay_ms = 0
        node.fetch_sessions.clear()
    cluster.groups.reset()
    cluster.consumer_groups.reset()
    cluster.transactions.reset()
    controller = cluster.controller
    for name in sorted(cluster.image.topics):
        controller.delete_topic(name)
    for (kind, resource), values in list(cluster.image.configs.items()):
        if kind in (RESOURCE_BROKER, RESOURCE_GROUP):
            for key in list(values):
                controller.set_config(kind, resource, key, None)
    gone = cluster.replication.clear()
    cluster.propagate()
    for replica_set in gone:  # fetches parked on the old logs wake up and find it gone
        for log in replica_set.logs.values():
            log.wake_listeners()
