"""Fetch from follower (KIP-392): broker racks, the replica selector, and which replica a
consumer should read from.

Theory of operation. Every broker may have a rack (broker.rack: `ClusterConfig.broker_racks`
per broker, or the `broker.rack` property for every broker not named there); it is
registered with the controller, so Metadata, DescribeCluster and the KIP-951 endpoints
report it. `replica.selector.class` decides what a leader tells a consumer whose Fetch
(v11+) carries a rack id: Kafka's default (no selector) always leaves the read with the
leader; `RackAwareReplicaSelector` picks, among the leader and its in-sync followers that
hold the fetch offset (log start <= offset <= log end) on unfenced brokers, a replica in the
client's rack: the leader when it is there itself, else the follower with the highest log
end (the one caught up most recently on a tie, then the lowest id). `preferred_read_replica`
answers that choice as Kafka's ReplicaManager does: the follower's id, or -1 when the leader
is best; the Fetch handler then answers the partition without records, and the client goes
to that follower. The decision is taken on the leader's own view: its metadata image (ISR,
fencing, racks) and what it knows of its followers (their logs' ends, replicas.py).

A follower answers a consumer's Fetch (v11+) from its own log, up to its own high watermark
(replicas.py: what its last fetch from the leader told it), after the same leader-epoch
checks as the leader (leadership.check_leader with leader_only=False): only a broker
holding no replica answers NOT_LEADER_OR_FOLLOWER. A follower that leaves the ISR (or whose
broker is fenced) is no longer chosen, so the next fetch a client sends to the leader sends
it elsewhere (or keeps it there); a client reading from a lagging follower gets fewer
records, then OFFSET_OUT_OF_RANGE past that follower's log end, and goes back to the leader.

Each replica set remembers the last choice (`PartitionReplicas.last_preferred_read_replica`:
the chosen broker id, the leader's when it was best) for the `state` verb.
"""

from __future__ import annotations

from collections.abc import Sequence

from mockbroker.cluster.kraft.metadata_log import MetadataImage, PartitionImage
from mockbroker.cluster.log.replicas import PartitionReplicas

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
REPLICA_SELECTORS = (RACK_AWARE_SELECTOR,)  # besides none (Kafka's default: leader only)
NO_PREFERRED_REPLICA = -1
FIRST_RACK_AWARE_FETCH_VERSION = 11  # Fetch v11 added RackId (KIP-392)


def parse_racks(text: str) -> tuple[str, ...]:
    """`r0,r1,,r3` -> one rack per broker in id order; an empty entry is a broker without
    a rack."""
    return tuple(part.strip() for part in text.split(",")) if text.strip() else ()


def broker_rack(racks: Sequence[str], shared: str | None, broker_id: int) -> str | None:
    """The rack of `broker_id`: its entry in `racks` when non-empty, else the `broker.rack`
    property every broker shares (None: no rack)."""
    if broker_id < len(racks) and racks[broker_id]:
        return racks[broker_id]
    return shared or None


def check_racks(racks: Sequence[str], brokers: int) -> None:
    if len(racks) > brokers:
        raise ValueError(f"{len(racks)} broker racks given for {brokers} brokers")


def check_selector(selector: str) -> None:
    """Kafka refuses to start with a replica.selector.class it cannot load."""
    if selector and selector not in REPLICA_SELECTORS:
        raise ValueError(f"replica.selector.class: class {selector} could not be found")


def rack_aware_choice(image: MetadataImage, part: PartitionImage,
                      replica_set: PartitionReplicas, client_rack: str, fetch_offset: int,
                      now_ms: int) -> int:
    """Kafka's RackAwareReplicaSelector over the leader's view: the broker id to read from
    (the leader's own when it is in the client's rack, or when no eligible replica is)."""
    leader = part.leader
    leader_log = replica_set.logs.get(leader)
    if not client_rack or leader_log is None:
        return leader
    leader_node = image.brokers.get(leader)
    if leader_node is not None and leader_node.rack == client_rack:
        return leader
    best: tuple[int, int, int] | None = None  # (log end, -ms since caught up, -broker id)
    for broker_id in part.isr:
        log = replica_set.logs.get(broker_id)
        node = image.brokers.get(broker_id)
        if broker_id == leader or log is None or node is None or node.fenced \
                or node.rack != client_rack:
            continue
        if not log.log_start_offset <= fetch_offset <= log.log_end_offset:
            continue
        progress = replica_set.progress[broker_id]
        key = (log.log_end_offset, -(now_ms - progress.last_caught_up_ms), -broker_id)
        if best is None or key > best:
            best = key
    return leader if best is None else -best[2]


def preferred_read_replica(selector: str, image: MetadataImage, part: PartitionImage,
                           replica_set: PartitionReplicas, client_rack: str | None,
                           fetch_offset: int, now_ms: int) -> int:
    """What the leader answers in a consumer Fetch's PreferredReadReplica: a follower's id,
    or -1 to keep reading from the leader. Remembers the choice on `replica_set`."""
    if selector != RACK_AWARE_SELECTOR:
        return NO_PREFERRED_REPLICA
    chosen = rack_aware_choice(image, part, replica_set, client_rack or "", fetch_offset,
                               now_ms)
    replica_set.last_preferred_read_replica = chosen
    return NO_PREFERRED_REPLICA if chosen == part.leader else chosen
