"""Broker sessions as KRaft detects failures: heartbeats, session timeout, fencing.

Theory of operation. Every running broker heartbeats the controller every
`ClusterConfig.heartbeat_interval_ms` (Cluster.heartbeat_round; all in one round so that
consistent reads stay monotonic, heartbeat_rounds.py), and the controller notes when it last heard
from each (`BrokerNode.last_heartbeat_ms`). A registered, unfenced broker not heard from for
broker.session.timeout.ms (`ClusterConfig.broker_session_timeout_ms`, Kafka's 9000) is fenced
by the controller (`expire`, on the cluster tick): a FenceBroker record, its leaderships move
to the next live in-sync replica, the ISRs it was in shrink (dynamics.fence_broker). Nothing
else about the broker changes: its listener, if open, stays open.

Two ways for a broker to go silent, besides `stop-broker` (which fences at once, as a
controlled shutdown does):
- `crash`: the broker's process is gone (the caller closes its listener and connections);
  the controller notices only by the session timeout, so until then its partitions have a
  leader nobody can reach.
- `isolate`: a network partition between the broker and the rest: it neither heartbeats nor
  fetches metadata (its image stays as it was) nor replicates (its followers stop fetching,
  followers elsewhere cannot fetch from it), but clients still reach it. Until fenced it is
  a leader whose high watermark cannot move (acks=all answers time out); after, a zombie:
  its stale image still says it leads at the old epoch, so clients that know only that
  epoch are still answered (acks=1 writes acknowledged, then lost), while clients that
  learned the new epoch are refused (UNKNOWN_LEADER_EPOCH). `heal` ends the isolation:
  the broker heartbeats again, the controller unfences it, it catches up and rejoins (its
  replicas truncate what diverged, dynamics.rejoin_broker).
"""

from __future__ import annotations

from typing import Protocol

from mockbroker.cluster.dynamics import ClusterModel, fence_broker, rejoin_broker

DEFAULT_SESSION_TIMEOUT_MS = 9000


class SessionModel(ClusterModel, Protocol):
    def session_timeout_ms(self) -> int: ...


def expire(cluster: SessionModel, now_ms: int) -> list[int]:
    """Fence every unfenced broker whose session has timed out; returns their ids."""
    timeout = cluster.session_timeout_ms()
    expired = []
    for registration in cluster.image.live_brokers():
        node = cluster.brokers.get(registration.broker_id)
        if node is None or (node.up and not node.isolated):
            continue
        if node.last_heartbeat_ms >= 0 and now_ms - node.last_heartbeat_ms > timeout:
            expired.append(node.broker_id)
    for broker_id in expired:
        node = cluster.brokers[broker_id]
        fence_broker(cluster, broker_id, mark_down=not node.up)
    return expired


def crash(cluster: SessionModel, broker_id: int) -> None:
    """The broker is gone without telling the controller (the caller closes its sockets)."""
    node = cluster.brokers[broker_id]
    node.up = False
    node.fetch_sessions.clear()  # its followers fall behind at the next append


def isolate(cluster: SessionModel, broker_id: int) -> None:
    """The broker loses the controller and the other brokers, not its clients."""
    cluster.brokers[broker_id].isolated = True  # replication stops at the next append


def heal(cluster: SessionModel, broker_id: int) -> None:
    """End an isolation: heartbeats resume, the controller unfences the broker if it had
    fenced it, and the broker catches up and rejoins its partitions."""
    node = cluster.brokers[broker_id]
    node.isolated = False
    node.last_heartbeat_ms = cluster.clock.now_ms()
    registration = cluster.image.brokers.get(broker_id)
    if registration is not None and registration.fenced:
        cluster.controller.unfence_broker(broker_id)
    rejoin_broker(cluster, broker_id)
