"""Checks shared by the partition-level APIs, as the receiving broker sees them.

The decision (leader-epoch fencing, then leadership) is the cluster's
(mockbroker.cluster.leadership); this is its handler-side spelling with a RequestContext.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mockbroker.cluster import LeaderCheck, PartitionLog, TopicImage
from mockbroker.handlers.context import RequestContext

NO_EPOCH_CHECK = -1
PartitionCheck = LeaderCheck  # the name handlers use


def check_leader(ctx: RequestContext, topic_name: str, index: int,
                 current_leader_epoch: int = NO_EPOCH_CHECK,
                 topic: TopicImage | None = None) -> LeaderCheck:
    """Resolve a partition on this broker and apply fencing and leadership checks."""
    return ctx.cluster.check_leader(ctx.broker, topic_name, index, current_leader_epoch, topic)


def epoch_for_offset(log: PartitionLog, offset: int) -> int:
    """The leader epoch in which `offset` was written (-1 if unknown)."""
    epoch = -1
    for e, start in log.epoch_cache:
        if start <= offset:
            epoch = e
        else:
            break
    return epoch


def replace_partition_entries(response: Mapping[str, Any], topics_key: str, name_key: str,
                              parts_key: str, index_key: str,
                              errors: Mapping[tuple[str, int], int],
                              error_entry: Callable[[int, int], dict[str, Any]]
                              ) -> dict[str, Any]:
    """A copy of a topics -> partitions response in which the partitions in `errors` are
    replaced (or added) by `error_entry(index, code)`, partitions kept in index order."""
    out = dict(response)
    topics = [dict(t) for t in out.get(topics_key) or []]
    by_name = {t[name_key]: t for t in topics}
    for (topic, index), code in sorted(errors.items()):
        entry = by_name.get(topic)
        if entry is None:
            entry = by_name[topic] = {name_key: topic, parts_key: []}
            topics.append(entry)
        parts = [p for p in entry[parts_key] if p[index_key] != index]
        parts.append(error_entry(index, code))
        entry[parts_key] = sorted(parts, key=lambda p: p[index_key])
    out[topics_key] = topics
    return out
