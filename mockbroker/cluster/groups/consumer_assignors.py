"""Server-side assignors of KIP-848 consumer groups: `uniform` and `range`.

Theory of operation: an assignor maps the members' subscriptions (topic ids) and the
partition counts of the subscribed topics to a target assignment per member. It runs in the
group coordinator whenever the group epoch moves past the assignment epoch; its input also
holds each member's previous target so that `uniform` can be sticky.

- `uniform` (Kafka's default, first in group.consumer.assignors): every member keeps the
  partitions of its previous target that it still subscribes to, the rest go one by one to
  the eligible member holding the fewest, then partitions move from the fullest member to an
  eligible one holding at least two fewer until none can move: counts differ by at most one
  among members that could take each other's partitions. Deterministic (ties by member id).
- `range`: per topic, the subscribed members in member-id order get contiguous ranges, the
  first `partitions % members` one partition more, as Kafka's RangeAssignor; not sticky.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

TopicIdPartition = tuple[uuid.UUID, int]

UNIFORM = "uniform"
RANGE = "range"


@dataclass(frozen=True)
class MemberSubscription:
    """What an assignor knows of one member."""

    subscribed_topic_ids: frozenset[uuid.UUID]
    previous_target: frozenset[TopicIdPartition] = frozenset()


Assignor = Callable[[Mapping[str, MemberSubscription], Mapping[uuid.UUID, int]],
                    dict[str, frozenset[TopicIdPartition]]]


def _sort_key(tp: TopicIdPartition) -> tuple[str, int]:
    return str(tp[0]), tp[1]


def assign_uniform(members: Mapping[str, MemberSubscription],
                   partitions_per_topic: Mapping[uuid.UUID, int]
                   ) -> dict[str, frozenset[TopicIdPartition]]:
    """Balanced and sticky: see the module docstring."""
    order = sorted(members)
    rank = {m: i for i, m in enumerate(order)}
    subscribers = {topic: [m for m in order if topic in members[m].subscribed_topic_ids]
                   for topic in partitions_per_topic}
    owned: dict[str, set[TopicIdPartition]] = {m: set() for m in order}
    every = sorted(((topic, p) for topic, count in partitions_per_topic.items()
                    if subscribers[topic] for p in range(count)), key=_sort_key)
    valid = set(every)
    taken: set[TopicIdPartition] = set()
    for member_id in order:
        for tp in sorted(members[member_id].previous_target, key=_sort_key):
            if tp in valid and tp not in taken and tp[0] in members[member_id].subscribed_topic_ids:
                owned[member_id].add(tp)
                taken.add(tp)

    def least_loaded(tp: TopicIdPartition) -> str:
        return min(subscribers[tp[0]], key=lambda m: (len(owned[m]), rank[m]))

    for tp in every:
        if tp not in taken:
            owned[least_loaded(tp)].add(tp)
    _balance(owned, order, rank, least_loaded, passes=len(every) + 1)
    return {m: frozenset(parts) for m, parts in owned.items()}


def _balance(owned: dict[str, set[TopicIdPartition]], order: list[str], rank: dict[str, int],
             least_loaded: Callable[[TopicIdPartition], str], passes: int) -> None:
    """Move partitions from fuller members to the least loaded member subscribed to them
    while that member holds at least two fewer; at most `passes` passes over all members."""
    for _ in range(passes):
        moved = False
        for giver in sorted(order, key=lambda m: (-len(owned[m]), rank[m])):
            for tp in sorted(owned[giver], key=_sort_key, reverse=True):
                taker = least_loaded(tp)
                if len(owned[taker]) + 1 < len(owned[giver]):
                    owned[giver].discard(tp)
                    owned[taker].add(tp)
                    moved = True
        if not moved:
            return


def assign_range(members: Mapping[str, MemberSubscription],
                 partitions_per_topic: Mapping[uuid.UUID, int]
                 ) -> dict[str, frozenset[TopicIdPartition]]:
    """Contiguous ranges per topic over the topic's subscribers in member-id order."""
    owned: dict[str, set[TopicIdPartition]] = {m: set() for m in members}
    for topic, count in sorted(partitions_per_topic.items(), key=lambda kv: str(kv[0])):
        subscribers = sorted(m for m, s in members.items() if topic in s.subscribed_topic_ids)
        if not subscribers:
            continue
        base, extra = divmod(count, len(subscribers))
        start = 0
        for index, member_id in enumerate(subscribers):
            size = base + (1 if index < extra else 0)
            owned[member_id].update((topic, p) for p in range(start, start + size))
            start += size
    return {m: frozenset(parts) for m, parts in owned.items()}


ASSIGNORS: dict[str, Assignor] = {UNIFORM: assign_uniform, RANGE: assign_range}
