"""Broker lifecycle and faults: brokers starting, leaving and rejoining, unclean elections,
paused or delayed metadata, and reset.

Theory of operation: these are the Cluster methods behind the control verbs and the
server's start and stop; most of the work is in dynamics.py, which takes the cluster as a
protocol and so never imports it. `start_broker` registers a broker with the controller
(its endpoint, rack and log directories), lets it apply the log and heartbeat at once, and
rejoins the partitions of a broker back from a data directory; `unregister_broker` removes a
registration (a running broker registers again). `fence_broker` also ends the
broker's share sessions when share groups were ever used. `reset` empties the state of every
subsystem but keeps the brokers and the metadata log itself.
"""

from __future__ import annotations

from mockbroker.cluster.cluster_state import ClusterState
from mockbroker.cluster.dynamics import (
    UncleanResult,
    fence_broker,
    rejoin_broker,
    reset_state,
    unclean_elect,
)
from mockbroker.cluster.log.log_dir_ids import log_dir_ids
from mockbroker.cluster.log.read_replicas import broker_rack


class ClusterLifecycle(ClusterState):
    """Start, fence, rejoin, unclean elections, metadata pauses and delays, reset (joined
    into Cluster)."""

    # -- brokers starting -------------------------------------------------------------------

    def start_broker(self, broker_id: int, host: str, port: int) -> None:
        """Register a broker (its advertised endpoint) and bring its image up to date."""
        node = self.brokers[broker_id]
        node.host, node.port, node.up = host, port, True
        node.isolated = False  # a restart ends an isolation too (broker_sessions.py)
        self.controller.register_broker(broker_id, host, port, rack=self.broker_rack(broker_id),
                                        log_dirs=list(
            log_dir_ids(self.config.cluster_id, broker_id, self.config.log_dirs).values()))
        self.propagate()
        self.heartbeat_round()  # a registering broker heartbeats at once, as in KRaft
        if broker_id in self._rejoin_on_start:  # back from a data directory
            self._rejoin_on_start.discard(broker_id)
            self.rejoin_broker(broker_id)

    def broker_rack(self, broker_id: int) -> str | None:
        """broker.rack (read_replicas.py): its own entry, else the shared property."""
        return broker_rack(self.config.broker_racks,
                           self.config.broker_properties.get("broker.rack"), broker_id)

    # -- faults and lifecycle (dynamics.py) -------------------------------------------------

    def fence_broker(self, broker_id: int) -> None:
        """A stopped broker leaves: fenced, its leaderships moved, ISRs shrunk."""
        fence_broker(self, broker_id)
        if self._share_groups is not None:
            self._share_groups.drop_broker_sessions(broker_id)

    def unregister_broker(self, broker_id: int) -> None:
        """UnregisterBroker (the caller checked that `broker_id` is registered): Kafka's
        controller fences the broker (its leaderships move, ISRs shrink) and removes its
        registration; a broker still running is refused at its next heartbeat and registers
        again at once, with a new epoch, as Kafka's BrokerLifecycleManager does, then
        rejoins its ISRs."""
        node = self.brokers.get(broker_id)
        running = node is not None and node.up
        self.fence_broker(broker_id)
        self.controller.unregister_broker(broker_id)
        self.propagate()
        if running and node is not None:
            self.start_broker(broker_id, node.host, node.port)
            self.rejoin_broker(broker_id)

    def rejoin_broker(self, broker_id: int) -> None:
        """A restarted broker (after `start_broker`) catches up and rejoins its ISRs."""
        rejoin_broker(self, broker_id)

    def unclean_elect(self, topic: str, partition: int, broker: int,
                      truncate_to: int | None = None) -> UncleanResult:
        """Elect a replica outside the ISR; its log wins (truncated to `truncate_to` when
        given) and the other replicas truncate where they diverge from it."""
        return unclean_elect(self, topic, partition, broker, truncate_to)

    def pause_metadata(self, broker_id: int) -> None:
        """The broker stops applying the metadata log and answers from its image."""
        self.brokers[broker_id].paused = True

    def resume_metadata(self, broker_id: int) -> None:
        """Undo pause_metadata and delay_metadata: the broker catches up at once."""
        node = self.brokers[broker_id]
        node.paused = False
        node.metadata_delay_ms = 0
        self.propagate()

    def delay_metadata(self, broker_id: int, delay_ms: int) -> None:
        """The broker applies each metadata record `delay_ms` after it was written."""
        self.metadata_delays.set_delay(self.brokers[broker_id], delay_ms)

    def reset(self) -> None:
        """Empty topics, dynamic broker configs, groups, offsets, producers, transactions;
        brokers resume metadata catch-up. Brokers and the metadata log itself remain."""
        reset_state(self)
        self.log_manager.reset()
        self.telemetry.reset()
        self.credentials.reset()
        if self._share_groups is not None:
            self._share_groups.reset()
        self.reassignments.reset()
        self.acls.reset()
        self.acl_control.reset()
        self.quotas.reset()
        self.mutation_quotas.reset()

