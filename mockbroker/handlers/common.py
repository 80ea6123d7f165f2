"""Checks shared by the partition-level APIs, as the receiving broker sees them.

The decision (leader-epoch fencing, then leadership) is the cluster's
(mockbroker.cluster.leadership); this is its handler-side spelling with a RequestContext.
"""

from __future__ import annotations

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
