"""Replication: one log per replica, followers fetching from the leader, the high watermark
and the ISR by lag.

Theory of operation. Every partition has a `PartitionReplicas`: one PartitionLog per replica
(broker id -> log). Producers append to the leader's log (the leader named by the
controller's image). Followers copy it the way Kafka's replica fetchers do, through
`follower_fetch(leader, fetch_offset, last_fetched_epoch)`: a pure function of the leader's
log that answers either the batches from the fetch offset (the leader's own StoredBatch
objects: nothing is copied, a batch's bytes exist once however many replicas hold it) with
the leader's high watermark and log start, or a `DivergingEpoch` (KIP-320's answer to a
fetcher whose last fetched epoch ends before its fetch offset on the leader). On a diverging
epoch the follower truncates to min(the leader's end offset for that epoch, its own end for
it) (KIP-279) and fetches again. Nothing but that function's arguments and answer passes
between the two logs, so it could travel as an inter-broker Fetch.

When it runs. The leader's append hook runs the fetch of every follower that may fetch now
(its broker is up, replication is not paused or delayed for it), in the same loop turn, so a
healthy cluster acknowledges as before: the ISR reaches the log end at once. A follower that
cannot fetch now (paused, delayed, its broker stopped) falls behind; the partition is then
"watched", and the cluster tick (`Replication.tick`) lets watched followers fetch (a delayed
one at most once per delay), shrinks the ISR of followers not caught up for
replica.lag.time.max.ms and expands it with followers that caught up again (each a
PartitionChange through the controller: the partition epoch rises, the leader epoch does
not). A partition stops being watched once the tick has nothing to do for it (its ISR
followers at the log end, the others unable to fetch: `settled`), so the tick costs nothing
for healthy partitions, and pausing costs nothing until the leader's log grows. A leader
that is stopped or isolated (broker_sessions.py) is fetched from by nobody and changes no ISR; the
controller moves its leadership when its session expires.

High watermark: the leader's is the lowest log end offset over the ISR (never moving back
while the leader stays); a follower's is min(its log end, the leader's high watermark at its
last fetch), as Kafka's follower learns it from its fetch responses. When the leader's
moves, every follower that may fetch now learns it at once (its next fetch, which a healthy
Kafka follower sends within replica.fetch.wait.max.ms); a delayed one at its next fetch, a
paused or cut-off one not at all, so a consumer reading from it (KIP-392, read_replicas.py)
sees less than one reading from the leader. acks=all produce waits (`ack_status`) until the
leader's high watermark covers the batch.

Leadership changes (`leader_changed`): the new leader starts its epoch at its log end
(leader-epoch cache), then every follower that may fetch does so, truncating a divergent
tail: acks=1 data the old leader held alone is lost, as in Kafka.

Who follows whom: the controller's image names the leader; every other replica follows it,
except a deposed one (`_deposed`): a replica whose broker's own image is behind and still
names it leader (metadata paused or delayed). Such a broker goes on answering its clients
as leader of the old epoch, appending at its own log end, but it is nobody's follower and
nobody fetches from it, so its high watermark does not move and acks=all waits; in the
new leader's ISR it holds the high watermark until it follows or leaves the ISR. Once its
image names the new leader it fetches, finds its old-epoch tail diverging and truncates it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.cluster_errors import ClusterError
from mockbroker.cluster.kraft.broker import BrokerNode
from mockbroker.cluster.kraft.controller import Controller
from mockbroker.cluster.kraft.metadata_log import MetadataImage, PartitionImage
from mockbroker.cluster.log.partition import (
    UNDEFINED_EPOCH,
    LogStore,
    PartitionLog,
    SegmentPolicy,
    StoredBatch,
)
from mockbroker.cluster.log.produce_path import effective_min_isr

MAX_TRUNCATION_ROUNDS = 8  # divergence resolves in one or two rounds; bounded anyway
DEFAULT_LAG_TIME_MAX_MS = 30_000


# -- the follower's fetch, as a pure function of the leader's log ---------------------------

class FetchedBatches(NamedTuple):
    """The leader's answer: its batches from the fetch offset (shared, not copied)."""

    batches: list[StoredBatch]
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


class DivergingEpoch(NamedTuple):
    """The fetcher must truncate: its last fetched epoch ends at `end_offset` here."""

    epoch: int
    end_offset: int


def follower_fetch(leader: PartitionLog, fetch_offset: int,
                   last_fetched_epoch: int) -> FetchedBatches | DivergingEpoch:
    """What a leader answers a replica fetch (Kafka's Fetch from a follower, KIP-320)."""
    if last_fetched_epoch != UNDEFINED_EPOCH:
        epoch, end = leader.end_offset_for_epoch(last_fetched_epoch)
        if epoch < last_fetched_epoch or end < fetch_offset:
            return DivergingEpoch(epoch, end)
    if fetch_offset > leader.log_end_offset:
        return DivergingEpoch(UNDEFINED_EPOCH, leader.log_end_offset)
    return FetchedBatches(leader.batches_from(fetch_offset), leader.high_watermark,
                          leader.log_start_offset, leader.log_end_offset)


def apply_fetch(follower: PartitionLog, leader: PartitionLog) -> bool:
    """One follower's fetch loop against `leader`: truncate while diverging, then append.
    True when the follower ends at the leader's log end (caught up)."""
    for _ in range(MAX_TRUNCATION_ROUNDS):
        last_epoch = follower.epoch_cache[-1][0] if follower.epoch_cache else UNDEFINED_EPOCH
        if last_epoch != UNDEFINED_EPOCH and leader.epoch_cache \
                and last_epoch == leader.epoch_cache[-1][0] \
                and follower.log_end_offset <= leader.log_end_offset:
            # the steady state, on every replicated append: the follower is in the leader's
            # current epoch and not past its end, so follower_fetch would find no divergence
            # and answer the batches from the follower's log end; taken without building it
            return _take_fetched(follower, leader.batches_from(follower.log_end_offset),
                                 leader.high_watermark, leader.log_start_offset,
                                 leader.log_end_offset)
        answer = follower_fetch(leader, follower.log_end_offset, last_epoch)
        if isinstance(answer, DivergingEpoch):
            own_end = follower.log_end_offset
            if answer.epoch != UNDEFINED_EPOCH:
                own_epoch, own_epoch_end = follower.end_offset_for_epoch(answer.epoch)
                if own_epoch == answer.epoch:
                    own_end = own_epoch_end
            follower.truncate_to(max(follower.log_start_offset,
                                     min(answer.end_offset, own_end)))
            continue
        return _take_fetched(follower, answer.batches, answer.high_watermark,
                             answer.log_start_offset, answer.log_end_offset)
    return False


def _take_fetched(follower: PartitionLog, batches: list[StoredBatch], high_watermark: int,
                  log_start_offset: int, log_end_offset: int) -> bool:
    """A follower applies a fetch answer; True when it is then caught up."""
    if log_start_offset > follower.log_start_offset:
        follower.delete_records_before(log_start_offset)
    if batches:
        follower.append_replicated(batches)
    follower.set_high_watermark(min(high_watermark, follower.log_end_offset))
    return follower.log_end_offset >= log_end_offset


# -- who may fetch ---------------------------------------------------------------------------

@dataclass
class ReplicationControls:
    """The control verbs' settings: replication paused or delayed per broker or partition."""

    paused_brokers: set[int] = field(default_factory=set)
    paused_partitions: set[tuple[str, int]] = field(default_factory=set)
    broker_delays: dict[int, int] = field(default_factory=dict)
    partition_delays: dict[tuple[str, int], int] = field(default_factory=dict)

    def paused(self, broker_id: int, topic: str, partition: int) -> bool:
        return broker_id in self.paused_brokers or (topic, partition) in self.paused_partitions

    def delay_ms(self, broker_id: int, topic: str, partition: int) -> int:
        return max(self.broker_delays.get(broker_id, 0),
                   self.partition_delays.get((topic, partition), 0))

    def active(self) -> bool:
        return bool(self.paused_brokers or self.paused_partitions or self.broker_delays
                    or self.partition_delays)

    def clear(self) -> None:
        self.paused_brokers.clear()
        self.paused_partitions.clear()
        self.broker_delays.clear()
        self.partition_delays.clear()


@dataclass
class ReplicaProgress:
    """What the leader knows of one replica (Kafka's Replica state)."""

    last_caught_up_ms: int
    caught_up: bool = True
    next_fetch_ms: int = 0  # a delayed follower's next fetch
    # taken out of the ISR by the set-isr verb: stays out until resumed or restarted
    pinned_out: bool = False


class ReplicationModel(Protocol):
    """The parts of the Cluster replication uses."""

    brokers: dict[int, BrokerNode]
    controller: Controller
    clock: Clock

    @property
    def image(self) -> MetadataImage: ...

    def propagate(self) -> None: ...

    def lag_time_max_ms(self) -> int: ...


# -- one partition's replicas --------------------------------------------------------------

class PartitionReplicas:
    def __init__(self, owner: Replication, topic: str, partition: int,
                 replicas: list[int]) -> None:
        self.owner = owner
        self.topic = topic
        self.partition = partition
        now = owner.model.clock.now_ms()
        self.logs: dict[int, PartitionLog] = {}
        self.progress: dict[int, ReplicaProgress] = {}
        # KIP-392: the replica the selector last chose for a consumer (read_replicas.py)
        self.last_preferred_read_replica: int | None = None
        for broker_id in replicas:
            self._add_replica(broker_id, now)

    def _add_replica(self, broker_id: int, now: int) -> None:
        log = PartitionLog(self.topic, self.partition)
        log.replication_hook = self._appended
        log.store = self.owner.files_for(broker_id, self.topic, self.partition)
        if self.owner.segment_policy is not None:  # when to roll segments (log_manager.py)
            log.segment_policy = self.owner.segment_policy(self.topic)
        self.logs[broker_id] = log
        self.progress[broker_id] = ReplicaProgress(now)

    def image(self) -> PartitionImage | None:
        return self.owner.model.image.partition(self.topic, self.partition)

    def leader_log(self) -> PartitionLog:
        """The log producers write to; with no leader, the last in-sync replica's."""
        part = self.image()
        if part is not None:
            for broker_id in (part.leader, *part.isr, *part.replicas):
                log = self.logs.get(broker_id)
                if log is not None:
                    return log
        return next(iter(self.logs.values()))

    def _reachable(self, broker_id: int) -> bool:
        """Up and not isolated (broker_sessions.py): it can fetch and be fetched from."""
        node = self.owner.model.brokers.get(broker_id)
        return node is not None and node.up and not node.isolated

    def _deposed(self, broker_id: int) -> bool:
        """Whether replica `broker_id`, which the controller's image does not name leader,
        still believes it leads: its broker's own image is behind (metadata paused, delayed
        or cut off) and names it leader of an older epoch. Kafka's broker is never leader
        and follower of one partition at once: until its image catches up such a replica
        fetches from nobody and nobody fetches from it, so its high watermark stays where
        it was and its acks=all answers wait, while its clients' writes in the old epoch
        pile up at its log end, to be truncated at the new leader's epoch boundary once it
        follows. Callers ask only of replicas other than the controller's leader."""
        node = self.owner.model.brokers.get(broker_id)
        if node is None or node.image.offset >= self.owner.model.image.offset:
            return False  # current metadata (the common case: one comparison)
        if node.up and not node.paused and not node.isolated and node.metadata_delay_ms <= 0:
            return False  # behind only until the change being made propagates
        own = node.image.partition(self.topic, self.partition)
        return own is not None and own.leader == broker_id

    def _may_fetch(self, broker_id: int) -> bool:
        controls = self.owner.controls
        if not controls.active():
            return self._reachable(broker_id) and not self._deposed(broker_id)
        return self._reachable(broker_id) and not controls.paused(
            broker_id, self.topic, self.partition) and controls.delay_ms(
            broker_id, self.topic, self.partition) <= 0 and not self._deposed(broker_id)

    # -- replication -----------------------------------------------------------------------

    def _appended(self, log: PartitionLog) -> None:
        part = self.image()
        if part is None or self.logs.get(part.leader) is not log:
            self.owner.watch(self)  # a stale leader's write: truncated at the next fetch
            return
        if len(self.logs) == 1:
            # no follower to fetch (replication factor 1): update_high_watermark below
            # would find the leader's log end, in the ISR or not
            if log.log_end_offset > log.high_watermark:
                log.set_high_watermark(log.log_end_offset, wake=False)
            return
        now = self.owner.model.clock.now_ms()
        leader_reachable = self._reachable(part.leader)
        fetched = []
        for broker_id, follower in self.logs.items():
            if follower is log:
                continue
            progress = self.progress[broker_id]
            if leader_reachable and self._may_fetch(broker_id):
                fetched.append(follower)
                if apply_fetch(follower, log):
                    progress.caught_up, progress.last_caught_up_ms = True, now
            elif progress.caught_up:
                progress.caught_up, progress.last_caught_up_ms = False, now
                self.owner.watch(self)
        self.update_high_watermark(part, wake=False, share=False)
        for follower in fetched:  # their next fetch tells them the new high watermark
            follower.set_high_watermark(log.high_watermark)

    def in_step_for(self, log: PartitionLog) -> bool:
        """Whether an append to the leader's `log` now would be covered by its high
        watermark as soon as `_appended` is done (so an acks=all answer need not wait): the
        controller's image names this log's broker leader, the leader is reachable, and every
        other ISR member has a log, may fetch now and is caught up (same log end and last
        epoch), so its fetch in `_appended` takes the new batch and nothing else. Followers
        outside the ISR do not count, as the high watermark does not wait for them."""
        part = self.image()
        logs = self.logs
        if part is None or logs.get(part.leader) is not log:
            return False
        if len(logs) == 1:
            return True
        if not self._reachable(part.leader):
            return False
        end = log.log_end_offset
        last_epoch = log.epoch_cache[-1] if log.epoch_cache else None
        for broker_id in part.isr:
            follower = logs.get(broker_id)
            if follower is log:
                continue
            if follower is None or not self._may_fetch(broker_id) \
                    or follower.log_end_offset != end \
                    or (follower.epoch_cache[-1] if follower.epoch_cache else None) != last_epoch:
                return False
        return True

    def update_high_watermark(self, part: PartitionImage | None = None, *,
                              wake: bool = True, share: bool = True) -> None:
        """The leader's high watermark: the lowest log end over the ISR, never moving back;
        with `share`, the followers that may fetch now learn it."""
        part = part or self.image()
        if part is None or part.leader not in self.logs:
            return
        leader = self.logs[part.leader]
        # a deposed replica in the ISR fetches nothing from this leader: it holds the high
        # watermark where it is (as a new Kafka leader waits for each ISR member's fetch)
        # until it follows or leaves the ISR
        ends = [leader.high_watermark if r != part.leader and self._deposed(r)
                else self.logs[r].log_end_offset for r in part.isr if r in self.logs]
        end = min(ends) if ends else leader.log_end_offset
        if part.leader not in part.isr:
            end = min(end, leader.log_end_offset)
        if end > leader.high_watermark:
            leader.set_high_watermark(end, wake=wake)
        if share and self._reachable(part.leader):
            self._followers_learn_high_watermark(leader)

    def _followers_learn_high_watermark(self, leader: PartitionLog) -> None:
        """Followers that may fetch now learn the leader's high watermark (their next fetch
        answer); parked reads on them re-check."""
        for broker_id, log in self.logs.items():
            if log is not leader and log.high_watermark != min(leader.high_watermark,
                                                               log.log_end_offset) \
                    and self._may_fetch(broker_id):
                log.set_high_watermark(min(leader.high_watermark, log.log_end_offset))

    def _high_watermark_stale(self, broker_id: int, leader: PartitionLog) -> bool:
        """A follower that fetches but has not yet learnt the leader's high watermark (a
        delayed one, until its next fetch)."""
        log = self.logs[broker_id]
        return log.high_watermark != min(leader.high_watermark, log.log_end_offset)

    def fetch_round(self, now: int, *, forced: bool = False) -> None:
        """Every follower that may fetch now does (a delayed one when its delay is up)."""
        part = self.image()
        if part is None or part.leader not in self.logs:
            return
        leader = self.logs[part.leader]
        controls = self.owner.controls
        if not self._reachable(part.leader):
            return
        for broker_id, follower in self.logs.items():
            if follower is leader:
                continue
            if not self._reachable(broker_id) or controls.paused(broker_id, self.topic,
                                                                 self.partition) \
                    or self._deposed(broker_id):
                continue
            progress = self.progress[broker_id]
            delay = controls.delay_ms(broker_id, self.topic, self.partition)
            if delay > 0 and not forced:
                if now < progress.next_fetch_ms:
                    continue
                progress.next_fetch_ms = now + delay
            if apply_fetch(follower, leader):
                progress.caught_up, progress.last_caught_up_ms = True, now
            elif progress.caught_up:
                progress.caught_up, progress.last_caught_up_ms = False, now
        self.update_high_watermark(part)

    def leader_changed(self) -> None:
        """A new leader epoch: it starts at the new leader's log end, followers truncate."""
        part = self.image()
        if part is None or part.leader not in self.logs:
            return
        leader = self.logs[part.leader]
        leader.note_leader_epoch(part.leader_epoch)
        # the new leader's high watermark may be behind; it advances as followers fetch
        self.fetch_round(self.owner.model.clock.now_ms())
        self.owner.watch(self)

    def isr_changes(self, now: int, lag_max_ms: int) -> list[int] | None:
        """The ISR after Kafka's lag rule (None: unchanged). Out: a follower not at the
        leader's end for `lag_max_ms`; in: a live, fetching follower at or past the high
        watermark and the current epoch's start."""
        part = self.image()
        if part is None or part.leader not in self.logs or not self._reachable(part.leader):
            return None  # only a leader the controller hears from changes its ISR
        leader = self.logs[part.leader]
        isr = list(part.isr)
        live = {b.broker_id for b in self.owner.model.image.live_brokers()}
        for broker_id in part.replicas:
            if broker_id == part.leader or broker_id not in self.logs:
                continue
            log, progress = self.logs[broker_id], self.progress[broker_id]
            # the leader learns of a follower only from its fetches: a paused one cannot
            # rejoin (Kafka expands the ISR while answering a follower's fetch)
            paused = self.owner.controls.paused(broker_id, self.topic, self.partition)
            # a deposed replica's log end counts for nothing: it fetches nothing from this
            # leader, and its own old-epoch writes may take it past the leader's end
            deposed = self._deposed(broker_id)
            at_end = not deposed and log.log_end_offset >= leader.log_end_offset
            if at_end:
                progress.caught_up, progress.last_caught_up_ms = True, now
            if broker_id in isr and not at_end and now - progress.last_caught_up_ms > lag_max_ms:
                isr.remove(broker_id)
            elif broker_id not in isr and broker_id in live and not paused \
                    and not deposed and not progress.pinned_out \
                    and self._reachable(broker_id) \
                    and log.log_end_offset >= leader.high_watermark \
                    and log.log_end_offset >= self._epoch_start(leader, part.leader_epoch):
                isr = [r for r in part.replicas if r in isr or r == broker_id]
        return None if isr == list(part.isr) else isr

    @staticmethod
    def _epoch_start(log: PartitionLog, epoch: int) -> int:
        starts = [s for e, s in log.epoch_cache if e == epoch]
        return starts[0] if starts else 0

    def pin_isr(self, isr: list[int]) -> None:
        """The set-isr verb: replicas left out stay out (the lag rule does not bring them
        back) until resume-replication or their broker restarts."""
        for broker_id, progress in self.progress.items():
            progress.pinned_out = broker_id not in isr

    def settled(self) -> bool:
        """Nothing for the tick to do until the next append or control change: every
        follower in the ISR is at the leader's end, and every follower outside it cannot
        fetch (paused, stopped, isolated). A follower behind in the ISR needs the lag rule,
        one outside it that fetches may rejoin."""
        part = self.image()
        if part is None or part.leader not in self.logs:
            return True
        if not self._reachable(part.leader):
            return True  # nothing moves until the controller fences it (broker_sessions.py)
        leader = self.logs[part.leader]
        end = leader.log_end_offset
        for broker_id, log in self.logs.items():
            if broker_id == part.leader:
                continue
            if self._deposed(broker_id):
                return False  # it follows once its image catches up: the tick watches
            fetching = self._reachable(broker_id) and not self.owner.controls.paused(
                broker_id, self.topic, self.partition)
            if broker_id in part.isr:
                if log.log_end_offset < end:
                    return False
            elif fetching and not self.progress[broker_id].pinned_out:
                return False
            if fetching and self._high_watermark_stale(broker_id, leader):
                return False
        return True


class Replication:
    """Every partition's replicas, the control settings, and the watched partitions."""

    def __init__(self, model: ReplicationModel) -> None:
        self.model = model
        self.controls = ReplicationControls()
        self.partitions: dict[tuple[uuid.UUID, int], PartitionReplicas] = {}
        self._watched: dict[int, PartitionReplicas] = {}
        # (broker id, topic, partition) -> where that replica's log is persisted (data_dir.py)
        self.files_for: Callable[[int, str, int], LogStore | None] = lambda *_: None
        # topic -> its logs' segment policy (set by the cluster's log manager)
        self.segment_policy: Callable[[str], SegmentPolicy] | None = None

    def add(self, topic_id: uuid.UUID, topic: str, partition: int,
            replicas: list[int]) -> PartitionReplicas:
        replica_set = PartitionReplicas(self, topic, partition, replicas)
        self.partitions[(topic_id, partition)] = replica_set
        return replica_set

    def remove_topic(self, topic_id: uuid.UUID) -> None:
        for key in [k for k in self.partitions if k[0] == topic_id]:
            self._watched.pop(id(self.partitions.pop(key)), None)

    def clear(self) -> list[PartitionReplicas]:
        gone = list(self.partitions.values())
        self.partitions.clear()
        self._watched.clear()
        self.controls.clear()
        return gone

    def get(self, topic_id: uuid.UUID, partition: int) -> PartitionReplicas | None:
        return self.partitions.get((topic_id, partition))

    def by_name(self, topic: str, partition: int) -> PartitionReplicas | None:
        image = self.model.image.topics.get(topic)
        return None if image is None else self.partitions.get((image.topic_id, partition))

    def all_logs(self) -> Iterator[PartitionLog]:
        for replica_set in self.partitions.values():
            yield from replica_set.logs.values()

    def watch(self, replica_set: PartitionReplicas) -> None:
        self._watched[id(replica_set)] = replica_set

    def watch_broker(self, broker_id: int | None) -> None:
        """Watch the partitions with a replica on `broker_id` (None: every partition)."""
        for replica_set in self.partitions.values():
            if broker_id is None or broker_id in replica_set.logs:
                self.watch(replica_set)

    def _watch_target(self, broker_id: int | None, partition: tuple[str, int] | None) -> None:
        named = self.by_name(*partition) if partition is not None else None
        if named is not None:
            self.watch(named)
        else:
            self.watch_broker(broker_id)

    @property
    def watched_count(self) -> int:
        return len(self._watched)

    # -- control ----------------------------------------------------------------------------

    def _check_target(self, broker_id: int | None,
                      partition: tuple[str, int] | None) -> None:
        if (broker_id is None) == (partition is None):
            raise ClusterError(ErrorCode.INVALID_REQUEST, "name a broker or a partition")
        if partition is not None and self.by_name(*partition) is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"unknown partition {partition[0]}-{partition[1]}")

    def pause(self, broker_id: int | None = None,
              partition: tuple[str, int] | None = None) -> None:
        """Followers on `broker_id` (or of `partition`) stop fetching from their leaders;
        they leave the ISR once behind for replica.lag.time.max.ms."""
        self._check_target(broker_id, partition)
        if partition is None and broker_id is not None:
            self.controls.paused_brokers.add(broker_id)
        elif partition is not None:
            self.controls.paused_partitions.add(partition)
        # nothing to do until the leader's log grows: its append hook watches then

    def delay(self, delay_ms: int, broker_id: int | None = None,
              partition: tuple[str, int] | None = None) -> None:
        """Followers on `broker_id` (or of `partition`) fetch at most once per `delay_ms`."""
        self._check_target(broker_id, partition)
        if partition is None and broker_id is not None:
            self.controls.broker_delays[broker_id] = delay_ms
        elif partition is not None:
            self.controls.partition_delays[partition] = delay_ms
        # nothing to do until the leader's log grows: its append hook watches then

    def resume(self, broker_id: int | None = None,
               partition: tuple[str, int] | None = None) -> None:
        """Undo pause and delay for `broker_id` / `partition` (both None: everything);
        the followers fetch at once and rejoin the ISR through the next tick."""
        if broker_id is None and partition is None:
            self.controls.clear()
        if broker_id is not None:
            self.controls.paused_brokers.discard(broker_id)
            self.controls.broker_delays.pop(broker_id, None)
        if partition is not None:
            self.controls.paused_partitions.discard(partition)
            self.controls.partition_delays.pop(partition, None)
        for replica_set in self.partitions.values():
            if partition is None or (replica_set.topic, replica_set.partition) == partition:
                for follower, progress in replica_set.progress.items():
                    if broker_id is None or follower == broker_id:
                        progress.pinned_out = False
        self._watch_target(broker_id, partition)
        self.tick(self.model.clock.now_ms())

    # -- the tick ---------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """Watched partitions fetch, then ISRs follow the lag rule."""
        if not self._watched:
            return
        lag_max = self.model.lag_time_max_ms()
        changed = False
        for key, replica_set in list(self._watched.items()):
            if replica_set.image() is None:
                del self._watched[key]
                continue
            replica_set.fetch_round(now_ms)
            isr = replica_set.isr_changes(now_ms, lag_max)
            if isr is not None:
                self.model.controller.change_partition(replica_set.topic,
                                                       replica_set.partition, isr=isr)
                changed = True
        if changed:
            self.model.propagate()
        for key, replica_set in list(self._watched.items()):
            replica_set.update_high_watermark()
            if replica_set.settled():
                del self._watched[key]

    # -- acks=all ---------------------------------------------------------------------------

    def wait_for(self, node: BrokerNode, topic: str, partition: int,
                 min_insync_replicas: int) -> ReplicationWait | None:
        """Right after an acks=all append on `node`: what its answer waits for (None: the
        high watermark already covers it and the ISR is large enough)."""
        part = node.image.partition(topic, partition)
        named = self.model.image.topics.get(topic)  # by_name, inline: once per acks=all batch
        replica_set = None if named is None else self.partitions.get((named.topic_id, partition))
        log = replica_set.logs.get(node.broker_id) if replica_set is not None else None
        if part is None or log is None:
            return None
        min_insync_replicas = effective_min_isr(min_insync_replicas, len(part.replicas))
        # the status first, the wait object only when there is something to wait for (with a
        # single in-sync replica the high watermark already covers the batch)
        if _ack_status(part, replica_set, node.broker_id, log, part.leader_epoch,
                       log.log_end_offset, min_insync_replicas) == ErrorCode.NONE:
            return None
        return ReplicationWait(node, topic, partition, log, part.leader_epoch,
                               log.log_end_offset, min_insync_replicas)

    def ack_status(self, wait: ReplicationWait) -> ErrorCode | None:
        """Kafka's DelayedProduce check, on the leader's own view: NONE once its high
        watermark covers the batch (NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank
        below min.insync.replicas meanwhile); NOT_LEADER_OR_FOLLOWER when it no longer
        leads or its log lost the batch (truncated); None while still waiting."""
        return _ack_status(wait.node.image.partition(wait.topic, wait.partition),
                           self.by_name(wait.topic, wait.partition), wait.node.broker_id,
                           wait.log, wait.leader_epoch, wait.required_offset,
                           wait.min_insync_replicas)


def _ack_status(part: PartitionImage | None, replica_set: PartitionReplicas | None,
                broker_id: int, log: PartitionLog, leader_epoch: int, required_offset: int,
                min_insync_replicas: int) -> ErrorCode | None:
    """`Replication.ack_status` on resolved arguments."""
    if part is None or part.leader != broker_id or replica_set is None \
            or replica_set.logs.get(broker_id) is not log:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    epoch, end = log.end_offset_for_epoch(leader_epoch)
    if epoch != leader_epoch or end < required_offset:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if log.high_watermark < required_offset:
        return None
    if len(part.isr) < min_insync_replicas:
        return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return ErrorCode.NONE


@dataclass(frozen=True)
class ReplicationWait:
    """An acks=all append on `node` waiting for its log's high watermark to reach
    `required_offset` (the answer is re-checked whenever the log or metadata changes)."""

    node: BrokerNode
    topic: str
    partition: int
    log: PartitionLog
    leader_epoch: int
    required_offset: int
    min_insync_replicas: int
