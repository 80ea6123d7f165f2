"""Share groups (KIP-932): membership, the simple assignor, share sessions, share-partitions.

Theory of operation.

- Membership (ShareGroupHeartbeat). A member joins with epoch 0 (and its subscribed topic
  names), heartbeats with its current epoch every `heartbeat_interval_ms`
  (group.share.heartbeat.interval.ms) and leaves with epoch -1. Every join, leave,
  subscription change or session expiry (`session_timeout_ms`,
  group.share.session.timeout.ms, on the injected clock; `tick`) bumps the group epoch and
  recomputes the assignment. Share groups never revoke (records, not partitions, are the
  unit of exclusivity), so each member moves to the new assignment at its next heartbeat:
  its epoch becomes the group epoch and the response carries the assignment. An epoch that
  is not the member's is FENCED_MEMBER_EPOCH; a member the group does not know is
  UNKNOWN_MEMBER_ID. A group id already used by a classic or KIP-848 consumer group is
  GROUP_ID_NOT_FOUND ("not a share group"), as Kafka's coordinator answers; the other
  coordinators are asked through the `other_group_type` lookup only.
- The simple assignor (Kafka's SimpleAssignor for share groups): for each subscribed topic,
  with members sorted by id, partitions go round-robin to the topic's subscribers, so with
  fewer members than partitions each partition has one member; with more members than
  partitions every member still gets one partition and partitions are shared (records,
  not partitions, are exclusive).
- Share sessions (ShareFetch/ShareAcknowledge). One per (broker, group, member), forgotten
  when the broker stops (what was acquired through it becomes available): epoch 0
  opens (or replaces) it, -1 closes it and releases what the member holds, any other epoch
  must be the session's next one (INVALID_SHARE_SESSION_EPOCH), and an epoch > 0 without a
  session is SHARE_SESSION_NOT_FOUND. A session remembers the partitions fetched, so an
  incremental fetch names only additions (and ForgottenTopicsData removals).
- Share-partitions (share_partitions.py) are created on first fetch with the group's
  share.auto.offset.reset (group configs: set with `set_group_config` or by an admin on the
  GROUP resource, which the coordinator reads from the metadata image through
  `admin_configs`); the group config share.isolation.level bounds reads by the high
  watermark (read_uncommitted, the default) or the LSO (read_committed). Leaving, session
  expiry and closing a share session release the member's records; `tick` also expires
  acquisition locks, and every release wakes parked ShareFetches on that log.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.groups.consumer_group_model import JOIN_EPOCH, LEAVE_EPOCH
from mockbroker.cluster.groups.share_partitions import (
    DEFAULT_DELIVERY_LIMIT,
    DEFAULT_LOCK_DURATION_MS,
    DEFAULT_MAX_IN_FLIGHT,
    SharePartition,
)
from mockbroker.cluster.kafka_uuid import random_id
from mockbroker.cluster.log.partition import PartitionLog

CLOSE_SESSION_EPOCH = -1
OPEN_SESSION_EPOCH = 0
ASSIGNOR_NAME = "simple"
GROUP_CONFIG_DEFAULTS = {"share.auto.offset.reset": "latest",
                         "share.isolation.level": "read_uncommitted"}

TopicPartitionId = tuple[uuid.UUID, int]


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"


@dataclass
class ShareGroupSettings:
    """Kafka's broker-wide group.share.* settings (defaults as in Kafka 4.0)."""

    heartbeat_interval_ms: int = 5_000
    session_timeout_ms: int = 45_000
    lock_duration_ms: int = DEFAULT_LOCK_DURATION_MS
    delivery_limit: int = DEFAULT_DELIVERY_LIMIT
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT


@dataclass
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: list[str]
    deadline_ms: int
    assignment: dict[str, list[int]] = field(default_factory=dict)  # topic name -> partitions
    sent_assignment: dict[str, list[int]] | None = None


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    partitions: dict[TopicPartitionId, SharePartition] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY


@dataclass(frozen=True)
class HeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: dict[str, list[int]] | None = None


@dataclass
class ShareSession:
    epoch: int  # the epoch the next request must carry
    partitions: set[TopicPartitionId] = field(default_factory=set)


def simple_assign(members: list[ShareMember],
                  partition_counts: dict[str, int]) -> dict[str, dict[str, list[int]]]:
    """member id -> topic -> partitions: round-robin per topic over its subscribers."""
    out: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in members}
    for topic in sorted(partition_counts):
        subscribers = sorted(m.member_id for m in members if topic in m.subscribed)
        count = partition_counts[topic]
        if not subscribers or count <= 0:
            continue
        if len(subscribers) <= count:
            for index in range(count):
                out[subscribers[index % len(subscribers)]].setdefault(topic, []).append(index)
        else:
            for position, member_id in enumerate(subscribers):
                out[member_id][topic] = [position % count]
    return out


class ShareGroupCoordinator:
    def __init__(self, clock: Clock, settings: ShareGroupSettings | None = None,
                 partition_counts: Callable[[], dict[str, int]] | None = None,
                 other_group_type: Callable[[str], str | None] | None = None,
                 log_lookup: Callable[[uuid.UUID, int], PartitionLog | None] | None = None,
                 admin_configs: Callable[[str], Mapping[str, str]] | None = None) -> None:
        self.clock = clock
        self.settings = settings or ShareGroupSettings()
        self._partition_counts = partition_counts or dict
        self._other_group_type = other_group_type or (lambda group_id: None)
        self._log_lookup = log_lookup or (lambda topic_id, index: None)
        self._admin_configs = admin_configs or (lambda group_id: {})
        self.groups: dict[str, ShareGroup] = {}
        self.sessions: dict[tuple[int, str, str], ShareSession] = {}

    def reset(self) -> None:
        self.groups.clear()
        self.sessions.clear()

    # -- membership -------------------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                  rack_id: str | None, subscribed: list[str] | None,
                  client_id: str = "", client_host: str = "") -> HeartbeatResult:
        invalid = _invalid_heartbeat(group_id, member_id, member_epoch, rack_id, subscribed)
        if invalid is not None:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, invalid)
        if self._other_group_type(group_id) is not None and group_id not in self.groups:
            return HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND,
                                   f"Group {group_id} is not a share group.")
        now = self.clock.now_ms()
        group = self.groups.get(group_id)
        if member_epoch == LEAVE_EPOCH:
            if group is None or member_id not in group.members:
                return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID)
            self._remove_member(group, member_id)
            return HeartbeatResult(ErrorCode.NONE, member_id=member_id, member_epoch=LEAVE_EPOCH)
        if member_epoch == JOIN_EPOCH:
            group = self.groups.setdefault(group_id, ShareGroup(group_id))
            member_id = member_id or random_id()  # Kafka: Uuid.randomUuid().toString()
            member = group.members.get(member_id)
            if member is None:
                member = ShareMember(member_id, 0, client_id, client_host, rack_id,
                                     list(subscribed or []), 0)
                group.members[member_id] = member
                group.group_epoch += 1
            member.sent_assignment = None  # a rejoin gets the full assignment again
        else:
            if group is None or member_id not in group.members:
                return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID)
            member = group.members[member_id]
            if member_epoch != member.member_epoch:
                return HeartbeatResult(ErrorCode.FENCED_MEMBER_EPOCH)
        if rack_id is not None:
            member.rack_id = rack_id
        if subscribed is not None and sorted(subscribed) != sorted(member.subscribed):
            member.subscribed = list(subscribed)
            group.group_epoch += 1
        member.client_id, member.client_host = client_id or member.client_id, \
            client_host or member.client_host
        member.deadline_ms = now + self.settings.session_timeout_ms
        self._refresh_assignment(group)
        member.member_epoch = group.assignment_epoch
        assignment = None
        if member.sent_assignment != member.assignment:
            assignment = {t: list(ps) for t, ps in member.assignment.items()}
            member.sent_assignment = assignment
        return HeartbeatResult(ErrorCode.NONE, member_id=member.member_id,
                               member_epoch=member.member_epoch,
                               heartbeat_interval_ms=self.settings.heartbeat_interval_ms,
                               assignment=assignment)

    def _refresh_assignment(self, group: ShareGroup) -> None:
        """Recompute the target assignment when the group epoch or the topics changed."""
        counts = self._partition_counts()
        subscribed = {t for m in group.members.values() for t in m.subscribed}
        counts = {t: n for t, n in counts.items() if t in subscribed}
        target = simple_assign(list(group.members.values()), counts)
        changed = any(target[m.member_id] != m.assignment for m in group.members.values())
        if changed and group.assignment_epoch == group.group_epoch:
            group.group_epoch += 1  # a topic was created or grew: a new assignment epoch
        for member in group.members.values():
            member.assignment = target[member.member_id]
        group.assignment_epoch = group.group_epoch

    def _remove_member(self, group: ShareGroup, member_id: str) -> None:
        del group.members[member_id]
        group.group_epoch += 1
        self._refresh_assignment(group)
        for key in [k for k in self.sessions if k[1] == group.group_id and k[2] == member_id]:
            del self.sessions[key]
        self._release(group, member_id)

    def _release(self, group: ShareGroup, member_id: str) -> None:
        for (topic_id, index), share in group.partitions.items():
            if share.release_member(member_id):
                self._wake(topic_id, index)

    def _wake(self, topic_id: uuid.UUID, index: int) -> None:
        log = self._log_lookup(topic_id, index)
        if log is not None:
            log.wake_listeners()

    def tick(self, now: int) -> None:
        """Expire members whose session timed out, and acquisition locks that ran out."""
        for group in list(self.groups.values()):
            for member_id in [m.member_id for m in group.members.values()
                              if m.deadline_ms <= now]:
                self._remove_member(group, member_id)
            for (topic_id, index), share in group.partitions.items():
                if share.expire_locks(now):
                    self._wake(topic_id, index)

    def next_deadline(self) -> int | None:
        """The earliest member session or lock deadline (a parked ShareFetch's wake-up)."""
        deadlines: list[int] = []
        for group in self.groups.values():
            deadlines.extend(m.deadline_ms for m in group.members.values())
            deadlines.extend(d for s in group.partitions.values()
                             if (d := s.next_lock_deadline()) is not None)
        return min(deadlines) if deadlines else None

    # -- share sessions ---------------------------------------------------------------------

    def open_session(self, broker_id: int, group_id: str, member_id: str,
                     epoch: int) -> tuple[ErrorCode, ShareSession | None]:
        """Resolve the request's share session: opened (epoch 0), continued (its next
        epoch) or, for -1, removed and returned one last time for acknowledgements."""
        key = (broker_id, group_id, member_id)
        if epoch == OPEN_SESSION_EPOCH:
            old = self.sessions.pop(key, None)
            group = self.groups.get(group_id)
            if old is not None and group is not None:
                self._release(group, member_id)
            opened = ShareSession(1)
            self.sessions[key] = opened
            return ErrorCode.NONE, opened
        session = self.sessions.get(key)
        if session is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND, None
        if epoch == CLOSE_SESSION_EPOCH:
            return ErrorCode.NONE, session
        if epoch != session.epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
        session.epoch = epoch + 1 if epoch < 0x7FFFFFFF else 1
        return ErrorCode.NONE, session

    def close_session(self, broker_id: int, group_id: str, member_id: str) -> None:
        """ShareSessionEpoch -1: forget the session and release what the member holds."""
        self.sessions.pop((broker_id, group_id, member_id), None)
        group = self.groups.get(group_id)
        if group is not None:
            self._release(group, member_id)

    def drop_broker_sessions(self, broker_id: int) -> None:
        """A stopped broker forgets its share sessions, and the records members acquired
        through them become available again (Kafka's new share-partition leader reloads the
        persisted state, which has no acquisitions)."""
        for key in [k for k in self.sessions if k[0] == broker_id]:
            session = self.sessions.pop(key)
            group = self.groups.get(key[1])
            if group is None:
                continue
            for topic_id, index in session.partitions:
                share = group.partitions.get((topic_id, index))
                if share is not None and share.release_member(key[2]):
                    self._wake(topic_id, index)

    # -- share-partitions -------------------------------------------------------------------

    def share_partition(self, group_id: str, topic_id: uuid.UUID,
                        log: PartitionLog) -> SharePartition:
        """The group's share-partition for `log`, started per share.auto.offset.reset."""
        group = self.groups.setdefault(group_id, ShareGroup(group_id))
        key = (topic_id, log.partition)
        share = group.partitions.get(key)
        if share is None:
            s = self.settings
            share = SharePartition.start(log, self.config(group, "share.auto.offset.reset"),
                                         lock_duration_ms=s.lock_duration_ms,
                                         delivery_limit=s.delivery_limit,
                                         max_in_flight=s.max_in_flight)
            group.partitions[key] = share
        return share

    def read_committed(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and \
            self.config(group, "share.isolation.level") == "read_committed"

    def config(self, group: ShareGroup, key: str) -> str:
        """A group config's value: set with set_group_config (the control API), else set by
        an admin (IncrementalAlterConfigs on the GROUP resource: the metadata image), else
        the default."""
        if key in group.configs:
            return group.configs[key]
        return self._admin_configs(group.group_id).get(key, GROUP_CONFIG_DEFAULTS[key])

    def set_group_config(self, group_id: str, key: str, value: str | None) -> None:
        """A share group config (share.auto.offset.reset, share.isolation.level); None
        restores the default. Applies to share-partitions started afterwards."""
        if key not in GROUP_CONFIG_DEFAULTS:
            raise ValueError(f"unknown share group config {key!r}; "
                             f"known: {', '.join(GROUP_CONFIG_DEFAULTS)}")
        group = self.groups.setdefault(group_id, ShareGroup(group_id))
        if value is None:
            group.configs.pop(key, None)
        else:
            group.configs[key] = value

    def is_share_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def state(self) -> dict[str, object]:
        """JSON-ready: per group its epochs, configs, members with their assignments, and
        per share-partition SPSO, SPEO and the in-flight records (control API `state`)."""
        return {group_id: {
            "state": g.state.value, "group_epoch": g.group_epoch,
            "assignment_epoch": g.assignment_epoch, "configs": dict(g.configs),
            "members": {m.member_id: {
                "member_epoch": m.member_epoch, "client_id": m.client_id,
                "client_host": m.client_host, "subscribed_topics": sorted(m.subscribed),
                "assignment": {t: sorted(ps) for t, ps in sorted(m.assignment.items())},
                "session_deadline_ms": m.deadline_ms} for m in g.members.values()},
            "share_partitions": [{
                "topic": share.topic, "topic_id": str(topic_id), "partition": index,
                "spso": share.spso, "speo": share.speo, "in_flight": share.in_flight()}
                for (topic_id, index), share in sorted(
                    g.partitions.items(), key=lambda kv: (kv[1].topic, kv[0][1]))],
            "share_sessions": [
                {"broker": broker, "member_id": member, "next_epoch": session.epoch,
                 "partitions": len(session.partitions)}
                for (broker, gid, member), session in sorted(self.sessions.items())
                if gid == group_id],
        } for group_id, g in sorted(self.groups.items())}


def _invalid_heartbeat(group_id: str, member_id: str, member_epoch: int,
                       rack_id: str | None, subscribed: list[str] | None) -> str | None:
    """Kafka's request checks, in its order; the message, or None when valid."""
    if not group_id:
        return "GroupId can't be empty."
    if rack_id is not None and not rack_id:
        return "RackId can't be empty."
    if member_epoch == JOIN_EPOCH:
        if not subscribed:
            return "SubscribedTopicNames must be set in first request."
    elif not member_id:
        return "MemberId can't be empty."
    if member_epoch < LEAVE_EPOCH:
        return f"MemberEpoch is {member_epoch}, but must be greater than or equal to -1."
    return None
