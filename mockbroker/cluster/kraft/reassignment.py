"""Partition reassignments (KIP-455) as the KRaft controller carries them out.

Theory of operation: a reassignment moves a partition from its current replicas to a target
set in two metadata steps, each a PartitionChangeRecord:

1. start: replicas = target followed by the current replicas not in the target,
   adding_replicas = target - current, removing_replicas = current - target. The leader
   epoch stays (the replica set only grows). A target that adds no replica (a reorder or a
   pure removal) skips this step and completes at once.
2. completion, once every adding replica has caught up: replicas = target, the adding
   replicas join the ISR, the removing ones leave it, adding/removing are cleared; the
   leader moves to the first in-sync target replica if it was being removed. The leader
   epoch rises, as KRaft bumps it when replicas leave a partition.

Replication is bookkeeping only (every replica shares the one PartitionLog), so "caught up"
means: every adding replica is a live (unfenced) broker and `ClusterConfig
.reassignment_delay_ms` has passed on the injected clock since the start; `tick` (run by
Cluster.tick) completes what is due, so with the default delay 0 a reassignment completes
on the next controller step, and a test with a ManualClock can watch it in progress.

Cancelling (null target replicas) reverts step 1: the adding replicas leave, the original
replicas stay (removing ones included), with a leader epoch bump; without a reassignment in
progress it is NO_REASSIGNMENT_IN_PROGRESS. A new target while one is in progress starts
over from the original replicas. Errors and their messages follow Kafka's controller:
INVALID_REPLICA_ASSIGNMENT for an empty, duplicated or unknown-broker target,
UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.cluster_errors import ClusterError
from mockbroker.cluster.kraft.controller import Controller
from mockbroker.cluster.kraft.metadata_log import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    MetadataImage,
    PartitionImage,
)


class Cluster(Protocol):
    """The parts of cluster.Cluster used here (a protocol: no import of cluster.py)."""

    controller: Controller
    clock: Clock

    @property
    def image(self) -> MetadataImage: ...

    def propagate(self) -> None: ...

    def note_leader_epoch(self, topic: str, partition: int) -> None: ...

TopicPartition = tuple[str, int]


def original_replicas(part: PartitionImage) -> list[int]:
    """The replicas before the reassignment in progress (all of them if none is)."""
    return [r for r in part.replicas if r not in part.adding_replicas]


def in_progress(part: PartitionImage) -> bool:
    return bool(part.adding_replicas or part.removing_replicas)


class Reassignments:
    """The controller's side of KIP-455: starts, completes and cancels reassignments."""

    def __init__(self, cluster: Cluster, delay_ms: int = 0) -> None:
        self._cluster = cluster
        self.delay_ms = delay_ms
        self._started_ms: dict[TopicPartition, int] = {}

    def _partition(self, topic: str, partition: int) -> PartitionImage:
        part = self._cluster.image.partition(topic, partition)
        if part is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               "This server does not host this topic-partition.")
        return part

    def validate(self, topic: str, partition: int, target: Sequence[int] | None) -> None:
        """Raise what Kafka's controller answers for this partition's request."""
        part = self._partition(topic, partition)
        if target is None:
            if not in_progress(part):
                # Kafka's controller answers new ApiError(NO_REASSIGNMENT_IN_PROGRESS): no
                # message ("" here; the handler sends none)
                raise ClusterError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "")
            return
        if not target:
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "The manual partition assignment includes an empty replica "
                               "list.")
        if len(set(target)) != len(target):
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "The manual partition assignment includes duplicate replicas.")
        registered = self._cluster.image.brokers
        for broker in target:
            if broker not in registered:
                raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   f"The manual partition assignment includes broker {broker}, "
                                   "but no such broker is registered.")

    def alter(self, topic: str, partition: int, target: Sequence[int] | None) -> None:
        """Start (or restart, or with None cancel) one partition's reassignment."""
        self.validate(topic, partition, target)
        part = self._partition(topic, partition)
        original = original_replicas(part)
        if target is None:
            self._finish(topic, partition, part, original)
            return
        adding = [r for r in target if r not in original]
        if not adding:
            self._finish(topic, partition, part, list(target))
            return
        removing = [r for r in original if r not in target]
        replicas = list(target) + removing
        isr = [r for r in part.isr if r in replicas]
        self._cluster.controller.change_partition(
            topic, partition, replicas=replicas, isr=isr, adding=adding, removing=removing)
        self._started_ms[(topic, partition)] = self._cluster.clock.now_ms()
        self._cluster.propagate()

    def _finish(self, topic: str, partition: int, part: PartitionImage,
                replicas: list[int]) -> None:
        """Write the final replica set (completion or cancellation)."""
        self._started_ms.pop((topic, partition), None)
        live = {b.broker_id for b in self._cluster.image.live_brokers()}
        # the ISR keeps its order; caught-up adding replicas joined it at the end
        joined = [r for r in part.adding_replicas if r in live and r not in part.isr]
        isr = [r for r in [*part.isr, *joined] if r in replicas]
        leader = part.leader
        if leader not in isr:  # the first in-sync replica of the new set, as KRaft elects
            candidates = [r for r in replicas if r in isr and r in live]
            leader = candidates[0] if candidates else NO_LEADER
        shrinks = not set(part.replicas) <= set(replicas)
        if leader == part.leader and not shrinks:
            leader = NO_LEADER_CHANGE  # nothing left: the epoch stays
        self._cluster.controller.change_partition(
            topic, partition, leader=leader, isr=isr or list(part.isr), replicas=replicas,
            adding=[], removing=[])
        if leader != NO_LEADER_CHANGE:
            self._cluster.note_leader_epoch(topic, partition)
        self._cluster.propagate()

    def tick(self, now_ms: int) -> None:
        """Complete every reassignment whose adding replicas are live and past the delay."""
        delay = self.delay_ms
        live = {b.broker_id for b in self._cluster.image.live_brokers()}
        for (topic, partition), started in sorted(self._started_ms.items()):
            part = self._cluster.image.partition(topic, partition)
            if part is None or not in_progress(part):
                self._started_ms.pop((topic, partition), None)
                continue
            if now_ms - started >= delay and all(r in live for r in part.adding_replicas):
                target = [r for r in part.replicas if r not in part.removing_replicas]
                self._finish(topic, partition, part, target)

    def ongoing(self) -> dict[TopicPartition, PartitionImage]:
        """Every partition with a reassignment in progress."""
        return {(name, index): part for name, topic in self._cluster.image.topics.items()
                for index, part in topic.partitions.items() if in_progress(part)}

    def reset(self) -> None:
        self._started_ms.clear()
