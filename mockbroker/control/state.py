"""The `state` verb: one JSON-ready snapshot of everything a test could want to see.

Theory of operation: read-only; built on the event loop from the cluster model in one go,
so it is consistent (nothing changes between two lines of it). The brokers with their
liveness and applied metadata offsets, the controller and its metadata log, every topic
and partition with leadership and offsets, groups (classic, and KIP-848 consumer groups with
epochs and per-member assignments) with members and committed offsets, producer state per
partition, transactions, the active faults, the open connections, and client telemetry
(KIP-714: subscriptions and the client instances that pushed). Attributes that other
parts of the simulator may or may not provide (heartbeat-acknowledged offsets, KIP-253's
prior leader epochs of a new partition) are read defensively and shown when present.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from mockbroker.cluster import Cluster, ManualClock
from mockbroker.cluster.groups.consumer_group_model import ConsumerGroup
from mockbroker.cluster.kraft.features import METADATA_VERSION_FEATURE
from mockbroker.cluster.kraft.metadata_log import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    PartitionImage,
    TopicImage,
)
from mockbroker.control.quota_verbs import quotas_json
from mockbroker.control.replication import replicas_state
from mockbroker.control.telemetry_verbs import telemetry_state

if TYPE_CHECKING:
    from mockbroker.control.faults import FaultInjector
    from mockbroker.server.cluster_server import ClusterServer


def snapshot(server: ClusterServer, faults: FaultInjector) -> dict[str, Any]:
    cluster = server.cluster
    return {
        "cluster_id": cluster.config.cluster_id,
        "clock": clock_state(cluster),
        "controller": controller_state(cluster),
        "brokers": [broker_state(server, b) for b in sorted(cluster.brokers)],
        "listeners": server.listener_table(),
        "security": security_state(server),
        "quotas": {**quotas_json(cluster), "connections": connection_quotas_state(server)},
        "topics": {name: topic_state(cluster, t)
                   for name, t in sorted(cluster.image.topics.items())},
        "broker_configs": {name or "<cluster>": dict(values)
                           for (kind, name), values in sorted(cluster.image.configs.items())
                           if kind == RESOURCE_BROKER and values},
        "groups": groups_state(cluster),
        "share_groups": cluster.share_groups.state(),  # KIP-932
        "producers": producers_state(cluster),
        "transactions": transactions_state(cluster),
        "faults": faults.active(),
        "connections": connections_state(server),
        "fault_seed": faults.seed,
        "telemetry": telemetry_state(cluster),
    }


def connection_quotas_state(server: ClusterServer) -> dict[str, Any]:
    """Connection limits, all brokers summed: connections closed unserved per client IP
    (KIP-612 rates), open connections per IP and per listener, connections refused per IP
    (max.connections.per.ip); per broker those and the acceptor's waits per listener."""
    totals: dict[str, dict[str, int]] = {
        key: {} for key in ("throttled_by_ip", "open_by_ip", "open_by_listener",
                            "refused_by_ip")}
    brokers = {}
    for broker_id, quotas in sorted(server.connection_quotas.items()):
        for key, counts in (("throttled_by_ip", quotas.throttled_by_ip),
                            ("open_by_ip", quotas.open_by_ip),
                            ("open_by_listener", quotas.open_by_listener),
                            ("refused_by_ip", quotas.refused_by_ip)):
            for name, count in counts.items():
                totals[key][name] = totals[key].get(name, 0) + count
        brokers[str(broker_id)] = quotas.to_json()
    return {**{key: dict(sorted(counts.items())) for key, counts in totals.items()},
            "brokers": brokers}


def connections_state(server: ClusterServer,
                      broker_id: int | None = None) -> list[dict[str, Any]]:
    """The open client connections (ids for the connection filter of connection faults)."""
    now = asyncio.get_running_loop().time()
    return [c.to_json(now) for _, c in sorted(server.hooks.connections.items())
            if broker_id is None or c.broker_id == broker_id]


def security_state(server: ClusterServer) -> dict[str, Any]:
    """TLS files (ca.pem to trust), client auth, SASL mechanisms and users (no secrets),
    and the last authentications with their principals."""
    files = server.tls_files
    return {
        "tls": files.to_json() if files is not None else None,
        "ssl_client_auth": server.tls.client_auth,
        "sasl_mechanisms": list(server.sasl.mechanisms),
        "connections_max_reauth_ms": server.sasl.connections_max_reauth_ms,
        "users": server.cluster.credentials.describe(),
        "authentications": list(server.sasl.authentications),
        "authorizer": server.cluster.acls.to_json(server.cluster.image.acls),
    }


def clock_state(cluster: Cluster) -> dict[str, Any]:
    """The cluster's time: `manual` (moves only with advance-clock, so its now_ms is part of
    the state) or `system` (wall time)."""
    clock = cluster.clock
    if isinstance(clock, ManualClock):
        return {"mode": "manual", "now_ms": clock.now_ms()}
    return {"mode": "system"}


def controller_state(cluster: Cluster) -> dict[str, Any]:
    controller = cluster.controller
    return {
        "id": cluster.controller_id(),
        "epoch": controller.epoch,
        "metadata_log_end_offset": controller.log.end_offset,
        "metadata_offset": cluster.image.offset,
        # broker heartbeats: the lowest metadata offset every unfenced broker acknowledged
        "lowest_acknowledged_offset": controller.lowest_acknowledged_offset,
        "consistent_metadata": cluster.config.consistent_metadata,
        "heartbeat_interval_ms": cluster.config.heartbeat_interval_ms,
        # KIP-778: brokers that closed their client connections after a metadata.version change
        "apiversions_renegotiations": [e.to_json() for e in cluster.renegotiation.events],
    }


def broker_state(server: ClusterServer, broker_id: int) -> dict[str, Any]:
    cluster = server.cluster
    node = cluster.brokers[broker_id]
    registered = cluster.image.brokers.get(broker_id)
    out: dict[str, Any] = {
        "id": broker_id, "host": node.host, "port": node.port,
        "endpoint": f"{node.host}:{node.port}", "up": node.up,
        "listening": broker_id in server.servers and not server.refusing_connections(broker_id),
        "refusing_connections": server.refusing_connections(broker_id),
        "registered": registered is not None,
        "fenced": registered.fenced if registered is not None else True,
        "rack": cluster.broker_rack(broker_id),
        "broker_epoch": registered.epoch if registered is not None else -1,
        "applied_offset": node.applied_offset,
        "metadata_paused": node.paused,
        "isolated": node.isolated,
        "metadata_delay_ms": node.metadata_delay_ms,
        "fetch_sessions": len(node.fetch_sessions.sessions),
        # what its latest heartbeat said
        "acknowledged_offset": node.acknowledged_offset,
        "lowest_acknowledged_offset": node.lowest_acknowledged_offset,
        "last_heartbeat_ms": node.last_heartbeat_ms,
        # the metadata.version its ApiVersions advertises (from its own, possibly stale image)
        "metadata_version": node.image.features.get(METADATA_VERSION_FEATURE),
        "renegotiation_pending_offset": cluster.renegotiation.pending(broker_id),
    }
    return out


def topic_state(cluster: Cluster, topic: TopicImage) -> dict[str, Any]:
    partitions = []
    for index, part in sorted(topic.partitions.items()):
        log = cluster.log(topic.topic_id, index)
        entry: dict[str, Any] = {
            "partition": index, "leader": part.leader, "leader_epoch": part.leader_epoch,
            "partition_epoch": part.partition_epoch, "replicas": list(part.replicas),
            "isr": list(part.isr),
        }
        if log is not None:
            entry.update({
                "log_start_offset": log.log_start_offset,
                "high_watermark": log.high_watermark,
                "last_stable_offset": log.last_stable_offset,
                "log_end_offset": log.log_end_offset,
                "leader_epoch_cache": [[e, s] for e, s in log.epoch_cache],
                "log": cluster.log_manager.log_state(topic.name, log),
            })
        replica_set = cluster.replication.get(topic.topic_id, index)
        if replica_set is not None:
            entry["replica_logs"] = replicas_state(cluster, replica_set)
            # KIP-392: the replica last chosen for a consumer (None: never asked)
            entry["preferred_read_replica"] = replica_set.last_preferred_read_replica
        entry["prior_leader_epochs"] = _prior_epochs(part)
        partitions.append(entry)
    return {"topic_id": str(topic.topic_id), "partitions": partitions,
            "configs": dict(cluster.image.configs.get((RESOURCE_TOPIC, topic.name), {}))}


def _prior_epochs(part: PartitionImage) -> dict[str, int]:
    """KIP-253: for a partition added by expansion, prior partition -> leader epoch (an
    empty map for partitions created with the topic)."""
    return {str(k): v for k, v in part.prior_leader_epochs}


def groups_state(cluster: Cluster) -> dict[str, Any]:
    """Classic and KIP-848 consumer groups by id, each with its type and committed offsets."""
    coordinator = cluster.groups
    consumer_groups = cluster.consumer_groups.groups
    names = set(coordinator.groups) | set(consumer_groups) | coordinator.offsets.groups()
    out: dict[str, Any] = {}
    for name in sorted(names):
        group = coordinator.get(name)
        offsets: dict[str, dict[str, Any]] = {}
        for (topic, partition), committed in coordinator.offsets.all(name).items():
            offsets.setdefault(topic, {})[str(partition)] = {
                "offset": committed.offset, "leader_epoch": committed.leader_epoch,
                "metadata": committed.metadata}
        entry: dict[str, Any] = {"coordinator": cluster.coordinator_for(0, name),
                                 "offsets": offsets}
        consumer = consumer_groups.get(name)
        if consumer is not None:
            entry.update(consumer_group_state(cluster, consumer))
        elif group is not None:
            entry.update({
                "type": "classic",
                "state": group.state.value, "generation": group.generation_id,
                "protocol_type": group.protocol_type, "protocol": group.protocol_name,
                "leader": group.leader_id,
                "members": [{"member_id": m.member_id,
                             "group_instance_id": m.group_instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "session_timeout_ms": m.session_timeout_ms,
                             "member_type": "classic"}
                            for m in group.members.values()]})
        else:
            entry.update({"type": "classic", "state": "Empty", "generation": 0,
                          "members": []})
        out[name] = entry
    return out


def consumer_group_state(cluster: Cluster, group: ConsumerGroup) -> dict[str, Any]:
    """A KIP-848 group: epochs, and per member its epoch, state and partitions by topic
    name (assigned: usable now; pending_revocation: still owned, being given up; target:
    what the assignor gave it)."""
    by_id = cluster.image.topics_by_id

    def named(partitions: frozenset[tuple[uuid.UUID, int]]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for topic_id, index in partitions:
            topic = by_id.get(topic_id)
            out.setdefault(topic.name if topic else str(topic_id), []).append(index)
        return {name: sorted(indexes) for name, indexes in sorted(out.items())}

    return {
        "type": "consumer", "state": group.state.value, "generation": group.group_epoch,
        "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
        "assignor": group.assignor_name,
        "members": [{
            "member_id": m.member_id, "group_instance_id": m.instance_id,
            "client_id": m.client_id, "client_host": m.client_host,
            "member_epoch": m.member_epoch, "member_state": m.state.value,
            "member_type": m.member_type,  # "classic": joined with JoinGroup (Kafka 4.0)
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex,
            "assigned": named(m.assigned),
            "pending_revocation": named(m.pending_revocation),
            "target": named(group.target.get(m.member_id, frozenset()))}
            for m in group.members.values()]}

def producers_state(cluster: Cluster) -> list[dict[str, Any]]:
    out = []
    for log in (r.leader_log() for r in cluster.replication.partitions.values()):
        for pid, entry in sorted(log.producer_states.items()):
            out.append({"topic": log.topic, "partition": log.partition, "producer_id": pid,
                        "producer_epoch": entry.epoch, "last_sequence": entry.last_seq,
                        "open_transaction_first_offset": entry.current_txn_first_offset})
    return sorted(out, key=lambda e: (e["producer_id"], e["topic"], e["partition"]))


def transactions_state(cluster: Cluster) -> dict[str, Any]:
    return {tid: {"producer_id": m.producer_id, "producer_epoch": m.producer_epoch,
                  "state": m.state.value, "timeout_ms": m.timeout_ms,
                  "transaction_version": m.transaction_version,  # 0 or 2 (KIP-890 part 2)
                  "partitions": [[t, p] for t, p in m.sorted_partitions()],
                  "groups": sorted(m.groups),
                  "coordinator": cluster.coordinator_for(1, tid)}
            for tid, m in sorted(cluster.transactions.transactions.items())}
